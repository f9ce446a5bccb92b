// CPU emulation of gert::TilingContext (public CANN "basic data structures"): what a tiling
// function reads (input and output shapes and descriptions, attributes, the platform) and what
// it decides (block dim, tiling key, tiling data, workspace sizes).  Only the members the
// operator's host code uses, with the documented signatures.
#ifndef LSG_EMU_GERT_TILING_CONTEXT_H
#define LSG_EMU_GERT_TILING_CONTEXT_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/shape.h"
#include "exe_graph/runtime/tensor_desc.h"
#include "exe_graph/runtime/tiling_data.h"
#include "graph/types.h"
#include "platform/platform_infos_def.h"

namespace gert {

class TilingContext {
public:
    TilingContext(const TilingContext&) = delete;
    TilingContext& operator=(const TilingContext&) = delete;

    // nullptr for an index past the inputs, or for an input that was not given.
    const StorageShape* GetInputShape(size_t index) const { return At(inputs_, index).shape; }
    const CompileTimeTensorDesc* GetInputDesc(size_t index) const {
        return At(inputs_, index).desc;
    }
    const StorageShape* GetOutputShape(size_t index) const { return At(outputs_, index).shape; }
    const CompileTimeTensorDesc* GetOutputDesc(size_t index) const {
        return At(outputs_, index).desc;
    }
    const RuntimeAttrs* GetAttrs() const { return attrs_; }
    fe::PlatFormInfos* GetPlatformInfo() const { return platform_; }

    ge::graphStatus SetBlockDim(uint32_t block_dim) {
        block_dim_ = block_dim;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const { return block_dim_; }
    ge::graphStatus SetTilingKey(uint64_t tiling_key) {
        tiling_key_ = tiling_key;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const { return tiling_key_; }
    TilingData* GetRawTilingData() { return tiling_data_; }

    // Room for `workspace_count` sizes (each 0 until the tiling function sets it); nullptr for a
    // count above the framework's limit.
    size_t* GetWorkspaceSizes(size_t workspace_count) {
        if (workspace_count > kMaxWorkspaces) return nullptr;
        if (workspace_count > workspace_num_) workspace_num_ = workspace_count;
        return workspaces_;
    }
    size_t GetWorkspaceNum() const { return workspace_num_; }

    // -- emulation only: how the emulated framework builds the context.  Every pointer stays the
    // caller's and must outlive the context.
    static constexpr size_t kMaxWorkspaces = 8;
    struct Tensor {
        const StorageShape* shape = nullptr;
        const CompileTimeTensorDesc* desc = nullptr;
    };
    TilingContext(std::vector<Tensor> inputs, std::vector<Tensor> outputs, const RuntimeAttrs* attrs,
                  fe::PlatFormInfos* platform, TilingData* tiling_data)
        : inputs_(std::move(inputs)),
          outputs_(std::move(outputs)),
          attrs_(attrs),
          platform_(platform),
          tiling_data_(tiling_data) {}

private:
    static Tensor At(const std::vector<Tensor>& v, size_t index) {
        return index < v.size() ? v[index] : Tensor{};
    }

    std::vector<Tensor> inputs_;
    std::vector<Tensor> outputs_;
    const RuntimeAttrs* attrs_;
    fe::PlatFormInfos* platform_;
    TilingData* tiling_data_;
    uint32_t block_dim_ = 0;
    uint64_t tiling_key_ = 0;
    size_t workspaces_[kMaxWorkspaces] = {};
    size_t workspace_num_ = 0;
};

}  // namespace gert

#endif  // LSG_EMU_GERT_TILING_CONTEXT_H
