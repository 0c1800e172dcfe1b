// The convolution helpers (SPEC §3 "Convolution and pooling"): the per-element formulas that the
// host and CUDA share, and each op's kernel struct (core/dispatch.hpp): its arguments, its output
// element as the kernel computes it, its host path (host.cpp) and its launcher (cuda.cu). A
// formula templated on its lane type F runs on the host on 16 outputs side by side (f32x16: 16
// output channels, each lane its own chain) and on the GPU on one output (float); a chain is never
// split.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::conv {

// ---- lanes: one output (float) or 16 outputs side by side (host f32x16) ------------------------

/// The weight of one output (float) or of `lanes` outputs at p, p + 1, ... (f32x16, the lanes
/// past `lanes` read as +0 and are never stored).
GIZML_HD float loadLanes(const float* p, std::int64_t /*lanes*/, float) { return *p; }
/// v in every lane, its sign and NaN kept (v - (+0) is v for every v, -0 included).
GIZML_HD float broadcastLanes(float v, float) { return v; }
#if !defined(__CUDACC__)
inline exact::f32x16 loadLanes(const float* p, std::int64_t lanes, exact::f32x16) { return exact::load16(p, lanes); }
inline exact::f32x16 broadcastLanes(float v, exact::f32x16) { return exact::splat(v); }
#endif

// ---- im2col / col2im -------------------------------------------------------------------------------

/// x [n, c, h, w] and its columns [n oh ow, c kh kw], oh = (h + 2 pad - kh) / stride + 1.
struct Geometry2d {
  std::int64_t n, c, h, w, kh, kw, stride, pad, oh, ow;
  GIZML_HD std::int64_t rowWidth() const { return c * kh * kw; }
};

/// im2col's entry (row (b, oy, ox), column (ch, i, j)): x[b, ch, oy stride + i - pad,
/// ox stride + j - pad], or +0 outside the image.
GIZML_HD float im2colValue(const float* x, const Geometry2d& g, std::int64_t b, std::int64_t oy, std::int64_t ox,
                           std::int64_t ch, std::int64_t i, std::int64_t j) {
  const std::int64_t y = oy * g.stride + i - g.pad, xx = ox * g.stride + j - g.pad;
  return (y >= 0 && y < g.h && xx >= 0 && xx < g.w) ? x[((b * g.c + ch) * g.h + y) * g.w + xx] : 0.0f;
}

/// col2im's element (b, ch, y, x): +0, then + every entry that copied it, window offsets (i, j)
/// in increasing (row-major) order. Offset (i, j) copied it from row (oy, ox) when
/// oy stride = y + pad - i and ox stride = x + pad - j are whole rows inside the output.
GIZML_HD float col2imAt(const float* cols, const Geometry2d& g, std::int64_t b, std::int64_t ch, std::int64_t y,
                        std::int64_t x) {
  const std::int64_t width = g.rowWidth();
  float acc = 0.0f;
  for (std::int64_t i = 0; i < g.kh; ++i) {
    const std::int64_t ty = y + g.pad - i;
    if (ty < 0) break;  // only falls further as i grows
    if (ty % g.stride != 0 || ty / g.stride >= g.oh) continue;
    const std::int64_t oy = ty / g.stride;
    for (std::int64_t j = 0; j < g.kw; ++j) {
      const std::int64_t tx = x + g.pad - j;
      if (tx < 0) break;
      if (tx % g.stride != 0 || tx / g.stride >= g.ow) continue;
      const std::int64_t ox = tx / g.stride;
      acc = acc + cols[((b * g.oh + oy) * g.ow + ox) * width + (ch * g.kh + i) * g.kw + j];
    }
  }
  return acc;
}

// ---- the 1-d family ------------------------------------------------------------------------------------

/// x [t, c] seen by a window of k taps `dilation` apart, sliding by `stride`, padded by `pad`.
struct Geometry1d {
  std::int64_t t, c, k, stride, pad, dilation;
};

/// im2col1d's entry (o, ch k + j): x[o stride + j dilation - pad, ch], or +0 outside [0, t).
GIZML_HD float im2col1dValue(const float* x, const Geometry1d& g, std::int64_t o, std::int64_t ch, std::int64_t j) {
  const std::int64_t pos = o * g.stride + j * g.dilation - g.pad;
  return (pos >= 0 && pos < g.t) ? x[pos * g.c + ch] : 0.0f;
}

/// col2im1d's entry (o, ch) of cols [rows, c k]: +0, then + cols[i, ch k + j] for j increasing,
/// where i stride + j - pad = o and 0 <= i < rows.
GIZML_HD float col2im1dAt(const float* cols, std::int64_t rows, std::int64_t c, std::int64_t k, std::int64_t stride,
                          std::int64_t pad, std::int64_t o, std::int64_t ch) {
  float acc = 0.0f;
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int64_t ti = o + pad - j;
    if (ti < 0) break;
    if (ti % stride != 0 || ti / stride >= rows) continue;
    acc = acc + cols[(ti / stride) * (c * k) + ch * k + j];
  }
  return acc;
}

/// conv1d's output at window start `start` (= o stride - pad), before the bias: `chain` from +0
/// over idx = ch k + j in increasing order, acc = fma(patch(ch, j), weight(ch, j), acc), where
/// patch(ch, j) = x[start + j dilation, ch] or +0 outside [0, t) (a padded tap still takes its
/// fma: 0 * inf is NaN, as in the SPEC's im2col1d-then-chain). weight(ch, j) is at
/// w + ch chStep + j jStep, one output (float) or `lanes` outputs side by side.
template <class F>
GIZML_HD F conv1dChain(const float* x, const Geometry1d& g, std::int64_t start, const float* w, std::int64_t chStep,
                       std::int64_t jStep, std::int64_t lanes) {
  F acc = F{};
  for (std::int64_t ch = 0; ch < g.c; ++ch)
    for (std::int64_t j = 0; j < g.k; ++j) {
      const std::int64_t pos = start + j * g.dilation;
      const float patch = (pos >= 0 && pos < g.t) ? x[pos * g.c + ch] : 0.0f;
      acc = exact::fmaLane(broadcastLanes(patch, F{}), loadLanes(w + ch * chStep + j * jStep, lanes, F{}), acc);
    }
  return acc;
}

/// convTranspose1d's output at position o of x [n, c], before the bias: +0, then for j
/// increasing, where i = (o + pad - j) / stride is whole and in [0, n), + cols(i, j), with
/// cols(i, j) = `chain` from +0 over ch of x[i, ch] * weight(ch, j) (the SPEC's cols entry
/// (i, oc k + j), then col2im1d). weight(ch, j) is at w + ch chStep + j jStep.
template <class F>
GIZML_HD F convTranspose1dAt(const float* x, std::int64_t n, std::int64_t c, std::int64_t k, std::int64_t stride,
                             std::int64_t pad, std::int64_t o, const float* w, std::int64_t chStep, std::int64_t jStep,
                             std::int64_t lanes) {
  F acc = F{};
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int64_t ti = o + pad - j;
    if (ti < 0) break;
    if (ti % stride != 0 || ti / stride >= n) continue;
    const float* xi = x + (ti / stride) * c;
    F col = F{};
    for (std::int64_t ch = 0; ch < c; ++ch)
      col = exact::fmaLane(broadcastLanes(xi[ch], F{}), loadLanes(w + ch * chStep + j * jStep, lanes, F{}), col);
    acc = acc + col;
  }
  return acc;
}

// ---- the ops' kernels (core/dispatch.hpp) -----------------------------------------------------------
// Each `element(a, e)` is output element e (of a.out, count(a) in all) in the kernels'
// one-thread-an-element indexing: the GPU runs exactly it, and the tests run it on the host.

struct Im2col {
  static constexpr const char* kName = "gizml::netops::im2col";
  struct Args {
    const float* x;
    Geometry2d g;
    float* out;  // cols [n oh ow, c kh kw]
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.g.n * a.g.oh * a.g.ow * a.g.rowWidth(); }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const Geometry2d& g = a.g;
    const std::int64_t row = e / g.rowWidth(), col = e % g.rowWidth();
    const std::int64_t ox = row % g.ow, oy = (row / g.ow) % g.oh, b = row / (g.ow * g.oh);
    const std::int64_t j = col % g.kw, i = (col / g.kw) % g.kh, ch = col / (g.kw * g.kh);
    return im2colValue(a.x, g, b, oy, ox, ch, i, j);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

struct Col2im {
  static constexpr const char* kName = "gizml::netops::col2im";
  struct Args {
    const float* cols;
    Geometry2d g;
    float* out;  // x [n, c, h, w]
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.g.n * a.g.c * a.g.h * a.g.w; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const Geometry2d& g = a.g;
    const std::int64_t xx = e % g.w, y = (e / g.w) % g.h, ch = (e / (g.w * g.h)) % g.c, b = e / (g.w * g.h * g.c);
    return col2imAt(a.cols, g, b, ch, y, xx);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

/// Col2im on the host from the columns laid out the other way round: colsT [c kh kw, n oh ow]
/// (entry (q, t) = Col2im's cols (t, q)), so each window offset's values for an output row are a
/// run. The same sums in the same order as Col2im (from +0, offsets (i, j) increasing), so the
/// same bits. convInputGrad's host path, whose product writes this layout with a row of dy's
/// values a run.
void col2imRowsHost(const float* colsT, const Geometry2d& g, float* out);

/// Rows [first, first + rows) of im2col1d, out [rows, c k].
struct Im2col1d {
  static constexpr const char* kName = "gizml::netops::im2col1d";
  struct Args {
    const float* x;
    Geometry1d g;
    std::int64_t first, rows;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.rows * a.g.c * a.g.k; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const std::int64_t width = a.g.c * a.g.k, r = e / width, col = e % width;
    return im2col1dValue(a.x, a.g, a.first + r, col / a.g.k, col % a.g.k);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

/// cols [rows, c k] -> out [length, c].
struct Col2im1d {
  static constexpr const char* kName = "gizml::netops::col2im1d";
  struct Args {
    const float* cols;
    std::int64_t rows, c, k, stride, pad, length;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.length * a.c; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    return col2im1dAt(a.cols, a.rows, a.c, a.k, a.stride, a.pad, e / a.c, e % a.c);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

/// x [t, c], w [o, c, k], bias [o] or null -> out [ot, o].
struct Conv1d {
  static constexpr const char* kName = "gizml::netops::conv1d";
  struct Args {
    const float* x;
    Geometry1d g;
    const float *w, *bias;
    std::int64_t outChannels, ot;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.ot * a.outChannels; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const std::int64_t r = e / a.outChannels, o = e % a.outChannels;
    float acc = conv1dChain<float>(a.x, a.g, r * a.g.stride - a.g.pad, a.w + o * a.g.c * a.g.k, a.g.k, 1, 1);
    if (a.bias) acc = acc + a.bias[o];
    return acc;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

/// x [n, c], w [c, o, k], bias [o] or null -> out [length, o].
struct ConvTranspose1d {
  static constexpr const char* kName = "gizml::netops::convTranspose1d";
  struct Args {
    const float* x;
    std::int64_t n, c;
    const float *w, *bias;
    std::int64_t outChannels, k, stride, pad, length;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.length * a.outChannels; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const std::int64_t t = e / a.outChannels, o = e % a.outChannels;
    float acc = convTranspose1dAt<float>(a.x, a.n, a.c, a.k, a.stride, a.pad, t, a.w + o * a.k, a.outChannels * a.k, 1, 1);
    if (a.bias) acc = acc + a.bias[o];
    return acc;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& gpu, const Args& a);
};

}  // namespace gizml::netops::conv
