// 2-d pooling (SPEC §3 "Convolution and pooling"): the per-window and per-element formulas that
// the host and CUDA share, and the CUDA launchers that host.cpp dispatches to.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"

namespace gizml::netops::pool {

/// x [n, c, h, w] pooled by size x size windows sliding by `stride`, no padding:
/// y [n, c, oh, ow], oh = (h - size) / stride + 1. A plane is one (b, ch).
struct Geometry {
  std::int64_t planes, h, w, size, stride, oh, ow;
};

struct Best {
  float value;
  std::int64_t at;  // i size + j, the offset in the window (row-major)
};

/// The window's maximum: the first largest value in row-major window order; NaN never wins (a
/// value after a leading NaN replaces it); a window of NaN gives its first element (at 0).
/// `win` is the window's top-left element, `rowStride` the image width.
GIZML_HD Best poolMax(const float* win, std::int64_t rowStride, std::int64_t size) {
  Best best{win[0], 0};
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) {
      const float v = win[i * rowStride + j];
      if (v == v && (v > best.value || best.value != best.value)) best = Best{v, i * size + j};
    }
  return best;
}

/// The window's mean: its values added in row-major order from +0, times `factor` = F32(1 / size²).
GIZML_HD float poolMean(const float* win, std::int64_t rowStride, std::int64_t size, float factor) {
  float acc = 0.0f;
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) acc = acc + win[i * rowStride + j];
  return acc * factor;
}

/// pool2dGrad's element (plane, y, x): +0, then over the windows holding it in (oy, ox) row-major
/// order, + dy * factor (average) or + dy where it is that window's maximum (argmax[window] is the
/// window's poolMax offset; null for average).
GIZML_HD float poolGradAt(const float* dy, const std::int64_t* argmax, const Geometry& g, bool average, float factor,
                          std::int64_t plane, std::int64_t y, std::int64_t x) {
  // Windows oy with oy stride <= y < oy stride + size, inside [0, oh).
  const std::int64_t oyLo = y >= g.size ? (y - g.size) / g.stride + 1 : 0;
  const std::int64_t oxLo = x >= g.size ? (x - g.size) / g.stride + 1 : 0;
  const std::int64_t oyHi = y / g.stride < g.oh - 1 ? y / g.stride : g.oh - 1;
  const std::int64_t oxHi = x / g.stride < g.ow - 1 ? x / g.stride : g.ow - 1;
  float acc = 0.0f;
  for (std::int64_t oy = oyLo; oy <= oyHi; ++oy)
    for (std::int64_t ox = oxLo; ox <= oxHi; ++ox) {
      const std::int64_t win = (plane * g.oh + oy) * g.ow + ox;
      if (average) acc = acc + dy[win] * factor;
      else if (argmax[win] == (y - oy * g.stride) * g.size + (x - ox * g.stride)) acc = acc + dy[win];
    }
  return acc;
}

// ---- CUDA launchers (cuda.cu); pointers are device memory; each returns after queueing ----------
namespace cuda {
void pool2d(int device, const float* x, const Geometry& g, bool average, float factor, float* y);
/// argmax: scratch of one int64 a window (max only; unused for average).
void pool2dGrad(int device, const float* dy, const float* x, const Geometry& g, bool average, float factor,
                std::int64_t* argmax, float* dx);
}  // namespace cuda

}  // namespace gizml::netops::pool
