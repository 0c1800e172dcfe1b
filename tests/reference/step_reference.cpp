#include "reference/step_reference.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "exact/math.hpp"
#include "reference/quant_reference.hpp"
#include "reference/rows_reference.hpp"

namespace gizml::reference {

float LogitSource::at(std::int64_t r, std::int64_t t) const {
  return indirect ? blocks[static_cast<std::size_t>(t / stride)][r * stride + t % stride] : logits[r * stride + t];
}

void argmaxInto(const LogitSource& src, std::int64_t rows, float* top) {
  std::vector<float> row(static_cast<std::size_t>(src.vocab));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t t = 0; t < src.vocab; ++t) row[t] = src.at(r, t);
    top[r] = static_cast<float>(argmaxRow(row.data(), src.vocab));
  }
}

void candidatesInto(const LogitSource& src, std::int64_t rows, float* cand) {
  const int workers = 256, each = 4;
  for (std::int64_t r = 0; r < rows; ++r)
    for (int t = 0; t < workers; ++t) {
      std::vector<std::pair<float, std::int64_t>> mine;
      for (std::int64_t id = t; id < src.vocab; id += workers)
        if (!std::isnan(src.at(r, id))) mine.push_back({src.at(r, id), id});
      std::stable_sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      float* out = cand + r * 2048 + 2 * each * t;
      for (int slot = 0; slot < each; ++slot) {
        const bool kept = slot < static_cast<int>(mine.size());
        out[2 * slot] = kept ? mine[slot].first : -INFINITY;
        out[2 * slot + 1] = kept ? static_cast<float>(mine[slot].second) : -1.0f;
      }
    }
}

void splitSumInto(float* y, const float* p, std::int64_t total, std::int64_t splits, bool add) {
  for (std::int64_t i = 0; i < total; ++i) {
    float acc = add ? y[i] : 0.0f;
    for (std::int64_t s = 0; s < splits; ++s) acc = acc + p[s * total + i];
    y[i] = acc;
  }
}

namespace {
/// v = v * d, then the regular Hadamard transform of each 256 values, in place.
void rotate256(float* v, const float* d, std::int64_t n) {
  std::vector<float> block(256);
  for (std::int64_t i = 0; i < n; ++i) v[i] = v[i] * d[i];
  for (std::int64_t b = 0; b < n; b += 256) {
    hadamard256(v + b, block.data());
    std::copy(block.begin(), block.end(), v + b);
  }
}
}  // namespace

void normRotateInto(const float* x, const float* w, const float* d, const float* map, double eps, bool rotate,
                    std::int64_t rows, std::int64_t width, std::int64_t stride, std::int64_t offset, float* y) {
  const float eps32 = static_cast<float>(eps);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + (map ? static_cast<std::int64_t>(map[r]) : r) * width;
    const float scale = 1.0f / std::sqrt(dot16(xr, xr, width) / static_cast<float>(width) + eps32);
    float* yr = y + r * stride + offset;
    for (std::int64_t i = 0; i < width; ++i) yr[i] = (xr[i] * scale) * w[i];
    if (rotate) rotate256(yr, d, width);
  }
}

void siluMulRotatedInto(const float* p, const float* d, std::int64_t rows, std::int64_t ffn, std::int64_t parts,
                        float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ffn;
    for (std::int64_t j = 0; j < ffn; ++j) {
      float gate = 0.0f, up = 0.0f;
      for (std::int64_t s = 0; s < parts; ++s) {
        gate = gate + p[(s * rows + r) * 2 * ffn + j];
        up = up + p[(s * rows + r) * 2 * ffn + ffn + j];
      }
      yr[j] = exact::silu(gate) * up;
    }
    if (d) rotate256(yr, d, ffn);
  }
}

}  // namespace gizml::reference
