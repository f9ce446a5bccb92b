// libopapi.so of the emulated ACL runtime: the one built-in CANN operator the operator's aclnn
// layer calls, aclnnInplaceCopy (a view to another of the same dtype and shape, each of any
// strides), as a task on the stream.  Broadcasting and dtype conversion, which CANN's copy also
// does, are refused here with a message: the aclnn layer never asks for them.
//
// As CANN's: a source that is not contiguous is first made contiguous in memory the executor
// allocates from the caller's workspace (hicann/ops-math conversion/view_copy/op_api/aclnn_copy.cpp
// runs l0op::Contiguous on the source; conversion/contiguous allocates a device tensor for a
// non-contiguous one; the L2 API reports the executor's workspace), so phase one asks for
// numel x element bytes (aligned up to 512) and phase two gathers the source there, then scatters
// it into selfRef.  A workspace smaller than that, or not device memory, is refused by phase two.
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
    const void* caller = __builtin_return_address(0);  // who owns the executor
    const std::string api = std::string(kApi) + "GetWorkspaceSize";
    if (!selfRef || !src || !workspaceSize || !executor)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, api + ": a NULL argument");
    const std::string fault = lsg_emu::take_fault(kApi);
    if (fault == "refuse")
        return lsg_emu::fail(ACLNN_ERR_INNER, api + ": failed (a fault armed by lsg_emu_acl_inject)");
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
    const size_t es = lsg_emu::dtype_bytes(d->dtype);
    const size_t n = static_cast<size_t>(lsg_emu::numel(d->dims));
    // The contiguous copy of a strided source, in the workspace (CANN's Contiguous).
    const uint64_t gathered = lsg_emu::contiguous(src_view) || n == 0 ? 0 : (n * es + 511) / 512 * 512;
    // "grow": 512 bytes more than it needs, as a runtime that changed its mind between phases.
    *workspaceSize = gathered + (fault == "grow" ? 512 : 0);
    *executor = lsg_emu::make_executor(
        kApi, *workspaceSize,
        [dst_view, src_view, n, es, gathered](void* ws, uint64_t, aclrtStream stream) -> int32_t {
            if (n == 0) return ACLNN_SUCCESS;
            const lsg_emu::Range in = lsg_emu::reach(src_view), out = lsg_emu::reach(dst_view);
            const lsg_emu::Range scratch{ws, static_cast<size_t>(gathered)};
            for (const auto& [range, name] : {std::pair{in, "src"}, std::pair{out, "selfRef"}}) {
                const std::string where = lsg_emu::device_range(range.data, range.bytes);
                if (!where.empty())
                    return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                                         std::string(kApi) + ": " + name + "'s data " + where);
            }
            std::vector<lsg_emu::Range> writes = {out};
            if (gathered) writes.push_back(scratch);
            return lsg_emu::enqueue(
                stream, kApi,
                [dst_view, src_view, n, es, gathered, scratch]() -> std::string {
                    const auto* s = static_cast<const unsigned char*>(src_view.data);
                    auto* d = static_cast<unsigned char*>(dst_view.data);
                    const auto bytes = static_cast<int64_t>(es);
                    const unsigned char* from = s;
                    std::vector<int64_t> at_src;
                    if (gathered) {  // Contiguous(src) into the workspace, then from there
                        auto* g = static_cast<unsigned char*>(const_cast<void*>(scratch.data));
                        int64_t k = 0;
                        lsg_emu::for_each_offset(src_view, [&](int64_t at) {
                            std::memcpy(g + k++ * bytes, s + at * bytes, es);
                        });
                        from = g;
                    } else {
                        at_src.reserve(n);
                        lsg_emu::for_each_offset(src_view, [&](int64_t at) { at_src.push_back(at); });
                    }
                    size_t k = 0;
                    lsg_emu::for_each_offset(dst_view, [&](int64_t at) {
                        const int64_t src_at = gathered ? static_cast<int64_t>(k) : at_src[k];
                        ++k;
                        std::memcpy(d + at * bytes, from + src_at * bytes, es);
                    });
                    return "";
                },
                {in}, writes);
        },
        caller);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnInplaceCopy(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                             aclrtStream stream) {
    return lsg_emu::run_executor(kApi, executor, workspace, workspaceSize, stream);
}

}  // extern "C"
