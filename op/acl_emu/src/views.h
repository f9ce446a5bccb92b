// Element offsets of a tensor's view, for the emulated op-api libraries.
#ifndef LSG_EMU_VIEWS_H
#define LSG_EMU_VIEWS_H

#include <cstdint>
#include <vector>

#include "lsg_emu_acl.h"

namespace lsg_emu {

inline int64_t numel(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

// The bytes of device memory a view reaches (nothing for an empty view).
inline Range reach(const TensorInfo& t) {
    const size_t es = dtype_bytes(t.dtype);
    if (numel(t.dims) == 0 || es == 0 || !t.data) return Range{t.data, 0};
    int64_t low = t.offset, high = t.offset;
    for (size_t i = 0; i < t.dims.size(); ++i) {
        const int64_t r = (t.dims[i] - 1) * t.strides[i];
        (r < 0 ? low : high) += r;
    }
    const auto* base = static_cast<const unsigned char*>(t.data);
    return Range{base + low * static_cast<int64_t>(es), static_cast<size_t>(high - low + 1) * es};
}

// Calls f(element offset) for every element of the view, in row-major order.
template <typename F>
void for_each_offset(const TensorInfo& t, F f) {
    const int64_t n = numel(t.dims);
    if (n == 0) return;
    std::vector<int64_t> index(t.dims.size(), 0);
    int64_t at = t.offset;
    for (int64_t k = 0; k < n; ++k) {
        f(at);
        for (size_t i = t.dims.size(); i-- > 0;) {
            if (++index[i] < t.dims[i]) {
                at += t.strides[i];
                break;
            }
            at -= (t.dims[i] - 1) * t.strides[i];
            index[i] = 0;
        }
    }
}

}  // namespace lsg_emu

#endif  // LSG_EMU_VIEWS_H
