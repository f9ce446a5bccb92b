// CPU emulation of register/op_def_registry.h, the header an Ascend C operator's host code
// includes: the prototype API (register/op_def.h), the contexts of tiling and inference
// (exe_graph/runtime/*), and OP_ADD, which registers an OpDef by its type name.
//
// The registry keeps every OpDef its OP_ADD created, by type: the emulated framework finds the
// operator's tiling function there (OpDef::AICore().GetTiling(), recorded by SetTiling) rather
// than calling it by name, exactly as CANN does; tests read the registered dtypes back from it.
#ifndef LSG_EMU_REGISTER_OP_DEF_REGISTRY_H
#define LSG_EMU_REGISTER_OP_DEF_REGISTRY_H

#include <functional>
#include <string>
#include <vector>

#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "graph/types.h"
#include "register/op_def.h"

namespace ops {

using OpDefCreator = std::function<OpDef(const char*)>;

class OpDefFactory {
public:
    // Record `creator` under `name`; returns 0 (so OP_ADD can initialise a static with it).
    static int OpDefRegister(const char* name, OpDefCreator creator);
    // The registered type names, in registration order.
    static std::vector<std::string> GetAllOp();
    // -- emulation only: the OpDef of `name`, built once by its creator; nullptr if unknown.
    static const OpDef* EmuFind(const std::string& name);
};

}  // namespace ops

// OP_ADD(Type): register ops::Type (an OpDef subclass whose constructor takes the type name).
#define OP_ADD(opType, ...)                                                            \
    [[maybe_unused]] static const int g_lsg_emu_op_added_##opType =                   \
        ::ops::OpDefFactory::OpDefRegister(#opType, [](const char* name) {            \
            return static_cast<::ops::OpDef>(opType(name));                           \
        })

#endif  // LSG_EMU_REGISTER_OP_DEF_REGISTRY_H
