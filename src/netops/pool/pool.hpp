// 2-d pooling (SPEC §3 "Convolution and pooling"): the per-window and per-element formulas that
// the host and CUDA share, and each op's kernel struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::pool {

/// x [n, c, h, w] pooled by size x size windows sliding by `stride`, no padding:
/// y [n, c, oh, ow], oh = (h - size) / stride + 1. A plane is one (b, ch).
struct Geometry {
  std::int64_t planes, h, w, size, stride, oh, ow;
};

/// The max rule, one comparison: does v (later in window order) replace the best so far? NaN
/// never wins and a value replaces a NaN best; a tie keeps the first. F = float (a bool) or 16
/// host lanes (a lane mask).
template <class F>
GIZML_HD auto poolMaxTakes(F v, F best) {
  return (v == v) & ((v > best) | (best != best));
}

/// One window's values: load(i, j) is element (i, j) of the window at `p` (rowStride = the image
/// width). The host has a 16-lane loader of 16 neighbouring windows (host.cpp).
struct Window {
  const float* p;
  std::int64_t rowStride;
  GIZML_HD float operator()(std::int64_t i, std::int64_t j) const { return p[i * rowStride + j]; }
};

/// The window's maximum: the first largest value in row-major window order by poolMaxTakes; a
/// window of NaN gives its first element.
template <class F, class Load>
GIZML_HD F poolMaxOf(const Load& load, std::int64_t size) {
  F best = load(0, 0);
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) {
      const F v = load(i, j);
      best = exact::select(poolMaxTakes(v, best), v, best);
    }
  return best;
}

/// The window's mean: its values added in row-major order from +0, times `factor` = F32(1 / size²).
template <class F, class Load>
GIZML_HD F poolMeanOf(const Load& load, std::int64_t size, float factor) {
  F acc = F{};
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) acc = acc + load(i, j);
  return acc * factor;
}

/// The offset i size + j of the window's maximum (poolMaxOf's choice), for the gradient.
GIZML_HD std::int64_t poolArgmax(const Window& win, std::int64_t size) {
  float best = win(0, 0);
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) {
      const float v = win(i, j);
      if (poolMaxTakes(v, best)) {
        best = v;
        at = i * size + j;
      }
    }
  return at;
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

/// Window e = (plane, oy, ox) of x, in the kernels' one-thread-a-window indexing.
GIZML_HD Window windowAt(const float* x, const Geometry& g, std::int64_t e) {
  const std::int64_t ox = e % g.ow, oy = (e / g.ow) % g.oh, plane = e / (g.ow * g.oh);
  return Window{x + (plane * g.h + oy * g.stride) * g.w + ox * g.stride, g.w};
}

// ---- the ops' kernels (core/dispatch.hpp) -----------------------------------------------------------
// element(a, e) is output element e in the kernels' one-thread-an-element indexing: the GPU runs
// exactly it, and the tests run it on the host.

struct Pool2d {
  static constexpr const char* kName = "gizml::netops::pool2d";
  struct Args {
    const float* x;
    Geometry g;
    bool average;
    float factor;  // F32(1 / size²)
    float* out;    // [planes, oh, ow]
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.g.planes * a.g.oh * a.g.ow; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const Window win = windowAt(a.x, a.g, e);
    return a.average ? poolMeanOf<float>(win, a.g.size, a.factor) : poolMaxOf<float>(win, a.g.size);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

/// On a GPU two passes: each window's maximum offset (max only), then each element of dx gathers.
struct Pool2dGrad {
  static constexpr const char* kName = "gizml::netops::pool2dGrad";
  struct Args {
    const float *dy, *x;
    Geometry g;
    bool average;
    float factor;
    std::int64_t* argmax;  // GPU scratch, one offset a window (max only); unused on the host
    float* out;            // dx [planes, h, w]
  };
  GIZML_HD static std::int64_t windows(const Args& a) { return a.g.planes * a.g.oh * a.g.ow; }
  GIZML_HD static std::int64_t count(const Args& a) { return a.g.planes * a.g.h * a.g.w; }
  /// The first pass: window e's maximum offset.
  GIZML_HD static std::int64_t windowArgmax(const Args& a, std::int64_t e) { return poolArgmax(windowAt(a.x, a.g, e), a.g.size); }
  /// The second pass: element e of dx, from the first pass's offsets.
  GIZML_HD static float element(const Args& a, const std::int64_t* argmax, std::int64_t e) {
    const std::int64_t xx = e % a.g.w, y = (e / a.g.w) % a.g.h, plane = e / (a.g.w * a.g.h);
    return poolGradAt(a.dy, a.average ? nullptr : argmax, a.g, a.average, a.factor, plane, y, xx);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

}  // namespace gizml::netops::pool
