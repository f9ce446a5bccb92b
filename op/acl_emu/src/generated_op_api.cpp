// The aclnn entry CANN generates for the custom operator from its OpDef, emulated
// (aclnn_log_softmax_grad_custom.h): part of the custom operator's op-api library,
// libcust_opapi.so.
//
// Phase one does what the generated layer and nnopbase do with a call, and every decision in it is
// the real host code's: a missing tensor is ACLNN_ERR_PARAM_NULLPTR; the tensors' dtypes and
// formats are checked against the operator's OpDef registration for the SoC (what op_host's
// OP_ADD recorded, op/ascendc_cpu/host/registration.h: ACLNN_ERR_PARAM_INVALID); then the
// operator's own TilingFunc runs on an emulated TilingContext (op/ascendc_cpu/host), and a call it
// refuses is ACLNN_ERR_INNER_TILING_ERROR with the reason it reported.  Phase two queues the real
// kernel (op/ascendc/op_kernel, compiled once per dtype) on the stream; it runs on the emulated
// device (emu::launch) when the stream is synchronised, reading the tensors' device memory and
// the caller's workspace as the kernel's workspace.
//
// As nnopbase does (src/nnopbase/individual_op/executor/indv_executor.cpp:
// NnopbaseExecutorMatchCache, NnopbaseSkipKernelLaunch): when every output is empty, the dtypes are still checked against the
// registration, but the tiling function runs, and the kernel launches, only if the OpDef asked for
// it (AICore().LaunchWithZeroEleOutputTensors(true)); otherwise the call succeeds with workspace 0.
// With the flag, the kernel launches over the empty tensors, as on a device.
//
// Stricter than CANN, which may accept views here: the tensors must be contiguous (the operator's
// aclnn layer, op/ascendc/op_api, makes them so) and their data device memory of this device.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aclnn_log_softmax_grad_custom.h"
#include "emu/device.h"
#include "host_tiling.h"
#include "inference.h"
#include "kernels.h"
#include "lsg_emu_acl.h"
#include "registration.h"
#include "tiling.h"
#include "views.h"

namespace {

constexpr const char* kApi = "aclnnLogSoftmaxGradCustom";
const char* const kNames[] = {"gradOutput", "output", "gradInput"};

// "LogSoftmaxGrad: status S (reason R name): message", the line lsg::report_rejection logs.
int32_t refuse(int32_t status, lsg::Verdict v) {
    v.status = status;
    return lsg_emu::fail(status, lsg::reason_line(v));
}

}  // namespace

extern "C" {

aclnnStatus aclnnLogSoftmaxGradCustomGetWorkspaceSize(const aclTensor* gradOutput,
                                                      const aclTensor* output,
                                                      const aclIntArray* axesOptional,
                                                      const aclTensor* gradInput,
                                                      uint64_t* workspaceSize,
                                                      aclOpExecutor** executor) {
    const void* caller = __builtin_return_address(0);  // who owns the executor
    const std::string api = std::string(kApi) + "GetWorkspaceSize";
    if (!workspaceSize || !executor)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, api + ": workspaceSize or executor is NULL");
    *workspaceSize = 0;
    *executor = nullptr;
    const std::string fault = lsg_emu::take_fault(kApi);
    if (fault == "refuse")
        return lsg_emu::fail(ACLNN_ERR_INNER, api + ": failed (a fault armed by lsg_emu_acl_inject)");
    const aclTensor* tensors[] = {gradOutput, output, gradInput};
    lsg::Call call;
    lsg::TensorDesc* descs[] = {&call.dy, &call.y, &call.out};
    lsg_emu::TensorInfo views[3];
    for (int i = 0; i < 3; ++i) {
        if (!tensors[i]) continue;
        std::string why;
        const lsg_emu::TensorInfo* t = lsg_emu::tensor_info(tensors[i], api.c_str(), kNames[i], &why);
        if (!t) return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
        views[i] = *t;
        descs[i]->present = true;
        descs[i]->dtype = t->dtype;
        descs[i]->shape = t->dims;
    }
    lsg::Verdict v = lsg::check_present(call);
    if (!v.ok()) return refuse(ACLNN_ERR_PARAM_NULLPTR, v);
    v = lsg::check_descriptors(call);
    if (!v.ok()) return refuse(ACLNN_ERR_PARAM_INVALID, v);
    if (axesOptional) {
        std::string why;
        const std::vector<int64_t>* axes = lsg_emu::int_array_values(axesOptional, api.c_str(), &why);
        if (!axes) return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
        call.axes = *axes;
    } else {
        call.axes = {-1};  // the OpDef's default
    }
    for (int i = 0; i < 3; ++i)
        if (!lsg_emu::contiguous(views[i]))
            return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                                 api + ": " + kNames[i] +
                                     " is not contiguous; this generated entry takes contiguous "
                                     "tensors (aclnnLogSoftmaxBackward copies views)");
    const lsg::SocProfile* soc = lsg::find_soc(lsg_emu::soc_name());
    if (!soc)
        return lsg_emu::fail(ACLNN_ERR_INNER, api + ": the emulated SoC " +
                                                  lsg_emu::soc_name() +
                                                  " is not in the operator's SoC table");
    v = lsg::acpu::check_registration(call, *soc);
    if (!v.ok()) return refuse(ACLNN_ERR_PARAM_INVALID, v);
    if (lsg_emu::numel(call.out.shape) == 0 && !lsg::acpu::launches_with_empty_outputs()) {
        *executor = lsg_emu::make_executor(
            kApi, 0,
            [](void*, uint64_t, aclrtStream) -> int32_t {
                return ACLNN_SUCCESS;  // nothing is tiled or launched
            },
            caller);
        return ACLNN_SUCCESS;
    }
    auto host = std::make_shared<lsg::acpu::HostTiling>(lsg::acpu::run_tiling(call, *soc));
    if (!host->ok) {
        if (host->reported) return refuse(ACLNN_ERR_INNER_TILING_ERROR, host->rejection);
        return lsg_emu::fail(ACLNN_ERR_INNER_TILING_ERROR, api + ": the tiling function failed: " + host->error);
    }
    uint64_t workspace = 0;
    for (uint64_t w : host->workspaces) workspace += w;
    if (fault == "grow") workspace += 512;  // as a runtime that changed its mind between phases
    const emu::Soc device{soc->name, soc->vector_cores, soc->ub_bytes, soc->block_bytes,
                          soc->bf16_cast};
    const emu::KernelFn kernel = lsg::acpu::kernel_for(call.dy.dtype);
    const lsg_emu::TensorInfo dy = views[0], y = views[1], out = views[2];
    *workspaceSize = workspace;
    *executor = lsg_emu::make_executor(
        kApi, workspace,
        [host, device, kernel, dy, y, out](void* ws, uint64_t, aclrtStream stream) -> int32_t {
            if (!kernel)
                return lsg_emu::fail(ACLNN_ERR_INNER, std::string(kApi) + ": no kernel for dtype " +
                                                          std::to_string(dy.dtype));
            const lsg_emu::Range r_dy = lsg_emu::reach(dy), r_y = lsg_emu::reach(y),
                                 r_out = lsg_emu::reach(out);
            const lsg_emu::Range r_ws{ws, static_cast<size_t>(host->workspaces.empty() ? 0 : host->workspaces[0])};
            const std::pair<lsg_emu::Range, const char*> used[] = {
                {r_dy, "gradOutput"}, {r_y, "output"}, {r_out, "gradInput"}};
            for (const auto& [range, name] : used) {
                if (range.bytes == 0) continue;  // an empty tensor's data is never reached
                const std::string where = lsg_emu::device_range(range.data, range.bytes);
                if (!where.empty())
                    return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                                         std::string(kApi) + ": " + name + "'s data " + where);
            }
            const size_t es = lsg_emu::dtype_bytes(dy.dtype);
            const size_t bytes = static_cast<size_t>(lsg_emu::numel(dy.dims)) * es;
            return lsg_emu::enqueue(
                stream, std::string(kApi) + " (the LogSoftmaxGrad kernel)",
                [host, device, kernel, r_dy, r_y, r_out, r_ws, bytes, es]() -> std::string {
                    const std::vector<emu::GmBuffer> gm = {
                        {const_cast<void*>(r_dy.data), bytes, "grad_output", false, es},
                        {const_cast<void*>(r_y.data), bytes, "output", false, es},
                        {const_cast<void*>(r_out.data), bytes, "grad_input", true, es},
                        // The op's workspace holds nothing the kernel may rely on at launch
                        // (aclnn's contract; fresh device memory is garbage): presented as such.
                        {const_cast<void*>(r_ws.data), r_ws.bytes, "workspace", false, 1, true},
                    };
                    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
                    try {
                        emu::launch(kernel, host->block_dim, device, host->tiling_key, gm,
                                    host->tiling_data.data(), host->tiling_data.size(),
                                    static_cast<int>(threads));
                    } catch (const emu::PolicyFault& f) {
                        return std::string("the emulated device refused the kernel: ") + f.what();
                    } catch (const emu::Fault& f) {
                        return std::string("kernel fault: ") + f.what();
                    }
                    return "";
                },
                {r_dy, r_y, r_ws}, {r_out});
        },
        caller);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnLogSoftmaxGradCustom(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream stream) {
    return lsg_emu::run_executor(kApi, executor, workspace, workspaceSize, stream);
}

}  // extern "C"

// -- emulation only: the layers of the generated entry, each on its own, and the graph engine's
// inference (the farm's registration, tiling and infer cases, farm/agent/backends/layers.py).
// CANN's own op-api library has none of them: on a device the registration is read from the
// package's aic-<soc>-ops-info.json instead, the tiling function cannot be run alone, and the
// inference functions live in the package's op_host library, run by GE on its own contexts.
extern "C" {

// What the OpDef compiled into this library registered (host_tiling.h describe_opdef).
LSG_EMU_API const char* lsg_emu_opdef(void) {
    static const std::string text = lsg::acpu::describe_opdef();
    return text.c_str();
}

// The registered tiling function alone on a call, on the emulated runtime's SoC: dtypes[3] and
// ranks[3] of gradOutput, output and gradInput, their extents one after the other in dims.
// Returns its status (0 when it tiled the call), *reason and message what it reported.
LSG_EMU_API int32_t lsg_emu_tiling_alone(const int32_t* dtypes, const int32_t* ranks,
                                         const int64_t* dims, const int64_t* axes,
                                         int32_t n_axes, int32_t* reason, char* message,
                                         size_t message_cap) {
    lsg::Verdict v;
    const lsg::SocProfile* soc = lsg::find_soc(lsg_emu::soc_name());
    if (!soc) {
        v.status = ACLNN_ERR_INNER;
        v.reason = LSG_REASON_UNKNOWN_SOC;
        v.message = std::string("the emulated SoC ") + lsg_emu::soc_name() +
                    " is not in the operator's SoC table";
    } else {
        lsg::Call call;
        lsg::TensorDesc* descs[] = {&call.dy, &call.y, &call.out};
        const int64_t* at = dims;
        for (int i = 0; i < 3; ++i) {
            descs[i]->present = true;
            descs[i]->dtype = dtypes[i];
            descs[i]->shape.assign(at, at + ranks[i]);
            at += ranks[i];
        }
        call.axes.assign(axes, axes + n_axes);
        v = lsg::check_descriptors(call);
        if (v.ok()) v = lsg::acpu::tiling_decision(call, *soc);
    }
    if (reason) *reason = v.reason;
    if (message && message_cap) {
        const size_t n = std::min(message_cap - 1, v.message.size());
        std::copy(v.message.begin(), v.message.begin() + static_cast<std::ptrdiff_t>(n), message);
        message[n] = '\0';
    }
    return v.ok() ? 0 : v.status;
}

// The registered shape and dtype inference on a node, as GE runs them (inference.h; the
// arguments and result are lsg_acpu_infer's, op/ascendc_cpu/abi/lsg_ascendc_cpu.h).
LSG_EMU_API int32_t lsg_emu_infer(int32_t n_inputs, const int32_t* dtypes, const int32_t* ranks,
                                  const int64_t* dims, int32_t n_outputs, uint32_t* shape_status,
                                  int32_t* out_rank, int64_t* out_dims, int32_t out_dims_cap,
                                  uint32_t* dtype_status, int32_t* out_dtype, char* message,
                                  size_t message_cap) {
    return lsg::acpu::infer_abi(n_inputs, dtypes, ranks, dims, n_outputs, shape_status,
                                out_rank, out_dims, out_dims_cap, dtype_status, out_dtype,
                                message, message_cap);
}

}  // extern "C"
