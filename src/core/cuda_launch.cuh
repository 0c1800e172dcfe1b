// Small helpers every CUDA launcher uses.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/backend.hpp"
#include "gizml/error.hpp"

namespace gizml::detail {

/// Blocks for `items` work items at `perBlock` a block (at least one).
inline unsigned gridFor(std::int64_t items, std::int64_t perBlock) {
  std::int64_t blocks = (items + perBlock - 1) / perBlock;
  if (blocks > 0x7fffffff) throw Error("gizml: a launch of " + std::to_string(items) + " items is too large");
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

/// A launch that failed to start (bad configuration, no kernel image for this GPU) throws.
inline void checkLaunch(const char* function) { cudaCheck(cudaGetLastError(), function); }

inline void useDevice(int device, const char* function) { cudaCheck(cudaSetDevice(device), function); }

#if defined(__CUDACC__)
/// This thread's index in a one-dimensional launch, as a 64-bit integer.
__device__ __forceinline__ std::int64_t globalThread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

/// sum16's tree on a half-warp: lane i adds lane i ^ h for h = 8, 4, 2, 1, which is the SPEC's
/// lane[i] += lane[i + h] for i < h (addition is commutative); every lane ends with lane 0's value.
__device__ __forceinline__ float halfWarpTree(float v, unsigned mask) {
  for (int h = 8; h >= 1; h /= 2) v += __shfl_xor_sync(mask, v, h, 16);
  return v;
}
/// The 16 lanes of this thread's half-warp.
__device__ __forceinline__ unsigned halfWarpMask() { return 0xffffu << (threadIdx.x & 16u); }
#endif

}  // namespace gizml::detail
