// gizml_bench's products: the exact GEMM, affine, lazyConv and int8RowsProduct on the host, or on
// GPU 0 with GIZML_BENCH_DEVICE=cuda, where GEMM and lazyConv also run at BF16 compute (matrix
// cores) and int8RowsProduct on INT8 matrix cores. FLOP/s is each one's counter (a multiply-add
// two operations, as for the float products); the OpenBLAS comparison on the host is
// gizml_gemm_bench.
#include "gemm_gizml.hpp"

namespace {

using gizml::DType;
using gizml::bench::benchDevice;

// The 4th argument is the compute type's width: 32 (F32, exact) or 16 (BF16). Not 0 / 1: Debian's
// GCC 12.2 with AVX-512VL (-march=native here) builds the list {2048, 2048, 2048, 0} as four 2048s.
DType computeArg(const benchmark::State& state) { return state.range(3) == 16 ? DType::BF16 : DType::F32; }

void BM_Gemm(benchmark::State& state) {
  gizml::bench::gemm(state, benchDevice(), state.range(0), state.range(1), state.range(2), computeArg(state));
}
void BM_Affine(benchmark::State& state) {
  gizml::bench::affine(state, benchDevice(), state.range(0), state.range(1), state.range(2));
}
void BM_LazyConv(benchmark::State& state) {
  gizml::bench::lazyConv(state, benchDevice(), state.range(0), state.range(1), state.range(2), computeArg(state));
}

// The exact 8-bit product of int8Rows' codes (made outside the timing) of x [m, k] and w [n, k],
// the weights' codes I8, or I4 where the 4th argument is 4 (W4A8). Its bytes (both operands' codes and scales read once, out written once)
// beside its FLOP/s: with few rows of x it is a read of the weights, to be set against BM_Copy's
// rate in the same run.
void BM_Int8RowsProduct(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const gizml::Device d = benchDevice();
  if (!gizml::bench::deviceAvailable(state, d)) return;
  const auto qx = gizml::netops::int8Rows(gizml::Tensor::normal(gizml::Key{14, 14}, {m, k}, d));
  const int bits = static_cast<int>(state.range(3));
  auto qw = gizml::netops::int8Rows(gizml::Tensor::normal(gizml::Key{15, 15}, {n, k}, d), bits);
  const DType stored = bits == 4 ? DType::I4 : DType::I8;
  if (qw.q.dtype() != stored) qw.q = qw.q.to(stored);  // the weights as a layer stores them (the host's are F32)
  gizml::Tensor out = gizml::Tensor::empty({m, n}, DType::F32, d);
  gizml::bench::IterationEnd end(state, d);
  for (auto _ : state) {
    gizml::netops::int8RowsProductInto(qx.q, qx.s, qw.q, qw.s, out);
    end();
    benchmark::DoNotOptimize(out.raw());
  }
  gizml::bench::setFlops(state, gizml::bench::gemmFlops(m, n, k));
  const std::size_t bytes = qx.q.bytes() + qx.s.bytes() + qw.q.bytes() + qw.s.bytes() + out.bytes();
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

// Shapes by device: a GPU needs a larger product to fill it; BF16 runs only where matrix cores are.
void gemmShapes(benchmark::internal::Benchmark* b) {
  if (benchDevice().isCuda()) {
    b->Args({4096, 4096, 4096, 32})->Args({4096, 4096, 4096, 16})->Args({512, 4096, 1024, 32})->Args({512, 4096, 1024, 16});
  } else {
    b->Args({2048, 2048, 2048, 32})->Args({512, 4096, 1024, 32});
  }
}
void int8ProductShapes(benchmark::internal::Benchmark* b) {
  // A decoding step's one row, 8 (the dot forms' most on AVX-512 and on a GPU), and many; 8-bit
  // weights, then 4-bit.
  b->Args({1, 3072, 3072, 8})->Args({8, 3072, 3072, 8})->Args({512, 3072, 3072, 8});
  if (benchDevice().isCuda()) b->Args({8192, 3072, 3072, 8});
  b->Args({1, 3072, 3072, 4})->Args({512, 3072, 3072, 4});
  if (benchDevice().isCuda()) b->Args({8192, 3072, 3072, 4});
}
void convShapes(benchmark::internal::Benchmark* b) {
  b->Args({64, 64, 128, 32});
  if (benchDevice().isCuda()) b->Args({64, 64, 128, 16})->Args({256, 256, 64, 32})->Args({256, 256, 64, 16});
}

}  // namespace

GIZML_BENCHMARK(BM_Gemm)->Apply(gemmShapes)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_Affine)->Args({512, 4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_LazyConv)->Apply(convShapes)->Unit(benchmark::kMillisecond)->UseRealTime();
GIZML_BENCHMARK(BM_Int8RowsProduct)->Apply(int8ProductShapes)->Unit(benchmark::kMillisecond)->UseRealTime();
