// Row ops on large shapes against a plain copy of the same bytes, measured in the same run, so the
// ratio to the machine's bandwidth can be read: bytes/s counts the bytes each op must read and
// write once. BM_ExpPass is exp alone over the logits (crossEntropy should be close to it: bound
// by exp, not by its reduction order). Set GIZML_BENCH_DEVICE=cuda to run on GPU 0.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exact/math.hpp"
#include "exact/vec16.hpp"
#include "bench_support.hpp"
#include "gizml/gizml.hpp"

using gizml::Device;
using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;

namespace {

void setBytes(benchmark::State& state, double bytesPerIteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytesPerIteration) * state.iterations());
}


void BM_LayerNorm(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n}, d);
  Tensor w = Tensor::normal(Key{3, 3}, {n}, d), b = Tensor::normal(Key{4, 4}, {n}, d);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    auto out = netops::layerNorm(x, w, b, 1e-5);
    end();
    benchmark::DoNotOptimize(out.y.raw());
  }
  setBytes(state, 2.0 * rows * n * 4);  // x in, y out
}

void BM_RmsNorm(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n}, d), w = Tensor::normal(Key{3, 3}, {n}, d);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    auto out = netops::rmsNorm(x, w, 1e-6);
    end();
    benchmark::DoNotOptimize(out.y.raw());
  }
  setBytes(state, 2.0 * rows * n * 4);  // x in, y out
}

void BM_LayerNormGrad(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n}, d), dy = Tensor::normal(Key{5, 5}, {rows, n}, d);
  Tensor w = Tensor::normal(Key{3, 3}, {n}, d), b = Tensor::normal(Key{4, 4}, {n}, d);
  auto fwd = netops::layerNorm(x, w, b, 1e-5);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    auto g = netops::layerNormGrad(dy, x, w, fwd.mean, fwd.rstd);
    end();
    benchmark::DoNotOptimize(g.dx.raw());
  }
  setBytes(state, 3.0 * rows * n * 4);  // dy and x in, dx out (the column pass reads them again)
}

void BM_Dropout(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n}, d);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    Tensor y = x.dropout(Key{6, 6}, 0.1);
    end();
    benchmark::DoNotOptimize(y.raw());
  }
  setBytes(state, 2.0 * rows * n * 4);
}

std::vector<std::int64_t> labelsFor(std::int64_t rows, std::int64_t classes) {
  std::vector<std::int64_t> l(rows);
  for (std::int64_t r = 0; r < rows; ++r) l[r] = (r * 7919) % classes;
  return l;
}

void BM_CrossEntropyRows(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n}, d);
  auto labels = labelsFor(rows, n);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    Tensor l = netops::crossEntropyRows(x, labels);
    end();
    benchmark::DoNotOptimize(l.raw());
  }
  setBytes(state, 1.0 * rows * n * 4);
  state.counters["exp/s"] = benchmark::Counter(static_cast<double>(rows * n) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_CrossEntropyGrad(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n}, d);
  auto labels = labelsFor(rows, n);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    Tensor g = netops::crossEntropyGrad(x, labels, 1.0);
    end();
    benchmark::DoNotOptimize(g.raw());
  }
  setBytes(state, 2.0 * rows * n * 4);
  state.counters["exp/s"] = benchmark::Counter(static_cast<double>(rows * n) * state.iterations(), benchmark::Counter::kIsRate);
}

// exp alone over the same elements, 16 lanes at a time, threads over rows: the floor for
// crossEntropy on the host.
void BM_ExpPass(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  Tensor x = Tensor::normal(Key{2, 2}, {rows, n});
  const float* p = x.data<float>();
  for (auto _ : state) {
    gizml::exact::f32x16 total{};
#pragma omp parallel
    {
      gizml::exact::f32x16 acc{};
#pragma omp for schedule(static)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t i = 0; i < n; i += 16) acc += gizml::exact::expLanes(gizml::exact::load16(p + r * n + i, n - i));
#pragma omp critical
      total += acc;
    }
    benchmark::DoNotOptimize(total);
  }
  setBytes(state, 1.0 * rows * n * 4);
  state.counters["exp/s"] = benchmark::Counter(static_cast<double>(rows * n) * state.iterations(), benchmark::Counter::kIsRate);
}

}  // namespace

GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_LayerNorm)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_RmsNorm)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_LayerNormGrad)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_Dropout)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({2048, 32000})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_ExpPass)->Args({2048, 32000})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_CrossEntropyRows)->Args({2048, 32000})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_CrossEntropyGrad)->Args({2048, 32000})->Unit(benchmark::kMillisecond)->UseRealTime();
