// The exact attention on a transformer's shape (batch x heads = 16, t = 1024, d = e = 64), causal
// and not, in FLOP/s (4 d FLOPs a visible (query, key) pair: q·k and w v, each a multiply and an
// add). Where OpenBLAS is found (the host's GEMM benchmark's dependency), its cblas_sgemm runs the
// same products unfused first (per item S = Q Kᵀ, then O = S V: the non-causal FLOPs) and each
// attention line's `x_sgemm` counter is its FLOP/s over that rate, measured in the same run.
// BM_AttentionDecode is a decoder's step (one query a head over a KV cache), in bytes/s beside a
// copy. GIZML_BENCH_DEVICE=cuda runs attention on GPU 0 (the exact SIMT kernel; there is no baseline).
// BM_AttentionRowsFast is attentionRows' fast path (BF16 flash attention on matrix cores) on a video
// model's shape (24 heads of 128, 8192 rows of BF16 qkv, one group), in TFLOP/s; it runs only with
// GIZML_BENCH_DEVICE=cuda (on the host attentionRows is the exact op, benchmarked above).
// BM_AttentionRowsQuantized is the same with quantized = true (SageAttention2's INT8 Q Kᵀ, E4M3 P V:
// flash_quant_cuda.cu; its time includes the K-mean, scale and code launches), same FLOP count. Beside
// them, on the same model's heads, the same flash kernel's other two ops: BM_CrossAttentionRowsFast (8192
// query rows over 512 rows of text keys and values) and BM_Neighborhood3dFast (latent videos of 8 x 32 x
// 32 and 4 x 60 x 104 cells, kernel 3 x 7 x 7); their FLOPs count the (query, key) pairs of the op's
// definition, so the neighborhood's TFLOP/s is useful work (the kernel also runs the masked pairs of
// each tile's box).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "bench_support.hpp"
#include "gizml/gizml.hpp"
#if GIZML_BENCH_OPENBLAS
#include <cblas.h>
#endif

using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;

namespace {

constexpr std::int64_t kItems = 16, kT = 1024, kD = 64;

double attentionFlops(bool causal) {
  const double pairs = causal ? kT * (kT + 1) / 2.0 : double(kT) * kT;
  return kItems * pairs * 4.0 * kD;
}

/// The baseline's best FLOP/s so far in this run (0 when it has not run). The best, not the last:
/// with repetitions in a random interleaving the last can be a run a neighbour slowed.
double gSgemmRate = 0;

/// Times the loop by the clock too, so a benchmark can compare its own rate with another's.
template <class Body>
double timedRate(benchmark::State& state, double flops, Body body) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) body();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  return flops * static_cast<double>(state.iterations()) / seconds;
}

#if GIZML_BENCH_OPENBLAS
void BM_AttentionBaseline_sgemm(benchmark::State& state) {
  Tensor q = Tensor::normal(Key{1, 1}, {kItems, kT, kD}), k = Tensor::normal(Key{2, 2}, {kItems, kT, kD});
  Tensor v = Tensor::normal(Key{3, 3}, {kItems, kT, kD});
  Tensor s = Tensor::empty({kT, kT}), o = Tensor::empty({kItems, kT, kD});
  const double rate = timedRate(state, attentionFlops(false), [&] {
    for (std::int64_t b = 0; b < kItems; ++b) {
      const float *qb = q.data<float>() + b * kT * kD, *kb = k.data<float>() + b * kT * kD,
                  *vb = v.data<float>() + b * kT * kD;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kT, kT, kD, 1.0f, qb, kD, kb, kD, 0.0f, s.data<float>(), kT);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kT, kD, kT, 1.0f, s.data<float>(), kT, vb, kD, 0.0f,
                  o.data<float>() + b * kT * kD, kD);
    }
  });
  gSgemmRate = std::max(gSgemmRate, rate);
}
GIZML_BENCHMARK(BM_AttentionBaseline_sgemm)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

void BM_Attention(benchmark::State& state) {
  const bool causal = state.range(0) != 0;
  const gizml::Device d = gizml::bench::benchDevice();
  Tensor q = Tensor::normal(Key{1, 1}, {kItems, kT, kD}, d), k = Tensor::normal(Key{2, 2}, {kItems, kT, kD}, d);
  Tensor v = Tensor::normal(Key{3, 3}, {kItems, kT, kD}, d);
  const double rate = timedRate(state, attentionFlops(causal), [&] {
    Tensor out = netops::attention(q, k, v, 0.125, causal);
    gizml::bench::finish(d);
    benchmark::DoNotOptimize(out.raw());
  });
  if (gSgemmRate > 0 && d.isHost()) state.counters["x_sgemm"] = rate / gSgemmRate;
}
GIZML_BENCHMARK(BM_Attention)->ArgName("causal")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same with dropout (rate 0.1, not causal), as in training: beside BM_Attention/causal:0, what
// dropout costs (a Philox word a score, and the value step one query at a time, since a dropped
// key is skipped for its query alone).
void BM_AttentionDropout(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  Tensor q = Tensor::normal(Key{1, 1}, {kItems, kT, kD}, d), k = Tensor::normal(Key{2, 2}, {kItems, kT, kD}, d);
  Tensor v = Tensor::normal(Key{3, 3}, {kItems, kT, kD}, d);
  const double rate = timedRate(state, attentionFlops(false), [&] {
    Tensor out = netops::attention(q, k, v, 0.125, false, 0.1, Key{9, 9});
    gizml::bench::finish(d);
    benchmark::DoNotOptimize(out.raw());
  });
  if (gSgemmRate > 0 && d.isHost()) state.counters["x_sgemm"] = rate / gSgemmRate;
}
GIZML_BENCHMARK(BM_AttentionDropout)->Unit(benchmark::kMillisecond)->UseRealTime();

// A decoder's step: one query a head over a KV cache (32 heads, tk = 4096, d = e = 128): the keys
// and values are read once, so its bytes/s is read against a copy of as many floats.
constexpr std::int64_t kHeads = 32, kCache = 4096, kHead = 128;

void BM_AttentionDecode(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  Tensor q = Tensor::normal(Key{4, 4}, {kHeads, 1, kHead}, d), k = Tensor::normal(Key{5, 5}, {kHeads, kCache, kHead}, d);
  Tensor v = Tensor::normal(Key{6, 6}, {kHeads, kCache, kHead}, d);
  timedRate(state, kHeads * kCache * 4.0 * kHead, [&] {
    Tensor out = netops::attention(q, k, v, 1.0 / std::sqrt(double(kHead)), true);
    gizml::bench::finish(d);
    benchmark::DoNotOptimize(out.raw());
  });
  state.SetBytesProcessed(static_cast<std::int64_t>(2 * kHeads * kCache * kHead * 4) * state.iterations());
}
GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({kHeads * kCache, kHead})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_AttentionDecode)->Unit(benchmark::kMillisecond)->UseRealTime();

// attentionRows' fast path on a video diffusion transformer's shape: qkv [8192, 3 x 24 x 128] BF16,
// not causal, one group; 4 head FLOPs a (query, key) pair, as above.
constexpr std::int64_t kVideoRows = 8192, kVideoHeads = 24, kVideoHead = 128;

/// attentionRows on the video shape, BF16 (quantized false) or the quantized path (true: INT8 Q Kᵀ,
/// E4M3 P V, on a GPU whose kernel has FP8 matrix cores; elsewhere attentionRows runs its BF16 path).
void attentionRowsVideo(benchmark::State& state, bool quantized) {
  const gizml::Device d = gizml::bench::benchDevice();
  if (d.isHost()) {
    state.SkipWithError("the fast path runs on a GPU: set GIZML_BENCH_DEVICE=cuda");
    return;
  }
  const Tensor qkv =
      Tensor::normal(Key{7, 7}, {kVideoRows, 3 * kVideoHeads * kVideoHead}, d).to(gizml::DType::BF16);
  Tensor out = Tensor::empty({kVideoRows, kVideoHeads * kVideoHead}, gizml::DType::BF16, d);
  const double flops = double(kVideoHeads) * kVideoRows * kVideoRows * 4.0 * kVideoHead;
  timedRate(state, flops, [&] {
    netops::attentionRows(qkv, kVideoHeads, kVideoHead, quantized, 0, out);
    gizml::bench::finish(d);
  });
  state.counters["TFLOP/s"] = benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AttentionRowsQuantized(benchmark::State& state) { attentionRowsVideo(state, true); }

void BM_AttentionRowsFast(benchmark::State& state) { attentionRowsVideo(state, false); }
// crossAttentionRows' fast path: q [8192, 24 x 128] over kv [512, 2 x 24 x 128], BF16 in and out.
constexpr std::int64_t kTextRows = 512;

void BM_CrossAttentionRowsFast(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  if (d.isHost()) {
    state.SkipWithError("the fast path runs on a GPU: set GIZML_BENCH_DEVICE=cuda");
    return;
  }
  const std::int64_t width = kVideoHeads * kVideoHead;
  const Tensor q = Tensor::normal(Key{8, 8}, {kVideoRows, width}, d).to(gizml::DType::BF16);
  const Tensor kv = Tensor::normal(Key{9, 9}, {kTextRows, 2 * width}, d).to(gizml::DType::BF16);
  Tensor out = Tensor::empty({kVideoRows, width}, gizml::DType::BF16, d);
  const double flops = double(kVideoHeads) * kVideoRows * kTextRows * 4.0 * kVideoHead;
  timedRate(state, flops, [&] {
    netops::crossAttentionRows(q, kv, kVideoHeads, kVideoHead, out);
    gizml::bench::finish(d);
  });
  state.counters["TFLOP/s"] = benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

// neighborhood3d's fast path: qkv [T H W, 3 x 24 x 128] BF16, kernel 3 x 7 x 7 (F32 out), on a grid
// of 8 x 32 x 32 (grid 0: a tile of 64 queries is two whole lines) and on a 480 x 832 video's latent
// of 4 x 60 x 104 (grid 1: wide lines, where a warp's queries see few of a line's keys).
constexpr std::int64_t kGrids[2][3] = {{8, 32, 32}, {4, 60, 104}}, kKernel[3] = {3, 7, 7};

void BM_Neighborhood3dFast(benchmark::State& state) {
  const gizml::Device d = gizml::bench::benchDevice();
  if (d.isHost()) {
    state.SkipWithError("the fast path runs on a GPU: set GIZML_BENCH_DEVICE=cuda");
    return;
  }
  const std::int64_t* kGrid = kGrids[state.range(0)];
  const std::int64_t rows = kGrid[0] * kGrid[1] * kGrid[2];
  const Tensor qkv = Tensor::normal(Key{10, 10}, {rows, 3 * kVideoHeads * kVideoHead}, d).to(gizml::DType::BF16);
  // The pairs of the op: each query's box is the product of its windows (all of length min(k, L)).
  double pairs = double(rows);
  for (int a = 0; a < 3; ++a) pairs *= double(std::min(kKernel[a], kGrid[a]));
  const double flops = double(kVideoHeads) * pairs * 4.0 * kVideoHead;
  timedRate(state, flops, [&] {
    Tensor out = netops::neighborhood3d(qkv, {kGrid[0], kGrid[1], kGrid[2]}, {kKernel[0], kKernel[1], kKernel[2]},
                                        kVideoHeads, 1.0 / std::sqrt(double(kVideoHead)));
    gizml::bench::finish(d);
    benchmark::DoNotOptimize(out.raw());
  });
  state.counters["TFLOP/s"] = benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

// Registered only when the benchmarks run on a GPU (GIZML_BENCH_DEVICE=cuda).
const bool kFastRegistered = [] {
  if (gizml::bench::benchDevice().isHost()) return false;
  benchmark::RegisterBenchmark("BM_AttentionRowsFast", gizml::bench::guarded<BM_AttentionRowsFast>)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("BM_AttentionRowsQuantized", gizml::bench::guarded<BM_AttentionRowsQuantized>)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_CrossAttentionRowsFast", gizml::bench::guarded<BM_CrossAttentionRowsFast>)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Neighborhood3dFast", gizml::bench::guarded<BM_Neighborhood3dFast>)
      ->ArgName("grid")
      ->Arg(0)
      ->Arg(1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  return true;
}();

}  // namespace
