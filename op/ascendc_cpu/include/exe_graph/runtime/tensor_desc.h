// CPU emulation of gert::CompileTimeTensorDesc (public CANN "basic data structures"): a tensor's
// data type and formats, as known when the operator is compiled.
#ifndef LSG_EMU_GERT_TENSOR_DESC_H
#define LSG_EMU_GERT_TENSOR_DESC_H

#include "graph/types.h"

namespace gert {

class CompileTimeTensorDesc {
public:
    CompileTimeTensorDesc() = default;
    explicit CompileTimeTensorDesc(ge::DataType dtype, ge::Format format = ge::FORMAT_ND)
        : dtype_(dtype), origin_format_(format), storage_format_(format) {}

    ge::DataType GetDataType() const { return dtype_; }
    void SetDataType(ge::DataType dtype) { dtype_ = dtype; }
    ge::Format GetOriginFormat() const { return origin_format_; }
    ge::Format GetStorageFormat() const { return storage_format_; }
    void SetOriginFormat(ge::Format f) { origin_format_ = f; }
    void SetStorageFormat(ge::Format f) { storage_format_ = f; }

private:
    ge::DataType dtype_ = ge::DT_UNDEFINED;
    ge::Format origin_format_ = ge::FORMAT_ND;
    ge::Format storage_format_ = ge::FORMAT_ND;
};

}  // namespace gert

#endif  // LSG_EMU_GERT_TENSOR_DESC_H
