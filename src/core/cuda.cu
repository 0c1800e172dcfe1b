// The CUDA side of the core: device discovery, memory, copies, and the random fills.
#include <cuda_runtime.h>

#include <string>

#include "core/backend.hpp"
#include "core/cuda_launch.cuh"
#include "exact/philox.hpp"
#include "gizml/error.hpp"

namespace gizml::detail {

void cudaCheck(int status, const char* function) {
  if (status == cudaSuccess) return;
  throw Error(std::string(function) + ": CUDA error: " + cudaGetErrorString(static_cast<cudaError_t>(status)));
}

int cudaDeviceCount(std::string& problem) {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    // No GPU, no driver, or a driver older than this runtime: keep CUDA's words, which tell them apart.
    problem = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
    cudaGetLastError();
    return 0;
  }
  if (n == 0) problem = "cudaGetDeviceCount: no CUDA GPU is present";
  return n;
}

void* cudaAllocate(int device, std::size_t bytes) {
  cudaCheck(cudaSetDevice(device), "gizml::Tensor (cudaSetDevice)");
  void* p = nullptr;
  cudaCheck(cudaMalloc(&p, bytes), "gizml::Tensor (cudaMalloc)");
  return p;
}

void cudaRelease(int device, void* p) noexcept {
  cudaSetDevice(device);
  cudaFree(p);
}

void cudaCopy(void* dst, Device dstDevice, const void* src, Device srcDevice, std::size_t bytes) {
  int device = dstDevice.isCuda() ? dstDevice.index : srcDevice.index;
  cudaCheck(cudaSetDevice(device), "gizml::Tensor copy (cudaSetDevice)");
  cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "gizml::Tensor copy (cudaMemcpy)");
}

void cudaZero(int device, void* p, std::size_t bytes) {
  cudaCheck(cudaSetDevice(device), "gizml::Tensor::zeros (cudaSetDevice)");
  cudaCheck(cudaMemset(p, 0, bytes), "gizml::Tensor::zeros (cudaMemset)");
}

void cudaSynchronize(int device, void* stream) {
  cudaCheck(cudaSetDevice(device), "gizml::Gpu::synchronize (cudaSetDevice)");
  cudaCheck(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "gizml::Gpu::synchronize");
}

namespace {

// One thread a Philox counter: the words 4 g .. 4 g + 3.
__global__ void fillUniformKernel(float* out, std::int64_t n, std::uint32_t k0, std::uint32_t k1) {
  std::int64_t g = detail::globalThread();
  if (4 * g >= n) return;
  exact::Philox4 w = exact::drawGroup(k0, k1, static_cast<std::uint64_t>(g));
  for (int j = 0; j < 4 && 4 * g + j < n; ++j) out[4 * g + j] = exact::uniformOfWord(w.v[j]);
}

__global__ void fillNormalKernel(float* out, std::int64_t n, std::uint32_t k0, std::uint32_t k1) {
  std::int64_t g = detail::globalThread();
  if (4 * g >= n) return;
  exact::Philox4 w = exact::drawGroup(k0, k1, static_cast<std::uint64_t>(g));
  float v[4];
  exact::normalPair(w.v[0], w.v[1], &v[0], &v[1]);
  exact::normalPair(w.v[2], w.v[3], &v[2], &v[3]);
  for (int j = 0; j < 4 && 4 * g + j < n; ++j) out[4 * g + j] = v[j];
}

}  // namespace

void cudaFillUniform(int device, float* out, std::int64_t n, Key key) {
  if (n == 0) return;
  cudaCheck(cudaSetDevice(device), "gizml::Tensor::uniform (cudaSetDevice)");
  std::int64_t groups = (n + 3) / 4;
  fillUniformKernel<<<gridFor(groups, 256), 256>>>(out, n, key.k0, key.k1);
  checkLaunch("gizml::Tensor::uniform");
}

void cudaFillNormal(int device, float* out, std::int64_t n, Key key) {
  if (n == 0) return;
  cudaCheck(cudaSetDevice(device), "gizml::Tensor::normal (cudaSetDevice)");
  std::int64_t groups = (n + 3) / 4;
  fillNormalKernel<<<gridFor(groups, 256), 256>>>(out, n, key.k0, key.k1);
  checkLaunch("gizml::Tensor::normal");
}

}  // namespace gizml::detail

namespace gizml::detail {
namespace {
__global__ void multiplyAddKernel(float a, float b, float c, float* out) { *out = a * b + c; }
}  // namespace

float cudaMultiplyAdd(int device, float a, float b, float c) {
  cudaCheck(cudaSetDevice(device), "gizml::detail::cudaMultiplyAdd");
  float* d = static_cast<float*>(cudaAllocate(device, sizeof(float)));
  multiplyAddKernel<<<1, 1>>>(a, b, c, d);
  float out = 0;
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) status = cudaMemcpy(&out, d, sizeof out, cudaMemcpyDeviceToHost);
  cudaRelease(device, d);
  cudaCheck(status, "gizml::detail::cudaMultiplyAdd");
  return out;
}
}  // namespace gizml::detail
