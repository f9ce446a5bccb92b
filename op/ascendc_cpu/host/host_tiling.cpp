// The emulated framework's host side (see host_tiling.h).
#include "host_tiling.h"

#include <deque>
#include <memory>
#include <sstream>

#include "register/op_def_registry.h"

namespace lsg::acpu {

namespace {

// Room the emulated framework gives the tiling data (more than this operator's 80 bytes).
constexpr size_t kTilingCapacity = 4096;

struct TensorHolder {
    gert::StorageShape shape;
    gert::CompileTimeTensorDesc desc;
};

std::unique_ptr<TensorHolder> hold(const TensorDesc& t) {
    if (!t.present) return nullptr;
    auto h = std::make_unique<TensorHolder>();
    for (int64_t e : t.shape) {
        h->shape.MutableOriginShape().AppendDim(e);
        h->shape.MutableStorageShape().AppendDim(e);
    }
    h->desc = gert::CompileTimeTensorDesc(static_cast<ge::DataType>(t.dtype), ge::FORMAT_ND);
    return h;
}

gert::TilingContext::Tensor view(const std::unique_ptr<TensorHolder>& h) {
    if (!h) return {};
    return {&h->shape, &h->desc};
}

void json_string(std::ostringstream& o, const std::string& s) {
    o << '"';
    for (char c : s) {
        if (c == '"' || c == '\\') o << '\\';
        o << c;
    }
    o << '"';
}

void json_params(std::ostringstream& o, const std::deque<ops::OpParamDef>& params) {
    o << '{';
    bool first = true;
    for (const ops::OpParamDef& p : params) {
        if (!first) o << ", ";
        first = false;
        json_string(o, p.GetName());
        o << ": [";
        for (size_t i = 0; i < p.GetDataTypes().size(); ++i) {
            if (i) o << ", ";
            json_string(o, dtype_name(static_cast<int32_t>(p.GetDataTypes()[i])));
        }
        o << ']';
    }
    o << '}';
}

// CANN's names of the formats (as aic-<soc>-ops-info.json writes them); any other by its code.
std::string format_name(ge::Format f) {
    switch (f) {
        case ge::FORMAT_ND: return "ND";
        case ge::FORMAT_NCHW: return "NCHW";
        case ge::FORMAT_NHWC: return "NHWC";
        default: return "format " + std::to_string(static_cast<int>(f));
    }
}

const char* param_type_name(ops::Option o) {
    switch (o) {
        case ops::REQUIRED: return "required";
        case ops::OPTIONAL: return "optional";
        case ops::DYNAMIC: return "dynamic";
        default: return "ignore";
    }
}

void json_names(std::ostringstream& o, const std::vector<ge::Format>& formats) {
    o << '[';
    for (size_t i = 0; i < formats.size(); ++i) {
        if (i) o << ", ";
        json_string(o, format_name(formats[i]));
    }
    o << ']';
}

// Every parameter of a configuration in order (inputs, then outputs), with all it declares:
// what CANN's opbuild writes of it into aic-<soc>-ops-info.json (inputN / outputN: name,
// paramType, dtype, format, unknownshape_format).
void json_declared(std::ostringstream& o, const std::deque<ops::OpParamDef>& inputs,
                   const std::deque<ops::OpParamDef>& outputs) {
    o << '[';
    bool first = true;
    for (int io = 0; io < 2; ++io) {
        for (const ops::OpParamDef& p : io == 0 ? inputs : outputs) {
            if (!first) o << ", ";
            first = false;
            o << "{\"name\": ";
            json_string(o, p.GetName());
            o << ", \"io\": \"" << (io == 0 ? "input" : "output") << "\", \"param_type\": \""
              << param_type_name(p.GetParamType()) << "\", \"dtypes\": [";
            for (size_t i = 0; i < p.GetDataTypes().size(); ++i) {
                if (i) o << ", ";
                json_string(o, dtype_name(static_cast<int32_t>(p.GetDataTypes()[i])));
            }
            o << "], \"formats\": ";
            json_names(o, p.GetFormats());
            o << ", \"unknown_shape_formats\": ";
            json_names(o, p.GetUnknownShapeFormats());
            o << '}';
        }
    }
    o << ']';
}

}  // namespace

HostTiling run_tiling(const Call& call, const SocProfile& soc) {
    HostTiling r;
    const ops::OpDef* def = ops::OpDefFactory::EmuFind(kOpType);
    if (def == nullptr) {
        r.error = std::string("no OpDef registered as ") + kOpType + " (OP_ADD did not run)";
        return r;
    }
    const gert::OpImplKernelRegistry::TilingKernelFunc tiling = def->GetAICore().GetTiling();
    if (tiling == nullptr) {
        r.error = std::string(kOpType) + " registered no tiling function (AICore().SetTiling)";
        return r;
    }

    const auto dy = hold(call.dy), y = hold(call.y), out = hold(call.out);
    auto axes = gert::ContinuousVector::Create<int64_t>(call.axes.size());
    auto* axes_vec = reinterpret_cast<gert::ContinuousVector*>(axes.get());
    axes_vec->SetSize(call.axes.size());
    for (size_t i = 0; i < call.axes.size(); ++i)
        static_cast<int64_t*>(axes_vec->MutableData())[i] = call.axes[i];
    gert::RuntimeAttrs attrs;
    attrs.EmuAppend(axes_vec);  // attribute 0: "axes"
    fe::PlatFormInfos platform(&soc);
    std::vector<uint8_t> buffer(kTilingCapacity, 0);
    gert::TilingData tiling_data(buffer.data(), buffer.size());
    gert::TilingContext context({view(dy), view(y)}, {view(out)}, &attrs, &platform, &tiling_data);

    RejectionCapture capture;
    if (tiling(&context) != ge::GRAPH_SUCCESS) {
        r.reported = capture.reported;
        r.rejection = capture.verdict;
        r.error = std::string(kOpType) + "'s tiling function failed" +
                  (capture.reported ? ": " + capture.verdict.message : " without saying why");
        return r;
    }
    r.ok = true;
    r.tiling_data.assign(buffer.begin(), buffer.begin() + tiling_data.GetDataSize());
    r.block_dim = context.GetBlockDim();
    r.tiling_key = context.GetTilingKey();
    const size_t* ws = context.GetWorkspaceSizes(0);
    r.workspaces.assign(ws, ws + context.GetWorkspaceNum());
    return r;
}

Verdict tiling_decision(const Call& call, const SocProfile& soc) {
    const HostTiling h = run_tiling(call, soc);
    if (h.ok) return Verdict{};
    if (h.reported) return h.rejection;
    Verdict v;
    v.status = LSG_ERR_INNER;
    v.reason = LSG_REASON_INTERNAL;
    v.message = "internal error: " + h.error;
    return v;
}

bool launches_with_empty_outputs() {
    const ops::OpDef* def = ops::OpDefFactory::EmuFind(kOpType);
    return def != nullptr && def->GetAICore().GetZeroEleOutputLaunchFlag();
}

std::string describe_opdef() {
    std::ostringstream o;
    const ops::OpDef* def = ops::OpDefFactory::EmuFind(kOpType);
    if (def == nullptr) return "{}";
    o << "{\"op_type\": ";
    json_string(o, def->GetOpType());
    o << ", \"inputs\": ";
    json_params(o, def->GetInputs());
    o << ", \"outputs\": ";
    json_params(o, def->GetOutputs());
    o << ", \"attrs\": {";
    bool first = true;
    for (const ops::OpAttrDef& a : def->GetAttrs()) {
        if (!first) o << ", ";
        first = false;
        json_string(o, a.GetName());
        o << ": {\"kind\": ";
        json_string(o, a.GetKind());
        o << ", \"optional\": " << (a.GetAttrType() == ops::OPTIONAL ? "true" : "false")
          << ", \"default\": [";
        for (size_t i = 0; i < a.GetListInt().size(); ++i) o << (i ? ", " : "") << a.GetListInt()[i];
        o << "]}";
    }
    o << "}, \"socs\": {";
    first = true;
    for (const ops::OpAICoreDef::Config& c : def->GetAICore().GetAICoreConfigs()) {
        const std::deque<ops::OpParamDef>* inputs = nullptr;
        const std::deque<ops::OpParamDef>* outputs = nullptr;
        def->EmuParamsFor(c.soc, &inputs, &outputs);
        if (!first) o << ", ";
        first = false;
        json_string(o, c.soc);
        o << ": {\"inputs\": ";
        json_params(o, *inputs);
        o << ", \"outputs\": ";
        json_params(o, *outputs);
        o << ", \"params\": ";
        json_declared(o, *inputs, *outputs);
        o << ", \"own_config\": " << (c.explicit_config ? "true" : "false") << '}';
    }
    o << "}, \"has_tiling\": " << (def->GetAICore().GetTiling() ? "true" : "false")
      << ", \"launch_with_zero_ele_outputs\": "
      << (def->GetAICore().GetZeroEleOutputLaunchFlag() ? "true" : "false")
      << ", \"has_infer_shape\": " << (def->GetInferShape() ? "true" : "false")
      << ", \"has_infer_dtype\": " << (def->GetInferDataType() ? "true" : "false") << '}';
    return o.str();
}

}  // namespace lsg::acpu
