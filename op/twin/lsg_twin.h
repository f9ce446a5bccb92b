/* LogSoftmaxGrad on the CPU: the C ABI, in the two-phase aclnn shape.  Two libraries implement it:
 * liblsg_twin.so (the CPU twin, op/twin) and liblsg_ascendc_cpu.so (the real Ascend C kernel and
 * host tiling on the CPU emulation, op/ascendc_cpu).
 *
 *   lsg_get_workspace_size(dy, y, axes, n_axes, out, soc, &ws, &executor, &reason, msg, cap)
 *   lsg_run(workspace, ws, executor, threads)
 *   lsg_executor_destroy(executor)
 *
 * Both run the operator's own checks and tiling (op/tiling).  The twin executes its own copy of
 * the kernel's per-core and per-UB-chunk loops on the CPU, in fp32, with the kernel's casts; the
 * emulated library runs the Ascend C kernel source itself (op/ascendc/op_kernel) on emulated
 * vector cores.  Each emulates the SoC named by soc_name: its vector core count, UB size and
 * bf16 support.
 */
#ifndef LSG_TWIN_H
#define LSG_TWIN_H

#include <stddef.h>
#include <stdint.h>

#include "lsg_types.h"

#if defined(__GNUC__)
#define LSG_API __attribute__((visibility("default")))
#else
#define LSG_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor view.  data may be NULL for planning only (lsg_run refuses it unless empty).
 * strides are in elements (may be negative or zero); NULL = contiguous (row-major). */
typedef struct lsg_tensor {
    void* data;
    int32_t dtype; /* ACL dtype code, enum lsg_dtype */
    int32_t rank;  /* 0..64; ranks above 8 are rejected by the checks, not refused as malformed */
    const int64_t* shape;
    const int64_t* strides;
} lsg_tensor;

typedef struct lsg_executor lsg_executor;

/* "0.1.0" (op/VERSION). */
LSG_API const char* lsg_version(void);
/* How this library was built, e.g. "plant_bug=;sanitize=0". */
LSG_API const char* lsg_build_info(void);

/* The SoC table (SPEC section 4). lsg_soc_get returns 0, or 161002 for an index out of range. */
LSG_API int32_t lsg_soc_count(void);
LSG_API int32_t lsg_soc_get(int32_t index, lsg_soc_profile* out);

/* Phase one: check the parameters and plan the tiling.
 * A NULL tensor pointer is a missing tensor (reason null_tensor, status 161001).
 * Returns the aclnn status; *reason gets the lsg_reason and message (if message_cap > 0) a
 * NUL-terminated text naming the reason and its fix.  An unknown soc_name gives status
 * LSG_ERR_INNER with reason LSG_REASON_UNKNOWN_SOC.  On success *executor (if executor is not
 * NULL) owns copies of the descriptors and must be released with lsg_executor_destroy; on
 * failure it is set to NULL and *workspace_size to 0.  workspace_size, executor, reason and
 * message may each be NULL. */
LSG_API int32_t lsg_get_workspace_size(const lsg_tensor* dy, const lsg_tensor* y,
                                       const int64_t* axes, int32_t n_axes, const lsg_tensor* out,
                                       const char* soc_name, uint64_t* workspace_size,
                                       lsg_executor** executor, int32_t* reason, char* message,
                                       size_t message_cap);

/* The tiling record the executor will run. Returns 0, or 161001 for a NULL argument. */
LSG_API int32_t lsg_executor_tiling(const lsg_executor* executor, lsg_tiling_record* out);

/* Phase two: run.  workspace must hold at least the planned workspace size (it may be NULL
 * when that is 0).  threads: how many host threads run the emulated cores; 0 = hardware.
 * Returns 0; 161001 for a NULL executor or a NULL data pointer of a non-empty tensor; 161002
 * for a workspace smaller than planned; 561000 on an internal error or a kernel fault
 * (lsg_run_error says which, and why).  The executor stays valid (it may be run again) until
 * lsg_executor_destroy. */
LSG_API int32_t lsg_run(void* workspace, uint64_t workspace_size, lsg_executor* executor,
                        int32_t threads);

LSG_API void lsg_executor_destroy(lsg_executor* executor);

/* Why the executor's last lsg_run failed: returns that run's status (0 when it succeeded or has
 * not run), *reason gets its lsg_reason (LSG_REASON_INTERNAL, or LSG_REASON_KERNEL_FAULT when
 * the emulated device stopped the kernel) and message a NUL-terminated one-line text.  Returns
 * 161001 for a NULL executor.  reason and message may be NULL. */
LSG_API int32_t lsg_run_error(const lsg_executor* executor, int32_t* reason, char* message,
                              size_t message_cap);

/* The twin's dtype conversions (round-to-nearest-even to fp16/bf16), exposed for tests:
 * converts n elements between LSG_DT_FLOAT and LSG_DT_FLOAT16 / LSG_DT_BF16 (either way).
 * Returns 0, or 161002 for another pair. */
LSG_API int32_t lsg_convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst,
                            int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* LSG_TWIN_H */
