#include "gizml/device.hpp"

#include "core/backend.hpp"
#include "gizml/error.hpp"
#include "gizml/gpu.hpp"

namespace gizml {

std::string Device::name() const { return isHost() ? "host" : "cuda:" + std::to_string(index); }

bool builtWithCuda() { return GIZML_HAS_CUDA != 0; }

bool builtForGpuSimulator() { return detail::cudaSimulated(); }

namespace {
struct GpuDiscovery {
  int count = 0;
  std::string problem;
};
const GpuDiscovery& discovery() {
  static const GpuDiscovery d = [] {
    GpuDiscovery out;
#if GIZML_HAS_CUDA
    out.count = detail::cudaDeviceCount(out.problem);
#else
    out.problem = "gizml was built without CUDA";
#endif
    return out;
  }();
  return d;
}
}  // namespace

int gpuCount() { return discovery().count; }

std::string noGpuReason() { return discovery().count > 0 ? std::string() : discovery().problem; }

Gpu Gpu::open(int index) {
  if (!builtWithCuda()) fail("gizml::Gpu::open", "", "gizml was built without CUDA");
  if (index < 0 || index >= gpuCount())
    fail("gizml::Gpu::open", "index",
         "expected a GPU in [0, " + std::to_string(gpuCount()) + "), got " + std::to_string(index) +
             (gpuCount() == 0 ? " (" + noGpuReason() + ")" : ""));
  return {Device::cuda(index), nullptr};
}

void Gpu::synchronize() const {
  if (device.isHost()) return;
  GIZML_IF_CUDA(detail::cudaSynchronize(*this));
}

namespace detail {
void noCuda(const std::string& function) {
  fail(function, "", "gizml was built without CUDA, so no tensor can be on a GPU");
}
}  // namespace detail

}  // namespace gizml

#if !GIZML_HAS_CUDA
// A build without CUDA: no tensor can reach a GPU, so these are never called on the way of an op;
// they exist so that code naming them links, and say why they cannot run.
namespace gizml::detail {
int cudaDeviceCount(std::string&) { return 0; }
bool cudaSimulated() { return false; }
void* cudaAllocate(int, std::size_t) { noCuda("gizml::Tensor"); }
void cudaRelease(int, void*) noexcept {}
void cudaCopy(void*, Device, const void*, Device, std::size_t) { noCuda("gizml::Tensor copy"); }
void cudaZero(int, void*, std::size_t) { noCuda("gizml::Tensor::zeros"); }
void cudaFillBytes(int, void*, std::size_t, int) { noCuda("gizml::Tensor::empty"); }
void cudaUploadAsync(const Gpu&, void*, const void*, std::size_t) { noCuda("gizml: an upload"); }
void cudaSynchronize(const Gpu&) { noCuda("gizml::Gpu::synchronize"); }
void cudaFillUniform(const Gpu&, float*, std::int64_t, Key) { noCuda("gizml::Tensor::uniform"); }
void cudaFillNormal(const Gpu&, float*, std::int64_t, Key) { noCuda("gizml::Tensor::normal"); }
void cudaGatherForTest(const Gpu&, const float*, std::int64_t, const float*, std::int64_t, float*) {
  noCuda("gizml::detail::gatherForTest");
}
void cudaCheck(int, const char*) {}
void cudaMathForTest(const Gpu&, MathForTest, std::uint32_t, std::int64_t, float*) { noCuda("gizml::detail::mathForTest"); }
float cudaMultiplyAdd(int, float, float, float) { noCuda("gizml::detail::cudaMultiplyAdd"); }
bool cudaMmaForTest(const Gpu&, MmaForTest, const void*, const void*, void*) { noCuda("gizml::detail::mmaForTest"); }
}  // namespace gizml::detail
#endif
