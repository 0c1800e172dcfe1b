#include "reference/lazy_reference.hpp"

#include <cmath>

#include "exact/math.hpp"

namespace gizml::reference {

float chain(const float* a, const float* b, std::int64_t n, std::int64_t bStride) {
  float acc = 0.0f;
  for (std::int64_t p = 0; p < n; ++p) acc = std::fma(a[p], b[p * bStride], acc);
  return acc;
}

void matmul(const float* a, const float* w, std::int64_t m, std::int64_t n, std::int64_t k, float* c) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[i * n + j] = chain(a + i * k, w + j * k, k);
}

float epilogueStep(Lazy::Op op, float v, float operand, float value) {
  switch (op) {
    case Lazy::Op::Bias:
    case Lazy::Op::Residual:
      return v + operand;
    case Lazy::Op::Scale:
      return v * value;
    case Lazy::Op::Silu: {  // v / (1 + exp(-v))
      float e = exact::exp(-v);
      float d = 1.0f + e;
      return v / d;
    }
    case Lazy::Op::Gelu: {  // the tanh form: v / (1 + exp(-2u)), 2u = ((v v v) 0.044715 + v) 1.5957691
      float cube = v * v;
      cube = cube * v;
      float inner = cube * 0.044715f;
      inner = inner + v;
      float twoU = inner * 1.59576912f;
      float d = 1.0f + exact::exp(-twoU);
      return v / d;
    }
    case Lazy::Op::Relu:
      if (std::isnan(v)) return v;
      return v > 0.0f ? v : 0.0f;
  }
  return v;
}

void patchRows(const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
               std::int64_t pad, std::int64_t r0, std::int64_t r1, float* out) {
  const std::int64_t ow = w + 2 * pad - kw + 1, cols = (r1 - r0) * ow;
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t i = 0; i < kh; ++i)
      for (std::int64_t j = 0; j < kw; ++j)
        for (std::int64_t oy = r0; oy < r1; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t y = oy + i - pad, xx = ox + j - pad;
            const float v = (y >= 0 && y < h && xx >= 0 && xx < w) ? x[(ch * h + y) * w + xx] : 0.0f;
            out[(ch * kh * kw + i * kw + j) * cols + (oy - r0) * ow + ox] = v;
          }
}

void conv(const float* w, const float* x, std::int64_t o, std::int64_t c, std::int64_t h, std::int64_t wd,
          std::int64_t kh, std::int64_t kw, std::int64_t pad, float* out) {
  const std::int64_t oh = h + 2 * pad - kh + 1, ow = wd + 2 * pad - kw + 1, q = c * kh * kw;
  std::vector<float> patches(static_cast<std::size_t>(q * oh * ow));
  patchRows(x, c, h, wd, kh, kw, pad, 0, oh, patches.data());
  for (std::int64_t oc = 0; oc < o; ++oc)
    for (std::int64_t pix = 0; pix < oh * ow; ++pix) out[oc * oh * ow + pix] = chain(w + oc * q, patches.data() + pix, q, oh * ow);
}

}  // namespace gizml::reference
