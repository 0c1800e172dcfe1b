#include "reference/grad_reference.hpp"

#include <cmath>

#include "reference/conv_reference.hpp"

namespace gizml::reference {

void matmulNN(const float* a, const float* b, std::int64_t m, std::int64_t n, std::int64_t k, float* c) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < k; ++p) acc = std::fma(a[i * k + p], b[p * n + j], acc);
      c[i * n + j] = acc;
    }
}

void matmulTN(const float* a, const float* b, std::int64_t m, std::int64_t n, std::int64_t k, float* c) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < k; ++p) acc = std::fma(a[p * m + i], b[p * n + j], acc);
      c[i * n + j] = acc;
    }
}

namespace {
struct Out {
  std::int64_t oh, ow;
};
Out outSize(std::int64_t h, std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad) {
  return {(h + 2 * pad - kh) / stride + 1, (wd + 2 * pad - kw) / stride + 1};
}
}  // namespace

void convBatch(const float* w, const float* x, std::int64_t n, std::int64_t o, std::int64_t c, std::int64_t h,
               std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad, float* out) {
  const auto [oh, ow] = outSize(h, wd, kh, kw, stride, pad);
  const std::int64_t q = c * kh * kw, rows = n * oh * ow;
  std::vector<float> cols(static_cast<std::size_t>(rows * q));
  im2col(x, n, c, h, wd, kh, kw, stride, pad, cols.data());
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t pix = 0; pix < oh * ow; ++pix) {
        float acc = 0.0f;
        for (std::int64_t k = 0; k < q; ++k) acc = std::fma(w[oc * q + k], cols[(b * oh * ow + pix) * q + k], acc);
        out[(b * o + oc) * oh * ow + pix] = acc;
      }
}

void convWeightGrad(const float* dy, const float* x, std::int64_t n, std::int64_t o, std::int64_t c, std::int64_t h,
                    std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad, float* dw) {
  const auto [oh, ow] = outSize(h, wd, kh, kw, stride, pad);
  const std::int64_t q = c * kh * kw, pixels = oh * ow;
  std::vector<float> cols(static_cast<std::size_t>(n * pixels * q));
  im2col(x, n, c, h, wd, kh, kw, stride, pad, cols.data());
  for (std::int64_t oc = 0; oc < o; ++oc)
    for (std::int64_t k = 0; k < q; ++k) {
      float acc = 0.0f;
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t pix = 0; pix < pixels; ++pix)
          acc = std::fma(dy[(b * o + oc) * pixels + pix], cols[(b * pixels + pix) * q + k], acc);
      dw[oc * q + k] = acc;
    }
}

void convInputGrad(const float* dy, const float* w, std::int64_t n, std::int64_t o, std::int64_t c, std::int64_t h,
                   std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad, float* dx) {
  const auto [oh, ow] = outSize(h, wd, kh, kw, stride, pad);
  const std::int64_t q = c * kh * kw, pixels = oh * ow;
  std::vector<float> dcols(static_cast<std::size_t>(n * pixels * q));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t pix = 0; pix < pixels; ++pix)
      for (std::int64_t k = 0; k < q; ++k) {
        float acc = 0.0f;
        for (std::int64_t oc = 0; oc < o; ++oc) acc = std::fma(dy[(b * o + oc) * pixels + pix], w[oc * q + k], acc);
        dcols[(b * pixels + pix) * q + k] = acc;
      }
  col2im(dcols.data(), n, c, h, wd, kh, kw, stride, pad, dx);
}

float add(float a, float b) { return a + b; }
float mul(float a, float b) { return a * b; }
float scale(float x, float s) { return x * s; }
float axpy(float alpha, float x, float y) {
  const float t = alpha * x;
  return t + y;
}
float relu(float x) {
  if (std::isnan(x)) return x;
  return x > 0.0f ? x : 0.0f;
}
float reluGrad(float dy, float x) { return x > 0.0f ? dy : 0.0f; }

std::vector<float> sumRows(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(static_cast<std::size_t>(cols), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) out[j] = out[j] + x[r * cols + j];
  return out;
}

std::vector<float> sumChannels(const std::vector<float>& x, std::int64_t n, std::int64_t c, std::int64_t inner) {
  std::vector<float> out(static_cast<std::size_t>(c), 0.0f);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t i = 0; i < inner; ++i) out[ch] = out[ch] + x[(b * c + ch) * inner + i];
  return out;
}

std::vector<float> transpose(const std::vector<float>& x, std::int64_t r, std::int64_t c) {
  std::vector<float> out(x.size());
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) out[j * r + i] = x[i * c + j];
  return out;
}

namespace {
double power(double b, std::int64_t e) {
  double r = 1.0;
  for (; e > 0; e >>= 1, b = b * b)
    if (e & 1) r = r * b;
  return r;
}
}  // namespace

void adamW(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v, double lr,
           double beta1, double beta2, double eps, double weightDecay, std::int64_t step) {
  const float decay = static_cast<float>(1.0 - lr * weightDecay);
  const float a1 = static_cast<float>(1.0 - beta1);
  const float b2 = static_cast<float>(beta2);
  const float a2 = static_cast<float>(1.0 - beta2);
  const float c2 = static_cast<float>(std::sqrt(1.0 - power(beta2, step)));
  const float e = static_cast<float>(eps);
  const float k = static_cast<float>(-(lr / (1.0 - power(beta1, step))));
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = p[i] * decay;
    const float dm = g[i] - m[i];
    const float step1 = a1 * dm;
    m[i] = m[i] + step1;
    const float vb = v[i] * b2;
    const float ag = a2 * g[i];
    const float gg = ag * g[i];
    v[i] = vb + gg;
    float denom = std::sqrt(v[i]);
    denom = denom / c2;
    denom = denom + e;
    const float r = m[i] / denom;
    const float kr = k * r;
    p[i] = p[i] + kr;
  }
}

}  // namespace gizml::reference
