#include "reference/quant_reference.hpp"

#include <cmath>
#include <vector>

namespace gizml::reference {

namespace {
const int kH4[4][4] = {{1, 1, 1, -1}, {1, 1, -1, 1}, {1, -1, 1, 1}, {-1, 1, 1, 1}};
/// a ± b with the sign `sign`.
float plusMinus(float a, int sign, float b) { return sign > 0 ? a + b : a - b; }
}  // namespace

void hadamard256(const float* in, float* out) {
  float cur[256], next[256];
  for (int i = 0; i < 256; ++i) cur[i] = in[i];
  for (int s : {1, 4, 16, 64}) {
    for (int i = 0; i < 256; ++i) {
      const int d = (i / s) % 4, b = i - d * s;
      const int* sign = kH4[d];
      float t = sign[0] > 0 ? cur[b] : -cur[b];
      for (int e = 1; e < 4; ++e) t = plusMinus(t, sign[e], cur[b + e * s]);
      next[i] = 0.5f * t;
    }
    for (int i = 0; i < 256; ++i) cur[i] = next[i];
  }
  for (int i = 0; i < 256; ++i) out[i] = cur[i];
}

void hadamardRows(const float* x, std::int64_t rows, std::int64_t n, float* y) {
  for (std::int64_t b = 0; b < rows * n; b += 256) hadamard256(x + b, y + b);
}

void int8Rows(const float* x, std::int64_t rows, std::int64_t n, int bits, float* q, float* s) {
  const float maxCode = bits == 8 ? 127.0f : 7.0f, lo = -(maxCode + 1.0f);
  std::vector<float> y(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < rows; ++r) {
    hadamardRows(x + r * n, 1, n, y.data());
    float m = 0.0f;  // max|y|, ignoring NaN (SPEC §1.3)
    for (float v : y)
      if (!std::isnan(v) && std::fabs(v) > m) m = std::fabs(v);
    const float scale = std::fmax(m / maxCode, 1e-30f);
    s[r] = scale;
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = y[i] / scale;
      const float code = std::isnan(v) ? 0.0f : std::fmin(std::fmax(std::rint(v), lo), maxCode);
      q[r * n + i] = code + 0.0f;  // the integer; a zero is +0
    }
  }
}

void int8RowsProduct(const float* qa, const float* sa, const float* qb, const float* sb, const float* bias,
                     std::int64_t m, std::int64_t n, std::int64_t k, float* out) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t sum = 0;  // the integers' sum, exact
      for (std::int64_t p = 0; p < k; ++p)
        sum += static_cast<std::int64_t>(qa[i * k + p]) * static_cast<std::int64_t>(qb[j * k + p]);
      out[i * n + j] = (static_cast<float>(sum) * sa[i]) * sb[j];  // F32(sum): nearest even
      if (bias) out[i * n + j] += bias[j];
    }
}

}  // namespace gizml::reference
