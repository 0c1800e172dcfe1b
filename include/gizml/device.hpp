// Where a tensor lives (SPEC §2).
#pragma once

#include <string>

namespace gizml {

struct Device {
  enum class Kind { Host, Cuda };
  Kind kind = Kind::Host;
  int index = 0;

  static Device host() { return {Kind::Host, 0}; }
  static Device cuda(int index = 0) { return {Kind::Cuda, index}; }
  bool isHost() const { return kind == Kind::Host; }
  bool isCuda() const { return kind == Kind::Cuda; }
  bool operator==(const Device&) const = default;
  std::string name() const;  // "host" or "cuda:N"
};

/// Number of CUDA GPUs usable now: 0 in a build without CUDA, without a driver or without a GPU.
int gpuCount();
/// True when this library was built with its CUDA kernels (for a GPU, or for the GPU simulator).
bool builtWithCuda();
/// True when its kernels were built for the GPU simulator (-DGIZML_CUDA_SIM=ON, README "The GPU
/// simulator"): its GPU, there only with GIZML_CUDA_SIM=1 in the environment, runs them on the CPU.
bool builtForGpuSimulator();
/// Why gpuCount() is 0, in CUDA's own words ("cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable
/// device is detected", or a driver older than the runtime: cudaErrorInsufficientDriver), or "gizml
/// was built without CUDA". Empty when a GPU is usable.
std::string noGpuReason();

}  // namespace gizml
