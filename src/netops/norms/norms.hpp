// The diffusion norms (SPEC §3 "Diffusion norms and 8-bit rows"): their per-element formulas and
// row functions, written once on the shared row type (exact/row16.hpp) for the host (16 float
// lanes) and CUDA (a half-warp), and each op's kernel struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"
#include "gizml/tensor.hpp"
#include "netops/rows/rows.hpp"
#if !defined(__CUDACC__)
#include "exact/vec16.hpp"
#endif

namespace gizml::netops::norms {

// ---- row maps --------------------------------------------------------------------------------

/// A row map's entry (an integer held as F32, SPEC §1.4) as an index: the integer, or -1 when the
/// value is not an integer >= 0 (NaN, a fraction, a negative), so that any bound rejects it.
GIZML_HD long long mapIndex(float v) {
  if (!(v >= 0.0f && v < 9.2e18f)) return -1;
  const long long i = static_cast<long long>(v);
  return static_cast<float>(i) == v ? i : -1;
}

// ---- per-element formulas ----------------------------------------------------------------------

/// modulatedNorm's element: n = (x - mean) * rstd (mean = +0 for the RMS norm: x - 0 is x), then
/// fma(n * w, 1 + scale, shift), `1 + scale` being one F32 add. A mean of +0 (its bits all zero)
/// skips the subtraction: x - (+0) is x for every x (-0 included; a NaN stays a NaN, quieted by the
/// product after it), so the bits are the same, and a row's values take one vector step fewer
/// (modulatedInt8Rows on a Zen 2's AVX2, [8192, 3072], 2 threads: 14.5 -> 14.0 ms). A mean of -0
/// subtracts (x - (-0) is +0 for x = -0). modulatedValueOfFactor takes `1 + scale` made already
/// (the host's modulatedInt8Rows makes it once for all rows of a modulation).
template <class F>
GIZML_HD F modulatedValueOfFactor(F x, float mean, float rstd, F w, F factor, F shift) {
  const F centered = exact::toBits(mean) == 0u ? x : x - mean;
  return exact::fmaLane((centered * rstd) * w, factor, shift);
}
template <class F>
GIZML_HD F modulatedValue(F x, float mean, float rstd, F w, F scale, F shift) {
  return modulatedValueOfFactor(x, mean, rstd, w, 1.0f + scale, shift);
}

/// gatedNormAddInto's element: fma((y * r) * w, gate, x).
template <class F>
GIZML_HD F gatedAddValue(F y, float r, F w, F gate, F x) {
  return exact::fmaLane((y * r) * w, gate, x);
}

/// rsqrt(v) = 1 / sqrt(v) on each lane (IEEE division and square root: the same bits everywhere).
GIZML_HD float rsqrtLanes(float v) { return 1.0f / sqrtf(v); }
#if !defined(__CUDACC__)
/// The vector square root and division are IEEE's too (vsqrtps, vdivps: correctly rounded, the
/// same bits as sqrtf and /). Lane by lane through an array, as before stop 48, it took pixelNorm
/// of few channels most of its time: one thread, a Zen 2, without SiLU, [1, 4, 8192] 29.6 -> 8.4
/// us, [1, 16, 8192] 51.8 -> 31.0, [1, 128, 8192] 303 -> 280; 384 channels the same.
inline exact::f32x16 rsqrtLanes(exact::f32x16 v) {
#if defined(__AVX512F__)
  return 1.0f / (exact::f32x16)_mm512_sqrt_ps((__m512)v);
#else
  return 1.0f / exact::f32x16((exact::f32x8)_mm256_sqrt_ps((__m256)v.h[0]),
                              (exact::f32x8)_mm256_sqrt_ps((__m256)v.h[1]));
#endif
}
#endif

/// pixelNorm's three steps, each pixel in its own lane: ss = chain over channels of x * x
/// (acc = fma(x, x, acc) from +0, channel order); r = rsqrt(ss / c + eps); y = x * r, SiLU when act.
template <class F>
GIZML_HD F pixelSquareStep(F x, F ss) {
  return exact::fmaLane(x, x, ss);
}
template <class F>
GIZML_HD F pixelScale(F ss, std::int64_t c, float eps) {
  return rsqrtLanes(ss / static_cast<float>(c) + eps);
}
/// kSmall: every y is known to have |y| < 86 (the host's pixelValuesSmall), so SiLU's exp may
/// skip its test of the lanes (exact::siluLanesOfSmall: the same value).
template <bool kSmall = false, class F>
GIZML_HD F pixelValue(F x, F r, bool act) {
  const F y = x * r;
  if (!act) return y;
  if constexpr (kSmall) return exact::siluLanesOfSmall(y);
  return exact::siluLanes(y);
}

/// pixelNorm of the pixels `at` stands for (one on a GPU) of one frame x [c, pixels] (F32 or BF16,
/// T = float or std::uint16_t). out may be x: a channel is read before it is written. (The host
/// runs the same steps over a run of pixels at a time: norms/host.cpp.)
///
/// The second pass walks the channels last to first (its values are each its own: the order
/// changes no bit). On a GPU every pixel's thread is resident at once for a video model's frames,
/// so the first pass streams the whole tensor, and the channels it read last are the ones still in
/// the L2: read first, they come from there rather than from memory again.
///
/// A thread has a pixel's whole chain, and a frame has few pixels for a GPU's threads (8192: 8
/// frames, 65536 threads), so each keeps several loads in flight: the first pass unrolled 8 times,
/// the second taking 8 channels' loads before their stores (a store to out may alias a later load
/// from x as far as the compiler knows; a channel's value is read before its own store).
template <class At, class T>
GIZML_HD void pixelNormPixels(const At& at, const T* x, T* out, std::int64_t c, std::int64_t pixels, float eps,
                              bool act) {
  using F = decltype(at.load(x));
  constexpr int kBatch = 8;
  F ss{};
  GIZML_UNROLL(8)
  for (std::int64_t ch = 0; ch < c; ++ch) ss = pixelSquareStep(at.load(x + ch * pixels), ss);
  const F r = pixelScale(ss, c, eps);
  std::int64_t ch = c;  // channels [0, ch) are left
  for (; ch >= kBatch; ch -= kBatch) {
    F v[kBatch];
    for (int k = 0; k < kBatch; ++k) v[k] = at.load(x + (ch - 1 - k) * pixels);
    for (int k = 0; k < kBatch; ++k) at.store(out + (ch - 1 - k) * pixels, pixelValue(v[k], r, act));
  }
  for (; ch > 0; --ch) at.store(out + (ch - 1) * pixels, pixelValue(at.load(x + (ch - 1) * pixels), r, act));
}

/// groupNorm's element: fma((x - mean) * rstd, w, b), SiLU when act.
template <class F>
GIZML_HD F groupNormValue(F x, float mean, float rstd, float w, float b, bool act) {
  const F y = exact::fmaLane((x - mean) * rstd, exact::broadcast<F>(w), exact::broadcast<F>(b));
  return act ? exact::siluLanes(y) : y;
}

/// HeadPrep's split-halves rotation of one pair (p, q) = (v[e], v[e + half]) with the pair's
/// (cos, sin): v[e] = fma(p, cos, -(q * sin)), v[e + half] = fma(q, cos, p * sin).
template <class F>
GIZML_HD void rotatePair(F p, F q, F cos, F sin, F& first, F& second) {
  first = exact::fmaLane(p, cos, -(q * sin));
  second = exact::fmaLane(q, cos, p * sin);
}

/// For the e of step `at` (e < half), the pair (in[e], in[e + half]) each normalised (rmsNormValue
/// with `scale` and its w) and turned by (cos[e], sin[e]) (rotatePair), stored to out[e] and
/// out[e + half] in out's type (in: out itself, or a copy of its values).
template <class At, class T>
GIZML_HD void normRotateStepFrom(const At& at, const T* in, T* out, std::int64_t half, float scale, const float* w,
                                 const float* cos, const float* sin) {
  const auto p = rows::rmsNormValue(at.load(in), scale, at.load(w));
  const auto q = rows::rmsNormValue(at.load(in + half), scale, at.load(w + half));
  auto first = p, second = q;
  rotatePair(p, q, at.load(cos), at.load(sin), first, second);
  at.store(out, first);
  at.store(out + half, second);
}
/// normRotateStepFrom in place: v's pair stored back.
template <class At, class T>
GIZML_HD void normRotateStep(const At& at, T* v, std::int64_t half, float scale, const float* w, const float* cos,
                             const float* sin) {
  normRotateStepFrom(at, static_cast<const T*>(v), v, half, scale, w, cos, sin);
}

/// normRotateStep for every e < half (`halves`: a row of that length): rowNormRopeInto's head and
/// HeadPrep's unit.
template <class Row, class T>
GIZML_HD void normRotateHalves(const Row& halves, T* v, float scale, const float* w, const float* cos,
                               const float* sin) {
  halves.forEachWide([&](const auto& at) GIZML_HD_LAMBDA { normRotateStep(at, v, halves.n, scale, w, cos, sin); });
}

// ---- the ops' kernels ----------------------------------------------------------------------------------

/// The row statistics of modulatedNorm: centered, layerNorm's (mean, rstd); else (0, rmsScale).
/// x: the row (a const float*, or a copy laid out otherwise: exact::layerNormStats).
template <class Row, class X>
GIZML_HD exact::MeanRstd modulatedStats(const Row& row, X x, float eps, bool centered) {
  if (centered) return exact::layerNormStats(row, x, eps);
  return {0.0f, exact::rmsScale(row, x, eps)};
}

/// modulatedNorm(Into): row r uses modulation m = map[r] (checked before: on the host by the op,
/// on a GPU by the kernel, which skips a row whose index is out of range).
struct ModulatedNorm {
  static constexpr const char* kName = "gizml::netops::modulatedNorm";
  static constexpr bool kValuesInQuads = true;  // its values walk takes quads where its plan asks
  struct Args {
    const float *x, *w, *shift, *scale, *map;
    float eps;
    bool centered;
    std::int64_t rows, n, mods;
    float* y;             // F32 output, or null
    std::uint16_t* yBF16;  // BF16 output, or null
  };
  GIZML_HD static long long mapped(const Args& a, std::int64_t r) { return mapIndex(a.map[r]); }
  /// Row r: its statistics with what its values read and write (stats), then its values a step
  /// at a time (row; the host's pipeline, exact::hostRowsBeside, runs a row's values inside the
  /// next row's statistics).
  struct RowAt {
    const float *x, *scale, *shift;
    float* y;
    std::uint16_t* yBF16;
    exact::MeanRstd s;
  };
  template <class Row>
  GIZML_HD static RowAt stats(const Row& row, const Args& a, std::int64_t r) {
    return statsOf(row, a, r, stagedRow(a, r));
  }
  /// The input that a row reads twice (its statistics, then its values): x's row r. A GPU's block
  /// a row (core/cuda_row_blocks.cuh) copies it to shared memory and hands the copy to statsOf.
  using Staged = float;
  GIZML_HD static const float* stagedRow(const Args& a, std::int64_t r) { return a.x + r * a.n; }
  GIZML_HD static std::int64_t valueSteps(const Args& a) { return a.n; }  // values' steps: one an element
  /// stats with row r's x read from `x` (stagedRow's values, wherever they are).
  template <class Row>
  GIZML_HD static RowAt statsOf(const Row& row, const Args& a, std::int64_t r, const float* x) {
    const std::int64_t m = mapped(a, r);
    return {x,
            a.scale + m * a.n,
            a.shift + m * a.n,
            a.y ? a.y + r * a.n : nullptr,
            a.yBF16 ? a.yBF16 + r * a.n : nullptr,
            modulatedStats(row, x, a.eps, a.centered)};
  }
  GIZML_HD static int sumPasses(const Args& a) { return a.centered ? 2 : 1; }
  template <class At>
  GIZML_HD static void values(const At& at, const Args& a, const RowAt& v) {
    const auto y = modulatedValue(at.load(v.x), v.s.mean, v.s.rstd, at.load(a.w), at.load(v.scale), at.load(v.shift));
    if (v.yBF16) at.stream(v.yBF16, y);  // past the caches where the host asked (ModulatedNorm::host)
    else at.stream(v.y, y);
  }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    exact::statsThenValues<ModulatedNorm>(row, a, r);
  }
  /// Its host loop's work a value (exact::hostWork): a row norm's, the unit.
  static std::int64_t costAValue(const Args&) { return 1; }
  static void host(const Args& a);
  /// Its launches name `fn` (modulatedNorm or modulatedNormInto) in a bad map entry's error.
  static void cuda(const Gpu& g, const Args& a, const char* fn = kName);
};

/// modulatedNorm's checks (the public functions' and modulatedInt8RowsInto's), naming `fn`: its
/// arguments but the outputs (y and yBF16 null). Host code.
ModulatedNorm::Args checkModulated(const char* fn, const Tensor& x, const Tensor& w, const Tensor& shift,
                                   const Tensor& scale, const Tensor& map, double eps, bool centered);

/// gatedNormAddInto: x = fma((y * rsqrt(dot16(y, y) / n + eps)) * w, gate[map[r]], x), y BF16.
struct GatedNormAdd {
  static constexpr const char* kName = "gizml::netops::gatedNormAddInto";
  static constexpr bool kValuesInQuads = true;  // its values walk takes quads where its plan asks
  struct Args {
    float* x;
    const std::uint16_t* y;
    const float *w, *gate, *map;
    float eps;
    std::int64_t rows, n, mods;
  };
  GIZML_HD static long long mapped(const Args& a, std::int64_t r) { return mapIndex(a.map[r]); }
  /// Row r: its scale with what its values read and write, then its values a step at a time (as
  /// ModulatedNorm's).
  struct RowAt {
    const std::uint16_t* y;
    float* x;
    const float* gate;
    float scale;
  };
  template <class Row>
  GIZML_HD static RowAt stats(const Row& row, const Args& a, std::int64_t r) {
    return statsOf(row, a, r, stagedRow(a, r));
  }
  /// The input that a row reads twice: y's row r (as ModulatedNorm's).
  using Staged = std::uint16_t;
  GIZML_HD static const std::uint16_t* stagedRow(const Args& a, std::int64_t r) { return a.y + r * a.n; }
  GIZML_HD static std::int64_t valueSteps(const Args& a) { return a.n; }
  template <class Row>
  GIZML_HD static RowAt statsOf(const Row& row, const Args& a, std::int64_t r, const std::uint16_t* y) {
    return {y, a.x + r * a.n, a.gate + mapped(a, r) * a.n, exact::rmsScale(row, y, a.eps)};
  }
  GIZML_HD static int sumPasses(const Args&) { return 1; }
  template <class At>
  GIZML_HD static void values(const At& at, const Args& a, const RowAt& v) {
    at.store(v.x, gatedAddValue(at.load(v.y), v.scale, at.load(a.w), at.load(v.gate), at.load(v.x)));
  }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    exact::statsThenValues<GatedNormAdd>(row, a, r);
  }
  /// Its host loop's work a value (exact::hostWork): a row norm's, the unit.
  static std::int64_t costAValue(const Args&) { return 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// pixelNormInto: a column op (the reduction runs over channels, stride = pixels), not a row op;
/// each pixel's chain stays in one lane: a GPU thread is a pixel; the host walks runs of pixels.
struct PixelNorm {
  static constexpr const char* kName = "gizml::netops::pixelNormInto";
  struct Args {
    const void* x;
    void* out;
    bool bf16;  // x and out BF16, else F32
    std::int64_t frames, c, pixels;
    float eps;
    bool act;
  };
  template <class At>
  GIZML_HD static void pixels(const At& at, const Args& a, std::int64_t frame) {
    const std::int64_t base = frame * a.c * a.pixels;
    if (a.bf16)
      pixelNormPixels(at, static_cast<const std::uint16_t*>(a.x) + base, static_cast<std::uint16_t*>(a.out) + base,
                      a.c, a.pixels, a.eps, a.act);
    else
      pixelNormPixels(at, static_cast<const float*>(a.x) + base, static_cast<float*>(a.out) + base, a.c, a.pixels,
                      a.eps, a.act);
  }
  /// Its host loop's work a value (exact::kWorkAThread's units), as GroupNorm's: 1, 3 with SiLU.
  static std::int64_t costAValue(const Args& a) { return a.act ? 3 : 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// rowNormRopeInto: BF16 rows at v, row r at v + r stride, normalised as rmsNorm over the whole
/// width, then each head's halves rotated with pair j = h head / 2 + e of the row's cos / sin
/// [rows, width / 2], stored back as BF16. A head's halves are two contiguous runs of head / 2.
struct RowNormRope {
  static constexpr const char* kName = "gizml::netops::rowNormRopeInto";
  static constexpr bool kValuesInQuads = true;  // its heads' walks take quads where its plan asks
  // (Not its block a row's walk over the row's pairs, one a step: 4 consecutive pairs may straddle
  // two heads, where the rows a step loads move; TakesStagedQuads, core/cuda_row_blocks.cuh.)
  static constexpr bool kStagedValuesInQuads = false;
  struct Args {
    std::uint16_t* v;
    std::int64_t stride, rows, n, head;  // n = width
    const float *w, *cos, *sin;
    float eps;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    std::uint16_t* v = a.v + r * a.stride;
    const float scale = exact::rmsScale(row, v, a.eps);
    const std::int64_t half = a.head / 2;
    const Row halves = row.ofLength(half);
    // The last head first, each from its end (forEachWide): what a GPU's L2 still holds of the row
    // after the sums is its end (WarpRow::forEachWideFrom). Each pair is its own: any order.
    for (std::int64_t h = a.n / a.head - 1; h >= 0; --h) {
      const std::int64_t cs = r * (a.n / 2) + h * half;
      normRotateHalves(halves, v + h * a.head, scale, a.w + h * a.head, a.cos + cs, a.sin + cs);
    }
  }
#if defined(__CUDACC__)
  // A GPU's block a row (core/cuda_row_blocks.cuh): row r's v staged, its scale from the copy (as
  // row's), then its n / 2 pairs, one a step: pair i is e = i % half of head i / half.
  using Staged = std::uint16_t;
  GIZML_HD static const std::uint16_t* stagedRow(const Args& a, std::int64_t r) { return a.v + r * a.stride; }
  GIZML_HD static std::int64_t valueSteps(const Args& a) { return a.n / 2; }
  struct RowAt {
    const std::uint16_t* staged;
    std::uint16_t* v;
    const float *cos, *sin;
    float scale;
  };
  template <class Row>
  GIZML_HD static RowAt statsOf(const Row& row, const Args& a, std::int64_t r, const std::uint16_t* staged) {
    return {staged, a.v + r * a.stride, a.cos + r * (a.n / 2), a.sin + r * (a.n / 2), exact::rmsScale(row, staged, a.eps)};
  }
  /// Pair at.i (a WarpRow step: one element): v[off + i] and its partner half on, with
  /// off = (i / half) half, so that v + off + i is element e of head i / half; cos and sin at i.
  /// (A staged row is at most 48 KiB: its pairs' division in 32 bits, a fraction of a 64-bit
  /// one's work.)
  template <class At>
  GIZML_HD static void values(const At& at, const Args& a, const RowAt& s) {
    const std::int64_t half = a.head / 2;
    const std::int64_t off = static_cast<std::int64_t>(static_cast<std::uint32_t>(at.i) / static_cast<std::uint32_t>(half)) * half;
    normRotateStepFrom(at, s.staged + off, s.v + off, half, s.scale, a.w + off, s.cos, s.sin);
  }
#endif
  /// Its host loop's work a value (exact::hostWork): a row norm's, the unit.
  static std::int64_t costAValue(const Args&) { return 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// The public GROUP_SLICES (gizml/netops/norms.hpp): a group's values are cut into this many slices.
constexpr std::int64_t kGroupSlices = 16;

/// groupNorm, first pass: group g's values (L = (c / groups) S, contiguous) cut into kGroupSlices
/// slices of ceil(L / kGroupSlices) (the last ones shorter or empty); row s = g kGroupSlices + k
/// is slice k of group g, and gives partial[2 s] = sum16(x), partial[2 s + 1] = dot16(x, x) in F32.
struct GroupNormSlices {
  static constexpr const char* kName = "gizml::netops::groupNorm";
  struct Args {
    const float* x;
    std::int64_t rows, n;  // groups kGroupSlices, the slice length
    std::int64_t groupLength;
    float* partial;
  };
  /// A lane's step of its two chains: sum += v; squares = fma(v, v, squares).
  template <class F>
  GIZML_HD static void step(F v, F& sum, F& squares) {
    sum = sum + v;
    squares = exact::fmaLane(v, v, squares);
  }
  /// Slice s's values: where its group's start in x, and its length (0 for an empty one).
  GIZML_HD static const float* slice(const Args& a, std::int64_t s, std::int64_t& length) {
    const std::int64_t start = (s % kGroupSlices) * a.n, rest = a.groupLength - start;
    length = rest < 0 ? 0 : rest < a.n ? rest : a.n;
    return a.x + (s / kGroupSlices) * a.groupLength + start;
  }
  /// The sums' step over a slice's values at x, for its row's reduce (the host may also take a
  /// slice's sums a step at a time: exact::HostRow::Sums, groupNormHost).
  struct SliceStep {
    const float* x;
    template <class At, class F>
    GIZML_HD void operator()(const At& at, F (&acc)[2]) const {
      step(at.load(x), acc[0], acc[1]);
    }
  };
  /// Slice s's two sums (sum16(x), dot16(x, x)) into partial.
  GIZML_HD static void store(const Args& a, std::int64_t s, const float (&sums)[2]) {
    a.partial[2 * s] = sums[0];
    a.partial[2 * s + 1] = sums[1];
  }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t s) {
    std::int64_t length;
    const float* x = slice(a, s, length);
    float sums[2];  // an empty slice gives +0, +0
    row.ofLength(length).reduce(sums, SliceStep{x});
    if (row.leader()) store(a, s, sums);
  }
  /// Its host loop's work a value (exact::hostWork): a row norm's, the unit.
  static std::int64_t costAValue(const Args&) { return 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// A group's statistics from its slices' partial sums: S1, S2 added as f64 in slice order;
/// mean = S1 / L, var = max(S2 / L - mean², 0) (a NaN stays NaN), in f64; then F32(mean) and
/// F32(1 / sqrt(var + eps)).
GIZML_HD exact::MeanRstd groupStats(const float* partial, std::int64_t length, float eps) {
  double s1 = 0.0, s2 = 0.0;
  for (std::int64_t k = 0; k < kGroupSlices; ++k) {
    s1 += static_cast<double>(partial[2 * k]);
    s2 += static_cast<double>(partial[2 * k + 1]);
  }
  const double mean = s1 / static_cast<double>(length), spread = s2 / static_cast<double>(length) - mean * mean;
  const double var = spread < 0.0 ? 0.0 : spread;
  return {static_cast<float>(mean), static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)))};
}

/// groupNorm, second pass: a channel a row, y = groupNormValue with its group's statistics
/// (each channel adds its group's partial sums again: the same f64 steps, the same bits). Its
/// values are each their own, so a GPU takes a channel in chunks (GroupNorm::chunk, norms/cuda.cu).
struct GroupNorm {
  static constexpr const char* kName = "gizml::netops::groupNorm";
  struct Args {
    const float *x, *w, *b, *partial;
    float eps;
    bool act;
    std::int64_t rows, n;  // c, S
    std::int64_t perGroup;  // channels a group
    float* y;              // F32 output, or null
    std::uint16_t* yBF16;  // BF16 output, or null
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t ch) {
    chunk(row, a, ch, 0);
  }
  /// Values [start, start + row.n) of channel ch.
  template <class Row>
  GIZML_HD static void chunk(const Row& row, const Args& a, std::int64_t ch, std::int64_t start) {
    values(row, a, ch, start, stats(a, ch));
  }
  /// Channel ch's group's statistics.
  GIZML_HD static exact::MeanRstd stats(const Args& a, std::int64_t ch) {
    return groupStats(a.partial + 2 * kGroupSlices * (ch / a.perGroup), a.perGroup * a.n, a.eps);
  }
  /// chunk with its group's statistics s given (the host computes them once a group). SiLU or not
  /// is known in the loop (`act`), and w, b and the pointers are read before it: the host's loop
  /// loaded them again at every step, a float store to y being one that might change w[ch] as far as
  /// the compiler knows (a Xeon, stop 56, 1 thread, [32, 8192] / 32 in L2 with SiLU, eight rounds of
  /// two builds: 0.465 - 0.476 -> 0.440 - 0.460 ns a value; without SiLU and with a BF16 y even).
  template <class Row>
  GIZML_HD static void values(const Row& row, const Args& a, std::int64_t ch, std::int64_t start,
                              const exact::MeanRstd& s) {
    const std::int64_t at0 = ch * a.n + start;
    const float w = a.w[ch], b = a.b[ch];
    const float* const x = a.x + at0;
    float* const y = a.y ? a.y + at0 : nullptr;
    std::uint16_t* const yBF16 = a.yBF16 ? a.yBF16 + at0 : nullptr;
    const auto walk = [&](auto act) GIZML_HD_LAMBDA {
      row.forEachWide([&](const auto& at) GIZML_HD_LAMBDA {
        const auto v = groupNormValue(at.load(x), s.mean, s.rstd, w, b, decltype(act)::value);
        if (yBF16) at.stream(yBF16, v);  // past the caches where the host asked (groupNormHost)
        else at.stream(y, v);
      });
    };
    if (a.act) walk(std::true_type{});
    else walk(std::false_type{});
  }
  /// Its host loop's work a value (exact::hostWork): a row norm's, three with SiLU (its exp and
  /// division take about twice the norm's arithmetic).
  static std::int64_t costAValue(const Args& a) { return a.act ? 3 : 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// groupNorm on the host: both passes, group by group where there are groups enough for the threads
/// (norms/host.cpp); the same row functions as the GPU's two launches, so the same bits.
void groupNormHost(const GroupNormSlices::Args& slices, const GroupNorm::Args& channels);

/// groupNorm, both passes: on the host groupNormHost; on a GPU GroupNormSlices' launch then
/// GroupNorm's, or where GIZML_CUDA_GROUP_NORM_AHEAD=L (L >= 1) one launch that runs the first pass
/// at most L groups ahead of the second (norms/cuda.cu, "ahead"). The same bits in every case.
struct GroupNormPasses {
  static constexpr const char* kName = "gizml::netops::groupNorm";
  struct Args {
    GroupNormSlices::Args slices;
    GroupNorm::Args channels;
    /// A GPU's: counterBytes(groups) for the one launch (it zeroes them), on 128 bytes; null on the host.
    unsigned long long* counters;
  };
  /// The one launch's counters: 2 + 2 groups of them, each on a 128-byte line of its own.
  static constexpr std::int64_t counterBytes(std::int64_t groups) { return 128 * (2 + 2 * groups); }
  static void host(const Args& a) { groupNormHost(a.slices, a.channels); }
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::norms
