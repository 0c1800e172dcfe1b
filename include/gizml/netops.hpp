// gizml::netops — the operations of networks on tensors (SPEC §3). Each runs where its operands
// are; mixing devices is an error. Every op here is exact: the same bits on the host (any thread
// count, any SIMD width) and on a CUDA GPU.
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

// ---- Convolution and pooling (SPEC §3) ------------------------------------------------------------
// Every op here takes F32 tensors and runs where they are; each output element is computed by one
// thread in the order stated. Sizes are int64; every extent, product and window is checked first
// (gizml::Error naming the argument). Channels (c, and o for conv) must be >= 1; a batch (n) or a
// length may be 0 where the window still fits in the padding.
namespace gizml::netops {

/// x [n, c, h, w] → cols [n oh ow, c kh kw], oh = (h + 2 pad - kh) / stride + 1 (ow likewise):
/// row (b, oy, ox), column (ch, i, j) holds x[b, ch, oy stride + i - pad, ox stride + j - pad],
/// +0 outside the image. One stride and one pad for both axes; kh <= h + 2 pad, kw <= w + 2 pad.
Tensor im2col(const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad);
/// The adjoint of im2col: cols [n oh ow, c kh kw] → x [n, c, h, w]; element (b, ch, y, x) is +0
/// plus every entry that im2col copied from it, window offsets (i, j) in increasing row-major
/// order, each one F32 add.
Tensor col2im(const Tensor& cols, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
              std::int64_t kw, std::int64_t stride, std::int64_t pad);

/// x [t, c] → [rows, c k]: entry (o, ch k + j) = x[(first + o) stride + j dilation - pad, ch], or +0
/// outside [0, t); ot = (t + 2 pad - dilation (k - 1) - 1) / stride + 1 rows in all, of which
/// rows [first, first + count) are returned. count = -1 (the default) means every row from
/// `first` on; first must lie in [0, ot], count in [0, ot - first] (or be -1).
Tensor im2col1d(const Tensor& x, std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                std::int64_t first = 0, std::int64_t count = -1);
/// cols [n, c k] → [length, c]: entry (o, ch) is +0 plus cols[i, ch k + j] for j increasing, where
/// i stride + j - pad = o and 0 <= i < n (entries that land outside [0, length) are dropped; n is
/// not tied to length). k <= length + 2 pad. No dilation.
Tensor col2im1d(const Tensor& cols, std::int64_t c, std::int64_t length, std::int64_t k, std::int64_t stride,
                std::int64_t pad);

/// x [t, c], w [o, c, k], bias empty or one [o] → [ot, o], ot as im2col1d's. Output (r, oc) is
/// `chain` from +0 over idx = ch k + j in increasing order of fma(patch, w[oc, ch, j], acc), where
/// patch is im2col1d's entry (r, idx) — a padded tap is +0 and still takes its fma (so an infinite
/// weight under padding gives NaN, as the im2col-then-chain definition does) — then + bias[oc]
/// (one F32 add; none without a bias). PyTorch's conv1d of xᵀ, transposed.
Tensor conv1d(const Tensor& x, const Tensor& w, const std::vector<Tensor>& bias, std::int64_t stride,
              std::int64_t pad, std::int64_t dilation);
/// x [n, c] (n >= 1), w [c, o, k], bias empty or one [o] → [length, o],
/// length = (n - 1) stride - 2 pad + k (must be >= 1). cols[i, oc k + j] = `chain` from +0 over ch
/// of x[i, ch] w[ch, oc, j]; then col2im1d(cols, o, length, k, stride, pad); then + bias[oc].
/// Each cols entry feeds exactly one output, so it is computed where it is added (same bits).
/// PyTorch's conv_transpose1d (no output_padding, groups or dilation).
Tensor convTranspose1d(const Tensor& x, const Tensor& w, const std::vector<Tensor>& bias, std::int64_t stride,
                       std::int64_t pad);

/// x [n, c, h, w] → [n, c, oh, ow], oh = (h - size) / stride + 1, size x size windows, no padding
/// (size <= h and size <= w). Max: the first largest value in row-major window order; NaN never
/// wins, a window of NaN gives its first element (NaN). Average: the window's values added in
/// row-major order from +0, times F32(1 / (size size)) (the quotient in f64, rounded once).
Tensor pool2d(const Tensor& x, std::int64_t size, std::int64_t stride, bool average);
/// dy [n, c, oh, ow], x [n, c, h, w] → dx [n, c, h, w]: each element is +0 plus, over the windows
/// holding it in (oy, ox) row-major order, dy * F32(1 / (size size)) (average; the product is
/// rounded, then added) or dy where it is that window's maximum as pool2d chooses it (max).
/// Elements in no window (stride > size) are +0.
Tensor pool2dGrad(const Tensor& dy, const Tensor& x, std::int64_t size, std::int64_t stride, bool average);

/// A host F32 [tq, tk] mask: +0 where j <= i + tk - tq, else -inf (tq, tk >= 0).
Tensor causalMask(std::int64_t tq, std::int64_t tk);

}  // namespace gizml::netops
