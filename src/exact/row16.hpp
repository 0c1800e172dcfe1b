// The shared row type (SPEC §1.3): a row's reductions and its per-element steps, written once for
// the two forms a row takes:
//   HostRow (host)  16 float lanes (f32x16) a step; lanes past the row's end take no step.
//   WarpRow (CUDA)  a half-warp: lane l walks elements l, l + 16, ...; then the tree 8, 4, 2, 1
//                   by shfl_xor, which is the SPEC's lane[i] += lane[i + h] (addition commutes).
// An op's row function is a template on the row type, called by the host's OpenMP loop (hostRows,
// below) and by the kernel (rowsKernel, core/cuda_rows.cuh), so its formula and its order are
// written once. The literal reference (tests/reference/) never uses this file: that is what makes
// "host = reference" a check.
//
// A row function sees
//   row.n                          the row's length
//   row.sum16(term)                sum16 of term(at) over the row
//   row.dot16(term)                dot16, term(at) returning factors(a, b)
//   row.reduce(out, step)          N sums in one pass: step(at, acc) updates acc[0 .. N)
//   row.forEach(body)              body(at) for each step, in order
//   row.forEachWide(body)          the same for a body that only loads, computes lane by lane and
//                                  stores (at most two values): the host hands it two whole steps
//                                  at once (a TwinAt, lanes f32x16x2, exact/twin.hpp) to interleave
//                                  their chains (without AVX-512 a pair's BF16 stores wait for the
//                                  next pair's: LateBF16); a GPU lane runs 4 steps with their stores held
//                                  until all 4 have loaded (WarpRow::HeldAt), from the row's end
//                                  (what a GPU's L2 still holds after the statistics' read)
//   row.argmax(x), row.maxValue(x) the SPEC's argmax of a row, and the value there
//   row.leader()                   true on one lane: the one that writes the row's scalars
//   row.ofLength(m)                the same form over m elements (a slice, a channel)
//   row.stepAt(i)                  the step at element i (16 i'), as forEach would hand it
// and `at`, one step's lanes: at.load(p), at.store(p, v), at.stream(p, v) (a streaming store
// where the host loop asked for them), at.oneHot(index) (1 at that element, else +0). A BF16 row
// is a std::uint16_t*: at.load widens it exactly, at.store rounds to BF16 (SPEC §1.4).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "exact/convert.hpp"
#include "exact/hd.hpp"
#include "exact/order.hpp"

namespace gizml::exact {

/// dot16's two factors of one step.
template <class F>
struct Factors {
  F a, b;
};
template <class F>
GIZML_HD Factors<F> factors(F a, F b) {
  return {a, b};
}

/// sum16 and dot16 of a row, on either form's reduce() (written once for both).
template <class Row>
struct RowSums {
  template <class Term>
  GIZML_HD float sum16(Term term) const {
    using At = typename Row::At;
    using F = typename Row::F;
    float s[1];
    static_cast<const Row&>(*this).reduce(s, [&](const At& at, F(&acc)[1]) { acc[0] = acc[0] + term(at); });
    return s[0];
  }
  template <class Term>
  GIZML_HD float dot16(Term term) const {
    using At = typename Row::At;
    using F = typename Row::F;
    float s[1];
    static_cast<const Row&>(*this).reduce(s, [&](const At& at, F(&acc)[1]) {
      const Factors<F> f = term(at);
      acc[0] = fmaLane(f.a, f.b, acc[0]);
    });
    return s[0];
  }
};

/// The row function of an op that reads its row twice, written once: its statistics, then its
/// values a step at a time (forEachWide: each element alone, so on a GPU 4 steps' loads are in
/// flight), on any form of row. The op gives what a GPU's block a row also takes
/// (core/cuda_row_blocks.cuh): stagedRow(a, r), the input read twice; statsOf(row, a, r, input),
/// the statistics with the row's pointers (a RowAt); values(at, a, rowAt), one step's values.
template <class Op, class Row>
GIZML_HD void statsThenValues(const Row& row, const typename Op::Args& a, std::int64_t r) {
  const auto v = Op::statsOf(row, a, r, Op::stagedRow(a, r));
  row.forEachWide([&](const auto& at) GIZML_HD_LAMBDA { Op::values(at, a, v); });
}

#if !defined(__CUDACC__)

// ---- the host's form ------------------------------------------------------------------------------

/// sum16's tree over the 16 lanes of an accumulator, in registers: each level adds the upper half
/// of the lanes left to the lower (lane[i] + lane[i + h], h = 8, 4, 2, 1: order.hpp's treeSum16,
/// the same additions). Through an array, as order.hpp's loop, it stored the lanes and read them
/// back at other offsets, which the core cannot forward from the store (a stall each level): on a
/// Zen 2, 2 threads, groupNorm + SiLU, whose 16 slices a group each end in two trees, [32, 96] / 32
/// (slices of 6 values) 34.1 -> 6.7 us a call, [64, 256] 24.5 -> 10.2, [512, 64] 29.9 -> 16.2;
/// [512, 4096] and the row norms' one tree a row the same within the noise.
inline float treeSum16(f32x16 acc) {
  using f32x4 = float __attribute__((vector_size(16)));
#if defined(__AVX512F__)
  using f32x8 = float __attribute__((vector_size(32)));
  const f32x8 eight = __builtin_shufflevector(acc, acc, 0, 1, 2, 3, 4, 5, 6, 7) +
                      __builtin_shufflevector(acc, acc, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  const f32x8 eight = acc.h[0] + acc.h[1];
#endif
  const f32x4 four =
      __builtin_shufflevector(eight, eight, 0, 1, 2, 3) + __builtin_shufflevector(eight, eight, 4, 5, 6, 7);
  const f32x4 two = four + __builtin_shufflevector(four, four, 2, 3, 2, 3);
  return two[0] + two[1];
}

#define GIZML_ROW inline __attribute__((always_inline))

/// 16 lanes stored as BF16 at p: each lane's floatToBF16 (bf16RoundedBits' high halves; with
/// AVX512_BF16, bf16Bits16).
GIZML_ROW void storeBF16x16(std::uint16_t* p, f32x16 v) {
#if defined(__AVX512BF16__)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16Bits16(v));
#else
  storeHigh16(p, bf16RoundedBits(v));
#endif
}

/// 16 lanes stored as BF16 at p (32-byte aligned) past the caches: storeBF16x16's bits. BF16
/// outputs large enough to stream (streamable) go past the caches as F32 ones do. (Without
/// AVX512_BF16, an x86-64-v4 build, the BF16 rounding is integer steps, streamed all the same since
/// stop 49: on a Xeon, 2 threads, out of place, BF16 pixelNorm [8, 384, 8192] 7.4 - 8.7 -> 3.6 - 3.8
/// ms, with SiLU 5.9 - 6.0 -> 5.0 - 5.1; groupNorm of [512, 48 x 1024] / 32 with a BF16 y 6.8 - 6.9
/// -> 5.6 - 5.9. Without AVX-512 too since stop 54: a Xeon, x86-64-v3, 2 threads, medians of 11,
/// two builds by turns: pixelNorm [8, 384, 8192] BF16 out of place 6.1 - 6.6 -> 4.2 - 4.3 ms, with
/// SiLU 9.3 - 9.6 -> 8.0 - 8.2; groupNorm with a BF16 y 5.8 - 6.3 -> 5.1 - 5.6 (with SiLU even,
/// 10.2 - 10.8); modulatedNorm [8192, 3072] with a BF16 y 5.9 - 6.1 -> 5.1 - 5.3, centered 6.9 - 7.8
/// -> 6.7 - 7.1.)
GIZML_ROW void streamBF16x16(std::uint16_t* p, f32x16 v) {
#if defined(__AVX512BF16__)
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), bf16Bits16(v));
#else
  streamHigh16(p, bf16RoundedBits(v));
#endif
}

/// 32 words at p, two a lane of `pairs` (its low half first in memory): past the caches where
/// `stream` (p then on 32 bytes; 64 bytes at once where it is on 64).
GIZML_ROW void storeWordPairs(std::uint16_t* p, u32x16 pairs, bool stream) {
#if defined(__AVX512F__)
  const __m512i words = (__m512i)pairs;
  if (!stream) return _mm512_storeu_si512(p, words);
  if (aligned64(p)) return _mm512_stream_si512(reinterpret_cast<__m512i*>(p), words);
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), _mm512_castsi512_si256(words));
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p + 16), _mm512_extracti64x4_epi64(words, 1));
#else
  auto* halves = reinterpret_cast<__m256i*>(p);
  if (stream) {
    _mm256_stream_si256(halves, (__m256i)pairs.h[0]);
    return _mm256_stream_si256(halves + 1, (__m256i)pairs.h[1]);
  }
  _mm256_storeu_si256(halves, (__m256i)pairs.h[0]);
  _mm256_storeu_si256(halves + 1, (__m256i)pairs.h[1]);
#endif
}

#if defined(__AVX512BF16__)
/// Two steps' lanes, lo then hi, stored as BF16 at p (32 words): storeBF16x16 of each, rounded
/// together (bf16Bits32); past the caches where `stream` (p then 32-byte aligned). TwinAt's BF16
/// stores take it, and pixelNorm's did until stop 56 (now storeBF16x32ByParity): on a Xeon (stop
/// 55), 1 thread, [1, 384, 256] in L2 out of place, BF16 pixelNorm 0.132 -> 0.119 ns a value, with
/// SiLU 0.414 -> 0.404; 2 threads, groupNorm + SiLU [512, 48 x 1024] / 32 with a BF16 y 7.2 - 7.8
/// -> 7.1 - 7.6 ms (without SiLU even).
GIZML_ROW void storeBF16x32(std::uint16_t* p, f32x16 lo, f32x16 hi, bool stream) {
  storeWordPairs(p, (u32x16)bf16Bits32(lo, hi), stream);
}
#endif

/// 32 BF16 values at p as F32 split by parity: `a` holds elements 0, 2, ..., 30, `b` 1, 3, ..., 31.
/// Each pair of words is one 32-bit lane, so the even element's value is that lane shifted up 16
/// and the odd one's that lane with its low half cleared: two instructions for 32 values, where
/// widening them in order takes four (AVX-512: vpmovzxwd and vpslld a vector; AVX2 twice that). For
/// a loop whose lanes are each their own (pixelNorm's pixels) the parity order serves as well as
/// any, and storeBF16x32ByParity puts the words back in order.
GIZML_ROW f32x16x2 loadBF16x32ByParity(const std::uint16_t* p) {
#if defined(__AVX512F__)
  const u32x16 pairs = (u32x16)_mm512_loadu_si512(p);
#else
  const auto* halves = reinterpret_cast<const __m256i*>(p);
  const u32x16 pairs((u32x8)_mm256_loadu_si256(halves), (u32x8)_mm256_loadu_si256(halves + 1));
#endif
  return {fromBits(pairs << 16), fromBits(pairs & 0xffff0000u)};
}
#if !defined(__AVX512BF16__)
/// The BF16 words of two vectors of numbers (no NaN) given as their F32 bits, the even one's in
/// each lane's low half and the odd one's in its high half (storeBF16x32ByParity's order): rounded
/// in 16-bit lanes. `high` holds each value's top word (its truncation), `low` its bottom word,
/// each in its place in the pair; round to nearest even adds 1 to `high` where low > 0x8000, or
/// low = 0x8000 and `high` is odd: where low + (high & 1) > 0x8000. That sum saturates at 0xffff
/// (still above); AVX2 compares words signed only, so there the sum's top bit is flipped first. The
/// carry runs into the exponent, up to inf, as floatToBF16's does. 8 (AVX-512) or 9 (AVX2, a half)
/// instructions where rounding each vector in 32-bit lanes and packing their top halves took 11: on
/// a Xeon (stop 57), 1 thread, BF16 pixelNorm [1, 384, 256] in L2 out of place, best of 6 rounds by
/// turns, x86-64-v3 0.205 -> 0.192 ns a value, x86-64-v4 0.108 -> 0.098 (with SiLU within the noise).
GIZML_ROW u32x16 bf16WordsOfNumbersByParity(u32x16 even, u32x16 odd) {
#if defined(__AVX512F__)
  constexpr __mmask32 kOddWords = 0xaaaaaaaau;  // each pair's high word
  const __m512i e = (__m512i)even, o = (__m512i)odd;
  const __m512i high = _mm512_mask_mov_epi16(_mm512_srli_epi32(e, 16), kOddWords, o);
  const __m512i low = _mm512_mask_mov_epi16(e, kOddWords, _mm512_slli_epi32(o, 16));
  const __m512i one = _mm512_set1_epi16(1);
  const __m512i sum = _mm512_adds_epu16(low, _mm512_and_si512(high, one));
  const __mmask32 up = _mm512_cmpgt_epu16_mask(sum, _mm512_set1_epi16(static_cast<short>(0x8000)));
  return (u32x16)_mm512_mask_add_epi16(high, up, high, one);
#else
  u32x16 words;
  for (int h = 0; h < 2; ++h) {
    const __m256i e = (__m256i)even.h[h], o = (__m256i)odd.h[h];
    const __m256i high = _mm256_blend_epi16(_mm256_srli_epi32(e, 16), o, 0xaa);
    const __m256i low = _mm256_blend_epi16(e, _mm256_slli_epi32(o, 16), 0xaa);
    const __m256i sum = _mm256_adds_epu16(low, _mm256_and_si256(high, _mm256_set1_epi16(1)));
    const __m256i flipped = _mm256_xor_si256(sum, _mm256_set1_epi16(static_cast<short>(0x8000)));
    const __m256i up = _mm256_cmpgt_epi16(flipped, _mm256_setzero_si256());  // -1 where it rounds up
    words.h[h] = (u32x8)_mm256_sub_epi16(high, up);
  }
  return words;
#endif
}
#endif

/// storeBF16x32's rounding of values split by parity as loadBF16x32ByParity splits them (even:
/// elements 0, 2, ..., 30; odd: 1, 3, ..., 31), stored in order. With AVX512_BF16, rounded together
/// (bf16Bits32), then one vpermw interleaves the words; else each rounded in integer steps
/// (bf16RoundedBits) and the even one's high half shifted down beside the odd one's, no shuffle at
/// all; where the caller has proven them no NaN (kNumbers), their words are rounded in place, in
/// 16-bit lanes (bf16WordsOfNumbersByParity: the same bits).
template <bool kNumbers = false>
GIZML_ROW void storeBF16x32ByParity(std::uint16_t* p, f32x16 even, f32x16 odd, bool stream) {
#if defined(__AVX512BF16__)
  alignas(64) static constexpr std::uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                                21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                                11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i order = _mm512_load_si512(kInterleave);
  storeWordPairs(p, (u32x16)_mm512_permutexvar_epi16(order, bf16Bits32(even, odd)), stream);
#else
  if constexpr (kNumbers) {
    storeWordPairs(p, bf16WordsOfNumbersByParity(toBits(even), toBits(odd)), stream);
  } else {
    const u32x16 e = bf16RoundedBits(even), o = bf16RoundedBits(odd);
    storeWordPairs(p, (e >> 16) | (o & 0xffff0000u), stream);
  }
#endif
}

struct HostRow : RowSums<HostRow> {
  using F = f32x16;
  std::int64_t n;
  bool streamStores;  // outputs far past the caches: at.stream() bypasses them

  GIZML_ROW HostRow(std::int64_t n_, bool streamStores_ = false) : n(n_), streamStores(streamStores_) {}

  /// Elements [i, i + count) of the row, count <= 16; the lanes past count load +0 and are never stored.
  struct At {
    std::int64_t i, count;
    bool streaming;
    GIZML_ROW F load(const float* row) const { return load16(row + i, count); }
    GIZML_ROW void store(float* row, F v) const { store16(row + i, v, count); }
    GIZML_ROW F load(const std::uint16_t* row) const {
      if (count == 16) return loadBF16x16(row + i);
      float wide[16] = {};
      for (std::int64_t l = 0; l < count; ++l) wide[l] = bf16ToFloat(row[i + l]);
      return load16(wide, 16);
    }
    GIZML_ROW void store(std::uint16_t* row, F v) const {
      if (count == 16) return storeBF16x16(row + i, v);
      float wide[16];
      store16(wide, v, 16);
      for (std::int64_t l = 0; l < count; ++l) row[i + l] = floatToBF16(wide[l]);
    }
    GIZML_ROW void stream(float* row, F v) const {
      if (streaming && count == 16) streamStore16(row + i, v);
      else store16(row + i, v, count);
    }
    /// BF16 lanes past the caches where asked (32 bytes, 32-byte aligned where the row starts on
    /// 64 bytes), else as store.
    GIZML_ROW void stream(std::uint16_t* row, F v) const {
      if (streaming && count == 16) return streamBF16x16(row + i, v);
      store(row, v);
    }
    GIZML_ROW F oneHot(std::int64_t index) const {
      const std::int64_t d = index - i;
      if (d < 0 || d >= count) return F{};
      return select(laneIndex() == static_cast<std::int32_t>(d), splat(1.0f), F{});
    }
  };

  GIZML_ROW bool leader() const { return true; }
  /// The same form over another length (a slice of a row, a channel of a group).
  GIZML_ROW HostRow ofLength(std::int64_t m) const { return HostRow{m, streamStores}; }
  /// The step whose lanes start at element i (a multiple of 16): what forEach hands its body there.
  GIZML_ROW At stepAt(std::int64_t i) const { return At{i, n - i < 16 ? n - i : 16, streamStores}; }

  /// reduce's N sums over a row of n values taken a step at a time, for a loop that drives them
  /// between its own work: next() while wholeStepsLeft(), then finish(out). reduce is this loop
  /// run alone, so a row's sums are the same whoever drives them.
  template <int N, class Step>
  struct Sums {
    std::int64_t n;
    Step step;
    std::int64_t i = 0;
    F acc[N] = {};
    GIZML_ROW bool wholeStepsLeft() const { return i + 16 <= n; }
    /// The whole step at element i.
    GIZML_ROW void next() {
      step(At{i, 16, false}, acc);
      i += 16;
    }
    /// The next `count` whole steps (as many as are left), their accumulators in locals: a loop
    /// that keeps a Sums across its own work would otherwise carry them through memory each step.
    GIZML_ROW void next(std::int64_t count) {
      F local[N];
      for (int k = 0; k < N; ++k) local[k] = acc[k];
      for (; count > 0 && i + 16 <= n; --count, i += 16) step(At{i, 16, false}, local);
      for (int k = 0; k < N; ++k) acc[k] = local[k];
    }
    /// The partial last step, if any, then each sum's tree.
    GIZML_ROW void finish(float (&out)[N]) {
      if (i < n) {
        // Lanes past the row keep their accumulators as they are, like the SPEC's lanes that have
        // no element there (an fma of +0 would turn a -0 lane into +0).
        F next[N];
        for (int k = 0; k < N; ++k) next[k] = acc[k];
        step(At{i, n - i, false}, next);
        const auto inRow = laneIndex() < static_cast<std::int32_t>(n - i);
        for (int k = 0; k < N; ++k) acc[k] = select(inRow, next[k], acc[k]);
      }
      for (int k = 0; k < N; ++k) out[k] = treeSum16(acc[k]);
    }
  };

  template <int N, class Step>
  GIZML_ROW void reduce(float (&out)[N], Step step) const {
    reduceWith(out, step, [](std::int64_t) {});
  }
  /// reduce, running side(i) after each whole step i: independent work (another row's) to fill
  /// the gaps of the sums' latency-bound chains. It changes nothing in the sums.
  /// With every > 1, side(i) runs after each `every` whole steps (and after the last), i the last
  /// one's element: between two, the sums' accumulators stay in locals (Sums::next(count)), where
  /// a side inlined into each step's loop had GCC carry them through memory every step.
  template <int N, class Step, class Side>
  GIZML_ROW void reduceWith(float (&out)[N], Step step, Side&& side, std::int64_t every = 1) const {
    Sums<N, Step&> sums{n, step};
    while (sums.wholeStepsLeft()) {
      if (every == 1) sums.next();
      else sums.next(every);
      side(sums.i - 16);
    }
    sums.finish(out);
  }

  template <class Body>
  GIZML_ROW void forEach(Body body) const {
    for (std::int64_t i = 0; i < n; i += 16) body(At{i, n - i < 16 ? n - i : 16, streamStores});
  }

  /// A pair of whole steps' BF16 values whose store waits for the next pair's (LateBF16::put), so
  /// that rounding them runs beside the next pair's arithmetic instead of after their own.
  ///
  /// Without AVX-512, rounding to BF16 is some 10 integer instructions a vector, and placed after a
  /// long chain (SiLU's exp and division) those wait in the out-of-order core's scheduler for the
  /// chain's end, where they fill it: on a Zen 2, 1 thread, in L1, SiLU of F32 values as twin steps
  /// stored as F32 took 0.48 ns a value, stored as BF16 0.81; each pair stored a pair later 0.66
  /// (in a buffer of 64 values, 0.65: registers or L1 alike). groupNorm + SiLU with a BF16 y,
  /// [512, 48 x 1024] / 32, 2 threads: 12.5 - 12.7 -> 11.3 - 11.6 ms in two rounds of pairs; the
  /// norms without SiLU the same within the noise. A body's values are its steps' alone
  /// (forEachWide's contract), so a store a step later writes the same bits to the same place.
  /// kStream: its stores go past the caches (a streamed output's), chosen with the loop
  /// (forEachWide), not a pair at a time: a flag tested at each store made groupNorm + SiLU with a
  /// BF16 y 4 - 5 % slower (a Xeon, x86-64-v3, 2 threads, streamed or not).
  template <bool kStream>
  struct LateBF16 {
    std::uint16_t* where = nullptr;  // the held pair's first element; null: none held
    f32x16x2 v;
    /// The held pair stored, `next` at `at` held in its place.
    GIZML_ROW void put(std::uint16_t* at, const f32x16x2& next) {
      flush();
      where = at;
      v = next;
    }
    GIZML_ROW void flush() {
      if (!where) return;
      if constexpr (kStream) {
        streamBF16x16(where, v.a);
        streamBF16x16(where + 16, v.b);
      } else {
        storeBF16x16(where, v.a);
        storeBF16x16(where + 16, v.b);
      }
      where = nullptr;
    }
  };
  /// Where forEachWide holds BF16 pairs (LateBF16): without AVX-512 only, where it was measured.
#if defined(__AVX512F__)
  static constexpr bool kLateBF16 = false;
#else
  static constexpr bool kLateBF16 = true;
#endif

  /// Two whole steps, elements [i, i + 32), as one: their lanes are an f32x16x2, so that a long
  /// per-element chain (SiLU's exp and division) runs as two interleaved chains (exact/twin.hpp).
  /// With `late`, the step's first BF16 store (a stream where kStream, else a store) goes through
  /// it (LateBF16::put); any other store is made at once.
  template <bool kStream>
  struct TwinAtOf {
    At lo, hi;
    LateBF16<kStream>* late = nullptr;
    mutable bool heldOne = false;  // whether this step's first BF16 store went to `late`
    GIZML_ROW f32x16x2 load(const float* row) const { return {lo.load(row), hi.load(row)}; }
    GIZML_ROW f32x16x2 load(const std::uint16_t* row) const { return {lo.load(row), hi.load(row)}; }
    template <class T>
    GIZML_ROW void store(T* row, const f32x16x2& v) const {
      if (held(row, v, false)) return;
#if defined(__AVX512BF16__)
      if constexpr (sizeof(T) == 2) return storeBF16x32(row + lo.i, v.a, v.b, false);
#endif
      lo.store(row, v.a);
      hi.store(row, v.b);
    }
    template <class T>
    GIZML_ROW void stream(T* row, const f32x16x2& v) const {
      if (held(row, v, lo.streaming)) return;
#if defined(__AVX512BF16__)
      if constexpr (sizeof(T) == 2) return storeBF16x32(row + lo.i, v.a, v.b, lo.streaming);
#endif
      lo.stream(row, v.a);
      hi.stream(row, v.b);
    }

   private:
    /// Whether v went to `late` (a BF16 row, the step's first such store, streamed or not as
    /// `late` stores).
    template <class T>
    GIZML_ROW bool held(T* row, const f32x16x2& v, bool streamed) const {
      if constexpr (sizeof(T) == 2 && kLateBF16) {
        if (late && !heldOne && streamed == kStream) {
          heldOne = true;
          late->put(row + lo.i, v);  // lo and hi are whole steps side by side
          return true;
        }
      }
      return false;
    }
  };
  using TwinAt = TwinAtOf<false>;
  /// forEach, the whole pairs of steps handed to body as a TwinAtOf, the rest (a last step, a
  /// partial one) as At: each element's steps are the same, in the same order. A pair's BF16
  /// values are stored during the next pair's (LateBF16) where kLateBF16.
  template <class Body>
  GIZML_ROW void forEachWide(Body body) const {
    if constexpr (kLateBF16)
      if (streamStores) return wideSteps<true>(body);
    wideSteps<false>(body);
  }
  /// forEachWide's loop; kStream: streamStores, known to be set (LateBF16's stores streamed).
  template <bool kStream, class Body>
  GIZML_ROW void wideSteps(Body& body) const {
    const bool streaming = kStream || streamStores;
    std::int64_t i = 0;
    LateBF16<kStream> late;
    for (; i + 32 <= n; i += 32)
      body(TwinAtOf<kStream>{At{i, 16, streaming}, At{i + 16, 16, streaming}, kLateBF16 ? &late : nullptr});
    late.flush();
    for (; i < n; i += 16) body(At{i, n - i < 16 ? n - i : 16, streaming});
  }
  /// forEachWide for a body whose loads sit in a loop of a run-time count (WarpRow's takes such a
  /// body an element a step); on the host forEachWide itself.
  template <class Body>
  GIZML_ROW void forEachWideByElement(Body body) const {
    forEachWide(body);
  }

  /// The lowest index of the row's largest non-NaN value; 0 for a row of NaN (SPEC §1.3).
  std::int64_t argmax(const float* x) const {
    const float m = maxOfLanes(x);
    // The first element equal to the maximum (+0 and -0 are equal: ties between them take the
    // lower index too). None is equal only when every value is NaN.
    for (std::int64_t i = 0; i < n; i += 16) {
      const i32x16 hit = load16(x + i, n - i) == m;
      for (std::int64_t l = 0; l < 16 && i + l < n; ++l)
        if (hit[l]) return i + l;
    }
    return 0;
  }

  /// x[argmax(x)], without the index's pass when the maximum's bits are its only ones (a zero's
  /// sign, or -inf that may stand for "every value is NaN", need the index).
  float maxValue(const float* x) const {
    const float m = maxOfLanes(x);
    return (m == 0.0f || m == -INFINITY) ? x[argmax(x)] : m;
  }

 private:
  /// The largest non-NaN value, -inf for a row of NaN (NaN is never greater: it never enters).
  float maxOfLanes(const float* x) const {
    const F negInf = splat(-INFINITY);
    F best = negInf;
    for (std::int64_t i = 0; i < n; i += 16) {
      F v = load16(x + i, n - i);
      if (n - i < 16) v = select(laneIndex() < static_cast<std::int32_t>(n - i), v, negInf);
      best = maxLane(v, best);  // v > best ? v : best
    }
    float m = -INFINITY;
    for (int l = 0; l < 16; ++l) m = best[l] > m ? best[l] : m;
    return m;
  }
};

/// A HostRow whose sums also run side(i) after each whole step i (HostRow::reduceWith): other work
/// (another row's, or prefetches) in the gaps of the sums' latency-bound chains. The sums are
/// HostRow's, bit for bit.
template <class Side>
struct SideRow : RowSums<SideRow<Side>> {
  using F = f32x16;
  using At = HostRow::At;
  std::int64_t n;
  HostRow base;
  Side& side;
  std::int64_t every = 1;
  template <int N, class Step>
  GIZML_ROW void reduce(float (&out)[N], Step step) const {
    base.reduceWith(out, step, side, every);
  }
};

/// The size from which the host takes data as past its caches: the L3 of one Zen 4 or 5 core
/// complex. Outputs this large are streamed (streamable), and some ops change their loop there.
constexpr std::int64_t kPastTheCaches = std::int64_t{32} << 20;  // bytes

/// Outputs this large (past any cache) are written with streaming stores (hostRows' streamStores,
/// at.stream) when every row starts on a 64-byte boundary. (The streaming stores are ordered
/// before other threads read the output by OpenMP's closing barrier, whose locked instructions
/// drain the write-combining buffers.)
inline bool streamable(const float* out, std::int64_t count, std::int64_t rowLength = 16) {
  return count * 4 >= kPastTheCaches && aligned64(out) && rowLength % 16 == 0;
}
/// The same for BF16 outputs (rows of whole 64-byte lines: 32 values).
inline bool streamable(const std::uint16_t* out, std::int64_t count, std::int64_t rowLength = 32) {
  return count * 2 >= kPastTheCaches && aligned64(out) && rowLength % 32 == 0;
}
/// The same for an op's one output, F32 y or BF16 yBF16 (the other null).
inline bool streamable(const float* y, const std::uint16_t* yBF16, std::int64_t count, std::int64_t rowLength) {
  return y ? streamable(y, count, rowLength) : yBF16 && streamable(yBF16, count, rowLength);
}

/// The work a host loop gives each of its threads at least, in a row norm's values (a value of
/// modulatedNorm, rmsNorm: a load, an fma and a few steps of arithmetic; an op whose values cost k
/// times that counts k for each). A parallel region with a second thread costs 1.2 - 2 us more than
/// none (2 threads, a Zen 2, OpenMP's default wait policy: each thread ~1 us of arithmetic took 3.0
/// us in one region against 1.8 us alone), so a second thread pays only past ~3 us of work. On
/// that Zen 2, one thread against two: modulatedNorm of [2, 3072] 1.95 against 4.19 us, [4, 3072]
/// 4.37 against 5.23, [8, 3072] 7.79 against 6.98; int8Rows (k = 3) of [16, 256] 2.82 against 4.27
/// us, [32, 256] 4.85 against 4.65; hadamardRows (k = 2) of [4, 3072] 5.35 against 4.54.
constexpr std::int64_t kWorkAThread = 16384;

/// Threads for a host loop over `items` pieces of work (rows: a piece never splits) of `work` in
/// all (kWorkAThread's units): OpenMP's thread count (gizml::setThreads), but at most one a piece
/// and one for each kWorkAThread (setHostWorkAThread), and at least 1. (core/threads.cpp)
int hostThreadsFor(std::int64_t items, std::int64_t work);
/// Tests: hostThreadsFor's work a thread from now on (>= 1; 1: every thread the items allow, so
/// that a test's small shapes split across threads too), kWorkAThread by default. No bit depends
/// on it, only which threads run which rows.
void setHostWorkAThread(std::int64_t work);

/// A row op's work on the host in kWorkAThread's units: rows n Kernel::costAValue(a) where the
/// kernel says what its value costs; a kernel that does not says nothing of its cost, and its loop
/// takes every thread its rows can use.
template <class Kernel>
std::int64_t hostWork(const typename Kernel::Args& a) {
  if constexpr (requires { Kernel::costAValue(a); }) return a.rows * a.n * Kernel::costAValue(a);
  else return INT64_MAX;
}

/// Whether the calling thread is in an active parallel region (a caller's own, gizml called from
/// its threads). (core/threads.cpp)
bool hostInParallel();

/// body() as one OpenMP parallel region of `threads` threads, whose worksharing loops (`omp for`
/// inside body) split among them; with 1 thread body() is called directly (a region even of one
/// thread costs ~0.3 us to open), where those loops run whole on the calling thread. Not inside a
/// caller's active region: there body's `omp for` would bind to the caller's team (each thread
/// taking its share of its own call's rows), so body runs in a region of its own, as with more
/// threads (one thread there unless the caller allowed nested parallelism).
template <class Body>
void hostParallel(int threads, Body&& body) {
  if (threads <= 1 && !hostInParallel()) {
    body();
    return;
  }
#pragma omp parallel num_threads(threads)
  body();
}

/// The host's loop over rows: OpenMP splits the rows, never a row, so the thread count changes no
/// bit. Kernel::Args holds `rows` and `n`; Kernel::row(HostRow, args, r) computes row r.
template <class Kernel>
void hostRows(const typename Kernel::Args& a, bool streamStores = false) {
  hostParallel(hostThreadsFor(a.rows, hostWork<Kernel>(a)), [&] {
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < a.rows; ++r) Kernel::row(HostRow{a.n, streamStores}, a, r);
    if (streamStores) streamFence();  // this thread's streaming stores, visible before the join
  });
}

/// The host's loop for a row op made of statistics (sums: chains of dependent adds or fmas, each
/// step waiting for the last) and then a pass of values: each thread runs its previous row's values
/// (Kernel::values, two steps at a time as forEachWide hands them) inside its row's statistics
/// (Kernel::stats on a SideRow), one in every 2 Kernel::sumPasses(a) of their steps (n / 32 against
/// n / 16 a pass), and the rest after them. The same statistics and the same values as
/// Kernel::row's, so the same bits as hostRows: only the order in which rows are finished moves.
/// Kernel gives stats(row, a, r) -> S (the statistics, and the row's pointers for its values),
/// sumPasses(a), and values(at, a, S) for an At or a TwinAt. Row r's values may overwrite what its
/// own statistics read, never another row's. ahead(r, i) runs after each whole sum step of row r
/// (element i of a pass): the caller's prefetches of what the thread reads next from memory.
template <class Kernel, class Ahead>
void hostRowsBeside(const typename Kernel::Args& a, bool streamStores, Ahead ahead) {
  using S = decltype(Kernel::stats(std::declval<const HostRow&>(), a, 0));
  // The values of a row still to come, from element i.
  struct Pending {
    const typename Kernel::Args& a;
    std::int64_t n, i;  // i >= n: none
    bool streamStores;
    S s;
    GIZML_ROW bool finished() const { return i >= n; }
    GIZML_ROW void step() {
      if (i + 32 <= n) {
        Kernel::values(HostRow::TwinAt{HostRow::At{i, 16, streamStores}, HostRow::At{i + 16, 16, streamStores}}, a, s);
        i += 32;
      } else {
        Kernel::values(HostRow::At{i, n - i < 16 ? n - i : 16, streamStores}, a, s);
        i += 16;
      }
    }
  };
  hostParallel(hostThreadsFor(a.rows, hostWork<Kernel>(a)), [&] {
    const HostRow row{a.n, streamStores};
    Pending pending{a, a.n, a.n, streamStores, S{}};
    const int every = 2 * Kernel::sumPasses(a);
#pragma omp for schedule(static) nowait
    for (std::int64_t r = 0; r < a.rows; ++r) {
      int wait = every;  // sum steps until the next value step
      auto side = [&](std::int64_t i) __attribute__((always_inline)) {
        ahead(r, i);
        if (--wait == 0) {
          wait = every;
          if (!pending.finished()) pending.step();
        }
      };
      const S s = Kernel::stats(SideRow<decltype(side)>{{}, a.n, row, side}, a, r);
      while (!pending.finished()) pending.step();
      pending.i = 0;
      pending.s = s;
    }
    while (!pending.finished()) pending.step();
    if (streamStores) streamFence();  // this thread's streaming stores, visible before the join
  });
}

#undef GIZML_ROW

#else  // __CUDACC__

// ---- the GPU's form: a half-warp -----------------------------------------------------------------------
// Its members are __host__ __device__ so that the GIZML_HD row functions instantiated with it
// compile in nvcc's host pass too; only the kernels run them.

/// Four floats at p (16-byte aligned; shared or global memory) in one 16-byte access, and back. The
/// simulator's threads are C++ code: copies, no type punning, and a trap where p is not aligned, as
/// a GPU's access would fault.
GIZML_HD float4 loadFloat4(const float* p) {
#if defined(GIZML_CUDA_SIM)
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) __trap();
  float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#else
  return *reinterpret_cast<const float4*>(p);
#endif
}
GIZML_HD void storeFloat4(float* p, const float4& v) {
#if defined(GIZML_CUDA_SIM)
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) __trap();
  std::memcpy(p, &v, sizeof v);
#else
  *reinterpret_cast<float4*>(p) = v;
#endif
}
/// storeFloat4 of an output that nothing reads back soon (streamStore: st.global.cs).
GIZML_HD void streamFloat4(float* p, const float4& v) {
#if defined(__CUDA_ARCH__) && !defined(GIZML_CUDA_SIM)
  __stcs(reinterpret_cast<float4*>(p), v);
#else
  storeFloat4(p, v);
#endif
}

/// Four BF16 values at p (8-byte aligned) as two words (element p[0] in the first's low half), in
/// one 8-byte access, and back: QuadAt's BF16 rows. As loadFloat4 in the simulator.
GIZML_HD uint2 loadBF16x4(const std::uint16_t* p) {
#if defined(GIZML_CUDA_SIM)
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) __trap();
  uint2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#else
  return *reinterpret_cast<const uint2*>(p);
#endif
}
GIZML_HD void storeBF16x4(std::uint16_t* p, const uint2& v, bool streaming) {
#if defined(GIZML_CUDA_SIM)
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) __trap();
  std::memcpy(p, &v, sizeof v);
#elif defined(__CUDA_ARCH__)
  if (streaming) __stcs(reinterpret_cast<uint2*>(p), v);
  else *reinterpret_cast<uint2*>(p) = v;
#else
  (void)streaming;
  *reinterpret_cast<uint2*>(p) = v;
#endif
}

/// *p = v for an output that nothing reads back soon (at.stream's): on a GPU st.global.cs, whose
/// line the L2 evicts first, so that a row op's output does not push out the input that its row's
/// second read (from the row's end: forEachWideFrom) looks for there. (The host's at.stream is
/// HostRow's: past the caches only where its loop asked.)
template <class T>
GIZML_HD void streamStore(T* p, T v) {
#if defined(__CUDA_ARCH__)
  __stcs(p, v);
#else
  *p = v;
#endif
}

struct WarpRow : RowSums<WarpRow> {
  using F = float;
  std::int64_t n;
  int lane;       // 0 .. 15
  unsigned mask;  // this half-warp's 16 lanes

  GIZML_HD WarpRow(std::int64_t n_, int lane_, unsigned mask_) : n(n_), lane(lane_), mask(mask_) {}

  struct At {
    std::int64_t i;
    GIZML_HD float load(const float* row) const { return row[i]; }
    GIZML_HD void store(float* row, float v) const { row[i] = v; }
    GIZML_HD float load(const std::uint16_t* row) const { return bf16ToFloat(row[i]); }
    GIZML_HD void store(std::uint16_t* row, float v) const { row[i] = floatToBF16(v); }
    /// v, a BF16 value already (roundToBF16Lanes' result), as BF16: store's bits without rounding
    /// again (bf16OfValue; some seven instructions a value fewer on a GPU), as an output that
    /// nothing reads back soon (streamStore).
    GIZML_HD void streamBF16Value(std::uint16_t* row, float v) const { streamStore(row + i, bf16OfValue(v)); }
    /// An output that nothing reads back soon: on a GPU a streaming store (streamStore).
    GIZML_HD void stream(float* row, float v) const { streamStore(row + i, v); }
    GIZML_HD void stream(std::uint16_t* row, float v) const { streamStore(row + i, floatToBF16(v)); }
    /// A row laid out otherwise than contiguously (a copy in shared memory laid out against bank
    /// conflicts: core/cuda_row_blocks.cuh's SwizzledBlocksRow): its element i is row.at(i).
    template <class Laid>
      requires requires(const Laid& laid) { laid.at(std::int64_t{}); }
    GIZML_HD float load(const Laid& row) const {
      return row.at(i);
    }
    GIZML_HD float oneHot(std::int64_t index) const { return i == index ? 1.0f : 0.0f; }
  };

  GIZML_HD bool leader() const { return lane == 0; }
  GIZML_HD WarpRow ofLength(std::int64_t m) const { return WarpRow{m, lane, mask}; }
  /// The step whose lanes start at element i (a multiple of 16): this lane's element i + lane.
  GIZML_HD At stepAt(std::int64_t i) const { return At{i + lane}; }

  /// sum16's tree across the half-warp; every lane ends with lane 0's value.
  GIZML_HD float tree(float v) const {
#if defined(__CUDA_ARCH__)
    for (int h = 8; h >= 1; h /= 2) v += __shfl_xor_sync(mask, v, h, 16);
#endif
    return v;
  }

  template <int N, class Step>
  GIZML_HD void reduce(float (&out)[N], Step step) const {
    float acc[N];
    for (int k = 0; k < N; ++k) acc[k] = 0.0f;
    GIZML_UNROLL(4)  // the loads of 4 steps in flight together (the chains stay in order)
    for (std::int64_t i = lane; i < n; i += 16) step(At{i}, acc);
    for (int k = 0; k < N; ++k) out[k] = tree(acc[k]);
  }

  template <class Body>
  GIZML_HD void forEach(Body body) const {
    for (std::int64_t i = lane; i < n; i += 16) body(At{i});
  }

  /// A step whose stores are held until flush(): forEachWide's. A body stores at most two values;
  /// each has a slot of its own (scalars, not an array indexed by a count: those stay in
  /// registers whatever branch a store was in).
  struct HeldAt : At {
    struct Slot {
      void* where;  // a float, or a BF16 value (std::uint16_t) where bf16
      float value;
      bool bf16;
      bool streaming;  // at.stream's (streamStore)
      GIZML_HD void write() const {
        if (bf16) {
          const std::uint16_t bits = floatToBF16(value);
          if (streaming) streamStore(static_cast<std::uint16_t*>(where), bits);
          else *static_cast<std::uint16_t*>(where) = bits;
        } else {
          if (streaming) streamStore(static_cast<float*>(where), value);
          else *static_cast<float*>(where) = value;
        }
      }
    };
    mutable Slot first{}, second{};
    mutable int held = 0;
    GIZML_HD void store(float* row, float v) const { hold({row + At::i, v, false, false}); }
    GIZML_HD void store(std::uint16_t* row, float v) const { hold({row + At::i, v, true, false}); }
    GIZML_HD void stream(float* row, float v) const { hold({row + At::i, v, false, true}); }
    GIZML_HD void stream(std::uint16_t* row, float v) const { hold({row + At::i, v, true, true}); }
    GIZML_HD void hold(const Slot& s) const {
#if defined(__CUDA_ARCH__)
      if (held == 2) __trap();  // a body with more stores than forEachWide holds
#endif
      if (held == 0) first = s;
      else second = s;
      ++held;
    }
    GIZML_HD void flush() const {
      if (held > 0) first.write();
      if (held > 1) second.write();
    }
  };
  /// forEach for a body that only loads, computes lane by lane and stores (HostRow's contract):
  /// a lane takes 4 of its steps at a time, their stores held until all 4 have loaded. A store
  /// may alias a later step's load as far as the compiler knows, so a plain loop waits out each
  /// step's load latency in turn; here 4 steps' loads are in flight together. The values and
  /// their order are each step's own: the same bits. (8 steps at a time measured slower on an
  /// H200: more registers, fewer rows resident.) QuadWarpRow's takes a lane's 4 consecutive
  /// elements a step instead (RowPlan::quads).
  template <class Body>
  GIZML_HD void forEachWide(Body body) const {
    forEachWideFrom(lane, 16, body);
  }
  /// forEachWide for a body whose loads sit in a loop of a run-time count: forEachWideFrom(lane,
  /// 16). (A quad keeps its first step's loads by their number, which such a loop leaves to run
  /// time: the kept loads would go to the stack. SiluMulRotatedInto took 158 registers and 192
  /// bytes of stack so, sm_90a.)
  template <class Body>
  GIZML_HD void forEachWideByElement(Body body) const {
    forEachWideFrom(lane, 16, body);
  }
  /// forEachWide's loop over elements first, first + stride, ... (< n; first < stride): also a
  /// whole block's (core/cuda_row_blocks.cuh, thread t of T taking t, t + T, ...), for a body whose
  /// values are its element's alone, so that any order gives the same bits.
  ///
  /// It runs the last step first, down to the first. A row's values come after its statistics,
  /// which read it from the start (a chain's order), and on a GPU that holds every row of a large
  /// tensor at once the L2 keeps only what was read last: the end of each row. Forwards, a row's
  /// second read began with its start, read longest ago and gone (an H200 read 201 MB for
  /// modulatedNorm's 100 MB of x), and by the time it reached the end that was gone too; from the
  /// end it finds what is still there first (not yet measured on a GPU: the next session's
  /// profile says the bytes read). A partial last step (n not a multiple of stride) is taken
  /// alone, so that the lanes' steps below it stay side by side.
  template <class Body>
  GIZML_HD void forEachWideFrom(std::int64_t first, std::int64_t stride, Body body) const {
    if (n <= 0) return;
    std::int64_t i = first + (n - 1) / stride * stride;  // this lane's element of the row's last step
    if (n % stride != 0) {
      if (i < n) body(At{i});
      i -= stride;
    }
    for (; i - 3 * stride >= first; i -= 4 * stride) {
      const HeldAt s0{{i}}, s1{{i - stride}}, s2{{i - 2 * stride}}, s3{{i - 3 * stride}};
      body(s0);
      body(s1);
      body(s2);
      body(s3);
      s0.flush();
      s1.flush();
      s2.flush();
      s3.flush();
    }
    for (; i >= first; i -= stride) body(At{i});
  }

  /// Each lane keeps its best (value, index), then the half-warp combines them; argmaxBetter is
  /// order-free, so this is the SPEC's argmax whatever the grouping.
  GIZML_HD std::int64_t argmax(const float* x) const {
    float best = NAN;
    long long at = n;  // "none yet"
    for (std::int64_t i = lane; i < n; i += 16)
      if (argmaxBetter(x[i], i, best, at)) {
        best = x[i];
        at = i;
      }
#if defined(__CUDA_ARCH__)
    for (int h = 8; h >= 1; h /= 2) {
      const float ov = __shfl_xor_sync(mask, best, h, 16);
      const long long oi = __shfl_xor_sync(mask, at, h, 16);
      if (argmaxBetter(ov, oi, best, at)) {
        best = ov;
        at = oi;
      }
    }
#endif
    return at == n ? 0 : at;
  }

  GIZML_HD float maxValue(const float* x) const { return x[argmax(x)]; }
};

/// A half-warp's row whose values walk (forEachWide) takes each lane's 4 consecutive elements a step
/// where it can: the row kernels' with kQuads (RowPlan::quads, core/cuda_rows.cuh). Everything else
/// is WarpRow's: its sums and their order, its steps' values and stores.
struct QuadWarpRow : WarpRow {
  GIZML_HD QuadWarpRow(std::int64_t n_, int lane_, unsigned mask_) : WarpRow(n_, lane_, mask_) {}
  GIZML_HD QuadWarpRow ofLength(std::int64_t m) const { return QuadWarpRow{m, lane, mask}; }

  /// The loads of a quad's first step, kept for the other three (QuadAt): load j of the body's
  /// first step, its 16 bytes (F32) or its first 8 (BF16), is load j of each other step's too.
  static constexpr int kQuadLoads = 8;
  struct QuadLoads {
    uint4 bits[kQuadLoads];
#if defined(GIZML_CUDA_SIM)
    const void* where[kQuadLoads];  // the row each was loaded from: the others' must be the same
#endif
  };
  /// One of 4 consecutive elements, i = 4 q + k, of the thread's quad q: forEachQuadFrom's step. Its
  /// step k = 0 loads the quad's 16 bytes (F32) or 8 (BF16) of each row in one access and keeps
  /// them (QuadLoads); steps 1 - 3 take element k of what step 0 kept, load by load in order (by
  /// forEachWide's contract each step loads the same rows in the same order). A store is held
  /// (HeldAt) until writeQuad writes the quad's 4 as one access. The same values of the same
  /// elements: only the accesses' width differs. (Left to the compiler, 4 loads of one float4, each
  /// giving one element, are narrowed to 4 loads of 4 bytes: sm_90a kept them so.) Every access on
  /// 16 (F32) or 8 (BF16) bytes: forEachWide asks quadsAligned first.
  struct QuadAt : HeldAt {
    int k;
    QuadLoads* kept;
    mutable int next = 0;  // this step's loads so far
    /// Load j of this step (j = next): row's quad's bits, loaded by step 0, kept for the others;
    /// past kQuadLoads loads each step loads its own element (`own`).
    template <class T, class Quad, class Own>
    GIZML_HD std::uint32_t bitsOf(const T* row, Quad quad, Own own) const {
      const int j = next++;
      if (j >= kQuadLoads) return own();
      if (k == 0) {
        kept->bits[j] = quad(row + At::i);
#if defined(GIZML_CUDA_SIM)
        kept->where[j] = row;
#endif
      }
#if defined(GIZML_CUDA_SIM)
      if (kept->where[j] != row) __trap();  // a body that loads other rows at other steps
#endif
      const uint4 b = kept->bits[j];
      return k == 0 ? b.x : k == 1 ? b.y : k == 2 ? b.z : b.w;
    }
    GIZML_HD float load(const float* row) const {
      return fromBits(bitsOf(
          row,
          [](const float* p) {
            const float4 v = loadFloat4(p);
            return uint4{toBits(v.x), toBits(v.y), toBits(v.z), toBits(v.w)};
          },
          [&] { return toBits(row[At::i]); }));
    }
    GIZML_HD float load(const std::uint16_t* row) const {
      // A BF16 quad's two words, each element's BF16 bits in the high half of its own.
      return fromBits(bitsOf(
          row,
          [](const std::uint16_t* p) {
            const uint2 v = loadBF16x4(p);
            return uint4{v.x << 16, v.x & 0xffff0000u, v.y << 16, v.y & 0xffff0000u};
          },
          [&] { return static_cast<std::uint32_t>(row[At::i]) << 16; }));
    }
    template <class Laid>
      requires requires(const Laid& laid) { laid.at(std::int64_t{}); }
    GIZML_HD float load(const Laid& row) const {
      return row.at(At::i);
    }
  };
  /// A step that runs a body for where it reads and writes, not for its values: whether each
  /// row it loads or stores starts on 16 bytes (F32) or 8 (BF16), so that every quad's access is
  /// (4 q elements on: a multiple of those). A laid-out row (shared memory) is never taken by quads.
  struct AlignProbe : At {
    bool* aligned;
    GIZML_HD void see(const void* p, std::uintptr_t bytes) const {
      *aligned = *aligned && reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
    }
    GIZML_HD float load(const float* row) const { return see(row, 16), 0.0f; }
    GIZML_HD float load(const std::uint16_t* row) const { return see(row, 8), 0.0f; }
    template <class Laid>
      requires requires(const Laid& laid) { laid.at(std::int64_t{}); }
    GIZML_HD float load(const Laid&) const {
      *aligned = false;
      return 0.0f;
    }
    GIZML_HD void store(float* row, float) const { see(row, 16); }
    GIZML_HD void store(std::uint16_t* row, float) const { see(row, 8); }
    GIZML_HD void stream(float* row, float) const { see(row, 16); }
    GIZML_HD void stream(std::uint16_t* row, float) const { see(row, 8); }
  };
  /// Whether forEachQuadFrom may take the row: n a multiple of 4 and every row that body reads and
  /// writes on its quads' bytes (AlignProbe; the body's values are left unused, so the compiler
  /// keeps only the addresses).
  template <class Body>
  GIZML_HD bool quadsAligned(Body body) const {
    if (n % 4 != 0) return false;
    bool aligned = true;
    body(AlignProbe{{0}, &aligned});
    return aligned;
  }
  /// The held stores of a quad's 4 steps (forEachQuadFrom), each slot as one 16- or 8-byte store: by
  /// forEachWide's contract every step stores the same outputs in the same order, each at its own
  /// element, so the 4 steps' slot k are 4 consecutive elements of one row (the simulator checks).
  GIZML_HD static void writeQuad(const HeldAt& s0, const HeldAt& s1, const HeldAt& s2, const HeldAt& s3) {
    const auto slot = [](const typename HeldAt::Slot& a, const typename HeldAt::Slot& b,
                         const typename HeldAt::Slot& c, const typename HeldAt::Slot& d) {
#if defined(GIZML_CUDA_SIM)
      const std::size_t size = a.bf16 ? 2 : 4;
      const char* at = static_cast<const char*>(a.where);
      for (const auto* o : {&b, &c, &d})
        if (o->bf16 != a.bf16 || o->streaming != a.streaming) __trap();
      if (b.where != at + size || c.where != at + 2 * size || d.where != at + 3 * size) __trap();
#endif
      if (a.bf16) {
        const uint2 v{packBF16(a.value, b.value), packBF16(c.value, d.value)};
        storeBF16x4(static_cast<std::uint16_t*>(a.where), v, a.streaming);
      } else {
        const float4 v{a.value, b.value, c.value, d.value};
        float* p = static_cast<float*>(a.where);
        if (a.streaming) streamFloat4(p, v);
        else storeFloat4(p, v);
      }
    };
#if defined(GIZML_CUDA_SIM)
    if (s1.held != s0.held || s2.held != s0.held || s3.held != s0.held) __trap();
#endif
    if (s0.held > 0) slot(s0.first, s1.first, s2.first, s3.first);
    if (s0.held > 1) slot(s0.second, s1.second, s2.second, s3.second);
  }
  /// forEachWideFrom(4 first, 4 stride) where n is a multiple of 4, a step a quad: the thread takes
  /// quads first, first + stride, ... (elements 4 q ... 4 q + 3), a quad's 4 steps loading before
  /// any stores (as forEachWideFrom's 4 steps: as many bytes in flight), from the row's end as
  /// forEachWideFrom. A half-warp's access is then 64 consecutive elements, where forEachWideFrom's
  /// is 16: a quarter of the load and store instructions, and of their address arithmetic.
  /// sm_90a, CUDA 13.0, ModulatedNorm's values (BF16 y): 91 instructions for a lane's 4 values
  /// where forEachWideFrom takes 107, at 48 registers either way; two quads in flight took 66 (and
  /// 8 16-byte loads in 166 instructions).
  template <class Body>
  GIZML_HD void forEachQuadFrom(std::int64_t first, std::int64_t stride, Body body) const {
    const std::int64_t quads = n / 4;
    std::int64_t q = first + (quads - 1) / stride * stride;  // this thread's quad of the last step
    if (q >= quads) q -= stride;
    GIZML_UNROLL(1)  // one quad in flight (nvcc unrolled two: 60 - 64 registers)
    for (; q >= first; q -= stride) {
      QuadLoads kept;
      const QuadAt s0{{{4 * q}}, 0, &kept}, s1{{{4 * q + 1}}, 1, &kept}, s2{{{4 * q + 2}}, 2, &kept},
          s3{{{4 * q + 3}}, 3, &kept};
      body(s0);
      body(s1);
      body(s2);
      body(s3);
      writeQuad(s0, s1, s2, s3);
    }
  }
  /// forEachQuadFrom if n is a multiple of 4 and body's rows are so aligned (quadsAligned), else
  /// WarpRow's forEachWideFrom: a whole block's steps (core/cuda_row_blocks.cuh) as a half-warp's.
  /// body loads the same rows in the same order at every step (at most kQuadLoads of them; more
  /// are each step's own) and stores the same outputs in the same order (HeldAt's two at most),
  /// as every forEachWide body does.
  template <class Body>
  GIZML_HD void forEachWideFrom(std::int64_t first, std::int64_t stride, Body body) const {
    if (quadsAligned(body)) return forEachQuadFrom(first, stride, body);
    WarpRow::forEachWideFrom(first, stride, body);
  }
  /// forEachWideFrom(lane, 16): the half-warp's.
  template <class Body>
  GIZML_HD void forEachWide(Body body) const {
    forEachWideFrom(lane, 16, body);
  }
};

#endif  // __CUDACC__

// ---- statistics on either form --------------------------------------------------------------------------

// x is a const float*, a const std::uint16_t* (a row of BF16 values), or on a GPU a row whose At::load
// takes it (WarpRow::At's laid-out rows).

/// layerNorm's row statistics: mean = sum16(x) / n; d = x - mean; var = dot16(d, d) / n;
/// rstd = 1 / sqrt(var + eps).
struct MeanRstd {
  float mean, rstd;
};
template <class Row, class X>
GIZML_HD MeanRstd layerNormStats(const Row& row, X x, float eps) {
  const float nf = static_cast<float>(row.n);
  const float mean = row.sum16([&](const auto& at) { return at.load(x); }) / nf;
  const float var = row.dot16([&](const auto& at) {
    const auto d = at.load(x) - mean;
    return factors(d, d);
  }) / nf;
  return {mean, 1.0f / sqrtf(var + eps)};
}

/// The RMS norm's scale: rsqrt(dot16(x, x) / n + eps), rsqrt(v) being 1 / sqrt(v).
template <class Row, class X>
GIZML_HD float rmsScale(const Row& row, X x, float eps) {
  const float meanSquare = row.dot16([&](const auto& at) {
    const auto v = at.load(x);
    return factors(v, v);
  }) / static_cast<float>(row.n);
  return 1.0f / sqrtf(meanSquare + eps);
}

}  // namespace gizml::exact
