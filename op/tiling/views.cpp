// Strided views through the workspace (see views.h).
#include "views.h"

#include <algorithm>
#include <cstring>

namespace lsg {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size());
    int64_t acc = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        s[i] = acc;
        acc *= std::max<int64_t>(shape[i], 1);
    }
    return s;
}

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

KernelViews stage_views(const Call& call, const WorkspaceLayout& w, const void* dy, const void* y,
                        void* out, unsigned char* ws) {
    const int es = dtype_size(call.dy.dtype);
    const std::vector<int64_t> dense = contiguous_strides(call.dy.shape);
    KernelViews v{dy, y, out};
    if (w.dy_copy) {
        copy_view(call.dy.shape, es, static_cast<const unsigned char*>(dy), call.dy.strides,
                  ws + w.dy_offset, dense);
        v.dy = ws + w.dy_offset;
    }
    if (w.y_copy) {
        copy_view(call.y.shape, es, static_cast<const unsigned char*>(y), call.y.strides,
                  ws + w.y_offset, dense);
        v.y = ws + w.y_offset;
    }
    if (w.out_copy) v.out = ws + w.out_offset;
    return v;
}

void unstage_out(const Call& call, const WorkspaceLayout& w, void* out, const unsigned char* ws) {
    if (!w.out_copy) return;
    copy_view(call.out.shape, dtype_size(call.out.dtype), ws + w.out_offset,
              contiguous_strides(call.out.shape), static_cast<unsigned char*>(out),
              call.out.strides);
}

}  // namespace lsg
