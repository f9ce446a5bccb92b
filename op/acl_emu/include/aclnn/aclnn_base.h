/* The aclnn tensor helpers (CANN's nnopbase: aclnn/aclnn_base.h and aclnn/acl_meta.h), as their
 * public documentation declares them.  The genuine headers of nnopbase ship only with CANN; the
 * emulated runtime (op/acl_emu) implements these declarations, and the build checks the ones the
 * torch-npu wheel also declares (its op-plugin's function types: aclCreateTensor, aclDestroyTensor,
 * aclCreateIntArray, aclDestroyIntArray) against them, so that the two cannot drift apart
 * (op/acl_emu/src/genuine_check.cpp).  On a CANN machine CANN's own header is used instead. */
#ifndef LSG_EMU_ACLNN_BASE_H
#define LSG_EMU_ACLNN_BASE_H

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;

#ifndef ACLNN_SUCCESS
#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_TILING_ERROR 561002
#endif

/* A view of `storageDims` elements of `dataType` at `tensorData` (device memory): viewDims with
 * strides (in elements) from element `offset`. */
ACL_FUNC_VISIBILITY aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t* stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t* storageDims, uint64_t storageDimsNum,
                                               void* tensorData);
ACL_FUNC_VISIBILITY int aclDestroyTensor(const aclTensor* tensor);
ACL_FUNC_VISIBILITY aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size);
ACL_FUNC_VISIBILITY int aclDestroyIntArray(const aclIntArray* array);

/* The getters allocate *dims with new[]; the caller releases it with delete[]. */
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims,
                                                uint64_t* viewDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue,
                                                  uint64_t* stridesNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset);
ACL_FUNC_VISIBILITY aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims,
                                                   uint64_t* storageDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format);
ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size);
/* An executor phase two may run again (and does not release); aclDestroyAclOpExecutor releases it. */
ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor);
/* A repeatable executor, released. */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor);

#ifdef __cplusplus
}
#endif

#endif /* LSG_EMU_ACLNN_BASE_H */
