// The host's 16 float lanes (SPEC §1.3: "16 lanes"). One AVX-512 register; without AVX-512, two
// halves of 8 lanes (two AVX2 registers). The lanes are logical, so the result never depends on
// the SIMD width. Host only (never included by a .cu file).
//
// With AVX-512 the lane types are GCC vectors of 64 bytes. Without it GCC would split such
// vectors itself but turn comparisons and selects into 16 scalar operations, so there they are
// small structs of two native 32-byte vectors with the same operators.
#pragma once

#if defined(__CUDACC__)
#error "vec16.hpp is host-only"
#endif
// Some helpers below keep a portable branch, but others are AVX intrinsics only: say so plainly
// rather than fail on an intrinsic's target mismatch deep in a template.
#if !defined(__AVX2__) || !defined(__FMA__)
#error "gizml's host code needs AVX2 and FMA: build with GIZML_CPU_ARCH=x86-64-v3 (or a newer target, or native)"
#endif

#include <cstdint>
#include <cstring>
#include <immintrin.h>

#include "exact/hd.hpp"

namespace gizml::exact {

// Every helper here is inlined into its caller, so 16-lane values never pass through memory.
#define GIZML_VEC inline __attribute__((always_inline))

#if defined(__AVX512F__)

using f32x16 = float __attribute__((vector_size(64)));
using u32x16 = std::uint32_t __attribute__((vector_size(64)));
using i32x16 = std::int32_t __attribute__((vector_size(64)));

/// All 16 lanes v, bit for bit (-0 stays -0, which 0 + v would not keep).
GIZML_VEC f32x16 splat(float v) { return (f32x16)_mm512_set1_ps(v); }
GIZML_VEC u32x16 toBits(f32x16 x) { return reinterpret_cast<u32x16&>(x); }
GIZML_VEC f32x16 fromBits(u32x16 u) { return reinterpret_cast<f32x16&>(u); }
GIZML_VEC f32x16 toFloat(i32x16 i) { return __builtin_convertvector(i, f32x16); }
GIZML_VEC f32x16 toFloat(u32x16 u) { return __builtin_convertvector(u, f32x16); }
GIZML_VEC f32x16 select(i32x16 m, f32x16 a, f32x16 b) { return m ? a : b; }
GIZML_VEC u32x16 select(i32x16 m, u32x16 a, u32x16 b) { return m ? a : b; }
GIZML_VEC i32x16 select(i32x16 m, i32x16 a, i32x16 b) { return m ? a : b; }
/// Each lane's fma(a, b, c), one rounding.
GIZML_VEC f32x16 fmaLane(f32x16 a, f32x16 b, f32x16 c) {
  return (f32x16)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
/// Each lane's a < b ? a : b and a > b ? a : b (hd.hpp's minLane, maxLane).
GIZML_VEC f32x16 minLane(f32x16 a, f32x16 b) { return (f32x16)_mm512_min_ps((__m512)a, (__m512)b); }
GIZML_VEC f32x16 maxLane(f32x16 a, f32x16 b) { return (f32x16)_mm512_max_ps((__m512)a, (__m512)b); }
/// y * 2^n for integer-valued n, rounded once (into the subnormals or to inf where it must): vscalefps.
GIZML_VEC f32x16 scaleByPowerOfTwo(f32x16 y, f32x16 n) { return (f32x16)_mm512_scalef_ps((__m512)y, (__m512)n); }
/// Each lane rounded to the nearest integer, ties to even (vrndscaleps; -0 for a small negative).
GIZML_VEC f32x16 roundToEven(f32x16 v) {
  return (f32x16)_mm512_roundscale_ps((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
template <>
inline constexpr bool kAvx512Lanes<f32x16> = true;
/// base, base + 1, ..., base + 15.
GIZML_VEC u32x16 iota16(std::uint32_t base) {
  return base + u32x16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}
GIZML_VEC i32x16 laneIndex() { return i32x16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; }
/// Lane l of the result is lane from[l] of v (from[l] in [0, 16)).
GIZML_VEC f32x16 permuteLanes(f32x16 v, i32x16 from) { return __builtin_shuffle(v, from); }
/// 16 BF16 values (their bits) as F32: exact, the bits shifted up by 16.
GIZML_VEC f32x16 loadBF16x16(const std::uint16_t* p) {
  // One vpmovzxwd from memory (GCC 12 makes __builtin_convertvector a 32-byte load, an extract and
  // two 8-lane vpmovzxwd), then the shift.
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return fromBits((u32x16)_mm512_slli_epi32(wide, 16));
}
/// The low 16 bits of each lane, stored as 16 consecutive std::uint16_t (one vpmovdw).
GIZML_VEC void storeLow16(std::uint16_t* p, u32x16 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16((__m512i)v));
}
/// The high 16 bits of each lane, stored as 16 consecutive std::uint16_t.
GIZML_VEC void storeHigh16(std::uint16_t* p, u32x16 v) { storeLow16(p, v >> 16); }
/// storeHigh16 past the caches (a streaming store; p 32-byte aligned).
GIZML_VEC void streamHigh16(std::uint16_t* p, u32x16 v) {
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16((__m512i)(v >> 16)));
}
/// Lanes 0, 2, ..., 14 of a, then 0, 2, ..., 14 of b.
GIZML_VEC f32x16 evenLanes(f32x16 a, f32x16 b) {
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
/// Lanes 1, 3, ..., 15 of a, then 1, 3, ..., 15 of b.
GIZML_VEC f32x16 oddLanes(f32x16 a, f32x16 b) {
  return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}
/// a and b interleaved, a0 b0 a1 b1 ...: lanes 0-7 of each into lo, lanes 8-15 into hi.
GIZML_VEC void interleaveLanes(f32x16 a, f32x16 b, f32x16& lo, f32x16& hi) {
  lo = __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  hi = __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}
/// Four vectors of words (word j of counters g .. g + 15 in w[j]) rearranged by element: out[q]
/// holds words 4 g' + j for the counters 4 q .. 4 q + 3, element order.
GIZML_VEC void interleaveWords(const u32x16 w[4], u32x16 out[4]) {
  const u32x16 w01lo = __builtin_shufflevector(w[0], w[1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const u32x16 w01hi = __builtin_shufflevector(w[0], w[1], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const u32x16 w23lo = __builtin_shufflevector(w[2], w[3], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const u32x16 w23hi = __builtin_shufflevector(w[2], w[3], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  out[0] = __builtin_shufflevector(w01lo, w23lo, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
  out[1] = __builtin_shufflevector(w01lo, w23lo, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
  out[2] = __builtin_shufflevector(w01hi, w23hi, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
  out[3] = __builtin_shufflevector(w01hi, w23hi, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
}
/// Each lane's 32x32 -> 64-bit product m * c, split into its high and low words (Philox).
GIZML_VEC void mulHiLo(std::uint32_t m, u32x16 c, u32x16& hi, u32x16& lo) {
  using u64x8 = std::uint64_t __attribute__((vector_size(64)));
  __m512i mm = _mm512_set1_epi32(static_cast<int>(m));
  u64x8 even = (u64x8)_mm512_mul_epu32((__m512i)c, mm);                        // lanes 0, 2, ...
  u64x8 odd = (u64x8)_mm512_mul_epu32(_mm512_srli_epi64((__m512i)c, 32), mm);  // lanes 1, 3, ...
  hi = (u32x16)((even >> 32) | (odd & 0xffffffff00000000ull));
  lo = (u32x16)((even & 0xffffffffull) | (odd << 32));
}

#else  // no AVX-512: two halves of 8 lanes

using f32x8 = float __attribute__((vector_size(32)));
using u32x8 = std::uint32_t __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));

struct u32x16;
struct i32x16;

// A 16-lane type made of two native halves: lanes 0 .. 7 in h[0], 8 .. 15 in h[1].
#define GIZML_HALVES(T, H, S)                                                       \
  H h[2];                                                                           \
  T() = default;                                                                    \
  T(H lo, H hi) : h{lo, hi} {}                                                      \
  S operator[](int l) const { return h[l >> 3][l & 7]; }

struct f32x16 {
  GIZML_HALVES(f32x16, f32x8, float)
};
struct i32x16 {
  GIZML_HALVES(i32x16, i32x8, std::int32_t)
  explicit i32x16(const u32x16& u);
};
struct u32x16 {
  GIZML_HALVES(u32x16, u32x8, std::uint32_t)
  explicit u32x16(const i32x16& i) : h{(u32x8)i.h[0], (u32x8)i.h[1]} {}
};
GIZML_VEC i32x16::i32x16(const u32x16& u) : h{(i32x8)u.h[0], (i32x8)u.h[1]} {}
#undef GIZML_HALVES

// Element-wise operators, each on the two halves (scalars broadcast, on either side).
#define GIZML_OP(T, S, R, op)                                                                            \
  GIZML_VEC R operator op(const T& a, const T& b) { return R(a.h[0] op b.h[0], a.h[1] op b.h[1]); }        \
  GIZML_VEC R operator op(const T& a, S s) { return R(a.h[0] op s, a.h[1] op s); }                          \
  GIZML_VEC R operator op(S s, const T& b) { return R(s op b.h[0], s op b.h[1]); }
#define GIZML_ARITH(T, S)   \
  GIZML_OP(T, S, T, +)      \
  GIZML_OP(T, S, T, -)      \
  GIZML_OP(T, S, T, *)      \
  GIZML_VEC T& operator+=(T& a, const T& b) { return a = a + b; } \
  GIZML_VEC T& operator-=(T& a, const T& b) { return a = a - b; } \
  GIZML_VEC T& operator*=(T& a, const T& b) { return a = a * b; }
#define GIZML_COMPARE(T, S)     \
  GIZML_OP(T, S, i32x16, ==)    \
  GIZML_OP(T, S, i32x16, !=)    \
  GIZML_OP(T, S, i32x16, <)     \
  GIZML_OP(T, S, i32x16, <=)    \
  GIZML_OP(T, S, i32x16, >)     \
  GIZML_OP(T, S, i32x16, >=)
#define GIZML_BITS(T, S)  \
  GIZML_OP(T, S, T, &)    \
  GIZML_OP(T, S, T, |)    \
  GIZML_OP(T, S, T, ^)    \
  GIZML_VEC T operator~(const T& a) { return T(~a.h[0], ~a.h[1]); } \
  GIZML_VEC T operator>>(const T& a, int s) { return T(a.h[0] >> s, a.h[1] >> s); } \
  GIZML_VEC T operator<<(const T& a, int s) { return T(a.h[0] << s, a.h[1] << s); }

GIZML_ARITH(f32x16, float)
GIZML_OP(f32x16, float, f32x16, /)
GIZML_VEC f32x16& operator/=(f32x16& a, const f32x16& b) { return a = a / b; }
GIZML_VEC f32x16 operator-(const f32x16& a) { return f32x16(-a.h[0], -a.h[1]); }
GIZML_COMPARE(f32x16, float)
GIZML_ARITH(i32x16, std::int32_t)
GIZML_COMPARE(i32x16, std::int32_t)
GIZML_BITS(i32x16, std::int32_t)
GIZML_ARITH(u32x16, std::uint32_t)
GIZML_BITS(u32x16, std::uint32_t)
#undef GIZML_OP
#undef GIZML_ARITH
#undef GIZML_COMPARE
#undef GIZML_BITS

GIZML_VEC f32x16 splat(float v) {
  const f32x8 h = {v, v, v, v, v, v, v, v};
  return f32x16(h, h);
}
GIZML_VEC u32x16 toBits(f32x16 x) { return u32x16((u32x8)x.h[0], (u32x8)x.h[1]); }
GIZML_VEC f32x16 fromBits(u32x16 u) { return f32x16((f32x8)u.h[0], (f32x8)u.h[1]); }
GIZML_VEC f32x16 toFloat(i32x16 i) {
  return f32x16(__builtin_convertvector(i.h[0], f32x8), __builtin_convertvector(i.h[1], f32x8));
}
GIZML_VEC f32x16 toFloat(u32x16 u) {
  return f32x16(__builtin_convertvector(u.h[0], f32x8), __builtin_convertvector(u.h[1], f32x8));
}
GIZML_VEC f32x16 select(i32x16 m, f32x16 a, f32x16 b) {
  return f32x16(m.h[0] ? a.h[0] : b.h[0], m.h[1] ? a.h[1] : b.h[1]);
}
GIZML_VEC u32x16 select(i32x16 m, u32x16 a, u32x16 b) {
  return u32x16(m.h[0] ? a.h[0] : b.h[0], m.h[1] ? a.h[1] : b.h[1]);
}
GIZML_VEC i32x16 select(i32x16 m, i32x16 a, i32x16 b) {
  return i32x16(m.h[0] ? a.h[0] : b.h[0], m.h[1] ? a.h[1] : b.h[1]);
}
/// Each lane's fma(a, b, c), one rounding.
GIZML_VEC f32x16 fmaLane(f32x16 a, f32x16 b, f32x16 c) {
#if defined(__FMA__)
  return f32x16((f32x8)_mm256_fmadd_ps((__m256)a.h[0], (__m256)b.h[0], (__m256)c.h[0]),
                (f32x8)_mm256_fmadd_ps((__m256)a.h[1], (__m256)b.h[1], (__m256)c.h[1]));
#else
  f32x8 r[2];
  for (int s = 0; s < 2; ++s)
    for (int l = 0; l < 8; ++l) r[s][l] = fmaf(a.h[s][l], b.h[s][l], c.h[s][l]);
  return f32x16(r[0], r[1]);
#endif
}
/// Each lane's a < b ? a : b and a > b ? a : b (hd.hpp's minLane, maxLane).
GIZML_VEC f32x16 minLane(f32x16 a, f32x16 b) {
  return f32x16((f32x8)_mm256_min_ps((__m256)a.h[0], (__m256)b.h[0]), (f32x8)_mm256_min_ps((__m256)a.h[1], (__m256)b.h[1]));
}
GIZML_VEC f32x16 maxLane(f32x16 a, f32x16 b) {
  return f32x16((f32x8)_mm256_max_ps((__m256)a.h[0], (__m256)b.h[0]), (f32x8)_mm256_max_ps((__m256)a.h[1], (__m256)b.h[1]));
}
GIZML_VEC u32x16 iota16(std::uint32_t base) {
  return u32x16(base + u32x8{0, 1, 2, 3, 4, 5, 6, 7}, base + u32x8{8, 9, 10, 11, 12, 13, 14, 15});
}
/// The largest of each lane's magnitude bits (its bits without the sign, as a non-negative int32)
/// over both halves: for numbers the order of |v|; a NaN's are above every finite value's and
/// inf's. One signed maximum of the two halves, so a bound then takes one comparison, not two.
GIZML_VEC i32x8 largestMagnitudeBits(f32x16 v) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  return (i32x8)_mm256_max_epi32(_mm256_and_si256((__m256i)v.h[0], magnitude),
                                 _mm256_and_si256((__m256i)v.h[1], magnitude));
}
/// Whether the largest magnitude bits (largestMagnitudeBits'), read as a float, are below `bound`
/// (a positive finite float): an ordered float comparison, false for a NaN's bits. One vcmpps where
/// GCC 12 makes an integer comparison with a constant a minimum and an equality.
GIZML_VEC bool magnitudeBitsBelow(i32x8 largest, float bound) {
  const __m256 below = _mm256_cmp_ps(_mm256_castsi256_ps((__m256i)largest), _mm256_set1_ps(bound), _CMP_LT_OQ);
  return _mm256_movemask_ps(below) == 0xff;
}
/// Whether every lane is a number of magnitude below `bound` (a positive finite float): the AVX2
/// exp's test of its fast path, 5 instructions for 16 lanes where the lanes' own comparisons took 8.
GIZML_VEC bool allMagnitudesBelow(f32x16 v, float bound) { return magnitudeBitsBelow(largestMagnitudeBits(v), bound); }
/// Each lane rounded to the nearest integer, ties to even (vroundps; -0 for a small negative), as
/// the AVX-512 roundToEven.
GIZML_VEC f32x16 roundToEven(f32x16 v) {
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  return f32x16((f32x8)_mm256_round_ps((__m256)v.h[0], kNearest), (f32x8)_mm256_round_ps((__m256)v.h[1], kNearest));
}
template <>
inline constexpr bool kAvx2Lanes<f32x16> = true;
GIZML_VEC i32x16 laneIndex() { return i32x16(i32x8{0, 1, 2, 3, 4, 5, 6, 7}, i32x8{8, 9, 10, 11, 12, 13, 14, 15}); }
GIZML_VEC f32x16 permuteLanes(f32x16 v, i32x16 from) {
  return f32x16(__builtin_shuffle(v.h[0], v.h[1], from.h[0]), __builtin_shuffle(v.h[0], v.h[1], from.h[1]));
}
GIZML_VEC f32x16 loadBF16x16(const std::uint16_t* p) {
#if defined(__AVX2__)
  // A half's 8 values loaded into both 128-bit lanes (vbroadcasti128, a load alone), then one byte
  // shuffle puts value k of lane j's four (4 j + k) in dword k's high word and zeros its low word:
  // 2 shuffles for 16 values where vpmovzxwd and the shift took 4 (the shifts on one pipe of a Zen
  // 2). int8Rows of BF16 rows [32, 3072] in the caches, Zen 2, 2 threads: 34 -> 33 us in three
  // rounds of pairs.
  const __m256i wordsToHigh = _mm256_setr_epi8(-1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7,  //
                                               -1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15);
  const auto half = [&](const std::uint16_t* q) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    return (f32x8)_mm256_shuffle_epi8(both, wordsToHigh);
  };
  return f32x16(half(p), half(p + 8));
#else
  // One vpmovzxwd a half (GCC 12 makes two 4-lane ones and an insert of __builtin_convertvector).
  const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  return fromBits(u32x16((u32x8)lo, (u32x8)hi) << 16);
#endif
}
GIZML_VEC void storeLow16(std::uint16_t* p, u32x16 v) {
#if defined(__AVX2__)
  // packus works within 128-bit halves (lo 0-3, hi 0-3, lo 4-7, hi 4-7); the permute restores the
  // order. Masked to 16 bits first, every value is in packus' range, so it is exact.
  const __m256i packed = _mm256_packus_epi32((__m256i)(v.h[0] & 0xffffu), (__m256i)(v.h[1] & 0xffffu));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permute4x64_epi64(packed, 0xD8));
#else
  for (int l = 0; l < 16; ++l) p[l] = static_cast<std::uint16_t>(v.h[l / 8][l % 8]);
#endif
}
/// The high 16 bits of each lane as 16 consecutive words, for storeHigh16 and streamHigh16: each
/// half's high words picked to the low 8 bytes of its two 128-bit lanes (vpshufb), the halves'
/// lanes paired (vpunpcklqdq: words 0-3, 8-11 | 4-7, 12-15) and put in order (vpermq). Four
/// shuffles, where storeLow16 of v >> 16 takes two shifts, two masks, a pack and a permute.
GIZML_VEC __m256i high16Words(u32x16 v) {
  const __m256i high = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                        2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i lo = _mm256_shuffle_epi8((__m256i)v.h[0], high), hi = _mm256_shuffle_epi8((__m256i)v.h[1], high);
  return _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(lo, hi), 0xD8);
}
/// The high 16 bits of each lane, stored as 16 consecutive std::uint16_t.
GIZML_VEC void storeHigh16(std::uint16_t* p, u32x16 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), high16Words(v));
}
/// storeHigh16 past the caches (a streaming store; p 32-byte aligned), as with AVX-512.
GIZML_VEC void streamHigh16(std::uint16_t* p, u32x16 v) {
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), high16Words(v));
}
GIZML_VEC f32x16 evenLanes(f32x16 a, f32x16 b) {
  return f32x16(__builtin_shufflevector(a.h[0], a.h[1], 0, 2, 4, 6, 8, 10, 12, 14),
                __builtin_shufflevector(b.h[0], b.h[1], 0, 2, 4, 6, 8, 10, 12, 14));
}
GIZML_VEC f32x16 oddLanes(f32x16 a, f32x16 b) {
  return f32x16(__builtin_shufflevector(a.h[0], a.h[1], 1, 3, 5, 7, 9, 11, 13, 15),
                __builtin_shufflevector(b.h[0], b.h[1], 1, 3, 5, 7, 9, 11, 13, 15));
}
GIZML_VEC void interleaveLanes(f32x16 a, f32x16 b, f32x16& lo, f32x16& hi) {
  lo = f32x16(__builtin_shufflevector(a.h[0], b.h[0], 0, 8, 1, 9, 2, 10, 3, 11),
              __builtin_shufflevector(a.h[0], b.h[0], 4, 12, 5, 13, 6, 14, 7, 15));
  hi = f32x16(__builtin_shufflevector(a.h[1], b.h[1], 0, 8, 1, 9, 2, 10, 3, 11),
              __builtin_shufflevector(a.h[1], b.h[1], 4, 12, 5, 13, 6, 14, 7, 15));
}
/// out[q] lane 4 g + j = w[j] lane 4 q + g: a 4 x 16 transpose (Philox's four words of each of 16
/// counters, counter by counter). Each 8-lane half: two rounds of unpacks make, in each 128-bit
/// lane, one counter's four words; vperm2i128 then pairs the counters in order.
GIZML_VEC void interleaveWords(const u32x16 w[4], u32x16 out[4]) {
  for (int h = 0; h < 2; ++h) {
    const __m256i w0 = (__m256i)w[0].h[h], w1 = (__m256i)w[1].h[h], w2 = (__m256i)w[2].h[h], w3 = (__m256i)w[3].h[h];
    const __m256i t0 = _mm256_unpacklo_epi32(w0, w1), t1 = _mm256_unpackhi_epi32(w0, w1);
    const __m256i t2 = _mm256_unpacklo_epi32(w2, w3), t3 = _mm256_unpackhi_epi32(w2, w3);
    // Counters (of this half) 0 and 4 in u0's two 128-bit lanes, 1 and 5 in u1, 2 and 6 in u2, 3 and 7 in u3.
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    out[2 * h] = u32x16((u32x8)_mm256_permute2x128_si256(u0, u1, 0x20), (u32x8)_mm256_permute2x128_si256(u2, u3, 0x20));
    out[2 * h + 1] = u32x16((u32x8)_mm256_permute2x128_si256(u0, u1, 0x31), (u32x8)_mm256_permute2x128_si256(u2, u3, 0x31));
  }
}
/// Each lane's 32x32 -> 64-bit product m * c, split into its high and low words (Philox): vpmuludq
/// on the even lanes and on the odd lanes shifted down, the halves blended back.
GIZML_VEC void mulHiLo(std::uint32_t m, u32x16 c, u32x16& hi, u32x16& lo) {
  const __m256i mm = _mm256_set1_epi32(static_cast<int>(m));
  for (int h = 0; h < 2; ++h) {
    const __m256i even = _mm256_mul_epu32((__m256i)c.h[h], mm);                        // lanes 0, 2, ...
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64((__m256i)c.h[h], 32), mm);  // lanes 1, 3, ...
    hi.h[h] = (u32x8)_mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    lo.h[h] = (u32x8)_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  }
}

#endif  // __AVX512F__

template <>
GIZML_VEC f32x16 broadcast<f32x16>(float v) {
  return splat(v);
}
GIZML_VEC i32x16 isNan(f32x16 x) { return x != x; }

template <> struct LaneTypes<f32x16> {
  using U = u32x16;
  using I = i32x16;
};

/// Whether every lane of mask m (a comparison's: each lane all ones or zero) is set.
GIZML_VEC bool allLanes(i32x16 m) {
#if defined(__AVX512F__)
  return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) == 0xffff;
#else
  return _mm256_movemask_ps(_mm256_castsi256_ps((__m256i)(m.h[0] & m.h[1]))) == 0xff;
#endif
}
/// Whether any lane of a comparison's mask is set.
GIZML_VEC bool anyLane(i32x16 m) {
#if defined(__AVX512F__)
  return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
#else
  return !_mm256_testz_si256((__m256i)(m.h[0] | m.h[1]), (__m256i)(m.h[0] | m.h[1]));
#endif
}

/// Stores 16 lanes to 64-byte-aligned memory past the caches (a streaming store): for outputs
/// far larger than the caches, it saves reading each line before writing it. Same bits as store16.
GIZML_VEC void streamStore16(float* p, f32x16 v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#elif defined(__AVX__)
  _mm256_stream_ps(p, (__m256)v.h[0]);
  _mm256_stream_ps(p + 8, (__m256)v.h[1]);
#else
  std::memcpy(p, &v, sizeof v);
#endif
}
/// Orders this thread's streaming stores before its later stores (a barrier after them then
/// publishes them to other threads).
GIZML_VEC void streamFence() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}
GIZML_VEC bool aligned64(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 63) == 0; }

/// Each lane rounded to the nearest integer (ties to even), a zero result and NaN both giving +0;
/// for |v| < 2^22. With AVX-512 vrndscaleps rounds and vfixupimmps sends the classes QNaN, SNaN
/// and zero to +0 and keeps every other value (its table: 4 bits a class, 8 = +0, 1 = the value);
/// else (v + 1.5 2^23) - 1.5 2^23 rounds the same (and gives +0 for a zero), and a select the NaNs.
GIZML_VEC f32x16 rintOrPlusZero(f32x16 v) {
#if defined(__AVX512F__)
  const __m512 r = (__m512)roundToEven(v);
  return (f32x16)_mm512_fixupimm_ps(r, r, _mm512_set1_epi32(0x11111888), 0);
#else
  const f32x16 r = (v + 12582912.0f) - 12582912.0f;
  return select(isNan(v), f32x16{}, r);
#endif
}

/// A running maximum of magnitudes: each lane's max(best, |v|), for best >= +0 (never -0), a quiet
/// NaN v leaving best. With AVX-512DQ one vrangeps (IEEE 754-2008's maxNumMag with the sign
/// cleared), which passes a signalling NaN on as a quiet one where the other path ignores it: give
/// it results of arithmetic (never signalling).
GIZML_VEC f32x16 maxMagnitude(f32x16 best, f32x16 v) {
#if defined(__AVX512DQ__)
  return (f32x16)_mm512_range_ps((__m512)best, (__m512)v, 0x0B);  // bits 1:0 = 3: larger |.|; 3:2 = 2: sign cleared
#else
  return maxLane(fromBits(toBits(v) & 0x7fffffffu), best);
#endif
}
/// maxMagnitude on the bits, keeping NaN: each lane's max(m, |v|'s bits), unsigned, a number's in
/// the order of its magnitude, an infinity's above every number's and a NaN's above an infinity's
/// (where maxMagnitude leaves a quiet NaN out).
GIZML_VEC u32x16 maxMagnitudeBits(u32x16 m, f32x16 v) {
  const u32x16 bits = toBits(v) & 0x7fffffffu;
#if defined(__AVX512F__)
  return (u32x16)_mm512_max_epu32((__m512i)m, (__m512i)bits);
#else
  return u32x16((u32x8)_mm256_max_epu32((__m256i)m.h[0], (__m256i)bits.h[0]),
                (u32x8)_mm256_max_epu32((__m256i)m.h[1], (__m256i)bits.h[1]));
#endif
}

#if !defined(__AVX512F__)
/// Quad Ea of v in the low 128 bits and quad Eb in the high: quad E is the low (E even) or high
/// 128 bits of half E / 2 (vperm2f128's selector: 0, 1 the first source's low, high; 2, 3 the second's).
template <int Ea, int Eb>
GIZML_VEC f32x8 quadPair(f32x16 v) {
  if constexpr (Ea % 2 == 0 && Eb == Ea + 1) return v.h[Ea / 2];  // a half as it is (GCC keeps the vperm2f128)
  else return (f32x8)_mm256_permute2f128_ps((__m256)v.h[Ea / 2], (__m256)v.h[Eb / 2], (Ea % 2) | (2 + Eb % 2) << 4);
}
#endif
/// Groups of four of stride 1 (lanes 4 g .. 4 g + 3) or 4 (lanes j, j + 4, j + 8, j + 12): slot d
/// of every group takes slot E_d of its own group (one vpermilps a register for stride 1; for
/// stride 4 one vshuff32x4, or one vperm2f128 a half).
template <int Stride, int E0, int E1, int E2, int E3>
GIZML_VEC f32x16 groupPick(f32x16 v) {
  static_assert((Stride == 1 || Stride == 4) && E0 >= 0 && E0 < 4 && E1 >= 0 && E1 < 4 && E2 >= 0 && E2 < 4 &&
                E3 >= 0 && E3 < 4);
  constexpr int kImm = E0 | E1 << 2 | E2 << 4 | E3 << 6;
#if defined(__AVX512F__)
  if constexpr (Stride == 1) return (f32x16)_mm512_permute_ps((__m512)v, kImm);
  else return (f32x16)_mm512_shuffle_f32x4((__m512)v, (__m512)v, kImm);
#else
  if constexpr (Stride == 1)
    return f32x16((f32x8)_mm256_permute_ps((__m256)v.h[0], kImm), (f32x8)_mm256_permute_ps((__m256)v.h[1], kImm));
  else return f32x16(quadPair<E0, E1>(v), quadPair<E2, E3>(v));
#endif
}

#if defined(__AVX512F__)
// ---- 4 x 4 transposes across four vectors ------------------------------------------------------------
// A vector's 16 lanes are 4 quads of 4 slots: lane 4 q + s. Across four vectors a, b, c, d
// (vector index k = 0 .. 3) these swap the vector index with the slot, or with the quad.

/// Slots: lane (q, s) of vector k becomes lane (q, k) of vector s. In each quad a 4 x 4 transpose:
/// two rounds of unpacks, 8 shuffles for the four vectors.
GIZML_VEC void transposeSlots(f32x16& a, f32x16& b, f32x16& c, f32x16& d) {
  const __m512 ab0 = _mm512_unpacklo_ps((__m512)a, (__m512)b), ab1 = _mm512_unpackhi_ps((__m512)a, (__m512)b);
  const __m512 cd0 = _mm512_unpacklo_ps((__m512)c, (__m512)d), cd1 = _mm512_unpackhi_ps((__m512)c, (__m512)d);
  a = (f32x16)_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(ab0), _mm512_castps_pd(cd0)));
  b = (f32x16)_mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(ab0), _mm512_castps_pd(cd0)));
  c = (f32x16)_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(ab1), _mm512_castps_pd(cd1)));
  d = (f32x16)_mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(ab1), _mm512_castps_pd(cd1)));
}

/// Quads: quad q of vector k becomes quad k of vector q (8 vshuff32x4).
GIZML_VEC void transposeQuads(f32x16& a, f32x16& b, f32x16& c, f32x16& d) {
  // ab0 = a's quads 0, 1 then b's 0, 1; ab1 their quads 2, 3; the same for c, d.
  const __m512 ab0 = _mm512_shuffle_f32x4((__m512)a, (__m512)b, 0x44);
  const __m512 ab1 = _mm512_shuffle_f32x4((__m512)a, (__m512)b, 0xEE);
  const __m512 cd0 = _mm512_shuffle_f32x4((__m512)c, (__m512)d, 0x44);
  const __m512 cd1 = _mm512_shuffle_f32x4((__m512)c, (__m512)d, 0xEE);
  a = (f32x16)_mm512_shuffle_f32x4(ab0, cd0, 0x88);
  b = (f32x16)_mm512_shuffle_f32x4(ab0, cd0, 0xDD);
  c = (f32x16)_mm512_shuffle_f32x4(ab1, cd1, 0x88);
  d = (f32x16)_mm512_shuffle_f32x4(ab1, cd1, 0xDD);
}
#endif

#if !defined(__AVX512F__) && defined(__AVX2__)
/// The masks of lanes [0, count) of two 8-lane halves (all ones where the lane is below count).
GIZML_VEC void laneMasks(std::int64_t count, __m256i& lo, __m256i& hi) {
  const __m256i c = _mm256_set1_epi32(static_cast<int>(count < 0 ? 0 : count));
  lo = _mm256_cmpgt_epi32(c, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  hi = _mm256_cmpgt_epi32(c, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
}
#endif
/// 16 lanes loaded from / stored to p (any alignment) as whole vectors: without AVX-512 a 64-byte
/// memcpy into the two-vector struct was compiled as 16- or 8-byte moves through the stack, each
/// then read whole (a store-forwarding stall per vector: layerNormGrad's and int8Rows' row passes
/// ran several times slower on AVX2).
GIZML_VEC f32x16 loadAll16(const float* p) {
#if defined(__AVX512F__)
  return (f32x16)_mm512_loadu_ps(p);
#elif defined(__AVX__)
  return f32x16((f32x8)_mm256_loadu_ps(p), (f32x8)_mm256_loadu_ps(p + 8));
#else
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}
GIZML_VEC void storeAll16(float* p, f32x16 v) {
#if defined(__AVX512F__)
  _mm512_storeu_ps(p, (__m512)v);
#elif defined(__AVX__)
  _mm256_storeu_ps(p, (__m256)v.h[0]);
  _mm256_storeu_ps(p + 8, (__m256)v.h[1]);
#else
  std::memcpy(p, &v, sizeof v);
#endif
}
/// Loads min(count, 16) floats; the lanes past them are +0 (and their memory is not read).
GIZML_VEC f32x16 load16(const float* p, std::int64_t count) {
  f32x16 v;
  if (count >= 16) {
    v = loadAll16(p);
  } else {
#if defined(__AVX512F__)
    v = (f32x16)_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
#elif defined(__AVX2__)
    // Masked loads (lanes past count read nothing and are +0): a memcpy of a variable size is a
    // call, which made ragged rows (a 14-wide image's) several times slower than whole ones.
    __m256i lo, hi;
    laneMasks(count, lo, hi);
    v = f32x16((f32x8)_mm256_maskload_ps(p, lo), (f32x8)_mm256_maskload_ps(p + 8, hi));
#else
    v = f32x16{};
    std::memcpy(&v, p, sizeof(float) * static_cast<std::size_t>(count));
#endif
  }
  return v;
}
/// Stores min(count, 16) lanes.
GIZML_VEC void store16(float* p, f32x16 v, std::int64_t count) {
  if (count >= 16) {
    storeAll16(p, v);
    return;
  }
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1u), (__m512)v);
#elif defined(__AVX2__)
  // Halves, quarters, pairs, then one: a masked store (vmaskmovps) is microcoded and slow on AMD's
  // cores, and a memcpy of a variable size is a call.
  __m256 part = (__m256)v.h[0];
  if (count >= 8) {
    _mm256_storeu_ps(p, part);
    p += 8;
    count -= 8;
    part = (__m256)v.h[1];
  }
  __m128 q = _mm256_castps256_ps128(part);
  if (count >= 4) {
    _mm_storeu_ps(p, q);
    p += 4;
    count -= 4;
    q = _mm256_extractf128_ps(part, 1);
  }
  if (count >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), q);
    p += 2;
    count -= 2;
    q = _mm_movehl_ps(q, q);
  }
  if (count >= 1) _mm_store_ss(p, q);
#else
  std::memcpy(p, &v, sizeof(float) * static_cast<std::size_t>(count));
#endif
}
/// The lanes below `count` keep v; the others become +0 (a row's tail adds nothing).
GIZML_VEC f32x16 keepFirst(f32x16 v, std::int64_t count) {
  return count >= 16 ? v : select(laneIndex() < static_cast<std::int32_t>(count), v, f32x16{});
}

#undef GIZML_VEC

}  // namespace gizml::exact

// Two vectors side by side, for long per-element chains.
#include "exact/twin.hpp"
