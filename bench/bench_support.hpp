// What every benchmark file shares: the device to run on and waiting for it.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include "gizml/gizml.hpp"

namespace gizml::bench {

/// The CPU's model name (/proc/cpuinfo), so a ratio says which machine it was measured on.
inline std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

/// GPU 0 when GIZML_BENCH_DEVICE=cuda, else the host.
inline Device benchDevice() {
  const char* d = std::getenv("GIZML_BENCH_DEVICE");
  return d && std::string(d) == "cuda" ? Device::cuda(0) : Device::host();
}

/// Waits for the device's queued work (a no-op on the host), so a timing covers the op.
inline void finish(const Device& d) {
  if (d.isCuda()) Gpu::open(d.index).synchronize();
}

/// The end of a timed iteration of a bandwidth benchmark: on a GPU, waits for the queued work only
/// at the end of the run's last iteration; a no-op on the host. The other iterations' ops queue
/// behind each other on the stream, so the timed span is the GPU's own time for all of them, not
/// each op's launch and the host's wake-up after it as well (some 10 us an op: a sixth of a 100 MB
/// copy's 60 us on an H200). Every iteration's work is still inside the span. (The FLOP-bound
/// benchmarks, whose kernels are long, still wait each time: finish.)
class IterationEnd {
 public:
  IterationEnd(const benchmark::State& state, Device d) : last_(state.max_iterations), d_(d) {}
  void operator()() {
    if (++done_ == last_) finish(d_);
  }

 private:
  benchmark::IterationCount last_, done_ = 0;
  Device d_;
};

/// Runs a benchmark's body with its exception (a gizml::Error: no GPU, a failed launch) made that
/// benchmark's error line, so that one failing op does not end the run and lose the others.
template <class Body>
void guardedRun(benchmark::State& state, Body body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
template <void (*Fn)(benchmark::State&)>
void guarded(benchmark::State& state) {
  guardedRun(state, [&] { Fn(state); });
}
template <class Fn, class... Args>
void guardedCall(benchmark::State& state, Fn fn, Args... args) {
  guardedRun(state, [&] { fn(state, args...); });
}

/// A copy of rows x cols floats from one buffer to another (reads and writes the bytes once each),
/// threads splitting it as they split the ops: the bandwidth every op's bytes/s is read against.
inline void BM_Copy(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) * static_cast<std::size_t>(state.range(1)) * 4;
  const Device d = benchDevice();
  Tensor src = Tensor::uniform(Key{1, 1}, {state.range(0), state.range(1)}, d);
  Tensor dst = Tensor::zeros({state.range(0), state.range(1)}, DType::F32, d);
  IterationEnd end(state, d);
  for (auto _ : state) {
    if (d.isHost()) {
      // Threads split the copy as they split the ops.
      const auto* s = static_cast<const char*>(src.raw());
      auto* t = static_cast<char*>(dst.raw());
      const std::size_t chunk = 1 << 20;
#pragma omp parallel for schedule(static)
      for (std::size_t off = 0; off < bytes; off += chunk) std::memcpy(t + off, s + off, std::min(chunk, bytes - off));
    } else {
      dst.copyFrom(src);  // device to device: the host does not wait (cudaMemcpy's rule)
    }
    end();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(2 * bytes) * state.iterations());
}

/// Runs `op` in the timing loop, counting `bytes` an iteration (each input read once, each output
/// written once). Once untimed first: the outputs are fresh allocations, whose first touch (the
/// kernel clearing 100 MB of new pages) would otherwise land in the first timed iteration (the
/// copy's output is touched too: BM_Copy's zeros).
template <class Op>
void timed(benchmark::State& state, Device d, std::int64_t bytes, Op op) {
  op();
  finish(d);
  IterationEnd end(state, d);
  for (auto _ : state) {
    op();
    end();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(bytes * state.iterations());
}

/// timed, also counting the `values` an iteration reads (values/s).
template <class Op>
void timedValues(benchmark::State& state, Device d, std::int64_t values, std::int64_t bytes, Op op) {
  timed(state, d, bytes, op);
  state.SetItemsProcessed(values * state.iterations());
}

}  // namespace gizml::bench

// BENCHMARK and BENCHMARK_CAPTURE with the body guarded (guardedRun), under the function's own name.
// (BENCHMARK_CAPTURE pastes its function's name into an identifier: it takes guardedCall unqualified.)
#define GIZML_BENCHMARK(fn) BENCHMARK(::gizml::bench::guarded<fn>)->Name(#fn)
#define GIZML_BENCHMARK_CAPTURE(fn, name, ...) \
  BENCHMARK_CAPTURE(guardedCall, name, fn, __VA_ARGS__)->Name(#fn "/" #name)
using gizml::bench::guardedCall;
