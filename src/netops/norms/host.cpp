// The diffusion norms: argument checks, outputs, dispatch by device (core/dispatch.hpp), and the
// host paths (the row functions of norms.hpp over 16 float lanes, OpenMP over rows). They equal
// tests/reference/norms_reference.cpp bit for bit.
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/caches.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "exact/row16.hpp"
#include "exact/vec16.hpp"
#include "gizml/netops/norms.hpp"
#include "netops/norms/norms.hpp"

namespace gizml::netops {

// ---- host paths ---------------------------------------------------------------------------------------

namespace norms {

// modulatedNorm and gatedNormAdd, past the caches, run each row's values inside the thread's next
// row's sums (hostRowsBeside) and ask for the lines that the work after the current row reads from
// memory: for modulatedNorm the next row's x (its sums'), for gatedNormAdd the next row's y (its
// sums') and this row's x (its values', which run beside the next row's sums). Against each row's
// sums then its values (hostRows), [8192, 3072], 2 threads, on a Zen 5, the two in turn in one
// process, 30 pairs: modulatedNorm RMS faster in 30 of 30 (median 5.13 -> 4.42 ms), centered in 30
// of 30 (5.51 -> 3.95 ms), gatedNormAdd in 27 of 30 (4.56 -> 4.37 ms); the x86-64-v3 build on the
// same machine, best of 9 in interleaved runs: 4.2 - 4.5 -> 3.5 - 3.7, 4.9 - 5.3 -> 3.5 - 3.6 and
// 4.7 - 5.0 -> 3.6 - 3.7 ms. Without the prefetches the pipeline was slower than hostRows there
// (RMS 5.8 - 7.5 ms). In the caches hostRows was as fast or faster (x86-64-v3, 1 thread, 32 rows:
// RMS 16.8 against 20.0 us; 256 rows on 2 threads: 0.08 - 0.10 against 0.10 - 0.14 ms), so it
// stays below exact::kPastTheCaches read (32 MiB: the L3 of one Zen 4 or 5 core complex), as
// streamable does. (Not caches().l3: glibc reports the whole socket's, 384 MiB on that Zen 5,
// which no core sees all of.)
namespace {
bool pastTheCaches(std::int64_t bytes) { return bytes >= exact::kPastTheCaches; }

/// This thread's share [first, last) of `count` items, as OpenMP's static schedule deals them (the
/// first count % threads threads one more), for a loop that must know its thread's next item.
/// Inside a parallel region.
struct ThreadShare {
  std::int64_t first, last;
};
ThreadShare threadShare(std::int64_t count) {
  const std::int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
  const std::int64_t each = count / threads, extra = count % threads;
  const std::int64_t first = t * each + std::min(t, extra);
  return {first, first + each + (t < extra ? 1 : 0)};
}
}  // namespace

void ModulatedNorm::host(const Args& a) {
  // A y as large as a video model's activations is written past the caches (as layerNorm's). A
  // BF16 y too (with AVX-512; HostRow::At::stream): on a Zen 5, [8192, 3072], 2 threads,
  // streamed or not in turn in one process, 30 pairs: faster in 29 of 30 for RMS (median 3.02 ->
  // 2.77 ms) and 24 of 30 centered (3.64 -> 3.32).
  const bool stream = exact::streamable(a.y, a.yBF16, a.rows * a.n, a.n);
  if (!pastTheCaches(a.rows * a.n * 4)) return exact::hostRows<ModulatedNorm>(a, stream);
  const detail::LinePrefetch prefetch;
  exact::hostRowsBeside<ModulatedNorm>(a, stream, [&](std::int64_t r, std::int64_t i) __attribute__((always_inline)) {
    if (r + 1 < a.rows) prefetch(a.x + (r + 1) * a.n + i);
  });
}

void GatedNormAdd::host(const Args& a) {
  if (!pastTheCaches(a.rows * a.n * 6)) return exact::hostRows<GatedNormAdd>(a);
  const detail::LinePrefetch prefetch;
  exact::hostRowsBeside<GatedNormAdd>(a, false, [&](std::int64_t r, std::int64_t i) __attribute__((always_inline)) {
    prefetch(a.x + r * a.n + i);
    if (r + 1 < a.rows && i % 32 == 0) prefetch(a.y + (r + 1) * a.n + i);  // BF16: a line every 2 steps
  });
}

namespace {
/// One row's rotation (RowNormRope::row after its scale) a step of 16 pairs at a time, for heads
/// whose halves are whole steps: normRotateStep on head h's pairs e .. e + 15.
struct RopeWalker {
  std::uint16_t* v = nullptr;
  const float *w = nullptr, *cos = nullptr, *sin = nullptr;  // cos, sin: the row's
  float scale = 0.0f;
  std::int64_t head = 0, half = 0, n = 0;
  std::int64_t h = 0, e = 0;  // the next step's head and first pair

  bool finished() const { return h * head >= n; }
  void step() {
    normRotateStep(exact::HostRow::At{e, 16, false}, v + h * head, half, scale, w + h * head, cos + h * half,
                   sin + h * half);
    if ((e += 16) == half) {
      e = 0;
      ++h;
    }
  }
};
}  // namespace

// RowNormRope::row's steps in a pipeline where a head's halves are whole 16-lane steps (heads of
// 64, 128, 256, ...). The norm's sums are one chain of dependent fmas a row (dot16), which leaves
// the core idle between its steps; each thread fills those gaps with its previous row's rotation
// (one step every two of the sums: n / 32 against n / 16), and asks for this row's cos and sin
// (a 64-byte line a step), which its rotation reads next, and the next row's v (a line every two
// steps, detail::LinePrefetch), which the next row's sums read next. The rows' values are the row
// function's. On a Zen 4, 1 thread, 32 rows of 3072 in the caches: 17.7-18.3 -> 13.0-13.3 cycles a
// 16 values; 2 threads, [8192, 3072]: 6.5-6.9 -> 4.8-5.1 ms (with the cos / sin prefetches). On a
// Zen 5, [8192, 3072] BF16, with and without the next row's v asked for, in turn in one process, 30
// pairs: faster in 29 and 30 of 30 (median 3.44 -> 1.85 ms; 1 thread 7.03 -> 4.03 ms; the
// x86-64-v3 build 4.15 -> 3.00 ms): the sums' chain had waited on each line of v from memory. (cos
// and sin into L1 instead: no change.)
void RowNormRope::host(const Args& a) {
  const std::int64_t half = a.head / 2, pairs = a.n / 2;
  if (half % 16 != 0) return exact::hostRows<RowNormRope>(a);
  const detail::LinePrefetch prefetch;
  exact::hostParallel(exact::hostThreadsFor(a.rows, exact::hostWork<RowNormRope>(a)), [&] {
    RopeWalker pending;  // finished: no row yet
#pragma omp for schedule(static) nowait
    for (std::int64_t r = 0; r < a.rows; ++r) {
      std::uint16_t* v = a.v + r * a.stride;
      const float *cos = a.cos + r * pairs, *sin = a.sin + r * pairs;
      const char* cosSin[2] = {reinterpret_cast<const char*>(cos), reinterpret_cast<const char*>(sin)};
      const std::int64_t lines = (pairs * 4 + 63) / 64;  // of cos, and of sin
      std::int64_t step = 0;
      const char* nextV = r + 1 < a.rows ? reinterpret_cast<const char*>(v + a.stride) : nullptr;
      auto side = [&](std::int64_t) {
        if (step < 2 * lines) __builtin_prefetch(cosSin[step % 2] + 64 * (step / 2), 0, 2);
        if (nextV && step % 2 == 1 && 64 * (step / 2) < 2 * a.n) prefetch(nextV + 64 * (step / 2));
        if (++step % 2 == 0 && !pending.finished()) pending.step();
      };
      const float scale =
          exact::rmsScale(exact::SideRow<decltype(side)>{{}, a.n, exact::HostRow{a.n}, side}, v, a.eps);
      while (!pending.finished()) pending.step();
      pending = RopeWalker{v, a.w, cos, sin, scale, a.head, half, a.n};
    }
    while (!pending.finished()) pending.step();
  });
}

void GroupNormSlices::host(const Args& a) { exact::hostRows<GroupNormSlices>(a); }

namespace {

/// Whether groupNorm writes y past the caches: where y is as large as exact::streamable asks, and
/// not x itself. In place each line was just read into the caches, and streaming it back was
/// slower (as pixelNorm's): on a Xeon (AVX-512, 2 MiB L2 a core), 2 threads, in place, best of 7
/// in alternated runs of two builds, [512, 48 x 1024] / 32 6.5 - 6.8 -> 5.4 - 5.7 ms, [256, 48 x
/// 1024] 3.3 -> 2.0, [512, 96 x 1024] 13.3 -> 10.8 (with SiLU 15.2 - 15.5 -> 13.8 - 13.9); 1
/// thread, [512, 48 x 1024] 12.5 - 12.7 -> 10.1 - 10.2 (with SiLU 14.1 - 14.4 -> 11.5 - 12.4).
/// The one shape it did not help: [512, 48 x 1024] with SiLU on 2 threads, 7.3 - 7.9 against 7.5
/// - 8.2 ms.
bool groupNormStreams(const GroupNorm::Args& a) {
  return a.y != a.x && exact::streamable(a.y, a.yBF16, a.rows * a.n, a.n);
}

}  // namespace

void GroupNorm::host(const Args& a) { exact::hostRows<GroupNorm>(a, groupNormStreams(a)); }

namespace {

/// The sums of one group's slices (GroupNormSlices::row's, the same bits) a few steps at a time:
/// each slice's exact::HostRow::Sums in turn, its two sums stored as it ends.
class GroupSliceSums {
 public:
  /// Group g's slices; none for g < 0 (finished at once).
  GroupSliceSums(const GroupNormSlices::Args& a, std::int64_t g)
      : a_(a), s_(g < 0 ? 0 : g * kGroupSlices), end_(g < 0 ? 0 : (g + 1) * kGroupSlices), sums_(open(s_)) {}
  bool finished() const { return s_ >= end_; }
  /// The next `count` steps of 16 values, or fewer where the group ends; each slice's sums are
  /// stored as it ends.
  __attribute__((always_inline)) void steps(std::int64_t count) {
    while (count > 0 && !finished()) {
      if (sums_.wholeStepsLeft()) {
        const std::int64_t left = (sums_.n - sums_.i) / 16, taken = count < left ? count : left;
        sums_.next(taken);
        count -= taken;
      } else {
        float sums[2];
        sums_.finish(sums);
        GroupNormSlices::store(a_, s_, sums);
        if (++s_ < end_) sums_ = open(s_);
      }
    }
  }
  /// All the steps left.
  void finish() { steps(std::numeric_limits<std::int64_t>::max()); }

 private:
  using Sums = exact::HostRow::Sums<2, GroupNormSlices::SliceStep>;
  Sums open(std::int64_t s) const {
    if (s >= end_) return Sums{0, {nullptr}};
    std::int64_t length;
    const float* x = GroupNormSlices::slice(a_, s, length);
    return Sums{length, {x}};
  }
  const GroupNormSlices::Args& a_;
  std::int64_t s_, end_;
  Sums sums_;
};

}  // namespace

// A thread takes whole groups, in order: a group's values while its x is still in the caches (a
// group of a video model's [512, 48 x 1024] is 3 MB), so that x is read from memory once, not once
// a pass, and inside them the sums of its next group (GroupSliceSums): 8 of their steps (128
// values, read from memory) after each 128 of this group's values (from the caches, SiLU's
// arithmetic), so that the reads run beside the arithmetic; a thread's first group's sums run
// alone. On a Zen 5, [512, 48 x 1024] / 32, 2 threads, against each group's sums then its values,
// the two in turn in one process, 30 pairs a run: with SiLU faster in 12, 17, 18 and 24 of 30 (a tie
// at some hours), with SiLU and a BF16 y in 28 of 30 (median 5.09 -> 3.85 ms), in place in 29 of 30
// (4.81 -> 3.92), without SiLU in 24 of 30; 1 thread 7.63 -> 6.34 ms; without SiLU and a BF16 y
// slower (3.66 -> 3.95 ms, 29 of 30). Pieces of 64, 256 and 512 values lost to 128 (24, 29 and 30
// of 30), and single steps (32 values: the sums' registers pushed SiLU's constants out of theirs)
// were slower than none. In the caches about even (1 thread, [64, 4096] / 8 with SiLU: 14.7 cycles
// a 16 values against 14.4; 2 threads, 8 MB: faster in 25 - 28 of 30). The x86-64-v3 build, 20
// pairs: with SiLU 6.84 -> 5.52 ms, without 4.43 -> 4.10, BF16 y with SiLU 9.45 -> 8.52.
//
// A y as large as a video model's activations, apart from x, is written past the caches
// (groupNormStreams), as modulatedNorm's: its lines are then never read from memory before they are
// written. On a Zen 5, [512, 48 x 1024] / 32, 2 threads, streamed or not in turn in one process, 30
// pairs: faster in 28 of 30 with SiLU (best 5.55 -> 4.88 ms, median 5.79 -> 5.22) and in 29 of 30
// without (median 5.47 -> 5.06). A BF16 y streams by the same rule (with AVX-512): no difference
// measured there, 3.5 - 3.8 ms either way. Tried and dropped, each slower in such pairs: a group's
// channels run inside the next group's slice sums, as modulatedNorm's rows (slower in 30 of 30 with
// SiLU, 23 of 30 without: the SiLU's registers pushed the sums' accumulators to the stack), four
// slices' sums side by side (faster in 10 of 30 only), asking for the next group's values during a
// group's channels (slower in 29 of 30), and each channel followed by the next group's slices that
// it had asked for into L2 (slower in 19 - 20 of 20 with SiLU).
void groupNormHost(const GroupNormSlices::Args& slices, const GroupNorm::Args& channels) {
  const std::int64_t groups = slices.rows / kGroupSlices;
  if (groups < 2 * omp_get_max_threads()) {
    // Too few groups to keep every thread busy: each pass over all the rows.
    GroupNormSlices::host(slices);
    GroupNorm::host(channels);
    return;
  }
  constexpr std::int64_t kPiece = 128;  // values of a group between 8 steps of the next group's sums
  const bool stream = groupNormStreams(channels);
  const std::int64_t n = channels.n;
  exact::hostParallel(exact::hostThreadsFor(groups, exact::hostWork<GroupNorm>(channels)), [&] {
    const auto [first, last] = threadShare(groups);  // this thread's groups
    GroupSliceSums(slices, first < last ? first : -1).finish();
    for (std::int64_t g = first; g < last; ++g) {
      GroupSliceSums next(slices, g + 1 < last ? g + 1 : -1);
      const exact::MeanRstd st = GroupNorm::stats(channels, g * channels.perGroup);
      for (std::int64_t ch = g * channels.perGroup; ch < (g + 1) * channels.perGroup; ++ch)
        for (std::int64_t start = 0; start < n; start += kPiece) {
          GroupNorm::values(exact::HostRow{std::min(kPiece, n - start), stream}, channels, ch, start, st);
          next.steps(kPiece / 16);
        }
      next.finish();
    }
    if (stream) exact::streamFence();  // this thread's streaming stores, visible before the join
  });
}
static_assert(kGroupSlices == GROUP_SLICES, "the public constant is the kernel's");

namespace {

/// pixelNorm over runs of pixels of one frame x [c, pixels], 16 pixels a lane vector; each pixel's
/// chain is the GPU's (pixelNormPixels) step for step, over the channels in order. Which pixels
/// share a run or a block changes no bits: a pixel's chain is its own.
///
/// A thread's unit is a run: up to kMaxPixelRun pixels of one frame, taken a block of
/// kPixelBlockSteps steps (128 pixels) at a time. A block's sums, then its scales, stay in registers
/// across all c channels (GCC 12 keeps 5 of the 8 sums there, 3 on the stack): the first pass
/// loads a step and does one fma, the second loads, scales (SiLU) and stores. Held in an array and
/// walked a channel at a time over the whole run, they went through memory every step: on a Zen 4,
/// in L1, 4.4 cycles a 16 values for the first pass and 8-9 for the second without SiLU. In L2, 1
/// thread, [1, 192, 512] out of place without SiLU: 10.5 -> 7.9 cycles a 16 values (with SiLU
/// about 21 both ways); [8, 384, 8192] F32 in place, 2 threads, gizml_bench's best of 4
/// interleaved rounds: 5.99-7.57 -> 5.30-5.72 ms with SiLU, 4.85-5.99 -> 3.95-4.21 without.
constexpr std::int64_t kMaxPixelRun = 2048;
/// How many channels ahead pixelNorm's pipeline asks for the next block's values (its first
/// pass's; out's lines too, where its stores would read them) and for the block's own (its second
/// pass's): pixelNormThreadPipelined.
constexpr std::int64_t kSumsAhead = 8;
constexpr std::int64_t kValuesAhead = 2;
#if defined(__AVX512F__)
constexpr int kPixelBlockSteps = 8;
#else
constexpr int kPixelBlockSteps = 4;  // a step is two registers: 8 of 16 hold the sums
#endif
/// The run a thread takes: its c channels' values (c x run x the element's bytes) in three eighths
/// of one core's L2, read at run time, so that the run and the next one's values, asked for while
/// the run's second pass computes, fit there together (on a Zen 4, 1 MiB: 256 pixels of 384 F32
/// channels; a video model's [8, 384, 8192] on 2 threads took 4.75-4.80 ms with SiLU against
/// 4.9-5.1 with runs of 512 and 5.2-5.5 of 128). Where the channels lie a large power of two apart
/// (8192 F32 pixels: 32 KiB), that L2 (8 ways of 128 KiB; tensors on 2 MiB pages keep the
/// addresses' low bits) puts every fourth channel's values in the same few sets, which hold only a
/// part of the run: the rest comes back from L3. The sizes above were measured so. A power of two
/// from 128 to kMaxPixelRun.
std::int64_t pixelRun(std::int64_t c, std::int64_t elementBytes) {
  std::int64_t run = kMaxPixelRun;
  while (run > 16 * kPixelBlockSteps && c * run * elementBytes > detail::caches().l2 / 8 * 3) run /= 2;
  return run;
}

/// Asks for elements [0, count) of `row` into L2 (a line at a time, the last one's too).
template <class T>
void prefetchElements(const T* row, std::int64_t count) {
  if (count <= 0) return;
  const char* p = reinterpret_cast<const char*>(row);
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 0, 2);
  __builtin_prefetch(p + bytes - 1, 0, 2);
}

/// One channel's step of a whole block's first pass: the block's values of that channel at `in`
/// into its pixels' sums ss: step b's lanes pixels 16 b ... 16 b + 15. BF16 pixels go by parity
/// instead: ss[b] and ss[b + 1] (b even) hold pixels 16 b, 16 b + 2, ..., 16 b + 30 and 16 b + 1, ...,
/// 16 b + 31 (loadBF16x32ByParity: half the widening instructions), and pixelBlockValues keeps that
/// order. On a Xeon (stop 56), 1 thread, [1, 384, 256] in L2 out of place, four rounds of two builds
/// by turns: BF16 pixelNorm 0.122 -> 0.110 ns a value, with SiLU 0.406 -> 0.395; the x86-64-v4
/// build (no AVX512_BF16: storeBF16x32ByParity rounds in integer steps without a shuffle) 0.157 ->
/// 0.109 and 0.445 -> 0.403; x86-64-v3 (AVX2) even (0.21 and 0.58).
template <class T>
inline __attribute__((always_inline)) void pixelBlockSumsStep(const T* in, exact::f32x16 (&ss)[kPixelBlockSteps]) {
  using Step = exact::HostRow::At;
  if constexpr (sizeof(T) == 2) {
#pragma GCC unroll 8
    for (int b = 0; b < kPixelBlockSteps; b += 2) {
      const exact::f32x16x2 v = exact::loadBF16x32ByParity(in + 16 * b);
      ss[b] = pixelSquareStep(v.a, ss[b]);
      ss[b + 1] = pixelSquareStep(v.b, ss[b + 1]);
    }
    return;
  }
#pragma GCC unroll 8
  for (int b = 0; b < kPixelBlockSteps; ++b) ss[b] = pixelSquareStep(Step{16 * b, 16, false}.load(in), ss[b]);
}

/// A whole block's first pass: the sums of its pixels [0, 16 kPixelBlockSteps) of x (channel 0's
/// first pixel of the block; channel ch at + ch * pixels) over the c channels, into ss.
template <class T>
inline __attribute__((always_inline)) void pixelBlockSums(const PixelNorm::Args& a, const T* x,
                                                          exact::f32x16 (&ss)[kPixelBlockSteps]) {
#pragma GCC unroll 8
  for (int b = 0; b < kPixelBlockSteps; ++b) ss[b] = exact::f32x16{};
  for (std::int64_t ch = 0; ch < a.c; ++ch) pixelBlockSumsStep(x + ch * a.pixels, ss);
}

/// Whether every value y = x r of a whole block has |y| < 86, so that SiLU's exp may skip its test
/// of the lanes (pixelValue<true>, exact::siluLanesOfSmall: the same values), from the pixels'
/// sums ss and scales r alone. ss is the chain of fmas over the c channels from +0, each step
/// rounding its non-negative exact sum a to no less than a (1 - 2^-24) - 2^-150 (relative where
/// the result is normal, absolute in the subnormals), so each of the pixel's x has x^2 <= (ss + c
/// 2^-150) / (1 - c 2^-24); y = x r rounded once has y^2 <= x^2 r^2 (1 + 2^-23). The test takes
/// q = r r (ss + c 2^-149) rounded three times: c 2^-149 is exact for c < 2^22, ss + c 2^-149 is
/// exact in the subnormals (both multiples of 2^-149) or within 2^-24 relative, and r >= 2^-64 where
/// ss is finite, so r r >= 2^-128 is within 2^-22; q < 3698 then gives y^2 < 3698 (1 + 2^-21) / (1 -
/// c 2^-24) < 86^2 = 7396 for c < 2^22. A NaN or infinite x makes ss NaN or inf, and r = 1 /
/// sqrt(ss / c + eps) then NaN or 0 (q NaN: the test fails); r = inf (ss = 0, eps = 0) gives q =
/// inf. As r^2 ss is about c, blocks take it where c < 3698 (a video model's 128 - 1024 channels).
/// tests/norms_test.cpp's PixelNorm.SiluOfLargeValuesEqualsTheReference has pixels with |y| near
/// and past 86 (c = 8192) and spikes below (c = 3000).
///
/// Without AVX-512 the exp skips its test of the lanes there; with it, its clamp. On a Zen 2, 2
/// threads, [8, 384, 8192] with SiLU in place, three rounds of pairs: BF16 11.7 - 11.8 -> 10.6 -
/// 10.9 ms; F32 the same within the noise (9.5 - 9.9). On a Xeon (AVX-512), 1 thread, F32 [1, 384,
/// 256] in L2 out of place: 0.32 -> 0.27 ns a value (at [8, 384, 8192] F32 is bound by memory).
inline bool pixelValuesSmall(const exact::f32x16 (&ss)[kPixelBlockSteps],
                             const exact::f32x16 (&r)[kPixelBlockSteps], std::int64_t c) {
  if (c >= (std::int64_t{1} << 22)) return false;
  const float tiny = static_cast<float>(c) * 0x1p-149f;
  for (int b = 0; b < kPixelBlockSteps; ++b)
    if (!exact::allLanes((r[b] * r[b]) * (ss[b] + tiny) < 3698.0f)) return false;
  return true;
}

/// Whether 16 lanes round to BF16 in one instruction here (vcvtneps2bf16, exact/convert.hpp's
/// bf16Bits16), which can also be stored past the caches.
#if defined(__AVX512BF16__)
constexpr bool kBf16Instructions = true;
#else
constexpr bool kBf16Instructions = false;
#endif

/// How many channels of a block's BF16 values with SiLU pixelBlockValues holds as F32 before it
/// rounds and stores them: [8, 384, 8192] on a Zen 2, 2 threads, 4, 8 and 16 channels took 8.51 -
/// 8.54, 8.45 and 8.31 ms.
constexpr std::int64_t kHeldChannels = 16;

/// A whole block's second pass, from its sums ss: each channel's values into out, then beside(ch),
/// the thread's other work for that channel (the next run's prefetch, or the next block's first
/// pass).
///
/// kHeld (BF16 with SiLU): the values of kHeldChannels channels go to an F32 buffer in L1 (`held`),
/// and are rounded and stored after them in a loop of their own. Rounded as they came (each pair
/// during the next pair's SiLU, as HostRow::LateBF16 does), their ~10 integer instructions a vector
/// sat among SiLU's long chains, where they cost far more than alone: on a Zen 2, 1 thread, [1, 384,
/// 256] in L2 out of place, 0.69 ns a value against 0.54 with F32 frames (the rounding alone, in a
/// loop: 0.11). Held, and where a block's values are all numbers (pixelValuesSmall: every |y| < 86,
/// so every SiLU is finite) rounded without the NaN's test and select (bf16RoundedBitsOfNumbers: the
/// same bits): 0.62. [8, 384, 8192] in place, 2 threads, best of 7, three rounds of pairs: 9.40 -
/// 9.42 -> 8.32 - 8.33 ms. Without SiLU the rounding has no chains to wait among: stored as it
/// comes. (Frames that pixelNorm + SiLU has run on in place a thousand times are mostly subnormals,
/// which take BF16 frames 0.89 ns a value: time fresh frames.)
///
/// With AVX-512 (a streaming store where asked; with AVX512_BF16 one vcvtne2ps2bf16 a pair of
/// vectors since stop 55, exact::storeBF16x32ByParity since 56) holding them helps as well, and the
/// exp's clamp is left out where pixelValuesSmall holds: on a Xeon (~3.5 GHz), 1 thread, [1, 384,
/// 256] in L2 out of place, 0.43 -> 0.35 ns a value (an x86-64-v4 build, without AVX512_BF16: 0.49
/// -> 0.37); 2 threads, [8, 384, 8192] out of place, best of 7, three rounds: 5.52 - 5.86 -> 4.59 -
/// 4.89 ms (held but stored without streaming: 9.0 ms, each store reading its line first). On stop
/// 55's Xeon (~2.75 GHz under AVX-512), with the pairs, stored as they came was still slower than
/// held (0.43 against 0.405 ns a value; stop 56, by parity and `act` known: 0.41 against 0.39).
template <bool kHeld, class T, class Beside>
inline __attribute__((always_inline)) void pixelBlockValues(const PixelNorm::Args& a, const T* x, T* out,
                                                            const exact::f32x16 (&ss)[kPixelBlockSteps], bool stream,
                                                            Beside&& beside) {
  using Step = exact::HostRow::At;
  exact::f32x16 r[kPixelBlockSteps];
#pragma GCC unroll 8
  for (int b = 0; b < kPixelBlockSteps; ++b) r[b] = pixelScale(ss[b], a.c, a.eps);
  // Channel ch's values, two steps at a time (their chains interleaved: exact/twin.hpp), each pair
  // handed to put(two, b, v) (steps b and b + 1). BF16 values come split by parity
  // (loadBF16x32ByParity, as the first pass's pixelBlockSumsStep splits them, so r's lanes are
  // theirs) and are stored so (putPair).
  const auto values = [&](auto small, auto act, std::int64_t ch, auto&& put) __attribute__((always_inline)) {
    const T* in = x + ch * a.pixels;
#pragma GCC unroll 8
    for (int b = 0; b < kPixelBlockSteps; b += 2) {
      const exact::HostRow::TwinAt two{Step{16 * b, 16, stream}, Step{16 * b + 16, 16, stream}};
      exact::f32x16x2 v;
      if constexpr (sizeof(T) == 2) v = exact::loadBF16x32ByParity(in + 16 * b);
      else v = two.load(in);
      put(two, b, pixelValue<decltype(small)::value>(v, exact::f32x16x2{r[b], r[b + 1]}, decltype(act)::value));
    }
    beside(ch);
  };
  // Steps b and b + 1's values (BF16: the even and the odd pixels of the 32) into out's channel at o,
  // past the caches where asked. BF16 values proven numbers (`small`) are rounded without the NaN's
  // test where no instruction rounds them (storeBF16x32ByParity<true>: the same bits).
  const auto putPair = [&](auto small, T* o, int b, const exact::f32x16& lo, const exact::f32x16& hi)
                           __attribute__((always_inline)) {
    if constexpr (sizeof(T) == 2) {
      exact::storeBF16x32ByParity<decltype(small)::value>(o + 16 * b, lo, hi, stream);
    } else {
      Step{16 * b, 16, stream}.stream(o, lo);  // plain stores unless `stream`
      Step{16 * b + 16, 16, stream}.stream(o, hi);
    }
  };
  const auto channels = [&](auto small, auto act) __attribute__((always_inline)) {
    for (std::int64_t ch = 0; ch < a.c; ++ch) {
      T* o = out + ch * a.pixels;
      values(small, act, ch, [&](const exact::HostRow::TwinAt&, int b, const exact::f32x16x2& v)
                                 __attribute__((always_inline)) {
                                   putPair(small, o, b, v.a, v.b);
                                 });
    }
  };
  const auto heldChannels = [&](auto small, auto act) __attribute__((always_inline)) {
    constexpr int kBlock = 16 * kPixelBlockSteps;
    alignas(64) float held[kHeldChannels][kBlock];
    for (std::int64_t first = 0; first < a.c; first += kHeldChannels) {
      const std::int64_t count = std::min(kHeldChannels, a.c - first);
      for (std::int64_t k = 0; k < count; ++k)
        values(small, act, first + k, [&](const exact::HostRow::TwinAt&, int b, const exact::f32x16x2& v)
                                          __attribute__((always_inline)) {
                                            exact::storeAll16(held[k] + 16 * b, v.a);
                                            exact::storeAll16(held[k] + 16 * b + 16, v.b);
                                          });
      for (std::int64_t k = 0; k < count; ++k) {
        T* o = out + (first + k) * a.pixels;
#pragma GCC unroll 8
        for (int b = 0; b < kPixelBlockSteps; b += 2)
          putPair(small, o, b, exact::loadAll16(held[k] + 16 * b), exact::loadAll16(held[k] + 16 * b + 16));
      }
    }
  };
  // Without SiLU the test serves BF16 values' rounding alone (putPair), where no instruction rounds
  // them. On a Xeon, 1 thread, [1, 384, 256] in L2 out of place: the x86-64-v3 build 0.29 -> 0.21
  // ns a value, x86-64-v4 0.180 -> 0.154; 2 threads, medians of 11, three rounds of two builds by
  // turns, x86-64-v3 in place: [8, 384, 8192] 5.1 - 6.6 -> 4.2 - 4.3 ms, [8, 1024, 4096] 8.7 - 9.9
  // -> 7.2 - 7.7; out of place the same (bound by its stores, which read their lines first).
  const bool small = (a.act || (sizeof(T) == 2 && !kBf16Instructions)) && pixelValuesSmall(ss, r, a.c);
  // SiLU or not is known in the loops (`act`): the compiler tested a.act again at every pair of
  // steps (a load and a branch among SiLU's chains). On a Xeon (stop 56), 1 thread, [1, 384, 256] in
  // L2 out of place: F32 + SiLU 0.342 -> 0.321 ns a value (BF16 even, 0.39).
  const auto run = [&](auto act) __attribute__((always_inline)) {
    if constexpr (kHeld && sizeof(T) == 2) {
      if (small) heldChannels(std::true_type{}, act);
      else heldChannels(std::false_type{}, act);
    } else {
      if (small) channels(std::true_type{}, act);
      else channels(std::false_type{}, act);
    }
  };
  if constexpr (kHeld) run(std::true_type{});  // held: with SiLU only
  else if (a.act) run(std::true_type{});
  else run(std::false_type{});
}

/// One whole block: both passes. While the second pass computes, it asks for the next run's pixels
/// at the same place of that run (`next`, `nextCount` of them, at most a block's): the next run's
/// first pass then finds them in the caches, and the memory reads run beside the arithmetic.
template <class T>
void pixelNormBlock(const PixelNorm::Args& a, const T* x, T* out, const T* next, std::int64_t nextCount,
                    bool stream) {
  exact::f32x16 ss[kPixelBlockSteps];
  pixelBlockSums(a, x, ss);
  pixelBlockValues<false>(a, x, out, ss, stream, [&](std::int64_t ch) __attribute__((always_inline)) {
    prefetchElements(next + ch * a.pixels, nextCount);
  });
}

/// What is left of a run past its whole blocks: pixels [0, count) from x and out, count <
/// 16 kPixelBlockSteps, a step at a time (the last one partial where count is not a multiple of 16);
/// it asks for the rest of the next run as a block does (`next`, `nextCount` pixels: maybe more
/// than its own where this is a frame's short last run).
template <class T>
void pixelNormSteps(const PixelNorm::Args& a, const T* x, T* out, std::int64_t count, const T* next,
                    std::int64_t nextCount) {
  using exact::f32x16;
  const std::int64_t steps = (count + 15) / 16;
  const auto at = [&](std::int64_t s) {
    return exact::HostRow::At{16 * s, count - 16 * s < 16 ? count - 16 * s : 16, false};
  };
  f32x16 r[kPixelBlockSteps];
  for (std::int64_t s = 0; s < steps; ++s) r[s] = f32x16{};
  for (std::int64_t ch = 0; ch < a.c; ++ch)
    for (std::int64_t s = 0; s < steps; ++s) r[s] = pixelSquareStep(at(s).load(x + ch * a.pixels), r[s]);
  for (std::int64_t s = 0; s < steps; ++s) r[s] = pixelScale(r[s], a.c, a.eps);
  for (std::int64_t ch = 0; ch < a.c; ++ch) {
    prefetchElements(next + ch * a.pixels, nextCount);
    for (std::int64_t s = 0; s < steps; ++s)
      at(s).store(out + ch * a.pixels, pixelValue(at(s).load(x + ch * a.pixels), r[s], a.act));
  }
}

/// How pixelNorm's host paths cut the frames into runs of pixels (pixelRun's): run t is pixels
/// [firstPixel(t), + pixelsOf(t)) of frame t / runs (a frame's last run may be shorter), its first
/// value at element at(t) of x.
struct PixelRuns {
  const PixelNorm::Args& a;
  std::int64_t run, runs;
  PixelRuns(const PixelNorm::Args& args, std::int64_t run_)
      : a(args), run(run_), runs((args.pixels + run_ - 1) / run_) {}
  std::int64_t count() const { return a.frames * runs; }
  std::int64_t firstPixel(std::int64_t t) const { return (t % runs) * run; }
  std::int64_t pixelsOf(std::int64_t t) const { return std::min(run, a.pixels - firstPixel(t)); }
  std::int64_t at(std::int64_t t) const { return (t / runs) * a.c * a.pixels + firstPixel(t); }
};

/// pixelNorm of pixels [p0, p0 + count) of one frame (x, out: the frame's first value), count <=
/// kMaxPixelRun; `next` is the next run's first pixel, `nextCount` its pixels (0: none).
template <class T>
void pixelNormRun(const PixelNorm::Args& a, const T* x, T* out, std::int64_t p0, std::int64_t count, const T* next,
                  std::int64_t nextCount, bool stream) {
  constexpr std::int64_t block = 16 * kPixelBlockSteps;
  std::int64_t done = 0;
  for (; done + block <= count; done += block)
    pixelNormBlock(a, x + p0 + done, out + p0 + done, next + done, std::min(block, nextCount - done), stream);
  if (done < count) pixelNormSteps(a, x + p0 + done, out + p0 + done, count - done, next + done, nextCount - done);
}

/// A thread's runs [first, last) of pixelNorm with SiLU (without it too where PixelNorm::host
/// says), its whole blocks in a pipeline: each
/// block's second pass runs, channel by channel, the first pass of the thread's next whole block
/// (the next one of its run, or the first of its next run), so that the next block's reads from
/// memory run beside SiLU's arithmetic; a block whose sums no earlier block ran takes its own first.
/// The rest of a run past its whole blocks is pixelNormSteps'. Each pixel's chain is its own, so
/// which block runs beside which changes no bit. kHeld: BF16 values held a few channels
/// (pixelBlockValues), for SiLU.
///
/// Each channel's step asks (detail::LinePrefetch) for the next block's channel ch + kSumsAhead
/// (from memory) and for this block's channel ch + kValuesAhead (read by its first pass a block
/// ago: from L2 or L3). A channel's step of SiLU (a block's values: ~220 instructions on AVX2)
/// fills the out-of-order window of a Zen 2 alone, so without them its loads started one channel
/// ahead at most, and the pipeline waited out each one's latency. On a Zen 2 (AVX2), [8, 384, 8192]
/// F32 in place, 2 threads, best of 12: 17.4 ms without; the next block's channels 2, 4, 8 and 12
/// ahead: 14.2, 12.2, 11.1 and 11.8 ms; with 8 there, this block's 1, 2 and 3 ahead: 10.3 - 10.5,
/// 9.8 and 9.8 - 10.1 ms, against 11.0 - 11.2 without.
template <bool kHeld, class T>
void pixelNormThreadPipelined(const PixelNorm::Args& a, const T* x, T* out, const PixelRuns& runs, std::int64_t first,
                              std::int64_t last, bool stream) {
  constexpr std::int64_t block = 16 * kPixelBlockSteps;
  using exact::f32x16;
  f32x16 ss[kPixelBlockSteps];  // the sums of the block under way
  bool summed = false;          // whether the previous block ran them
  // Where each prefetch puts its lines: detail::LinePrefetch's choice (L1 where it holds 48 KiB or
  // more, else L2), but the next block's channels (from memory) into L1 in any case for F32 with
  // SiLU, whose long second pass keeps them waiting there. On a Zen 4 (32 KiB L1, 1 MiB L2), 2
  // threads, gizml_bench alternating two builds, three rounds: [8, 384, 8192] in place 6.5 - 6.9 ->
  // 4.7 - 4.8 ms (the copy 3.5 - 3.7 ms); medians of 13 calls alternated in one process: [8, 128,
  // 16384] in place 5.1 -> 3.3 ms, out of place 6.3 -> 3.8, [8, 1024, 4096] 10.7 -> 9.4, [4, 384,
  // 8192] out of place 3.8 - 4.4 -> 3.1 - 3.2; the x86-64-v3 build [8, 384, 8192] in place 6.9 ->
  // 5.7, out of place 7.7 -> 6.1. Where x is in L3 it moved either way from run to run ([2, 128,
  // 16384] out of place 1.2 - 1.4 -> 1.5 - 1.6 ms, [2, 384, 8192] 3.5 - 3.8 -> 3.1 - 3.3 in one run
  // and 2.2 -> 2.7 in another). BF16 with SiLU (bound by its arithmetic) and the runs without SiLU
  // were no faster so, or slower (BF16 in place without SiLU, x86-64-v3: 4.1 - 5.0 -> 5.7 - 6.7
  // ms), and this block's channels (from L2) into L1 too was slower for BF16: both keep the choice.
  const bool intoL1 = detail::LinePrefetch{}.intoL1;
  const detail::LinePrefetch nextBlockPrefetch{intoL1 || (a.act && sizeof(T) == 4)}, thisBlockPrefetch{intoL1};
  const auto prefetchBlockChannel = [&](const T* values, const detail::LinePrefetch& prefetch)
                                        __attribute__((always_inline)) {  // a block's, one channel
    const char* bytes = reinterpret_cast<const char*>(values);
#pragma GCC unroll 8
    for (std::size_t line = 0; line < block * sizeof(T); line += 64) prefetch(bytes + line);
  };
  // Out of place, and not past the caches (an out too small to stream), each store reads its line
  // first: it is asked for, with the intent to write, as far ahead (on a Zen 2, BF16 [8, 384, 8192]
  // with SiLU out of place, 2 threads: 31.6 -> 14.0 - 14.3 ms; 4 and 16 channels ahead did the
  // same).
  const bool readsOut = out != x && !stream;
  const auto prefetchBlockChannelForWrite = [&](T* values) __attribute__((always_inline)) {
    char* bytes = reinterpret_cast<char*>(values);
#pragma GCC unroll 8
    for (std::size_t line = 0; line < block * sizeof(T); line += 64) __builtin_prefetch(bytes + line, 1, 3);
  };
  // The thread's whole block after block k of run t (null: none before `last`).
  const auto blockAfter = [&](std::int64_t t, std::int64_t k) -> const T* {
    if (k + 1 < runs.pixelsOf(t) / block) return x + runs.at(t) + (k + 1) * block;
    if (t + 1 < last && runs.pixelsOf(t + 1) >= block) return x + runs.at(t + 1);
    return nullptr;
  };
  for (std::int64_t t = first; t < last; ++t) {
    const std::int64_t blocks = runs.pixelsOf(t) / block;
    for (std::int64_t k = 0; k < blocks; ++k) {
      const std::int64_t at = runs.at(t) + k * block;
      if (!summed) pixelBlockSums(a, x + at, ss);
      const T* next = blockAfter(t, k);  // the thread's next whole block
      // Without SiLU the block after it too is asked for, a block earlier than its own turn: a
      // second pass without SiLU is short, and one block ahead left the reads waiting. On a Zen 4,
      // 2 threads, medians of 11 calls alternated in one process, in place: [8, 384, 8192] BF16
      // 2.7 - 2.9 -> 1.8 - 2.0 ms, F32 4.5 - 4.9 -> 3.9 - 4.1; [8, 128, 16384] BF16 2.06 -> 1.73,
      // F32 2.82 -> 2.29; [8, 1024, 4096] BF16 3.98 -> 3.22, F32 6.54 -> 5.28; [1, 384, 8192] (in
      // L3) BF16 0.233 -> 0.254, F32 0.236 -> 0.225. The x86-64-v3 build, which takes this pipeline
      // out of place too: [8, 384, 8192] in place BF16 3.59 -> 2.97, F32 5.88 -> 4.06, out of place
      // 4.94 -> 4.17 and 5.80 -> 4.12; [8, 1024, 4096] in place 6.95 -> 4.49 and 8.14 -> 5.39.
      // With SiLU it was slower (F32 [8, 384, 8192] in place 5.1 - 5.2 -> 5.3 - 5.5 ms). Where the
      // prefetches go into L1 (48 KiB or more) it was slower too, into L1 or L2: on a Xeon (48 KiB
      // L1, 2 MiB L2), 2 threads, medians of 15 alternated calls, in place, without it: [8, 384,
      // 8192] BF16 4.0 - 4.5 -> 2.6 - 3.1 ms, F32 5.9 - 7.0 -> 5.2 - 5.6; [8, 1024, 4096] BF16 6.2
      // -> 4.3, F32 10.6 -> 8.2; [1, 384, 8192] BF16 0.44 -> 0.33; the x86-64-v3 build F32 in place
      // 7.2 -> 4.5, out of place 7.9 -> 5.2 (BF16 even). So only a small L1 (a Zen 4's) asks for it.
      const T* after = a.act || intoL1 || !next ? nullptr
                       : k + 1 < blocks       ? blockAfter(t, k + 1)
                                              : blockAfter(t + 1, 0);
      f32x16 nextSs[kPixelBlockSteps];
#pragma GCC unroll 8
      for (int b = 0; b < kPixelBlockSteps; ++b) nextSs[b] = f32x16{};
      pixelBlockValues<kHeld>(a, x + at, out + at, ss, stream, [&](std::int64_t ch) __attribute__((always_inline)) {
        if (ch + kValuesAhead < a.c) prefetchBlockChannel(x + at + (ch + kValuesAhead) * a.pixels, thisBlockPrefetch);
        if (readsOut && ch + kSumsAhead < a.c) prefetchBlockChannelForWrite(out + at + (ch + kSumsAhead) * a.pixels);
        if (!next) return;
        if (ch + kSumsAhead < a.c) {
          prefetchBlockChannel(next + (ch + kSumsAhead) * a.pixels, nextBlockPrefetch);
          if (after) prefetchBlockChannel(after + (ch + kSumsAhead) * a.pixels, nextBlockPrefetch);
        }
        pixelBlockSumsStep(next + ch * a.pixels, nextSs);
      });
#pragma GCC unroll 8
      for (int b = 0; b < kPixelBlockSteps; ++b) ss[b] = nextSs[b];
      summed = next != nullptr;
    }
    const std::int64_t done = blocks * block, rest = runs.pixelsOf(t) - done;
    if (rest > 0) pixelNormSteps(a, x + runs.at(t) + done, out + runs.at(t) + done, rest, x, 0);
  }
}

}  // namespace

void PixelNorm::host(const Args& a) {
  // OpenMP splits the (frame, run of pixels) pairs; a pixel's chain never leaves its lane.
  const PixelRuns runs(a, pixelRun(a.c, a.bf16 ? 2 : 4));
  // An out as large as a video model's activations, apart from x, is written past the caches (as
  // groupNorm's y). On a Zen 5, [8, 384, 8192] F32, 2 threads, streamed or not in turn in one
  // process, 30 pairs: faster in 29 of 30 with SiLU (median 5.89 -> 4.67 ms) and in 30 of 30
  // without (4.24 -> 3.19). In place the line was just read into the caches, and streaming it was
  // slower (faster in 5 and 6 of 30): those stores stay as they were. BF16 [16, 384, 8192] out of
  // place, best of 9 in interleaved runs: 6.0 - 6.2 -> 4.6 - 4.8 ms, with SiLU 7.7 - 8.4 -> 7.0 -
  // 7.3 ms.
  const std::int64_t values = a.frames * a.c * a.pixels;
  const bool stream = a.out != a.x && (a.bf16 ? exact::streamable(static_cast<std::uint16_t*>(a.out), values, a.pixels)
                                              : exact::streamable(static_cast<float*>(a.out), values, a.pixels));
  // With SiLU a thread's blocks run in a pipeline (pixelNormThreadPipelined): on a Zen 5, [8, 384,
  // 8192], 2 threads, against the runs below in turn in one process, 30 pairs: F32 in place faster
  // in 30 of 30 (median 3.54 -> 2.40 ms), out of place 30 of 30 (3.58 -> 2.45), BF16 in place 29 of
  // 30 (4.14 -> 3.27) and out of place 30 of 30 (4.14 -> 3.26); 1 thread, F32 in place, 7.26 -> 4.72
  // ms; in the caches faster too (1 thread, [1, 192, 512] out of place: 19.5 -> 17.6 us). Without
  // SiLU, where the second pass has little arithmetic to hide the reads behind, F32 in place was
  // slower (1.99 -> 2.91 ms, 30 of 30; BF16 1.19 -> 1.15): with AVX-512 those took the runs below.
  // Without it they take the pipeline too since it asks for its values ahead (kSumsAhead): on a Zen
  // 2 (AVX2), [8, 384, 8192], 2 threads, best of 12, F32 in place 10.0 - 11.0 -> 5.3 - 5.6 ms, out
  // of place 9.2 - 10.6 -> 5.4 - 5.8; BF16 in place 12.7 - 13.5 -> 8.7 - 8.8, out of place 24.1 -
  // 24.6 -> 7.4 - 7.5 (the Zen 5's AVX-512 runs above predate those prefetches; not measured again).
  // With AVX-512 the pipeline without SiLU is taken in place. On a Xeon (AVX-512 with AVX512_BF16, 2
  // MiB L2 a core), 2 threads, best of 7 in alternated runs of two builds, it won there at every size:
  // [8, 384, 8192] F32 6.4 - 7.8 -> 4.8 - 6.3 ms, BF16 4.1 - 5.0 -> 2.2 - 2.7; [1, 384, 8192] F32
  // 0.56 - 0.58 -> 0.48; 1 thread, [1, 384, 256] 9.3 us -> 8.5 - 8.8. Out of place it was no better:
  // streamed ([8, 384, 8192]) F32 2 - 5 % faster, BF16 3.0 - 3.4 against 2.9 - 3.7 ms, and in the
  // caches slower (F32 [1, 384, 8192] 0.70 - 0.78 -> 0.85 - 0.87 ms, [1, 16, 8192] 9.9 -> 11.0 us).
#if defined(__AVX512F__)
  const bool pipelineWithoutSiLU = a.out == a.x;
#else
  constexpr bool pipelineWithoutSiLU = true;
#endif
  const int threads = exact::hostThreadsFor(runs.count(), PixelNorm::costAValue(a) * values);
  if (a.act || pipelineWithoutSiLU) {
    exact::hostParallel(threads, [&] {
      const auto [first, last] = threadShare(runs.count());  // this thread's runs
      if (a.bf16 && a.act)  // BF16 values held a few channels (pixelBlockValues) with SiLU only
        pixelNormThreadPipelined<true>(a, static_cast<const std::uint16_t*>(a.x), static_cast<std::uint16_t*>(a.out),
                                       runs, first, last, stream);
      else if (a.bf16)
        pixelNormThreadPipelined<false>(a, static_cast<const std::uint16_t*>(a.x), static_cast<std::uint16_t*>(a.out),
                                        runs, first, last, stream);
      else
        pixelNormThreadPipelined<false>(a, static_cast<const float*>(a.x), static_cast<float*>(a.out), runs, first,
                                        last, stream);
      if (stream) exact::streamFence();  // this thread's streaming stores, visible before the join
    });
    return;
  }
  exact::hostParallel(threads, [&] {
#pragma omp for schedule(static) nowait
    for (std::int64_t t = 0; t < runs.count(); ++t) {
      const std::int64_t p0 = runs.firstPixel(t), count = runs.pixelsOf(t), base = runs.at(t) - p0;
      // The run after this one (the thread's next with a static schedule, but at its end), whose
      // values pass 2 prefetches; none after the last.
      const std::int64_t u = t + 1 < runs.count() ? t + 1 : t;
      const std::int64_t nextAt = runs.at(u), nextCount = u == t ? 0 : runs.pixelsOf(u);
      if (a.bf16) {
        const auto* x = static_cast<const std::uint16_t*>(a.x);
        pixelNormRun(a, x + base, static_cast<std::uint16_t*>(a.out) + base, p0, count, x + nextAt, nextCount, stream);
      } else {
        const auto* x = static_cast<const float*>(a.x);
        pixelNormRun(a, x + base, static_cast<float*>(a.out) + base, p0, count, x + nextAt, nextCount, stream);
      }
    }
    if (stream) exact::streamFence();  // this thread's streaming stores, visible before the join
  });
}

}  // namespace norms

// ---- argument checks ------------------------------------------------------------------------------------

namespace {

/// x [rows, width] F32, width >= 1.
void checkRowMatrix(const char* fn, const char* arg, const Tensor& x) {
  detail::requireDType(fn, arg, x, DType::F32);
  detail::requireRank(fn, arg, x, 2);
  if (x.dim(1) < 1) fail(fn, arg, "expected rows of at least one value, got shape " + shapeString(x.shape()));
}

/// A modulation table [mods, width] F32, mods >= 1.
void checkModulation(const char* fn, const char* arg, const Tensor& t, std::int64_t width) {
  detail::requireDType(fn, arg, t, DType::F32);
  detail::requireRank(fn, arg, t, 2);
  if (t.dim(0) < 1 || t.dim(1) != width)
    fail(fn, arg, "expected shape [mods >= 1, " + std::to_string(width) + "], got " + shapeString(t.shape()));
}

/// map [rows] F32; on the host every entry an integer in [0, mods) (a GPU's kernel checks its own).
void checkMap(const char* fn, const Tensor& map, std::int64_t rows, std::int64_t mods) {
  detail::requireVector(fn, "map", map, rows);
  if (!map.device().isHost()) return;
  const float* m = map.data<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const long long i = norms::mapIndex(m[r]);
    if (i < 0 || i >= mods)
      fail(fn, "map", "expected integers in [0, " + std::to_string(mods) + "), got " + std::to_string(m[r]) +
                          " at row " + std::to_string(r));
  }
}

}  // namespace

// ---- the ops ---------------------------------------------------------------------------------------------

norms::ModulatedNorm::Args norms::checkModulated(const char* fn, const Tensor& x, const Tensor& w, const Tensor& shift,
                                                 const Tensor& scale, const Tensor& map, double eps, bool centered) {
  checkRowMatrix(fn, "x", x);
  const std::int64_t rows = x.dim(0), n = x.dim(1);
  detail::requireVector(fn, "w", w, n);
  checkModulation(fn, "shift", shift, n);
  detail::requireShape(fn, "scale", scale, shift.shape());
  detail::requireDType(fn, "scale", scale, DType::F32);
  detail::requireSameDevice(fn, {{"x", &x}, {"w", &w}, {"shift", &shift}, {"scale", &scale}, {"map", &map}});
  const float eps32 = detail::checkedEps(fn, eps);
  checkMap(fn, map, rows, shift.dim(0));
  return {x.data<float>(), w.data<float>(), shift.data<float>(), scale.data<float>(), map.data<float>(), eps32,
          centered, rows, n, shift.dim(0), nullptr, nullptr};
}

namespace {

/// modulatedNorm(Into)'s checks, naming `fn`, then the run.
void modulatedNormRun(const char* fn, const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale,
                      const Tensor& map, double eps, bool centered, const Tensor& y) {
  norms::ModulatedNorm::Args a = norms::checkModulated(fn, x, w, shift, scale, map, eps, centered);
  detail::requireDefined(fn, "y", y);
  detail::requireSameDevice(fn, {{"x", &x}, {"y", &y}});
  if (y.dtype() != DType::BF16 && !(y.dtype() == DType::F32 && y.device().isHost()))
    fail(fn, "y", "expected BF16 (or F32 on the host), got " + dtypeName(y.dtype()) + " on " + y.device().name());
  detail::requireShape(fn, "y", y, x.shape());
  detail::requireApart(fn, "y", y, {{"x", &x}, {"w", &w}, {"shift", &shift}, {"scale", &scale}, {"map", &map}});
  if (y.dtype() == DType::BF16) a.yBF16 = y.data<std::uint16_t>();
  else a.y = y.data<float>();
  detail::run<norms::ModulatedNorm>(detail::gpuOf(x), a, fn);  // a bad map found on a GPU names fn too
}

}  // namespace

void modulatedNormInto(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale, const Tensor& map,
                       double eps, bool centered, const Tensor& y) {
  modulatedNormRun("gizml::netops::modulatedNormInto", x, w, shift, scale, map, eps, centered, y);
}

Tensor modulatedNorm(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale, const Tensor& map,
                     double eps, bool centered) {
  const char* fn = "gizml::netops::modulatedNorm";
  detail::requireDefined(fn, "x", x);
  Tensor y = Tensor::empty(x.shape(), x.device().isHost() ? DType::F32 : DType::BF16, x.device());
  modulatedNormRun(fn, x, w, shift, scale, map, eps, centered, y);
  return y;
}

void gatedNormAddInto(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& gate, const Tensor& map,
                      double eps) {
  const char* fn = "gizml::netops::gatedNormAddInto";
  checkRowMatrix(fn, "x", x);
  const std::int64_t rows = x.dim(0), n = x.dim(1);
  detail::requireDType(fn, "y", y, DType::BF16);
  detail::requireShape(fn, "y", y, x.shape());
  detail::requireVector(fn, "w", w, n);
  checkModulation(fn, "gate", gate, n);
  detail::requireSameDevice(fn, {{"x", &x}, {"y", &y}, {"w", &w}, {"gate", &gate}, {"map", &map}});
  detail::requireApart(fn, "x", x, {{"y", &y}, {"w", &w}, {"gate", &gate}, {"map", &map}});
  const float eps32 = detail::checkedEps(fn, eps);
  checkMap(fn, map, rows, gate.dim(0));
  detail::run<norms::GatedNormAdd>(detail::gpuOf(x), {x.data<float>(), y.data<std::uint16_t>(), w.data<float>(),
                                                      gate.data<float>(), map.data<float>(), eps32, rows, n,
                                                      gate.dim(0)});
}

namespace {

/// pixelNorm's checks of x, naming `fn`.
void checkPixelFrames(const char* fn, const Tensor& x) {
  detail::requireDefined(fn, "x", x);
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16)
    fail(fn, "x", "expected dtype F32 or BF16, got " + dtypeName(x.dtype()));
  detail::requireRank(fn, "x", x, 3);
  if (x.dim(1) < 1) fail(fn, "x", "expected [frames, c >= 1, pixels], got " + shapeString(x.shape()));
}

/// pixelNorm(Into)'s checks, naming `fn`, then the run.
void pixelNormRun(const char* fn, const Tensor& x, double eps, bool act, const Tensor& out) {
  checkPixelFrames(fn, x);
  detail::requireDType(fn, "out", out, x.dtype());
  detail::requireShape(fn, "out", out, x.shape());
  detail::requireSameDevice(fn, {{"x", &x}, {"out", &out}});
  detail::requireApart(fn, "out", out, {{"x", &x}}, &x);
  const float eps32 = detail::checkedEps(fn, eps);
  if (x.numel() == 0) return;
  detail::run<norms::PixelNorm>(detail::gpuOf(x), {x.raw(), out.raw(), x.dtype() == DType::BF16, x.dim(0), x.dim(1),
                                                   x.dim(2), eps32, act});
}

}  // namespace

void pixelNormInto(const Tensor& x, double eps, bool act, const Tensor& out) {
  pixelNormRun("gizml::netops::pixelNormInto", x, eps, act, out);
}

Tensor pixelNorm(const Tensor& x, double eps, bool act) {
  const char* fn = "gizml::netops::pixelNorm";
  checkPixelFrames(fn, x);  // before x's shape and dtype make the output
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  pixelNormRun(fn, x, eps, act, out);
  return out;
}

namespace {

/// groupNorm's checks but the output's, naming `fn`; eps rounded to F32.
float checkGroupNorm(const char* fn, const Tensor& x, std::int64_t groups, const Tensor& w, const Tensor& b, double eps) {
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRankAtLeast(fn, "x", x, 1);
  const std::int64_t c = x.dim(0);
  if (groups < 1 || c % groups != 0)
    fail(fn, "groups", "expected groups >= 1 dividing c = " + std::to_string(c) + ", got " + std::to_string(groups));
  detail::requireVector(fn, "w", w, c);
  detail::requireVector(fn, "b", b, c);
  detail::requireSameDevice(fn, {{"x", &x}, {"w", &w}, {"b", &b}});
  return detail::checkedEps(fn, eps);
}

/// groupNorm of checked arguments into y (x's shape and device, F32 or BF16; y may be x).
void groupNormRun(const Tensor& x, std::int64_t groups, const Tensor& w, const Tensor& b, float eps32, bool act,
                  const Tensor& y) {
  if (x.numel() == 0) return;
  const std::int64_t c = x.dim(0), spatial = x.numel() / c, length = x.numel() / groups;
  const Gpu gpu = detail::gpuOf(x);
  // The slices' partial sums (2 floats a slice), then the channels; on a GPU in stream order. The
  // slices read all of a group before its channels write any of it, so y may be x. On a GPU the
  // partial sums are followed by the one launch's counters (on 128 bytes: the sums of a group are
  // 128 bytes).
  const std::int64_t sums = groups * norms::kGroupSlices * 2,
                     counterFloats = x.device().isHost() ? 0 : norms::GroupNormPasses::counterBytes(groups) / 4;
  Tensor partial = Tensor::empty({sums + counterFloats}, DType::F32, x.device());
  const norms::GroupNormSlices::Args slices{x.data<float>(), groups * norms::kGroupSlices,
                                            (length + norms::kGroupSlices - 1) / norms::kGroupSlices, length,
                                            partial.data<float>()};
  const bool bf16 = y.dtype() == DType::BF16;
  const norms::GroupNorm::Args channels{x.data<float>(), w.data<float>(), b.data<float>(), partial.data<float>(),
                                        eps32, act, c, spatial, c / groups,
                                        bf16 ? nullptr : y.data<float>(), bf16 ? y.data<std::uint16_t>() : nullptr};
  auto* const counters = counterFloats ? reinterpret_cast<unsigned long long*>(partial.data<float>() + sums) : nullptr;
  detail::run<norms::GroupNormPasses>(gpu, {slices, channels, counters});
}

}  // namespace

Tensor groupNorm(const Tensor& x, std::int64_t groups, const Tensor& w, const Tensor& b, double eps, bool act,
                 DType dtype) {
  const char* fn = "gizml::netops::groupNorm";
  const float eps32 = checkGroupNorm(fn, x, groups, w, b, eps);
  if (dtype != DType::F32 && dtype != DType::BF16) fail(fn, "dtype", "expected F32 or BF16, got " + dtypeName(dtype));
  Tensor y = Tensor::empty(x.shape(), dtype, x.device());
  groupNormRun(x, groups, w, b, eps32, act, y);
  return y;
}

void groupNormInto(const Tensor& x, std::int64_t groups, const Tensor& w, const Tensor& b, double eps, bool act,
                   const Tensor& out) {
  const char* fn = "gizml::netops::groupNormInto";
  const float eps32 = checkGroupNorm(fn, x, groups, w, b, eps);
  detail::requireDefined(fn, "out", out);
  if (out.dtype() != DType::F32 && out.dtype() != DType::BF16)
    fail(fn, "out", "expected dtype F32 or BF16, got " + dtypeName(out.dtype()));
  detail::requireShape(fn, "out", out, x.shape());
  detail::requireSameDevice(fn, {{"x", &x}, {"out", &out}});
  detail::requireApart(fn, "out", out, {{"x", &x}, {"w", &w}, {"b", &b}}, &x);
  groupNormRun(x, groups, w, b, eps32, act, out);
}

void rowNormRopeInto(const Gpu& gpu, std::uint16_t* at, std::int64_t stride, std::int64_t rows, std::int64_t width,
                     std::int64_t head, const float* w, double eps, const float* cos, const float* sin) {
  const char* fn = "gizml::netops::rowNormRopeInto";
  if (rows < 0) fail(fn, "rows", "expected rows >= 0, got " + std::to_string(rows));
  if (head < 2 || head % 2 != 0) fail(fn, "head", "expected an even head >= 2, got " + std::to_string(head));
  if (width < 1 || width % head != 0)
    fail(fn, "width", "expected a multiple >= 1 of head = " + std::to_string(head) + ", got " + std::to_string(width));
  if (stride < width)
    fail(fn, "stride", "expected stride >= width = " + std::to_string(width) + ", got " + std::to_string(stride));
  for (const auto& [name, p] : {std::pair<const char*, const void*>{"at", at}, {"w", w}, {"cos", cos}, {"sin", sin}})
    if (p == nullptr) fail(fn, name, "expected an address, got null");
  const float eps32 = detail::checkedEps(fn, eps);
  if (rows == 0) return;
  // The rows are written in place; the tables they read must lie apart from them.
  const auto rowBytes = static_cast<std::size_t>(((rows - 1) * stride + width) * 2);
  const auto tableBytes = static_cast<std::size_t>(rows * (width / 2) * 4);
  for (const auto& [name, p, bytes] : {std::tuple<const char*, const void*, std::size_t>{"w", w, width * 4},
                                       {"cos", cos, tableBytes}, {"sin", sin, tableBytes}})
    if (detail::spansOverlap(at, rowBytes, p, bytes))
      fail(fn, name, "expected memory apart from the rows at `at`, got an overlap");
  detail::run<norms::RowNormRope>(gpu, {at, stride, rows, width, head, w, cos, sin, eps32});
}

}  // namespace gizml::netops
