// The 8-bit rows on a diffusion transformer's activations ([8192, 3072]): int8Rows (x F32, or BF16)
// and hadamardRows in values/s (items) and bytes/s (x read once, the outputs written once), after a
// BM_Copy of their own (the same [8192, 3072]) for the machine's bandwidth, so that a filtered or
// shuffled run still pairs them with the right copy; each also on [32, 3072], which stays in
// the caches: the rate of its arithmetic alone. GIZML_BENCH_DEVICE=cuda runs them on GPU 0.
#include <benchmark/benchmark.h>

#include "bench_support.hpp"
#include "gizml/gizml.hpp"

using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;

namespace {

/// int8Rows of F32 x, or of BF16 x where `bf16` (half the bytes read).
void int8RowsBench(benchmark::State& state, bool bf16) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const int bits = static_cast<int>(state.range(2));
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor x = bf16 ? Tensor::normal(Key{7, 7}, {rows, n}, d).to(gizml::DType::BF16) : Tensor::normal(Key{7, 7}, {rows, n}, d);
  const auto out = netops::int8Rows(x, bits);
  gizml::bench::timedValues(state, d, rows * n, static_cast<std::int64_t>(x.bytes() + out.q.bytes() + out.s.bytes()),
                            [&] { netops::int8RowsInto(x, out.q, out.s, bits); });
}

void BM_Int8Rows(benchmark::State& state) { int8RowsBench(state, false); }
void BM_Int8RowsBF16(benchmark::State& state) { int8RowsBench(state, true); }

void BM_HadamardRows(benchmark::State& state) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  const gizml::Device d = gizml::bench::benchDevice();
  const Tensor x = Tensor::normal(Key{8, 8}, {rows, n}, d);
  const Tensor y = Tensor::empty({rows, n}, gizml::DType::F32, d);
  gizml::bench::timedValues(state, d, rows * n, static_cast<std::int64_t>(2 * x.bytes()),
                            [&] { netops::hadamardRowsInto(x, y); });
}

}  // namespace

GIZML_BENCHMARK(gizml::bench::BM_Copy)->Name("BM_Copy")->Args({8192, 3072})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_Int8Rows)->Args({8192, 3072, 8})->Args({32, 3072, 8})->Args({8192, 3072, 4})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_Int8RowsBF16)->Args({8192, 3072, 8})->Args({32, 3072, 8})->Args({8192, 3072, 4})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_HadamardRows)->Args({8192, 3072})->Args({32, 3072})->Unit(benchmark::kMillisecond)->UseRealTime();
