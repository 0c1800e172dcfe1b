// The host's 16 float lanes (SPEC §1.3: "16 lanes"). One AVX-512 register, two AVX2 registers or
// plain scalar code, as the compiler's target allows: the lanes are logical, so the result never
// depends on the SIMD width. Host only (never included by a .cu file).
#pragma once

#if defined(__CUDACC__)
#error "vec16.hpp is host-only"
#endif

#include <cstdint>
#include <cstring>
#include <immintrin.h>

#include "exact/hd.hpp"

namespace gizml::exact {

using f32x16 = float __attribute__((vector_size(64)));
using u32x16 = std::uint32_t __attribute__((vector_size(64)));
using i32x16 = std::int32_t __attribute__((vector_size(64)));

/// All 16 lanes v, bit for bit (-0 stays -0, which 0 + v would not keep).
inline f32x16 splat(float v) {
#if defined(__AVX512F__)
  return (f32x16)_mm512_set1_ps(v);
#else
  f32x16 r;
  for (int l = 0; l < 16; ++l) r[l] = v;
  return r;
#endif
}
template <>
inline f32x16 broadcast<f32x16>(float v) {
  return splat(v);
}
inline u32x16 toBits(f32x16 x) { return reinterpret_cast<u32x16&>(x); }
inline f32x16 fromBits(u32x16 u) { return reinterpret_cast<f32x16&>(u); }
inline f32x16 toFloat(i32x16 i) { return __builtin_convertvector(i, f32x16); }
inline f32x16 toFloat(u32x16 u) { return __builtin_convertvector(u, f32x16); }
inline f32x16 select(i32x16 m, f32x16 a, f32x16 b) { return m ? a : b; }
inline u32x16 select(i32x16 m, u32x16 a, u32x16 b) { return m ? a : b; }
inline i32x16 isNan(f32x16 x) { return x != x; }

/// Each lane's fma(a, b, c), one rounding.
inline f32x16 fmaLane(f32x16 a, f32x16 b, f32x16 c) {
#if defined(__AVX512F__)
  return (f32x16)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
  f32x16 r;
  __m256 lo = _mm256_fmadd_ps(_mm256_loadu_ps((const float*)&a), _mm256_loadu_ps((const float*)&b),
                              _mm256_loadu_ps((const float*)&c));
  __m256 hi = _mm256_fmadd_ps(_mm256_loadu_ps((const float*)&a + 8), _mm256_loadu_ps((const float*)&b + 8),
                              _mm256_loadu_ps((const float*)&c + 8));
  _mm256_storeu_ps((float*)&r, lo);
  _mm256_storeu_ps((float*)&r + 8, hi);
  return r;
#else
  f32x16 r;
  for (int l = 0; l < 16; ++l) r[l] = fmaf(a[l], b[l], c[l]);
  return r;
#endif
}

/// Each lane's 32x32 -> 64-bit product m * c, split into its high and low words (Philox).
inline void mulHiLo(std::uint32_t m, u32x16 c, u32x16& hi, u32x16& lo) {
  using u64x8 = std::uint64_t __attribute__((vector_size(64)));
#if defined(__AVX512F__)
  __m512i mm = _mm512_set1_epi32(static_cast<int>(m));
  u64x8 even = (u64x8)_mm512_mul_epu32((__m512i)c, mm);                        // lanes 0, 2, ...
  u64x8 odd = (u64x8)_mm512_mul_epu32(_mm512_srli_epi64((__m512i)c, 32), mm);  // lanes 1, 3, ...
  hi = (u32x16)((even >> 32) | (odd & 0xffffffff00000000ull));
  lo = (u32x16)((even & 0xffffffffull) | (odd << 32));
#else
  lo = c * m;
  for (int l = 0; l < 16; ++l) hi[l] = static_cast<std::uint32_t>((static_cast<std::uint64_t>(m) * c[l]) >> 32);
#endif
}

template <> struct LaneTypes<f32x16> {
  using U = u32x16;
  using I = i32x16;
};

/// Stores 16 lanes to 64-byte-aligned memory past the caches (a streaming store): for outputs
/// far larger than the caches, it saves reading each line before writing it. Same bits as store16.
inline void streamStore16(float* p, f32x16 v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#else
  std::memcpy(p, &v, sizeof v);
#endif
}
inline bool aligned64(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 63) == 0; }

/// Lanes 0 .. 15 as an integer vector, for masking a row's last partial chunk.
inline i32x16 laneIndex() { return i32x16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; }

/// Loads min(count, 16) floats; the lanes past them are +0 (and their memory is not read).
inline f32x16 load16(const float* p, std::int64_t count) {
  f32x16 v;
  if (count >= 16) {
    std::memcpy(&v, p, sizeof v);
  } else {
#if defined(__AVX512F__)
    v = (f32x16)_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
#else
    v = f32x16{};
    std::memcpy(&v, p, sizeof(float) * static_cast<std::size_t>(count));
#endif
  }
  return v;
}
/// Stores min(count, 16) lanes.
inline void store16(float* p, f32x16 v, std::int64_t count) {
  if (count >= 16) {
    std::memcpy(p, &v, sizeof v);
    return;
  }
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1u), (__m512)v);
#else
  std::memcpy(p, &v, sizeof(float) * static_cast<std::size_t>(count));
#endif
}
/// The lanes below `count` keep v; the others become +0 (a row's tail adds nothing).
inline f32x16 keepFirst(f32x16 v, std::int64_t count) {
  return count >= 16 ? v : select(laneIndex() < static_cast<std::int32_t>(count), v, f32x16{});
}

}  // namespace gizml::exact
