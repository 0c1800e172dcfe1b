// Conversions between F32 and the narrow types (SPEC §1.4), shared by host and CUDA.
#pragma once

#include "exact/hd.hpp"

namespace gizml::exact {

/// F32 -> BF16, round to nearest even; NaN stays a quiet NaN (sign and top payload kept).
GIZML_HD std::uint16_t floatToBF16(float x) {
  std::uint32_t b = toBits(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((b >> 16) | 0x0040u);
  b += 0x7fffu + ((b >> 16) & 1u);  // carries into the exponent, up to inf, as RNE does
  return static_cast<std::uint16_t>(b >> 16);
}
GIZML_HD float bf16ToFloat(std::uint16_t h) { return fromBits(static_cast<std::uint32_t>(h) << 16); }
/// Two F32 values as one 32-bit word of BF16 halves (lo in the low 16 bits: first in memory).
GIZML_HD std::uint32_t packBF16(float lo, float hi) {
  return static_cast<std::uint32_t>(floatToBF16(lo)) | (static_cast<std::uint32_t>(floatToBF16(hi)) << 16);
}
/// A value that is a BF16 value already (roundToBF16's result, kept as F32) as BF16: floatToBF16's
/// bits, its top half, with no rounding again; and two of them as packBF16's word.
GIZML_HD std::uint16_t bf16OfValue(float v) { return static_cast<std::uint16_t>(toBits(v) >> 16); }
GIZML_HD std::uint32_t packBF16Values(float lo, float hi) {
  return static_cast<std::uint32_t>(bf16OfValue(lo)) | (static_cast<std::uint32_t>(bf16OfValue(hi)) << 16);
}
/// x rounded to the nearest BF16 value, kept as F32.
GIZML_HD float roundToBF16(float x) { return bf16ToFloat(floatToBF16(x)); }
/// floatToBF16's rounding on a lane type for lanes that hold no NaN (every other float, ±inf
/// included): its bits in the high 16 bits of each lane (the low 16 bits are left over, for a store
/// of the high halves to drop, or roundToBF16Steps' mask). A caller that has proven its values
/// numbers (pixelNorm's blocks of finite values, norms/host.cpp) saves the NaN's test and select.
template <class F>
GIZML_HD auto bf16RoundedBitsOfNumbers(F x) {
  const auto b = toBits(x);
  return b + (0x7fffu + ((b >> 16) & 1u));  // carries into the exponent, up to inf, as RNE does
}
/// floatToBF16 on a lane type (a float, or the host's 16 lanes) in integer steps, before a mask,
/// as bf16RoundedBitsOfNumbers, NaN included.
template <class F>
GIZML_HD auto bf16RoundedBits(F x) {
  const auto quiet = toBits(x) | 0x00400000u;  // NaN: a quiet NaN, sign and top payload kept
  return select(isNan(x), quiet, bf16RoundedBitsOfNumbers(x));
}
/// roundToBF16 on a lane type: floatToBF16's bits, widened back, in integer steps.
template <class F>
GIZML_HD F roundToBF16Steps(F x) {
  return fromBits(bf16RoundedBits(x) & 0xffff0000u);  // one mask for either
}
/// roundToBF16Steps for lanes that hold no NaN (bf16RoundedBitsOfNumbers').
template <class F>
GIZML_HD F roundToBF16OfNumbers(F x) {
  return fromBits(bf16RoundedBitsOfNumbers(x) & 0xffff0000u);
}
template <class F>
GIZML_HD F roundToBF16Lanes(F x) {
  return roundToBF16Steps(x);
}
#if defined(__AVX512BF16__) && !defined(__CUDACC__)
/// floatToBF16 of 16 lanes, as 16 words. vcvtneps2bf16 rounds to nearest even and quiets a NaN
/// (sign and top payload kept) as floatToBF16 does, but takes a subnormal input for a zero of its
/// sign: a vector holding one takes the integer steps (exact_math_test compares every float).
GIZML_HD __m256i bf16Bits16(f32x16 x) {
  if (__builtin_expect(_mm512_fpclass_ps_mask((__m512)x, 0x20) != 0, 0))  // 0x20: the subnormal class
    return _mm512_cvtepi32_epi16((__m512i)(toBits(roundToBF16Steps(x)) >> 16));
  return (__m256i)_mm512_cvtneps_pbh((__m512)x);
}
/// bf16Bits16 of two vectors, lo's 16 words then hi's, in one vcvtne2ps2bf16, which rounds 32
/// lanes in about the time vcvtneps2bf16 takes for 16 (a Xeon, stop 55: about 2 cycles each).
GIZML_HD __m512i bf16Bits32(f32x16 lo, f32x16 hi) {
  if (__builtin_expect((_mm512_fpclass_ps_mask((__m512)lo, 0x20) | _mm512_fpclass_ps_mask((__m512)hi, 0x20)) != 0, 0))
    return _mm512_inserti64x4(_mm512_castsi256_si512(bf16Bits16(lo)), bf16Bits16(hi), 1);
  return (__m512i)_mm512_cvtne2ps_pbh((__m512)hi, (__m512)lo);
}
template <>
GIZML_HD f32x16 roundToBF16Lanes<f32x16>(f32x16 x) {
  return fromBits((u32x16)_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16Bits16(x)), 16));
}
template <>
GIZML_HD f32x16 roundToBF16OfNumbers<f32x16>(f32x16 x) {
  return roundToBF16Lanes(x);  // no test of NaN to save there
}
#endif

/// F32 -> F16 (IEEE binary16), round to nearest even with subnormals; overflow goes to inf; NaN
/// stays a quiet NaN.
GIZML_HD std::uint16_t floatToF16(float x) {
  std::uint32_t b = toBits(x);
  std::uint32_t sign = (b >> 16) & 0x8000u;
  std::uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x1ffu));
  if (a >= 0x38800000u) {  // |x| >= 2^-14: a normal F16 (or overflow)
    std::uint32_t h = (a - 0x38000000u) >> 13;
    std::uint32_t rest = a & 0x1fffu;
    h += (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ? 1u : 0u;
    if (h >= 0x7c00u) h = 0x7c00u;
    return static_cast<std::uint16_t>(sign | h);
  }
  // Subnormal F16: units of 2^-24. |x| * 2^24 < 2^10 is exact; adding 2^23 rounds it to an
  // integer, ties to even (2^10 itself is the smallest normal's encoding, also right).
  float scaled = fromBits(a) * 16777216.0f;
  float rounded = (scaled + 8388608.0f) - 8388608.0f;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(rounded));
}
GIZML_HD float f16ToFloat(std::uint16_t h) {
  std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  std::uint32_t e = (h >> 10) & 0x1fu;
  std::uint32_t m = h & 0x3ffu;
  if (e == 0) {
    float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return fromBits(toBits(v) | sign);
  }
  if (e == 31) return fromBits(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  return fromBits(sign | ((e + 112u) << 23) | (m << 13));
}

/// F32 -> FP8 E4M3 (OCP E4M3FN: bias 7, no inf, 0x7f NaN), round to nearest even, saturating
/// at ±448 (±inf too); NaN stays NaN.
GIZML_HD std::uint8_t floatToE4M3(float x) {
  std::uint32_t b = toBits(x);
  std::uint32_t sign = (b >> 24) & 0x80u;
  std::uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7fu);
  if (a >= 0x3c800000u) {  // |x| >= 2^-6: a normal E4M3 (or saturation)
    if (a >= 0x43e00000u) return static_cast<std::uint8_t>(sign | 0x7eu);  // >= 448
    std::uint32_t e = (a - 0x3c000000u) >> 20;  // exponent rebased 127 -> 7, with 3 mantissa bits
    std::uint32_t rest = a & 0xfffffu;
    e += (rest > 0x80000u || (rest == 0x80000u && (e & 1u))) ? 1u : 0u;
    if (e > 0x7eu) e = 0x7eu;
    return static_cast<std::uint8_t>(sign | e);
  }
  // Subnormal E4M3: units of 2^-9; |x| * 2^9 < 8 is exact, the 2^23 trick rounds it ties-to-even.
  float scaled = fromBits(a) * 512.0f;
  float rounded = (scaled + 8388608.0f) - 8388608.0f;
  return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(rounded));
}
/// An I4 value from its nibble (the low 4 bits of `nibble`): two's complement, -8 ... 7.
GIZML_HD int i4Value(unsigned nibble) { return static_cast<int>((nibble & 15u) ^ 8u) - 8; }
GIZML_HD float e4m3ToFloat(std::uint8_t v) {
  std::uint32_t sign = (static_cast<std::uint32_t>(v) & 0x80u) << 24;
  std::uint32_t e = (v >> 3) & 0xfu;
  std::uint32_t m = v & 0x7u;
  if (e == 15 && m == 7) return fromBits(sign | 0x7fc00000u);
  if (e == 0) {
    float s = static_cast<float>(m) * 0.001953125f;  // m * 2^-9, exact
    return fromBits(toBits(s) | sign);
  }
  return fromBits(sign | ((e + 120u) << 23) | (m << 20));
}

/// rintf (nearest even), then clamp to [lo, hi]; NaN gives 0.
GIZML_HD int roundClamp(float x, int lo, int hi) {
  if (x != x) return 0;
  float r = rintf(x);
  if (r < static_cast<float>(lo)) return lo;
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

}  // namespace gizml::exact
