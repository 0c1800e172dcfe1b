#include "reference/attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "exact/math.hpp"
#include "gizml/dtype.hpp"
#include "reference/rows_reference.hpp"

namespace gizml::reference {

void causalMask(std::int64_t tq, std::int64_t tk, float* out) {
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j)
      out[i * tk + j] = j <= i + tk - tq ? 0.0f : -std::numeric_limits<float>::infinity();
}

void attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t tq, std::int64_t tk,
               std::int64_t d, std::int64_t e, double scale, bool causal, double rate, Key key, float* out) {
  const float scale32 = static_cast<float>(scale), rate32 = static_cast<float>(rate);
  const float keepScale = static_cast<float>(1.0 / (1.0 - rate));
  std::vector<float> a(static_cast<std::size_t>(e)), s(16), w(16);
  for (std::int64_t item = 0; item < b; ++item) {
    for (std::int64_t i = 0; i < tq; ++i) {
      const float* qi = q + (item * tq + i) * d;
      float* o = out + (item * tq + i) * e;
      // The keys it sees: j < tk, and j <= i + tk - tq when causal.
      std::int64_t n = tk;
      if (causal) n = std::min(tk, std::max<std::int64_t>(0, i + tk - tq + 1));
      if (n == 0) {
        for (std::int64_t c = 0; c < e; ++c) o[c] = 0.0f;
        continue;
      }
      float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
      for (std::int64_t c = 0; c < e; ++c) a[c] = 0.0f;
      for (std::int64_t j0 = 0; j0 < n; j0 += 16) {
        const std::int64_t count = std::min<std::int64_t>(16, n - j0);
        for (std::int64_t jj = 0; jj < count; ++jj) {
          const float* kj = k + (item * tk + j0 + jj) * d;
          float acc = 0.0f;
          for (std::int64_t p = 0; p < d; ++p) acc = std::fma(qi[p], kj[p], acc);
          s[jj] = acc * scale32;
        }
        float mNew = m;
        for (std::int64_t jj = 0; jj < count; ++jj)
          if (s[jj] > mNew) mNew = s[jj];  // NaN is never greater
        const float c = exact::exp(m - mNew);
        for (std::int64_t jj = 0; jj < count; ++jj) w[jj] = exact::exp(s[jj] - mNew);
        l = l * c;
        for (std::int64_t jj = 0; jj < count; ++jj) l = l + w[jj];
        for (std::int64_t ch = 0; ch < e; ++ch) a[ch] = a[ch] * c;
        for (std::int64_t jj = 0; jj < count; ++jj) {
          float wj = w[jj];
          if (rate > 0.0) {
            const std::uint64_t word = static_cast<std::uint64_t>((item * tq + i) * tk + j0 + jj);
            if (key.uniform(word) < rate32) continue;  // dropped: skipped
            wj = wj * keepScale;
          }
          const float* vj = v + (item * tk + j0 + jj) * e;
          for (std::int64_t ch = 0; ch < e; ++ch) a[ch] = std::fma(wj, vj[ch], a[ch]);
        }
        m = mNew;
      }
      for (std::int64_t ch = 0; ch < e; ++ch) o[ch] = a[ch] / l;
    }
  }
}

void headPrep(float* qkv, std::int64_t n, std::int64_t heads, std::int64_t head, const float* qw, const float* kw,
              const float* cos, const float* sin, std::int64_t half, double eps, std::int64_t row0, bool bf16) {
  const float eps32 = static_cast<float>(eps);
  auto stored = [bf16](float x) { return bf16 ? bf16ToFloat(floatToBF16(x)) : x; };
  std::vector<float> y(static_cast<std::size_t>(head));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t which = 0; which < 2; ++which)
      for (std::int64_t h = 0; h < heads; ++h) {
        float* v = qkv + r * 3 * heads * head + (which * heads + h) * head;
        const float* w = which == 0 ? qw : kw;
        const float rs = 1.0f / std::sqrt(dot16(v, v, head) / static_cast<float>(head) + eps32);
        for (std::int64_t i = 0; i < head; ++i) y[i] = (v[i] * rs) * w[i];
        const float *c = cos + (row0 + r) * half, *s = sin + (row0 + r) * half;
        for (std::int64_t e = 0; e < half; ++e) {
          const float p = y[e], q = y[e + half];
          y[e] = std::fma(p, c[e], -(q * s[e]));
          y[e + half] = std::fma(q, c[e], p * s[e]);
        }
        for (std::int64_t i = 0; i < head; ++i) v[i] = stored(y[i]);
      }
}

void attendedRows(const float* qkv, std::int64_t rows, std::int64_t heads, std::int64_t head, std::int64_t group,
                  const float* qw, const float* kw, const float* cos, const float* sin, std::int64_t half, double eps,
                  std::int64_t queries, float* out) {
  const std::int64_t width = 3 * heads * head;
  std::vector<float> x(qkv, qkv + rows * width);
  if (qw) headPrep(x.data(), rows, heads, head, qw, kw, cos, sin, half, eps, 0, false);
  const std::int64_t g = group == 0 ? rows : group, outRows = queries > 0 ? queries : rows;
  std::vector<float> q, k, v, o;
  for (std::int64_t g0 = 0; g0 < outRows; g0 += g) {
    const std::int64_t tq = std::min(g, outRows - g0);
    for (std::int64_t h = 0; h < heads; ++h) {
      q.assign(tq * head, 0.0f);
      k.assign(g * head, 0.0f);
      v.assign(g * head, 0.0f);
      o.assign(tq * head, 0.0f);
      for (std::int64_t r = 0; r < g; ++r)
        for (std::int64_t c = 0; c < head; ++c) {
          const float* row = x.data() + (g0 + r) * width;
          if (r < tq) q[r * head + c] = row[h * head + c];
          k[r * head + c] = row[(heads + h) * head + c];
          v[r * head + c] = row[(2 * heads + h) * head + c];
        }
      attention(q.data(), k.data(), v.data(), 1, tq, g, head, head, 1.0 / std::sqrt(static_cast<double>(head)), false,
                0.0, Key{}, o.data());
      for (std::int64_t r = 0; r < tq; ++r)
        for (std::int64_t c = 0; c < head; ++c) out[(g0 + r) * heads * head + h * head + c] = o[r * head + c];
    }
  }
}

void crossAttentionRows(const float* q, const float* kv, std::int64_t nq, std::int64_t nk, std::int64_t heads,
                        std::int64_t head, float* out) {
  const std::int64_t width = heads * head;
  std::vector<float> qh(nq * head), kh(nk * head), vh(nk * head), oh(nq * head);
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t r = 0; r < nq; ++r)
      for (std::int64_t c = 0; c < head; ++c) qh[r * head + c] = q[r * width + h * head + c];
    for (std::int64_t r = 0; r < nk; ++r)
      for (std::int64_t c = 0; c < head; ++c) {
        kh[r * head + c] = kv[r * 2 * width + h * head + c];
        vh[r * head + c] = kv[r * 2 * width + width + h * head + c];
      }
    attention(qh.data(), kh.data(), vh.data(), 1, nq, nk, head, head, 1.0 / std::sqrt(static_cast<double>(head)),
              false, 0.0, Key{}, oh.data());
    for (std::int64_t r = 0; r < nq; ++r)
      for (std::int64_t c = 0; c < head; ++c) out[r * width + h * head + c] = oh[r * head + c];
  }
}

void neighborhood3d(const float* qkv, std::int64_t T, std::int64_t H, std::int64_t W, std::int64_t kt,
                    std::int64_t kh, std::int64_t kw, std::int64_t heads, std::int64_t head, double scale, float* out) {
  const std::int64_t stride = 3 * heads * head;
  auto window = [](std::int64_t i, std::int64_t length, std::int64_t k, std::int64_t& start, std::int64_t& size) {
    size = std::min(k, length);
    start = std::min(std::max<std::int64_t>(i - size / 2, 0), length - size);
  };
  std::vector<float> k, v, o(head);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t y = 0; y < H; ++y)
        for (std::int64_t x = 0; x < W; ++x) {
          std::int64_t st, nt, sy, ny, sx, nx;
          window(t, T, kt, st, nt);
          window(y, H, kh, sy, ny);
          window(x, W, kw, sx, nx);
          k.clear();
          v.clear();
          for (std::int64_t a = st; a < st + nt; ++a)
            for (std::int64_t b = sy; b < sy + ny; ++b)
              for (std::int64_t c = sx; c < sx + nx; ++c) {
                const float* row = qkv + ((a * H + b) * W + c) * stride;
                k.insert(k.end(), row + (heads + h) * head, row + (heads + h + 1) * head);
                v.insert(v.end(), row + (2 * heads + h) * head, row + (2 * heads + h + 1) * head);
              }
          const std::int64_t r = (t * H + y) * W + x, n = nt * ny * nx;
          attention(qkv + r * stride + h * head, k.data(), v.data(), 1, 1, n, head, head, scale, false, 0.0, Key{},
                    o.data());
          for (std::int64_t c = 0; c < head; ++c) out[r * heads * head + h * head + c] = o[c];
        }
}

}  // namespace gizml::reference
