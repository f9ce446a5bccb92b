// kernel_operator.h for the CPU: our own emulation of the Ascend C programming model, written from
// the public API documentation, so that an Ascend C kernel compiles unchanged with g++ (C++17)
// and runs on emu::launch (emu/device.h), strict about the rules the hardware enforces.
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

#include <cmath>
#include <cstdint>
#include <cstring>
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
#define KERNEL_TASK_TYPE_DEFAULT(type) static_cast<void>(type)
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

template <class T>
class LocalTensor {
public:
    LocalTensor() = default;
    explicit LocalTensor(const ::emu::rt::Ref& ref) : ref_(ref) {}

    LocalTensor operator[](uint32_t offset) const {
        return LocalTensor(::emu::rt::offset_ref("LocalTensor::operator[]", ref_,
                                                 uint64_t{offset} * sizeof(T)));
    }
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(ref_);
    }
    T GetValue(uint32_t index) const {
        T v;
        std::memcpy(static_cast<void*>(&v),
                    ::emu::rt::ub("LocalTensor::GetValue", "tensor", ref_, uint64_t{index} * sizeof(T),
                                  sizeof(T), ::emu::rt::Access::kScalarRead, false),
                    sizeof(T));
        return v;
    }
    void SetValue(uint32_t index, const T& value) const {
        std::memcpy(::emu::rt::ub("LocalTensor::SetValue", "tensor", ref_, uint64_t{index} * sizeof(T),
                                  sizeof(T), ::emu::rt::Access::kScalarWrite, false),
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
    LocalTensor<T> Get() {
        return LocalTensor<T>(::emu::rt::tbuf_get(emu_id_, UINT64_MAX));
    }
    template <class T>
    LocalTensor<T> Get(uint32_t len) {
        return LocalTensor<T>(::emu::rt::tbuf_get(emu_id_, uint64_t{len} * sizeof(T)));
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

inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

[[noreturn]] inline void length_fault(const char* role, uint64_t count, uint64_t size) {
    ::emu::rt::fault(std::string("DataCopy: length not a multiple of 32 bytes: ") +
                     std::to_string(count) + " elements x " + std::to_string(size) + " B = " +
                     std::to_string(count * size) + " B (" + role +
                     "; a ragged tail needs DataCopyPad)");
}

inline void check_blocks(const char* api, uint64_t count, uint64_t len) {
    if (count < 1 || count > 4095)
        ::emu::rt::fault(std::string(api) + ": blockCount out of range [1, 4095]: " +
                         std::to_string(count));
    if (len < 1)
        ::emu::rt::fault(std::string(api) + ": blockLen out of range: 0");
}

}  // namespace emu_detail

// GM -> UB, `count` elements (count * sizeof(T) a multiple of 32 bytes).
template <class T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
    const uint64_t bytes = uint64_t{count} * sizeof(T);
    if (bytes % emu_detail::kBlock) emu_detail::length_fault("GM -> UB", count, sizeof(T));
    const uint8_t* s = ::emu::rt::gm("DataCopy", src.emu_addr(), bytes, false);
    uint8_t* d = ::emu::rt::ub("DataCopy", "dst", dst.emu_ref(), 0, bytes,
                               ::emu::rt::Access::kMte2Write, true);
    std::memcpy(d, s, bytes);
}

// UB -> GM, `count` elements (count * sizeof(T) a multiple of 32 bytes).
template <class T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    const uint64_t bytes = uint64_t{count} * sizeof(T);
    if (bytes % emu_detail::kBlock) emu_detail::length_fault("UB -> GM", count, sizeof(T));
    const uint8_t* s = ::emu::rt::ub("DataCopy", "src", src.emu_ref(), 0, bytes,
                                     ::emu::rt::Access::kMte3Read, true);
    uint8_t* d = ::emu::rt::gm("DataCopy", dst.emu_addr(), bytes, true);
    std::memcpy(d, s, bytes);
}

// UB -> UB, `count` elements (count * sizeof(T) a multiple of 32 bytes).
template <class T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    const uint64_t bytes = uint64_t{count} * sizeof(T);
    if (bytes % emu_detail::kBlock) emu_detail::length_fault("UB -> UB", count, sizeof(T));
    ::emu::rt::check_disjoint("DataCopy", "dst", dst.emu_ref(), bytes, "src", src.emu_ref(),
                              bytes);
    const uint8_t* s = ::emu::rt::ub("DataCopy", "src", src.emu_ref(), 0, bytes,
                                     ::emu::rt::Access::kUbCopyRead, true);
    uint8_t* d = ::emu::rt::ub("DataCopy", "dst", dst.emu_ref(), 0, bytes,
                               ::emu::rt::Access::kUbCopyWrite, true);
    std::memmove(d, s, bytes);
}

// GM -> UB in blocks of 32 bytes (DataCopyParams: blockLen and both strides in 32-byte blocks).
template <class T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
    emu_detail::check_blocks("DataCopy", p.blockCount, p.blockLen);
    const uint64_t len = uint64_t{p.blockLen} * emu_detail::kBlock;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = ::emu::rt::gm(
            "DataCopy", src.emu_addr() + i * (len + uint64_t{p.srcStride} * emu_detail::kBlock),
            len, false);
        uint8_t* d = ::emu::rt::ub("DataCopy", "dst", dst.emu_ref(),
                                   i * (len + uint64_t{p.dstStride} * emu_detail::kBlock), len,
                                   ::emu::rt::Access::kMte2Write, true);
        std::memcpy(d, s, len);
    }
}

// UB -> GM in blocks of 32 bytes.
template <class T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    emu_detail::check_blocks("DataCopy", p.blockCount, p.blockLen);
    const uint64_t len = uint64_t{p.blockLen} * emu_detail::kBlock;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = ::emu::rt::ub("DataCopy", "src", src.emu_ref(),
                                         i * (len + uint64_t{p.srcStride} * emu_detail::kBlock),
                                         len, ::emu::rt::Access::kMte3Read, true);
        uint8_t* d = ::emu::rt::gm(
            "DataCopy", dst.emu_addr() + i * (len + uint64_t{p.dstStride} * emu_detail::kBlock),
            len, true);
        std::memcpy(d, s, len);
    }
}

// GM -> UB, any length: each of blockCount bursts of blockLen bytes lands on a 32-byte boundary
// of the UB, padded there to a whole block (leftPadding / rightPadding elements of paddingValue
// when isPad; the rest of the block is filler: paddingValue when isPad, else copies of the
// burst's first element, as the hardware writes it).  GM stride in bytes, UB stride in blocks.
template <class T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad) {
    emu_detail::check_blocks("DataCopyPad", p.blockCount, p.blockLen);
    if (p.blockLen % sizeof(T))
        ::emu::rt::fault("DataCopyPad: blockLen not a multiple of the element size: " +
                         std::to_string(p.blockLen) + " B, elements of " +
                         std::to_string(sizeof(T)) + " B");
    const uint64_t left = pad.isPad ? uint64_t{pad.leftPadding} * sizeof(T) : 0;
    const uint64_t right = pad.isPad ? uint64_t{pad.rightPadding} * sizeof(T) : 0;
    if (left > emu_detail::kBlock || right > emu_detail::kBlock)
        ::emu::rt::fault("DataCopyPad: padding above 32 bytes: left " + std::to_string(left) +
                         " B, right " + std::to_string(right) + " B");
    const uint64_t burst = emu_detail::round_up(left + p.blockLen + right, emu_detail::kBlock);
    const uint64_t ub_step = burst + uint64_t{p.dstStride} * emu_detail::kBlock;
    const uint64_t span = (p.blockCount - 1) * ub_step + burst;
    uint8_t* base = ::emu::rt::ub("DataCopyPad", "dst", dst.emu_ref(), 0, span,
                                  ::emu::rt::Access::kMte2Write, true);
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

// UB -> GM, any length: blockLen bytes per burst; UB stride in blocks, GM stride in bytes.
template <class T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    emu_detail::check_blocks("DataCopyPad", p.blockCount, p.blockLen);
    if (p.blockLen % sizeof(T))
        ::emu::rt::fault("DataCopyPad: blockLen not a multiple of the element size: " +
                         std::to_string(p.blockLen) + " B, elements of " +
                         std::to_string(sizeof(T)) + " B");
    const uint64_t burst = emu_detail::round_up(p.blockLen, emu_detail::kBlock);
    const uint64_t ub_step = burst + uint64_t{p.srcStride} * emu_detail::kBlock;
    const uint64_t span = (p.blockCount - 1) * ub_step + p.blockLen;
    const uint8_t* base = ::emu::rt::ub("DataCopyPad", "src", src.emu_ref(), 0, span,
                                        ::emu::rt::Access::kMte3Read, true);
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

template <class T, class F>
void unary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int64_t count,
           F f) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>,
                  "emulated for float and half");
    check_count(api, count);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    ::emu::rt::vec_begin();
    ::emu::rt::check_overlap(api, "dst", dst.emu_ref(), bytes, "src", src.emu_ref(), bytes);
    const T* s = reinterpret_cast<const T*>(
        ::emu::rt::ub(api, "src", src.emu_ref(), 0, bytes, ::emu::rt::Access::kVecRead, true));
    T* d = reinterpret_cast<T*>(
        ::emu::rt::ub(api, "dst", dst.emu_ref(), 0, bytes, ::emu::rt::Access::kVecWrite, true));
    for (int64_t i = 0; i < count; ++i) d[i] = Arith<T>::store(f(Arith<T>::load(s[i])));
}

template <class T, class F>
void binary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& a,
            const LocalTensor<T>& b, int64_t count, F f) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>,
                  "emulated for float and half");
    check_count(api, count);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    ::emu::rt::vec_begin();
    ::emu::rt::check_overlap(api, "dst", dst.emu_ref(), bytes, "src0", a.emu_ref(), bytes);
    ::emu::rt::check_overlap(api, "dst", dst.emu_ref(), bytes, "src1", b.emu_ref(), bytes);
    const T* x = reinterpret_cast<const T*>(
        ::emu::rt::ub(api, "src0", a.emu_ref(), 0, bytes, ::emu::rt::Access::kVecRead, true));
    const T* y = reinterpret_cast<const T*>(
        ::emu::rt::ub(api, "src1", b.emu_ref(), 0, bytes, ::emu::rt::Access::kVecRead, true));
    T* d = reinterpret_cast<T*>(
        ::emu::rt::ub(api, "dst", dst.emu_ref(), 0, bytes, ::emu::rt::Access::kVecWrite, true));
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
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    ::emu::rt::vec_begin();
    T* d = reinterpret_cast<T*>(::emu::rt::ub("Duplicate", "dst", dst.emu_ref(), 0, bytes,
                                              ::emu::rt::Access::kVecWrite, true));
    for (int32_t i = 0; i < count; ++i) d[i] = scalar;
}

// ---- Cast ------------------------------------------------------------------------------------

namespace emu_detail {

template <class T>
constexpr const char* type_name() {
    if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else return "an unemulated type";
}

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

// Supported: half -> float, bfloat16_t -> float (exact, any mode), float -> half (every mode),
// float -> bfloat16_t (every mode but CAST_ODD).  bf16 <-> float needs a SoC with the bf16 Cast.
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
        if (bf16 && !::emu::rt::soc().bf16_cast)
            ::emu::rt::fault("Cast: bf16 Cast not available on " + ::emu::rt::soc().name + ": " +
                             what());
        if (narrow && bf16 && mode == RoundMode::CAST_ODD)
            ::emu::rt::fault(std::string("Cast: round mode not supported: ") +
                             emu_detail::mode_name(mode) + " for " + what());
        ::emu::rt::vec_begin();
        ::emu::rt::check_cast_overlap(dst.emu_ref(), sizeof(TDst), src.emu_ref(), sizeof(TSrc),
                                      count);
        const TSrc* s = reinterpret_cast<const TSrc*>(
            ::emu::rt::ub("Cast", "src", src.emu_ref(), 0, uint64_t{count} * sizeof(TSrc),
                          ::emu::rt::Access::kVecRead, true));
        TDst* d = reinterpret_cast<TDst*>(
            ::emu::rt::ub("Cast", "dst", dst.emu_ref(), 0, uint64_t{count} * sizeof(TDst),
                          ::emu::rt::Access::kVecWrite, true));
        // The overlap check guarantees that reading everything first gives what the hardware's
        // repeat-by-repeat execution gives.
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

// One 64-lane repeat as a binary tree of adjacent pairs (a lane without a partner passes).
inline float tree_sum(const float* x, int64_t m) {
    float buf[64];
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

}  // namespace emu_detail

// dst[0] = the sum of src[0..count); work: the documented minimum is one element per 64-lane
// repeat, rounded up to a 32-byte block (finalWorkLocalNeedSize); it may not overlap src or dst.
template <class T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
               const int32_t count) {
    static_assert(std::is_same_v<T, float>, "ReduceSum is emulated for float");
    constexpr int64_t per_repeat = 256 / sizeof(T);
    constexpr int64_t per_block = 32 / sizeof(T);
    if (count < 1) ::emu::rt::fault("ReduceSum: count must be positive: " + std::to_string(count));
    const int64_t repeats = (count + per_repeat - 1) / per_repeat;
    const int64_t need = (repeats + per_block - 1) / per_block * per_block;
    const uint64_t need_bytes = static_cast<uint64_t>(need) * sizeof(T);
    if (work.emu_ref().slot >= 0 && work.emu_ref().bytes < need_bytes)
        ::emu::rt::fault("ReduceSum: work buffer too small: count " + std::to_string(count) +
                         " needs " + std::to_string(need) + " elements (" +
                         std::to_string(need_bytes) + " B), work has " +
                         std::to_string(work.emu_ref().bytes / sizeof(T)) + " (" +
                         std::to_string(work.emu_ref().bytes) + " B)");
    const uint64_t src_bytes = static_cast<uint64_t>(count) * sizeof(T);
    ::emu::rt::vec_begin();
    ::emu::rt::check_disjoint("ReduceSum", "work", work.emu_ref(), need_bytes, "src",
                              src.emu_ref(), src_bytes);
    ::emu::rt::check_disjoint("ReduceSum", "work", work.emu_ref(), need_bytes, "dst",
                              dst.emu_ref(), sizeof(T));
    const T* s = reinterpret_cast<const T*>(::emu::rt::ub(
        "ReduceSum", "src", src.emu_ref(), 0, src_bytes, ::emu::rt::Access::kVecRead, true));
    T* w = reinterpret_cast<T*>(::emu::rt::ub("ReduceSum", "work", work.emu_ref(), 0, need_bytes,
                                              ::emu::rt::Access::kVecWrite, true));
    T* d = reinterpret_cast<T*>(::emu::rt::ub("ReduceSum", "dst", dst.emu_ref(), 0, sizeof(T),
                                              ::emu::rt::Access::kVecWrite, true));
    float result = 0.0f;
    switch (::emu::rt::reduce_sum_order()) {
        case ::emu::ReduceSumOrder::kLaneAccumulate: {
            // 64 lane sums, repeat by repeat, then folded pairwise (lane j with lane j + half).
            float lanes[64];
            int64_t width = count < per_repeat ? count : per_repeat;
            for (int64_t j = 0; j < width; ++j) lanes[j] = s[j];
            for (int64_t i = per_repeat; i < count; i += per_repeat) {
                const int64_t m = count - i < per_repeat ? count - i : per_repeat;
                for (int64_t j = 0; j < m; ++j) lanes[j] = lanes[j] + s[i + j];
            }
            while (width > 1) {
                const int64_t h = (width + 1) / 2;
                for (int64_t j = 0; j + h < width; ++j) lanes[j] = lanes[j] + lanes[j + h];
                width = h;
            }
            result = lanes[0];
            w[0] = result;
            break;
        }
        case ::emu::ReduceSumOrder::kTreeRepeats: {
            std::vector<float> level(static_cast<size_t>(repeats));
            for (int64_t r = 0; r < repeats; ++r) {
                const int64_t m = count - r * per_repeat < per_repeat ? count - r * per_repeat
                                                                      : per_repeat;
                level[static_cast<size_t>(r)] = emu_detail::tree_sum(s + r * per_repeat, m);
                w[r] = level[static_cast<size_t>(r)];
            }
            while (level.size() > 1) {
                std::vector<float> next;
                for (size_t i = 0; i < level.size(); i += per_repeat) {
                    const int64_t m = static_cast<int64_t>(level.size() - i) < per_repeat
                                          ? static_cast<int64_t>(level.size() - i)
                                          : per_repeat;
                    next.push_back(emu_detail::tree_sum(level.data() + i, m));
                }
                level.swap(next);
            }
            result = level[0];
            break;
        }
        default: {  // kSequentialRepeats
            for (int64_t r = 0; r < repeats; ++r) {
                const int64_t m = count - r * per_repeat < per_repeat ? count - r * per_repeat
                                                                      : per_repeat;
                const float part = emu_detail::tree_sum(s + r * per_repeat, m);
                w[r] = part;
                result = r == 0 ? part : result + part;
            }
            break;
        }
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
