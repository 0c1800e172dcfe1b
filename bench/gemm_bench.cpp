// The exact GEMM and what is built on it (affine, lazyMatmul with bias + GELU, lazyConv) on the
// host against OpenBLAS's cblas_sgemm on the same product shapes, measured in the same run: each
// shape registers gizml's benchmark beside OpenBLAS's, and by default each runs 5 times in a
// random interleaving (so a noisy neighbour slows both alike); the summary prints the CPU, the
// OpenBLAS kernel and, per shape, gizml / OpenBLAS of the medians. The BM_Paired_* benchmarks
// alternate the two call by call and give the median of the per-pair ratios: on a machine whose
// load changes every few seconds, they are the ratios to quote. The gizml bodies of the single
// benchmarks are gemm_gizml.hpp's (gizml_bench runs them on the GPU).
//
// OpenBLAS is a benchmark-only dependency. Machines here may set OPENBLAS_CORETYPE and
// OPENBLAS_L2_SIZE, which hold OpenBLAS to older kernels: this program re-executes itself with
// both unset (for its own process only) and prints the kernel OpenBLAS chose.
// GIZML_BENCH_OPENBLAS_CORETYPE=Haswell (any OpenBLAS core name) sets OPENBLAS_CORETYPE instead,
// for comparing a build for another ISA (the x86-64-v3 build against OpenBLAS's AVX2 kernel).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

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

// OpenBLAS's worker threads spin for a while (THREAD_TIMEOUT, ~2^28 cycles) after a call: in one
// process with gizml's OpenMP threads, they would take a core from the next gizml benchmark
// (measured here: both at half rate when interleaved, each at full rate alone). After its timing
// loop an OpenBLAS benchmark ends them; its next call starts them again (in the warm-up run).
extern "C" void blas_thread_shutdown_(void);

// OpenBLAS: the same product, row-major A times Wᵀ.
void BM_Gemm_openblas(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Tensor a = Tensor::normal(Key{1, 1}, {m, k}), w = Tensor::normal(Key{2, 2}, {n, k});
  Tensor c = Tensor::empty({m, n});
  for (auto _ : state)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data<float>(), k, w.data<float>(), k, 0.0f,
                c.data<float>(), n);
  blas_thread_shutdown_();
  setFlops(state, gemmFlops(m, n, k));
}

void BM_Affine_gizml(benchmark::State& state) {
  gizml::bench::affine(state, host, state.range(0), state.range(1), state.range(2));
}

// lazyMatmul(x, w).bias(b).gelu().store(), a new output each time: the epilogue is applied in the
// GEMM's store, so this should cost what the product alone costs.
void BM_AffineGelu_gizml(benchmark::State& state) {
  const std::int64_t rows = state.range(0), out = state.range(1), in = state.range(2);
  Tensor x = Tensor::normal(Key{3, 3}, {rows, in}), w = Tensor::normal(Key{4, 4}, {out, in});
  Tensor b = Tensor::normal(Key{5, 5}, {out});
  for (auto _ : state) benchmark::DoNotOptimize(gizml::lazyMatmul(x, w).bias(b).gelu().store().raw());
  setFlops(state, gemmFlops(rows, out, in));
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
  blas_thread_shutdown_();
  setFlops(state, gemmFlops(o, hw * hw, c * 9));
}

// ---- paired runs: gizml and OpenBLAS alternately, call by call ------------------------------------------
// On a machine shared with other work the load changes every few seconds, so two benchmarks run
// seconds apart can see different machines. Here each iteration times one gizml call and then
// one OpenBLAS call on the same shape; the ratio is the median over the iterations of OpenBLAS's
// time / gizml's (> 1: gizml faster), so each ratio compares neighbours in time.

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// GIZML_BENCH_OPENBLAS_KEEP_THREADS=1: OpenBLAS's threads are not ended after each paired call
/// (then they spin into the next gizml call; ending them costs OpenBLAS a thread start a call).
bool keepOpenBlasThreads() {
  static const bool keep = std::getenv("GIZML_BENCH_OPENBLAS_KEEP_THREADS") != nullptr;
  return keep;
}

/// Times gizml() and openblas() alternately, once each an iteration; counters: the median ratio,
/// its quartiles, and each side's median GFLOP/s.
template <class G, class O>
void paired(benchmark::State& state, double flops, G gizmlCall, O openblasCall) {
  gizmlCall();  // warm both (page faults, OpenBLAS's threads)
  openblasCall();
  blas_thread_shutdown_();
  std::vector<double> ratio, tg, to;
  for (auto _ : state) {
    const double t0 = seconds();
    gizmlCall();
    const double t1 = seconds();
    openblasCall();
    const double t2 = seconds();
    if (!keepOpenBlasThreads()) blas_thread_shutdown_();  // its spinning threads would take a core from the next gizml call
    state.SetIterationTime(t2 - t0);
    tg.push_back(t1 - t0);
    to.push_back(t2 - t1);
    ratio.push_back((t2 - t1) / (t1 - t0));
  }
  std::vector<double> r = ratio;
  std::sort(r.begin(), r.end());
  state.counters["ratio"] = median(ratio);
  state.counters["ratio_q1"] = r[r.size() / 4];
  state.counters["ratio_q3"] = r[(3 * r.size()) / 4];
  state.counters["gizml_GFLOPs"] = flops / median(tg) / 1e9;
  state.counters["openblas_GFLOPs"] = flops / median(to) / 1e9;
}

void BM_Paired_Gemm(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Tensor a = Tensor::normal(Key{1, 1}, {m, k}), w = Tensor::normal(Key{2, 2}, {n, k});
  Tensor c = Tensor::empty({m, n}), c2 = Tensor::empty({m, n});
  paired(
      state, gemmFlops(m, n, k), [&] { gizml::lazyMatmul(a, w).storeInto(c); },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data<float>(), k, w.data<float>(), k,
                    0.0f, c2.data<float>(), n);
      });
}

// affine (x wᵀ + b, a new output each time, as a layer runs it) and lazyMatmul(...).bias().gelu()
// against OpenBLAS's bare product: their epilogues cost what they cost on top of the product.
void BM_Paired_Affine(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  // The 4th argument: 1 affine, 2 bias + GELU (not 0 / 1: gemm_gizml_bench.cpp says why).
  const bool gelu = state.range(3) == 2;
  Tensor x = Tensor::normal(Key{3, 3}, {m, k}), w = Tensor::normal(Key{4, 4}, {n, k}), b = Tensor::normal(Key{5, 5}, {n});
  Tensor c2 = Tensor::empty({m, n});
  paired(
      state, gemmFlops(m, n, k),
      [&] {
        benchmark::DoNotOptimize(
            (gelu ? gizml::lazyMatmul(x, w).bias(b).gelu().store() : gizml::netops::affine(x, w, b)).raw());
      },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data<float>(), k, w.data<float>(), k,
                    0.0f, c2.data<float>(), n);
      });
}

// lazyConv, patches included, against OpenBLAS on the prebuilt patches (its best case).
void BM_Paired_LazyConv(benchmark::State& state) {
  const std::int64_t o = state.range(0), c = state.range(1), hw = state.range(2);
  Tensor x = Tensor::normal(Key{6, 6}, {c, hw, hw}), w = Tensor::normal(Key{7, 7}, {o, c * 9});
  Tensor patches = gizml::netops::patchRows(x, 3, 3, 1, 0, hw);
  Tensor out = Tensor::empty({o, hw * hw}), out2 = Tensor::empty({o, hw * hw});
  paired(
      state, gemmFlops(o, hw * hw, c * 9), [&] { gizml::lazyConv(w, x, 3, 3, 1).storeInto(out); },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, o, hw * hw, c * 9, 1.0f, w.data<float>(), c * 9,
                    patches.data<float>(), hw * hw, 0.0f, out2.data<float>(), hw * hw);
      });
}

// conv1d (x [t, c], w [o, c, k], pad (k - 1) / 2, + bias), patches included, against OpenBLAS on
// the prebuilt patches (im2col1d [t, c k] times w [o, c k]ᵀ).
void BM_Paired_Conv1d(benchmark::State& state) {
  const std::int64_t t = state.range(0), c = state.range(1), o = state.range(2), k = state.range(3);
  Tensor x = Tensor::normal(Key{8, 8}, {t, c}), w = Tensor::normal(Key{9, 9}, {o, c, k});
  Tensor b = Tensor::normal(Key{10, 10}, {o});
  Tensor patches = gizml::netops::im2col1d(x, k, 1, (k - 1) / 2, 1);
  Tensor out2 = Tensor::empty({t, o});
  paired(
      state, gemmFlops(t, o, c * k),
      [&] { benchmark::DoNotOptimize(gizml::netops::conv1d(x, w, {b}, 1, (k - 1) / 2, 1).raw()); },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, o, c * k, 1.0f, patches.data<float>(), c * k,
                    w.data<float>(), c * k, 0.0f, out2.data<float>(), o);
      });
}

// convTranspose1d (x [n, c], w [c, o, k], stride 2, pad 1, + bias: an upsampling layer) against
// OpenBLAS's product alone (x times w as [c, o k], the cols before col2im1d).
void BM_Paired_ConvTranspose1d(benchmark::State& state) {
  const std::int64_t n = state.range(0), c = state.range(1), o = state.range(2), k = state.range(3);
  Tensor x = Tensor::normal(Key{11, 11}, {n, c}), w = Tensor::normal(Key{12, 12}, {c, o, k});
  Tensor b = Tensor::normal(Key{13, 13}, {o});
  Tensor cols = Tensor::empty({n, o * k});
  paired(
      state, gemmFlops(n, o * k, c),
      [&] { benchmark::DoNotOptimize(gizml::netops::convTranspose1d(x, w, {b}, 2, 1).raw()); },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, o * k, c, 1.0f, x.data<float>(), c, w.data<float>(),
                    o * k, 0.0f, cols.data<float>(), o * k);
      });
}

// int8RowsProduct (W8A8: the codes and scales of int8Rows, made outside the timing) against
// OpenBLAS's F32 product of the same shape (its matrix-vector product for one row): what the exact
// 8-bit product buys over the float one.
void BM_Paired_Int8RowsProduct(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Tensor x = Tensor::normal(Key{14, 14}, {m, k}), w = Tensor::normal(Key{15, 15}, {n, k});
  // The weights' codes as a layer stores them (I8); the activations' as int8Rows gives them here.
  const auto qx = gizml::netops::int8Rows(x), qw = gizml::netops::int8Rows(w);
  const Tensor qwI8 = qw.q.to(gizml::DType::I8);
  Tensor out = Tensor::empty({m, n}), out2 = Tensor::empty({m, n});
  paired(
      state, gemmFlops(m, n, k), [&] { gizml::netops::int8RowsProductInto(qx.q, qx.s, qwI8, qw.s, out); },
      [&] {
        if (m == 1)
          cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w.data<float>(), k, x.data<float>(), 1, 0.0f,
                      out2.data<float>(), 1);
        else
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data<float>(), k, w.data<float>(), k,
                      0.0f, out2.data<float>(), n);
      });
}

using gizml::bench::cpuModel;

/// Prints the console table, then for each shape gizml / OpenBLAS of the medians (of the single
/// runs without repetitions), with the CPU and OpenBLAS's kernel beside them.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.counters.count("ratio") && !r.error_occurred && r.run_type == Run::RT_Iteration) {
        auto& c = paired_[r.run_name.str()];
        for (const auto& [key, counter] : r.counters) c[key] = counter.value;
        continue;
      }
      auto it = r.counters.find("FLOP/s");
      if (it == r.counters.end() || r.error_occurred) continue;
      const std::string name = r.run_name.str();
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") medians_[name] = it->second.value;
      } else {
        single_[name] = it->second.value;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const std::string where = cpuModel() + ", OpenBLAS " + openblas_get_corename();
    std::printf("\nCPU: %s; gizml %d threads, OpenBLAS %d threads (%s)\n", cpuModel().c_str(), gizml::threads(),
                openblas_get_num_threads(), openblas_get_config());
    std::printf("OpenBLAS kernel: %s\n", openblas_get_corename());
    if (!rates().empty())
      std::printf("gizml / OpenBLAS (%s):\n", medians_.empty() ? "single runs" : "medians of the repetitions");
    for (const auto& [name, rate] : rates()) {
      auto at = name.find("_gizml");
      if (at == std::string::npos) continue;
      const std::string shape = name.substr(name.find('/'));
      std::string twin = name.substr(0, at) + "_openblas" + name.substr(at + 6);
      if (name.rfind("BM_Affine", 0) == 0) twin = "BM_Gemm_openblas" + shape;
      std::printf("  %-44s %7.1f GFLOP/s", name.c_str(), rate / 1e9);
      auto other = rates().find(twin);
      if (other != rates().end())
        std::printf("   OpenBLAS %7.1f GFLOP/s   ratio %.3f   [%s]", other->second / 1e9, rate / other->second,
                    where.c_str());
      if (name.rfind("BM_AffineGelu", 0) == 0) {
        auto bare = rates().find("BM_Gemm_gizml" + shape);
        if (bare != rates().end()) std::printf("   time / bare product %.3f", bare->second / rate);
      }
      std::printf("\n");
    }
    if (!paired_.empty()) {
      std::printf("paired, call by call (median of OpenBLAS time / gizml time over the iterations, [quartiles]):\n");
      for (const auto& [run, c] : paired_) {
        const std::string name = run.substr(0, run.find("/iterations"));
        std::printf("  %-44s gizml %7.1f  OpenBLAS %7.1f GFLOP/s   ratio %.3f [%.3f, %.3f]   [%s]\n", name.c_str(),
                    c.at("gizml_GFLOPs"), c.at("openblas_GFLOPs"), c.at("ratio"), c.at("ratio_q1"), c.at("ratio_q3"),
                    where.c_str());
      }
    }
  }

 private:
  const std::map<std::string, double>& rates() const { return medians_.empty() ? single_ : medians_; }
  std::map<std::string, double> single_, medians_;
  std::map<std::string, std::map<std::string, double>> paired_;
};

/// Each shape's gizml benchmark beside OpenBLAS's, so an interleaved run alternates them.
void registerAll() {
  auto reg = [](const char* name, void (*fn)(benchmark::State&), std::vector<std::int64_t> args) {
    benchmark::RegisterBenchmark(name, fn)->Args(args)->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  for (std::vector<std::int64_t> s : {std::vector<std::int64_t>{2048, 2048, 2048}, {1024, 1024, 4096}, {512, 4096, 1024}}) {
    reg("BM_Gemm_gizml", BM_Gemm_gizml, s);
    reg("BM_Gemm_openblas", BM_Gemm_openblas, s);
  }
  reg("BM_Affine_gizml", BM_Affine_gizml, {512, 4096, 1024});
  reg("BM_AffineGelu_gizml", BM_AffineGelu_gizml, {512, 4096, 1024});
  reg("BM_LazyConv_gizml", BM_LazyConv_gizml, {64, 64, 128});
  reg("BM_LazyConv_openblas", BM_LazyConv_openblas, {64, 64, 128});
  // The paired runs: a fixed count of pairs, not repeated (each is its own comparison).
  auto pair = [](const char* name, void (*fn)(benchmark::State&), std::vector<std::int64_t> args, int pairs) {
    benchmark::RegisterBenchmark(name, fn)
        ->Args(args)
        ->Iterations(pairs)
        ->Repetitions(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  pair("BM_Paired_Gemm", BM_Paired_Gemm, {2048, 2048, 2048}, 15);
  pair("BM_Paired_Gemm", BM_Paired_Gemm, {512, 4096, 1024}, 31);
  pair("BM_Paired_Affine", BM_Paired_Affine, {512, 4096, 1024, 1}, 31);
  pair("BM_Paired_Affine", BM_Paired_Affine, {512, 4096, 1024, 2}, 31);
  pair("BM_Paired_LazyConv", BM_Paired_LazyConv, {64, 64, 128}, 31);
  pair("BM_Paired_Conv1d", BM_Paired_Conv1d, {4096, 256, 256, 3}, 31);
  pair("BM_Paired_ConvTranspose1d", BM_Paired_ConvTranspose1d, {2048, 256, 256, 4}, 31);
  pair("BM_Paired_Int8RowsProduct", BM_Paired_Int8RowsProduct, {512, 3072, 3072}, 15);
  pair("BM_Paired_Int8RowsProduct", BM_Paired_Int8RowsProduct, {2048, 2048, 2048}, 15);
  pair("BM_Paired_Int8RowsProduct", BM_Paired_Int8RowsProduct, {512, 3072, 8192}, 15);  // long rows: blocks of k
  // Few rows: a decoding step (one token, or a few sequences' tokens) through a W8A8 layer.
  pair("BM_Paired_Int8RowsProduct", BM_Paired_Int8RowsProduct, {1, 3072, 3072}, 201);
  pair("BM_Paired_Int8RowsProduct", BM_Paired_Int8RowsProduct, {4, 3072, 3072}, 201);
}

/// Holds OpenBLAS to GIZML_BENCH_OPENBLAS_CORETYPE when that is set, else to its own choice: sets
/// or unsets OPENBLAS_CORETYPE (and unsets OPENBLAS_L2_SIZE) and re-executes this program when
/// the environment it loaded with differs, since OpenBLAS reads them when it loads.
void chooseOpenBlasCore(char** argv) {
  const char* want = std::getenv("GIZML_BENCH_OPENBLAS_CORETYPE");
  const char* have = std::getenv("OPENBLAS_CORETYPE");
  const bool coreOk = want ? (have && std::strcmp(want, have) == 0) : !have;
  if (coreOk && !std::getenv("OPENBLAS_L2_SIZE")) return;
  if (want) setenv("OPENBLAS_CORETYPE", want, 1);
  else unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
  execv("/proc/self/exe", argv);
  std::perror("gemm_bench: re-exec with the chosen OPENBLAS_CORETYPE failed; continuing as loaded");
}

}  // namespace

int main(int argc, char** argv) {
  chooseOpenBlasCore(argv);
  // Defaults (a flag given on the command line overrides them): 5 repetitions in a random
  // interleaving of all the benchmarks, only the aggregates printed.
  std::vector<char*> args(argv, argv + argc);
  char reps[] = "--benchmark_repetitions=5", mix[] = "--benchmark_enable_random_interleaving=true",
       aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {reps, mix, aggregates});
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  registerAll();
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
