// The gizml GEMM, affine and lazyConv benchmark bodies, written once: gizml_bench runs them on the
// host or GPU 0 (GEMM and lazyConv also at BF16 compute on the GPU), gizml_gemm_bench runs them on
// the host beside OpenBLAS on the same product shapes.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "bench_support.hpp"
#include "gizml/gizml.hpp"

namespace gizml::bench {

inline double gemmFlops(double m, double n, double k) { return 2.0 * m * n * k; }

inline void setFlops(benchmark::State& state, double perIteration) {
  state.counters["FLOP/s"] = benchmark::Counter(perIteration * state.iterations(), benchmark::Counter::kIsRate);
}

/// False (and the benchmark marked skipped) when `d` is a GPU this machine does not have.
inline bool deviceAvailable(benchmark::State& state, const Device& d) {
  if (d.isCuda() && gpuCount() == 0) {
    state.SkipWithError("no CUDA GPU");
    return false;
  }
  return true;
}

inline void labelCompute(benchmark::State& state, DType compute, const char* what) {
  state.SetLabel(std::string(compute == DType::BF16 ? "BF16 matrix cores" : "exact F32") + what);
}

/// C [m, n] = A [m, k] W [n, k]ᵀ.
inline void gemm(benchmark::State& state, const Device& d, std::int64_t m, std::int64_t n, std::int64_t k,
                 DType compute) {
  if (!deviceAvailable(state, d)) return;
  Tensor a = Tensor::normal(Key{1, 1}, {m, k}, d), w = Tensor::normal(Key{2, 2}, {n, k}, d);
  Tensor c = Tensor::empty({m, n}, DType::F32, d);
  for (auto _ : state) {
    lazyMatmul(a, w, compute).storeInto(c);
    finish(d);
  }
  setFlops(state, gemmFlops(m, n, k));
  labelCompute(state, compute, "");
}

/// x [rows, in] wᵀ + b, a new output each time (as a layer runs it).
inline void affine(benchmark::State& state, const Device& d, std::int64_t rows, std::int64_t out, std::int64_t in) {
  if (!deviceAvailable(state, d)) return;
  Tensor x = Tensor::normal(Key{3, 3}, {rows, in}, d), w = Tensor::normal(Key{4, 4}, {out, in}, d);
  Tensor b = Tensor::normal(Key{5, 5}, {out}, d);
  for (auto _ : state) {
    benchmark::DoNotOptimize(netops::affine(x, w, b).raw());
    finish(d);
  }
  setFlops(state, gemmFlops(rows, out, in));
}

/// o <- c channels, 3 x 3, pad 1, hw x hw: the product [o, hw hw] x [c 9, hw hw] (implicit GEMM).
inline void lazyConv(benchmark::State& state, const Device& d, std::int64_t o, std::int64_t c, std::int64_t hw,
                     DType compute) {
  if (!deviceAvailable(state, d)) return;
  Tensor x = Tensor::normal(Key{6, 6}, {c, hw, hw}, d), w = Tensor::normal(Key{7, 7}, {o, c * 9}, d);
  Tensor out = Tensor::empty({o, hw * hw}, DType::F32, d);
  for (auto _ : state) {
    gizml::lazyConv(w, x, 3, 3, 1, compute).storeInto(out);
    finish(d);
  }
  setFlops(state, gemmFlops(o, hw * hw, c * 9));
  labelCompute(state, compute, ", implicit GEMM");
}

}  // namespace gizml::bench
