// CPU emulation of gert::InferShapeContext and gert::InferDataTypeContext (public CANN "basic
// data structures"): what shape and dtype inference read and write.
#ifndef LSG_EMU_GERT_INFER_SHAPE_CONTEXT_H
#define LSG_EMU_GERT_INFER_SHAPE_CONTEXT_H

#include <cstddef>
#include <vector>

#include "exe_graph/runtime/shape.h"
#include "graph/types.h"

namespace gert {

class InferShapeContext {
public:
    InferShapeContext(const InferShapeContext&) = delete;
    InferShapeContext& operator=(const InferShapeContext&) = delete;

    const Shape* GetInputShape(size_t index) const {
        return index < inputs_.size() ? inputs_[index] : nullptr;
    }
    Shape* GetOutputShape(size_t index) {
        return index < outputs_.size() ? outputs_[index] : nullptr;
    }

    // -- emulation only (pointers stay the caller's).
    InferShapeContext(std::vector<const Shape*> inputs, std::vector<Shape*> outputs)
        : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

private:
    std::vector<const Shape*> inputs_;
    std::vector<Shape*> outputs_;
};

class InferDataTypeContext {
public:
    InferDataTypeContext(const InferDataTypeContext&) = delete;
    InferDataTypeContext& operator=(const InferDataTypeContext&) = delete;

    ge::DataType GetInputDataType(size_t index) const {
        return index < inputs_.size() ? inputs_[index] : ge::DT_UNDEFINED;
    }
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType dtype) {
        if (index >= outputs_.size()) return ge::GRAPH_FAILED;
        outputs_[index] = dtype;
        return ge::GRAPH_SUCCESS;
    }
    ge::DataType GetOutputDataType(size_t index) const {
        return index < outputs_.size() ? outputs_[index] : ge::DT_UNDEFINED;
    }

    // -- emulation only.
    InferDataTypeContext(std::vector<ge::DataType> inputs, size_t outputs)
        : inputs_(std::move(inputs)), outputs_(outputs, ge::DT_UNDEFINED) {}

private:
    std::vector<ge::DataType> inputs_;
    std::vector<ge::DataType> outputs_;
};

}  // namespace gert

#endif  // LSG_EMU_GERT_INFER_SHAPE_CONTEXT_H
