// The operator's aclnn layer (aclnn_log_softmax_backward.h), written on public CANN APIs only: the
// aclnn tensor helpers (aclnn/aclnn_base.h), the built-in aclnnInplaceCopy for views, the aclnn
// entry CANN generates from the OpDef (aclnn_log_softmax_grad_custom.h), aclrtGetSocName and
// nnopbase's error channel.  It ships in the operator package; on the CPU the same source runs
// against the emulated ACL runtime (op/acl_emu).
//
// Phase one reads each tensor through the getters and checks the output pointers and the dim
// list; what it decides of the call itself is log_softmax_backward_checks.h's, the source the CPU
// library's phase one runs too (op/ascendc_cpu/abi): malformed descriptors and a missing tensor
// (161001) here, every other decision the host code's, made where a device makes it (the generated
// entry checks the dtypes against the OpDef registration and runs the tiling function).  A call
// the generated entry refuses gets the contract's status and reason (lsg::op_api::after_refusal).
//
// Views that are not contiguous are copied into the workspace (aclnnInplaceCopy) and out is copied
// back; phase one asks the generated entry and each copy for their workspace with contiguous
// stand-ins (CANN's copy makes a strided source contiguous in its own workspace first), phase two
// asks again with the workspace's addresses and runs the copies, the kernel and the copy back, in
// that order, on the caller's stream.  An executor this layer asked for and does not run is made
// repeatable, then destroyed: the only release of an unrun executor CANN documents.
//
// Errors go where CANN's own operators put theirs: nnopbase's error channel (OP_LOGE's
// ReportErrorMessageInner, opdev/op_log.h), which the caller reads with aclGetRecentErrMsg.  A
// refusal of phase one says "LogSoftmaxGrad: status S (reason R name): ..." (lsg::reason_line).
// Phase two answers its caller's mistakes (a short workspace, a foreign executor) with a
// parameter status; a failure of its own copies or of the generated entry under it is
// ACLNN_ERR_INNER: the operator's failure, never its caller's.
#include "aclnn_log_softmax_backward.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn_log_softmax_grad_custom.h"
#include "aclnnop/aclnn_copy.h"
#include "log_softmax_backward_checks.h"
#include "tiling.h"

// nnopbase's error channel, as CANN's opdev/op_log.h declares it (OP_LOGE reports through it):
// the message is what aclGetRecentErrMsg returns next, under the error code.
void ReportErrorMessageInner(const std::string& code, const char* fmt, ...);

namespace {

constexpr uint64_t kMagic = 0x4c53474241434b57ULL;
constexpr uint64_t kAlign = 512;  // device buffers start on 512 bytes
const char* const kNames[] = {"gradOutput", "output", "out"};

aclnnStatus report(aclnnStatus status, const std::string& message) {
    // The code nnopbase's ReportErrorMessage gives a status of its first digit: 1 a parameter
    // error (EZ1001), 3 a runtime error (EZ9903), otherwise an inner error (EZ9999).
    const std::string s = std::to_string(status);
    const char* code = s[0] == '1' ? "EZ1001" : s[0] == '3' ? "EZ9903" : "EZ9999";
    ReportErrorMessageInner(code, "%s", message.c_str());
    return status;
}

aclnnStatus refuse(const char* api, const lsg::Verdict& v) {
    return report(v.status, lsg::op_api::message(api, v));
}

std::string recent() {
    const char* m = aclGetRecentErrMsg();
    return m ? m : "";
}

uint64_t aligned(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A call this layer made in phase two over its own copies, in the caller's workspace at offsets
// it chose, failed: the layer's own error (ACLNN_ERR_INNER), not its caller's, whatever status
// the inner call gave.  A caller's error is a parameter status (161xxx) of the layer's own checks.
aclnnStatus inner_failure(const char* api, aclnnStatus status) {
    return report(ACLNN_ERR_INNER,
                  std::string(api) + ": the generated entry (status " + std::to_string(status) +
                      "): " + recent());
}

struct View {
    const aclTensor* tensor = nullptr;
    std::vector<int64_t> dims, strides, storage;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_ND;

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : dims) n *= d;
        return n;
    }
    bool contiguous() const {
        if (numel() == 0) return true;  // an empty view reaches nothing
        int64_t expect = 1;
        for (size_t i = dims.size(); i-- > 0;) {
            if (dims[i] != 1 && strides[i] != expect) return false;
            expect *= dims[i];
        }
        return true;
    }
};

aclnnStatus take(int64_t* values, uint64_t n, std::vector<int64_t>* out) {
    out->assign(values, values + n);
    delete[] values;
    return ACLNN_SUCCESS;
}

// The view of a tensor, through the public getters.
aclnnStatus describe(const aclTensor* t, View* v) {
    v->tensor = t;
    int64_t* values = nullptr;
    uint64_t n = 0;
    aclnnStatus s = aclGetViewShape(t, &values, &n);
    if (s == ACLNN_SUCCESS) s = take(values, n, &v->dims);
    if (s == ACLNN_SUCCESS) s = aclGetViewStrides(t, &values, &n);
    if (s == ACLNN_SUCCESS) s = take(values, n, &v->strides);
    if (s == ACLNN_SUCCESS) s = aclGetStorageShape(t, &values, &n);
    if (s == ACLNN_SUCCESS) s = take(values, n, &v->storage);
    if (s == ACLNN_SUCCESS) s = aclGetViewOffset(t, &v->offset);
    if (s == ACLNN_SUCCESS) s = aclGetDataType(t, &v->dtype);
    if (s == ACLNN_SUCCESS) s = aclGetFormat(t, &v->format);
    return s;
}

// A contiguous tensor of v's dims and dtype at `data`.
aclTensor* contiguous_like(const View& v, void* data) {
    std::vector<int64_t> strides(v.dims.size(), 1);
    for (size_t i = v.dims.size(); i-- > 1;) strides[i - 1] = strides[i] * v.dims[i];
    return aclCreateTensor(v.dims.data(), v.dims.size(), v.dtype, strides.data(), 0, v.format,
                           v.dims.data(), v.dims.size(), data);
}

// Releases an executor this layer asked for and will not run (CANN: repeatable, then destroyed).
void discard(aclOpExecutor* executor) {
    if (executor && aclSetAclOpExecutorRepeatable(executor) == ACLNN_SUCCESS)
        aclDestroyAclOpExecutor(executor);
}

struct Tensors {  // owns the aclTensors and the axis array it made
    std::vector<aclTensor*> tensors;
    aclIntArray* axes = nullptr;
    ~Tensors() {
        for (aclTensor* t : tensors) aclDestroyTensor(t);
        aclDestroyIntArray(axes);
    }
    aclTensor* keep(aclTensor* t) {
        if (t) tensors.push_back(t);
        return t;
    }
};

// The plan phase one makes and phase two runs.
struct Plan {
    uint64_t magic = kMagic;
    const char* api = "";
    View views[3];
    std::vector<int64_t> dims;
    bool copy[3] = {false, false, false};  // through a contiguous buffer in the workspace
    uint64_t at[3] = {0, 0, 0};            // where in the workspace
    uint64_t kernel_workspace = 0;         // the generated entry's, at the workspace's start
    uint64_t copy_at = 0, copy_workspace = 0;  // the copies' own (the largest; they run in turn)
    uint64_t total = 0;
    aclOpExecutor* direct = nullptr;       // the generated entry's executor, when nothing is copied
};

aclnnStatus prepare(const char* api, const aclTensor* gradOutput, const aclTensor* output,
                    const int64_t* dims, uint64_t dimsNum, aclTensor* out,
                    uint64_t* workspaceSize, aclOpExecutor** executor) {
    if (!workspaceSize || !executor)
        return report(ACLNN_ERR_PARAM_NULLPTR,
                      std::string(api) + "GetWorkspaceSize: workspaceSize or executor is NULL");
    *workspaceSize = 0;
    *executor = nullptr;
    auto plan = std::make_unique<Plan>();
    plan->api = api;
    const aclTensor* given[] = {gradOutput, output, out};
    lsg::Call call;
    lsg::TensorDesc* descs[] = {&call.dy, &call.y, &call.out};
    for (int i = 0; i < 3; ++i) {
        if (!given[i]) continue;
        const aclnnStatus s = describe(given[i], &plan->views[i]);
        if (s != ACLNN_SUCCESS)
            return report(s, std::string(api) + ": " + kNames[i] + " cannot be read: " + recent());
        descs[i]->present = true;
        descs[i]->dtype = plan->views[i].dtype;
        descs[i]->shape = plan->views[i].dims;
        descs[i]->strides = plan->views[i].strides;
    }
    if (dimsNum > 0 && !dims)
        return report(ACLNN_ERR_PARAM_NULLPTR, std::string(api) + ": dims is NULL");
    call.axes.assign(dims, dims + dimsNum);
    plan->dims = call.axes;
    const lsg::Verdict v = lsg::op_api::check_call(call);
    if (!v.ok()) return refuse(api, v);

    // Contiguous stand-ins for the views to copy: phase one of the generated entry only reads
    // their descriptors.
    Tensors own;
    const aclTensor* kernel_tensors[3];
    for (int i = 0; i < 3; ++i) {
        plan->copy[i] = !plan->views[i].contiguous() && plan->views[i].numel() > 0;
        kernel_tensors[i] = plan->copy[i] ? own.keep(contiguous_like(plan->views[i], nullptr))
                                          : plan->views[i].tensor;
        if (!kernel_tensors[i])
            return report(ACLNN_ERR_INNER, std::string(api) + ": aclCreateTensor failed: " + recent());
    }
    own.axes = aclCreateIntArray(plan->dims.data(), plan->dims.size());
    aclOpExecutor* inner = nullptr;
    uint64_t inner_ws = 0;
    const aclnnStatus s = aclnnLogSoftmaxGradCustomGetWorkspaceSize(
        kernel_tensors[0], kernel_tensors[1], own.axes, kernel_tensors[2], &inner_ws, &inner);
    if (s != ACLNN_SUCCESS) {
        // The SoC by its family where the table does not name it (a newer SoC of a family):
        // the contract's checks need only what the family allows.
        const char* soc_name = aclrtGetSocName();
        const lsg::SocProfile* soc = soc_name ? lsg::find_soc_or_family(soc_name) : nullptr;
        return refuse(api, lsg::op_api::after_refusal(call, soc, s, recent()));
    }
    plan->kernel_workspace = inner_ws;
    uint64_t end = aligned(inner_ws);
    bool copies = false;
    for (int i = 0; i < 3; ++i)
        if (plan->copy[i]) {
            copies = true;
            plan->at[i] = end;
            // A dtype the shared table does not know is refused by the generated entry above.
            const int bytes = lsg::dtype_size(plan->views[i].dtype);
            end += aligned(static_cast<uint64_t>(plan->views[i].numel()) *
                           static_cast<uint64_t>(bytes > 0 ? bytes : 1));
            // What the copy asks for: into the stand-in for an input, out of it for out.
            aclTensor* stand_in = const_cast<aclTensor*>(kernel_tensors[i]);
            aclTensor* to = i < 2 ? stand_in : const_cast<aclTensor*>(plan->views[i].tensor);
            const aclTensor* from = i < 2 ? plan->views[i].tensor : stand_in;
            uint64_t copy_ws = 0;
            aclOpExecutor* copy_ex = nullptr;
            const aclnnStatus cs = aclnnInplaceCopyGetWorkspaceSize(to, from, &copy_ws, &copy_ex);
            if (cs != ACLNN_SUCCESS) {
                discard(inner);
                return report(cs, std::string(api) + ": aclnnInplaceCopyGetWorkspaceSize of " +
                                      kNames[i] + ": " + recent());
            }
            discard(copy_ex);
            if (copy_ws > plan->copy_workspace) plan->copy_workspace = copy_ws;
        }
    if (copies) {
        discard(inner);  // asked again in phase two, with the workspace's addresses
        plan->copy_at = end;
        plan->total = end + plan->copy_workspace;
    } else {
        plan->direct = inner;
        plan->total = inner_ws;
    }
    *workspaceSize = plan->total;
    *executor = reinterpret_cast<aclOpExecutor*>(plan.release());
    return ACLNN_SUCCESS;
}

// One copy on the stream, in the copies' part of the workspace (`room` bytes at `scratch`).
aclnnStatus copy(aclTensor* to, const aclTensor* from, void* scratch, uint64_t room,
                 aclrtStream stream, const char* api) {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    aclnnStatus s = aclnnInplaceCopyGetWorkspaceSize(to, from, &ws, &ex);
    if (s == ACLNN_SUCCESS && ws > room) {
        discard(ex);
        return report(ACLNN_ERR_INNER, std::string(api) + ": aclnnInplaceCopy now asks for " +
                                           std::to_string(ws) + " bytes of workspace, " +
                                           std::to_string(room) + " in phase one");
    }
    if (s == ACLNN_SUCCESS) s = aclnnInplaceCopy(ws ? scratch : nullptr, ws, ex, stream);
    if (s != ACLNN_SUCCESS)
        return report(ACLNN_ERR_INNER, std::string(api) + ": aclnnInplaceCopy (status " +
                                           std::to_string(s) + "): " + recent());
    return ACLNN_SUCCESS;
}

aclnnStatus launch(const char* api, void* workspace, uint64_t workspaceSize,
                   aclOpExecutor* executor, aclrtStream stream) {
    if (!executor) return report(ACLNN_ERR_PARAM_NULLPTR, std::string(api) + ": executor is NULL");
    Plan* raw = reinterpret_cast<Plan*>(executor);
    if (raw->magic != kMagic || std::strcmp(raw->api, api) != 0)
        return report(ACLNN_ERR_PARAM_INVALID,
                      std::string(api) + ": the executor is not one of " + api +
                          "GetWorkspaceSize (or it ran already)");
    std::unique_ptr<Plan> plan(raw);
    plan->magic = 0;  // an executor runs once
    if (workspaceSize < plan->total) {
        discard(plan->direct);
        return report(ACLNN_ERR_PARAM_INVALID,
                      std::string(api) + ": workspace of " + std::to_string(workspaceSize) +
                          " bytes, phase one asked for " + std::to_string(plan->total));
    }
    if (plan->direct) {
        const aclnnStatus s = aclnnLogSoftmaxGradCustom(workspace, workspaceSize, plan->direct, stream);
        return s == ACLNN_SUCCESS ? s : report(s, std::string(api) + ": " + recent());
    }
    Tensors own;
    const aclTensor* kernel_tensors[3];
    auto* base = static_cast<unsigned char*>(workspace);
    void* scratch = base + plan->copy_at;
    for (int i = 0; i < 3; ++i) {
        kernel_tensors[i] = plan->views[i].tensor;
        if (!plan->copy[i]) continue;
        kernel_tensors[i] = own.keep(contiguous_like(plan->views[i], base + plan->at[i]));
        if (!kernel_tensors[i])
            return report(ACLNN_ERR_INNER, std::string(api) + ": aclCreateTensor failed: " + recent());
    }
    for (int i = 0; i < 2; ++i)
        if (plan->copy[i]) {
            const aclnnStatus s = copy(const_cast<aclTensor*>(kernel_tensors[i]),
                                       plan->views[i].tensor, scratch, plan->copy_workspace,
                                       stream, api);
            if (s != ACLNN_SUCCESS) return s;
        }
    own.axes = aclCreateIntArray(plan->dims.data(), plan->dims.size());
    aclOpExecutor* inner = nullptr;
    uint64_t inner_ws = 0;
    aclnnStatus s = aclnnLogSoftmaxGradCustomGetWorkspaceSize(kernel_tensors[0], kernel_tensors[1],
                                                        own.axes, kernel_tensors[2], &inner_ws, &inner);
    if (s != ACLNN_SUCCESS) return inner_failure(api, s);
    if (inner_ws > plan->kernel_workspace) {
        discard(inner);
        return report(ACLNN_ERR_INNER, std::string(api) + ": the generated entry now asks for " +
                                           std::to_string(inner_ws) + " bytes of workspace, " +
                                           std::to_string(plan->kernel_workspace) + " in phase one");
    }
    s = aclnnLogSoftmaxGradCustom(workspace, plan->kernel_workspace, inner, stream);
    if (s != ACLNN_SUCCESS) return inner_failure(api, s);
    if (plan->copy[2])
        return copy(const_cast<aclTensor*>(plan->views[2].tensor), kernel_tensors[2], scratch,
                    plan->copy_workspace, stream, api);
    return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclnnStatus aclnnLogSoftmaxBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                    const aclTensor* output, int64_t dim,
                                                    aclTensor* out, uint64_t* workspaceSize,
                                                    aclOpExecutor** executor) {
    return prepare("aclnnLogSoftmaxBackward", gradOutput, output, &dim, 1, out, workspaceSize,
                   executor);
}

aclnnStatus aclnnLogSoftmaxBackward(void* workspace, uint64_t workspaceSize,
                                    aclOpExecutor* executor, aclrtStream stream) {
    return launch("aclnnLogSoftmaxBackward", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnLogSoftmaxBackwardDimsGetWorkspaceSize(const aclTensor* gradOutput,
                                                        const aclTensor* output,
                                                        const int64_t* dims, uint64_t dimsNum,
                                                        aclTensor* out, uint64_t* workspaceSize,
                                                        aclOpExecutor** executor) {
    return prepare("aclnnLogSoftmaxBackwardDims", gradOutput, output, dims, dimsNum, out,
                   workspaceSize, executor);
}

aclnnStatus aclnnLogSoftmaxBackwardDims(void* workspace, uint64_t workspaceSize,
                                        aclOpExecutor* executor, aclrtStream stream) {
    return launch("aclnnLogSoftmaxBackwardDims", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
