// CPU emulation of gert::RuntimeAttrs (public CANN "basic data structures"): the operator's
// attributes by their index in the prototype, as a tiling function reads them.
#ifndef LSG_EMU_GERT_RUNTIME_ATTRS_H
#define LSG_EMU_GERT_RUNTIME_ATTRS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exe_graph/runtime/continuous_vector.h"

namespace gert {

class RuntimeAttrs {
public:
    RuntimeAttrs(const RuntimeAttrs&) = delete;
    RuntimeAttrs& operator=(const RuntimeAttrs&) = delete;

    // The attribute at `index`, as a T (a list attribute is a ContinuousVector); nullptr when the
    // operator has no attribute there.
    template <typename T>
    const T* GetAttrPointer(size_t index) const {
        return index < attrs_.size() ? static_cast<const T*>(attrs_[index]) : nullptr;
    }
    const int64_t* GetInt(size_t index) const { return GetAttrPointer<int64_t>(index); }
    size_t GetAttrNum() const { return attrs_.size(); }

    // -- emulation only: how the emulated framework fills the attributes (the pointers stay the
    // caller's and must outlive the context).
    RuntimeAttrs() = default;
    void EmuAppend(const void* attr) { attrs_.push_back(attr); }

private:
    std::vector<const void*> attrs_;
};

}  // namespace gert

#endif  // LSG_EMU_GERT_RUNTIME_ATTRS_H
