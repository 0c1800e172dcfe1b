// The literal reference of the row ops (SPEC §1.3, §3): scalar loops, no threads, no SIMD, each
// step as the SPEC writes it. Test-only (and gizml-check's "host = reference").
#pragma once

#include <cstdint>
#include <vector>

#include "gizml/key.hpp"

namespace gizml::reference {

/// sum16: lane l adds v[l], v[l + 16], ... in index order, then the tree 8, 4, 2, 1.
float sum16(const float* v, std::int64_t n);
/// dot16: the same lanes, each acc = fma(a[i], b[i], acc).
float dot16(const float* a, const float* b, std::int64_t n);
/// The lowest index of the largest non-NaN value; 0 when every value is NaN.
std::int64_t argmaxRow(const float* v, std::int64_t n);

void layerNorm(const float* x, const float* w, const float* b, double eps, std::int64_t rows, std::int64_t n,
               float* y, float* mean, float* rstd);
void layerNormGrad(const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
                   std::int64_t rows, std::int64_t n, float* dx, float* dweight, float* dbias);
/// scale = rsqrt(dot16(x, x) / n + F32(eps)); y = (x * scale) * w.
void rmsNorm(const float* x, const float* w, double eps, std::int64_t rows, std::int64_t n, float* y, float* rstd);
/// One row's loss: (m + log(s)) - x[label].
float crossEntropyRow(const float* x, std::int64_t n, std::int64_t label);
double crossEntropyLoss(const float* logits, std::int64_t rows, std::int64_t classes,
                        const std::vector<std::int64_t>& labels);
void crossEntropyGrad(const float* logits, std::int64_t rows, std::int64_t classes,
                      const std::vector<std::int64_t>& labels, double scale, float* grad);
void dropout(const float* x, std::int64_t count, Key key, double p, float* y);

}  // namespace gizml::reference
