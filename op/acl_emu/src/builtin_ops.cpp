// libopapi.so of the emulated ACL runtime: the one built-in CANN operator the operator's aclnn
// layer calls, aclnnInplaceCopy (a view to another of the same dtype and shape, each of any
// strides), as a task on the stream.  Broadcasting and dtype conversion, which CANN's copy also
// does, are refused here with a message: the aclnn layer never asks for them.
#include <cstring>
#include <string>

#include "aclnnop/aclnn_copy.h"
#include "lsg_emu_acl.h"
#include "views.h"

namespace {

constexpr const char* kApi = "aclnnInplaceCopy";

std::string dims_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

}  // namespace

extern "C" {

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor* selfRef, const aclTensor* src,
                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
    const std::string api = std::string(kApi) + "GetWorkspaceSize";
    if (!selfRef || !src || !workspaceSize || !executor)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, api + ": a NULL argument");
    std::string why;
    const lsg_emu::TensorInfo* d = lsg_emu::tensor_info(selfRef, api.c_str(), "selfRef", &why);
    const lsg_emu::TensorInfo* s = d ? lsg_emu::tensor_info(src, api.c_str(), "src", &why) : nullptr;
    if (!d || !s) return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    if (d->dims != s->dims)
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                             api + ": selfRef " + dims_text(d->dims) + " and src " +
                                 dims_text(s->dims) +
                                 " differ (the emulation copies equal shapes only)");
    if (d->dtype != s->dtype || lsg_emu::dtype_bytes(d->dtype) == 0)
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                             api + ": dtypes " + std::to_string(d->dtype) + " and " +
                                 std::to_string(s->dtype) +
                                 " (the emulation copies one known dtype, no conversion)");
    const lsg_emu::TensorInfo dst_view = *d, src_view = *s;
    *workspaceSize = 0;
    *executor = lsg_emu::make_executor(
        kApi, 0, [dst_view, src_view](void*, uint64_t, aclrtStream stream) -> int32_t {
            const size_t n = static_cast<size_t>(lsg_emu::numel(dst_view.dims));
            if (n == 0) return ACLNN_SUCCESS;
            const lsg_emu::Range in = lsg_emu::reach(src_view), out = lsg_emu::reach(dst_view);
            for (const auto& [range, name] : {std::pair{in, "src"}, std::pair{out, "selfRef"}}) {
                const std::string where = lsg_emu::device_range(range.data, range.bytes);
                if (!where.empty())
                    return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                                         std::string(kApi) + ": " + name + "'s data " + where);
            }
            return lsg_emu::enqueue(
                stream, kApi,
                [dst_view, src_view, n]() -> std::string {
                    const size_t es = lsg_emu::dtype_bytes(dst_view.dtype);
                    std::vector<int64_t> from;
                    from.reserve(n);
                    lsg_emu::for_each_offset(src_view, [&](int64_t at) { from.push_back(at); });
                    const auto* s = static_cast<const unsigned char*>(src_view.data);
                    auto* d = static_cast<unsigned char*>(dst_view.data);
                    size_t k = 0;
                    lsg_emu::for_each_offset(dst_view, [&](int64_t at) {
                        std::memcpy(d + at * static_cast<int64_t>(es), s + from[k++] * static_cast<int64_t>(es), es);
                    });
                    return "";
                },
                {in}, {out});
        });
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnInplaceCopy(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                             aclrtStream stream) {
    return lsg_emu::run_executor(kApi, executor, workspace, workspaceSize, stream);
}

}  // extern "C"
