// The emulated ACL runtime's own interface between its libraries (not part of ACL): how the
// op-api libraries reach device memory, streams and executors of the runtime library, and what a
// test may ask the runtime about what it received.  See op/acl_emu/README.md.
#ifndef LSG_EMU_ACL_H
#define LSG_EMU_ACL_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

#if defined(__GNUC__)
#define LSG_EMU_API __attribute__((visibility("default")))
#else
#define LSG_EMU_API
#endif

namespace lsg_emu {

// A byte range of device memory.
struct Range {
    const void* data;
    size_t bytes;
};

// Adds `message` to what aclGetRecentErrMsg returns next on this thread and returns `status`.
LSG_EMU_API int32_t fail(int32_t status, const std::string& message);
// Adds a line to what aclGetRecentErrMsg returns next on this thread (it gets and clears them).
LSG_EMU_API void report(const std::string& line);

// "" when [data, data + bytes) lies inside one live device buffer of the current device, else why
// not (names the address, and the buffer it is in or was in).
LSG_EMU_API std::string device_range(const void* data, size_t bytes);

// The device this thread set (aclrtSetDevice), -1 when none; the SoC every device emulates.
LSG_EMU_API int32_t current_device();
LSG_EMU_API const char* soc_name();

// Work for a stream: runs when the stream is synchronised, with device memory reachable; returns ""
// or what went wrong (the synchronisation then fails with ACL_ERROR_RT_AICORE_EXCEPTION).
using Task = std::function<std::string()>;

// Queues `task` on `stream`: `reads` and `writes` are the device memory it will use, so that a copy
// of it before the synchronisation is refused (a device would copy stale data).
LSG_EMU_API int32_t enqueue(aclrtStream stream, const std::string& what, Task task,
                            std::vector<Range> reads, std::vector<Range> writes);

// An executor of phase one, run once by phase two.  `caller`: the return address of the phase one
// that makes it (__builtin_return_address(0) there), so that a live executor names the library
// whose code asked for it (lsg_emu_acl_live_handle_list).
using Launch = std::function<int32_t(void* workspace, uint64_t workspace_size, aclrtStream stream)>;
LSG_EMU_API aclOpExecutor* make_executor(const std::string& api, uint64_t workspace_size,
                                         Launch launch, const void* caller);
// The fault a probe of the backend armed for this phase one of `api` (lsg_emu_acl_inject), taken:
// "refuse" (fail it, ACLNN_ERR_INNER), "grow" (ask for 512 bytes more), "" none.
LSG_EMU_API std::string take_fault(const std::string& api);
// Phase two of an executor of `api`: checks the executor (live, of this api, not run before) and
// the workspace (at least what phase one asked for, device memory), runs it, then releases it.
LSG_EMU_API int32_t run_executor(const std::string& api, aclOpExecutor* executor, void* workspace,
                                 uint64_t workspace_size, aclrtStream stream);

// A live tensor's metadata (nullptr and a message when `tensor` is not one: never created, or
// destroyed).
struct TensorInfo {
    std::vector<int64_t> dims;
    std::vector<int64_t> strides;
    int64_t offset = 0;
    std::vector<int64_t> storage;
    int32_t dtype = 0;
    int32_t format = 0;
    void* data = nullptr;
};
LSG_EMU_API const TensorInfo* tensor_info(const aclTensor* tensor, const char* api,
                                          const char* name, std::string* why);
// The values of a live int array, or nullptr and why not.
LSG_EMU_API const std::vector<int64_t>* int_array_values(const aclIntArray* array, const char* api,
                                                         std::string* why);

// Bytes of one element of an ACL dtype (0 for one the emulation does not know).
LSG_EMU_API size_t dtype_bytes(int32_t dtype);

// Whether `t` is a contiguous view (row-major strides, extents of 1 ignored).
LSG_EMU_API bool contiguous(const TensorInfo& t);

}  // namespace lsg_emu

extern "C" {
// The emulated host the next calls are for: SoC and device count (NULL / 0: unchanged).
LSG_EMU_API void lsg_emu_acl_declare(const char* soc, int32_t devices);
// What the runtime is: "lsg emulated ACL runtime <version>; soc=<name>; devices=<n>".
LSG_EMU_API const char* lsg_emu_acl_runtime(void);
// The live device buffers, as a JSON list of {"bytes", "device", "serial", "base", "reached"}
// (serial: the how-manieth aclrtMalloc of the process; base: its address; reached: how far into
// it the tasks queued so far reach, the end of the furthest range one said it reads or writes).
LSG_EMU_API const char* lsg_emu_acl_buffers(void);
// The tensors created since the last call, as a JSON list of {"dims", "strides", "offset",
// "storage", "dtype", "format", "device"}: what the runtime received (tests read it).
LSG_EMU_API const char* lsg_emu_acl_take_tensor_log(void);
// Live tensors, int arrays and executors (a caller that destroys every handle leaves it as it was).
LSG_EMU_API size_t lsg_emu_acl_live_handles(void);
// The serial of the last handle created (0: none yet): handles made after it have greater ones.
LSG_EMU_API uint64_t lsg_emu_acl_handle_serial(void);
// The live handles as a JSON list of {"serial", "kind" (tensor, int array, executor), "api" (an
// executor's operator), "by" (the file of the library whose code created it: the caller of
// aclCreateTensor / aclCreateIntArray, or of the phase one that made the executor)}.
LSG_EMU_API const char* lsg_emu_acl_live_handle_list(void);
// Arms a fault for the next phase one of `api` ("aclnnInplaceCopy", "aclnnLogSoftmaxGradCustom"):
// "refuse" fails it with ACLNN_ERR_INNER, "grow" makes it ask for 512 bytes more, "" disarms.
// Returns 1 when a fault was still armed for `api` (not taken), 0 when none, -1 for an unknown
// fault.  The backend's probes of the operator's error paths use it (farm/agent/backends/
// acl_probes.py); CANN has no such hook.
LSG_EMU_API int32_t lsg_emu_acl_inject(const char* api, const char* fault);
}

#endif  // LSG_EMU_ACL_H
