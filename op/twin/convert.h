// fp32 <-> fp16 / bf16 conversions of the twin: exact widening, round-to-nearest-even narrowing,
// with NaN (kept quiet, sign kept), inf, overflow to inf and subnormals handled.
#ifndef LSG_CONVERT_H
#define LSG_CONVERT_H

#include <cstdint>
#include <cstring>

namespace lsg {

inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float bits_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));  // inf, NaN
    if (exp != 0) return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0) return bits_f32(sign);
    // Subnormal: value = mant * 2^-24; normalise into an fp32 normal.
    // After k shifts the leading bit is bit 10: value = 1.f * 2^(-14 - k), biased 113 - k.
    uint32_t e = 113;
    while (!(mant & 0x400u)) {
        mant <<= 1;
        --e;
    }
    return bits_f32(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

inline uint16_t f32_to_f16(float f) {
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) {
        if (mant) return static_cast<uint16_t>(sign | 0x7e00u | (mant >> 13));  // quiet NaN
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
        // fp16 subnormal (or zero): h = mant * 2^(e - 14) with the implicit bit, rounded.
        const int shift = 14 - e;
        if (shift > 24) return sign;  // below half the smallest subnormal
        mant |= 0x800000u;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<uint16_t>(sign | h);  // a carry into 0x400 is the smallest normal
    }
    uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into inf: correct
    return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
    const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(rounded >> 16);
}

#if defined(LSG_PLANT_BUG_TRUNC_NARROW)
// Planted bug: the output cast rounds toward zero (a CAST_TRUNC where CAST_RINT is needed): the
// dropped mantissa bits are discarded, never rounded up; a finite value past the largest fp16
// becomes the largest (round toward zero never makes inf).  NaN and inf as f32_to_f16/f32_to_bf16.
// Only the kernel's copy_out uses these; the widening and lsg_convert stay correct.
inline uint16_t f32_to_f16_trunc(float f) {
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t exp = (x >> 23) & 0xffu;
    const uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) return f32_to_f16(f);
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7bffu);
    if (e <= 0) {
        const int shift = 14 - e;
        if (shift > 24) return sign;
        return static_cast<uint16_t>(sign | ((mant | 0x800000u) >> shift));
    }
    return static_cast<uint16_t>(sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13));
}

inline uint16_t f32_to_bf16_trunc(float f) {
    const uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return f32_to_bf16(f);
    return static_cast<uint16_t>(x >> 16);
}
#endif

}  // namespace lsg

#endif  // LSG_CONVERT_H
