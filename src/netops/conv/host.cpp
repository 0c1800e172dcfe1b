// The convolution helpers: argument checks, dispatch by device, and the host path (OpenMP over
// output rows; conv1d is the exact GEMM of netops/gemm with its patch rows made as the A panels
// fill; convTranspose1d's cols are that GEMM's product, then col2im1d). The host path equals
// tests/reference/conv_reference.cpp bit for bit.
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
#include "netops/gemm/gemm.hpp"

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

namespace {

/// One plane of col2im into dst: +0, then the columns of each window offset (i, j) in increasing
/// row-major order, scattered to the elements they copied: every element receives its entries in
/// col2imAt's order (offsets increasing), so the same bits as the gather CUDA runs, without its
/// per-element search. Offset (i, j)'s value for output pixel t = oy ow + ox is column(i, j)[t step].
template <class Column>
void col2imPlane(const Geometry2d& g, float* dst, Column column, std::int64_t step) {
  std::fill(dst, dst + g.h * g.w, 0.0f);
  for (std::int64_t i = 0; i < g.kh; ++i)
    for (std::int64_t j = 0; j < g.kw; ++j) {
      const float* col = column(i, j);
      // ox in [ox0, ox1) lands inside the row: 0 <= ox stride + j - pad < w.
      std::int64_t ox0 = 0;
      while (ox0 < g.ow && ox0 * g.stride + j - g.pad < 0) ++ox0;
      std::int64_t ox1 = ox0;
      while (ox1 < g.ow && ox1 * g.stride + j - g.pad < g.w) ++ox1;
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        const std::int64_t y = oy * g.stride + i - g.pad;
        if (y < 0 || y >= g.h) continue;
        float* __restrict row = dst + y * g.w + j - g.pad;
        const float* __restrict src = col + oy * g.ow * step;
        if (g.stride == 1 && step == 1)  // runs: vector adds
          for (std::int64_t ox = ox0; ox < ox1; ++ox) row[ox] = row[ox] + src[ox];
        else
          for (std::int64_t ox = ox0; ox < ox1; ++ox) row[ox * g.stride] = row[ox * g.stride] + src[ox * step];
      }
    }
}

}  // namespace

/// Threads split the planes (b, ch); cols [n oh ow, c kh kw]: offset (i, j)'s values a column.
void Col2im::host(const Args& a) {
  const Geometry2d& g = a.g;
  const std::int64_t width = g.rowWidth();
#pragma omp parallel for schedule(static)
  for (std::int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const std::int64_t ch = plane % g.c, b = plane / g.c;
    col2imPlane(g, a.out + plane * g.h * g.w,
                [&](std::int64_t i, std::int64_t j) { return a.cols + b * g.oh * g.ow * width + (ch * g.kh + i) * g.kw + j; },
                width);
  }
}

void col2imRowsHost(const float* colsT, const Geometry2d& g, float* out) {
  const std::int64_t rows = g.n * g.oh * g.ow;
  // Planes channel by channel, image by image within a channel: a channel's rows of colsT are
  // then read front to back.
#pragma omp parallel for schedule(static)
  for (std::int64_t item = 0; item < g.n * g.c; ++item) {
    const std::int64_t ch = item / g.n, b = item % g.n;
    col2imPlane(g, out + (b * g.c + ch) * g.h * g.w,
                [&](std::int64_t i, std::int64_t j) { return colsT + ((ch * g.kh + i) * g.kw + j) * rows + b * g.oh * g.ow; },
                1);
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

/// conv1d on the host is the exact GEMM (netops/gemm): out [ot, o] = the chain over ch k + j of
/// the patch rows (im2col1d's, made as the GEMM's A panels are filled, never stored) times
/// w [o, c k], then + bias in the GEMM's store. The same chain as conv1dChain, so the same bits.
static void conv1dPatchRows(const void* ctx, std::int64_t row0, std::int64_t rows, std::int64_t p0, std::int64_t kc,
                            float* dst) {
  const auto& a = *static_cast<const Conv1d::Args*>(ctx);
  const Geometry1d& g = a.g;
  constexpr std::int64_t kMaxTaps = 16;
  const float* tap[kMaxTaps];  // x's row under each tap of the window (null: padding)
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t start = (row0 + i) * g.stride - g.pad;
    float* d = dst + i * kc;
    if (g.k > kMaxTaps) {
      for (std::int64_t p = 0; p < kc; ++p) d[p] = im2col1dValue(a.x, g, row0 + i, (p0 + p) / g.k, (p0 + p) % g.k);
      continue;
    }
    for (std::int64_t j = 0; j < g.k; ++j) {
      const std::int64_t pos = start + j * g.dilation;
      tap[j] = pos >= 0 && pos < g.t ? a.x + pos * g.c : nullptr;
    }
    // steps p0 .. p0 + kc are (ch, j) = (p / k, p % k): a partial first channel, whole ones (a tap
    // at a time: x's row is contiguous in ch), a partial last one
    std::int64_t p = 0, ch = p0 / g.k;
    for (std::int64_t j = p0 % g.k; j > 0 && j < g.k && p < kc; ++j, ++p) d[p] = tap[j] ? tap[j][ch] : 0.0f;
    if (p > 0) ++ch;
    const std::int64_t whole = (kc - p) / g.k;
    for (std::int64_t j = 0; j < g.k; ++j) {
      float* dj = d + p + j;
      if (tap[j]) {
        const float* src = tap[j] + ch;
        for (std::int64_t w = 0; w < whole; ++w) dj[w * g.k] = src[w];
      } else {
        for (std::int64_t w = 0; w < whole; ++w) dj[w * g.k] = 0.0f;
      }
    }
    p += whole * g.k;
    ch += whole;
    for (std::int64_t j = 0; p < kc; ++j, ++p) d[p] = tap[j] ? tap[j][ch] : 0.0f;
  }
}

void Conv1d::host(const Args& a) {
  if (a.ot == 0 || a.outChannels == 0) return;
  const Geometry1d& g = a.g;
  gemm::GemmStore s{DType::F32, a.ot, a.outChannels, g.c * g.k, nullptr, 0, a.w, g.c * g.k, 1, gemm::Epilogue{},
                    a.out, DType::F32, a.outChannels};
  if (a.bias) s.e.steps[s.e.count++] = {Lazy::Op::Bias, 0.0f, a.bias};
  s.packA = conv1dPatchRows;
  s.packACtx = &a;
  gemm::gemmStoreHost(s);
}

/// convTranspose1d on the host, as the SPEC defines it: cols [n, o k] = x [n, c] times w as
/// [c, o k] by the exact GEMM (each entry the chain over ch), then each output is +0 plus its
/// cols in j order (col2im1d's sums; the taps an output adds are found once for all its
/// channels), then + bias. The same chains and sums as convTranspose1dAt, so the same bits.
void ConvTranspose1d::host(const Args& a) {
  const std::int64_t oc = a.outChannels, k = a.k, width = oc * k;
  // A tensor's memory (the host cache's: no page faults, no zeroing, in a loop)
  Tensor colsTensor = Tensor::empty({a.n, width});
  float* cols = colsTensor.data<float>();
  gemm::gemmStoreHost({DType::F32, a.n, width, a.c, a.x, a.c, a.w, 1, width, gemm::Epilogue{}, cols, DType::F32, width});
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < a.length; ++t) {
    constexpr std::int64_t kMaxTerms = 64;
    const float* terms[kMaxTerms];  // cols + (i, j) of each tap output t adds, in j order (col2im1dAt's rule)
    std::int64_t count = 0;
    for (std::int64_t j = 0; j < k && count < kMaxTerms; ++j) {
      const std::int64_t ti = t + a.pad - j;
      if (ti < 0) break;
      if (ti % a.stride != 0 || ti / a.stride >= a.n) continue;
      terms[count++] = cols + (ti / a.stride) * width + j;
    }
    for (std::int64_t o = 0; o < oc; ++o) {
      float acc;
      if (count < kMaxTerms) {
        acc = 0.0f;
        for (std::int64_t e = 0; e < count; ++e) acc = acc + terms[e][o * k];
      } else {  // more taps than terms holds: col2im1dAt itself
        acc = col2im1dAt(cols, a.n, oc, k, a.stride, a.pad, t, o);
      }
      if (a.bias) acc = acc + a.bias[o];
      a.out[t * oc + o] = acc;
    }
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
