// The diffusion norms and the fused 8-bit rows on a video transformer's shapes (25M values: rows of
// 3072, or a [c, h w] image), beside a copy of as many floats measured just before them in the same
// run, so bytes/s reads as a share of the machine's bandwidth (bytes: each input read once, each
// output written once). GIZML_BENCH_DEVICE=cuda runs them on GPU 0.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_support.hpp"
#include "core/dispatch.hpp"
#include "gizml/gizml.hpp"
#include "netops/norms/norms.hpp"

using gizml::DType;
using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;

namespace {

constexpr std::int64_t kRows = 8192, kWidth = 3072, kMods = 4;

/// w [width], shift and scale [mods, width], map [rows] on d.
struct Modulation {
  Tensor w, shift, scale, map;
  explicit Modulation(gizml::Device d)
      : w(Tensor::normal(Key{2, 2}, {kWidth}, d)),
        shift(Tensor::normal(Key{3, 3}, {kMods, kWidth}, d)),
        scale(Tensor::normal(Key{4, 4}, {kMods, kWidth}, d)) {
    std::vector<float> m(kRows);
    for (std::int64_t r = 0; r < kRows; ++r) m[r] = static_cast<float>(r % kMods);
    map = Tensor::fromVector(m, {kRows}).to(d);
  }
};

using gizml::bench::timed;

/// timed for an op that writes over its input `x`: x is set back to `start` before each
/// iteration, untimed. Run again and again on its own output, pixelNorm + SiLU drove a third of
/// the values subnormal by the 150th run and two thirds to zero (SiLU halves small negatives, the
/// norm does not bring them back), and rowNormRope's rows, times w again and again, went the same
/// way: timings of values no model holds (a Zen 4 took about 40% longer on such rows). A GPU takes
/// subnormals at full speed, and a reset would make each iteration wait for the GPU: there the op
/// runs on its own output, queued as timed's (after one reset, untimed).
template <class Op>
void timedInPlace(benchmark::State& state, gizml::Device d, std::size_t bytes, Tensor& x, const Tensor& start, Op op) {
  if (d.isCuda()) {
    x.copyFrom(start);
    return timed(state, d, bytes, op);
  }
  for (auto _ : state) {
    state.PauseTiming();
    x.copyFrom(start);
    gizml::bench::finish(d);
    state.ResumeTiming();
    op();
    gizml::bench::finish(d);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

// Argument 0: the RMS norm (AdaLN over rms_norm), 1: centered (over layer_norm: a mean first).
void BM_ModulatedNorm(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor x = Tensor::normal(Key{1, 1}, {kRows, kWidth}, d);
  const Modulation m(d);
  const bool centered = state.range(0) != 0;
  Tensor y = Tensor::empty({kRows, kWidth}, d.isHost() ? DType::F32 : DType::BF16, d);
  timed(state, d, x.bytes() + y.bytes(),
        [&] { netops::modulatedNormInto(x, m.w, m.shift, m.scale, m.map, 1e-6, centered, y); });
}

void BM_GatedNormAdd(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{1, 1}, {kRows, kWidth}, d);
  const Tensor y = Tensor::normal(Key{5, 5}, {kRows, kWidth}, d).to(DType::BF16);
  const Modulation m(d);
  timed(state, d, 2 * x.bytes() + y.bytes(), [&] { netops::gatedNormAddInto(x, y, m.w, m.shift, m.map, 1e-6); });
}

/// Argument: the rows (kRows; 32 stay in the caches: the arithmetic's rate alone).
void BM_ModulatedInt8Rows(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  const std::int64_t rows = state.range(0);
  const Tensor x = Tensor::normal(Key{1, 1}, {rows, kWidth}, d);
  const Modulation m(d);
  const Tensor map = m.map.rows(0, rows);
  Tensor q = Tensor::empty({rows, kWidth}, d.isHost() ? DType::F32 : DType::I8, d);
  Tensor s = Tensor::empty({rows, 1}, DType::F32, d);
  timed(state, d, x.bytes() + q.bytes(),
        [&] { netops::modulatedInt8RowsInto(x, m.w, m.shift, m.scale, map, 1e-6, Tensor(), q, s, false); });
  state.SetItemsProcessed(rows * kWidth * state.iterations());
}

/// A decode step's few rows of kWidth (arguments: the op, the rows), in microseconds a call: what a
/// call costs beside its arithmetic (its checks, and its threads' start where it takes more than
/// one: exact::kWorkAThread). Ops: 0 modulatedNorm (RMS), 1 int8Rows, 2 modulatedInt8Rows, 3
/// hadamardRows. (Named apart from the ops' own benchmarks, which tools/gpu-rows-sweep.sh averages
/// by op.)
void BM_FewRows(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  const std::int64_t op = state.range(0), rows = state.range(1);
  const Tensor x = Tensor::normal(Key{1, 1}, {rows, kWidth}, d);
  const Modulation m(d);
  const Tensor map = m.map.rows(0, rows);
  Tensor y = Tensor::empty({rows, kWidth}, d.isHost() ? DType::F32 : DType::BF16, d);
  Tensor q = Tensor::empty({rows, kWidth}, d.isHost() ? DType::F32 : DType::I8, d);
  Tensor s = Tensor::empty({rows, 1}, DType::F32, d);
  Tensor rotated = Tensor::empty({rows, kWidth}, DType::F32, d);
  timed(state, d, x.bytes() + y.bytes(), [&] {
    if (op == 0) netops::modulatedNormInto(x, m.w, m.shift, m.scale, map, 1e-6, false, y);
    else if (op == 1) netops::int8RowsInto(x, q, s, 8);
    else if (op == 2) netops::modulatedInt8RowsInto(x, m.w, m.shift, m.scale, map, 1e-6, Tensor(), q, s, false);
    else netops::hadamardRowsInto(x, rotated);
  });
}

// Argument 1: SiLU after the norm (its exp is most of the arithmetic), 0: the norm alone.
void BM_PixelNorm(benchmark::State& state) {  // 8 frames of 384 channels x 8192 pixels, in place
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor start = Tensor::normal(Key{1, 1}, {8, 384, 8192}, d);
  Tensor x = start.clone();
  const bool act = state.range(0) != 0;
  timedInPlace(state, d, 2 * x.bytes(), x, start, [&] { netops::pixelNormInto(x, 1e-8, act, x); });
}

/// pixelNorm without SiLU of one frame of few channels (argument: channels) x 8192 pixels, out of
/// place, in microseconds: each 16 pixels' scale (a square root and a division) weighs where there
/// are few channels to share it (docs/tuning-log.md, stop 48). Named apart from BM_PixelNorm, which
/// tools/gpu-rows-sweep.sh averages as the op's.
void BM_FewChannelsPixelNorm(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor x = Tensor::normal(Key{1, 1}, {1, state.range(0), 8192}, d);
  Tensor y = Tensor::empty(x.shape(), DType::F32, d);
  timed(state, d, 2 * x.bytes(), [&] { netops::pixelNormInto(x, 1e-8, false, y); });
}

// BM_PixelNorm on BF16 frames, as a video model keeps its activations: half the bytes, the same
// arithmetic and the conversions, so on a host of few cores SiLU's exact arithmetic bounds it
// (docs/tuning-log.md, stop 43). Named apart from BM_PixelNorm so tools/gpu-rows-sweep.sh's runs skip it.
void BM_Bf16PixelNorm(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor start = Tensor::normal(Key{1, 1}, {8, 384, 8192}, d).to(DType::BF16);
  Tensor x = start.clone();
  const bool act = state.range(0) != 0;
  timedInPlace(state, d, 2 * x.bytes(), x, start, [&] { netops::pixelNormInto(x, 1e-8, act, x); });
}

void BM_GroupNorm(benchmark::State& state) {  // 512 channels of 48 x 1024, 32 groups; SiLU as pixelNorm's
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor x = Tensor::normal(Key{1, 1}, {512, 48, 1024}, d);
  const Tensor w = Tensor::normal(Key{2, 2}, {512}, d), b = Tensor::normal(Key{3, 3}, {512}, d);
  const bool act = state.range(0) != 0;
  Tensor y = Tensor::empty(x.shape(), DType::F32, d);
  timed(state, d, 2 * x.bytes(), [&] { netops::groupNormInto(x, 32, w, b, 1e-6, act, y); });
}

/// groupNorm + SiLU of small maps (arguments: channels, values a channel; 32 groups), in
/// microseconds a call: a low-resolution level's calls, where each group's 16 slices are a few
/// values and their sums' ends (sum16's tree, twice a slice) weigh (docs/tuning-log.md, stop 48).
/// Named apart from BM_GroupNorm, which tools/gpu-rows-sweep.sh averages as the op's.
void BM_SmallGroupNorm(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  const std::int64_t c = state.range(0), spatial = state.range(1);
  const Tensor x = Tensor::normal(Key{1, 1}, {c, spatial}, d);
  const Tensor w = Tensor::normal(Key{2, 2}, {c}, d), b = Tensor::normal(Key{3, 3}, {c}, d);
  Tensor y = Tensor::empty(x.shape(), DType::F32, d);
  timed(state, d, 2 * x.bytes(), [&] { netops::groupNormInto(x, 32, w, b, 1e-6, true, y); });
}

// groupNorm's two passes apart, on BM_GroupNorm's x without SiLU: 1, the first (each slice's two
// sums: x read once, its bytes counted once, so the share is a read's against the copy's read and
// write); 2, the second (the values from those sums: x read, y written). Where the whole op falls
// short of the copy, which pass it is. The library's own kernels (norms/norms.hpp), as groupNormInto
// launches them without GIZML_CUDA_GROUP_NORM_AHEAD.
void BM_GroupNormPass(benchmark::State& state) {
  namespace norms = gizml::netops::norms;
  const gizml::Device d = gizml::bench::benchDevice();
  const std::int64_t c = 512, spatial = 48 * 1024, groups = 32, length = c * spatial / groups;
  const Tensor x = Tensor::normal(Key{1, 1}, {c, spatial}, d);
  const Tensor w = Tensor::normal(Key{2, 2}, {c}, d), b = Tensor::normal(Key{3, 3}, {c}, d);
  Tensor y = Tensor::empty(x.shape(), DType::F32, d);
  Tensor partial = Tensor::empty({groups * norms::kGroupSlices * 2}, DType::F32, d);
  const norms::GroupNormSlices::Args slices{x.data<float>(), groups * norms::kGroupSlices,
                                            (length + norms::kGroupSlices - 1) / norms::kGroupSlices, length,
                                            partial.data<float>()};
  const norms::GroupNorm::Args channels{x.data<float>(), w.data<float>(), b.data<float>(), partial.data<float>(), 1e-6f,
                                        false, c, spatial, c / groups, y.data<float>(), nullptr};
  const gizml::Gpu g{d, nullptr};
  const auto first = [&] { gizml::detail::run<norms::GroupNormSlices>(g, slices); };
  first();  // the sums the second pass reads
  if (state.range(0) == 1) timed(state, d, x.bytes(), first);
  else timed(state, d, 2 * x.bytes(), [&] { gizml::detail::run<norms::GroupNorm>(g, channels); });
}

void BM_RowNormRope(benchmark::State& state) {  // BF16 rows of 3072, heads of 128, in place
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor start = Tensor::normal(Key{1, 1}, {kRows, kWidth}, d).to(DType::BF16);
  Tensor v = start.clone();
  const Tensor w = Tensor::normal(Key{2, 2}, {kWidth}, d);
  const Tensor cos = Tensor::uniform(Key{6, 6}, {kRows, kWidth / 2}, d), sin = Tensor::uniform(Key{7, 7}, {kRows, kWidth / 2}, d);
  const gizml::Gpu g{d, nullptr};
  timedInPlace(state, d, 2 * v.bytes() + cos.bytes() + sin.bytes(), v, start, [&] {
    netops::rowNormRopeInto(g, v.data<std::uint16_t>(), kWidth, kRows, kWidth, 128, w.data<float>(), 1e-6,
                            cos.data<float>(), sin.data<float>());
  });
}

}  // namespace

GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({kRows, kWidth})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_ModulatedNorm)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_FewRows)->ArgsProduct({{0, 1, 2, 3}, {1, 4}})->Unit(benchmark::kMicrosecond)->UseRealTime();
GIZML_BENCHMARK(BM_GatedNormAdd)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_ModulatedInt8Rows)->Arg(kRows)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_PixelNorm)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_FewChannelsPixelNorm)->Arg(4)->Arg(16)->Arg(128)->Unit(benchmark::kMicrosecond)->UseRealTime();
GIZML_BENCHMARK(BM_Bf16PixelNorm)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_GroupNorm)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_SmallGroupNorm)
    ->Args({32, 96})
    ->Args({64, 256})
    ->Args({512, 64})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
GIZML_BENCHMARK(BM_GroupNormPass)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_RowNormRope)->Unit(benchmark::kMillisecond)->UseRealTime();
