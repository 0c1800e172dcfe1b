// A language model's step on a decoder's shapes: argmax and candidates over [64, 152064] and [1,
// 32000] logits (values/s, and bytes/s against a copy of as many floats in the same run), the
// split sum, normRotate and siluMulRotated on [64, 4096] / [64, 11008]. GIZML_BENCH_DEVICE=cuda
// runs them on GPU 0.
#include <benchmark/benchmark.h>

#include "bench_support.hpp"
#include "gizml/gizml.hpp"

using gizml::DType;
using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;

namespace {

using gizml::bench::timedValues;

gizml::Gpu gpuOf(gizml::Device d) { return gizml::Gpu{d, nullptr}; }

void BM_ArgmaxInto(benchmark::State& state) {
  const std::int64_t rows = state.range(0), vocab = state.range(1);
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor logits = Tensor::normal(Key{1, 1}, {rows, vocab}, d);
  Tensor top = Tensor::empty({rows}, DType::F32, d);
  timedValues(state, d, rows * vocab, static_cast<std::int64_t>(logits.bytes()), [&] {
    netops::argmaxInto(gpuOf(d), rows, vocab, vocab, false, top.data<float>(), logits.data<float>());
  });
}

void BM_CandidatesInto(benchmark::State& state) {
  const std::int64_t rows = state.range(0), vocab = state.range(1);
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor logits = Tensor::normal(Key{1, 1}, {rows, vocab}, d);
  Tensor cand = Tensor::empty({rows, netops::CANDIDATE_ROW}, DType::F32, d);
  timedValues(state, d, rows * vocab, static_cast<std::int64_t>(logits.bytes() + cand.bytes()), [&] {
    netops::candidatesInto(gpuOf(d), rows, vocab, vocab, false, cand.data<float>(), logits.data<float>());
  });
}

void BM_SplitSumInto(benchmark::State& state) {  // 4 parts of [64, 4096], added into y
  const std::int64_t total = 64 * 4096, splits = 4;
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor p = Tensor::normal(Key{2, 2}, {splits, total}, d);
  Tensor y = Tensor::normal(Key{3, 3}, {total}, d);
  timedValues(state, d, splits * total, static_cast<std::int64_t>(p.bytes() + 2 * y.bytes()),
              [&] { netops::splitSumInto(gpuOf(d), y.data<float>(), p.data<float>(), total, splits, true); });
}

void BM_NormRotateInto(benchmark::State& state) {  // [64, 4096], rotated
  const std::int64_t rows = 64, width = 4096;
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor x = Tensor::normal(Key{4, 4}, {rows, width}, d), w = Tensor::normal(Key{5, 5}, {width}, d);
  const Tensor dd = Tensor::normal(Key{6, 6}, {width}, d);
  Tensor y = Tensor::empty({rows, width}, DType::F32, d);
  timedValues(state, d, rows * width, static_cast<std::int64_t>(x.bytes() + y.bytes()), [&] {
    netops::normRotateInto(gpuOf(d), rows, width, 1e-6, true, width, 0, y.data<float>(), x.data<float>(),
                           w.data<float>(), dd.data<float>());
  });
}

void BM_SiluMulRotatedInto(benchmark::State& state) {  // 2 parts of [64, 2 x 11008], rotated
  const std::int64_t rows = 64, ffn = 11008, parts = 2;
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor p = Tensor::normal(Key{7, 7}, {parts, rows, 2 * ffn}, d), dd = Tensor::normal(Key{8, 8}, {ffn}, d);
  Tensor y = Tensor::empty({rows, ffn}, DType::F32, d);
  timedValues(state, d, rows * ffn, static_cast<std::int64_t>(p.bytes() + y.bytes()), [&] {
    netops::siluMulRotatedInto(gpuOf(d), rows, ffn, parts, y.data<float>(), p.data<float>(), dd.data<float>());
  });
}

}  // namespace

GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({64, 152064})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_ArgmaxInto)->Args({64, 152064})->Args({1, 32000})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_CandidatesInto)->Args({64, 152064})->Args({1, 32000})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_SplitSumInto)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_NormRotateInto)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_SiluMulRotatedInto)->Unit(benchmark::kMillisecond)->UseRealTime();
