// 2-d pooling on a CUDA GPU: one thread a window (pool2d, and pool2dGrad's argmax pass) or an
// element of dx (pool2dGrad's gather, no atomics), by the same GIZML_HD formulas as the host
// (pool.hpp), so the bits are the host's.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "netops/pool/pool.hpp"

namespace gizml::netops::pool::cuda {

using detail::checkLaunch;
using detail::globalThread;
using detail::gridFor;

namespace {

constexpr int kThreads = 256;

/// Window e = (plane, oy, ox)'s top-left element.
__device__ __forceinline__ const float* windowAt(const float* x, const Geometry& g, std::int64_t e) {
  const std::int64_t ox = e % g.ow, oy = (e / g.ow) % g.oh, plane = e / (g.ow * g.oh);
  return x + (plane * g.h + oy * g.stride) * g.w + ox * g.stride;
}

__global__ void pool2dKernel(const float* x, Geometry g, bool average, float factor, std::int64_t total, float* y) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const Window win{windowAt(x, g, e), g.w};
  y[e] = average ? poolMeanOf<float>(win, g.size, factor) : poolMaxOf<float>(win, g.size);
}

__global__ void poolArgmaxKernel(const float* x, Geometry g, std::int64_t total, std::int64_t* argmax) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  argmax[e] = poolArgmax(Window{windowAt(x, g, e), g.w}, g.size);
}

__global__ void pool2dGradKernel(const float* dy, const std::int64_t* argmax, Geometry g, bool average, float factor,
                                 std::int64_t total, float* dx) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const std::int64_t xx = e % g.w, y = (e / g.w) % g.h, plane = e / (g.w * g.h);
  dx[e] = poolGradAt(dy, argmax, g, average, factor, plane, y, xx);
}

}  // namespace

void pool2d(int device, const float* x, const Geometry& g, bool average, float factor, float* y) {
  const char* fn = "gizml::netops::pool2d";
  detail::useDevice(device, fn);
  const std::int64_t total = g.planes * g.oh * g.ow;
  pool2dKernel<<<gridFor(total, kThreads), kThreads>>>(x, g, average, factor, total, y);
  checkLaunch(fn);
}

void pool2dGrad(int device, const float* dy, const float* x, const Geometry& g, bool average, float factor,
                std::int64_t* argmax, float* dx) {
  const char* fn = "gizml::netops::pool2dGrad";
  detail::useDevice(device, fn);
  if (!average) {
    const std::int64_t windows = g.planes * g.oh * g.ow;
    poolArgmaxKernel<<<gridFor(windows, kThreads), kThreads>>>(x, g, windows, argmax);
    checkLaunch(fn);
  }
  const std::int64_t total = g.planes * g.h * g.w;
  pool2dGradKernel<<<gridFor(total, kThreads), kThreads>>>(dy, average ? nullptr : argmax, g, average, factor, total,
                                                            dx);
  checkLaunch(fn);
}

}  // namespace gizml::netops::pool::cuda
