// 2-d pooling on a CUDA GPU: one thread a window (pool2d, and pool2dGrad's argmax pass) or an
// element of dx (pool2dGrad's gather, no atomics), by the kernel structs' element functions
// (pool.hpp), the formulas the host runs, so the bits are the host's.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "netops/pool/pool.hpp"

namespace gizml::netops::pool {

namespace {

__global__ void pool2dKernel(const Pool2d::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < Pool2d::count(a)) a.out[e] = Pool2d::element(a, e);
}

__global__ void poolArgmaxKernel(const Pool2dGrad::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < Pool2dGrad::windows(a)) a.argmax[e] = Pool2dGrad::windowArgmax(a, e);
}

__global__ void pool2dGradKernel(const Pool2dGrad::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < Pool2dGrad::count(a)) a.out[e] = Pool2dGrad::element(a, a.argmax, e);
}

}  // namespace

void Pool2d::cuda(const Gpu& gpu, const Args& a) {
  detail::launch(gpu, kName, pool2dKernel, detail::Grid::forItems(count(a)), a);
}

void Pool2dGrad::cuda(const Gpu& gpu, const Args& a) {
  if (!a.average) detail::launch(gpu, kName, poolArgmaxKernel, detail::Grid::forItems(windows(a)), a);
  detail::launch(gpu, kName, pool2dGradKernel, detail::Grid::forItems(count(a)), a);
}

}  // namespace gizml::netops::pool
