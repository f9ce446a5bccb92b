/* The aclnn entry CANN generates for the custom operator LogSoftmaxGradCustom from its OpDef
 * (op/ascendc/op_host/log_softmax_grad.cpp: inputs grad_output and output, the attribute axes,
 * the output grad_input), as the generated header declares it.  The op type is not CANN's built-in
 * LogSoftmaxGrad: a custom op type of a built-in's name replaces CANN's kernel for every process
 * that sees the package (asc-devkit optype_collector guide; opbase op_kernel_lib.cpp).  CANN writes this header into the
 * custom operator package (vendors/<vendor>/op_api/include); the emulated runtime implements it
 * (op/acl_emu/src/generated_op_api.cpp). */
#ifndef LSG_EMU_ACLNN_LOG_SOFTMAX_GRAD_CUSTOM_H
#define LSG_EMU_ACLNN_LOG_SOFTMAX_GRAD_CUSTOM_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxGradCustomGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* output, const aclIntArray* axesOptional,
    const aclTensor* gradInput, uint64_t* workspaceSize, aclOpExecutor** executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxGradCustom(void* workspace, uint64_t workspaceSize,
                                                          aclOpExecutor* executor,
                                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LSG_EMU_ACLNN_LOG_SOFTMAX_GRAD_CUSTOM_H */
