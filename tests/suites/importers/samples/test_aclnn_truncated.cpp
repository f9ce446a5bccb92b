/**
 * aclnnLogSoftmaxBackward: unit tests of the parameter checks and the precision of small cases.
 * A sample written for the farm's importer tests, in the style of the op_api UTs.
 */
#include <vector>
#include "gtest/gtest.h"
#include "op_api_ut_common/op_api_ut.h"
#include "op_api_ut_common/tensor_desc.h"
#include "opdev/platform.h"

using namespace op;
using namespace std;

class l2_log_softmax_backward_test : public testing::Test {
protected:
    static void SetUpTestCase() { cout << "l2_log_softmax_backward_test SetUp" << endl; }
    static void TearDownTestCase() { cout << "l2_log_softmax_backward_test TearDown" << endl; }
};

// fp32, the last axis, with the UT's own tolerance
TEST_F(l2_log_softmax_backward_test, case_001_float32)
{
    auto gradOutput = TensorDesc({2, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-1, 1);
    auto output = TensorDesc({2, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-10, 0);
    auto gradInput = TensorDesc({2, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND).Precision(0.0001, 0.0001);
    int64_t dim = -1;

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, dim), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
    ut.TestPrecision();
}

/* fp16 through variables; the precision check is switched off { not a block } */
TEST_F(l2_log_softmax_backward_test, case_002_float16_variables)
{
    vector<int64_t> shape = {8, 33};
    aclDataType dtype = ACL_FLOAT16;
    auto gradOutput = TensorDesc(shape, dtype, ACL_FORMAT_ND).ValueRange(-2, 2);
    auto output = TensorDesc(shape, dtype, ACL_FORMAT_ND).