// The GPU simulator's CUDA runtime (GIZML_CUDA_SIM builds; README "The GPU simulator"): the part of
// the CUDA runtime API that gizml's .cu files call, over one simulated device (an sm_90 GPU whose
// memory is host memory). Every call is synchronous: a kernel runs to its end in its launch, on the
// calling thread. What a real GPU would refuse is refused here too, with the same error: a dynamic
// shared-memory size over 48 KiB without cudaFuncSetAttribute's leave (or over the H200's 227 KiB),
// more than 1024 threads a block, a device other than 0, freeing what was not allocated.
// Allocations start filled with 0xff bytes (F32 NaNs), as a GPU's memory holds whatever was there:
// a kernel that reads what nobody wrote shows it.
#pragma once

#if !defined(GIZML_CUDA_SIM)
#error "this cuda_runtime.h is the GPU simulator's (GIZML_CUDA_SIM builds)"
#endif

#include <cstddef>
#include <functional>

#include "sim/cuda_sim.hpp"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;

struct CUstream_st;
using cudaStream_t = CUstream_st*;
#define cudaStreamLegacy (reinterpret_cast<cudaStream_t>(0x1))

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrReservedSharedMemoryPerBlock = 111,
  cudaDevAttrMemoryPoolsSupported = 115
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
struct CUmemPoolHandle_st;
using cudaMemPool_t = CUmemPoolHandle_st*;

struct cudaFuncAttributes {
  std::size_t sharedSizeBytes = 0, constSizeBytes = 0, localSizeBytes = 0;
  int maxThreadsPerBlock = 1024, numRegs = 0, ptxVersion = 90, binaryVersion = 90;
  int maxDynamicSharedSizeBytes = 48 * 1024;
  int preferredShmemCarveout = -1;  // cudaFuncAttributePreferredSharedMemoryCarveout's, -1: none
};

const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value);
cudaError_t cudaMalloc(void** p, std::size_t bytes);
cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t stream);
cudaError_t cudaFree(void* p);
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset(void* p, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize();

namespace gizml::sim {
cudaError_t funcSetAttribute(const void* kernel, cudaFuncAttribute attr, int value);
cudaError_t funcGetAttributes(cudaFuncAttributes* out, const void* kernel);
cudaError_t occupancy(int* blocks, const void* kernel, int threads, std::size_t dynamicShared);
/// Runs `body` (the kernel with its arguments) on every thread of the grid; a failure of the
/// launch is kept for cudaGetLastError, as CUDA's launch errors are.
void launch(const void* kernel, dim3 grid, dim3 block, std::size_t dynamicShared, cudaStream_t stream,
            const std::function<void()>& body);

/// What `GIZML_LAUNCH(grid, block, shared, stream, kernel)(args...)` expands to: the launch, with
/// the arguments copied as a kernel's parameters are.
template <class... Params>
struct Launcher {
  void (*kernel)(Params...);
  dim3 grid, block;
  std::size_t shared;
  cudaStream_t stream;
  template <class... Args>
  void operator()(Args&&... args) const {
    auto k = kernel;
    std::function<void()> body = [k, ... params = static_cast<Params>(args)]() { k(params...); };
    launch(reinterpret_cast<const void*>(k), grid, block, shared, stream, body);
  }
};
template <class... Params>
Launcher<Params...> launcher(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
                             cudaStream_t stream) {
  return {kernel, grid, block, shared, stream};
}
}  // namespace gizml::sim

template <class Kernel>
cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attr, int value) {
  return gizml::sim::funcSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}
template <class Kernel>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* out, Kernel* kernel) {
  return gizml::sim::funcGetAttributes(out, reinterpret_cast<const void*>(kernel));
}
template <class Kernel>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel* kernel, int threads,
                                                          std::size_t dynamicShared) {
  return gizml::sim::occupancy(blocks, reinterpret_cast<const void*>(kernel), threads, dynamicShared);
}

#define GIZML_LAUNCH(grid, block, shared, stream, ...) ::gizml::sim::launcher(__VA_ARGS__, grid, block, shared, stream)
