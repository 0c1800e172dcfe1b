// The regular Hadamard transform of 256 values (SPEC §3 "Diffusion norms and 8-bit rows") and a
// row's max |value|, written once for both forms of the shared row type (exact/row16.hpp). A
// 256-block is held the same way by both: 16 values v[0 .. 16) on each of 16 lanes, v[k] on lane
// l being element 16 k + l (host: 16 vectors; CUDA: 16 registers of a half-warp). So the stages of
// strides 16 and 64 combine whole vectors (registers), and those of strides 1 and 4 combine lanes
// of one vector: a lane permute on the host, a shuffle on the GPU. The stages run in the SPEC's
// order (1, 4, 16, 64): each rounds, so their order is part of the result.
#pragma once

#include <cstdint>

#include "exact/convert.hpp"
#include "exact/hd.hpp"
#include "exact/row16.hpp"

namespace gizml::exact {

constexpr std::int64_t kHadamardBlock = 256;

/// One output of a Hadamard stage: 0.5f * (((±u0 ± u1) ± u2) ± u3), the sign of u_e being s_e
/// (+1 or -1, where d + e = 3 for output d: H4 = [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]]).
/// s_e u_e is exact (u_e or -u_e) and a + (-b) is a - b in IEEE, so these are the SPEC's bits.
/// Halve = false leaves out the halving, the sum alone: the host's int8Rows keeps its last stage so
/// (every stage, for BF16 values) and scales the row's maximum and its divisor instead (host.cpp,
/// Int8Walker, codeOfHeld).
template <bool Halve = true, class F, class S>
GIZML_HD F hadamardSum(F u0, F u1, F u2, F u3, S s0, S s1, S s2, S s3) {
  const F sum = ((s0 * u0 + s1 * u1) + s2 * u2) + s3 * u3;
  if constexpr (Halve) return 0.5f * sum;
  else return sum;
}
/// One group of four of a Hadamard stage, in place: u_d becomes output d (constant signs, which
/// the compiler folds into additions and subtractions); unhalved where !Halve.
template <bool Halve = true, class F>
GIZML_HD void hadamard4(F& u0, F& u1, F& u2, F& u3) {
  const F o0 = hadamardSum<Halve>(u0, u1, u2, u3, 1.0f, 1.0f, 1.0f, -1.0f);
  const F o1 = hadamardSum<Halve>(u0, u1, u2, u3, 1.0f, 1.0f, -1.0f, 1.0f);
  const F o2 = hadamardSum<Halve>(u0, u1, u2, u3, 1.0f, -1.0f, 1.0f, 1.0f);
  const F o3 = hadamardSum<Halve>(u0, u1, u2, u3, -1.0f, 1.0f, 1.0f, 1.0f);
  u0 = o0;
  u1 = o1;
  u2 = o2;
  u3 = o3;
}

#if defined(__AVX512F__) && !defined(__CUDACC__)
/// hadamard4 on AVX-512 vectors, balanced between the core's pipes: on a Zen 4 additions run on two
/// pipes and multiplications and fmas on two others, so the group's 11 additions (u0 + u1 serves
/// outputs 0 and 1) would wait on their pipes while the others idle. fma(u, +-1, a) is a + u or
/// a - u rounded once (the product is exact): the same bits, the zeros' signs included, so the first
/// `fmas` of the additions go as fmas: 3 beside the 4 halvings, 5 without them. On a Zen 4, 2
/// threads, three interleaved rounds against none, medians: hadamardRows [8192, 3072] 5.2-6.9 ->
/// 4.4-5.1 ms, int8Rows 4.3-4.8 -> 4.0-4.4 ms (F32) and 3.9-4.1 -> 3.6-4.1 ms (BF16),
/// modulatedInt8Rows 7.5-8.1 -> 7.3-8.0 ms; 2 and 4 (4 and 6, 6 and 8) fmas gained less.
template <bool Halve = true>
inline __attribute__((always_inline)) void hadamard4(f32x16& u0, f32x16& u1, f32x16& u2, f32x16& u3) {
  constexpr int fmas = Halve ? 3 : 5;
  int used = 0;
  const auto add = [&](f32x16 a, f32x16 u, float sign) __attribute__((always_inline)) {
    if (used++ < fmas) return fmaLane(u, splat(sign), a);
    return sign > 0 ? a + u : a - u;
  };
  const f32x16 p = add(u0, u1, 1.0f), m = add(u0, u1, -1.0f), n = add(u1, u0, -1.0f);
  f32x16 o0 = add(add(p, u2, 1.0f), u3, -1.0f), o1 = add(add(p, u2, -1.0f), u3, 1.0f);
  f32x16 o2 = add(add(m, u2, 1.0f), u3, 1.0f), o3 = add(add(n, u2, 1.0f), u3, 1.0f);
  if constexpr (Halve) {
    o0 = 0.5f * o0, o1 = 0.5f * o1, o2 = 0.5f * o2, o3 = 0.5f * o3;
  }
  u0 = o0, u1 = o1, u2 = o2, u3 = o3;
}
#endif

/// |v| (the sign bit cleared: -0 becomes +0; NaN stays NaN).
template <class F>
GIZML_HD F absLane(F v) {
  return fromBits(toBits(v) & 0x7fffffffu);
}
/// The larger of a and best, best kept when a is NaN (a maximum ignores NaN, SPEC §1.3).
template <class F>
GIZML_HD F maxIgnoringNaN(F a, F best) {
  return maxLane(a, best);  // a > best ? a : best
}

#if !defined(__CUDACC__)

/// The f32x16 whose lanes in slot d of their group of four (stride 1 or 4) hold s_d.
template <int Stride>
inline __attribute__((always_inline)) f32x16 perSlot(float s0, float s1, float s2, float s3) {
  const i32x16 d = (laneIndex() >> (Stride == 1 ? 0 : 2)) & 3;
  return select(d == 0, splat(s0), select(d == 1, splat(s1), select(d == 2, splat(s2), splat(s3))));
}

#if !defined(__AVX512F__) && defined(__AVX__) && defined(__FMA__)
/// The stage of stride 4 on AVX2's two halves: h[0] holds quads 0 and 1 (outputs 0 and 1), h[1]
/// quads 2 and 3 (outputs 2 and 3), u_e being quad e. The first steps of outputs 0 and 1 are both
/// u0 + u1: h[0] plus h[0] with its quads swapped gives (u0 + u1, u1 + u0), the same sums (IEEE
/// addition commutes, zeros' signs included); those of outputs 2 and 3 are u0 - u1 and -u0 + u1 =
/// u1 - u0: h[0] minus the swapped h[0]. Then outputs 2 and 3 add u2 and u3 (both signs +), and
/// outputs 0 and 1 add +-u2 and -+u3 as fmas by +-1 (hadamardLanes' rule). 3 permutes and 8
/// arithmetic instructions for 16 values, 4 of them additions, where the generic path takes 5
/// permutes and 8 fmas or multiplications, all on the FMA pipes (a Zen 2's two adders idle). On a
/// Zen 2, 1 thread, blocks in L1 (quant/host.cpp's buffered path): 0.51 -> 0.45 ns a value. The
/// same formulas, so the same bits (hadamardLanes<4> without AVX-512); unhalved where !Halve.
template <bool Halve>
inline __attribute__((always_inline)) f32x16 hadamardStride4OnHalves(f32x16 v) {
  const __m256 h0 = (__m256)v.h[0], h1 = (__m256)v.h[1];
  const __m256 swapped = _mm256_permute2f128_ps(h0, h0, 0x01);                  // (u1, u0)
  const __m256 u2 = _mm256_permute2f128_ps(h1, h1, 0x00), u3 = _mm256_permute2f128_ps(h1, h1, 0x11);
  const __m256 plusMinus = _mm256_setr_ps(1.0f, 1.0f, 1.0f, 1.0f, -1.0f, -1.0f, -1.0f, -1.0f);
  const __m256 minusPlus = _mm256_setr_ps(-1.0f, -1.0f, -1.0f, -1.0f, 1.0f, 1.0f, 1.0f, 1.0f);
  const __m256 first01 = _mm256_fmadd_ps(u3, minusPlus, _mm256_fmadd_ps(u2, plusMinus, _mm256_add_ps(h0, swapped)));
  const __m256 first23 = _mm256_add_ps(_mm256_add_ps(_mm256_sub_ps(h0, swapped), u2), u3);
  if constexpr (!Halve) return f32x16((f32x8)first01, (f32x8)first23);
  const __m256 half = _mm256_set1_ps(0.5f);
  return f32x16((f32x8)_mm256_mul_ps(first01, half), (f32x8)_mm256_mul_ps(first23, half));
}
#endif
/// A stage of stride 1 or 4 (within a vector) on one vector: lane l becomes output d of its group
/// of four (d its slot). Output d is hadamardSum's ((s0 u0 + s1 u1) + s2 u2) + s3 u3 with H4's
/// row d, taken as three fmas by a constant +1 or -1 a lane: fma(u, -1, a) is a - u rounded once
/// (the product is exact), the same bits as the subtraction, so no sign flips are needed. The
/// first step is u0 + u1 for outputs 0 and 1, u0 - u1 for output 2 and -u0 + u1 = u1 - u0 for
/// output 3: slots (u0, u0, u0, u1) plus (+1, +1, -1, -1) times slots (u1, u1, u1, u0). Unhalved
/// where !Halve.
template <int Stride, bool Halve = true>
inline __attribute__((always_inline)) f32x16 hadamardLanes(const HostRow&, f32x16 v) {
  static_assert(Stride == 1 || Stride == 4);
#if !defined(__AVX512F__) && defined(__AVX__) && defined(__FMA__)
  if constexpr (Stride == 4) return hadamardStride4OnHalves<Halve>(v);
#endif
  f32x16 a = fmaLane(groupPick<Stride, 1, 1, 1, 0>(v), perSlot<Stride>(1.0f, 1.0f, -1.0f, -1.0f),
                     groupPick<Stride, 0, 0, 0, 1>(v));
  a = fmaLane(groupPick<Stride, 2, 2, 2, 2>(v), perSlot<Stride>(1.0f, -1.0f, 1.0f, 1.0f), a);
  a = fmaLane(groupPick<Stride, 3, 3, 3, 3>(v), perSlot<Stride>(-1.0f, 1.0f, 1.0f, 1.0f), a);
  if constexpr (Halve) return 0.5f * a;
  else return a;
}
#if defined(__AVX512BW__)
/// With AVX-512 (BW for the BF16 loads) the host runs the first three stages on a group of four
/// vectors u0 .. u3 (a block's v[4 g .. 4 g + 4), its elements 64 g + e for e < 64) held "staged":
/// the base-4 digits e2 e1 e0 of e (strides 16, 4, 1) pick the vector, the quad and the slot
/// (lane 4 q + s) as
///   natural  vector e2, quad e1, slot e0  (v's own layout: element 16 k + 4 q + s of the group)
///   staged   vector e0, quad e2, slot e1  (element 16 q + 4 s + k)
/// Each stage then combines whole vectors (hadamard4, no permute), and a transpose between stages
/// (vec16.hpp) brings the next digit to the vectors: 4 shuffles a vector for the three stages, 6
/// with staging a natural group (stageGroup), against 8 for each stage within vectors
/// (hadamardLanes); BF16 values are loaded staged at no cost (loadBF16BlockStaged, and
/// modulatedInt8Rows' values rounded to BF16 words staged so: stageBF16Group). A whole block
/// fits in AVX-512's registers, so its four groups go side by side (hadamardBlockStaged): on a Zen
/// 4 one group at a time was latency-bound. The same formula and order for every value, so the
/// same bits.
///
/// The first three stages of a block v whose four groups are staged, leaving it natural: the
/// groups side by side (four independent chains for the out-of-order core), side(phase) after
/// each of the three stages (other work to fill their latency); unhalved where !Halve (the host's
/// 8-bit rows of BF16 values: quant/host.cpp's Int8Walker says when that is the same).
template <bool Halve = true, class Side>
inline __attribute__((always_inline)) void hadamardBlockStaged(f32x16 (&v)[16], Side&& side) {
  for (int g = 0; g < 16; g += 4) hadamard4<Halve>(v[g], v[g + 1], v[g + 2], v[g + 3]);  // stride 1: e0 picks the vector
  side(0);
  for (int g = 0; g < 16; g += 4) transposeSlots(v[g], v[g + 1], v[g + 2], v[g + 3]);  // vector e1, quad e2, slot e0
  for (int g = 0; g < 16; g += 4) hadamard4<Halve>(v[g], v[g + 1], v[g + 2], v[g + 3]);  // stride 4
  side(1);
  for (int g = 0; g < 16; g += 4) transposeQuads(v[g], v[g + 1], v[g + 2], v[g + 3]);  // vector e2, quad e1: natural
  for (int g = 0; g < 16; g += 4) hadamard4<Halve>(v[g], v[g + 1], v[g + 2], v[g + 3]);  // stride 16
  side(2);
}
/// A natural group staged: two rounds of two-source permutes (vpermt2ps), 8 in all. Round 1: from
/// natural vectors e2 and e2 + 1 (e2 even), t holds their values of e0 in {0, 1} (t01) or {2, 3}
/// (t23), at lane 8 (e2 odd) + 4 (e0 odd) + e1. Round 2: staged vector e0 gathers its values from
/// the two t of its e0 pair.
inline __attribute__((always_inline)) void stageGroup(f32x16& u0, f32x16& u1, f32x16& u2, f32x16& u3) {
  struct Indexes {
    alignas(64) std::int32_t lane[4][16];
  };
  static constexpr Indexes kFrom = [] {
    Indexes t{};
    for (int l = 0; l < 16; ++l) {
      const int src = l / 8, e0 = (l / 4) % 2, e1 = l % 4;
      t.lane[0][l] = 16 * src + 4 * e1 + e0;      // round 1, e0 in {0, 1}
      t.lane[1][l] = 16 * src + 4 * e1 + 2 + e0;  // round 1, e0 in {2, 3}
      const int q = l / 4, s = l % 4;             // round 2: staged lane 4 q + s holds e2 = q, e1 = s
      t.lane[2][l] = 16 * (q / 2) + 8 * (q % 2) + s;      // e0 even
      t.lane[3][l] = 16 * (q / 2) + 8 * (q % 2) + 4 + s;  // e0 odd
    }
    return t;
  }();
  const auto from = [](int i) { return _mm512_load_si512(kFrom.lane[i]); };
  const __m512 t01a = _mm512_permutex2var_ps((__m512)u0, from(0), (__m512)u1);
  const __m512 t01b = _mm512_permutex2var_ps((__m512)u0, from(1), (__m512)u1);
  const __m512 t23a = _mm512_permutex2var_ps((__m512)u2, from(0), (__m512)u3);
  const __m512 t23b = _mm512_permutex2var_ps((__m512)u2, from(1), (__m512)u3);
  u0 = (f32x16)_mm512_permutex2var_ps(t01a, from(2), t23a);
  u1 = (f32x16)_mm512_permutex2var_ps(t01a, from(3), t23a);
  u2 = (f32x16)_mm512_permutex2var_ps(t01b, from(2), t23b);
  u3 = (f32x16)_mm512_permutex2var_ps(t01b, from(3), t23b);
}
/// A group's 64 BF16 values, lo holding its first 32 words and hi the rest, widened to F32 and
/// staged: each vector in one word permute of the two. Vector k, lane l = 4 q + s, takes the
/// group's element 16 q + 4 s + k into its high word (the F32 of a BF16), the low word zeroed by
/// the mask: the cost of widening natural vectors (vpmovzxwd, vpslld), and no transposes.
inline __attribute__((always_inline)) void stageBF16Group(__m512i lo, __m512i hi, f32x16* u) {
  struct Indexes {
    alignas(64) std::uint16_t word[4][32];
  };
  static constexpr Indexes kFrom = [] {
    Indexes t{};
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 16; ++l) t.word[k][2 * l + 1] = static_cast<std::uint16_t>(16 * (l / 4) + 4 * (l % 4) + k);
    return t;
  }();
  for (int k = 0; k < 4; ++k)
    u[k] = (f32x16)_mm512_castsi512_ps(
        _mm512_maskz_permutex2var_epi16(0xAAAAAAAAu, lo, _mm512_load_si512(kFrom.word[k]), hi));
}
/// The 256 BF16 values at p widened to F32, each group staged (stageBF16Group).
inline __attribute__((always_inline)) void loadBF16BlockStaged(const std::uint16_t* p, f32x16 (&v)[16]) {
  for (int g = 0; g < 4; ++g)
    stageBF16Group(_mm512_loadu_si512(p + 64 * g), _mm512_loadu_si512(p + 64 * g + 32), v + 4 * g);
}
#endif

// One vector at a time: a single 1 KiB memcpy would be a library call through the stack.
inline __attribute__((always_inline)) void loadBlock(const HostRow&, const float* p, f32x16 (&v)[16]) {
  for (int k = 0; k < 16; ++k) v[k] = loadAll16(p + 16 * k);
}
inline __attribute__((always_inline)) void loadBlock(const HostRow&, const std::uint16_t* bf16, f32x16 (&v)[16]) {
  for (int k = 0; k < 16; ++k) v[k] = loadBF16x16(bf16 + 16 * k);
}
inline __attribute__((always_inline)) void storeBlock(const HostRow&, float* p, const f32x16 (&v)[16]) {
  for (int k = 0; k < 16; ++k) storeAll16(p + 16 * k, v[k]);
}
/// The largest lane ignoring NaN (lane 0 when every lane is NaN).
inline float laneMax(const HostRow&, f32x16 v) {
  float m = v[0];
  for (int l = 1; l < 16; ++l) m = maxIgnoringNaN(v[l], m);
  return m;
}

#else  // __CUDACC__

GIZML_HD float shuffleFrom(const WarpRow& row, float v, int lane) {
#if defined(__CUDA_ARCH__)
  return __shfl_sync(row.mask, v, lane, 16);
#else
  (void)row, (void)lane;
  return v;
#endif
}
/// A stage of stride 1 or 4 on a half-warp: lane l becomes output d of its group of four (d its
/// slot), hadamardSum's ((s0 u0 + s1 u1) + s2 u2) + s3 u3 with H4's row d. The signs depend on the
/// lane, so they cannot fold into additions and subtractions; each addition is a fma by the sign,
/// a + s u rounded once with the product exact (as the host's hadamardLanes): the same bits, the
/// zeros' signs included, in 1 multiplication and 3 fmas where hadamardSum takes 4 and 3 additions.
/// (Unhalved where !Halve: the host's alone uses that.)
template <int Stride, bool Halve = true>
GIZML_HD float hadamardLanes(const WarpRow& row, float v) {
  const int d = (row.lane / Stride) % 4, base = row.lane - d * Stride;
  const auto sign = [&](int e) { return d == 3 - e ? -1.0f : 1.0f; };
  const float u0 = shuffleFrom(row, v, base), u1 = shuffleFrom(row, v, base + Stride),
              u2 = shuffleFrom(row, v, base + 2 * Stride), u3 = shuffleFrom(row, v, base + 3 * Stride);
  const float sum = fmaLane(u3, sign(3), fmaLane(u2, sign(2), fmaLane(u1, sign(1), sign(0) * u0)));
  if constexpr (Halve) return 0.5f * sum;
  else return sum;
}
GIZML_HD void loadBlock(const WarpRow& row, const float* p, float (&v)[16]) {
  for (int k = 0; k < 16; ++k) v[k] = p[16 * k + row.lane];
}
GIZML_HD void loadBlock(const WarpRow& row, const std::uint16_t* bf16, float (&v)[16]) {
  for (int k = 0; k < 16; ++k) v[k] = bf16ToFloat(bf16[16 * k + row.lane]);
}
GIZML_HD void storeBlock(const WarpRow& row, float* p, const float (&v)[16]) {
  for (int k = 0; k < 16; ++k) p[16 * k + row.lane] = v[k];
}
/// The half-warp's largest value ignoring NaN, on every lane (order-free, so any tree will do).
GIZML_HD float laneMax(const WarpRow& row, float v) {
#if defined(__CUDA_ARCH__)
  for (int h = 8; h >= 1; h /= 2) v = maxIgnoringNaN(__shfl_xor_sync(row.mask, v, h, 16), v);
#else
  (void)row;
#endif
  return v;
}

#endif  // __CUDACC__

/// A 256-block of F32 or BF16 values (`bf16`) at element `at` of x.
template <class Row, class F>
GIZML_HD void loadBlockOf(const Row& row, const void* x, bool bf16, std::int64_t at, F (&v)[16]) {
  if (bf16) loadBlock(row, static_cast<const std::uint16_t*>(x) + at, v);
  else loadBlock(row, static_cast<const float*>(x) + at, v);
}

/// The first three stages (strides 1, 4, 16) of N groups of four vectors, in place: group g is u[g],
/// a block's v[b .. b + 4) (b a multiple of 4); strides 1 and 4 within each vector, then 16 across
/// the group's four. Each stage runs on all N groups before the next: N independent chains for an
/// out-of-order core (the host without AVX-512 takes 2: one group's chain of fmas and permutes left
/// its window short of work). The same formulas and order for every value, so the same bits.
/// Unhalved where !Halve (the host's 8-bit rows of BF16 values: quant/host.cpp's Int8Walker).
template <bool Halve = true, int N, class Row, class F>
GIZML_HD void hadamardGroups(const Row& row, F (&u)[N][4]) {
  for (int g = 0; g < N; ++g)
    for (int k = 0; k < 4; ++k) u[g][k] = hadamardLanes<1, Halve>(row, u[g][k]);
  for (int g = 0; g < N; ++g)
    for (int k = 0; k < 4; ++k) u[g][k] = hadamardLanes<4, Halve>(row, u[g][k]);
  for (int g = 0; g < N; ++g) hadamard4<Halve>(u[g][0], u[g][1], u[g][2], u[g][3]);  // stride 16
}
/// The last stage (stride 64) of vectors v[j], v[j + 4], v[j + 8], v[j + 12], in place
/// (unhalved where !Halve).
template <bool Halve = true, class F>
GIZML_HD void hadamardLast(F& u0, F& u1, F& u2, F& u3) {
  hadamard4<Halve>(u0, u1, u2, u3);
}

/// The regular Hadamard transform of one 256-block held as v (see the top of this file), in
/// place: the SPEC's four stages, strides 1, 4, 16, 64, in that order for every value (the host's
/// hadamardRows and int8Rows run the same pieces in their own loops).
template <class Row, class F>
GIZML_HD void hadamard256(const Row& row, F (&v)[16]) {
  for (int b = 0; b < 16; b += 4) hadamardGroups(row, reinterpret_cast<F(&)[1][4]>(v[b]));
  for (int j = 0; j < 4; ++j) hadamardLast(v[j], v[j + 4], v[j + 8], v[j + 12]);
}
#if defined(__AVX512BW__) && !defined(__CUDACC__)
/// The same on the host with AVX-512: each group staged, then the block's stages side by side.
inline __attribute__((always_inline)) void hadamard256(const HostRow&, f32x16 (&v)[16]) {
  for (int g = 0; g < 16; g += 4) stageGroup(v[g], v[g + 1], v[g + 2], v[g + 3]);
  hadamardBlockStaged(v, [](int) {});
  for (int j = 0; j < 4; ++j) hadamardLast(v[j], v[j + 4], v[j + 8], v[j + 12]);
}
#elif !defined(__CUDACC__)
/// The same on the host without AVX-512: two groups side by side (hadamardGroups), as the 8-bit
/// rows' buffered path (quant/host.cpp, kGroupsAtOnce). Zen 2, 2 threads, three rounds of pairs:
/// normRotateInto [64, 4096] 0.148 - 0.163 -> 0.134 - 0.138 ms, siluMulRotatedInto about even.
inline __attribute__((always_inline)) void hadamard256(const HostRow& row, f32x16 (&v)[16]) {
  for (int b = 0; b < 16; b += 8) hadamardGroups(row, reinterpret_cast<f32x16(&)[2][4]>(v[b]));
  for (int j = 0; j < 4; ++j) hadamardLast(v[j], v[j + 4], v[j + 8], v[j + 12]);
}
#endif

#if defined(__CUDACC__)

// ---- a block by rows (a GPU's 8-bit rows: quant/cuda.cu) ----
// Loaded "by rows" (lane a's v[j] is element 16 a + j: 16 consecutive values, four 16-byte loads a
// lane, where the layout above takes 16 loads of 4 bytes), a block's first two stages combine a
// lane's own registers (strides 1 and 4: the digits of j), with no shuffle; the block then goes
// through 256 floats of shared memory once, transposed into the layout above, where the last two
// combine registers as in hadamard256. Each value's stages and their order are hadamard256's: the
// same bits. A lane stage by shuffles is 4 shuffles and 5 arithmetic instructions a value, here 4;
// the transpose is 20 accesses of shared memory a lane for the block's 16 values.

/// The floats of shared memory a half-warp's block passes through (kRowsScratch apart: a warp's
/// two half-warps' scratches 272 floats apart fall on different halves of the banks).
constexpr int kRowsScratch = 272;

/// Where element 16 a + j of a block lies in its scratch: row a's 16-byte chunks in an order
/// swizzled by (a / 2) % 4, so that the 8 lanes of a quarter-warp storing a chunk each (chunk c of
/// rows a = 0 ... 7, at banks 16 (a % 2) + 4 (c ^ (a / 2) % 4)) and the 16 lanes reading a column
/// (16 consecutive floats, permuted) meet no bank twice.
GIZML_HD int rowsScratchAt(int a, int j) { return 16 * a + (j ^ (4 * ((a >> 1) & 3))); }

/// Lane a's row of the 256-block at element `at` of x (F32 or BF16 values; x + at on 16 bytes):
/// v[j] = element at + 16 a + j, in 16-byte loads.
GIZML_HD void loadBlockRows(const WarpRow& row, const void* x, bool bf16, std::int64_t at, float (&v)[16]) {
  if (bf16) {
    // 16 BF16 values are 32 bytes: 8 words, element 2 i in word i's low half (little-endian).
    const float* p = reinterpret_cast<const float*>(static_cast<const std::uint16_t*>(x) + at + 16 * row.lane);
    for (int c = 0; c < 2; ++c) {
      const float4 q = loadFloat4(p + 4 * c);
      const float words[4] = {q.x, q.y, q.z, q.w};
      for (int w = 0; w < 4; ++w) {
        v[8 * c + 2 * w] = fromBits(toBits(words[w]) << 16);
        v[8 * c + 2 * w + 1] = fromBits(toBits(words[w]) & 0xffff0000u);
      }
    }
  } else {
    const float* p = static_cast<const float*>(x) + at + 16 * row.lane;
    for (int c = 0; c < 4; ++c) {
      const float4 q = loadFloat4(p + 4 * c);
      v[4 * c] = q.x, v[4 * c + 1] = q.y, v[4 * c + 2] = q.z, v[4 * c + 3] = q.w;
    }
  }
}

/// The regular Hadamard transform of a block loaded by rows, in place, left in the layout at the
/// top of this file (v[k] on lane l: element 16 k + l), through `scratch` (kRowsScratch floats of
/// shared memory of this half-warp's own, 16-byte aligned). Every lane of the half-warp calls it.
GIZML_HD void hadamard256FromRows(const WarpRow& row, float (&v)[16], float* scratch) {
  for (int g = 0; g < 16; g += 4) hadamard4(v[g], v[g + 1], v[g + 2], v[g + 3]);  // stride 1: j's digit 0
  for (int g = 0; g < 4; ++g) hadamard4(v[g], v[g + 4], v[g + 8], v[g + 12]);     // stride 4: j's digit 1
#if defined(__CUDA_ARCH__)
  __syncwarp(row.mask);  // the half-warp's reads of its last block's scratch are done
#endif
  for (int c = 0; c < 4; ++c)
    storeFloat4(scratch + rowsScratchAt(row.lane, 4 * c), float4{v[4 * c], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]});
#if defined(__CUDA_ARCH__)
  __syncwarp(row.mask);
#endif
  for (int k = 0; k < 16; ++k) v[k] = scratch[rowsScratchAt(k, row.lane)];
  for (int b = 0; b < 16; b += 4) hadamard4(v[b], v[b + 1], v[b + 2], v[b + 3]);  // stride 16
  for (int j = 0; j < 4; ++j) hadamardLast(v[j], v[j + 4], v[j + 8], v[j + 12]);  // stride 64
}

#endif  // __CUDACC__

}  // namespace gizml::exact
