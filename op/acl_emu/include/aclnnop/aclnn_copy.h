/* CANN's built-in aclnnInplaceCopy (libopapi.so, aclnnop/aclnn_copy.h), as its public
 * documentation declares it: selfRef = src, element by element, each a view of any strides.  The
 * emulated runtime implements it (op/acl_emu/src/builtin_ops.cpp) for the copies of the same
 * dtype and shape that the operator's aclnn layer makes. */
#ifndef LSG_EMU_ACLNN_COPY_H
#define LSG_EMU_ACLNN_COPY_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor* selfRef,
                                                                 const aclTensor* src,
                                                                 uint64_t* workspaceSize,
                                                                 aclOpExecutor** executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnInplaceCopy(void* workspace, uint64_t workspaceSize,
                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LSG_EMU_ACLNN_COPY_H */
