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

/* What each layer of phase one said of the last lsg_get_workspace_size call on this thread, as a
 * JSON text valid until the next call: {"decided_by": "front" | "registration" | "tiling" | ""
 * (accepted), "host_status", "host_reason" (the library's verdict), "shared_status",
 * "shared_reason", "shared_message" (lsg::validate's, the twin's checks, once the call could be
 * read), "tiling_mismatch": "" or what the tiling function gave the kernel that lsg::plan did
 * not plan}.  "{}" before the first call. */
LSG_API const char* lsg_acpu_last_checks(void);

/* Run only the host tiling function registered by op_host/log_softmax_grad.cpp (through its
 * OpDef, on an emulated TilingContext) for a call, with no check before it but the descriptors'
 * own (no registration check, no lsg::validate).
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

/* The host tiling function's own decision on a call, with the registration out of the way: only
 * the descriptors' own checks (a malformed one: 161002, reason 101), then the registered
 * TilingFunc alone.  Returns 0 when it tiled the call; when it refused, the status it reported
 * (lsg::report_rejection), *reason its reason and message its words; 561000 (reason 102) when it
 * failed without saying why, (reason 100) for an unknown SoC.  The farm's tiling cases. */
LSG_API int32_t lsg_acpu_tiling_alone(const lsg_tensor* dy, const lsg_tensor* y,
                                      const int64_t* axes, int32_t n_axes, const lsg_tensor* out,
                                      const char* soc_name, int32_t* reason, char* message,
                                      size_t message_cap);

/* What the operator registered (OP_ADD): a JSON text, see op/ascendc_cpu/host/host_tiling.h
 * describe_opdef (per SoC configuration, "params": every input and output with its param type,
 * dtypes, formats and unknown-shape formats, as CANN's aic-<soc>-ops-info.json lists them).  The string is the library's and stays valid. */
LSG_API const char* lsg_acpu_opdef(void);

/* The shape and dtype inference the operator registered (OpDef SetInferShape, SetInferDataType),
 * run as GE's graph engine runs them on a node: InferShape, then InferDataType, on emulated
 * gert::InferShapeContext and InferDataTypeContext holding the node's n_inputs inputs by index
 * (input i: dtypes[i], a ge::DataType code, and ranks[i] extents, the inputs' extents one after
 * the other in dims) and n_outputs outputs (shape empty, dtype DT_UNDEFINED before).
 * *shape_status and *dtype_status get each function's ge::graphStatus (0 success); *out_rank and
 * out_dims (at most out_dims_cap extents) output 0's shape after InferShape, *out_dtype its dtype
 * after InferDataType.  Returns 0 when both are registered; 561000 when one is not (that one is
 * not run, its status stays GRAPH_FAILED; message: what is missing); 161002 for a node it cannot
 * read (message: why).  Any output pointer may be NULL.  The farm's infer cases. */
LSG_API int32_t lsg_acpu_infer(int32_t n_inputs, const int32_t* dtypes, const int32_t* ranks,
                               const int64_t* dims, int32_t n_outputs, uint32_t* shape_status,
                               int32_t* out_rank, int64_t* out_dims, int32_t out_dims_cap,
                               uint32_t* dtype_status, int32_t* out_dtype, char* message,
                               size_t message_cap);

#ifdef __cplusplus
}
#endif

#endif /* LSG_ASCENDC_CPU_H */
