// The twin's C ABI (lsg_twin.h): parameter checks and tiling from op/tiling, then the kernel
// (kernel.cpp) on one emulated vector core per tiling core, spread over host threads.
#include "lsg_twin.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "convert.h"
#include "kernel.h"
#include "tiling.h"

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

struct lsg_executor {
    lsg::Call call;
    void* dy_data = nullptr;
    void* y_data = nullptr;
    void* out_data = nullptr;
    const lsg::SocProfile* soc = nullptr;
    lsg_tiling_record tiling{};
    lsg::WorkspaceLayout layout;
};

namespace {

constexpr int32_t kMaxDescriptorRank = 64;

void put_message(char* message, size_t cap, const std::string& text) {
    if (!message || cap == 0) return;
    const size_t n = std::min(cap - 1, text.size());
    std::memcpy(message, text.data(), n);
    message[n] = '\0';
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size());
    int64_t acc = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        s[i] = acc;
        acc *= std::max<int64_t>(shape[i], 1);
    }
    return s;
}

// Copy every element of a view of `shape` from src (element strides ss) to dst (strides ds).
void copy_view(const std::vector<int64_t>& shape, int es, const unsigned char* src,
               const std::vector<int64_t>& ss, unsigned char* dst, const std::vector<int64_t>& ds) {
    const size_t rank = shape.size();
    if (rank == 0) {
        std::memcpy(dst, src, static_cast<size_t>(es));
        return;
    }
    std::vector<int64_t> idx(rank, 0);
    const int64_t inner = shape[rank - 1];
    for (;;) {
        int64_t so = 0, d_o = 0;
        for (size_t k = 0; k + 1 < rank; ++k) {
            so += idx[k] * ss[k];
            d_o += idx[k] * ds[k];
        }
        for (int64_t i = 0; i < inner; ++i)
            std::memcpy(dst + (d_o + i * ds[rank - 1]) * es, src + (so + i * ss[rank - 1]) * es,
                        static_cast<size_t>(es));
        size_t k = rank - 1;
        for (;;) {
            if (k == 0) return;
            --k;
            if (++idx[k] < shape[k]) break;
            idx[k] = 0;
        }
    }
}

// Turn a C descriptor into the checks' view.  Returns false for a malformed one.
bool read_tensor(const lsg_tensor* t, lsg::TensorDesc* d, const char* label, std::string* why) {
    if (!t) return true;  // missing: d->present stays false
    d->present = true;
    d->dtype = t->dtype;
    if (t->rank < 0 || t->rank > kMaxDescriptorRank) {
        *why = std::string(label) + " has rank " + std::to_string(t->rank) +
               ": a rank must be in [0, " + std::to_string(kMaxDescriptorRank) + "]";
        return false;
    }
    if (t->rank > 0 && !t->shape) {
        *why = std::string(label) + " has rank " + std::to_string(t->rank) +
               " but no shape: pass rank extents";
        return false;
    }
    d->shape.assign(t->shape, t->shape + t->rank);
    if (t->strides) d->strides.assign(t->strides, t->strides + t->rank);
    return true;
}

int32_t finish(int32_t status, int32_t reason_id, const std::string& text, int32_t* reason,
               char* message, size_t cap) {
    if (reason) *reason = reason_id;
    put_message(message, cap, text);
    return status;
}

}  // namespace

extern "C" {

const char* lsg_version(void) { return LSG_VERSION; }

const char* lsg_build_info(void) {
    return "plant_bug=" LSG_PLANT_BUG_NAME ";sanitize=" LSG_STR(LSG_SANITIZE_BUILD);
}

int32_t lsg_soc_count(void) { return lsg::soc_count(); }

int32_t lsg_soc_get(int32_t index, lsg_soc_profile* out) {
    if (!out || index < 0 || index >= lsg::soc_count()) return LSG_ERR_PARAM_INVALID;
    const lsg::SocProfile& s = lsg::soc_at(index);
    std::memset(out, 0, sizeof *out);
    std::snprintf(out->name, sizeof out->name, "%s", s.name);
    std::snprintf(out->family, sizeof out->family, "%s", s.family);
    out->vector_cores = s.vector_cores;
    out->block_bytes = s.block_bytes;
    out->ub_bytes = s.ub_bytes;
    out->bf16_cast = s.bf16_cast ? 1 : 0;
    return LSG_STATUS_OK;
}

int32_t lsg_get_workspace_size(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes,
                               int32_t n_axes, const lsg_tensor* out, const char* soc_name,
                               uint64_t* workspace_size, lsg_executor** executor, int32_t* reason,
                               char* message, size_t message_cap) {
    if (workspace_size) *workspace_size = 0;
    if (executor) *executor = nullptr;
    try {
        const lsg::SocProfile* soc = soc_name ? lsg::find_soc(soc_name) : nullptr;
        if (!soc) {
            std::string known;
            for (int i = 0; i < lsg::soc_count(); ++i)
                known += (i ? ", " : "") + std::string(lsg::soc_at(i).name);
            return finish(LSG_ERR_INNER, LSG_REASON_UNKNOWN_SOC,
                          "unknown SoC '" + std::string(soc_name ? soc_name : "(null)") +
                              "': the twin emulates only " + known + "; pass one of those",
                          reason, message, message_cap);
        }
        auto ex = std::make_unique<lsg_executor>();
        std::string why;
        if (!read_tensor(dy, &ex->call.dy, "gradOutput (dy)", &why) ||
            !read_tensor(y, &ex->call.y, "output (y)", &why) ||
            !read_tensor(out, &ex->call.out, "out (gradInput)", &why))
            return finish(LSG_ERR_PARAM_INVALID, LSG_REASON_INVALID_ARGUMENT, why, reason, message,
                          message_cap);
        if (n_axes < 0 || (n_axes > 0 && !axes))
            return finish(LSG_ERR_PARAM_INVALID, LSG_REASON_INVALID_ARGUMENT,
                          "axes is NULL or n_axes < 0 (n_axes = " + std::to_string(n_axes) +
                              "): pass n_axes >= 0 axes",
                          reason, message, message_cap);
        if (n_axes > 0) ex->call.axes.assign(axes, axes + n_axes);

        const lsg::Verdict v = lsg::validate(ex->call, *soc);
        if (!v.ok()) return finish(v.status, v.reason, v.message, reason, message, message_cap);

        ex->soc = soc;
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
    const lsg_tiling_record& t = executor->tiling;
    if (t.is_empty) return LSG_STATUS_OK;  // nothing is read or written
    if (!executor->dy_data || !executor->y_data || !executor->out_data) return LSG_ERR_PARAM_NULLPTR;
    if (t.workspace_bytes > 0 && (!workspace || workspace_size < t.workspace_bytes))
        return LSG_ERR_PARAM_INVALID;
    try {
        const lsg::Call& call = executor->call;
        const lsg::WorkspaceLayout& w = executor->layout;
        const int es = lsg::dtype_size(call.dy.dtype);
        unsigned char* ws = static_cast<unsigned char*>(workspace);
        const std::vector<int64_t> dense = contiguous_strides(call.dy.shape);

        lsg::twin::KernelArgs args{executor->dy_data, executor->y_data, executor->out_data,
                                   call.dy.dtype, t};
        if (w.dy_copy) {
            copy_view(call.dy.shape, es, static_cast<const unsigned char*>(executor->dy_data),
                      call.dy.strides, ws + w.dy_offset, dense);
            args.dy = ws + w.dy_offset;
        }
        if (w.y_copy) {
            copy_view(call.y.shape, es, static_cast<const unsigned char*>(executor->y_data),
                      call.y.strides, ws + w.y_offset, dense);
            args.y = ws + w.y_offset;
        }
        if (w.out_copy) args.out = ws + w.out_offset;

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
        if (failed) return LSG_ERR_INNER;

#if defined(LSG_PLANT_BUG_STRIDED_OUT_UNWRITTEN)
        // Planted bug: the result is left in the workspace copy of a non-contiguous out; the copy
        // back into the caller's view is missing, so that view keeps what it held.
#else
        if (w.out_copy)
            copy_view(call.out.shape, es, ws + w.out_offset, dense,
                      static_cast<unsigned char*>(executor->out_data), call.out.strides);
#endif
        return LSG_STATUS_OK;
    } catch (...) {
        return LSG_ERR_INNER;
    }
}

void lsg_executor_destroy(lsg_executor* executor) { delete executor; }

int32_t lsg_convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst, int64_t n) {
    if (n < 0 || (n > 0 && (!src || !dst))) return LSG_ERR_PARAM_INVALID;
    const auto* s16 = static_cast<const uint16_t*>(src);
    const auto* s32 = static_cast<const float*>(src);
    auto* d16 = static_cast<uint16_t*>(dst);
    auto* d32 = static_cast<float*>(dst);
    if (src_dtype == LSG_DT_FLOAT && dst_dtype == LSG_DT_FLOAT16) {
        for (int64_t i = 0; i < n; ++i) d16[i] = lsg::f32_to_f16(s32[i]);
    } else if (src_dtype == LSG_DT_FLOAT && dst_dtype == LSG_DT_BF16) {
        for (int64_t i = 0; i < n; ++i) d16[i] = lsg::f32_to_bf16(s32[i]);
    } else if (src_dtype == LSG_DT_FLOAT16 && dst_dtype == LSG_DT_FLOAT) {
        for (int64_t i = 0; i < n; ++i) d32[i] = lsg::f16_to_f32(s16[i]);
    } else if (src_dtype == LSG_DT_BF16 && dst_dtype == LSG_DT_FLOAT) {
        for (int64_t i = 0; i < n; ++i) d32[i] = lsg::bf16_to_f32(s16[i]);
    } else {
        return LSG_ERR_PARAM_INVALID;
    }
    return LSG_STATUS_OK;
}

}  // extern "C"
