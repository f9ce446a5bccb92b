// CPU emulation of the Ascend C operator prototype API (public "prototype registration and
// management" documentation): OpDef with its inputs, outputs and attributes, the AI Core
// definition (tiling function, per-SoC configurations) and OpAICoreConfig.  Everything an OpDef
// constructor declares is recorded, so that the emulated framework (and the tests) can read back
// what the operator registered: its dtypes and formats per SoC, its tiling and inference functions.
#ifndef LSG_EMU_REGISTER_OP_DEF_H
#define LSG_EMU_REGISTER_OP_DEF_H

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "graph/types.h"

namespace gert {

struct OpImplKernelRegistry {
    using TilingKernelFunc = ge::graphStatus (*)(TilingContext*);
    using InferShapeKernelFunc = ge::graphStatus (*)(InferShapeContext*);
    using InferDataTypeKernelFunc = ge::graphStatus (*)(InferDataTypeContext*);
};

}  // namespace gert

namespace ops {

enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3, VIRTUAL = 4 };

class OpParamDef {
public:
    explicit OpParamDef(const char* name) : name_(name) {}
    OpParamDef& ParamType(Option type) {
        type_ = type;
        return *this;
    }
    OpParamDef& DataType(std::vector<ge::DataType> types) {
        types_ = std::move(types);
        return *this;
    }
    OpParamDef& Format(std::vector<ge::Format> formats) {
        formats_ = std::move(formats);
        return *this;
    }
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats) {
        unknown_shape_formats_ = std::move(formats);
        return *this;
    }

    const std::string& GetName() const { return name_; }
    Option GetParamType() const { return type_; }
    const std::vector<ge::DataType>& GetDataTypes() const { return types_; }
    const std::vector<ge::Format>& GetFormats() const { return formats_; }
    const std::vector<ge::Format>& GetUnknownShapeFormats() const { return unknown_shape_formats_; }

private:
    std::string name_;
    Option type_ = REQUIRED;
    std::vector<ge::DataType> types_;
    std::vector<ge::Format> formats_;
    std::vector<ge::Format> unknown_shape_formats_;
};

class OpAttrDef {
public:
    explicit OpAttrDef(const char* name) : name_(name) {}
    OpAttrDef& AttrType(Option type) {
        type_ = type;
        return *this;
    }
    OpAttrDef& ListInt(std::vector<int64_t> value) {
        kind_ = "list_int";
        list_int_ = std::move(value);
        return *this;
    }
    OpAttrDef& Int(int64_t value) {
        kind_ = "int";
        list_int_ = {value};
        return *this;
    }

    const std::string& GetName() const { return name_; }
    Option GetAttrType() const { return type_; }
    const std::string& GetKind() const { return kind_; }
    const std::vector<int64_t>& GetListInt() const { return list_int_; }

private:
    std::string name_;
    Option type_ = REQUIRED;
    std::string kind_;
    std::vector<int64_t> list_int_;
};

// The inputs and outputs of a definition, each kept at a stable address (a std::deque) so that
// the references the builder methods return stay valid.
class OpParamList {
public:
    OpParamDef& Add(const char* name) {
        for (OpParamDef& p : params_)
            if (p.GetName() == name) return p;
        params_.emplace_back(name);
        return params_.back();
    }
    const std::deque<OpParamDef>& Get() const { return params_; }

private:
    std::deque<OpParamDef> params_;
};

class OpAICoreConfig {
public:
    OpAICoreConfig() = default;
    explicit OpAICoreConfig(const char* soc) : soc_(soc) {}

    OpParamDef& Input(const char* name) { return inputs_.Add(name); }
    OpParamDef& Output(const char* name) { return outputs_.Add(name); }
    OpAICoreConfig& DynamicCompileStaticFlag(bool flag) {
        dynamic_compile_static_ = flag;
        return *this;
    }
    OpAICoreConfig& DynamicFormatFlag(bool flag) {
        dynamic_format_ = flag;
        return *this;
    }
    OpAICoreConfig& DynamicRankSupportFlag(bool flag) {
        dynamic_rank_support_ = flag;
        return *this;
    }
    OpAICoreConfig& DynamicShapeSupportFlag(bool flag) {
        dynamic_shape_support_ = flag;
        return *this;
    }
    OpAICoreConfig& NeedCheckSupportFlag(bool flag) {
        need_check_support_ = flag;
        return *this;
    }
    OpAICoreConfig& PrecisionReduceFlag(bool flag) {
        precision_reduce_ = flag;
        return *this;
    }

    const std::deque<OpParamDef>& GetInputs() const { return inputs_.Get(); }
    const std::deque<OpParamDef>& GetOutputs() const { return outputs_.Get(); }
    bool GetDynamicCompileStaticFlag() const { return dynamic_compile_static_; }
    bool GetDynamicRankSupportFlag() const { return dynamic_rank_support_; }
    bool GetDynamicShapeSupportFlag() const { return dynamic_shape_support_; }

private:
    std::string soc_;
    OpParamList inputs_;
    OpParamList outputs_;
    bool dynamic_compile_static_ = true;
    bool dynamic_format_ = true;
    bool dynamic_rank_support_ = true;
    bool dynamic_shape_support_ = true;
    bool need_check_support_ = false;
    bool precision_reduce_ = true;
};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(gert::OpImplKernelRegistry::TilingKernelFunc func) {
        tiling_ = func;
        return *this;
    }
    gert::OpImplKernelRegistry::TilingKernelFunc GetTiling() const { return tiling_; }

    // Whether the operator runs (tiling and kernel) when every output is empty: without it, the
    // generated aclnn entry returns success for such a call without running the tiling function
    // (nnopbase indv_executor.cpp, NnopbaseSkipKernelLaunch; the generated entry sets the flag
    // from this, asc-devkit tools/build/opbuild op_aclnn_generator.cpp).
    OpAICoreDef& LaunchWithZeroEleOutputTensors(bool launch) {
        zero_ele_output_launch_ = launch;
        return *this;
    }
    bool GetZeroEleOutputLaunchFlag() const { return zero_ele_output_launch_; }

    // A SoC the operator supports.  Without a configuration, its inputs and outputs are the
    // OpDef's own (the emulated framework resolves them: OpDef::EmuParamsFor).
    void AddConfig(const char* soc) { configs_.push_back({soc, false, OpAICoreConfig(soc)}); }
    void AddConfig(const char* soc, OpAICoreConfig& config) {
        configs_.push_back({soc, true, config});
    }

    struct Config {
        std::string soc;
        bool explicit_config;  // false: the OpDef's own inputs and outputs
        OpAICoreConfig config;
    };
    const std::vector<Config>& GetAICoreConfigs() const { return configs_; }

private:
    gert::OpImplKernelRegistry::TilingKernelFunc tiling_ = nullptr;
    bool zero_ele_output_launch_ = false;
    std::vector<Config> configs_;
};

class OpDef {
public:
    explicit OpDef(const char* type) : type_(type) {}

    OpParamDef& Input(const char* name) { return inputs_.Add(name); }
    OpParamDef& Output(const char* name) { return outputs_.Add(name); }
    OpAttrDef& Attr(const char* name) {
        for (OpAttrDef& a : attrs_)
            if (a.GetName() == name) return a;
        attrs_.emplace_back(name);
        return attrs_.back();
    }
    OpDef& SetInferShape(gert::OpImplKernelRegistry::InferShapeKernelFunc func) {
        infer_shape_ = func;
        return *this;
    }
    OpDef& SetInferDataType(gert::OpImplKernelRegistry::InferDataTypeKernelFunc func) {
        infer_data_type_ = func;
        return *this;
    }
    OpAICoreDef& AICore() { return aicore_; }

    const std::string& GetOpType() const { return type_; }
    const std::deque<OpParamDef>& GetInputs() const { return inputs_.Get(); }
    const std::deque<OpParamDef>& GetOutputs() const { return outputs_.Get(); }
    const std::deque<OpAttrDef>& GetAttrs() const { return attrs_; }
    gert::OpImplKernelRegistry::InferShapeKernelFunc GetInferShape() const { return infer_shape_; }
    gert::OpImplKernelRegistry::InferDataTypeKernelFunc GetInferDataType() const {
        return infer_data_type_;
    }
    const OpAICoreDef& GetAICore() const { return aicore_; }

    // -- emulation only: the inputs and outputs that apply on `soc` (the AddConfig name, e.g.
    // "ascend910b"); false when the operator registered no configuration for it.
    bool EmuParamsFor(const std::string& soc, const std::deque<OpParamDef>** inputs,
                      const std::deque<OpParamDef>** outputs) const {
        for (const OpAICoreDef::Config& c : aicore_.GetAICoreConfigs()) {
            if (c.soc != soc) continue;
            *inputs = c.explicit_config ? &c.config.GetInputs() : &GetInputs();
            *outputs = c.explicit_config ? &c.config.GetOutputs() : &GetOutputs();
            return true;
        }
        return false;
    }

private:
    std::string type_;
    OpParamList inputs_;
    OpParamList outputs_;
    std::deque<OpAttrDef> attrs_;
    gert::OpImplKernelRegistry::InferShapeKernelFunc infer_shape_ = nullptr;
    gert::OpImplKernelRegistry::InferDataTypeKernelFunc infer_data_type_ = nullptr;
    OpAICoreDef aicore_;
};

}  // namespace ops

#endif  // LSG_EMU_REGISTER_OP_DEF_H
