// The emulation's 2-byte floating-point types: half (IEEE binary16) and bfloat16_t, as 2-byte
// storage with exact widening to float and narrowing in each of the Ascend C round modes.
//
// Narrowing follows the rounding rules of the Ascend C Cast documentation (RoundMode):
//   RINT  round to nearest, ties to even        ROUND round to nearest, ties away from zero
//   FLOOR toward -inf    CEIL toward +inf        TRUNC toward zero
//   ODD   von Neumann: an inexact result gets an odd last mantissa bit
// Overflow follows IEEE 754 for the mode (RINT/ROUND give inf; TRUNC/ODD the largest finite value;
// FLOOR/CEIL inf on their own side).  NaN stays NaN (quiet, sign and top payload bits kept); inf
// stays inf.  (The documentation says float->half overflow "saturates by default"; see
// op/ascendc_cpu/README.md: the emulation models the INF/NAN overflow mode.)
#ifndef EMU_FP16_H
#define EMU_FP16_H

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace emu::fp {

enum class Round : int { kRint, kFloor, kCeil, kRound, kTrunc, kOdd };

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// float -> a binary format with `ebits` exponent bits and `mbits` mantissa bits (<= 16 bits in
// all), rounded in `mode`.
inline uint16_t narrow(float f, int ebits, int mbits, Round mode) {
    const uint32_t x = bits_of(f);
    const bool neg = (x >> 31) != 0;
    const uint32_t sign = neg ? 1u << (ebits + mbits) : 0u;
    const uint32_t fexp = (x >> 23) & 0xffu;
    const uint32_t fman = x & 0x7fffffu;
    const uint32_t inf = ((1u << ebits) - 1u) << mbits;
    if (fexp == 0xff) {
        if (fman == 0) return static_cast<uint16_t>(sign | inf);
        // Quiet NaN: keep the top payload bits, set the quiet bit.
        return static_cast<uint16_t>(sign | inf | (1u << (mbits - 1)) | (fman >> (23 - mbits)));
    }
    // |f| = sig * 2^qe exactly.
    const uint32_t sig = fexp == 0 ? fman : (fman | 0x800000u);
    if (sig == 0) return static_cast<uint16_t>(sign);
    const int qe = fexp == 0 ? -149 : static_cast<int>(fexp) - 150;
    const int bitlen = 32 - __builtin_clz(sig);  // sig != 0
    const int ex = qe + bitlen - 1;  // floor(log2 |f|)
    const int bias = (1 << (ebits - 1)) - 1;
    const int emin = 1 - bias;
    const int emax = bias;
    int tq = (ex > emin ? ex : emin) - mbits;  // the target's quantum at |f|
    const int shift = tq - qe;
    uint64_t k;
    bool inexact = false, above_half = false, at_half = false;
    if (shift <= 0) {
        k = static_cast<uint64_t>(sig) << (-shift);
    } else if (shift > 40) {
        k = 0;
        inexact = true;  // far below half a quantum
    } else {
        k = uint64_t{sig} >> shift;
        const uint64_t rem = uint64_t{sig} & ((uint64_t{1} << shift) - 1u);
        const uint64_t half = uint64_t{1} << (shift - 1);
        inexact = rem != 0;
        above_half = rem > half;
        at_half = rem == half;
    }
    if (inexact) {
        switch (mode) {
            case Round::kRint: k += (above_half || (at_half && (k & 1u))) ? 1u : 0u; break;
            case Round::kRound: k += (above_half || at_half) ? 1u : 0u; break;
            case Round::kTrunc: break;
            case Round::kFloor: k += neg ? 1u : 0u; break;
            case Round::kCeil: k += neg ? 0u : 1u; break;
            case Round::kOdd: k |= 1u; break;
        }
    }
    if (k == 0) return static_cast<uint16_t>(sign);
    if (k >> (mbits + 1)) {  // a carry past the mantissa: renormalise (k is even here)
        k >>= 1;
        ++tq;
    }
    const uint32_t max_finite = inf - 1u;
    if (k >> mbits) {  // normal
        const int e = tq + mbits;
        if (e > emax) {
            bool to_inf = false;
            switch (mode) {
                case Round::kRint: case Round::kRound: to_inf = true; break;
                case Round::kTrunc: case Round::kOdd: to_inf = false; break;
                case Round::kFloor: to_inf = neg; break;
                case Round::kCeil: to_inf = !neg; break;
            }
            return static_cast<uint16_t>(sign | (to_inf ? inf : max_finite));
        }
        const uint32_t field = static_cast<uint32_t>(e + bias);
        return static_cast<uint16_t>(sign | (field << mbits) |
                                     (static_cast<uint32_t>(k) & ((1u << mbits) - 1u)));
    }
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(k));  // subnormal
}

inline uint16_t f32_to_f16(float f, Round mode = Round::kRint) { return narrow(f, 5, 10, mode); }
inline uint16_t f32_to_bf16(float f, Round mode = Round::kRint) { return narrow(f, 8, 7, mode); }

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t m = h & 0x3ffu;
    if (e == 0x1f) return float_of(sign | 0x7f800000u | (m << 13));
    if (e != 0) return float_of(sign | ((e + 112u) << 23) | (m << 13));
    // zero or subnormal: m * 2^-24, exact in float
    const float v = static_cast<float>(m) * float_of(0x33800000u);  // 2^-24
    return sign ? -v : v;
}

inline float bf16_to_f32(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

}  // namespace emu::fp

// half: IEEE binary16 storage.  Exact widening to float; narrowing from float rounds to nearest
// even (the Cast API chooses other modes).
struct half {
    uint16_t bits;
    half() = default;
    template <class A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
    explicit half(A v) : bits(emu::fp::f32_to_f16(static_cast<float>(v))) {}
    operator float() const { return emu::fp::f16_to_f32(bits); }
    static half from_bits(uint16_t b) {
        half h;
        h.bits = b;
        return h;
    }
};

// bfloat16_t: the top 16 bits of an IEEE binary32.
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    template <class A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
    explicit bfloat16_t(A v) : bits(emu::fp::f32_to_bf16(static_cast<float>(v))) {}
    operator float() const { return emu::fp::bf16_to_f32(bits); }
    static bfloat16_t from_bits(uint16_t b) {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
};

static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>, "half is 2 bytes");
static_assert(sizeof(bfloat16_t) == 2 && std::is_trivially_copyable_v<bfloat16_t>,
              "bfloat16_t is 2 bytes");

#endif  // EMU_FP16_H
