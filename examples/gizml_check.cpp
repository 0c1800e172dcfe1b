// gizml-check: runs every case of the op registry (tests/registry/) on the host and on every GPU
// found, and prints one line an op:
//   op | host = reference (bits, all its cases) | GPU = host (all its cases, each GPU) | host ms | GPU ms
// the times being those of the op's typical case. Exit status 0 only when every comparison that
// could run matched; non-zero too when a GPU is required (GIZML_REQUIRE_GPU=1 or --require-gpu)
// and none is found.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "registry/registry.hpp"

using gizml::Device;
using gizml::registry::Case;
using gizml::registry::Tensors;
namespace registry = gizml::registry;

namespace {

/// The cases of each op, ops in the order of their first case.
std::vector<std::vector<const Case*>> casesByOp() {
  std::vector<std::vector<const Case*>> ops;
  for (const Case& c : registry::allCases()) {
    auto same = std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.front()->op == c.op; });
    if (same == ops.end()) same = ops.emplace(ops.end());
    same->push_back(&c);
  }
  return ops;
}

/// Milliseconds of one run of the case on `device`, its outputs read back (after a warm-up run).
double timeTypical(const Case& c, Device device) {
  const Tensors inputs = registry::onDevice(c.inputs(), device);
  c.run(inputs);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& out : c.run(inputs)) out.toFloats();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// What one column found over an op's cases: the cases that did not match, with why.
struct Column {
  int cases = 0;
  std::vector<std::string> failures;
  std::string cell() const {
    if (failures.empty()) return "yes (" + std::to_string(cases) + " cases)";
    return "NO (" + std::to_string(failures.size()) + " of " + std::to_string(cases) + ")";
  }
};

/// Runs `check` (returning what differs, or "") on each case, an exception counting as a mismatch.
template <class Check>
Column checkEach(const std::vector<const Case*>& cases, Check check) {
  Column col;
  for (const Case* c : cases) {
    ++col.cases;
    std::string why;
    try {
      why = check(*c);
    } catch (const std::exception& e) {
      why = std::string("error: ") + e.what();
    }
    if (!why.empty()) col.failures.push_back(c->title() + ": " + why);
  }
  return col;
}

std::string hostEqualsReference(const Case& c) {
  const Tensors inputs = c.inputs();
  return registry::hostDifference(c, inputs, c.reference(inputs));
}

bool gpuRequired(int argc, char** argv) {
  const char* env = std::getenv("GIZML_REQUIRE_GPU");
  if (env && std::strcmp(env, "1") == 0) return true;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--require-gpu") == 0) return true;
  return false;
}

/// The typical case's time as a cell; an exception is a failure, its cell "error".
std::string timeCell(const Case& c, Device device, std::vector<std::string>& failures) {
  try {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", timeTypical(c, device));
    return buf;
  } catch (const std::exception& e) {
    failures.push_back(c.title() + " timed on " + device.name() + ": error: " + e.what());
    return "error";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int gpus = gizml::gpuCount();
  const std::string why = gpus == 0 ? " (" + gizml::noGpuReason() + ")" : "";
  std::printf("gizml-check: %d host threads, %s, %d CUDA GPU%s%s\n", gizml::threads(),
              gizml::builtForGpuSimulator() ? "built with CUDA for the GPU simulator (kernels run on the CPU)"
              : gizml::builtWithCuda()       ? "built with CUDA"
                                             : "built without CUDA",
              gpus, gpus == 1 ? "" : "s",
              why.c_str());
  std::printf("%-18s | %-22s | %-28s | %10s | %10s\n", "op", "host = reference", "GPU = host", "host ms", "GPU ms");
  std::printf("%s\n", std::string(100, '-').c_str());
  bool allMatch = true;
  for (const auto& cases : casesByOp()) {
    const Case* typical = cases.front();
    for (const Case* c : cases)
      if (c->typical) typical = c;
    Column host = checkEach(cases, hostEqualsReference);
    std::vector<std::string> failures = host.failures;
    std::string gpuCell = "no GPU", gpuMs = "-";
    for (int g = 0; g < gpus; ++g) {
      const Device gpu = Device::cuda(g);
      Column col = checkEach(cases, [&](const Case& c) { return registry::gpuDifference(c, c.inputs(), gpu); });
      failures.insert(failures.end(), col.failures.begin(), col.failures.end());
      gpuCell = (g ? gpuCell + ", " : std::string()) + gpu.name() + " " + col.cell();
      gpuMs = timeCell(*typical, gpu, failures);
    }
    const std::string hostMs = timeCell(*typical, Device::host(), failures);
    allMatch = allMatch && failures.empty();
    std::printf("%-18s | %-22s | %-28s | %10s | %10s\n", typical->op.c_str(), host.cell().c_str(), gpuCell.c_str(),
                hostMs.c_str(), gpuMs.c_str());
    for (const auto& f : failures) std::printf("    %s\n", f.c_str());
  }
  std::printf("%s\n", allMatch ? "every comparison matched" : "MISMATCH: see the table");
  if (gpus == 0 && gpuRequired(argc, argv)) {
    std::printf("FAILED: a GPU is required (GIZML_REQUIRE_GPU=1 or --require-gpu) but none was found: %s\n",
                gizml::noGpuReason().c_str());
    return 2;
  }
  return allMatch ? 0 : 1;
}
