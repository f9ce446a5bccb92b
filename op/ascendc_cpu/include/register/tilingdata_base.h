// register/tilingdata_base.h for the CPU emulation: the tiling-data macros of a CANN op_host
// tiling header, one definition serving both sides.
//
//   BEGIN_TILING_DATA_DEF(Name)            a class Name in the enclosing namespace (optiling)
//   TILING_DATA_FIELD_DEF(type, field);    a public data member `field` (zero-initialised) with
//                                          set_field(v) / get_field()
//   END_TILING_DATA_DEF;
//   REGISTER_TILING_DATA_CLASS(Op, Name)   the registration (no trailing semicolon needed)
//
// Host side (op_host): Name has set_<field>(v), get_<field>(), GetDataSize() and
// SaveToBuffer(void* data, size_t capacity), which writes the fields in declaration order with
// their natural C++ alignment (the struct's own bytes).
// Kernel side (kernel_operator.h defines EMU_KERNEL_SIDE before including the tiling header):
// the same class is a plain trivially copyable struct whose fields the kernel reads by name, and
// REGISTER_TILING_DATA_CLASS also names it EmuKernelTilingData, the type GET_TILING_DATA(var,
// tiling) declares and fills from the bytes SaveToBuffer wrote.
#ifndef EMU_REGISTER_TILINGDATA_BASE_H
#define EMU_REGISTER_TILINGDATA_BASE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace emu::tiling {

template <class Derived>
class TilingDataBase {
public:
    size_t GetDataSize() const { return sizeof(Derived); }
    void SaveToBuffer(void* data, size_t capacity) const {
        static_assert(std::is_trivially_copyable_v<Derived> && std::is_standard_layout_v<Derived>,
                      "tiling data must be a plain struct of fields");
        if (data == nullptr || capacity < sizeof(Derived))
            throw std::length_error("SaveToBuffer: capacity " + std::to_string(capacity) +
                                    " B is below the tiling data's " +
                                    std::to_string(sizeof(Derived)) + " B");
        std::memcpy(data, static_cast<const void*>(static_cast<const Derived*>(this)),
                    sizeof(Derived));
    }
};

}  // namespace emu::tiling

#define BEGIN_TILING_DATA_DEF(name) \
    class name : public ::emu::tiling::TilingDataBase<name> { \
    public:

#define TILING_DATA_FIELD_DEF(type, field)      \
    void set_##field(type value) { field = value; } \
    type get_##field() const { return field; }  \
    type field = type()

#define END_TILING_DATA_DEF }

#ifdef EMU_KERNEL_SIDE
#define EMU_REGISTER_KERNEL_ALIAS_(cls) using EmuKernelTilingData = cls;
#else
#define EMU_REGISTER_KERNEL_ALIAS_(cls)
#endif

#define REGISTER_TILING_DATA_CLASS(op_type, cls)                   \
    struct EmuTilingRegistration_##op_type {                       \
        using type = cls;                                          \
        static constexpr const char* kOpType = #op_type;           \
    };                                                             \
    EMU_REGISTER_KERNEL_ALIAS_(cls)

#endif  // EMU_REGISTER_TILINGDATA_BASE_H
