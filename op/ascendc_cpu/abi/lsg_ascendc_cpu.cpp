// liblsg_ascendc_cpu.so: the C ABI of lsg_twin.h over the real Ascend C operator on the CPU.
//
// Phase one (lsg_get_workspace_size) is the package's aclnn layer over the aclnn layer CANN
// generates for a custom operator, emulated, and every decision in it is the real source's:
//   1. the SoC and the descriptors, read (lsg::abi::read_call), then the checks of the package's
//      aclnn layer (op/ascendc/op_api, lsg::op_api::check_call: malformed descriptors, missing
//      tensors) -- the layer "front";
//   2. the tensors' dtypes and formats against the operator's OpDef registration for the SoC
//      (registration.h: what op_host's OP_ADD recorded);
//   3. the operator's own tiling function (op_host/log_softmax_grad.cpp, found through its OpDef)
//      on an emulated TilingContext: its own checks, then the tiling.
// A call that 2 or 3 refuses gets the status, reason and message the package's aclnn layer gives
// it (lsg::op_api::after_refusal: the contract's, as on a device); what the refusing layer itself
// said (the registration's verdict, or the one the tiling function reported through
// lsg::report_rejection) and the shared checks' verdict (lsg::validate, the twin's) are in
// lsg_acpu_last_checks(), where they are compared.  The tiling record reported is
// what the tiling function gave the kernel; where the shared checks accept the call it must equal
// lsg::plan's (tiling data bytes, block dim, tiling key, one system workspace), and a difference
// is reported there as a tiling mismatch (the call still runs as the host code tiled it).
//
// Phase two (lsg_run): strided views are copied through the workspace exactly as the twin does
// (op/tiling/views.cpp), then the kernel source (op/ascendc/op_kernel/log_softmax_grad.cpp,
// compiled once per dtype) runs on the emulated device (emu::launch).  A rule of the hardware the
// kernel breaks is an emu::Fault: the run fails with LSG_REASON_KERNEL_FAULT and the fault's
// message (lsg_run_error); a rule of the emulation's own that CANN does not enforce is an
// emu::PolicyFault, LSG_REASON_EMULATION_POLICY.
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
#include <utility>
#include <vector>

#include "abi_common.h"
#include "emu/device.h"
#include "host_tiling.h"
#include "inference.h"
#include "kernels.h"
#include "log_softmax_backward_checks.h"
#include "log_softmax_grad_tiling.h"
#include "registration.h"
#include "tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "views.h"

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

// The tiling data fields that differ between what the tiling function wrote and what lsg::plan
// planned, as "blockElems 4912 (planned 9824), ..."; the whole size when the sizes differ.
std::string tiling_data_differences(const std::vector<uint8_t>& got,
                                    const std::vector<uint8_t>& want) {
    optiling::LogSoftmaxGradTilingData g, w;
    if (got.size() != g.GetDataSize())
        return "tiling data of " + std::to_string(got.size()) + " bytes (planned " +
               std::to_string(g.GetDataSize()) + ")";
    std::memcpy(static_cast<void*>(&g), got.data(), g.GetDataSize());
    std::memcpy(static_cast<void*>(&w), want.data(), w.GetDataSize());
    const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
        {"d0", {g.get_d0(), w.get_d0()}},
        {"d1", {g.get_d1(), w.get_d1()}},
        {"d2", {g.get_d2(), w.get_d2()}},
        {"rowsPerBigCore", {g.get_rowsPerBigCore(), w.get_rowsPerBigCore()}},
        {"rowsPerSmallCore", {g.get_rowsPerSmallCore(), w.get_rowsPerSmallCore()}},
        {"blockBytes", {g.get_blockBytes(), w.get_blockBytes()}},
        {"blockElems", {g.get_blockElems(), w.get_blockElems()}},
        {"chunkCount", {g.get_chunkCount(), w.get_chunkCount()}},
        {"tailElems", {g.get_tailElems(), w.get_tailElems()}},
        {"bigCores", {g.get_bigCores(), w.get_bigCores()}},
        {"publicKey", {g.get_publicKey(), w.get_publicKey()}},
    };
    std::string s;
    for (const auto& [name, values] : fields)
        if (values.first != values.second)
            s += (s.empty() ? "" : ", ") + std::string(name) + " " +
                 std::to_string(values.first) + " (planned " + std::to_string(values.second) + ")";
    return s;
}

// "" when the tiling function gave the kernel what lsg::plan planned, else what differs.
std::string disagreement(const lsg_tiling_record& t, const lsg::acpu::HostTiling& h,
                         uint64_t system_workspace) {
    const std::vector<uint8_t> want = expected_tiling_data(t);
    if (h.tiling_data != want) return tiling_data_differences(h.tiling_data, want);
    const uint32_t block_dim = t.is_empty ? 1 : static_cast<uint32_t>(t.cores_used);
    if (h.block_dim != block_dim)
        return "block dim " + std::to_string(h.block_dim) + " (planned " +
               std::to_string(block_dim) + ")";
    if (h.tiling_key != static_cast<uint64_t>(t.schedule))
        return "tiling key " + std::to_string(h.tiling_key) + " (planned the schedule " +
               std::to_string(t.schedule) + ")";
    if (h.workspaces.size() != 1 || h.workspaces[0] != system_workspace)
        return std::to_string(h.workspaces.size()) +
               " workspace sizes (planned one system workspace of " +
               std::to_string(system_workspace) + " bytes)";
    return "";
}

size_t numel(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t e : shape) n *= static_cast<size_t>(e);
    return n;
}

// The tiling record of what the tiling function gave the kernel (what runs), with the views'
// contiguity and workspace, which only the ABI knows.  `*wrong` says why the tiling data cannot
// be read.
lsg_tiling_record host_record(const lsg::acpu::HostTiling& h, const lsg::Call& call,
                              const lsg::SocProfile& soc, const lsg::WorkspaceLayout& layout,
                              std::string* wrong) {
    lsg_tiling_record t;
    std::memset(&t, 0, sizeof t);
    optiling::LogSoftmaxGradTilingData d;
    if (h.tiling_data.size() != d.GetDataSize()) {
        *wrong = "the tiling function wrote " + std::to_string(h.tiling_data.size()) +
                 " bytes of tiling data; LogSoftmaxGradTilingData has " +
                 std::to_string(d.GetDataSize());
        return t;
    }
    std::memcpy(static_cast<void*>(&d), h.tiling_data.data(), d.GetDataSize());
    t.schedule = static_cast<int32_t>(h.tiling_key);
    t.d0 = d.get_d0();
    t.d1 = d.get_d1();
    t.d2 = d.get_d2();
    t.rows = t.d0;
    t.row_len = t.schedule == LSG_SCHED_REDUCE_TAIL ? t.d1 : t.d2;
    t.rows_per_big_core = d.get_rowsPerBigCore();
    t.rows_per_small_core = d.get_rowsPerSmallCore();
    t.block_bytes = d.get_blockBytes();
    t.block_elems = d.get_blockElems();
    t.chunk_count = d.get_chunkCount();
    t.tail_elems = d.get_tailElems();
    t.big_cores = d.get_bigCores();
    t.ub_blocks = lsg::ub_blocks_for(t.schedule);
    t.is_empty = numel(call.dy.shape) == 0;
    t.cores_used = t.is_empty ? 0 : static_cast<int32_t>(h.block_dim);
    t.is_small_shape = (d.get_publicKey() >> 8) & 1;
    t.is_contiguous = !(layout.dy_copy || layout.y_copy || layout.out_copy);
    // The kernel always sees contiguous data; the key reports the views as the caller passed them.
    t.key = (d.get_publicKey() & ~(1 << 9)) | (t.is_contiguous << 9);
    t.workspace_bytes = layout.total;
    std::snprintf(t.schedule_name, sizeof t.schedule_name, "%s", lsg::schedule_name(t.schedule));
    std::snprintf(t.soc_name, sizeof t.soc_name, "%s", soc.name);
    return t;
}

lsg::Verdict internal(std::string message) {
    lsg::Verdict v;
    v.status = LSG_ERR_INNER;
    v.reason = LSG_REASON_INTERNAL;
    v.message = std::move(message);
    return v;
}

std::string json_text(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        o += c == '\n' ? ' ' : c;
    }
    return o + '"';
}

// What each layer of phase one said of a call (lsg_acpu_last_checks).
struct Checks {
    std::string decided_by;  // the layer that refused the call; "" when it was accepted
    lsg::Verdict host;       // the library's verdict
    lsg::Verdict shared;     // lsg::validate's, once the call could be read
    bool shared_known = false;
    std::string tiling_mismatch;

    std::string json() const {
        std::string o = "{\"decided_by\": " + json_text(decided_by) +
                        ", \"host_status\": " + std::to_string(host.status) +
                        ", \"host_reason\": " + std::to_string(host.reason);
        if (shared_known)
            o += ", \"shared_status\": " + std::to_string(shared.status) +
                 ", \"shared_reason\": " + std::to_string(shared.reason) +
                 ", \"shared_message\": " + json_text(shared.message);
        return o + ", \"tiling_mismatch\": " + json_text(tiling_mismatch) + "}";
    }
};

thread_local std::string t_last_checks = "{}";

uint64_t system_workspace_bytes(const lsg::SocProfile& soc) {
    fe::PlatFormInfos info(&soc);
    return platform_ascendc::PlatformAscendC(&info).GetLibApiWorkSpaceSize();
}

int32_t run_failed(lsg_executor* ex, int32_t reason, std::string text) {
    ex->run_status = LSG_ERR_INNER;
    ex->run_reason = reason;
    ex->run_message = std::move(text);
    return ex->run_status;
}

}  // namespace

extern "C" {

int32_t lsg_soc_count(void) { return lsg::soc_count(); }

int32_t lsg_soc_get(int32_t index, lsg_soc_profile* out) { return lsg::abi::soc_get(index, out); }

int32_t lsg_get_workspace_size(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes,
                               int32_t n_axes, const lsg_tensor* out, const char* soc_name,
                               uint64_t* workspace_size, lsg_executor** executor, int32_t* reason,
                               char* message, size_t message_cap) {
    if (workspace_size) *workspace_size = 0;
    if (executor) *executor = nullptr;
    Checks checks;
    const char* layer = "front";  // the layer at work: one that throws refuses the call
    // `said`: what the refusing layer said; `v`: the call's verdict.
    const auto refused = [&](const char* refusing, const lsg::Verdict& said,
                             const lsg::Verdict& v) {
        checks.decided_by = refusing;
        checks.host = said;
        t_last_checks = checks.json();
        return finish(v.status, v.reason, v.message, reason, message, message_cap);
    };
    // A refusal of the generated entry (the registration's, the tiling function's), as the
    // package's aclnn layer reports it, given the status CANN's generated entry returns for it.
    const auto entry_refused = [&](const char* refusing, const lsg::Verdict& said,
                                   const lsg::Call& call, const lsg::SocProfile& soc) {
        const bool tiling = std::string(refusing) == "tiling" && said.status != LSG_ERR_INNER;
        const int32_t status = tiling ? lsg::op_api::kTilingRefused : said.status;
        return refused(refusing, said,
                       lsg::op_api::after_refusal(call, &soc, status, said.message));
    };
    try {
        auto ex = std::make_unique<lsg_executor>();
        lsg::Verdict v =
            lsg::abi::read_call(dy, y, axes, n_axes, out, soc_name, kLibrary, &ex->call, &ex->soc);
        if (v.ok()) v = lsg::op_api::check_call(ex->call);
        if (!v.ok()) return refused("front", v, v);

        const lsg::Call& call = ex->call;
        const lsg::SocProfile& soc = *ex->soc;
        checks.shared = lsg::validate(call, soc);
        checks.shared_known = true;
        layer = "registration";
        v = lsg::acpu::check_registration(call, soc);
        if (!v.ok()) return entry_refused("registration", v, call, soc);
        if (numel(call.out.shape) == 0 && !lsg::acpu::launches_with_empty_outputs()) {
            // CANN's generated entry, every output empty and the OpDef not asking to run then:
            // success, no tiling, nothing launched (op/acl_emu/src/generated_op_api.cpp).
            std::memset(&ex->tiling, 0, sizeof ex->tiling);
            ex->tiling.is_empty = 1;
            ex->tiling.schedule = -1;
            std::snprintf(ex->tiling.schedule_name, sizeof ex->tiling.schedule_name, "not tiled");
            std::snprintf(ex->tiling.soc_name, sizeof ex->tiling.soc_name, "%s", soc.name);
            checks.decided_by = "";
            t_last_checks = checks.json();
            if (workspace_size) *workspace_size = 0;
            if (executor) *executor = ex.release();
            return finish(LSG_STATUS_OK, LSG_REASON_OK, "", reason, message, message_cap);
        }
        layer = "tiling";
        ex->host = lsg::acpu::run_tiling(call, soc);
        if (!ex->host.ok)
            return entry_refused("tiling",
                                 ex->host.reported
                                     ? ex->host.rejection
                                     : internal("internal error: " + ex->host.error),
                                 call, soc);
        std::string wrong;
        ex->layout = lsg::workspace_layout(call, soc);
        ex->tiling = host_record(ex->host, call, soc, ex->layout, &wrong);
        if (!wrong.empty()) {
            const lsg::Verdict failed = internal("internal error: " + wrong);
            return refused("tiling", failed, failed);
        }
        if (checks.shared.ok())
            checks.tiling_mismatch =
                disagreement(lsg::plan(call, soc), ex->host, system_workspace_bytes(soc));
        checks.decided_by = "";
        t_last_checks = checks.json();
        ex->dy_data = dy->data;
        ex->y_data = y->data;
        ex->out_data = out->data;
        if (workspace_size) *workspace_size = ex->tiling.workspace_bytes;
        if (executor) *executor = ex.release();
        return finish(LSG_STATUS_OK, LSG_REASON_OK, "", reason, message, message_cap);
    } catch (const std::exception& e) {
        const lsg::Verdict failed = internal(std::string("internal error: ") + e.what());
        return refused(layer, failed, failed);
    }
}

const char* lsg_acpu_last_checks(void) { return t_last_checks.c_str(); }

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
        // unspecified (the emulated device refuses a read of a byte the kernel has not written).
        const size_t sys_bytes = static_cast<size_t>(executor->host.workspaces.at(0));
        const std::vector<emu::GmBuffer> gm = {
            {const_cast<void*>(v.dy), bytes, "grad_output", false, es},
            {const_cast<void*>(v.y), bytes, "output", false, es},
            {v.out, bytes, "grad_input", true, es},
            {nullptr, sys_bytes, "workspace", false, 1, true},
        };
        const emu::Soc device{soc.name, soc.vector_cores, soc.ub_bytes, soc.block_bytes,
                              soc.bf16_cast};
        emu::KernelFn kernel = lsg::acpu::kernel_for(call.dy.dtype);
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
        } catch (const emu::PolicyFault& fault) {
            return run_failed(executor, LSG_REASON_EMULATION_POLICY, fault.what());
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
        lsg::Verdict v =
            lsg::abi::read_call(dy, y, axes, n_axes, out, soc_name, kLibrary, &call, &soc);
        if (v.ok()) v = lsg::check_descriptors(call);
        if (!v.ok()) return finish(v.status, v.reason, v.message, nullptr, message, message_cap);
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

int32_t lsg_acpu_tiling_alone(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes,
                              int32_t n_axes, const lsg_tensor* out, const char* soc_name,
                              int32_t* reason, char* message, size_t message_cap) {
    try {
        lsg::Call call;
        const lsg::SocProfile* soc = nullptr;
        lsg::Verdict v =
            lsg::abi::read_call(dy, y, axes, n_axes, out, soc_name, kLibrary, &call, &soc);
        if (v.ok()) v = lsg::check_descriptors(call);
        if (v.ok()) v = lsg::acpu::tiling_decision(call, *soc);
        return finish(v.status, v.reason, v.message, reason, message, message_cap);
    } catch (const std::exception& e) {
        return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL, std::string("internal error: ") + e.what(),
                      reason, message, message_cap);
    }
}

const char* lsg_acpu_opdef(void) {
    static const std::string text = lsg::acpu::describe_opdef();
    return text.c_str();
}

int32_t lsg_acpu_infer(int32_t n_inputs, const int32_t* dtypes, const int32_t* ranks,
                       const int64_t* dims, int32_t n_outputs, uint32_t* shape_status,
                       int32_t* out_rank, int64_t* out_dims, int32_t out_dims_cap,
                       uint32_t* dtype_status, int32_t* out_dtype, char* message,
                       size_t message_cap) {
    return lsg::acpu::infer_abi(n_inputs, dtypes, ranks, dims, n_outputs, shape_status,
                                out_rank, out_dims, out_dims_cap, dtype_status, out_dtype,
                                message, message_cap);
}

}  // extern "C"
