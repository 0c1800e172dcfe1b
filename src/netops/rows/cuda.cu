// The row ops on a CUDA GPU. A row is one half-warp: lane l walks v[l], v[l + 16], ... in index
// order and the half-warp finishes sum16 / dot16 with the shfl_xor tree, so every element is
// computed in the SPEC's order and equals the host bit for bit.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/math.hpp"
#include "exact/order.hpp"
#include "exact/philox.hpp"
#include "netops/rows/rows.hpp"

namespace gizml::netops::rows::cuda {

using detail::checkLaunch;
using detail::gridFor;
using detail::halfWarpMask;
using detail::halfWarpTree;

namespace {

constexpr int kRowsPerBlock = 8;  // half-warps a block
constexpr int kThreads = 16 * kRowsPerBlock;

__device__ __forceinline__ std::int64_t blockRow() {
  return static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 16;
}

/// The row's argmax (lowest index of the largest non-NaN value, 0 for a row of NaN): each lane
/// keeps its best, then the half-warp combines them; argmaxBetter is order-free.
__device__ std::int64_t rowArgmax(const float* x, std::int64_t n, int lane, unsigned mask) {
  float best = NAN;
  long long bestIdx = n;  // "none yet"
  for (std::int64_t i = lane; i < n; i += 16)
    if (exact::argmaxBetter(x[i], i, best, bestIdx)) {
      best = x[i];
      bestIdx = i;
    }
  for (int h = 8; h >= 1; h /= 2) {
    float ov = __shfl_xor_sync(mask, best, h, 16);
    long long oi = __shfl_xor_sync(mask, bestIdx, h, 16);
    if (exact::argmaxBetter(ov, oi, best, bestIdx)) {
      best = ov;
      bestIdx = oi;
    }
  }
  return bestIdx == n ? 0 : bestIdx;
}

__global__ void layerNormKernel(const float* x, const float* w, const float* b, float eps, std::int64_t rows,
                                std::int64_t n, float* y, float* mean, float* rstd) {
  const std::int64_t r = blockRow();
  if (r >= rows) return;
  const int lane = threadIdx.x % 16;
  const unsigned mask = halfWarpMask();
  const float* xr = x + r * n;
  const float nf = static_cast<float>(n);
  float acc = 0.0f;
  for (std::int64_t i = lane; i < n; i += 16) acc += xr[i];
  const float mu = halfWarpTree(acc, mask) / nf;
  acc = 0.0f;
  for (std::int64_t i = lane; i < n; i += 16) {
    float d = xr[i] - mu;
    acc = fmaf(d, d, acc);
  }
  const float var = halfWarpTree(acc, mask) / nf;
  const float rs = 1.0f / sqrtf(var + eps);
  float* yr = y + r * n;
  for (std::int64_t i = lane; i < n; i += 16) yr[i] = layerNormValue(xr[i], mu, rs, w[i], b[i]);
  if (lane == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

__global__ void layerNormGradDxKernel(const float* dy, const float* x, const float* w, const float* mean,
                                      const float* rstd, std::int64_t rows, std::int64_t n, float* dx) {
  const std::int64_t r = blockRow();
  if (r >= rows) return;
  const int lane = threadIdx.x % 16;
  const unsigned mask = halfWarpMask();
  const float *dyr = dy + r * n, *xr = x + r * n;
  const float mu = mean[r], rs = rstd[r], nf = static_cast<float>(n);
  float accG = 0.0f, accGX = 0.0f;
  for (std::int64_t i = lane; i < n; i += 16) {
    float g = dyr[i] * w[i];
    float xh = layerNormXhat(xr[i], mu, rs);
    accG += g;
    accGX = fmaf(g, xh, accGX);
  }
  const float a = halfWarpTree(accG, mask) / nf;
  const float c = halfWarpTree(accGX, mask) / nf;
  float* dxr = dx + r * n;
  for (std::int64_t i = lane; i < n; i += 16)
    dxr[i] = layerNormGradDx(dyr[i] * w[i], layerNormXhat(xr[i], mu, rs), a, c, rs);
}

// One thread a column: its chain over the rows in order.
__global__ void layerNormGradColumnsKernel(const float* dy, const float* x, const float* mean, const float* rstd,
                                           std::int64_t rows, std::int64_t n, float* dweight, float* dbias) {
  const std::int64_t j = detail::globalThread();
  if (j >= n) return;
  float accW = 0.0f, accB = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r) {
    float d = dy[r * n + j];
    accW = fmaf(d, layerNormXhat(x[r * n + j], mean[r], rstd[r]), accW);
    accB += d;
  }
  dweight[j] = accW;
  dbias[j] = accB;
}

__global__ void crossEntropyKernel(const float* logits, const std::int64_t* labels, std::int64_t rows,
                                   std::int64_t classes, float* losses, float* grad, float scale) {
  const std::int64_t r = blockRow();
  if (r >= rows) return;
  const int lane = threadIdx.x % 16;
  const unsigned mask = halfWarpMask();
  const float* xr = logits + r * classes;
  const float m = xr[rowArgmax(xr, classes, lane, mask)];
  float acc = 0.0f;
  for (std::int64_t i = lane; i < classes; i += 16) acc += exact::exp(xr[i] - m);
  const float s = halfWarpTree(acc, mask);
  const std::int64_t label = labels[r];
  if (losses && lane == 0) losses[r] = (m + exact::log(s)) - xr[label];
  if (grad) {
    const float inv = 1.0f / s;
    float* gr = grad + r * classes;
    for (std::int64_t i = lane; i < classes; i += 16)
      gr[i] = crossEntropyGradValue(exact::exp(xr[i] - m), inv, i == label ? 1.0f : 0.0f, scale);
  }
}

__global__ void argmaxKernel(const float* x, std::int64_t rows, std::int64_t n, std::int64_t* out) {
  const std::int64_t r = blockRow();
  if (r >= rows) return;
  const int lane = threadIdx.x % 16;
  std::int64_t idx = rowArgmax(x + r * n, n, lane, halfWarpMask());
  if (lane == 0) out[r] = idx;
}

// One thread a Philox counter: elements 4 g .. 4 g + 3.
__global__ void dropoutKernel(const float* x, std::int64_t count, std::uint32_t k0, std::uint32_t k1, float p,
                              float factor, float* y) {
  const std::int64_t g = detail::globalThread();
  if (4 * g >= count) return;
  exact::Philox4 w = exact::drawGroup(k0, k1, static_cast<std::uint64_t>(g));
  for (int j = 0; j < 4 && 4 * g + j < count; ++j)
    y[4 * g + j] = dropoutValue(x[4 * g + j], exact::uniformOfWord(w.v[j]), p, factor);
}

}  // namespace

void layerNorm(int device, const float* x, const float* w, const float* b, float eps, std::int64_t rows,
               std::int64_t n, float* y, float* mean, float* rstd) {
  detail::useDevice(device, "gizml::netops::layerNorm");
  layerNormKernel<<<gridFor(rows, kRowsPerBlock), kThreads>>>(x, w, b, eps, rows, n, y, mean, rstd);
  checkLaunch("gizml::netops::layerNorm");
}

void layerNormGrad(int device, const float* dy, const float* x, const float* w, const float* mean,
                   const float* rstd, std::int64_t rows, std::int64_t n, float* dx, float* dweight, float* dbias) {
  detail::useDevice(device, "gizml::netops::layerNormGrad");
  layerNormGradDxKernel<<<gridFor(rows, kRowsPerBlock), kThreads>>>(dy, x, w, mean, rstd, rows, n, dx);
  checkLaunch("gizml::netops::layerNormGrad");
  layerNormGradColumnsKernel<<<gridFor(n, 256), 256>>>(dy, x, mean, rstd, rows, n, dweight, dbias);
  checkLaunch("gizml::netops::layerNormGrad");
}

void crossEntropy(int device, const float* logits, const std::int64_t* labels, std::int64_t rows,
                  std::int64_t classes, float* losses, float* grad, float scale) {
  detail::useDevice(device, "gizml::netops::crossEntropy");
  crossEntropyKernel<<<gridFor(rows, kRowsPerBlock), kThreads>>>(logits, labels, rows, classes, losses, grad, scale);
  checkLaunch("gizml::netops::crossEntropy");
}

void argmax(int device, const float* x, std::int64_t rows, std::int64_t n, std::int64_t* out) {
  detail::useDevice(device, "gizml::netops::argmax");
  argmaxKernel<<<gridFor(rows, kRowsPerBlock), kThreads>>>(x, rows, n, out);
  checkLaunch("gizml::netops::argmax");
}

void dropout(int device, const float* x, std::int64_t count, Key key, float p, float factor, float* y) {
  detail::useDevice(device, "gizml::netops::dropout");
  dropoutKernel<<<gridFor((count + 3) / 4, 256), 256>>>(x, count, key.k0, key.k1, p, factor, y);
  checkLaunch("gizml::netops::dropout");
}

}  // namespace gizml::netops::rows::cuda
