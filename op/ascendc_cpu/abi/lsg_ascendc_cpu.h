/* liblsg_ascendc_cpu.so: the real Ascend C LogSoftmaxGrad (op/ascendc: the kernel source and the
 * host tiling, unchanged) compiled for the CPU and run on the emulated device.  It implements the
 * whole C ABI of lsg_twin.h, so that the farm's native backend loads either library.  These are
 * its own extra entry points, for tests and diagnostics.
 */
#ifndef LSG_ASCENDC_CPU_H
#define LSG_ASCENDC_CPU_H

#include "lsg_twin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run only the host tiling function registered by op_host/log_softmax_grad.cpp (through its
 * OpDef, on an emulated TilingContext) for a call, without lsg::validate before it.
 * Returns 0 and fills the outputs when it succeeded; 561000 when it failed (message: why, e.g.
 * the tiling function refused the call); 161002 with reason 101 for a malformed descriptor, or
 * 561000 with reason 100 for an unknown SoC.  tiling gets at most tiling_cap bytes of the
 * tiling data, *tiling_size its full size; *workspace0 the first workspace size it set.  Any
 * output pointer may be NULL. */
LSG_API int32_t lsg_acpu_host_tiling(const lsg_tensor* dy, const lsg_tensor* y,
                                     const int64_t* axes, int32_t n_axes, const lsg_tensor* out,
                                     const char* soc_name, void* tiling, size_t tiling_cap,
                                     size_t* tiling_size, uint32_t* block_dim,
                                     uint64_t* tiling_key, uint64_t* workspace0, char* message,
                                     size_t message_cap);

/* What the operator registered (OP_ADD): a JSON text, see op/ascendc_cpu/host/host_tiling.h
 * describe_opdef.  The string is the library's and stays valid. */
LSG_API const char* lsg_acpu_opdef(void);

#ifdef __cplusplus
}
#endif

#endif /* LSG_ASCENDC_CPU_H */
