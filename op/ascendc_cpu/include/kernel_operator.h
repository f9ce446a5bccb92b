// kernel_operator.h for the CPU: our own emulation of the Ascend C programming model, written from
// the public API documentation, so that an Ascend C kernel compiles unchanged with g++ (C++17)
// and runs on emu::launch (emu/device.h): as strict as CANN's own CPU-debug checks (a violation
// is an emu::Fault; so is what the device cannot survive), and stricter only where the emulation
// cannot answer for the result (an emu::PolicyFault).  The rules, API by API, against CANN's:
// op/ascendc_cpu/README.md.
//
// Only what op/ascendc/op_kernel/log_softmax_grad.cpp uses (and a few neighbours that planted
// bugs and tests need) is emulated; see op/ascendc_cpu/README.md for what is and is not.
//
// Compile definitions a kernel translation unit takes:
//   EMU_TILING_HEADER   the host tiling header as a quoted name, e.g. "log_softmax_grad_tiling.h":
//                       included here, its namespace optiling brought into scope, and the struct
//                       its REGISTER_TILING_DATA_CLASS names is what GET_TILING_DATA declares
//                       (as the CANN build's generated kernel tiling header does)
//   EMU_TILING_TYPE     (optional) the tiling struct's name, instead of the registered one
//   DTYPE_<INPUT>       as the CANN build defines them, e.g. DTYPE_GRAD_OUTPUT=half
#ifndef EMU_KERNEL_OPERATOR_H
#define EMU_KERNEL_OPERATOR_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "emu/device.h"
#include "emu/fp16.h"
#include "emu/runtime.h"

// ---- qualifiers and kernel macros ------------------------------------------------------------

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*

enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
};
// Atlas 200I/500 A2 (__NPU_ARCH__ 3002) does not support setting the kernel type (asc-devkit
// docs/zh/api/SIMD-API/基础API/Kernel-Tiling/设置Kernel类型.md): a kernel that does so unguarded does
// not build for that compute unit.  The CPU build (no __NPU_ARCH__) ignores it; the per-arch check
// of op/CMakeLists.txt compiles the kernel for each compute unit (2201, 3002).
#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 3002
#define KERNEL_TASK_TYPE_DEFAULT(type)                                                        \
    static_assert(sizeof(type) == 0,                                                          \
                  "KERNEL_TASK_TYPE_DEFAULT is not supported on Atlas 200I/500 A2 (__NPU_ARCH__ " \
                  "3002): guard it with #if __NPU_ARCH__ == 2201")
#else
#define KERNEL_TASK_TYPE_DEFAULT(type) static_cast<void>(type)
#endif
#define TILING_KEY_IS(key) (::emu::rt::tiling_key() == static_cast<uint64_t>(key))

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6,
               EVENT_ID7 };

namespace AscendC {

using TPosition = ::emu::rt::TPosition;
using QuePosition = ::emu::rt::TPosition;
using HardEvent = ::emu::rt::HardEvent;
using TEventID = int8_t;

enum class RoundMode {
    CAST_NONE = 0,  // no rounding where the conversion is exact, else CAST_RINT
    CAST_RINT,      // to nearest, ties to even
    CAST_FLOOR,     // toward -inf
    CAST_CEIL,      // toward +inf
    CAST_ROUND,     // to nearest, ties away from zero
    CAST_TRUNC,     // toward zero
    CAST_ODD,       // von Neumann (to odd)
};

// ---- tensors ---------------------------------------------------------------------------------

namespace emu_detail {

template <class T>
constexpr const char* type_name() {
    if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64_t";
    else return "an unemulated type";
}

}  // namespace emu_detail

// A tensor in the UB.  Its length (GetSize() elements) is what CANN's checkers bound every
// operand by: the whole buffer for AllocTensor and TBuf::Get<T>(), len for TBuf::Get<T>(len),
// the parent's length minus k for t[k]; ReinterpretCast keeps the byte length.
template <class T>
class LocalTensor {
public:
    LocalTensor() = default;
    explicit LocalTensor(const ::emu::rt::Ref& ref) : ref_(ref) {}

    LocalTensor operator[](uint32_t offset) const {  // offset < GetSize()
        return LocalTensor(
            ::emu::rt::offset_ref(ref_, offset, sizeof(T), emu_detail::type_name<T>()));
    }
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(ref_);
    }
    T GetValue(uint32_t index) const {  // index < GetSize()
        ::emu::rt::check_index("LocalTensor::GetValue", ref_, index, sizeof(T),
                               emu_detail::type_name<T>());
        T v;
        std::memcpy(static_cast<void*>(&v),
                    ::emu::rt::ub("LocalTensor::GetValue", "tensor", ref_, uint64_t{index} * sizeof(T),
                                  sizeof(T), ::emu::rt::Access::kScalarRead, 0),
                    sizeof(T));
        return v;
    }
    void SetValue(uint32_t index, const T& value) const {  // index < GetSize()
        ::emu::rt::check_index("LocalTensor::SetValue", ref_, index, sizeof(T),
                               emu_detail::type_name<T>());
        std::memcpy(::emu::rt::ub("LocalTensor::SetValue", "tensor", ref_, uint64_t{index} * sizeof(T),
                                  sizeof(T), ::emu::rt::Access::kScalarWrite, 0),
                    static_cast<const void*>(&value), sizeof(T));
    }
    uint32_t GetSize() const { return ref_.bytes / static_cast<uint32_t>(sizeof(T)); }
    uint64_t GetPhyAddr() const { return ref_.addr; }  // the UB byte address
    const ::emu::rt::Ref& emu_ref() const { return ref_; }

private:
    ::emu::rt::Ref ref_;
};

template <class T>
class GlobalTensor {
public:
    void SetGlobalBuffer(T* buffer, uint64_t size = 0) {
        addr_ = reinterpret_cast<uint64_t>(buffer);
        size_ = size;
    }
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor g;
        g.addr_ = addr_ + offset * sizeof(T);
        g.size_ = size_ > offset ? size_ - offset : 0;
        return g;
    }
    T GetValue(uint64_t index) const {
        T v;
        std::memcpy(static_cast<void*>(&v),
                    ::emu::rt::gm("GlobalTensor::GetValue", addr_ + index * sizeof(T), sizeof(T),
                                  false),
                    sizeof(T));
        return v;
    }
    void SetValue(uint64_t index, const T& value) const {
        std::memcpy(::emu::rt::gm("GlobalTensor::SetValue", addr_ + index * sizeof(T), sizeof(T),
                                  true),
                    static_cast<const void*>(&value), sizeof(T));
    }
    T* GetPhyAddr() const { return reinterpret_cast<T*>(addr_); }
    uint64_t GetSize() const { return size_; }
    uint64_t emu_addr() const { return addr_; }

private:
    uint64_t addr_ = 0;
    uint64_t size_ = 0;
};

// ---- TPipe, TQue, TBuf -----------------------------------------------------------------------

template <TPosition pos, int32_t depth>
class TQue {
public:
    template <class T>
    LocalTensor<T> AllocTensor() {
        return LocalTensor<T>(::emu::rt::que_alloc(emu_id_));
    }
    template <class T>
    bool EnQue(const LocalTensor<T>& tensor) {
        ::emu::rt::que_enque(emu_id_, tensor.emu_ref());
        return true;
    }
    template <class T>
    LocalTensor<T> DeQue() {
        return LocalTensor<T>(::emu::rt::que_deque(emu_id_));
    }
    template <class T>
    void FreeTensor(const LocalTensor<T>& tensor) {
        ::emu::rt::que_free(emu_id_, tensor.emu_ref());
    }
    int32_t emu_id_ = -1;  // the core's queue table index, set by TPipe::InitBuffer
};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    template <class T>
    LocalTensor<T> Get() {  // the whole buffer
        return LocalTensor<T>(
            ::emu::rt::tbuf_get(emu_id_, UINT64_MAX, sizeof(T), emu_detail::type_name<T>()));
    }
    template <class T>
    LocalTensor<T> Get(uint32_t len) {  // len > 0 elements, a multiple of 32 bytes, in the buffer
        return LocalTensor<T>(
            ::emu::rt::tbuf_get(emu_id_, len, sizeof(T), emu_detail::type_name<T>()));
    }
    int32_t emu_id_ = -1;
};

class TPipe {
public:
    TPipe() { ::emu::rt::pipe_open(this); }
    ~TPipe() { ::emu::rt::pipe_close(this); }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <TPosition pos, int32_t depth>
    bool InitBuffer(TQue<pos, depth>& que, int32_t num, uint32_t len) {
        ::emu::rt::init_queue(this, &que.emu_id_, pos, depth, num, len);
        return true;
    }
    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
        ::emu::rt::init_tbuf(this, &buf.emu_id_, pos, len);
        return true;
    }
    TEventID FetchEventID(HardEvent event) {
        return static_cast<TEventID>(::emu::rt::fetch_event_id(event));
    }
    template <HardEvent event>
    TEventID FetchEventID() {
        return static_cast<TEventID>(::emu::rt::fetch_event_id(event));
    }
    template <HardEvent event>
    TEventID AllocEventID() {
        return static_cast<TEventID>(::emu::rt::alloc_event_id(event));
    }
    template <HardEvent event>
    void ReleaseEventID(TEventID id) {
        ::emu::rt::release_event_id(event, id);
    }
    void Destroy() { ::emu::rt::pipe_close(this); }
};

inline TPipe* GetTPipePtr() { return static_cast<TPipe*>(::emu::rt::pipe_current()); }

inline int64_t GetBlockIdx() { return ::emu::rt::block_idx(); }
inline int64_t GetBlockNum() { return ::emu::rt::block_num(); }

// ---- synchronisation -------------------------------------------------------------------------

template <HardEvent event>
void SetFlag(int32_t id) {
    ::emu::rt::set_flag(event, id);
}
template <HardEvent event>
void WaitFlag(int32_t id) {
    ::emu::rt::wait_flag(event, id);
}
template <pipe_t pipe>
void PipeBarrier() {
    ::emu::rt::pipe_barrier(static_cast<int32_t>(pipe));
}

// ---- data movement ---------------------------------------------------------------------------

struct DataCopyParams {  // DataCopy: lengths and strides in 32-byte blocks
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
};

struct DataCopyExtParams {  // DataCopyPad: blockLen in bytes; GM strides in bytes, UB in blocks
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <class T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;   // elements
    uint8_t rightPadding = 0;  // elements
    T paddingValue{};
};

namespace emu_detail {

constexpr uint64_t kBlock = 32;
constexpr uint64_t kMaxBlockCount = 4095;         // DataCopy / DataCopyPad bursts (Atlas A2 check)
constexpr uint64_t kMaxPadBlockLen = 2097151;     // DataCopyPad burst bytes (Atlas A2 check)

inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline std::string count_detail(uint64_t count, uint64_t size) {
    return std::to_string(count) + " x " + std::to_string(size) + " B";
}

// "<n> bursts of <burst>, <n - 1> gaps of <gap> B" for the copy-length messages.
inline std::string bursts_detail(uint64_t count, const std::string& burst, uint64_t gap) {
    std::string d = std::to_string(count) + (count == 1 ? " burst of " : " bursts of ") + burst;
    if (count > 1)
        d += ", " + std::to_string(count - 1) + (count == 2 ? " gap of " : " gaps of ") +
             std::to_string(gap) + " B";
    return d;
}

// The rules CANN checks on Atlas A2 only (the 910B parameter checks, the copy-overflow check
// ASCENDC_REPORT_OVERFLOW_MEM runs for __NPU_ARCH__ 2201 and is empty for Ascend310B): a Fault on
// Atlas A2, a PolicyFault on Ascend310B with this why.
inline const char* a2_only(const char* why) { return ::emu::rt::ascend310b() ? why : nullptr; }

constexpr const char* kCopyOverflowWhy =
    "CANN's Ascend310B build does not run its copy-overflow check; the copy would run past the "
    "tensor into whatever follows it in the UB";
constexpr const char* kRangeWhy =
    "CANN checks the range on Atlas A2 only; the emulation does not model a copy beyond it";

[[noreturn]] inline void length_fault(const char* role, uint64_t count, uint64_t size) {
    ::emu::rt::fault(std::string("DataCopy: length not a multiple of 32 bytes: ") +
                     std::to_string(count) + " elements x " + std::to_string(size) + " B = " +
                     std::to_string(count * size) + " B (" + role +
                     "; a ragged tail needs DataCopyPad)");
}

inline void check_block_count(const char* api, uint64_t count) {
    if (count > kMaxBlockCount)
        ::emu::rt::stop(std::string(api) + ": blockCount out of range [0, 4095]: " +
                            std::to_string(count),
                        a2_only(kRangeWhy));
}

// A UB operand before it is touched: its state, its address on an `align`-byte boundary, and
// `need` bytes within the tensor (`rule` / `detail` for the message).  `align_why` /
// `length_why`: PolicyFault instead of Fault.
// `detail()` makes the message's detail, called only when the length check fails: these checks
// run on every copy and vector instruction, and the text is several heap allocations.
template <class T, class Detail>
void check_length(const char* api, const char* rule, const char* role, const LocalTensor<T>& t,
                  uint64_t need, const Detail& detail, const char* why = nullptr) {
    const ::emu::rt::Ref& r = t.emu_ref();
    if (r.slot < 0 || need <= r.bytes) return;  // ::emu::rt::check_length's own test
    ::emu::rt::check_length(api, rule, role, r, need, detail(), sizeof(T), type_name<T>(), why);
}

template <class T, class Detail>
void ub_operand(const char* api, const char* role, const LocalTensor<T>& t,
                ::emu::rt::Access access, uint32_t align, const char* align_why, const char* rule,
                uint64_t need, const Detail& detail, const char* length_why) {
    const ::emu::rt::Ref& r = t.emu_ref();
    ::emu::rt::check_state(api, role, r, access);
    if (r.slot >= 0 && align > 1 && r.addr % align)  // ::emu::rt::check_align's own test
        ::emu::rt::check_align(api, role, r, align, align_why);
    check_length(api, rule, role, t, need, detail, length_why);
}

// The copy operand of the count form: count * sizeof(T) within the tensor.
template <class T>
void copy_operand(const char* role, const LocalTensor<T>& t, ::emu::rt::Access access,
                  uint64_t count) {
    ub_operand("DataCopy", role, t, access, kBlock, nullptr, "count beyond the tensor",
               count * sizeof(T), [&] { return count_detail(count, sizeof(T)); },
               a2_only(kCopyOverflowWhy));
}

// The UB side of the DataCopyParams form: blockCount bursts of blockLen blocks, stride blocks
// between them.
template <class T>
void params_operand(const char* role, const LocalTensor<T>& t, ::emu::rt::Access access,
                    uint64_t count, uint64_t len_blocks, uint64_t stride_blocks) {
    const uint64_t need = count * len_blocks * kBlock + (count - 1) * stride_blocks * kBlock;
    ub_operand(
        "DataCopy", role, t, access, kBlock, nullptr, "bursts beyond the tensor", need,
        [&] {
            return bursts_detail(count, std::to_string(len_blocks * kBlock) + " B",
                                 stride_blocks * kBlock);
        },
        a2_only(kCopyOverflowWhy));
}

}  // namespace emu_detail

// GM -> UB, `count` elements (count * sizeof(T) a multiple of 32 bytes; 0: nothing is copied).
template <class T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
    const uint64_t bytes = uint64_t{count} * sizeof(T);
    if (bytes % emu_detail::kBlock) emu_detail::length_fault("GM -> UB", count, sizeof(T));
    if (count == 0) return;  // blockLen 0: CANN warns, a NOP
    emu_detail::copy_operand("dst", dst, ::emu::rt::Access::kMte2Write, count);
    const uint8_t* s = ::emu::rt::gm("DataCopy", src.emu_addr(), bytes, false);
    uint8_t* d = ::emu::rt::ub_checked("DataCopy", "dst", dst.emu_ref(), 0, bytes,
                                       ::emu::rt::Access::kMte2Write, emu_detail::kBlock);
    std::memcpy(d, s, bytes);
}

// UB -> GM, `count` elements (count * sizeof(T) a multiple of 32 bytes; 0: nothing is copied).
template <class T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    const uint64_t bytes = uint64_t{count} * sizeof(T);
    if (bytes % emu_detail::kBlock) emu_detail::length_fault("UB -> GM", count, sizeof(T));
    if (count == 0) return;
    emu_detail::copy_operand("src", src, ::emu::rt::Access::kMte3Read, count);
    const uint8_t* s = ::emu::rt::ub_checked("DataCopy", "src", src.emu_ref(), 0, bytes,
                                             ::emu::rt::Access::kMte3Read, emu_detail::kBlock);
    uint8_t* d = ::emu::rt::gm("DataCopy", dst.emu_addr(), bytes, true);
    std::memcpy(d, s, bytes);
}

// UB -> UB, `count` elements (count * sizeof(T) a multiple of 32 bytes; 0: nothing is copied).
// Source and destination identical or disjoint (a partial overlap: emulation policy).
template <class T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    const uint64_t bytes = uint64_t{count} * sizeof(T);
    if (bytes % emu_detail::kBlock) emu_detail::length_fault("UB -> UB", count, sizeof(T));
    if (count == 0) return;
    emu_detail::copy_operand("src", src, ::emu::rt::Access::kUbCopyRead, count);
    emu_detail::copy_operand("dst", dst, ::emu::rt::Access::kUbCopyWrite, count);
    if (dst.emu_ref().addr != src.emu_ref().addr)
        ::emu::rt::check_disjoint("DataCopy", "dst", dst.emu_ref(), bytes, "src", src.emu_ref(),
                                  bytes,
                                  "the result depends on the order in which the copy reads and "
                                  "writes its blocks, which the emulation does not model");
    const uint8_t* s = ::emu::rt::ub_checked("DataCopy", "src", src.emu_ref(), 0, bytes,
                                             ::emu::rt::Access::kUbCopyRead, emu_detail::kBlock);
    uint8_t* d = ::emu::rt::ub_checked("DataCopy", "dst", dst.emu_ref(), 0, bytes,
                                       ::emu::rt::Access::kUbCopyWrite, emu_detail::kBlock);
    std::memmove(d, s, bytes);
}

// GM -> UB in blocks of 32 bytes (DataCopyParams: blockLen and both strides in 32-byte blocks;
// blockCount or blockLen 0: nothing is copied).
template <class T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
    if (p.blockCount == 0 || p.blockLen == 0) return;  // CANN warns: a NOP
    emu_detail::check_block_count("DataCopy", p.blockCount);
    emu_detail::params_operand("dst", dst, ::emu::rt::Access::kMte2Write, p.blockCount,
                               p.blockLen, p.dstStride);
    const uint64_t len = uint64_t{p.blockLen} * emu_detail::kBlock;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = ::emu::rt::gm(
            "DataCopy", src.emu_addr() + i * (len + uint64_t{p.srcStride} * emu_detail::kBlock),
            len, false);
        uint8_t* d = ::emu::rt::ub_checked(
            "DataCopy", "dst", dst.emu_ref(), i * (len + uint64_t{p.dstStride} * emu_detail::kBlock),
            len, ::emu::rt::Access::kMte2Write, emu_detail::kBlock);
        std::memcpy(d, s, len);
    }
}

// UB -> GM in blocks of 32 bytes.
template <class T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    if (p.blockCount == 0 || p.blockLen == 0) return;
    emu_detail::check_block_count("DataCopy", p.blockCount);
    emu_detail::params_operand("src", src, ::emu::rt::Access::kMte3Read, p.blockCount,
                               p.blockLen, p.srcStride);
    const uint64_t len = uint64_t{p.blockLen} * emu_detail::kBlock;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = ::emu::rt::ub_checked(
            "DataCopy", "src", src.emu_ref(), i * (len + uint64_t{p.srcStride} * emu_detail::kBlock),
            len, ::emu::rt::Access::kMte3Read, emu_detail::kBlock);
        uint8_t* d = ::emu::rt::gm(
            "DataCopy", dst.emu_addr() + i * (len + uint64_t{p.dstStride} * emu_detail::kBlock),
            len, true);
        std::memcpy(d, s, len);
    }
}

namespace emu_detail {

inline void check_pad_params(uint64_t count, uint64_t len) {
    check_block_count("DataCopyPad", count);
    if (len > kMaxPadBlockLen)
        ::emu::rt::stop("DataCopyPad: blockLen out of range [0, 2097151]: " +
                            std::to_string(len) + " B",
                        a2_only(kRangeWhy));
}

}  // namespace emu_detail

// GM -> UB, any length: each of blockCount bursts of blockLen bytes lands on a 32-byte boundary
// of the UB after leftPadding elements, with rightPadding elements after it, padded there to a
// whole block.  With isPad the padding and the rest of the block are paddingValue; without, the
// padding still takes its place (CANN passes it to the copy either way) and it and the rest of
// the block are filler: copies of the burst's first element, as the hardware writes it.  GM
// stride in bytes, UB stride in blocks.  blockCount or blockLen 0: nothing is copied.
template <class T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad) {
    using emu_detail::kBlock;
    const uint64_t left = uint64_t{pad.leftPadding} * sizeof(T);
    const uint64_t right = uint64_t{pad.rightPadding} * sizeof(T);
    if (left > kBlock || right > kBlock)  // checked whether isPad or not
        ::emu::rt::fault("DataCopyPad: padding above 32 bytes: left " +
                         std::to_string(pad.leftPadding) + " elements (" + std::to_string(left) +
                         " B), right " + std::to_string(pad.rightPadding) + " elements (" +
                         std::to_string(right) + " B)");
    if (p.blockCount == 0 || p.blockLen == 0) return;  // CANN warns: a NOP
    emu_detail::check_pad_params(p.blockCount, p.blockLen);
    if (p.blockLen % sizeof(T))
        ::emu::rt::stop("DataCopyPad: blockLen not a multiple of the element size: " +
                            std::to_string(p.blockLen) + " B, elements of " +
                            std::to_string(sizeof(T)) + " B",
                        emu_detail::a2_only("CANN checks it on Atlas A2 only; the emulation does "
                                            "not model a burst that ends inside an element"));
    const uint64_t burst = emu_detail::round_up(left + p.blockLen + right, kBlock);
    const uint64_t ub_step = burst + uint64_t{p.dstStride} * kBlock;
    const uint64_t span = (p.blockCount - 1) * ub_step + burst;
    emu_detail::ub_operand(
        "DataCopyPad", "dst", dst, ::emu::rt::Access::kMte2Write, kBlock,
        emu_detail::a2_only("CANN's Ascend310B implementation does not check it; the emulation "
                            "does not model where an unaligned burst lands"),
        "bursts beyond the tensor", span,
        [&] {
            return emu_detail::bursts_detail(
                p.blockCount,
                "AlignUp(" + std::to_string(p.blockLen) +
                    (left + right ? " + " + std::to_string(left + right) + " B padding" : "") +
                    ", 32) = " + std::to_string(burst) + " B",
                uint64_t{p.dstStride} * kBlock);
        },
        emu_detail::a2_only(emu_detail::kCopyOverflowWhy));
    uint8_t* base = ::emu::rt::ub_checked("DataCopyPad", "dst", dst.emu_ref(), 0, span,
                                          ::emu::rt::Access::kMte2Write, kBlock);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = ::emu::rt::gm("DataCopyPad",
                                         src.emu_addr() + i * (uint64_t{p.blockLen} + p.srcStride),
                                         p.blockLen, false);
        uint8_t* d = base + i * ub_step;
        T fill = pad.paddingValue;
        if (!pad.isPad) std::memcpy(static_cast<void*>(&fill), s, sizeof(T));
        for (uint64_t b = 0; b < burst; b += sizeof(T))
            std::memcpy(d + b, static_cast<const void*>(&fill), sizeof(T));
        std::memcpy(d + left, s, p.blockLen);
    }
}

// UB -> GM, any length: blockLen bytes per burst, each burst starting on a 32-byte boundary of the
// UB; UB stride in blocks, GM stride in bytes.  blockCount or blockLen 0: nothing is copied.
template <class T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    using emu_detail::kBlock;
    if (p.blockCount == 0 || p.blockLen == 0) return;  // CANN warns: a NOP
    emu_detail::check_pad_params(p.blockCount, p.blockLen);
    const uint64_t burst = emu_detail::round_up(p.blockLen, kBlock);
    const uint64_t ub_step = burst + uint64_t{p.srcStride} * kBlock;
    // CANN's bound counts the last burst rounded up to 32 bytes too.
    const uint64_t need = (p.blockCount - 1) * ub_step + burst;
    emu_detail::ub_operand(
        "DataCopyPad", "src", src, ::emu::rt::Access::kMte3Read, kBlock, nullptr,
        "bursts beyond the tensor", need,
        [&] {
            return emu_detail::bursts_detail(p.blockCount,
                                             "AlignUp(" + std::to_string(p.blockLen) +
                                                 ", 32) = " + std::to_string(burst) + " B",
                                             uint64_t{p.srcStride} * kBlock);
        },
        emu_detail::a2_only(emu_detail::kCopyOverflowWhy));
    const uint64_t span = (p.blockCount - 1) * ub_step + p.blockLen;
    const uint8_t* base = ::emu::rt::ub_checked("DataCopyPad", "src", src.emu_ref(), 0, span,
                                                ::emu::rt::Access::kMte3Read, kBlock);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint8_t* d = ::emu::rt::gm("DataCopyPad",
                                   dst.emu_addr() + i * (uint64_t{p.blockLen} + p.dstStride),
                                   p.blockLen, true);
        std::memcpy(d, base + i * ub_step, p.blockLen);
    }
}

// ---- vector arithmetic -----------------------------------------------------------------------
// One rounding per operation: float in float (built with -ffp-contract=off), half through
// double (exact for +, -, *) rounded once to nearest even.

namespace emu_detail {

template <class T>
struct Arith;

template <>
struct Arith<float> {
    using Wide = float;
    static float load(float v) { return v; }
    static float store(float v) { return v; }
    static float exp(float v) { return std::exp(v); }
};

template <>
struct Arith<half> {
    using Wide = double;
    static double load(half v) { return static_cast<float>(v); }
    static half store(double v) {
        // double -> half with one rounding: round to float with round-to-odd (24 bits, far more
        // than half's 11 + 2), then to half to nearest even.
        float f = static_cast<float>(v);
        if (static_cast<double>(f) != v && std::isfinite(f)) {
            if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
            f = ::emu::fp::float_of(::emu::fp::bits_of(f) | 1u);
        }
        return half::from_bits(::emu::fp::f32_to_f16(f));
    }
    static double exp(double v) { return std::exp(static_cast<float>(v)); }
};

inline void check_count(const char* api, int64_t count) {
    if (count < 0) ::emu::rt::fault(std::string(api) + ": count is negative: " + std::to_string(count));
}

// A vector operand of the count interface: its state, 32-byte alignment and count * sizeof(T)
// within the tensor (CANN's checkers, every SoC).
template <class T>
void vec_operand(const char* api, const char* role, const LocalTensor<T>& t,
                 ::emu::rt::Access access, uint64_t count) {
    ub_operand(api, role, t, access, kBlock, nullptr, "count beyond the tensor",
               count * sizeof(T), [&] { return count_detail(count, sizeof(T)); }, nullptr);
}

template <class T, class F>
void unary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int64_t count,
           F f) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>,
                  "emulated for float and half");
    check_count(api, count);
    const uint64_t n = static_cast<uint64_t>(count);
    const uint64_t bytes = n * sizeof(T);
    ::emu::rt::vec_begin();
    vec_operand(api, "src", src, ::emu::rt::Access::kVecRead, n);
    vec_operand(api, "dst", dst, ::emu::rt::Access::kVecWrite, n);
    const T* s = reinterpret_cast<const T*>(
        ::emu::rt::ub_checked(api, "src", src.emu_ref(), 0, bytes,
                              ::emu::rt::Access::kVecRead, kBlock));
    T* d = reinterpret_cast<T*>(
        ::emu::rt::ub_checked(api, "dst", dst.emu_ref(), 0, bytes,
                              ::emu::rt::Access::kVecWrite, kBlock));
    ::emu::rt::check_overlap(api, "dst", dst.emu_ref(), bytes, "src", src.emu_ref(), bytes);
    for (int64_t i = 0; i < count; ++i) d[i] = Arith<T>::store(f(Arith<T>::load(s[i])));
}

template <class T, class F>
void binary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& a,
            const LocalTensor<T>& b, int64_t count, F f) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>,
                  "emulated for float and half");
    check_count(api, count);
    const uint64_t n = static_cast<uint64_t>(count);
    const uint64_t bytes = n * sizeof(T);
    ::emu::rt::vec_begin();
    vec_operand(api, "src0", a, ::emu::rt::Access::kVecRead, n);
    vec_operand(api, "src1", b, ::emu::rt::Access::kVecRead, n);
    vec_operand(api, "dst", dst, ::emu::rt::Access::kVecWrite, n);
    const T* x = reinterpret_cast<const T*>(
        ::emu::rt::ub_checked(api, "src0", a.emu_ref(), 0, bytes,
                              ::emu::rt::Access::kVecRead, kBlock));
    const T* y = reinterpret_cast<const T*>(
        ::emu::rt::ub_checked(api, "src1", b.emu_ref(), 0, bytes,
                              ::emu::rt::Access::kVecRead, kBlock));
    T* d = reinterpret_cast<T*>(
        ::emu::rt::ub_checked(api, "dst", dst.emu_ref(), 0, bytes,
                              ::emu::rt::Access::kVecWrite, kBlock));
    ::emu::rt::check_overlap(api, "dst", dst.emu_ref(), bytes, "src0", a.emu_ref(), bytes);
    ::emu::rt::check_overlap(api, "dst", dst.emu_ref(), bytes, "src1", b.emu_ref(), bytes);
    for (int64_t i = 0; i < count; ++i)
        d[i] = Arith<T>::store(f(Arith<T>::load(x[i]), Arith<T>::load(y[i])));
}

}  // namespace emu_detail

template <class T>
void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) {
    using W = typename emu_detail::Arith<T>::Wide;
    emu_detail::unary("Exp", dst, src, count, [](W v) { return emu_detail::Arith<T>::exp(v); });
}

template <class T>
void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar,
          const int32_t& count) {
    using W = typename emu_detail::Arith<T>::Wide;
    const W k = emu_detail::Arith<T>::load(scalar);
    emu_detail::unary("Muls", dst, src, count, [k](W v) { return v * k; });
}

template <class T>
void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar,
          const int32_t& count) {
    using W = typename emu_detail::Arith<T>::Wide;
    const W k = emu_detail::Arith<T>::load(scalar);
    emu_detail::unary("Adds", dst, src, count, [k](W v) { return v + k; });
}

template <class T>
void Add(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
         const int32_t& count) {
    using W = typename emu_detail::Arith<T>::Wide;
    emu_detail::binary("Add", dst, a, b, count, [](W x, W y) { return x + y; });
}

template <class T>
void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
         const int32_t& count) {
    using W = typename emu_detail::Arith<T>::Wide;
    emu_detail::binary("Sub", dst, a, b, count, [](W x, W y) { return x - y; });
}

template <class T>
void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
         const int32_t& count) {
    using W = typename emu_detail::Arith<T>::Wide;
    emu_detail::binary("Mul", dst, a, b, count, [](W x, W y) { return x * y; });
}

template <class T>
void Duplicate(const LocalTensor<T>& dst, const T& scalar, const int32_t& count) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>,
                  "emulated for float and half");
    emu_detail::check_count("Duplicate", count);
    const uint64_t n = static_cast<uint64_t>(count);
    ::emu::rt::vec_begin();
    emu_detail::vec_operand("Duplicate", "dst", dst, ::emu::rt::Access::kVecWrite, n);
    T* d = reinterpret_cast<T*>(::emu::rt::ub_checked("Duplicate", "dst", dst.emu_ref(), 0,
                                                      n * sizeof(T), ::emu::rt::Access::kVecWrite,
                                                      emu_detail::kBlock));
    for (int32_t i = 0; i < count; ++i) d[i] = scalar;
}

// ---- Cast ------------------------------------------------------------------------------------

namespace emu_detail {

inline const char* mode_name(RoundMode m) {
    switch (m) {
        case RoundMode::CAST_NONE: return "CAST_NONE";
        case RoundMode::CAST_RINT: return "CAST_RINT";
        case RoundMode::CAST_FLOOR: return "CAST_FLOOR";
        case RoundMode::CAST_CEIL: return "CAST_CEIL";
        case RoundMode::CAST_ROUND: return "CAST_ROUND";
        case RoundMode::CAST_TRUNC: return "CAST_TRUNC";
        case RoundMode::CAST_ODD: return "CAST_ODD";
    }
    return "an unknown RoundMode";
}

inline ::emu::fp::Round to_round(RoundMode m) {
    switch (m) {
        case RoundMode::CAST_NONE:  // rounding needed: CAST_RINT
        case RoundMode::CAST_RINT: return ::emu::fp::Round::kRint;
        case RoundMode::CAST_FLOOR: return ::emu::fp::Round::kFloor;
        case RoundMode::CAST_CEIL: return ::emu::fp::Round::kCeil;
        case RoundMode::CAST_ROUND: return ::emu::fp::Round::kRound;
        case RoundMode::CAST_TRUNC: return ::emu::fp::Round::kTrunc;
        case RoundMode::CAST_ODD: return ::emu::fp::Round::kOdd;
    }
    return ::emu::fp::Round::kRint;
}

}  // namespace emu_detail

// CANN's conversions and modes: half -> float and bfloat16_t -> float (exact) in CAST_NONE only;
// float -> half in every mode; float -> bfloat16_t in every mode but CAST_NONE and CAST_ODD.
// bf16 <-> float on a SoC without the bf16 Cast (the SoC table): emulation policy.
template <class TDst, class TSrc>
void Cast(const LocalTensor<TDst>& dst, const LocalTensor<TSrc>& src, const RoundMode& mode,
          const uint32_t& count) {
    constexpr bool widen = std::is_same_v<TDst, float> &&
                           (std::is_same_v<TSrc, half> || std::is_same_v<TSrc, bfloat16_t>);
    constexpr bool narrow = std::is_same_v<TSrc, float> &&
                            (std::is_same_v<TDst, half> || std::is_same_v<TDst, bfloat16_t>);
    const auto what = [] {
        return std::string(emu_detail::type_name<TSrc>()) + " -> " + emu_detail::type_name<TDst>();
    };
    if constexpr (!widen && !narrow) {
        ::emu::rt::fault("Cast: conversion not emulated: " + what());
    } else {
        constexpr bool bf16 = std::is_same_v<TSrc, bfloat16_t> || std::is_same_v<TDst, bfloat16_t>;
        const bool mode_ok = widen ? mode == RoundMode::CAST_NONE
                             : bf16 ? mode != RoundMode::CAST_NONE && mode != RoundMode::CAST_ODD
                                    : true;
        if (!mode_ok)
            ::emu::rt::fault(std::string("Cast: round mode not supported: ") +
                             emu_detail::mode_name(mode) + " for " + what() +
                             (widen ? " (CAST_NONE only)" : " (not CAST_NONE nor CAST_ODD)"));
        const uint64_t n = count;
        ::emu::rt::vec_begin();
        emu_detail::vec_operand("Cast", "src", src, ::emu::rt::Access::kVecRead, n);
        emu_detail::vec_operand("Cast", "dst", dst, ::emu::rt::Access::kVecWrite, n);
        const TSrc* s = reinterpret_cast<const TSrc*>(
            ::emu::rt::ub_checked("Cast", "src", src.emu_ref(), 0, n * sizeof(TSrc),
                                  ::emu::rt::Access::kVecRead, emu_detail::kBlock));
        TDst* d = reinterpret_cast<TDst*>(
            ::emu::rt::ub_checked("Cast", "dst", dst.emu_ref(), 0, n * sizeof(TDst),
                                  ::emu::rt::Access::kVecWrite, emu_detail::kBlock));
        // CANN's overlap rule (Fault), then the repeat-by-repeat model (PolicyFault): what passes
        // both gives, read all first, what the hardware's repeat-by-repeat execution gives.
        ::emu::rt::check_cast_overlap(dst.emu_ref(), sizeof(TDst), src.emu_ref(), sizeof(TSrc),
                                      count);
        if (bf16 && !::emu::rt::soc().bf16_cast)
            ::emu::rt::policy_fault(
                "Cast: bf16 Cast not available on " + ::emu::rt::soc().name + ": " + what(),
                "CANN's class library for this architecture has the bf16 Cast, but the SoC "
                "table (public platform data) gives the SoC no bf16 <-> fp32 vector Cast");
        std::vector<TSrc> in(s, s + count);
        if constexpr (widen) {
            for (uint32_t i = 0; i < count; ++i) d[i] = static_cast<float>(in[i]);
        } else {
            const ::emu::fp::Round r = emu_detail::to_round(mode);
            for (uint32_t i = 0; i < count; ++i) {
                if constexpr (std::is_same_v<TDst, half>)
                    d[i] = half::from_bits(::emu::fp::f32_to_f16(in[i], r));
                else
                    d[i] = bfloat16_t::from_bits(::emu::fp::f32_to_bf16(in[i], r));
            }
        }
    }
}

// ---- ReduceSum (tensor前n个数据计算, the count interface) --------------------------------------

namespace emu_detail {

constexpr int64_t kLanes = 64;  // one 256-byte repeat of fp32

// One repeat of m <= 64 elements as a binary tree of adjacent pairs (a lane without a partner
// passes up: the fixed 64-lane tree with zeros in the masked lanes, up to the sign of a zero).
inline float tree_sum(const float* x, int64_t m) {
    float buf[kLanes];
    for (int64_t i = 0; i < m; ++i) buf[i] = x[i];
    int64_t width = m;
    while (width > 1) {
        int64_t h = 0;
        for (int64_t i = 0; i + 1 < width; i += 2) buf[h++] = buf[i] + buf[i + 1];
        if (width & 1) buf[h++] = buf[width - 1];
        width = h;
    }
    return buf[0];
}

inline int64_t repeat_len(int64_t count, int64_t r) {
    return count - r * kLanes < kLanes ? count - r * kLanes : kLanes;
}

// Atlas A2 (one counter-mode instruction, the sum read from ACC_VAL): every repeat (the last may
// be partial) as a tree, the repeat sums added in sequence.
inline float sum_sequential(const float* s, int64_t count) {
    float acc = 0.0f;
    for (int64_t r = 0; r * kLanes < count; ++r) {
        const float part = tree_sum(s + r * kLanes, repeat_len(count, r));
        acc = r == 0 ? part : acc + part;
    }
    return acc;
}

// Not CANN's: every repeat (the last may be partial) as a tree, the sums as trees of 64 again.
inline float sum_tree_repeats(const float* s, int64_t count) {
    std::vector<float> level;
    for (int64_t r = 0; r * kLanes < count; ++r)
        level.push_back(tree_sum(s + r * kLanes, repeat_len(count, r)));
    while (level.size() > 1) {
        std::vector<float> next;
        for (size_t i = 0; i < level.size(); i += kLanes)
            next.push_back(tree_sum(
                level.data() + i, static_cast<int64_t>(std::min<size_t>(kLanes, level.size() - i))));
        level.swap(next);
    }
    return level[0];
}

// Not a documented order: 64 lane sums accumulated repeat by repeat, folded pairwise.
inline float sum_lanes(const float* s, int64_t count) {
    float lanes[kLanes];
    int64_t width = count < kLanes ? count : kLanes;
    for (int64_t j = 0; j < width; ++j) lanes[j] = s[j];
    for (int64_t i = kLanes; i < count; i += kLanes) {
        const int64_t m = count - i < kLanes ? count - i : kLanes;
        for (int64_t j = 0; j < m; ++j) lanes[j] = lanes[j] + s[i + j];
    }
    while (width > 1) {
        const int64_t h = (width + 1) / 2;
        for (int64_t j = 0; j + h < width; ++j) lanes[j] = lanes[j] + lanes[j + h];
        width = h;
    }
    return lanes[0];
}

// The Ascend310B (dav_m300) count interface, with its use of the work tensor w (at least
// reduce_work_written(count) elements): the full repeats as trees into w[0..r) (r = count / 64;
// count < 64: one repeat of count elements), those as trees of 64 in place, w[q] the last,
// partial group, the group sums as one more tree (BODY); when count % 64 != 0 (and count > 64),
// the tail as a tree of its own (TAIL) through w[0], then w[0] = BODY, w[1] = TAIL and
// w[0] = BODY + TAIL, the result.
inline float sum_body_tail(const float* s, int64_t count, float* w) {
    int64_t repeats = count / kLanes, tail = count % kLanes, body = kLanes;
    if (repeats == 0) {
        repeats = 1;
        body = count;
        tail = 0;
    }
    float body_sum;
    if (repeats == 1) {
        w[0] = tree_sum(s, body);
        body_sum = w[0];
    } else {
        for (int64_t r = 0; r < repeats; ++r) w[r] = tree_sum(s + r * kLanes, kLanes);
        const int64_t q = repeats / kLanes, l = repeats % kLanes;
        for (int64_t j = 0; j < q; ++j) w[j] = tree_sum(w + j * kLanes, kLanes);
        if (l) w[q] = tree_sum(w + q * kLanes, l);
        int64_t m = q + (l ? 1 : 0);
        while (m > kLanes) {  // beyond CANN's range (count <= the UB): trees again, in place
            int64_t next = 0;
            for (int64_t i = 0; i < m; i += kLanes)
                w[next++] = tree_sum(w + i, std::min(kLanes, m - i));
            m = next;
        }
        body_sum = m == 1 ? w[0] : tree_sum(w, m);
    }
    if (tail == 0) return body_sum;
    w[0] = tree_sum(s + repeats * kLanes, tail);
    const float tail_sum = w[0];
    w[0] = body_sum;
    w[1] = tail_sum;
    w[0] = tree_sum(w, 2);
    return w[0];
}

// The work elements the Ascend310B implementation writes: max(1, count / 64), and w[0..1] when
// there is a tail.
inline int64_t reduce_work_written(int64_t count) {
    const int64_t repeats = count / kLanes > 0 ? count / kLanes : 1;
    const bool tail = count > kLanes && count % kLanes != 0;
    return tail && repeats < 2 ? 2 : repeats;
}

}  // namespace emu_detail

// dst[0] = the sum of src[0..count), in CANN's order for the SoC (emu::ReduceSumOrder).
// Atlas A2: the work tensor is neither checked nor used (CANN's 910B implementation does not take
// it).  Ascend310B: work needs max(1, floor(count / 64)) elements (CANN's check) and is written as
// CANN's implementation writes it (w[1] too when count % 64 != 0: emulation policy when work is
// shorter); work overlapping src or dst: emulation policy.  src on 32 bytes, dst and work on
// sizeof(T); 1 <= count <= the SoC's UB / sizeof(T).
template <class T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
               const int32_t count) {
    static_assert(std::is_same_v<T, float>, "ReduceSum is emulated for float");
    using ::emu::rt::Access;
    const char* api = "ReduceSum";
    const int64_t max_count = ::emu::rt::soc().ub_bytes / static_cast<int64_t>(sizeof(T));
    if (count < 1 || count > max_count)
        ::emu::rt::fault("ReduceSum: count out of range [1, " + std::to_string(max_count) +
                         "]: " + std::to_string(count));
    const uint64_t n = static_cast<uint64_t>(count);
    const bool b310 = ::emu::rt::ascend310b();
    ::emu::rt::vec_begin();
    emu_detail::vec_operand(api, "src", src, Access::kVecRead, n);
    emu_detail::ub_operand(api, "dst", dst, Access::kVecWrite, sizeof(T), nullptr,
                           "dst shorter than one element", sizeof(T),
                           [] { return emu_detail::count_detail(1, sizeof(T)); }, nullptr);
    const uint64_t written = static_cast<uint64_t>(emu_detail::reduce_work_written(count));
    if (b310) {
        const uint64_t need = n / 64 > 0 ? n / 64 : 1;
        ::emu::rt::check_state(api, "work", work.emu_ref(), Access::kVecWrite);
        ::emu::rt::check_align(api, "work", work.emu_ref(), sizeof(T));
        emu_detail::check_length(api, "work tensor too small", "work", work, need * sizeof(T),
                                 [&] {
                                     return "count " + std::to_string(count) +
                                            ": max(1, floor(count / 64)) = " +
                                            std::to_string(need) + " elements";
                                 });
        emu_detail::check_length(api, "work shorter than CANN's implementation writes", "work",
                                 work, written * sizeof(T),
                                 [&] {
                                     return "count " + std::to_string(count) +
                                            ": work[0] and work[1] hold the body and tail sums";
                                 },
                                 "CANN's check asks for max(1, floor(count / 64)) elements, but "
                                 "its Ascend310B implementation writes work[1] when count % 64 "
                                 "!= 0");
    }
    const T* s = reinterpret_cast<const T*>(
        ::emu::rt::ub_checked(api, "src", src.emu_ref(), 0, n * sizeof(T), Access::kVecRead,
                              emu_detail::kBlock));
    T* w = b310 ? reinterpret_cast<T*>(::emu::rt::ub_checked(api, "work", work.emu_ref(), 0,
                                                             written * sizeof(T), Access::kVecWrite,
                                                             sizeof(T)))
                : nullptr;
    T* d = reinterpret_cast<T*>(
        ::emu::rt::ub_checked(api, "dst", dst.emu_ref(), 0, sizeof(T), Access::kVecWrite,
                              sizeof(T)));
    if (b310) {
        const char* why =
            "CANN does not check it; its Ascend310B implementation writes the work tensor while "
            "it reads src and uses dst as scratch, in an order the emulation does not model";
        ::emu::rt::check_disjoint(api, "work", work.emu_ref(), written * sizeof(T), "src",
                                  src.emu_ref(), n * sizeof(T), why);
        ::emu::rt::check_disjoint(api, "work", work.emu_ref(), written * sizeof(T), "dst",
                                  dst.emu_ref(), sizeof(T), why);
    }
    // On Ascend310B the work tensor holds what CANN's implementation leaves there, whatever the
    // order asked for; the order gives dst[0].
    float body_tail = 0.0f;
    if (b310) {
        body_tail = emu_detail::sum_body_tail(s, count, w);
    }
    float result = 0.0f;
    switch (::emu::rt::reduce_sum_order()) {
        case ::emu::ReduceSumOrder::kLaneAccumulate:
            result = emu_detail::sum_lanes(s, count);
            break;
        case ::emu::ReduceSumOrder::kTreeRepeats:
            result = emu_detail::sum_tree_repeats(s, count);
            break;
        case ::emu::ReduceSumOrder::kTreeBodyTail: {
            if (b310) {
                result = body_tail;
            } else {
                std::vector<float> scratch(static_cast<size_t>(written));
                result = emu_detail::sum_body_tail(s, count, scratch.data());
            }
            break;
        }
        default: result = emu_detail::sum_sequential(s, count); break;  // kSequentialRepeats
    }
    d[0] = result;
}

}  // namespace AscendC

// ---- the tiling data -------------------------------------------------------------------------

#ifdef EMU_TILING_HEADER
#define EMU_KERNEL_SIDE 1
#include EMU_TILING_HEADER
// The kernel names the tiling struct unqualified, as the CANN build's generated header lets it.
using namespace optiling;
#endif

#ifdef EMU_TILING_TYPE
#define EMU_KERNEL_TILING_DATA EMU_TILING_TYPE
#else
#define EMU_KERNEL_TILING_DATA EmuKernelTilingData  // REGISTER_TILING_DATA_CLASS's
#endif

#define GET_TILING_DATA(var, tiling) \
    EMU_KERNEL_TILING_DATA var = ::emu::rt::load_tiling<EMU_KERNEL_TILING_DATA>(tiling)

#endif  // EMU_KERNEL_OPERATOR_H
