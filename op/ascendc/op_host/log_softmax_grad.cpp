// LogSoftmaxGrad: operator definition, shape and dtype inference, and host tiling.
//
// The parameter checks and the tiling are the shared op/tiling code (build.sh copies tiling.h,
// tiling.cpp, lsg_types.h and soc_profiles.inc next to this file), so this build and the CPU
// twin validate and tile every call alike.  Only the platform values come from CANN here.
#include "log_softmax_grad_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling.h"

namespace optiling {

namespace {

// ge::DataType and aclDataType share their codes for the dtypes involved (DT_FLOAT 0,
// DT_FLOAT16 1, DT_INT32 3, DT_DOUBLE 11, DT_BF16 27), which are the codes lsg:: checks.
lsg::TensorDesc Describe(const gert::StorageShape* shape, const gert::CompileTimeTensorDesc* desc) {
    lsg::TensorDesc d;
    if (shape == nullptr || desc == nullptr) return d;  // a missing tensor
    d.present = true;
    d.dtype = static_cast<int32_t>(desc->GetDataType());
    const gert::Shape& s = shape->GetStorageShape();
    for (size_t i = 0; i < s.GetDimNum(); ++i) d.shape.push_back(s.GetDim(i));
    return d;  // the kernel always sees contiguous [d0, d1, d2]: no strides here
}

// The platform's values as the shared tiling's SoC profile.  The UB block is 32 bytes on every
// SoC this operator supports; only the Atlas A2 (Ascend910B) vector unit casts bf16 to fp32.
lsg::SocProfile Profile(const platform_ascendc::PlatformAscendC& platform) {
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    const bool a2 = platform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND910B;
    return lsg::SocProfile{a2 ? "Ascend910B" : "Ascend310B", a2 ? "ascend910b" : "ascend310b",
                           static_cast<int32_t>(platform.GetCoreNumAiv()),
                           static_cast<int64_t>(ub), 32, a2};
}

}  // namespace

static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    const platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    const lsg::SocProfile soc = Profile(platform);

    lsg::Call call;
    call.dy = Describe(context->GetInputShape(0), context->GetInputDesc(0));
    call.y = Describe(context->GetInputShape(1), context->GetInputDesc(1));
    call.out = Describe(context->GetOutputShape(0), context->GetOutputDesc(0));
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    const gert::ContinuousVector* axes =
        attrs == nullptr ? nullptr : attrs->GetAttrPointer<gert::ContinuousVector>(0);
    if (axes != nullptr) {
        const int64_t* data = static_cast<const int64_t*>(axes->GetData());
        call.axes.assign(data, data + axes->GetSize());
    }

    const lsg::Verdict verdict = lsg::validate(call, soc);
    if (!verdict.ok()) {
        // The status, the reason and its fix, for the aclnn caller (lsg::report_rejection).
        lsg::report_rejection(verdict);
        return ge::GRAPH_FAILED;
    }
    const lsg_tiling_record t = lsg::plan(call, soc);

    LogSoftmaxGradTilingData tiling;
    tiling.set_d0(t.d0);
    tiling.set_d1(t.d1);
    tiling.set_d2(t.d2);
    tiling.set_rowsPerBigCore(t.rows_per_big_core);
    tiling.set_rowsPerSmallCore(t.rows_per_small_core);
    tiling.set_blockBytes(t.block_bytes);
    tiling.set_blockElems(t.block_elems);
    tiling.set_chunkCount(t.chunk_count);
    tiling.set_tailElems(t.tail_elems);
    tiling.set_bigCores(t.big_cores);
    tiling.set_publicKey(t.key);

    // An empty tensor runs one core over zero rows: nothing is read or written.
    context->SetBlockDim(t.is_empty ? 1 : static_cast<uint32_t>(t.cores_used));
    // The kernel is compiled once per schedule; the flags of the public key are recorded only.
    context->SetTilingKey(static_cast<uint64_t>(t.schedule));
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(),
                        context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());

    // The library's system workspace only: views reach the kernel already contiguous (the twin's
    // workspace_bytes models the copies the aclnn layer makes for strided views).
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = platform.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* dy = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (dy == nullptr || out == nullptr) return GRAPH_FAILED;
    *out = *dy;
    return GRAPH_SUCCESS;
}

static graphStatus InferDataType(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

class LogSoftmaxGradCustom : public OpDef {
public:
    explicit LogSoftmaxGradCustom(const char* name) : OpDef(name) {
        const std::vector<ge::DataType> a2_types = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
        const std::vector<ge::Format> a2_formats = {ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND};
        this->Input("grad_output").ParamType(REQUIRED).DataType(a2_types).Format(a2_formats)
            .UnknownShapeFormat(a2_formats);
        this->Input("output").ParamType(REQUIRED).DataType(a2_types).Format(a2_formats)
            .UnknownShapeFormat(a2_formats);
        this->Output("grad_input").ParamType(REQUIRED).DataType(a2_types).Format(a2_formats)
            .UnknownShapeFormat(a2_formats);
        this->Attr("axes").AttrType(OPTIONAL).ListInt({-1});

        this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
        // An empty out still runs the tiling function, whose checks refuse an empty out of the
        // wrong shape, dtype or dims (without this, CANN's generated entry returns success for
        // it unchecked); the launch that follows runs over zero rows and touches nothing.
        this->AICore().SetTiling(optiling::TilingFunc).LaunchWithZeroEleOutputTensors(true);
        this->AICore().AddConfig("ascend910b");

        // Atlas 200I/500 A2 (Ascend310B): no bf16 -> fp32 vector Cast, so no bf16 kernel; the
        // tiling check also rejects bf16 there, with a message, before any kernel runs.
        const std::vector<ge::DataType> b_types = {ge::DT_FLOAT, ge::DT_FLOAT16};
        const std::vector<ge::Format> b_formats = {ge::FORMAT_ND, ge::FORMAT_ND};
        OpAICoreConfig config310b;
        config310b.Input("grad_output").ParamType(REQUIRED).DataType(b_types).Format(b_formats)
            .UnknownShapeFormat(b_formats);
        config310b.Input("output").ParamType(REQUIRED).DataType(b_types).Format(b_formats)
            .UnknownShapeFormat(b_formats);
        config310b.Output("grad_input").ParamType(REQUIRED).DataType(b_types).Format(b_formats)
            .UnknownShapeFormat(b_formats);
        config310b.DynamicCompileStaticFlag(true).DynamicRankSupportFlag(true)
            .DynamicShapeSupportFlag(true);
        this->AICore().AddConfig("ascend310b", config310b);
    }
};

OP_ADD(LogSoftmaxGradCustom);

}  // namespace ops
