// The one path to a kernel. Every launcher takes a Gpu (device and stream) and an argument struct
// that the host code, the launcher and the kernel share, and starts its kernel through launch() or
// launchChecked(), which set the device and the stream, check that the launch started, and with
// GIZML_CUDA_SYNC=1 in the environment synchronise and check after every launch (so a failing
// kernel is named by the launch that ran it, not by a later read-back).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/backend.hpp"
#include "core/device_error.hpp"
#include "gizml/error.hpp"
#include "gizml/gpu.hpp"

#if !defined(GIZML_CUDA_SIM)
/// `GIZML_LAUNCH(grid, block, shared, stream, kernel)(args...)`: kernel<<<grid, block, shared,
/// stream>>>(args...), written so that the GPU simulator's builds (sim/include/cuda_runtime.h), whose
/// compiler has no <<< >>>, run the same line.
#define GIZML_LAUNCH(grid, block, shared, stream, ...) __VA_ARGS__<<<grid, block, shared, stream>>>
/// A launch's dynamic shared memory as `T* name` (16-byte aligned); the simulator has its own.
#define GIZML_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

namespace gizml::detail {

/// Blocks for `items` work items at `perBlock` a block (at least one).
inline unsigned gridFor(std::int64_t items, std::int64_t perBlock) {
  std::int64_t blocks = (items + perBlock - 1) / perBlock;
  if (blocks > 0x7fffffff) throw Error("gizml: a launch of " + std::to_string(items) + " items is too large");
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

/// The most blocks a kernel that strides over its work starts (its loop takes the rest).
constexpr unsigned kMostBlocks = 1u << 20;
/// `blocks` for a striding kernel, at most kMostBlocks.
inline unsigned stridingBlocks(std::int64_t blocks) {
  return blocks < kMostBlocks ? static_cast<unsigned>(blocks) : kMostBlocks;
}

/// A one-dimensional launch's shape.
struct Grid {
  unsigned blocks = 1;
  unsigned threads = 256;
  /// One thread an item, `threads` a block.
  static Grid forItems(std::int64_t items, unsigned threads = 256) { return {gridFor(items, threads), threads}; }
};

inline cudaStream_t streamOf(const Gpu& g) { return static_cast<cudaStream_t>(g.stream); }

inline void useDevice(int device, const char* function) { cudaCheck(cudaSetDevice(device), function); }

/// After each launch: a launch that did not start (bad configuration, no kernel image for this
/// GPU) throws naming `function`; with GIZML_CUDA_SYNC=1 the stream is synchronised, a kernel's
/// failure and the device error flag are checked too. (cuda.cu)
void afterLaunch(const Gpu& g, const char* function);
/// The device's error record for a kernel of launch `launch` (allocated on first use). (cuda.cu)
ErrorFlag errorFlag(int device, unsigned launch);

/// Launches kernel(args) on g's device and stream, with `sharedBytes` of dynamic shared memory a
/// block (over 48 KiB only once the kernel is allowed them: allowShared, core/cuda_row_blocks.cuh).
template <class Args>
void launch(const Gpu& g, const char* function, void (*kernel)(Args), Grid grid, const Args& args,
            std::size_t sharedBytes = 0) {
  useDevice(g.device.index, function);
  GIZML_LAUNCH(grid.blocks, grid.threads, sharedBytes, streamOf(g), kernel)(args);
  afterLaunch(g, function);
}

/// Launches kernel(args, flag), a kernel that checks the indices it reads with flag.inRange(i, ...),
/// where i is the position in `checked` of the argument that holds them (named in the error);
/// `sharedBytes` of dynamic shared memory a block (as launch's).
template <class Args>
void launchChecked(const Gpu& g, const char* function, std::initializer_list<const char*> checked,
                   void (*kernel)(Args, ErrorFlag), Grid grid, const Args& args, std::size_t sharedBytes = 0) {
  useDevice(g.device.index, function);
  const ErrorFlag flag = errorFlag(g.device.index, registerLaunch(function, checked));
  GIZML_LAUNCH(grid.blocks, grid.threads, sharedBytes, streamOf(g), kernel)(args, flag);
  afterLaunch(g, function);
}

#if defined(__CUDACC__)
/// This thread's index in a one-dimensional launch, as a 64-bit integer.
__device__ __forceinline__ std::int64_t globalThread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
#endif

}  // namespace gizml::detail
