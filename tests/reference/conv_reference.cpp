#include "reference/conv_reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace gizml::reference {

void im2col(const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
            std::int64_t kw, std::int64_t stride, std::int64_t pad, float* cols) {
  const std::int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
  const std::int64_t width = c * kh * kw;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t ch = 0; ch < c; ++ch)
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j) {
              const std::int64_t y = oy * stride + i - pad, xx = ox * stride + j - pad;
              const bool inside = y >= 0 && y < h && xx >= 0 && xx < w;
              cols[((b * oh + oy) * ow + ox) * width + (ch * kh + i) * kw + j] =
                  inside ? x[((b * c + ch) * h + y) * w + xx] : 0.0f;
            }
}

void col2im(const float* cols, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
            std::int64_t kw, std::int64_t stride, std::int64_t pad, float* x) {
  const std::int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
  const std::int64_t width = c * kh * kw;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t xx = 0; xx < w; ++xx) {
          float acc = 0.0f;
          // Window offsets (i, j) in increasing order; the row (oy, ox) whose offset (i, j) copied
          // this element, if any.
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j)
              for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox)
                  if (oy * stride + i - pad == y && ox * stride + j - pad == xx)
                    acc = acc + cols[((b * oh + oy) * ow + ox) * width + (ch * kh + i) * kw + j];
          x[((b * c + ch) * h + y) * w + xx] = acc;
        }
}

std::int64_t conv1dLength(std::int64_t t, std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation) {
  return (t + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

void im2col1d(const float* x, std::int64_t t, std::int64_t c, std::int64_t k, std::int64_t stride, std::int64_t pad,
              std::int64_t dilation, std::int64_t first, std::int64_t count, float* out) {
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t o = first + r;
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t pos = o * stride + j * dilation - pad;
        out[r * c * k + ch * k + j] = pos >= 0 && pos < t ? x[pos * c + ch] : 0.0f;
      }
  }
}

void col2im1d(const float* cols, std::int64_t n, std::int64_t c, std::int64_t length, std::int64_t k,
              std::int64_t stride, std::int64_t pad, float* out) {
  for (std::int64_t o = 0; o < length; ++o)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      float acc = 0.0f;
      for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t i = 0; i < n; ++i)
          if (i * stride + j - pad == o) acc = acc + cols[i * c * k + ch * k + j];
      out[o * c + ch] = acc;
    }
}

void conv1d(const float* x, std::int64_t t, std::int64_t c, const float* w, std::int64_t o, std::int64_t k,
            const float* bias, std::int64_t stride, std::int64_t pad, std::int64_t dilation, float* out) {
  const std::int64_t ot = conv1dLength(t, k, stride, pad, dilation);
  std::vector<float> patches(static_cast<std::size_t>(ot * c * k));
  im2col1d(x, t, c, k, stride, pad, dilation, 0, ot, patches.data());
  for (std::int64_t r = 0; r < ot; ++r)
    for (std::int64_t oc = 0; oc < o; ++oc) {
      float acc = 0.0f;
      for (std::int64_t idx = 0; idx < c * k; ++idx) acc = std::fma(patches[r * c * k + idx], w[oc * c * k + idx], acc);
      out[r * o + oc] = bias ? acc + bias[oc] : acc;
    }
}

void convTranspose1d(const float* x, std::int64_t n, std::int64_t c, const float* w, std::int64_t o, std::int64_t k,
                     const float* bias, std::int64_t stride, std::int64_t pad, float* out) {
  const std::int64_t length = (n - 1) * stride - 2 * pad + k;
  std::vector<float> cols(static_cast<std::size_t>(n * o * k));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t j = 0; j < k; ++j) {
        float acc = 0.0f;
        for (std::int64_t ch = 0; ch < c; ++ch) acc = std::fma(x[i * c + ch], w[(ch * o + oc) * k + j], acc);
        cols[i * o * k + oc * k + j] = acc;
      }
  col2im1d(cols.data(), n, o, length, k, stride, pad, out);
  if (bias)
    for (std::int64_t t = 0; t < length; ++t)
      for (std::int64_t oc = 0; oc < o; ++oc) out[t * o + oc] = out[t * o + oc] + bias[oc];
}

namespace {
/// The window's argmax offset i size + j: the first largest in row-major order, NaN never wins,
/// 0 when every value is NaN.
std::int64_t windowArgmax(const float* x, std::int64_t w, std::int64_t y0, std::int64_t x0, std::int64_t size) {
  std::int64_t best = -1;
  float bestValue = 0.0f;
  for (std::int64_t i = 0; i < size; ++i)
    for (std::int64_t j = 0; j < size; ++j) {
      const float v = x[(y0 + i) * w + x0 + j];
      if (std::isnan(v)) continue;
      if (best < 0 || v > bestValue) {
        best = i * size + j;
        bestValue = v;
      }
    }
  return best < 0 ? 0 : best;
}
}  // namespace

void pool2d(const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t size,
            std::int64_t stride, bool average, float* y) {
  const std::int64_t oh = (h - size) / stride + 1, ow = (w - size) / stride + 1;
  const float factor = static_cast<float>(1.0 / static_cast<double>(size * size));
  for (std::int64_t p = 0; p < n * c; ++p)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const float* plane = x + p * h * w;
        float v;
        if (average) {
          float acc = 0.0f;
          for (std::int64_t i = 0; i < size; ++i)
            for (std::int64_t j = 0; j < size; ++j) acc = acc + plane[(oy * stride + i) * w + ox * stride + j];
          v = acc * factor;
        } else {
          const std::int64_t at = windowArgmax(plane, w, oy * stride, ox * stride, size);
          v = plane[(oy * stride + at / size) * w + ox * stride + at % size];
        }
        y[(p * oh + oy) * ow + ox] = v;
      }
}

void pool2dGrad(const float* dy, const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                std::int64_t size, std::int64_t stride, bool average, float* dx) {
  const std::int64_t oh = (h - size) / stride + 1, ow = (w - size) / stride + 1;
  const float factor = static_cast<float>(1.0 / static_cast<double>(size * size));
  for (std::int64_t p = 0; p < n * c; ++p)
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t xx = 0; xx < w; ++xx) {
        float acc = 0.0f;
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t i = y - oy * stride, j = xx - ox * stride;
            if (i < 0 || i >= size || j < 0 || j >= size) continue;  // not in this window
            const float g = dy[(p * oh + oy) * ow + ox];
            if (average) acc = acc + g * factor;
            else if (windowArgmax(x + p * h * w, w, oy * stride, ox * stride, size) == i * size + j) acc = acc + g;
          }
        dx[(p * h + y) * w + xx] = acc;
      }
}

}  // namespace gizml::reference
