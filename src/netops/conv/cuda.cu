// The convolution helpers on a CUDA GPU: one thread an output element, computing it by the same
// GIZML_HD formula (conv.hpp) in the same order as the host, so the bits are the host's. col2im and
// col2im1d gather per output element (no atomics).
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "netops/conv/conv.hpp"

namespace gizml::netops::conv::cuda {

using detail::checkLaunch;
using detail::globalThread;
using detail::gridFor;

namespace {

constexpr int kThreads = 256;

__global__ void im2colKernel(const float* x, Geometry2d g, std::int64_t total, float* cols) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const std::int64_t width = g.rowWidth();
  const std::int64_t row = e / width, col = e % width;
  const std::int64_t ox = row % g.ow, oy = (row / g.ow) % g.oh, b = row / (g.ow * g.oh);
  const std::int64_t j = col % g.kw, i = (col / g.kw) % g.kh, ch = col / (g.kw * g.kh);
  cols[e] = im2colValue(x, g, b, oy, ox, ch, i, j);
}

__global__ void col2imKernel(const float* cols, Geometry2d g, std::int64_t total, float* x) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const std::int64_t xx = e % g.w, y = (e / g.w) % g.h, ch = (e / (g.w * g.h)) % g.c, b = e / (g.w * g.h * g.c);
  x[e] = col2imAt(cols, g, b, ch, y, xx);
}

__global__ void im2col1dKernel(const float* x, Geometry1d g, std::int64_t first, std::int64_t total, float* out) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const std::int64_t width = g.c * g.k;
  const std::int64_t r = e / width, col = e % width;
  out[e] = im2col1dValue(x, g, first + r, col / g.k, col % g.k);
}

__global__ void col2im1dKernel(const float* cols, std::int64_t rows, std::int64_t c, std::int64_t k,
                               std::int64_t stride, std::int64_t pad, std::int64_t total, float* out) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  out[e] = col2im1dAt(cols, rows, c, k, stride, pad, e / c, e % c);
}

__global__ void conv1dKernel(const float* x, Geometry1d g, const float* w, const float* bias, std::int64_t oc,
                             std::int64_t total, float* out) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const std::int64_t r = e / oc, o = e % oc;
  float acc = conv1dChain<float>(x, g, r * g.stride - g.pad, w + o * g.c * g.k, g.k, 1, 1);
  if (bias) acc = acc + bias[o];
  out[e] = acc;
}

__global__ void convTranspose1dKernel(const float* x, std::int64_t n, std::int64_t c, const float* w,
                                      const float* bias, std::int64_t oc, std::int64_t k, std::int64_t stride,
                                      std::int64_t pad, std::int64_t total, float* out) {
  const std::int64_t e = globalThread();
  if (e >= total) return;
  const std::int64_t t = e / oc, o = e % oc;
  float acc = convTranspose1dAt<float>(x, n, c, k, stride, pad, t, w + o * k, oc * k, 1, 1);
  if (bias) acc = acc + bias[o];
  out[e] = acc;
}

}  // namespace

void im2col(int device, const float* x, const Geometry2d& g, float* cols) {
  const char* fn = "gizml::netops::im2col";
  detail::useDevice(device, fn);
  const std::int64_t total = g.n * g.oh * g.ow * g.rowWidth();
  im2colKernel<<<gridFor(total, kThreads), kThreads>>>(x, g, total, cols);
  checkLaunch(fn);
}

void col2im(int device, const float* cols, const Geometry2d& g, float* x) {
  const char* fn = "gizml::netops::col2im";
  detail::useDevice(device, fn);
  const std::int64_t total = g.n * g.c * g.h * g.w;
  col2imKernel<<<gridFor(total, kThreads), kThreads>>>(cols, g, total, x);
  checkLaunch(fn);
}

void im2col1d(int device, const float* x, const Geometry1d& g, std::int64_t first, std::int64_t rows, float* out) {
  const char* fn = "gizml::netops::im2col1d";
  detail::useDevice(device, fn);
  const std::int64_t total = rows * g.c * g.k;
  im2col1dKernel<<<gridFor(total, kThreads), kThreads>>>(x, g, first, total, out);
  checkLaunch(fn);
}

void col2im1d(int device, const float* cols, std::int64_t rows, std::int64_t c, std::int64_t k, std::int64_t stride,
              std::int64_t pad, std::int64_t length, float* out) {
  const char* fn = "gizml::netops::col2im1d";
  detail::useDevice(device, fn);
  const std::int64_t total = length * c;
  col2im1dKernel<<<gridFor(total, kThreads), kThreads>>>(cols, rows, c, k, stride, pad, total, out);
  checkLaunch(fn);
}

void conv1d(int device, const float* x, const Geometry1d& g, const float* w, const float* bias, std::int64_t outChannels,
            std::int64_t ot, float* out) {
  const char* fn = "gizml::netops::conv1d";
  detail::useDevice(device, fn);
  const std::int64_t total = ot * outChannels;
  conv1dKernel<<<gridFor(total, kThreads), kThreads>>>(x, g, w, bias, outChannels, total, out);
  checkLaunch(fn);
}

void convTranspose1d(int device, const float* x, std::int64_t n, std::int64_t c, const float* w, const float* bias,
                     std::int64_t outChannels, std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t length,
                     float* out) {
  const char* fn = "gizml::netops::convTranspose1d";
  detail::useDevice(device, fn);
  const std::int64_t total = length * outChannels;
  convTranspose1dKernel<<<gridFor(total, kThreads), kThreads>>>(x, n, c, w, bias, outChannels, k, stride, pad, total,
                                                                 out);
  checkLaunch(fn);
}

}  // namespace gizml::netops::conv::cuda
