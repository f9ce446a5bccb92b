// The shared front half of the C ABI (see abi_common.h).
#include "abi_common.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "convert.h"

namespace lsg::abi {

namespace {

constexpr int32_t kMaxDescriptorRank = 64;

Verdict refuse(int32_t status, int32_t reason, std::string message) {
    Verdict v;
    v.status = status;
    v.reason = reason;
    v.message = std::move(message);
    return v;
}

// Turn a C descriptor into the checks' view.  Returns false for a malformed one.
bool read_tensor(const lsg_tensor* t, TensorDesc* d, const char* label, std::string* why) {
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

}  // namespace

void put_message(char* message, size_t cap, const std::string& text) {
    if (!message || cap == 0) return;
    const size_t n = std::min(cap - 1, text.size());
    std::memcpy(message, text.data(), n);
    message[n] = '\0';
}

int32_t finish(int32_t status, int32_t reason_id, const std::string& text, int32_t* reason,
               char* message, size_t cap) {
    if (reason) *reason = reason_id;
    put_message(message, cap, text);
    return status;
}

Verdict read_call(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes, int32_t n_axes,
                  const lsg_tensor* out, const char* soc_name, const char* library, Call* call,
                  const SocProfile** soc) {
    *soc = soc_name ? find_soc(soc_name) : nullptr;
    if (!*soc) {
        std::string known;
        for (int i = 0; i < soc_count(); ++i) known += (i ? ", " : "") + std::string(soc_at(i).name);
        return refuse(LSG_ERR_INNER, LSG_REASON_UNKNOWN_SOC,
                      "unknown SoC '" + std::string(soc_name ? soc_name : "(null)") + "': " +
                          library + " emulates only " + known + "; pass one of those");
    }
    std::string why;
    if (!read_tensor(dy, &call->dy, "gradOutput (dy)", &why) ||
        !read_tensor(y, &call->y, "output (y)", &why) ||
        !read_tensor(out, &call->out, "out (gradInput)", &why))
        return refuse(LSG_ERR_PARAM_INVALID, LSG_REASON_INVALID_ARGUMENT, why);
    if (n_axes < 0 || (n_axes > 0 && !axes))
        return refuse(LSG_ERR_PARAM_INVALID, LSG_REASON_INVALID_ARGUMENT,
                      "axes is NULL or n_axes < 0 (n_axes = " + std::to_string(n_axes) +
                          "): pass n_axes >= 0 axes");
    if (n_axes > 0) call->axes.assign(axes, axes + n_axes);
    return Verdict{};
}

Verdict check_call(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes, int32_t n_axes,
                   const lsg_tensor* out, const char* soc_name, const char* library, Call* call,
                   const SocProfile** soc) {
    const Verdict read = read_call(dy, y, axes, n_axes, out, soc_name, library, call, soc);
    return read.ok() ? validate(*call, **soc) : read;
}

int32_t soc_get(int32_t index, lsg_soc_profile* out) {
    if (!out || index < 0 || index >= soc_count()) return LSG_ERR_PARAM_INVALID;
    const SocProfile& s = soc_at(index);
    std::memset(out, 0, sizeof *out);
    std::snprintf(out->name, sizeof out->name, "%s", s.name);
    std::snprintf(out->family, sizeof out->family, "%s", s.family);
    out->vector_cores = s.vector_cores;
    out->block_bytes = s.block_bytes;
    out->ub_bytes = s.ub_bytes;
    out->bf16_cast = s.bf16_cast ? 1 : 0;
    return LSG_STATUS_OK;
}

int32_t convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst, int64_t n) {
    if (n < 0 || (n > 0 && (!src || !dst))) return LSG_ERR_PARAM_INVALID;
    const auto* s16 = static_cast<const uint16_t*>(src);
    const auto* s32 = static_cast<const float*>(src);
    auto* d16 = static_cast<uint16_t*>(dst);
    auto* d32 = static_cast<float*>(dst);
    if (src_dtype == LSG_DT_FLOAT && dst_dtype == LSG_DT_FLOAT16) {
        for (int64_t i = 0; i < n; ++i) d16[i] = f32_to_f16(s32[i]);
    } else if (src_dtype == LSG_DT_FLOAT && dst_dtype == LSG_DT_BF16) {
        for (int64_t i = 0; i < n; ++i) d16[i] = f32_to_bf16(s32[i]);
    } else if (src_dtype == LSG_DT_FLOAT16 && dst_dtype == LSG_DT_FLOAT) {
        for (int64_t i = 0; i < n; ++i) d32[i] = f16_to_f32(s16[i]);
    } else if (src_dtype == LSG_DT_BF16 && dst_dtype == LSG_DT_FLOAT) {
        for (int64_t i = 0; i < n; ++i) d32[i] = bf16_to_f32(s16[i]);
    } else {
        return LSG_ERR_PARAM_INVALID;
    }
    return LSG_STATUS_OK;
}

}  // namespace lsg::abi
