// Compile-time check that our declarations of the aclnn tensor helpers (aclnn/aclnn_base.h) are
// the genuine ones: the function types the torch-npu wheel's op-plugin declares for them
// (genuine/aclnn_helper_types.h, cut from the wheel at set-up by farm/pool/acl_sdk.py).  The ACL
// runtime's own functions need no such check: runtime.cpp defines them under the wheel's acl.h,
// where a different signature does not compile.
#include <type_traits>

#include "aclnn/aclnn_base.h"
#include "aclnn_helper_types.h"

static_assert(std::is_same_v<decltype(&aclCreateTensor), _aclCreateTensor>,
              "aclCreateTensor differs from the genuine declaration");
static_assert(std::is_same_v<decltype(&aclDestroyTensor), _aclDestroyTensor>,
              "aclDestroyTensor differs from the genuine declaration");
static_assert(std::is_same_v<decltype(&aclCreateIntArray), _aclCreateIntArray>,
              "aclCreateIntArray differs from the genuine declaration");
static_assert(std::is_same_v<decltype(&aclDestroyIntArray), _aclDestroyIntArray>,
              "aclDestroyIntArray differs from the genuine declaration");
