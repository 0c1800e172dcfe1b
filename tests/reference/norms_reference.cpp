#include "reference/norms_reference.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "exact/math.hpp"
#include "gizml/dtype.hpp"
#include "reference/rows_reference.hpp"

namespace gizml::reference {

void modulatedNorm(const float* x, const float* w, const float* shift, const float* scale, const float* map,
                   double eps, bool centered, std::int64_t rows, std::int64_t n, float* y) {
  const float eps32 = static_cast<float>(eps), nf = static_cast<float>(n);
  std::vector<float> d(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const std::int64_t m = static_cast<std::int64_t>(map[r]);
    const float mean = centered ? sum16(xr, n) / nf : 0.0f;
    for (std::int64_t i = 0; i < n; ++i) d[i] = centered ? xr[i] - mean : xr[i];
    const float rs = 1.0f / std::sqrt(dot16(d.data(), d.data(), n) / nf + eps32);
    for (std::int64_t i = 0; i < n; ++i) {
      const float normed = d[i] * rs;
      const float onePlusScale = 1.0f + scale[m * n + i];
      y[r * n + i] = std::fma(normed * w[i], onePlusScale, shift[m * n + i]);
    }
  }
}

void gatedNormAdd(float* x, const float* y, const float* w, const float* gate, const float* map, double eps,
                  std::int64_t rows, std::int64_t n) {
  const float eps32 = static_cast<float>(eps), nf = static_cast<float>(n);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * n;
    const std::int64_t m = static_cast<std::int64_t>(map[r]);
    const float rs = 1.0f / std::sqrt(dot16(yr, yr, n) / nf + eps32);
    for (std::int64_t i = 0; i < n; ++i) {
      const float scaled = (yr[i] * rs) * w[i];
      x[r * n + i] = std::fma(scaled, gate[m * n + i], x[r * n + i]);
    }
  }
}

void pixelNorm(const float* x, std::int64_t frames, std::int64_t c, std::int64_t pixels, double eps, bool act,
               float* y) {
  const float eps32 = static_cast<float>(eps), cf = static_cast<float>(c);
  for (std::int64_t f = 0; f < frames; ++f)
    for (std::int64_t p = 0; p < pixels; ++p) {
      const float* xp = x + f * c * pixels + p;
      float ss = 0.0f;
      for (std::int64_t ch = 0; ch < c; ++ch) ss = std::fma(xp[ch * pixels], xp[ch * pixels], ss);
      const float r = 1.0f / std::sqrt(ss / cf + eps32);
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const float v = xp[ch * pixels] * r;
        y[f * c * pixels + ch * pixels + p] = act ? exact::silu(v) : v;
      }
    }
}

void groupNorm(const float* x, std::int64_t c, std::int64_t spatial, std::int64_t groups, std::int64_t slices,
               const float* w, const float* b, double eps, bool act, float* y) {
  const std::int64_t channels = c / groups, length = channels * spatial;
  const std::int64_t sliceLength = (length + slices - 1) / slices;
  for (std::int64_t g = 0; g < groups; ++g) {
    const float* xg = x + g * length;
    double s1 = 0.0, s2 = 0.0;
    for (std::int64_t k = 0; k < slices; ++k) {
      const std::int64_t start = std::min(k * sliceLength, length), end = std::min(start + sliceLength, length);
      s1 += static_cast<double>(sum16(xg + start, end - start));
      s2 += static_cast<double>(dot16(xg + start, xg + start, end - start));
    }
    const double mean = s1 / static_cast<double>(length);
    double var = s2 / static_cast<double>(length) - mean * mean;
    if (var < 0.0) var = 0.0;
    const float mean32 = static_cast<float>(mean);
    const float rstd32 = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(static_cast<float>(eps))));
    for (std::int64_t i = 0; i < length; ++i) {
      const std::int64_t ch = g * channels + i / spatial;
      const float v = std::fma((xg[i] - mean32) * rstd32, w[ch], b[ch]);
      y[g * length + i] = act ? exact::silu(v) : v;
    }
  }
}

void rowNormRope(float* v, std::int64_t stride, std::int64_t rows, std::int64_t width, std::int64_t head,
                 const float* w, double eps, const float* cos, const float* sin) {
  const float eps32 = static_cast<float>(eps);
  const std::int64_t half = head / 2;
  std::vector<float> normed(static_cast<std::size_t>(width));
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = v + r * stride;
    const float scale = 1.0f / std::sqrt(dot16(row, row, width) / static_cast<float>(width) + eps32);
    for (std::int64_t i = 0; i < width; ++i) normed[i] = (row[i] * scale) * w[i];
    for (std::int64_t h = 0; h < width / head; ++h)
      for (std::int64_t e = 0; e < half; ++e) {
        const std::int64_t j = h * half + e, a = h * head + e;
        const float p = normed[a], q = normed[a + half], c = cos[r * (width / 2) + j], s = sin[r * (width / 2) + j];
        row[a] = bf16ToFloat(floatToBF16(std::fma(p, c, -(q * s))));
        row[a + half] = bf16ToFloat(floatToBF16(std::fma(q, c, p * s)));
      }
  }
}

}  // namespace gizml::reference
