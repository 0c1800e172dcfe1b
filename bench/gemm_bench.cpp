// The exact GEMM and what is built on it (affine, lazyConv) on the host against OpenBLAS's
// cblas_sgemm on the same product shapes, measured in the same run; the summary prints gizml /
// OpenBLAS per shape. The gizml bodies are gemm_gizml.hpp's (gizml_bench runs them on the GPU).
// OpenBLAS is a benchmark-only dependency. Machines here may set OPENBLAS_CORETYPE and
// OPENBLAS_L2_SIZE, which hold OpenBLAS to older kernels: this program re-executes itself with
// both unset (for its own process only) and prints the kernel OpenBLAS chose.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "gemm_gizml.hpp"

using gizml::Key;
using gizml::Tensor;

namespace {

using gizml::bench::gemmFlops;
using gizml::bench::setFlops;
const gizml::Device host = gizml::Device::host();

// gizml: C [m, n] = A [m, k] W [n, k]ᵀ, exact (the body gizml_bench runs too).
void BM_Gemm_gizml(benchmark::State& state) {
  gizml::bench::gemm(state, host, state.range(0), state.range(1), state.range(2), gizml::DType::F32);
}

// OpenBLAS: the same product, row-major A times Wᵀ.
void BM_Gemm_openblas(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Tensor a = Tensor::normal(Key{1, 1}, {m, k}), w = Tensor::normal(Key{2, 2}, {n, k});
  Tensor c = Tensor::empty({m, n});
  for (auto _ : state)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data<float>(), k, w.data<float>(), k, 0.0f,
                c.data<float>(), n);
  setFlops(state, gemmFlops(m, n, k));
}

void BM_Affine_gizml(benchmark::State& state) {
  gizml::bench::affine(state, host, state.range(0), state.range(1), state.range(2));
}

// lazyConv: o <- c channels, 3 x 3, pad 1, h x w; its product is [o, h w] x [c 9, h w].
void BM_LazyConv_gizml(benchmark::State& state) {
  gizml::bench::lazyConv(state, host, state.range(0), state.range(1), state.range(2), gizml::DType::F32);
}

// OpenBLAS on the convolution's product shape (patches built outside the timing): the peak
// such a product reaches here.
void BM_LazyConv_openblas(benchmark::State& state) {
  const std::int64_t o = state.range(0), c = state.range(1), hw = state.range(2);
  Tensor x = Tensor::normal(Key{6, 6}, {c, hw, hw}), w = Tensor::normal(Key{7, 7}, {o, c * 9});
  Tensor patches = gizml::netops::patchRows(x, 3, 3, 1, 0, hw);
  Tensor out = Tensor::empty({o, hw * hw});
  for (auto _ : state)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, o, hw * hw, c * 9, 1.0f, w.data<float>(), c * 9,
                patches.data<float>(), hw * hw, 0.0f, out.data<float>(), hw * hw);
  setFlops(state, gemmFlops(o, hw * hw, c * 9));
}

/// Prints the console table, then gizml / OpenBLAS for each pair of benchmarks on one shape.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      auto it = r.counters.find("FLOP/s");
      if (it != r.counters.end()) rates_[r.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nOpenBLAS kernel: %s\n", openblas_get_corename());
    for (const auto& [name, rate] : rates_) {
      auto at = name.find("_gizml");
      if (at == std::string::npos) continue;
      std::string twin = name;
      twin.replace(at, 6, "_openblas");
      if (name.rfind("BM_Affine", 0) == 0) twin = "BM_Gemm_openblas" + name.substr(name.find('/'));
      auto other = rates_.find(twin);
      std::printf("%-40s %8.1f GFLOP/s", name.c_str(), rate / 1e9);
      if (other != rates_.end()) std::printf("   OpenBLAS %8.1f GFLOP/s   ratio %.3f", other->second / 1e9, rate / other->second);
      std::printf("\n");
    }
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace

BENCHMARK(BM_Gemm_gizml)->Args({2048, 2048, 2048})->Args({1024, 1024, 4096})->Args({512, 4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Gemm_openblas)->Args({2048, 2048, 2048})->Args({1024, 1024, 4096})->Args({512, 4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Affine_gizml)->Args({512, 4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LazyConv_gizml)->Args({64, 64, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LazyConv_openblas)->Args({64, 64, 128})->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("OPENBLAS_L2_SIZE")) {
    // OpenBLAS read them when it loaded: start again without them (this process only).
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    execv("/proc/self/exe", argv);
    std::perror("gemm_bench: re-exec without OPENBLAS_CORETYPE failed; continuing with them set");
  }
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
