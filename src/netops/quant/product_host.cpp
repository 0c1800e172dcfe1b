// int8RowsProduct on the host, and the public functions (checks, outputs, dispatch).
//
// An integer sum is exact in any order, so how the work is cut changes no bit: the lanes, the
// blocks of k, the threads' split. Two forms, by a's rows. Few (decoding: a token, or a few
// sequences' tokens): dot products, each of b's rows read once as it is stored and widened in
// registers against a few of a's rows widened beforehand (dotProduct). More: panels. a's rows are
// widened to 16-bit integers (padded with zero rows to the register block); the micro-kernel is the
// outer-product form of the F32 GEMMs, on pairs: MR rows of a times a micro-panel of NV vectors of
// b's columns, each 32-bit lane of a vector one column's pair (b[j][p], b[j][p + 1]); a's pair
// (a[i][p], a[i][p + 1]) broadcast to every lane, one vpdpwssd (AVX-512 VNNI; vpmaddwd + vpaddd
// without it, or on AVX2) adds both products to a column's sum. MR x NV vectors of sums stay in
// registers over a block of kc values of k. The thread that takes a micro-panel widens and packs
// its block of k from b's codes (packPanel: kLanes rows at a time, transposed in registers; kc x 16
// NV x 2 bytes, a quarter of L2, sized from the caches read at run time), which stays in L2 while
// a's rows stream past. Between blocks of k the sums wait in the output's memory as int32 bits; the
// last block converts them, 16 columns at a time (finishTile: int8ProductValue on 16 lanes, the
// formula the scalar store and the GPU share). Work items are (micro-panel, range of rows), taken
// by the threads in any order; they meet only at the end. Scratch (a's widened rows, the threads'
// panel blocks) comes from the host cache, so a product in a loop reuses mapped pages.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/caches.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/host_memory.hpp"
#include "exact/row16.hpp"
#include "exact/vec16.hpp"
#include "gizml/netops/quant.hpp"
#include "netops/quant/product.hpp"

namespace gizml::netops::quant {

namespace {

// The machine's vectors of 32-bit lanes, each holding a pair of 16-bit codes or one sum (gizml's
// host code needs AVX2 at least: exact/vec16.hpp).
#if defined(__AVX512BW__)
using Lanes = __m512i;
constexpr int kLanes = 16, kMR = 6, kNV = 4;  // 24 sums + 4 of b + 1 of a: 29 of 32 registers
inline Lanes zeroLanes() { return _mm512_setzero_si512(); }
inline Lanes loadLanes(const std::int16_t* p) { return _mm512_loadu_si512(p); }
inline void storeLanes(std::int32_t* p, Lanes v) { _mm512_storeu_si512(p, v); }
inline Lanes broadcastPair(const std::int16_t* p) {
  std::int32_t pair;
  std::memcpy(&pair, p, 4);
  return _mm512_set1_epi32(pair);
}
/// Codes p, p + 1, ..., p + 2 kLanes - 1 of a row as stored, widened to 16 bits in order.
inline Lanes codesAt(const void* row, Codes codes, std::int64_t p) {
  if (codes == Codes::I8) return _mm512_cvtepi8_epi16(_mm256_loadu_si256(static_cast<const __m256i*>(row) + p / 32));
  if (codes == Codes::F32) {
    const float* f = static_cast<const float*>(row) + p;
    const __m256i low = _mm512_cvtepi32_epi16(_mm512_cvttps_epi32(_mm512_loadu_ps(f)));
    const __m256i high = _mm512_cvtepi32_epi16(_mm512_cvttps_epi32(_mm512_loadu_ps(f + 16)));
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
  }
  // I4: 16 bytes, each two codes (low nibble first), interleaved into 32 nibbles, widened, and
  // each nibble's sign bit extended: (v ^ 8) - 8.
  const __m128i bytes = _mm_loadu_si128(static_cast<const __m128i*>(row) + p / 32);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_and_si128(bytes, nibble), high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
  const __m512i v = _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(low, high), _mm_unpacklo_epi8(low, high)));
  const __m512i eight = _mm512_set1_epi16(8);
  return _mm512_sub_epi16(_mm512_xor_si512(v, eight), eight);
}
inline std::int32_t laneSum(Lanes v) { return _mm512_reduce_add_epi32(v); }
// Unpacks within each 128-bit chunk, of 32-bit and of 64-bit elements.
inline Lanes unpackLow32(Lanes a, Lanes b) { return _mm512_unpacklo_epi32(a, b); }
inline Lanes unpackHigh32(Lanes a, Lanes b) { return _mm512_unpackhi_epi32(a, b); }
inline Lanes unpackLow64(Lanes a, Lanes b) { return _mm512_unpacklo_epi64(a, b); }
inline Lanes unpackHigh64(Lanes a, Lanes b) { return _mm512_unpackhi_epi64(a, b); }
/// transposeLanes' last step: chunk L of u[g + c] (rows g .. g + 3 of column 4 L + c) to r[4 L + c]
/// chunk g / 4 — for each c, a 4 x 4 transpose of 128-bit chunks.
inline void exchangeChunks(const Lanes (&u)[kLanes], Lanes (&r)[kLanes]) {
  for (int c = 0; c < 4; ++c) {
    const Lanes v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
    const Lanes v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const Lanes v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
    r[8 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
  }
}
inline Lanes pairDot(Lanes acc, Lanes a, Lanes b) {
#if defined(__AVX512VNNI__)
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}
#else
using Lanes = __m256i;
constexpr int kLanes = 8, kMR = 6, kNV = 2;  // 12 sums + 2 of b + 1 of a: 15 of 16 registers
inline Lanes zeroLanes() { return _mm256_setzero_si256(); }
inline Lanes loadLanes(const std::int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void storeLanes(std::int32_t* p, Lanes v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline Lanes broadcastPair(const std::int16_t* p) {
  std::int32_t pair;
  std::memcpy(&pair, p, 4);
  return _mm256_set1_epi32(pair);
}
/// Codes p, p + 1, ..., p + 2 kLanes - 1 of a row as stored, widened to 16 bits in order.
inline Lanes codesAt(const void* row, Codes codes, std::int64_t p) {
  if (codes == Codes::I8) return _mm256_cvtepi8_epi16(_mm_loadu_si128(static_cast<const __m128i*>(row) + p / 16));
  if (codes == Codes::F32) {
    const float* f = static_cast<const float*>(row) + p;
    // packs interleaves its operands' 128-bit halves; the permute puts the codes back in order.
    const __m256i packed = _mm256_packs_epi32(_mm256_cvttps_epi32(_mm256_loadu_ps(f)),
                                              _mm256_cvttps_epi32(_mm256_loadu_ps(f + 8)));
    return _mm256_permute4x64_epi64(packed, 0xD8);
  }
  // I4: 8 bytes, each two codes (low nibble first), interleaved into 16 nibbles, widened, and
  // each nibble's sign bit extended: (v ^ 8) - 8.
  const auto* at = static_cast<const std::uint8_t*>(row) + p / 2;
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(at));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_and_si128(bytes, nibble), high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
  const __m256i v = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(low, high));
  const __m256i eight = _mm256_set1_epi16(8);
  return _mm256_sub_epi16(_mm256_xor_si256(v, eight), eight);
}
inline std::int32_t laneSum(Lanes v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}
inline Lanes pairDot(Lanes acc, Lanes a, Lanes b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
// Unpacks within each 128-bit chunk, of 32-bit and of 64-bit elements.
inline Lanes unpackLow32(Lanes a, Lanes b) { return _mm256_unpacklo_epi32(a, b); }
inline Lanes unpackHigh32(Lanes a, Lanes b) { return _mm256_unpackhi_epi32(a, b); }
inline Lanes unpackLow64(Lanes a, Lanes b) { return _mm256_unpacklo_epi64(a, b); }
inline Lanes unpackHigh64(Lanes a, Lanes b) { return _mm256_unpackhi_epi64(a, b); }
/// transposeLanes' last step: chunk L of u[g + c] (rows g .. g + 3 of column 4 L + c) to r[4 L + c]
/// chunk g / 4 — the two halves exchanged.
inline void exchangeChunks(const Lanes (&u)[kLanes], Lanes (&r)[kLanes]) {
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
  }
}
#endif
constexpr int kPanelColumns = kNV * kLanes;

/// r[i] lane j becomes r[j] lane i (kLanes x kLanes 32-bit lanes): within each 128-bit chunk, 4 x 4
/// transposes of rows 4g .. 4g + 3 (unpacks of 32 then 64 bits), then the chunks exchanged.
inline void transposeLanes(Lanes (&r)[kLanes]) {
  Lanes t[kLanes], u[kLanes];
  for (int i = 0; i < kLanes; i += 2) {
    t[i] = unpackLow32(r[i], r[i + 1]);
    t[i + 1] = unpackHigh32(r[i], r[i + 1]);
  }
  for (int g = 0; g < kLanes; g += 4) {  // u[g + c] chunk L: rows g .. g + 3 of column 4 L + c
    u[g] = unpackLow64(t[g], t[g + 2]);
    u[g + 1] = unpackHigh64(t[g], t[g + 2]);
    u[g + 2] = unpackLow64(t[g + 1], t[g + 3]);
    u[g + 3] = unpackHigh64(t[g + 1], t[g + 3]);
  }
  exchangeChunks(u, r);
}

/// Rows [0, rows) of codes q [rows, k] widened to 16 bits into `to` (row-major), then zero rows up
/// to `padded`.
void widenRows(const void* q, Codes codes, std::int64_t rows, std::int64_t k, std::int64_t padded, std::int16_t* to) {
  const std::int64_t rowBytes = codeRowBytes(codes, k);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) {
    const void* row = static_cast<const std::uint8_t*>(q) + i * rowBytes;
    for (std::int64_t p = 0; p < k; p += 2 * kLanes)
      storeLanes(reinterpret_cast<std::int32_t*>(to + i * k + p), codesAt(row, codes, p));
  }
  std::fill(to + rows * k, to + padded * k, std::int16_t{0});
}

/// Columns [j0, j0 + kPanelColumns) of b (codes [n, k]; zeros past n), values [k0, k0 + len) of
/// k, widened and packed as the micro-kernel reads them: pair q (b[j][k0 + 2q], b[j][k0 + 2q + 1])
/// of column j at panel + 2 (q kPanelColumns + j - j0). kLanes columns at a time: kLanes vectors
/// of 2 kLanes codes each (a row's pairs in lanes) transposed into kLanes vectors of pairs (the
/// columns in lanes).
void packPanel(const void* b, Codes codes, std::int64_t n, std::int64_t k, std::int64_t j0, std::int64_t k0,
               std::int64_t len, std::int16_t* panel) {
  const std::int64_t rowBytes = codeRowBytes(codes, k);
  for (int v = 0; v < kNV; ++v) {
    const std::int64_t first = j0 + v * kLanes;
    for (std::int64_t p = 0; p < len; p += 2 * kLanes) {
      Lanes r[kLanes];
      for (int i = 0; i < kLanes; ++i)
        r[i] = first + i < n ? codesAt(static_cast<const std::uint8_t*>(b) + (first + i) * rowBytes, codes, k0 + p)
                             : zeroLanes();
      transposeLanes(r);
      for (int q = 0; q < kLanes; ++q)
        storeLanes(reinterpret_cast<std::int32_t*>(panel + (p + 2 * q) * kPanelColumns + 2 * v * kLanes), r[q]);
    }
  }
}

/// The MR x kPanelColumns sums over `pairs` pairs of a's rows a, a + k, ... (from their value at
/// a) and the packed panel.
inline void microSums(const std::int16_t* a, std::int64_t k, const std::int16_t* panel, std::int64_t pairs,
                      std::int32_t (&sums)[kMR][kPanelColumns]) {
  Lanes acc[kMR][kNV];
  for (auto& row : acc)
    for (auto& v : row) v = zeroLanes();
  // The loops over v and i unrolled: without the pragmas GCC kept AVX-512's madd + add form (no
  // VNNI, -march=skylake-avx512) a loop over sums in memory.
  for (std::int64_t q = 0; q < pairs; ++q) {
    Lanes b[kNV];
#pragma GCC unroll 8
    for (int v = 0; v < kNV; ++v) b[v] = loadLanes(panel + 2 * (q * kPanelColumns + v * kLanes));
#pragma GCC unroll 8
    for (int i = 0; i < kMR; ++i) {
      const Lanes ai = broadcastPair(a + i * k + 2 * q);
#pragma GCC unroll 8
      for (int v = 0; v < kNV; ++v) acc[i][v] = pairDot(acc[i][v], ai, b[v]);
    }
  }
  for (int i = 0; i < kMR; ++i)
    for (int v = 0; v < kNV; ++v) storeLanes(sums[i] + v * kLanes, acc[i][v]);
}

/// The int32 sums the F32 output holds between blocks of k (their bits), at `at` of its row.
inline exact::i32x16 heldSums(const exact::HostRow::At& at, const float* row) {
  const exact::f32x16 bits = at.load(row);
  exact::i32x16 sums;
  std::memcpy(&sums, &bits, sizeof sums);
  return sums;
}
inline void holdSums(const exact::HostRow::At& at, float* row, exact::i32x16 sums) {
  exact::f32x16 bits;
  std::memcpy(&bits, &sums, sizeof bits);
  at.store(row, bits);
}

/// A micro-tile's sums after a block of k, for rows [row0, row0 + rows) and columns [j0, j0 +
/// columns), 16 columns at a time: added to the sums so far (unless firstK), which wait in the F32
/// output as int32 bits; then held there again, or (lastK) stored as Int8RowsProduct's values, the
/// lanes through int8ProductValue (the formula the scalar store and the GPU use).
// Not inlined: inside the items' loop it cost the AVX2 micro-kernel its registers (accumulators
// spilled to the stack: 393 -> 273 GFLOP/s at [512, 3072] x [3072, 3072]); a call a micro-tile is
// nothing beside its block of k.
__attribute__((noinline)) void finishTile(const Int8RowsProduct::Args& a,
                                          const std::int32_t (&sums)[kMR][kPanelColumns], std::int64_t row0, int rows,
                                          std::int64_t j0, std::int64_t columns, bool firstK, bool lastK) {
  for (int i = 0; i < rows; ++i) {
    const std::int64_t row = row0 + i;
    float* const outRow = static_cast<float*>(a.out) + row * a.n;
    for (std::int64_t c = 0; c < columns; c += 16) {
      const exact::HostRow::At at{j0 + c, std::min<std::int64_t>(16, columns - c), false};
      exact::i32x16 sum;
      std::memcpy(&sum, sums[i] + c, sizeof sum);
      if (!firstK) sum += heldSums(at, outRow);
      if (!lastK) {
        holdSums(at, outRow, sum);
        continue;
      }
      const exact::f32x16 bias = a.bias ? at.load(a.bias) : exact::f32x16{};
      const exact::f32x16 value = int8ProductValue(exact::toFloat(sum), exact::splat(a.sa[row]), at.load(a.sb),
                                                   a.bias ? &bias : nullptr);
      if (a.outBF16) at.store(static_cast<std::uint16_t*>(a.out) + row * a.n, value);
      else at.store(outRow, value);
    }
  }
}

/// The dot-product form, for few rows of a (decoding: a token, or a few sequences' tokens), where
/// the panels would cost more than they save: b's rows read once, as they are stored (no widened
/// copy, no panels), kDotColumns of them at a time against R widened rows of a, a sum in each lane
/// of each accumulator, its lanes added at the end (integers: any order).
/// kMostDotRows: up to how many rows of a the dot form is faster, measured on [m, 3072] x [3072,
/// 3072] with I8 weights (AMD Zen 5, 2 threads, best of 30 or 40): up to it the panels' packing of b
/// and their register block of kMR rows cost more than their faster arithmetic saves. With I4
/// weights (kMostDotRowsNibbles) the dot form's nibbles cost less, and it wins further.
#if defined(__AVX512BW__)
constexpr int kDotRows = 4, kDotColumns = 4;  // 16 sums + 4 of b + 1 of a: 21 of 32 registers
constexpr std::int64_t kMostDotRows = 8;      // 0.31 ms against 0.43 at 8 rows, 0.455 against 0.440 at 12
constexpr std::int64_t kMostDotRowsNibbles = 32;  // 0.78 ms against 0.84 at 32 rows, 1.15 against 1.05 at 48
#else
constexpr int kDotRows = 2, kDotColumns = 4;  // 8 sums + 4 of b + 1 of a: 13 of 16 registers
constexpr std::int64_t kMostDotRows = 4;      // 0.417 ms against 0.428 at 4 rows, 0.62 against 0.43 at 6
constexpr std::int64_t kMostDotRowsNibbles = 8;  // 0.58 ms against 0.77 at 8 rows, 0.90 against 0.72 at 12
#endif

/// A step's codes of a 4-bit row as stored, in dotBlock's split order (kNibbles): `half` 0 the
/// low nibbles of 2 kLanes bytes from byte p / 2 (codes p, p + 2, ...), 1 the high ones (codes
/// p + 1, p + 3, ...), each as its code + 8 in [0, 15] (the nibble with its top bit flipped):
/// unsigned, so no sign to extend.
inline Lanes nibblesAt(const void* row, std::int64_t p, int half) {
  const auto* at = static_cast<const std::uint8_t*>(row) + p / 2;
#if defined(__AVX512BW__)
  const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)), _mm256_set1_epi8(-0x78));
  const __m256i shifted = half ? _mm256_srli_epi16(v, 4) : v;
  return _mm512_cvtepu8_epi16(_mm256_and_si256(shifted, _mm256_set1_epi8(0x0F)));
#else
  const __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)), _mm_set1_epi8(-0x78));
  const __m128i shifted = half ? _mm_srli_epi16(v, 4) : v;
  return _mm256_cvtepu8_epi16(_mm_and_si128(shifted, _mm_set1_epi8(0x0F)));
#endif
}

/// out[i0 .. i0 + R, j0 .. j0 + kDotColumns) (the columns past n skipped): each b row's codes
/// against R widened rows of a, one accumulator a pair (row, column). kNibbles (b's codes I4):
/// b's nibbles are taken as they lie, code + 8 (nibblesAt), against a's rows widened in split
/// order (in each step of 4 kLanes codes, the even ones then the odd ones: splitRows), and the
/// sum corrected by -8 Σ a[i] (aSums): integers, so the same sums.
template <int R, bool kNibbles>
void dotBlock(const Int8RowsProduct::Args& a, const std::int16_t* wa, const std::int32_t* aSums, std::int64_t i0,
              std::int64_t j0) {
  const std::int64_t k = a.k;
  const void* b[kDotColumns];
  const int columns = static_cast<int>(std::min<std::int64_t>(kDotColumns, a.n - j0));
  // Past n, the last row again (its sums are not stored): every accumulator does the same work.
  for (int c = 0; c < kDotColumns; ++c)
    b[c] = static_cast<const std::uint8_t*>(a.b) + codeRowBytes(a.bCodes, k) * (j0 + std::min(c, columns - 1));
  Lanes acc[R][kDotColumns];
  for (auto& row : acc)
    for (auto& v : row) v = zeroLanes();
  constexpr int kHalves = kNibbles ? 2 : 1;
  for (std::int64_t p = 0; p < k; p += kHalves * 2 * kLanes)
    for (int half = 0; half < kHalves; ++half) {
      Lanes bv[kDotColumns];
#pragma GCC unroll 4
      for (int c = 0; c < kDotColumns; ++c) bv[c] = kNibbles ? nibblesAt(b[c], p, half) : codesAt(b[c], a.bCodes, p);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const Lanes ai = loadLanes(wa + (i0 + i) * k + p + half * 2 * kLanes);
#pragma GCC unroll 4
        for (int c = 0; c < kDotColumns; ++c) acc[i][c] = pairDot(acc[i][c], ai, bv[c]);
      }
    }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < columns; ++c)
      Int8RowsProduct::store(a, i0 + i, j0 + c, laneSum(acc[i][c]) - (kNibbles ? 8 * aSums[i0 + i] : 0));
}

/// dotBlock of R = rows (1 to R).
template <int R, bool kNibbles>
void dotRows(const Int8RowsProduct::Args& a, const std::int16_t* wa, const std::int32_t* aSums, std::int64_t i0,
             std::int64_t j0, std::int64_t rows) {
  if (rows == R) dotBlock<R, kNibbles>(a, wa, aSums, i0, j0);
  else if constexpr (R > 1) dotRows<R - 1, kNibbles>(a, wa, aSums, i0, j0, rows);
}

/// a's widened rows [rows, k] (in place) in dotBlock's split order, and each row's sum.
void splitRows(std::int16_t* wa, std::int64_t rows, std::int64_t k, std::int32_t* sums) {
  constexpr int kStep = 4 * kLanes;
  for (std::int64_t i = 0; i < rows; ++i) {
    std::int16_t* row = wa + i * k;
    std::int32_t sum = 0;
    for (std::int64_t p = 0; p < k; p += kStep) {
      std::int16_t step[kStep];
      for (int e = 0; e < kStep / 2; ++e) {
        step[e] = row[p + 2 * e];
        step[kStep / 2 + e] = row[p + 2 * e + 1];
      }
      for (int e = 0; e < kStep; ++e) sum += step[e];
      std::memcpy(row + p, step, sizeof step);
    }
    sums[i] = sum;
  }
}

void dotProduct(const Int8RowsProduct::Args& a) {
  detail::HostScratch<std::int16_t> wa(a.m * a.k);
  widenRows(a.a, a.aCodes, a.m, a.k, a.m, wa.data());
  const bool nibbles = a.bCodes == Codes::I4;
  std::int32_t aSums[kMostDotRowsNibbles] = {};  // the most rows the dot form takes (I4 weights)
  if (nibbles) splitRows(wa.data(), a.m, a.k, aSums);
  const std::int64_t groups = (a.n + kDotColumns - 1) / kDotColumns;
#pragma omp parallel for schedule(static)
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t i0 = 0; i0 < a.m; i0 += kDotRows) {
      const std::int64_t rows = std::min<std::int64_t>(kDotRows, a.m - i0), j0 = g * kDotColumns;
      if (nibbles) dotRows<kDotRows, true>(a, wa.data(), aSums, i0, j0, rows);
      else dotRows<kDotRows, false>(a, wa.data(), aSums, i0, j0, rows);
    }
}

}  // namespace

void Int8RowsProduct::host(const Args& a) {
  const std::int64_t m = a.m, n = a.n, k = a.k;
  if (m == 0 || n == 0) return;
  if (m <= (a.bCodes == Codes::I4 ? kMostDotRowsNibbles : kMostDotRows)) return dotProduct(a);
  const std::int64_t rowBlocks = (m + kMR - 1) / kMR, panels = (n + kPanelColumns - 1) / kPanelColumns;
  detail::HostScratch<std::int16_t> wa(rowBlocks * kMR * k);
  widenRows(a.a, a.aCodes, m, k, rowBlocks * kMR, wa.data());
  // kc: a micro-panel of kc values a quarter of L2 (a multiple of 256, at least 256). A BF16
  // output cannot hold a sum between blocks of k: one block of all k.
  const std::int64_t panelBytesPerValue = 2 * kPanelColumns;
  const std::int64_t kc =
      a.outBF16 ? k : std::clamp<std::int64_t>((detail::caches().l2 / 4) / panelBytesPerValue / 256 * 256, 256, k);
  // Items: (panel, range of row blocks), some 4 a thread where the panels alone are fewer.
  const int threads = omp_get_max_threads();
  const std::int64_t rowRanges = std::clamp<std::int64_t>((4 * threads + panels - 1) / panels, 1, rowBlocks);
  const std::int64_t items = panels * rowRanges;
  // Each thread's micro-panel block, in scratch from the host cache.
  detail::HostScratch<std::int16_t> panelBlocks(threads * kc * kPanelColumns);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t item = 0; item < items; ++item) {
    std::int16_t* const panel = panelBlocks.data() + omp_get_thread_num() * kc * kPanelColumns;
    const std::int64_t p = item / rowRanges, range = item % rowRanges;
    const std::int64_t j0 = p * kPanelColumns, columns = std::min<std::int64_t>(kPanelColumns, n - j0);
    const std::int64_t firstBlock = rowBlocks * range / rowRanges, lastBlock = rowBlocks * (range + 1) / rowRanges;
    for (std::int64_t k0 = 0; k0 < k; k0 += kc) {
      const std::int64_t len = std::min(kc, k - k0);
      const bool firstK = k0 == 0, lastK = k0 + len == k;
      packPanel(a.b, a.bCodes, n, k, j0, k0, len, panel);
      for (std::int64_t ib = firstBlock; ib < lastBlock; ++ib) {
        std::int32_t sums[kMR][kPanelColumns];
        microSums(wa.data() + ib * kMR * k + k0, k, panel, len / 2, sums);
        finishTile(a, sums, ib * kMR, static_cast<int>(std::min<std::int64_t>(kMR, m - ib * kMR)), j0, columns,
                   firstK, lastK);
      }
    }
  }
}

}  // namespace gizml::netops::quant

namespace gizml::netops {

namespace {

/// q: codes [rows, k] on a device (F32 integers in [-128, 127] on the host; I8 or I4 anywhere),
/// k a positive multiple of 256 up to kMostProductK; s: its scales, F32 [rows, 1].
void checkCodeRows(const char* fn, const char* qName, const Tensor& q, const char* sName, const Tensor& s) {
  detail::requireDefined(fn, qName, q);
  detail::requireRank(fn, qName, q, 2);
  const DType d = q.dtype();
  if (d != DType::I8 && d != DType::I4 && !(d == DType::F32 && q.device().isHost()))
    fail(fn, qName,
         std::string("expected codes as int8Rows gives them: I8 or I4") +
             (q.device().isHost() ? ", or F32 integers" : " on a GPU (F32 codes are the host's form)") + ", got " +
             dtypeName(d));
  const std::int64_t k = q.dim(1);
  if (k < 1 || k % 256 != 0 || k > quant::kMostProductK)
    fail(fn, qName,
         "expected rows of a positive multiple of 256 codes, at most " + std::to_string(quant::kMostProductK) +
             ", got shape " + shapeString(q.shape()));
  // A GPU reads the codes 16 bytes at a time: every row of whole 256 codes starts 16-byte aligned
  // where the first one does (any tensor gizml allocates, and its rows views).
  if (!q.device().isHost() && reinterpret_cast<std::uintptr_t>(q.raw()) % 16 != 0)
    fail(fn, qName, "expected codes starting 16-byte aligned on a GPU (a view into another tensor's rows?)");
  detail::requireDType(fn, sName, s, DType::F32);
  detail::requireShape(fn, sName, s, {q.dim(0), 1});
  if (d != DType::F32) return;
  // F32 codes: one vectorized pass over all (NaN fails the range), then, only where one is bad, a
  // second for the first bad one's place.
  const float* v = q.data<float>();
  const auto isCode = [](float c) { return (c >= -128.0f) & (c <= 127.0f) & (c == std::trunc(c)); };
  const std::int64_t count = q.numel();
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (std::int64_t i = 0; i < count; ++i) bad |= !isCode(v[i]);
  if (!bad) return;
  const std::int64_t i = std::find_if_not(v, v + count, isCode) - v;
  fail(fn, qName,
       "expected integer codes in [-128, 127], got " + std::to_string(v[i]) + " at [" + std::to_string(i / k) + ", " +
           std::to_string(i % k) + "]");
}

void checkProduct(const char* fn, const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb,
                  const Tensor& bias) {
  checkCodeRows(fn, "qa", qa, "sa", sa);
  checkCodeRows(fn, "qb", qb, "sb", sb);
  if (qb.dim(1) != qa.dim(1))
    fail(fn, "qb",
         "expected rows of qa's " + std::to_string(qa.dim(1)) + " codes, got shape " + shapeString(qb.shape()));
  detail::requireSameDevice(fn, {{"qa", &qa}, {"sa", &sa}, {"qb", &qb}, {"sb", &sb}});
  if (!bias.defined()) return;
  detail::requireDType(fn, "bias", bias, DType::F32);
  detail::requireShape(fn, "bias", bias, {qb.dim(0)});
  detail::requireSameDevice(fn, {{"qa", &qa}, {"bias", &bias}});
}

void productRun(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb, const Tensor& bias,
                const Tensor& out) {
  detail::run<quant::Int8RowsProduct>(
      detail::gpuOf(qa), {qa.raw(), quant::codesOf(qa.dtype()), sa.data<float>(), qb.raw(), quant::codesOf(qb.dtype()),
                          sb.data<float>(), qa.dim(0), qb.dim(0), qa.dim(1),
                          bias.defined() ? bias.data<float>() : nullptr, out.raw(), out.dtype() == DType::BF16});
}

}  // namespace

Tensor int8RowsProduct(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb, const Tensor& bias) {
  const char* fn = "gizml::netops::int8RowsProduct";
  checkProduct(fn, qa, sa, qb, sb, bias);
  Tensor out = Tensor::empty({qa.dim(0), qb.dim(0)}, DType::F32, qa.device());
  productRun(qa, sa, qb, sb, bias, out);
  return out;
}

void int8RowsProductInto(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb, const Tensor& out,
                         const Tensor& bias) {
  const char* fn = "gizml::netops::int8RowsProductInto";
  checkProduct(fn, qa, sa, qb, sb, bias);
  detail::requireDefined(fn, "out", out);
  if (out.dtype() != DType::F32 && out.dtype() != DType::BF16)
    fail(fn, "out", "expected dtype F32 or BF16, got " + dtypeName(out.dtype()));
  detail::requireShape(fn, "out", out, {qa.dim(0), qb.dim(0)});
  detail::requireSameDevice(fn, {{"qa", &qa}, {"out", &out}});
  detail::requireApart(fn, "out", out, {{"qa", &qa}, {"sa", &sa}, {"qb", &qb}, {"sb", &sb}, {"bias", &bias}});
  productRun(qa, sa, qb, sb, bias, out);
}

}  // namespace gizml::netops
