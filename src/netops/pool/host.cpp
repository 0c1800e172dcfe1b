// 2-d pooling: argument checks, dispatch by device, and the host path (OpenMP over output rows or
// planes, 16 windows side by side by the formulas CUDA runs on one). Equals
// tests/reference/conv_reference.cpp bit for bit.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "exact/vec16.hpp"
#include "gizml/netops/pool.hpp"
#include "netops/pool/pool.hpp"

namespace gizml::netops {

namespace {

using exact::f32x16;

/// 16 neighbouring windows of one output row: lane l is the window `l stride` to the right of
/// the first; lanes past `lanes` read +0 and are never stored.
struct Windows16 {
  const float* p;
  std::int64_t rowStride, stride, lanes;
  f32x16 operator()(std::int64_t i, std::int64_t j) const {
    const float* q = p + i * rowStride + j;
    if (stride == 1) return exact::load16(q, lanes);
    if (stride == 2) {  // every other float of q[0 .. 2 lanes - 1)
      const std::int64_t span = 2 * lanes - 1;
      const f32x16 a = exact::load16(q, span), b = span > 16 ? exact::load16(q + 16, span - 16) : f32x16{};
      return exact::evenLanes(a, b);
    }
    float v[16];
    for (std::int64_t l = 0; l < lanes; ++l) v[l] = q[l * stride];
    return exact::load16(v, lanes);
  }
};

/// The offset i size + j of each of 16 windows' maximum: pool::poolArgmax's choice, per lane.
exact::i32x16 argmax16(const Windows16& win, std::int64_t size) {
  f32x16 best = win(0, 0);
  exact::i32x16 at{};
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) {
      const f32x16 v = win(i, j);
      const exact::i32x16 takes = pool::poolMaxTakes(v, best);
      best = exact::select(takes, v, best);
      at = exact::select(takes, exact::i32x16{} + static_cast<std::int32_t>(i * size + j), at);
    }
  return at;
}

/// The four values of `lanes` (<= 16) neighbouring 2 x 2 windows at stride 2 whose top row starts
/// at `top` (row stride w), in window order (0, 0), (0, 1), (1, 0), (1, 1): each row's 2 lanes
/// values loaded once and split into even and odd lanes. Lanes past `lanes` are +0. poolMaxOf,
/// poolArgmax and poolMeanOf are written out for these four below (their generic loops indexed
/// an array of vectors, which kept it in memory: 4.7 against 1.7 ms for the forward pass of
/// [128, 32, 28, 28] on one thread of an AMD EPYC, AVX2).
struct Windows2x2 {
  f32x16 v00, v01, v10, v11;
  Windows2x2(const float* top, std::int64_t w, std::int64_t lanes) {
    const std::int64_t span = 2 * lanes;
    const f32x16 a = exact::load16(top, span), b = span > 16 ? exact::load16(top + 16, span - 16) : f32x16{};
    const f32x16 c = exact::load16(top + w, span), d = span > 16 ? exact::load16(top + w + 16, span - 16) : f32x16{};
    v00 = exact::evenLanes(a, b);
    v01 = exact::oddLanes(a, b);
    v10 = exact::evenLanes(c, d);
    v11 = exact::oddLanes(c, d);
  }
  /// poolMaxOf: the first largest in window order ((0, 0) against itself never takes).
  f32x16 max() const {
    f32x16 best = v00;
    best = exact::select(pool::poolMaxTakes(v01, best), v01, best);
    best = exact::select(pool::poolMaxTakes(v10, best), v10, best);
    return exact::select(pool::poolMaxTakes(v11, best), v11, best);
  }
  /// poolArgmax: that maximum's offset i 2 + j.
  exact::i32x16 argmax() const {
    f32x16 best = v00;
    exact::i32x16 at{};
    auto consider = [&](const f32x16& v, std::int32_t offset) {
      const exact::i32x16 takes = pool::poolMaxTakes(v, best);
      best = exact::select(takes, v, best);
      at = exact::select(takes, exact::i32x16{} + offset, at);
    };
    consider(v01, 1);
    consider(v10, 2);
    consider(v11, 3);
    return at;
  }
  /// poolMeanOf: the four added in window order from +0, times factor.
  f32x16 mean(float factor) const { return ((((f32x16{} + v00) + v01) + v10) + v11) * factor; }
};

/// Rows 2 oy and 2 oy + 1 of a plane's dx from their windows of 2 x 2 at stride 2, which do not
/// overlap: each element is in one window, so it is written once, +0 + its window's share (dy,
/// or dy times the factor) where that window takes it (its maximum, or all four for the mean),
/// else +0 — the sum Pool2dGrad::host's general loop forms, without filling dx first or reading
/// it. 16 windows a step; their two columns of a row interleaved into 32 values.
void poolGrad2x2Rows(const float* xTop, const float* dyRow, std::int64_t w, std::int64_t ow, bool average,
                     float factor, float* dTop) {
  for (std::int64_t ox = 0; ox < ow; ox += 16) {
    const std::int64_t lanes = ow - ox < 16 ? ow - ox : 16;
    const f32x16 grad = exact::load16(dyRow + ox, lanes);
    const f32x16 share = f32x16{} + (average ? grad * factor : grad);
    const exact::i32x16 at = average ? exact::i32x16{} : Windows2x2(xTop + 2 * ox, w, lanes).argmax();
    for (int i = 0; i < 2; ++i) {
      const f32x16 left = average ? share : exact::select(at == 2 * i, share, f32x16{});
      const f32x16 right = average ? share : exact::select(at == 2 * i + 1, share, f32x16{});
      f32x16 lo, hi;
      exact::interleaveLanes(left, right, lo, hi);
      float* row = dTop + i * w + 2 * ox;
      exact::store16(row, lo, 2 * lanes);
      if (lanes > 8) exact::store16(row + 16, hi, 2 * lanes - 16);
    }
  }
}

}  // namespace

/// Threads split the output rows (plane, oy) of all planes; a row runs 16 windows at a time.
void pool::Pool2d::host(const Args& a) {
  const Geometry& g = a.g;
  const float* x = a.x;
  const bool average = a.average;
  const float factor = a.factor;
  float* y = a.out;
  const std::int64_t lines = g.planes * g.oh;
  if (g.size == 2 && g.stride == 2) {  // the usual pooling: each row's values loaded once
#pragma omp parallel for schedule(static)
    for (std::int64_t line = 0; line < lines; ++line) {
      const std::int64_t oy = line % g.oh, plane = line / g.oh;
      const float* top = x + (plane * g.h + 2 * oy) * g.w;
      for (std::int64_t ox = 0; ox < g.ow; ox += 16) {
        const std::int64_t lanes = g.ow - ox < 16 ? g.ow - ox : 16;
        const Windows2x2 win(top + 2 * ox, g.w, lanes);
        exact::store16(y + line * g.ow + ox, average ? win.mean(factor) : win.max(), lanes);
      }
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t line = 0; line < lines; ++line) {
    const std::int64_t oy = line % g.oh, plane = line / g.oh;
    const float* top = x + (plane * g.h + oy * g.stride) * g.w;
    float* out = y + line * g.ow;
    for (std::int64_t ox = 0; ox < g.ow; ox += 16) {
      const Windows16 win{top + ox * g.stride, g.w, g.stride, g.ow - ox < 16 ? g.ow - ox : 16};
      const f32x16 v = average ? pool::poolMeanOf<f32x16>(win, g.size, factor) : pool::poolMaxOf<f32x16>(win, g.size);
      exact::store16(out + ox, v, win.lanes);
    }
  }
}

/// Threads split the planes; within a plane the windows are visited in (oy, ox) row-major order
/// and each adds its share to the elements it holds, so every element of dx receives its windows'
/// shares in that order, from +0 — the gather the SPEC states (and CUDA runs), computed as a
/// scatter by the one thread that owns the plane.
void pool::Pool2dGrad::host(const Args& a) {
  const Geometry& g = a.g;
  const float *dy = a.dy, *x = a.x;
  const bool average = a.average;
  const float factor = a.factor;
  float* dx = a.out;
  // Window offset i size + j -> its place i w + j in the plane (no division a window).
  std::vector<std::int64_t> place(static_cast<std::size_t>(g.size * g.size));
  for (std::int64_t k = 0; k < g.size * g.size; ++k) place[k] = (k / g.size) * g.w + k % g.size;
#pragma omp parallel for schedule(static)
  for (std::int64_t plane = 0; plane < g.planes; ++plane) {
    float* d = dx + plane * g.h * g.w;
    const float* xp = x + plane * g.h * g.w;
    const float* dyp = dy + plane * g.oh * g.ow;
    if (g.size == 2 && g.stride == 2) {
      if (g.h % 2 || g.w % 2) std::fill(d, d + g.h * g.w, 0.0f);  // an odd last row or column is in no window
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        poolGrad2x2Rows(xp + 2 * oy * g.w, dyp + oy * g.ow, g.w, g.ow, average, factor, d + 2 * oy * g.w);
      continue;
    }
    std::fill(d, d + g.h * g.w, 0.0f);
    exact::i32x16 maxOffsets{};
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        // The window maxima's offsets, 16 windows at a time (the adds below stay in window order).
        if (!average && ox % 16 == 0)
          maxOffsets = argmax16(Windows16{xp + oy * g.stride * g.w + ox * g.stride, g.w, g.stride,
                                          g.ow - ox < 16 ? g.ow - ox : 16},
                                g.size);
        const float grad = dyp[oy * g.ow + ox];
        const std::int64_t corner = oy * g.stride * g.w + ox * g.stride;
        if (average) {
          const float share = grad * factor;
          for (std::int64_t i = 0; i < g.size; ++i)
            for (std::int64_t j = 0; j < g.size; ++j) d[corner + i * g.w + j] = d[corner + i * g.w + j] + share;
        } else {
          float& e = d[corner + place[maxOffsets[ox % 16]]];
          e = e + grad;
        }
      }
  }
}

namespace {

/// x [n, c, h, w] F32 and the window: the pooling geometry, checked.
pool::Geometry checkPool(const char* fn, const Tensor& x, std::int64_t size, std::int64_t stride) {
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 4);
  detail::requireAtLeast(fn, "size", size, 1);
  detail::requireAtLeast(fn, "stride", stride, 1);
  const std::int64_t h = x.dim(2), w = x.dim(3);
  if (size > h || size > w)
    fail(fn, "size", "expected a window of " + std::to_string(size) + " within the image (no padding), got x of shape " +
                         shapeString(x.shape()));
  return pool::Geometry{x.dim(0) * x.dim(1), h, w, size, stride, (h - size) / stride + 1, (w - size) / stride + 1};
}

/// F32(1 / size²): the quotient in f64, rounded to F32 once.
float meanFactor(std::int64_t size) {
  return static_cast<float>(1.0 / (static_cast<double>(size) * static_cast<double>(size)));
}

}  // namespace

Tensor pool2d(const Tensor& x, std::int64_t size, std::int64_t stride, bool average) {
  const char* fn = "gizml::netops::pool2d";
  const pool::Geometry g = checkPool(fn, x, size, stride);
  Tensor y = Tensor::empty({x.dim(0), x.dim(1), g.oh, g.ow}, DType::F32, x.device());
  if (y.numel() == 0) return y;
  const float factor = meanFactor(size);
  detail::run<pool::Pool2d>(detail::gpuOf(x), {x.data<float>(), g, average, factor, y.data<float>()});
  return y;
}

Tensor pool2dGrad(const Tensor& dy, const Tensor& x, std::int64_t size, std::int64_t stride, bool average) {
  const char* fn = "gizml::netops::pool2dGrad";
  const pool::Geometry g = checkPool(fn, x, size, stride);
  detail::requireDType(fn, "dy", dy, DType::F32);
  detail::requireShape(fn, "dy", dy, {x.dim(0), x.dim(1), g.oh, g.ow});
  detail::requireSameDevice(fn, {{"x", &x}, {"dy", &dy}});
  Tensor dx = Tensor::empty(x.shape(), DType::F32, x.device());
  if (dx.numel() == 0) return dx;
  const float factor = meanFactor(size);
  // The GPU's first pass keeps each window's maximum offset (freed in stream order: nobody waits).
  Tensor argmax = Tensor::empty({x.device().isCuda() && !average ? g.planes * g.oh * g.ow : 0}, DType::I64, x.device());
  detail::run<pool::Pool2dGrad>(detail::gpuOf(x), {dy.data<float>(), x.data<float>(), g, average, factor,
                                                   argmax.data<std::int64_t>(), dx.data<float>()});
  return dx;
}

}  // namespace gizml::netops
