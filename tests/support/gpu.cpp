#include "support/gpu.hpp"

#include <cstdlib>
#include <cstring>

#include "gizml/device.hpp"

namespace gizml::test {

std::string gpuUnavailableReason() {
  if (!builtWithCuda()) return "this build has no CUDA (nvcc was not found or GIZML_CUDA=OFF)";
  return noGpuReason();  // CUDA's own words: no GPU, no driver, or a driver older than the runtime
}

bool gpuRequired() {
  const char* v = std::getenv("GIZML_REQUIRE_GPU");
  return v && std::strcmp(v, "1") == 0;
}

}  // namespace gizml::test
