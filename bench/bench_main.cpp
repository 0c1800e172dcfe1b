// gizml_bench's main: the console table, then each op's bytes/s as a share of the copy measured
// just before it in the same run (each group registers a BM_Copy of its own size first:
// bench_support.hpp), so the ratio to the machine's bandwidth is printed, not
// left to the reader. With repetitions, the median of each against the copy's median.
//
// GIZML_BENCH_SHARES=<file> also appends each share line to that file as soon as its benchmark
// ends, flushed: a run stopped part-way (a GPU session's `timeout`, whose SIGTERM leaves no table)
// still leaves the shares of every benchmark it finished (tools/gpu-rows-sweep.sh, gpu-check.sh).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

class CopyRatioReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal: a log or a pipe gets the plain table (grep finds "^BM_").
  CopyRatioReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}
  ~CopyRatioReporter() override {
    if (shares_) std::fclose(shares_);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) failed_.push_back(r.benchmark_name() + ": " + r.error_message);
      // With --benchmark_repetitions the share is of the medians: each repetition's line and
      // the other aggregates (a mean, a standard deviation, a coefficient of variation) are skipped.
      const bool repeated = r.repetitions > 1;
      if (repeated ? r.run_type != Run::RT_Aggregate || r.aggregate_name != "median" : r.run_type != Run::RT_Iteration)
        continue;
      auto it = r.counters.find("bytes_per_second");
      if (it == r.counters.end() || r.error_occurred) continue;
      const std::string name = r.benchmark_name();
      if (name.find("Copy") != std::string::npos) {
        copyName_ = name;
        copyRate_ = it->second.value;
      } else if (copyRate_ > 0) {
        lines_.push_back({name, it->second.value / copyRate_, copyName_});
        if (shares_) {
          printLine(shares_, lines_.back());
          std::fflush(shares_);
        }
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const gizml::Device d = gizml::bench::benchDevice();
    std::printf("\nbytes/s as a share of the copy measured before it in this run (%s; CPU: %s, %d threads):\n",
                d.name().c_str(), gizml::bench::cpuModel().c_str(), gizml::threads());
    for (const auto& l : lines_) printLine(stdout, l);
    if (!failed_.empty()) {
      std::printf("\n%zu benchmarks FAILED:\n", failed_.size());
      for (const auto& f : failed_) std::printf("  %s\n", f.c_str());
    }
  }
  bool anyFailed() const { return !failed_.empty(); }

 private:
  struct Line {
    std::string name;
    double ratio;
    std::string copy;
  };
  static void printLine(std::FILE* to, const Line& l) {
    std::fprintf(to, "  %-58s %6.1f%%  of %s\n", l.name.c_str(), 100 * l.ratio, l.copy.c_str());
  }
  static std::FILE* sharesFile() {
    const char* path = std::getenv("GIZML_BENCH_SHARES");
    if (!path || !*path) return nullptr;
    std::FILE* f = std::fopen(path, "a");
    if (!f) std::fprintf(stderr, "gizml_bench: GIZML_BENCH_SHARES: cannot append to %s\n", path);
    return f;
  }
  std::string copyName_;
  double copyRate_ = 0;
  std::vector<Line> lines_;
  std::FILE* shares_ = sharesFile();
  std::vector<std::string> failed_;  // name: error (bench_support.hpp's guardedRun), each repetition
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CopyRatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.anyFailed() ? 1 : 0;  // a failed benchmark fails the run (gpu-check's bench step)
}
