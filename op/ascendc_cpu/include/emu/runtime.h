// The emulated device's runtime, as kernel_operator.h calls it: the current core, its Unified
// Buffer and buffer tables, the checked GM and UB accesses, queues, events.  Implemented in
// op/ascendc_cpu/src/device.cpp.  Not part of the Ascend C API: kernels never name it.
#ifndef EMU_RUNTIME_H
#define EMU_RUNTIME_H

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "emu/device.h"

namespace emu::rt {

// Logical positions (Ascend C TPosition); only the vector ones live in the UB here.
enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, SPM, TSCM, C2PIPE2GM,
    C2PIPE2LOCAL, MAX
};

// Ascend C HardEvent: "<producer pipe>_<consumer pipe>".
enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
    MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
    S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3,
    MTE1_FIX, FIX_MTE1, FIX_FIX, MAX
};

// How an instruction touches a UB operand (which pipe, read or write).
enum class Access : uint8_t {
    kVecRead,     // PIPE_V reads
    kVecWrite,    // PIPE_V writes
    kMte2Write,   // GM -> UB (DataCopy / DataCopyPad)
    kMte3Read,    // UB -> GM
    kUbCopyRead,  // UB -> UB DataCopy, source
    kUbCopyWrite, // UB -> UB DataCopy, destination
    kScalarRead,  // LocalTensor::GetValue
    kScalarWrite, // LocalTensor::SetValue
};

// A LocalTensor: UB byte address, its length (bytes from there to the end of the tensor, what
// GetSize() reports: the whole buffer for AllocTensor and TBuf::Get<T>(), len * sizeof(T) for
// TBuf::Get<T>(len), the parent's length minus the offset for t[k]), the buffer slot (-1: never
// assigned) and the slot's allocation generation (a freed tensor is stale).
struct Ref {
    uint32_t addr = 0;
    uint32_t bytes = 0;
    int32_t slot = -1;
    uint32_t gen = 0;
};

// A Fault: "<message>, core N" (the core's suffix when a core raised it).
[[noreturn]] EMU_API void fault(const std::string& message);
// A PolicyFault, a rule of the emulation's own that CANN does not enforce:
// "<message>, core N (emulation policy: CANN accepts this; <why>)".
[[noreturn]] EMU_API void policy_fault(const std::string& message, const std::string& why);
// fault(message) when why is null, else policy_fault(message, why): for the rules whose kind
// depends on the SoC.
[[noreturn]] EMU_API void stop(const std::string& message, const char* why);

// The current core.
EMU_API int64_t block_idx();
EMU_API int64_t block_num();
EMU_API uint64_t tiling_key();
EMU_API const Soc& soc();
// The SoC family: Atlas 200I/500 A2 (a name starting "Ascend310B"); every other SoC is treated
// as Atlas A2 (names starting "Ascend910B").
EMU_API bool ascend310b();

// A UB operand's state before an instruction touches it: assigned, not freed, not enqueued, a
// VECIN tensor read by the vector unit only after EnQue/DeQue, a VECOUT tensor copied out only
// after EnQue/DeQue.  Fault otherwise.
EMU_API void check_state(const char* api, const char* role, const Ref& t, Access access);
// The operand's UB address on an `align`-byte boundary; Fault, or PolicyFault with `why`.
EMU_API void check_align(const char* api, const char* role, const Ref& t, uint32_t align,
                         const char* why = nullptr);
// The tensor-length rule: `need` bytes from the tensor's address within the tensor.  Otherwise
// "<api>: <rule>: <role> needs <need> B (<detail>), the tensor has <bytes> B (GetSize() <n> of
// <type>)": Fault, or PolicyFault with `why`.
EMU_API void check_length(const char* api, const char* rule, const char* role, const Ref& t,
                          uint64_t need, const std::string& detail, uint32_t elem_bytes,
                          const char* type, const char* why = nullptr);

// Checked UB access: `bytes` bytes at byte `offset` into tensor `t` for `access` by `api`
// (`role` names the operand in messages): its state, its address on an `align`-byte boundary
// (0 or 1: any), the bytes within the tensor, the scalar/vector hazards.  Returns the host pointer.
EMU_API uint8_t* ub(const char* api, const char* role, const Ref& t, uint64_t offset,
                    uint64_t bytes, Access access, uint32_t align);
// ub() for an operand whose state this very call has just checked (check_state, as
// kernel_operator.h's ub_operand does for every copy and vector operand): the rest of ub()'s
// checks without the state's again (checked twice, it was a tenth of the device's time).
EMU_API uint8_t* ub_checked(const char* api, const char* role, const Ref& t, uint64_t offset,
                            uint64_t bytes, Access access, uint32_t align);
// LocalTensor::operator[]: the element offset inside the tensor (offset * elem_bytes < length).
EMU_API Ref offset_ref(const Ref& t, uint64_t offset, uint32_t elem_bytes, const char* type);
// GetValue/SetValue: index * elem_bytes < length.
EMU_API void check_index(const char* api, const Ref& t, uint64_t index, uint32_t elem_bytes,
                         const char* type);
// A vector instruction starts (its operands then share one sequence number).
EMU_API void vec_begin();
// Vector operands of the same element width: identical (in place) or disjoint; a partial
// overlap is a PolicyFault (CANN does not check it).
EMU_API void check_overlap(const char* api, const char* dst_role, const Ref& dst,
                           uint64_t dst_bytes, const char* src_role, const Ref& src,
                           uint64_t src_bytes);
// Cast's operands (element sizes may differ): CANN's overlap rule (a Fault where CANN refuses),
// then the emulation's repeat-by-repeat model (256 bytes of the wider type per repeat): a repeat
// may not overwrite source data a later repeat still reads (a PolicyFault where CANN accepts).
EMU_API void check_cast_overlap(const Ref& dst, uint32_t dst_size, const Ref& src,
                                uint32_t src_size, uint64_t count);
// Unless [a, a + a_bytes) and [b, b + b_bytes) are disjoint: Fault, or PolicyFault with `why`.
EMU_API void check_disjoint(const char* api, const char* a_role, const Ref& a, uint64_t a_bytes,
                            const char* b_role, const Ref& b, uint64_t b_bytes,
                            const char* why = nullptr);

// Checked GM access of `bytes` bytes at `addr` (a write also marks the output elements).
EMU_API uint8_t* gm(const char* api, uint64_t addr, uint64_t bytes, bool write);

// TPipe, TQue, TBuf.
EMU_API void pipe_open(void* pipe);
EMU_API void pipe_close(void* pipe) noexcept;
EMU_API void* pipe_current();
EMU_API void init_queue(void* pipe, int32_t* id, TPosition pos, int32_t depth, int32_t num,
                        uint64_t len);
EMU_API void init_tbuf(void* pipe, int32_t* id, TPosition pos, uint64_t len);
EMU_API Ref que_alloc(int32_t id);
EMU_API void que_enque(int32_t id, const Ref& t);
EMU_API Ref que_deque(int32_t id);
EMU_API void que_free(int32_t id, const Ref& t);
// TBuf::Get<T>(len): len elements of elem_bytes (UINT64_MAX: the whole buffer).
EMU_API Ref tbuf_get(int32_t id, uint64_t len, uint32_t elem_bytes, const char* type);

// Events and barriers.
EMU_API void set_flag(HardEvent event, int32_t id);
EMU_API void wait_flag(HardEvent event, int32_t id);
EMU_API void pipe_barrier(int32_t pipe);  // a pipe_t value
EMU_API int32_t fetch_event_id(HardEvent event);
EMU_API int32_t alloc_event_id(HardEvent event);
EMU_API void release_event_id(HardEvent event, int32_t id);
EMU_API const char* event_name(HardEvent event);

// The ReduceSum order of the current SoC (ReduceSumOrder::kDocumented resolved: the order
// CANN's class library implements for the SoC).
EMU_API ReduceSumOrder reduce_sum_order();

// GET_TILING_DATA: the tiling struct read from GM.
template <class T>
T load_tiling(const uint8_t* tiling) {
    static_assert(std::is_trivially_copyable_v<T>, "tiling data must be trivially copyable");
    T t;
    std::memcpy(static_cast<void*>(&t),
                gm("GET_TILING_DATA", reinterpret_cast<uint64_t>(tiling), sizeof(T), false),
                sizeof(T));
    return t;
}

}  // namespace emu::rt

#endif  // EMU_RUNTIME_H
