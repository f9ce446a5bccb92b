/* The operator's aclnn interface, as the seed documents it: LogSoftmax backward in two phases.
 *
 *   aclnnLogSoftmaxBackwardGetWorkspaceSize(gradOutput, output, dim, out, &workspaceSize, &executor)
 *   aclnnLogSoftmaxBackward(workspace, workspaceSize, executor, stream)
 *
 * and the same over several consecutive dims (the operator's axis list):
 *
 *   aclnnLogSoftmaxBackwardDimsGetWorkspaceSize(gradOutput, output, dims, dimsNum, out, ...)
 *   aclnnLogSoftmaxBackwardDims(workspace, workspaceSize, executor, stream)
 *
 * out = gradOutput - exp(output) * sum(gradOutput over dim(s)).  The tensors may be any views
 * (strides, storage offset); views that are not contiguous are copied through the workspace.
 * Statuses: 0; 161001 (ACLNN_ERR_PARAM_NULLPTR) for a missing tensor or output pointer; 161002
 * (ACLNN_ERR_PARAM_INVALID) for every other call the contract rejects (dtype, shape, rank, dim,
 * bfloat16 on a SoC without a bf16 cast), with "LogSoftmaxGrad: status S (reason R): <why and the
 * fix>" reported through nnopbase's error channel (as OP_LOGE does: aclGetRecentErrMsg returns it
 * once, "EZ1001: ..." for a parameter error); 561000 (ACLNN_ERR_INNER, reason internal) when the generated entry refuses a call the
 * contract accepts.
 * Source: op/ascendc/op_api/aclnn_log_softmax_backward.cpp and log_softmax_backward_checks.cpp,
 * shipped in the operator package. */
#ifndef ACLNN_LOG_SOFTMAX_BACKWARD_H
#define ACLNN_LOG_SOFTMAX_BACKWARD_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* output, int64_t dim, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxBackward(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor,
                                                        aclrtStream stream);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxBackwardDimsGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* output, const int64_t* dims, uint64_t dimsNum,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxBackwardDims(void* workspace,
                                                            uint64_t workspaceSize,
                                                            aclOpExecutor* executor,
                                                            aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_LOG_SOFTMAX_BACKWARD_H */
