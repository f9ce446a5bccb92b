// liblsg_ascendc_cpu.so: the C ABI of lsg_twin.h over the real Ascend C operator on the CPU.
//
// Phase one (lsg_get_workspace_size): the aclnn layer's parameter checks (lsg::validate, through
// the front half shared with the twin: same statuses, reasons and messages), then, for an
// accepted call, the operator's own tiling function (op_host/log_softmax_grad.cpp, found through
// its OpDef registration) on an emulated TilingContext.  The tiling record the ABI reports is
// lsg::plan's, and it must be what the tiling function gave the kernel: the tiling data bytes,
// the block dim, the tiling key and the workspace are compared, and a disagreement is an internal
// error that says what differs.
//
// Phase two (lsg_run): strided views are copied through the workspace exactly as the twin does
// (op/tiling/views.cpp), then the kernel source (op/ascendc/op_kernel/log_softmax_grad.cpp,
// compiled once per dtype) runs on the emulated device (emu::launch).  A rule of the hardware the
// kernel breaks is an emu::Fault: the run fails with LSG_REASON_KERNEL_FAULT and the fault's
// message (lsg_run_error).
#include "lsg_ascendc_cpu.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "abi_common.h"
#include "emu/device.h"
#include "host_tiling.h"
#include "log_softmax_grad_tiling.h"
#include "tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "views.h"

#ifndef LSG_VERSION
#define LSG_VERSION "0.0.0"
#endif
#ifndef LSG_PLANT_BUG_NAME
#define LSG_PLANT_BUG_NAME ""
#endif
#ifndef LSG_SANITIZE_BUILD
#define LSG_SANITIZE_BUILD 0
#endif
#define LSG_STR2(x) #x
#define LSG_STR(x) LSG_STR2(x)

// The kernel entry, compiled once per dtype (-Dlog_softmax_grad=log_softmax_grad_<dtype>).
extern "C" {
void log_softmax_grad_float(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);
void log_softmax_grad_half(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);
void log_softmax_grad_bfloat16_t(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);
}

struct lsg_executor {
    lsg::Call call;
    void* dy_data = nullptr;
    void* y_data = nullptr;
    void* out_data = nullptr;
    const lsg::SocProfile* soc = nullptr;
    lsg_tiling_record tiling{};
    lsg::WorkspaceLayout layout;
    lsg::acpu::HostTiling host;  // what the tiling function gave the kernel
    // The outcome of the last lsg_run (lsg_run_error).
    int32_t run_status = LSG_STATUS_OK;
    int32_t run_reason = LSG_REASON_OK;
    std::string run_message;
};

namespace {

using lsg::abi::finish;

constexpr const char* kLibrary = "the emulated Ascend C kernel";

emu::KernelFn kernel_for(int32_t dtype) {
    switch (dtype) {
        case LSG_DT_FLOAT: return log_softmax_grad_float;
        case LSG_DT_FLOAT16: return log_softmax_grad_half;
        case LSG_DT_BF16: return log_softmax_grad_bfloat16_t;
        default: return nullptr;
    }
}

// The tiling data the kernel must get for a plan: the host header's class filled as the tiling
// function fills it, from lsg::plan's record.  The kernel sees contiguous data (strided views
// are copied through the workspace first), so its key says contiguous whatever the views are.
std::vector<uint8_t> expected_tiling_data(const lsg_tiling_record& t) {
    optiling::LogSoftmaxGradTilingData d;
    d.set_d0(t.d0);
    d.set_d1(t.d1);
    d.set_d2(t.d2);
    d.set_rowsPerBigCore(t.rows_per_big_core);
    d.set_rowsPerSmallCore(t.rows_per_small_core);
    d.set_blockBytes(t.block_bytes);
    d.set_blockElems(t.block_elems);
    d.set_chunkCount(t.chunk_count);
    d.set_tailElems(t.tail_elems);
    d.set_bigCores(t.big_cores);
    d.set_publicKey(t.key | (1 << 9));
    std::vector<uint8_t> bytes(d.GetDataSize(), 0);
    d.SaveToBuffer(bytes.data(), bytes.size());
    return bytes;
}

std::string hex(const std::vector<uint8_t>& b) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (uint8_t c : b) {
        s += digits[c >> 4];
        s += digits[c & 15];
    }
    return s;
}

// "" when the tiling function gave the kernel what lsg::plan planned, else what differs.
std::string disagreement(const lsg_tiling_record& t, const lsg::acpu::HostTiling& h,
                         uint64_t system_workspace) {
    const std::vector<uint8_t> want = expected_tiling_data(t);
    if (h.tiling_data != want)
        return "tiling data " + hex(h.tiling_data) + " differs from lsg::plan's " + hex(want);
    const uint32_t block_dim = t.is_empty ? 1 : static_cast<uint32_t>(t.cores_used);
    if (h.block_dim != block_dim)
        return "block dim " + std::to_string(h.block_dim) + " differs from lsg::plan's " +
               std::to_string(block_dim);
    if (h.tiling_key != static_cast<uint64_t>(t.schedule))
        return "tiling key " + std::to_string(h.tiling_key) + " differs from lsg::plan's schedule " +
               std::to_string(t.schedule);
    if (h.workspaces.size() != 1 || h.workspaces[0] != system_workspace)
        return "workspace sizes (" + std::to_string(h.workspaces.size()) +
               ") differ from one system workspace of " + std::to_string(system_workspace) +
               " bytes";
    return "";
}

uint64_t system_workspace_bytes(const lsg::SocProfile& soc) {
    fe::PlatFormInfos info(&soc);
    return platform_ascendc::PlatformAscendC(&info).GetLibApiWorkSpaceSize();
}

// `bytes` of zeros the device reads the kernel's workspace from: one buffer for every run, of
// the largest system workspace of the SoC table, allocated on first use and never written.
const uint8_t* system_workspace(size_t bytes) {
    static const std::vector<uint8_t> zeros([] {
        uint64_t most = 0;
        for (int i = 0; i < lsg::soc_count(); ++i)
            most = std::max<uint64_t>(most, system_workspace_bytes(lsg::soc_at(i)));
        return static_cast<size_t>(most);
    }());
    if (bytes > zeros.size()) throw std::length_error("system workspace above the SoC table's");
    return zeros.data();
}

int32_t run_failed(lsg_executor* ex, int32_t reason, std::string text) {
    ex->run_status = LSG_ERR_INNER;
    ex->run_reason = reason;
    ex->run_message = std::move(text);
    return ex->run_status;
}

size_t numel(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t e : shape) n *= static_cast<size_t>(e);
    return n;
}

}  // namespace

extern "C" {

const char* lsg_version(void) { return LSG_VERSION; }

const char* lsg_build_info(void) {
    return "plant_bug=" LSG_PLANT_BUG_NAME ";sanitize=" LSG_STR(LSG_SANITIZE_BUILD)
           ";target=ascendc-cpu";
}

int32_t lsg_soc_count(void) { return lsg::soc_count(); }

int32_t lsg_soc_get(int32_t index, lsg_soc_profile* out) { return lsg::abi::soc_get(index, out); }

int32_t lsg_get_workspace_size(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes,
                               int32_t n_axes, const lsg_tensor* out, const char* soc_name,
                               uint64_t* workspace_size, lsg_executor** executor, int32_t* reason,
                               char* message, size_t message_cap) {
    if (workspace_size) *workspace_size = 0;
    if (executor) *executor = nullptr;
    try {
        auto ex = std::make_unique<lsg_executor>();
        const lsg::Verdict v =
            lsg::abi::check_call(dy, y, axes, n_axes, out, soc_name, kLibrary, &ex->call, &ex->soc);
        if (!v.ok()) return finish(v.status, v.reason, v.message, reason, message, message_cap);

        const lsg::SocProfile& soc = *ex->soc;
        ex->tiling = lsg::plan(ex->call, soc);
        ex->layout = lsg::workspace_layout(ex->call, soc);
        ex->host = lsg::acpu::run_tiling(ex->call, soc);
        if (!ex->host.ok)
            return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL,
                          "internal error: the host tiling refused a call the checks accepted: " +
                              ex->host.error,
                          reason, message, message_cap);
        const std::string differs = disagreement(ex->tiling, ex->host, system_workspace_bytes(soc));
        if (!differs.empty())
            return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL,
                          "internal error: the host tiling function disagrees with lsg::plan: " +
                              differs,
                          reason, message, message_cap);
        ex->dy_data = dy->data;
        ex->y_data = y->data;
        ex->out_data = out->data;
        if (workspace_size) *workspace_size = ex->tiling.workspace_bytes;
        if (executor) *executor = ex.release();
        return finish(LSG_STATUS_OK, LSG_REASON_OK, "", reason, message, message_cap);
    } catch (const std::exception& e) {
        return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL, std::string("internal error: ") + e.what(),
                      reason, message, message_cap);
    }
}

int32_t lsg_executor_tiling(const lsg_executor* executor, lsg_tiling_record* out) {
    if (!executor || !out) return LSG_ERR_PARAM_NULLPTR;
    *out = executor->tiling;
    return LSG_STATUS_OK;
}

int32_t lsg_run(void* workspace, uint64_t workspace_size, lsg_executor* executor,
                int32_t threads) {
    if (!executor) return LSG_ERR_PARAM_NULLPTR;
    executor->run_status = LSG_STATUS_OK;
    executor->run_reason = LSG_REASON_OK;
    executor->run_message.clear();
    const lsg_tiling_record& t = executor->tiling;
    // An empty tensor launches nothing, as the aclnn layer returns before the kernel.
    if (t.is_empty) return LSG_STATUS_OK;
    if (!executor->dy_data || !executor->y_data || !executor->out_data) return LSG_ERR_PARAM_NULLPTR;
    if (t.workspace_bytes > 0 && (!workspace || workspace_size < t.workspace_bytes))
        return LSG_ERR_PARAM_INVALID;
    try {
        const lsg::Call& call = executor->call;
        const lsg::SocProfile& soc = *executor->soc;
        unsigned char* ws = static_cast<unsigned char*>(workspace);
        const lsg::KernelViews v = lsg::stage_views(call, executor->layout, executor->dy_data,
                                                    executor->y_data, executor->out_data, ws);

        const size_t es = static_cast<size_t>(lsg::dtype_size(call.dy.dtype));
        const size_t bytes = numel(call.dy.shape) * es;
        // The kernel's own workspace, of the size the tiling function asked for (the system
        // workspace of the Ascend C library), which the framework provides; its content is
        // unspecified (here zeros: one buffer shared by every run, which the device only reads).
        const size_t sys_bytes = static_cast<size_t>(executor->host.workspaces.at(0));
        const std::vector<emu::GmBuffer> gm = {
            {const_cast<void*>(v.dy), bytes, "grad_output", false, es},
            {const_cast<void*>(v.y), bytes, "output", false, es},
            {v.out, bytes, "grad_input", true, es},
            {const_cast<uint8_t*>(system_workspace(sys_bytes)), sys_bytes, "workspace", false, 1},
        };
        const emu::Soc device{soc.name, soc.vector_cores, soc.ub_bytes, soc.block_bytes,
                              soc.bf16_cast};
        emu::KernelFn kernel = kernel_for(call.dy.dtype);
        if (!kernel)
            return run_failed(executor, LSG_REASON_INTERNAL,
                              "internal error: no kernel for dtype " +
                                  std::string(lsg::dtype_name(call.dy.dtype)));
        // Host threads for the emulated cores, as the twin: 0 = every hardware thread.
        const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
        const int n_threads = threads > 0 ? threads : static_cast<int>(hardware);
        try {
            emu::launch(kernel, executor->host.block_dim, device, executor->host.tiling_key, gm,
                        executor->host.tiling_data.data(), executor->host.tiling_data.size(),
                        n_threads);
        } catch (const emu::Fault& fault) {
            return run_failed(executor, LSG_REASON_KERNEL_FAULT, fault.what());
        }
        lsg::unstage_out(call, executor->layout, executor->out_data, ws);
        return LSG_STATUS_OK;
    } catch (const std::exception& e) {
        return run_failed(executor, LSG_REASON_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return run_failed(executor, LSG_REASON_INTERNAL, "internal error");
    }
}

int32_t lsg_run_error(const lsg_executor* executor, int32_t* reason, char* message,
                      size_t message_cap) {
    if (!executor) return LSG_ERR_PARAM_NULLPTR;
    return finish(executor->run_status, executor->run_reason, executor->run_message, reason,
                  message, message_cap);
}

void lsg_executor_destroy(lsg_executor* executor) { delete executor; }

int32_t lsg_convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst, int64_t n) {
    return lsg::abi::convert(src_dtype, src, dst_dtype, dst, n);
}

int32_t lsg_acpu_host_tiling(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes,
                             int32_t n_axes, const lsg_tensor* out, const char* soc_name,
                             void* tiling, size_t tiling_cap, size_t* tiling_size,
                             uint32_t* block_dim, uint64_t* tiling_key, uint64_t* workspace0,
                             char* message, size_t message_cap) {
    try {
        lsg::Call call;
        const lsg::SocProfile* soc = nullptr;
        const lsg::Verdict v =
            lsg::abi::check_call(dy, y, axes, n_axes, out, soc_name, kLibrary, &call, &soc);
        if (!v.ok() && (v.reason == LSG_REASON_UNKNOWN_SOC ||
                        v.reason == LSG_REASON_INVALID_ARGUMENT))
            return finish(v.status, v.reason, v.message, nullptr, message, message_cap);
        const lsg::acpu::HostTiling h = lsg::acpu::run_tiling(call, *soc);
        if (!h.ok) return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL, h.error, nullptr, message,
                                 message_cap);
        if (tiling) std::memcpy(tiling, h.tiling_data.data(), std::min(tiling_cap, h.tiling_data.size()));
        if (tiling_size) *tiling_size = h.tiling_data.size();
        if (block_dim) *block_dim = h.block_dim;
        if (tiling_key) *tiling_key = h.tiling_key;
        if (workspace0) *workspace0 = h.workspaces.empty() ? 0 : h.workspaces[0];
        return finish(LSG_STATUS_OK, LSG_REASON_OK, "", nullptr, message, message_cap);
    } catch (const std::exception& e) {
        return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL, std::string("internal error: ") + e.what(),
                      nullptr, message, message_cap);
    }
}

const char* lsg_acpu_opdef(void) {
    static const std::string text = lsg::acpu::describe_opdef();
    return text.c_str();
}

}  // extern "C"
