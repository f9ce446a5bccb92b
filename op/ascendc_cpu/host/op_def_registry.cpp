// The emulated OpDef registry (register/op_def_registry.h): what OP_ADD records, by type name.
#include "register/op_def_registry.h"

#include <map>
#include <memory>
#include <mutex>

namespace ops {

namespace {

struct Entry {
    OpDefCreator creator;
    std::unique_ptr<OpDef> def;  // built on first use
};

struct Registry {
    std::mutex mutex;
    std::vector<std::string> order;
    std::map<std::string, Entry> entries;
};

// Built on first use: OP_ADD runs during static initialisation, in any order.
Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

int OpDefFactory::OpDefRegister(const char* name, OpDefCreator creator) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.entries.find(name) == r.entries.end()) r.order.emplace_back(name);
    r.entries[name] = Entry{std::move(creator), nullptr};
    return 0;
}

std::vector<std::string> OpDefFactory::GetAllOp() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    return r.order;
}

const OpDef* OpDefFactory::EmuFind(const std::string& name) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.entries.find(name);
    if (it == r.entries.end()) return nullptr;
    if (!it->second.def) it->second.def = std::make_unique<OpDef>(it->second.creator(name.c_str()));
    return it->second.def.get();
}

}  // namespace ops
