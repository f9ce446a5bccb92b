// The twin's C ABI (lsg_twin.h): parameter checks and tiling from op/tiling, then the kernel
// (kernel.cpp) on one emulated vector core per tiling core, spread over host threads.  The front
// half of the ABI (descriptors, checks, messages) is abi_common.cpp and the copies of strided
// views through the workspace are op/tiling/views.cpp, both shared with the emulated Ascend C
// library (op/ascendc_cpu).
#include "lsg_twin.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "abi_common.h"
#include "build_info.h"
#include "kernel.h"
#include "tiling.h"
#include "views.h"

struct lsg_executor {
    lsg::Call call;
    void* dy_data = nullptr;
    void* y_data = nullptr;
    void* out_data = nullptr;
    const lsg::SocProfile* soc = nullptr;
    lsg_tiling_record tiling{};
    lsg::WorkspaceLayout layout;
    // The outcome of the last lsg_run (lsg_run_error).
    int32_t run_status = LSG_STATUS_OK;
    int32_t run_reason = LSG_REASON_OK;
    std::string run_message;
};

namespace {

using lsg::abi::finish;

// Record a failed run on the executor (lsg_run_error) and return its status.
int32_t run_failed(lsg_executor* ex, std::string text) {
    ex->run_status = LSG_ERR_INNER;
    ex->run_reason = LSG_REASON_INTERNAL;
    ex->run_message = std::move(text);
    return ex->run_status;
}

}  // namespace

extern "C" {

const char* lsg_version(void) { return LSG_VERSION; }

const char* lsg_build_info(void) {
    return "plant_bug=" LSG_PLANT_BUG_NAME ";sanitize=" LSG_STR(LSG_SANITIZE_BUILD) ";target=twin";
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
            lsg::abi::check_call(dy, y, axes, n_axes, out, soc_name, "the twin", &ex->call, &ex->soc);
        if (!v.ok()) return finish(v.status, v.reason, v.message, reason, message, message_cap);

        const lsg::SocProfile* soc = ex->soc;
        ex->tiling = lsg::plan(ex->call, *soc);
        ex->layout = lsg::workspace_layout(ex->call, *soc);
        if (ex->tiling.ub_blocks * ex->tiling.block_bytes > soc->ub_bytes ||
            ex->tiling.block_elems * 4 > ex->tiling.block_bytes || ex->tiling.block_elems <= 0)
            return finish(LSG_ERR_INNER, LSG_REASON_INTERNAL,
                          "internal error: the UB plan does not fit the UB of " +
                              std::string(soc->name),
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
    if (t.is_empty) return LSG_STATUS_OK;  // nothing is read or written
    if (!executor->dy_data || !executor->y_data || !executor->out_data) return LSG_ERR_PARAM_NULLPTR;
    if (t.workspace_bytes > 0 && (!workspace || workspace_size < t.workspace_bytes))
        return LSG_ERR_PARAM_INVALID;
    try {
        const lsg::Call& call = executor->call;
        unsigned char* ws = static_cast<unsigned char*>(workspace);
        const lsg::KernelViews v = lsg::stage_views(call, executor->layout, executor->dy_data,
                                                    executor->y_data, executor->out_data, ws);
        const bool tree_repeats = std::string(executor->soc->family) == "ascend310b";
        lsg::twin::KernelArgs args{v.dy, v.y, v.out, call.dy.dtype, t, tree_repeats};

        int64_t n_threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
        n_threads = std::min<int64_t>(n_threads, t.cores_used);
        std::atomic<bool> failed{false};
        auto worker = [&](int64_t first) {
            try {
                lsg::twin::UnifiedBuffer ub(executor->soc->ub_bytes, t.block_bytes);
                for (int64_t core = first; core < t.cores_used; core += n_threads)
                    lsg::twin::run_core(args, core, ub);
            } catch (...) {
                failed = true;
            }
        };
        if (n_threads <= 1) {
            worker(0);
        } else {
            std::vector<std::thread> pool;
            for (int64_t i = 0; i < n_threads; ++i) pool.emplace_back(worker, i);
            for (std::thread& th : pool) th.join();
        }
        if (failed) return run_failed(executor, "internal error: a core of the twin failed");

#if defined(LSG_PLANT_BUG_STRIDED_OUT_UNWRITTEN)
        // Planted bug: the result is left in the workspace copy of a non-contiguous out; the copy
        // back into the caller's view is missing, so that view keeps what it held.
#else
        lsg::unstage_out(call, executor->layout, executor->out_data, ws);
#endif
        return LSG_STATUS_OK;
    } catch (const std::exception& e) {
        return run_failed(executor, std::string("internal error: ") + e.what());
    } catch (...) {
        return run_failed(executor, "internal error");
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

}  // extern "C"
