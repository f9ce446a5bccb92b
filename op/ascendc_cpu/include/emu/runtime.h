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

// A LocalTensor: UB byte address, bytes from there to the end of its buffer, the buffer slot
// (-1: never assigned) and the slot's allocation generation (a freed tensor is stale).
struct Ref {
    uint32_t addr = 0;
    uint32_t bytes = 0;
    int32_t slot = -1;
    uint32_t gen = 0;
};

[[noreturn]] EMU_API void fault(const std::string& message);  // appends ", core N"

// The current core.
EMU_API int64_t block_idx();
EMU_API int64_t block_num();
EMU_API uint64_t tiling_key();
EMU_API const Soc& soc();

// Checked UB access: `bytes` bytes at byte `offset` into tensor `t` for `access` by `api`
// (`role` names the operand in messages).  Returns the host pointer.
EMU_API uint8_t* ub(const char* api, const char* role, const Ref& t, uint64_t offset,
                    uint64_t bytes, Access access, bool align32);
EMU_API Ref offset_ref(const char* api, const Ref& t, uint64_t byte_offset);
// A vector instruction starts (its operands then share one sequence number).
EMU_API void vec_begin();
// Vector operands of the same element width: identical or disjoint, never partially overlapping.
EMU_API void check_overlap(const char* api, const char* dst_role, const Ref& dst,
                           uint64_t dst_bytes, const char* src_role, const Ref& src,
                           uint64_t src_bytes);
// Cast's operands (element sizes may differ): executed repeat by repeat (256 bytes of the wider
// type), a repeat may not overwrite source data a later repeat still reads.
EMU_API void check_cast_overlap(const Ref& dst, uint32_t dst_size, const Ref& src,
                                uint32_t src_size, uint64_t count);
// Fault unless [a, a + a_bytes) and [b, b + b_bytes) are disjoint.
EMU_API void check_disjoint(const char* api, const char* a_role, const Ref& a, uint64_t a_bytes,
                            const char* b_role, const Ref& b, uint64_t b_bytes);

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
EMU_API Ref tbuf_get(int32_t id, uint64_t bytes);  // UINT64_MAX: the whole buffer

// Events and barriers.
EMU_API void set_flag(HardEvent event, int32_t id);
EMU_API void wait_flag(HardEvent event, int32_t id);
EMU_API void pipe_barrier(int32_t pipe);  // a pipe_t value
EMU_API int32_t fetch_event_id(HardEvent event);
EMU_API int32_t alloc_event_id(HardEvent event);
EMU_API void release_event_id(HardEvent event, int32_t id);
EMU_API const char* event_name(HardEvent event);

// The ReduceSum order of the current SoC (ReduceSumOrder::kDocumented resolved).
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
