// gizml::netops, the row ops (SPEC §3 "Affine and norms", "Losses and argmax"): norms and their
// gradients, the cross-entropy loss, argmax and dropout. Each runs where its operands are; every
// one is exact: the same bits on the host (any thread count, any SIMD width) and on a CUDA GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "gizml/key.hpp"
#include "gizml/tensor.hpp"

namespace gizml::netops {

// ---- Norms -------------------------------------------------------------------------------------

struct LayerNormResult {
  Tensor y;     // x's shape
  Tensor mean;  // [rows]
  Tensor rstd;  // [rows], 1 / sqrt(var + eps)
};
/// x [..., n] F32, weight [n], bias [n]; rows = the product of the leading extents (1 for rank 1).
/// mean = sum16(x) / n; d = x - mean; var = dot16(d, d) / n; rstd = 1 / sqrt(var + F32(eps));
/// y = fma(d * rstd, weight, bias).
LayerNormResult layerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);

struct LayerNormGradResult {
  Tensor dx;       // x's shape
  Tensor dweight;  // [n]
  Tensor dbias;    // [n]
};
/// xhat = (x - mean) * rstd; g = dy * weight; a = sum16(g) / n; c = dot16(g, xhat) / n;
/// dx = rstd * fma(-xhat, c, g - a); dweight[j] = chain over rows of dy * xhat; dbias[j] = the
/// rows' dy added in row order from +0.
LayerNormGradResult layerNormGrad(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                  const Tensor& mean, const Tensor& rstd);

struct RmsNormResult {
  Tensor y;     // x's shape
  Tensor rstd;  // [rows], the scale rsqrt(dot16(x, x) / n + eps)
};
/// The RMS norm of each row (the last axis) of x [..., n] F32, with weight [n]:
/// scale = rsqrt(dot16(x, x) / n + F32(eps)) (rsqrt(v) = 1 / sqrt(v)); y = (x * scale) * weight —
/// the row norm of the SPEC's normRotateInto and rowNormRope, as a tensor op.
RmsNormResult rmsNorm(const Tensor& x, const Tensor& weight, double eps);

// ---- Losses and argmax ---------------------------------------------------------------------------

/// logits [rows, classes] F32 (rows >= 1, classes >= 1), one label a row in [0, classes).
/// Per row m = the row's max (the value at its argmax), s = sum16(exp(x - m)),
/// loss = (m + log(s)) - x[label]; the result adds the losses as f64 in row order, over rows.
double crossEntropyLoss(const Tensor& logits, const std::vector<std::int64_t>& labels);
/// Each row's loss, F32 [rows], on the logits' device (on a GPU: no host wait).
Tensor crossEntropyRows(const Tensor& logits, const std::vector<std::int64_t>& labels);
/// (exp(x - m) * F32(1 / s) - onehot(label)) * F32(scale), [rows, classes].
Tensor crossEntropyGrad(const Tensor& logits, const std::vector<std::int64_t>& labels, double scale);

/// Tensor::argmax: per row (the last axis), the lowest index of the largest non-NaN value; a row
/// of NaN gives 0.
std::vector<std::int64_t> argmax(const Tensor& x);
/// Tensor::dropout: element i is x * F32(1 / (1 - p)) where key.uniform(i) >= F32(p), else +0.
/// p in [0, 1]; p = 1 gives zeros. The factor is 1 / (1 - p) computed in f64, rounded once.
Tensor dropout(const Tensor& x, Key key, double p);

}  // namespace gizml::netops
