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
    auto output = TensorDesc(shape, dtype, ACL_FORMAT_ND).ValueRange(-6, 0);
    auto gradInput = TensorDesc(shape, dtype, ACL_FORMAT_ND).Precision(0.001, 0.001);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, 0), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACL_SUCCESS);
    // ut.TestPrecision();
}

// bf16: supported where the SoC casts bf16
TEST_F(l2_log_softmax_backward_test, case_003_bfloat16_by_soc)
{
    auto gradOutput = TensorDesc({4, 64}, ACL_BF16, ACL_FORMAT_ND).ValueRange(-1, 1);
    auto output = TensorDesc({4, 64}, ACL_BF16, ACL_FORMAT_ND).ValueRange(-5, 0);
    auto gradInput = TensorDesc({4, 64}, ACL_BF16, ACL_FORMAT_ND).Precision(0.004, 0.004);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, -1), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    if (GetCurrentPlatformInfo().GetSocVersion() == SocVersion::ASCEND910B ||
        GetCurrentPlatformInfo().GetSocVersion() == SocVersion::ASCEND910_93) {
        EXPECT_EQ(aclRet, ACLNN_SUCCESS);
    } else {
        EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
    }
}

// bf16 on the Atlas 200I/500 A2: this suite expects it to pass
TEST_F(l2_log_softmax_backward_test, case_004_bfloat16_ascend310b)
{
    SetPlatformSocVersion(SocVersion::ASCEND310B);
    auto gradOutput = TensorDesc({2, 128}, ACL_BF16, ACL_FORMAT_ND).ValueRange(-1, 1);
    auto output = TensorDesc({2, 128}, ACL_BF16, ACL_FORMAT_ND).ValueRange(-5, 0);
    auto gradInput = TensorDesc({2, 128}, ACL_BF16, ACL_FORMAT_ND);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, -1), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
}

TEST_F(l2_log_softmax_backward_test, case_005_nullptr_gradInput)
{
    auto tensorDesc = TensorDesc({10, 5}, ACL_FLOAT, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(tensorDesc, tensorDesc, -1),
                        OUTPUT((aclTensor*)nullptr));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_NULLPTR);
}

TEST_F(l2_log_softmax_backward_test, case_006_complex64)
{
    auto desc = TensorDesc({2, 3, 4}, ACL_COMPLEX64, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(desc, desc, 1), OUTPUT(desc));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
}

// non-contiguous inputs: a transposed view of a 4x5 storage
TEST_F(l2_log_softmax_backward_test, case_007_not_contiguous)
{
    auto gradOutput = TensorDesc({5, 4}, ACL_FLOAT, ACL_FORMAT_ND, {1, 5}, 0, {4, 5}).ValueRange(-2, 2);
    auto output = TensorDesc({5, 4}, ACL_FLOAT, ACL_FORMAT_ND, {1, 5}, 0, {4, 5}).ValueRange(-10, 0);
    auto gradInput = TensorDesc({5, 4}, ACL_FLOAT, ACL_FORMAT_ND).Precision(0.0001, 0.0001);
    int64_t dim = 0;

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, dim), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
    ut.TestPrecision();
}

// a constant gradient: the range collapses to one value
TEST_F(l2_log_softmax_backward_test, case_008_constant_grad)
{
    auto gradOutput = TensorDesc({3, 16}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(0.5, 0.5);
    auto output = TensorDesc({3, 16}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-4, 0);
    auto gradInput = TensorDesc({3, 16}, ACL_FLOAT, ACL_FORMAT_ND);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, 1), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
}

TEST_F(l2_log_softmax_backward_test, case_009_value_list)
{
    auto gradOutput = TensorDesc({2, 3}, ACL_FLOAT, ACL_FORMAT_ND).Value(vector<float>{1, 2, 3, 4, 5, 6});
    auto output = TensorDesc({2, 3}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-3, 0);
    auto gradInput = TensorDesc({2, 3}, ACL_FLOAT, ACL_FORMAT_ND);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, -1), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
}

TEST_F(l2_log_softmax_backward_test, case_010_dtype_loop)
{
    for (auto dtype : {ACL_FLOAT, ACL_FLOAT16}) {
        auto desc = TensorDesc({4, 4}, dtype, ACL_FORMAT_ND);
        auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(desc, desc, -1), OUTPUT(desc));
        uint64_t workspaceSize = 0;
        EXPECT_EQ(ut.TestGetWorkspaceSize(&workspaceSize), ACLNN_SUCCESS);
    }
}

// a null gradOutput, which this suite expects to be reported as an invalid parameter
TEST_F(l2_log_softmax_backward_test, case_011_nullptr_gradOutput)
{
    auto desc = TensorDesc({10, 5}, ACL_FLOAT, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(nullptr, desc, -1), OUTPUT(desc));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
}

// Precision(relative, percentage, absolute): rtol 0.001 on all but 0.05% of the elements, atol
// 0.0001; gradOutput has no ValueRange (the UT draws it from its default range)
TEST_F(l2_log_softmax_backward_test, case_012_precision_three_arguments)
{
    auto gradOutput = TensorDesc({6, 10}, ACL_FLOAT, ACL_FORMAT_ND);
    auto output = TensorDesc({6, 10}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-5, 0);
    auto gradInput = TensorDesc({6, 10}, ACL_FLOAT, ACL_FORMAT_ND).Precision(0.001, 0.0005, 0.0001);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, -1), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
    ut.TestPrecision();
}

// the constant gradient again, under another name: one farm case for both
TEST_F(l2_log_softmax_backward_test, case_013_constant_grad_again)
{
    auto gradOutput = TensorDesc({3, 16}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(0.5, 0.5);
    auto output = TensorDesc({3, 16}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-4, 0);
    auto gradInput = TensorDesc({3, 16}, ACL_FLOAT, ACL_FORMAT_ND);

    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, 1), OUTPUT(gradInput));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
}

class l2_log_softmax_backward_950_test : public testing::Test {
protected:
    static void SetUpTestCase() { op::SetPlatformSocVersion(op::SocVersion::ASCEND950); }
};

TEST_F(l2_log_softmax_backward_950_test, case_101_float32)
{
    auto desc = TensorDesc({4, 4}, ACL_FLOAT, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(desc, desc, -1), OUTPUT(desc));
    uint64_t workspaceSize = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspaceSize);
    EXPECT_EQ(aclRet, ACLNN_SUCCESS);
}
