#include "reference/rows_reference.hpp"

#include <cmath>

#include "exact/math.hpp"
#include "exact/order.hpp"

namespace gizml::reference {

float sum16(const float* v, std::int64_t n) {
  float lane[16] = {};
  for (std::int64_t i = 0; i < n; ++i) lane[i % 16] = lane[i % 16] + v[i];
  return exact::treeSum16(lane);
}

float dot16(const float* a, const float* b, std::int64_t n) {
  float lane[16] = {};
  for (std::int64_t i = 0; i < n; ++i) lane[i % 16] = std::fma(a[i], b[i], lane[i % 16]);
  return exact::treeSum16(lane);
}

std::int64_t argmaxRow(const float* v, std::int64_t n) {
  std::int64_t best = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) continue;
    if (best < 0 || v[i] > v[best]) best = i;
  }
  return best < 0 ? 0 : best;
}

void layerNorm(const float* x, const float* w, const float* b, double eps, std::int64_t rows, std::int64_t n,
               float* y, float* mean, float* rstd) {
  const float eps32 = static_cast<float>(eps);
  const float nf = static_cast<float>(n);
  std::vector<float> d(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float mu = sum16(xr, n) / nf;
    for (std::int64_t i = 0; i < n; ++i) d[i] = xr[i] - mu;
    float var = dot16(d.data(), d.data(), n) / nf;
    float rs = 1.0f / std::sqrt(var + eps32);
    for (std::int64_t i = 0; i < n; ++i) {
      float scaled = d[i] * rs;
      y[r * n + i] = std::fma(scaled, w[i], b[i]);
    }
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layerNormGrad(const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
                   std::int64_t rows, std::int64_t n, float* dx, float* dweight, float* dbias) {
  const float nf = static_cast<float>(n);
  std::vector<float> xhat(static_cast<std::size_t>(rows * n)), g(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < n; ++i) xhat[r * n + i] = (x[r * n + i] - mean[r]) * rstd[r];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < n; ++i) g[i] = dy[r * n + i] * w[i];
    float a = sum16(g.data(), n) / nf;
    float c = dot16(g.data(), xhat.data() + r * n, n) / nf;
    for (std::int64_t i = 0; i < n; ++i) {
      float inner = std::fma(-xhat[r * n + i], c, g[i] - a);
      dx[r * n + i] = rstd[r] * inner;
    }
  }
  for (std::int64_t j = 0; j < n; ++j) {
    float accW = 0.0f, accB = 0.0f;
    for (std::int64_t r = 0; r < rows; ++r) {
      accW = std::fma(dy[r * n + j], xhat[r * n + j], accW);
      accB = accB + dy[r * n + j];
    }
    dweight[j] = accW;
    dbias[j] = accB;
  }
}

float crossEntropyRow(const float* x, std::int64_t n, std::int64_t label) {
  const float m = x[argmaxRow(x, n)];
  std::vector<float> e(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) e[i] = exact::exp(x[i] - m);
  const float s = sum16(e.data(), n);
  return (m + exact::log(s)) - x[label];
}

double crossEntropyLoss(const float* logits, std::int64_t rows, std::int64_t classes,
                        const std::vector<std::int64_t>& labels) {
  double total = 0.0;
  for (std::int64_t r = 0; r < rows; ++r) total += crossEntropyRow(logits + r * classes, classes, labels[r]);
  return total / static_cast<double>(rows);
}

void crossEntropyGrad(const float* logits, std::int64_t rows, std::int64_t classes,
                      const std::vector<std::int64_t>& labels, double scale, float* grad) {
  const float scale32 = static_cast<float>(scale);
  std::vector<float> e(static_cast<std::size_t>(classes));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * classes;
    const float m = x[argmaxRow(x, classes)];
    for (std::int64_t i = 0; i < classes; ++i) e[i] = exact::exp(x[i] - m);
    const float inv = 1.0f / sum16(e.data(), classes);
    for (std::int64_t i = 0; i < classes; ++i) {
      float onehot = i == labels[r] ? 1.0f : 0.0f;
      float p = e[i] * inv;
      grad[r * classes + i] = (p - onehot) * scale32;
    }
  }
}

void dropout(const float* x, std::int64_t count, Key key, double p, float* y) {
  const float p32 = static_cast<float>(p);
  const float factor = static_cast<float>(1.0 / (1.0 - p));
  for (std::int64_t i = 0; i < count; ++i)
    y[i] = key.uniform(static_cast<std::uint64_t>(i)) >= p32 ? x[i] * factor : 0.0f;
}

void rmsNorm(const float* x, const float* w, double eps, std::int64_t rows, std::int64_t n, float* y, float* rstd) {
  const float eps32 = static_cast<float>(eps);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float scale = 1.0f / std::sqrt(dot16(xr, xr, n) / static_cast<float>(n) + eps32);
    for (std::int64_t i = 0; i < n; ++i) y[r * n + i] = (xr[i] * scale) * w[i];
    rstd[r] = scale;
  }
}

}  // namespace gizml::reference
