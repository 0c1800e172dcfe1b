// The convolution helpers: argument checks, dispatch by device, and the host path (OpenMP over
// output rows; conv1d and convTranspose1d run 16 output channels side by side, each lane its own
// chain). The host path equals tests/reference/conv_reference.cpp bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/backend.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "exact/vec16.hpp"
#include "gizml/netops/conv.hpp"
#include "netops/conv/conv.hpp"

namespace gizml::netops {

using exact::f32x16;
using detail::checkedMul;
using detail::requireAtLeast;
using detail::windowCount;

// ---- host paths ---------------------------------------------------------------------------------------

namespace conv {

/// Threads split the output lines (b, oy); a line's rows are written entry by entry, a kernel row
/// (ch, i) at a time: kw neighbours of one input row, or zeros where it lies in the padding.
void Im2col::host(const Args& a) {
  const Geometry2d& g = a.g;
  const std::int64_t width = g.rowWidth(), lines = g.n * g.oh;
#pragma omp parallel for schedule(static)
  for (std::int64_t line = 0; line < lines; ++line) {
    const std::int64_t oy = line % g.oh, b = line / g.oh;
    float* out = a.out + line * g.ow * width;
    for (std::int64_t ox = 0; ox < g.ow; ++ox) {
      const std::int64_t x0 = ox * g.stride - g.pad;
      const bool inside = x0 >= 0 && x0 + g.kw <= g.w;
      for (std::int64_t ch = 0; ch < g.c; ++ch)
        for (std::int64_t i = 0; i < g.kh; ++i) {
          const std::int64_t y = oy * g.stride + i - g.pad;
          if (y < 0 || y >= g.h) {
            for (std::int64_t j = 0; j < g.kw; ++j) *out++ = 0.0f;
            continue;
          }
          const float* src = a.x + ((b * g.c + ch) * g.h + y) * g.w + x0;
          if (inside)
            for (std::int64_t j = 0; j < g.kw; ++j) *out++ = src[j];
          else
            for (std::int64_t j = 0; j < g.kw; ++j) *out++ = (x0 + j >= 0 && x0 + j < g.w) ? src[j] : 0.0f;
        }
    }
  }
}

/// Threads split the planes (b, ch). A plane starts at +0 and takes the columns of each window
/// offset (i, j) in increasing row-major order, scattered to the elements they copied: every
/// element receives its entries in col2imAt's order (offsets increasing), so the same bits as the
/// gather CUDA runs, without its per-element search.
void Col2im::host(const Args& a) {
  const Geometry2d& g = a.g;
  const std::int64_t width = g.rowWidth();
#pragma omp parallel for schedule(static)
  for (std::int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const std::int64_t ch = plane % g.c, b = plane / g.c;
    float* out = a.out + plane * g.h * g.w;
    std::fill(out, out + g.h * g.w, 0.0f);
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const float* col = a.cols + b * g.oh * g.ow * width + (ch * g.kh + i) * g.kw + j;
        // ox in [ox0, ox1) lands inside the row: 0 <= ox stride + j - pad < w.
        std::int64_t ox0 = 0;
        while (ox0 < g.ow && ox0 * g.stride + j - g.pad < 0) ++ox0;
        std::int64_t ox1 = ox0;
        while (ox1 < g.ow && ox1 * g.stride + j - g.pad < g.w) ++ox1;
        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
          const std::int64_t y = oy * g.stride + i - g.pad;
          if (y < 0 || y >= g.h) continue;
          float* row = out + y * g.w + j - g.pad;
          const float* src = col + oy * g.ow * width;
          for (std::int64_t ox = ox0; ox < ox1; ++ox) row[ox * g.stride] = row[ox * g.stride] + src[ox * width];
        }
      }
  }
}

void Im2col1d::host(const Args& a) {
  const Geometry1d& g = a.g;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < a.rows; ++r) {
    float* o = a.out + r * g.c * g.k;
    for (std::int64_t ch = 0; ch < g.c; ++ch)
      for (std::int64_t j = 0; j < g.k; ++j) *o++ = im2col1dValue(a.x, g, a.first + r, ch, j);
  }
}

void Col2im1d::host(const Args& a) {
#pragma omp parallel for schedule(static)
  for (std::int64_t o = 0; o < a.length; ++o)
    for (std::int64_t ch = 0; ch < a.c; ++ch)
      a.out[o * a.c + ch] = col2im1dAt(a.cols, a.rows, a.c, a.k, a.stride, a.pad, o, ch);
}

/// Weights transposed to [c k, o] so that 16 output channels load as one vector; threads split
/// (output row, block of 16 channels) pairs.
void Conv1d::host(const Args& a) {
  const Geometry1d& g = a.g;
  const std::int64_t oc = a.outChannels, taps = g.c * g.k;
  std::vector<float> wT(static_cast<std::size_t>(taps * oc));
  for (std::int64_t o = 0; o < oc; ++o)
    for (std::int64_t idx = 0; idx < taps; ++idx) wT[idx * oc + o] = a.w[o * taps + idx];
  const std::int64_t blocks = (oc + 15) / 16, items = a.ot * blocks;
#pragma omp parallel for schedule(static)
  for (std::int64_t item = 0; item < items; ++item) {
    const std::int64_t r = item / blocks, o0 = (item % blocks) * 16, lanes = oc - o0;
    f32x16 acc = conv1dChain<f32x16>(a.x, g, r * g.stride - g.pad, wT.data() + o0, g.k * oc, oc, lanes);
    if (a.bias) acc = acc + exact::load16(a.bias + o0, lanes);
    exact::store16(a.out + r * oc + o0, acc, lanes);
  }
}

/// Weights transposed to [k, c, o]; threads split (output position, block of 16 channels) pairs.
/// Each cols entry feeds exactly one output, so it is computed there.
void ConvTranspose1d::host(const Args& a) {
  const std::int64_t oc = a.outChannels, c = a.c, k = a.k;
  std::vector<float> wT(static_cast<std::size_t>(k * c * oc));
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t o = 0; o < oc; ++o)
      for (std::int64_t j = 0; j < k; ++j) wT[(j * c + ch) * oc + o] = a.w[(ch * oc + o) * k + j];
  const std::int64_t blocks = (oc + 15) / 16, items = a.length * blocks;
#pragma omp parallel for schedule(static)
  for (std::int64_t item = 0; item < items; ++item) {
    const std::int64_t t = item / blocks, o0 = (item % blocks) * 16, lanes = oc - o0;
    f32x16 acc = convTranspose1dAt<f32x16>(a.x, a.n, c, k, a.stride, a.pad, t, wT.data() + o0, oc, c * oc, lanes);
    if (a.bias) acc = acc + exact::load16(a.bias + o0, lanes);
    exact::store16(a.out + t * oc + o0, acc, lanes);
  }
}

}  // namespace conv

namespace {

// ---- argument checks ---------------------------------------------------------------------------------

/// The bias argument of conv1d / convTranspose1d: empty, or one F32 [channels] on x's device.
/// Returns its data or nullptr.
const float* checkBias(const char* fn, const std::vector<Tensor>& bias, std::int64_t channels, const Tensor& x) {
  if (bias.empty()) return nullptr;
  if (bias.size() != 1) fail(fn, "bias", "expected no bias or one, got " + std::to_string(bias.size()) + " tensors");
  detail::requireDType(fn, "bias", bias[0], DType::F32);
  detail::requireShape(fn, "bias", bias[0], {channels});
  detail::requireSameDevice(fn, {{"x", &x}, {"bias", &bias[0]}});
  return bias[0].data<float>();
}

conv::Geometry2d checkGeometry2d(const char* fn, const char* dataArg, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                                 std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad) {
  requireAtLeast(fn, "kh", kh, 1);
  requireAtLeast(fn, "kw", kw, 1);
  requireAtLeast(fn, "stride", stride, 1);
  requireAtLeast(fn, "pad", pad, 0);
  const std::int64_t oh = windowCount(fn, "kh", h, kh, stride, pad, 1);
  const std::int64_t ow = windowCount(fn, "kw", w, kw, stride, pad, 1);
  conv::Geometry2d g{n, c, h, w, kh, kw, stride, pad, oh, ow};
  const std::int64_t rows = checkedMul(fn, dataArg, checkedMul(fn, dataArg, n, oh), ow);
  const std::int64_t width = checkedMul(fn, "kh", checkedMul(fn, "kh", c, kh), kw);
  checkedMul(fn, dataArg, rows, width);
  return g;
}

}  // namespace

// ---- the ops ---------------------------------------------------------------------------------------------

Tensor im2col(const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad) {
  const char* fn = "gizml::netops::im2col";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 4);
  if (x.dim(1) < 1) fail(fn, "x", "expected at least one channel, got shape " + shapeString(x.shape()));
  const conv::Geometry2d g = checkGeometry2d(fn, "x", x.dim(0), x.dim(1), x.dim(2), x.dim(3), kh, kw, stride, pad);
  Tensor cols = Tensor::empty({g.n * g.oh * g.ow, g.rowWidth()}, DType::F32, x.device());
  if (cols.numel() == 0) return cols;
  detail::run<conv::Im2col>(detail::gpuOf(x), {x.data<float>(), g, cols.data<float>()});
  return cols;
}

Tensor col2im(const Tensor& cols, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
              std::int64_t kw, std::int64_t stride, std::int64_t pad) {
  const char* fn = "gizml::netops::col2im";
  detail::requireDType(fn, "cols", cols, DType::F32);
  detail::requireRank(fn, "cols", cols, 2);
  requireAtLeast(fn, "n", n, 0);
  requireAtLeast(fn, "c", c, 1);
  requireAtLeast(fn, "h", h, 0);
  requireAtLeast(fn, "w", w, 0);
  const conv::Geometry2d g = checkGeometry2d(fn, "cols", n, c, h, w, kh, kw, stride, pad);
  checkedMul(fn, "n", checkedMul(fn, "n", checkedMul(fn, "n", n, c), h), w);
  detail::requireShape(fn, "cols", cols, {g.n * g.oh * g.ow, g.rowWidth()});
  Tensor x = Tensor::empty({n, c, h, w}, DType::F32, cols.device());
  if (x.numel() == 0) return x;
  detail::run<conv::Col2im>(detail::gpuOf(cols), {cols.data<float>(), g, x.data<float>()});
  return x;
}

Tensor im2col1d(const Tensor& x, std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                std::int64_t first, std::int64_t count) {
  const char* fn = "gizml::netops::im2col1d";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 2);
  if (x.dim(1) < 1) fail(fn, "x", "expected at least one channel, got shape " + shapeString(x.shape()));
  requireAtLeast(fn, "k", k, 1);
  requireAtLeast(fn, "stride", stride, 1);
  requireAtLeast(fn, "pad", pad, 0);
  requireAtLeast(fn, "dilation", dilation, 1);
  const conv::Geometry1d g{x.dim(0), x.dim(1), k, stride, pad, dilation};
  const std::int64_t ot = windowCount(fn, "k", g.t, k, stride, pad, dilation);
  if (first < 0 || first > ot)
    fail(fn, "first", "expected first in [0, " + std::to_string(ot) + "] (the output rows), got " + std::to_string(first));
  if (count < -1) fail(fn, "count", "expected count >= 0, or -1 for the rows from first on, got " + std::to_string(count));
  if (count > ot - first)
    fail(fn, "count",
         "expected first + count <= " + std::to_string(ot) + " (the output rows), got first " + std::to_string(first) +
             " and count " + std::to_string(count));
  const std::int64_t rows = count < 0 ? ot - first : count;
  checkedMul(fn, "x", rows, checkedMul(fn, "k", g.c, k));
  Tensor out = Tensor::empty({rows, g.c * k}, DType::F32, x.device());
  if (out.numel() == 0) return out;
  detail::run<conv::Im2col1d>(detail::gpuOf(x), {x.data<float>(), g, first, rows, out.data<float>()});
  return out;
}

Tensor col2im1d(const Tensor& cols, std::int64_t c, std::int64_t length, std::int64_t k, std::int64_t stride,
                std::int64_t pad) {
  const char* fn = "gizml::netops::col2im1d";
  detail::requireDType(fn, "cols", cols, DType::F32);
  detail::requireRank(fn, "cols", cols, 2);
  requireAtLeast(fn, "c", c, 1);
  requireAtLeast(fn, "length", length, 0);
  requireAtLeast(fn, "k", k, 1);
  requireAtLeast(fn, "stride", stride, 1);
  requireAtLeast(fn, "pad", pad, 0);
  windowCount(fn, "k", length, k, stride, pad, 1);
  const std::int64_t width = checkedMul(fn, "k", c, k);
  if (cols.dim(1) != width)
    fail(fn, "cols", "expected " + std::to_string(width) + " columns (c k), got shape " + shapeString(cols.shape()));
  checkedMul(fn, "length", length, c);
  Tensor out = Tensor::empty({length, c}, DType::F32, cols.device());
  if (out.numel() == 0) return out;
  const std::int64_t rows = cols.dim(0);
  detail::run<conv::Col2im1d>(detail::gpuOf(cols), {cols.data<float>(), rows, c, k, stride, pad, length, out.data<float>()});
  return out;
}

Tensor conv1d(const Tensor& x, const Tensor& w, const std::vector<Tensor>& bias, std::int64_t stride, std::int64_t pad,
              std::int64_t dilation) {
  const char* fn = "gizml::netops::conv1d";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 2);
  if (x.dim(1) < 1) fail(fn, "x", "expected at least one channel, got shape " + shapeString(x.shape()));
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 3);
  if (w.dim(1) != x.dim(1))
    fail(fn, "w", "expected " + std::to_string(x.dim(1)) + " input channels (x's), got shape " + shapeString(w.shape()));
  if (w.dim(0) < 1 || w.dim(2) < 1)
    fail(fn, "w", "expected at least one output channel and one tap, got shape " + shapeString(w.shape()));
  detail::requireSameDevice(fn, {{"x", &x}, {"w", &w}});
  const std::int64_t oc = w.dim(0), k = w.dim(2);
  const float* b = checkBias(fn, bias, oc, x);
  requireAtLeast(fn, "stride", stride, 1);
  requireAtLeast(fn, "pad", pad, 0);
  requireAtLeast(fn, "dilation", dilation, 1);
  const conv::Geometry1d g{x.dim(0), x.dim(1), k, stride, pad, dilation};
  const std::int64_t ot = windowCount(fn, "w", g.t, k, stride, pad, dilation);
  checkedMul(fn, "w", ot, oc);
  Tensor out = Tensor::empty({ot, oc}, DType::F32, x.device());
  if (out.numel() == 0) return out;
  detail::run<conv::Conv1d>(detail::gpuOf(x), {x.data<float>(), g, w.data<float>(), b, oc, ot, out.data<float>()});
  return out;
}

Tensor convTranspose1d(const Tensor& x, const Tensor& w, const std::vector<Tensor>& bias, std::int64_t stride,
                       std::int64_t pad) {
  const char* fn = "gizml::netops::convTranspose1d";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 2);
  if (x.dim(0) < 1 || x.dim(1) < 1)
    fail(fn, "x", "expected at least one row and one channel, got shape " + shapeString(x.shape()));
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 3);
  if (w.dim(0) != x.dim(1))
    fail(fn, "w", "expected " + std::to_string(x.dim(1)) + " input channels (x's) first, got shape " + shapeString(w.shape()));
  if (w.dim(1) < 1 || w.dim(2) < 1)
    fail(fn, "w", "expected at least one output channel and one tap, got shape " + shapeString(w.shape()));
  detail::requireSameDevice(fn, {{"x", &x}, {"w", &w}});
  const std::int64_t n = x.dim(0), c = x.dim(1), oc = w.dim(1), k = w.dim(2);
  const float* b = checkBias(fn, bias, oc, x);
  requireAtLeast(fn, "stride", stride, 1);
  requireAtLeast(fn, "pad", pad, 0);
  // length = (n - 1) stride - 2 pad + k >= 1.
  const std::int64_t spread = detail::checkedAdd(fn, "stride", checkedMul(fn, "stride", n - 1, stride), k);
  const std::int64_t twoPad = checkedMul(fn, "pad", 2, pad);
  if (spread - twoPad < 1)
    fail(fn, "pad",
         "expected an output of at least one row: (n - 1) stride + k = " + std::to_string(spread) + " > 2 pad = " +
             std::to_string(twoPad));
  const std::int64_t length = spread - twoPad;
  checkedMul(fn, "x", length, oc);
  Tensor out = Tensor::empty({length, oc}, DType::F32, x.device());
  detail::run<conv::ConvTranspose1d>(detail::gpuOf(x), {x.data<float>(), n, c, w.data<float>(), b, oc, k, stride, pad,
                                                        length, out.data<float>()});
  return out;
}

}  // namespace gizml::netops
