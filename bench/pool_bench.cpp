// pool2d (max and average) and its gradient against a plain copy of the input's bytes, measured in
// the same run: bytes/s counts the bytes each op must read and write once (x in, y out; dy and x
// in, dx out for the gradient), so the ratio to the copy's bytes/s is the share of the machine's
// bandwidth reached. Set GIZML_BENCH_DEVICE=cuda to run on GPU 0.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "bench_support.hpp"
#include "gizml/gizml.hpp"

using gizml::Device;
using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;

namespace {

// Arguments: n, c, h, w (and size, stride for the pooling runs).
gizml::Shape imageShape(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), state.range(3)};
}

double outBytes(const benchmark::State& state) {
  const std::int64_t size = state.range(4), stride = state.range(5);
  const std::int64_t oh = (state.range(2) - size) / stride + 1, ow = (state.range(3) - size) / stride + 1;
  return 4.0 * state.range(0) * state.range(1) * oh * ow;
}

void BM_Pool2d(benchmark::State& state, bool average) {
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, imageShape(state), d);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    Tensor y = netops::pool2d(x, state.range(4), state.range(5), average);
    end();
    benchmark::DoNotOptimize(y.raw());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(x.bytes() + outBytes(state)) * state.iterations());
}

void BM_Pool2dGrad(benchmark::State& state, bool average) {
  const Device d = gizml::bench::benchDevice();
  Tensor x = Tensor::normal(Key{2, 2}, imageShape(state), d);
  Tensor dy = netops::pool2d(x, state.range(4), state.range(5), average);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    Tensor dx = netops::pool2dGrad(dy, x, state.range(4), state.range(5), average);
    end();
    benchmark::DoNotOptimize(dx.raw());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(2.0 * x.bytes() + outBytes(state)) * state.iterations());
}

}  // namespace

// A ResNet-like activation: [32, 64, 112, 112], 2x2 / 2 and 3x3 / 2 windows.
// The copy of the images' bytes ([32 64, 112 112] floats) the pooling runs are read against.
GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({32 * 64, 112 * 112})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK_CAPTURE(BM_Pool2d, max, false)->Args({32, 64, 112, 112, 2, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK_CAPTURE(BM_Pool2d, average, true)->Args({32, 64, 112, 112, 2, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK_CAPTURE(BM_Pool2d, max, false)->Args({32, 64, 112, 112, 3, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK_CAPTURE(BM_Pool2dGrad, max, false)->Args({32, 64, 112, 112, 2, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK_CAPTURE(BM_Pool2dGrad, average, true)->Args({32, 64, 112, 112, 2, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
