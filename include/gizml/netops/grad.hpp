// gizml::netops, the backward pass and the optimizer (what training a network needs beyond the
// seed): elementwise add / mul / scale / axpy, ReLU and its gradient, the sums that make bias
// gradients, a 2-d transpose, the convolution's weight and input gradients, and AdamW. The
// products with a transposed operand are lazyMatmulNN / lazyMatmulTN, the batched strided
// convolution lazyConvBatch (gizml/lazy.hpp). Every op takes F32 tensors and runs where they are
// (mixing devices is an error); every one is exact: each output element is computed by one thread
// in the order stated, the same bits on the host (any thread count, any SIMD width) and on a GPU.
// Bad arguments throw gizml::Error naming the function and the argument before anything is written.
#pragma once

#include <cstdint>

#include "gizml/tensor.hpp"

namespace gizml::netops {

// ---- elementwise (a and b of one shape; any rank) ----------------------------------------------

/// a + b.
Tensor add(const Tensor& a, const Tensor& b);
/// a * b.
Tensor mul(const Tensor& a, const Tensor& b);
/// x * F32(s).
Tensor scale(const Tensor& x, double s);
/// F32(alpha) * x + y: the product rounded to F32, then the add (no fma).
Tensor axpy(double alpha, const Tensor& x, const Tensor& y);
/// x > 0 ? x : +0; NaN stays NaN (the epilogue's relu()).
Tensor relu(const Tensor& x);
/// The gradient of relu: dy where x > 0, else +0 (NaN x gives +0, as PyTorch's threshold_backward).
/// x may be relu's input or its output (they are > 0 at the same places).
Tensor reluGrad(const Tensor& dy, const Tensor& x);

// ---- sums and layout ----------------------------------------------------------------------------

/// x [rows, cols] → [cols]: column j is +0, then x[0, j], x[1, j], ... added in row order (the
/// bias gradient of an affine layer). rows may be 0 (zeros).
Tensor sumRows(const Tensor& x);
/// x [n, c, ...] (rank >= 2) → [c]: channel ch is +0, then x[b, ch, p] added for b = 0, 1, ...
/// and, within an image, the trailing positions p in row-major order (a convolution's bias
/// gradient).
Tensor sumChannels(const Tensor& x);
/// x [r, c] → [c, r], a copy.
Tensor transpose(const Tensor& x);

// ---- the convolution's gradients (lazyConvBatch's, PyTorch's conv2d's) ---------------------------

/// dw [o, c kh kw] of y = lazyConvBatch(w, x, kh, kw, stride, pad), from dy [n, o, oh ow] (or
/// [n, o, oh, ow]) and x [n, c, h, w]: element (oc, q) is the chain over t = (b, oy, ox) in
/// row-major order of dy[b, oc, oy ow + ox] times im2col(x)'s entry (t, q).
Tensor convWeightGrad(const Tensor& dy, const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t stride,
                      std::int64_t pad);
/// dx [n, c, h, w] of the same convolution, from dy [n, o, oh ow] (or [n, o, oh, ow]) and
/// w [o, c kh kw]: the columns dcols[t, q] = chain over oc = 0, 1, ... of dy[b, oc, oy ow + ox] w[oc, q],
/// then col2im(dcols, n, c, h, w, kh, kw, stride, pad) (each element +0 plus the entries that
/// im2col copied from it, window offsets in increasing order). c = w's columns / (kh kw).
Tensor convInputGrad(const Tensor& dy, const Tensor& w, std::int64_t h, std::int64_t wd, std::int64_t kh,
                     std::int64_t kw, std::int64_t stride, std::int64_t pad);

// ---- the optimizer ------------------------------------------------------------------------------

/// AdamW's hyperparameters (PyTorch's defaults).
struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 1e-2;
};
/// One AdamW step, in place, elementwise on param, m, v (all of grad's shape), step t >= 1 (the
/// count including this step). The scalars are computed in f64 from the config and rounded once
/// to F32: decay = 1 - lr wd, a1 = 1 - beta1, b2 = beta2, a2 = 1 - beta2,
/// c2 = sqrt(1 - beta2^t), e = eps, k = -(lr / (1 - beta1^t)), where beta^t is square-and-multiply
/// in f64 (r = 1; for each bit of t from the lowest: if set, r = r * b; then b = b * b), not a
/// libm's pow, so that the same bits come out on every machine. Then per element, each operation
/// rounded to F32, in this order (the order of PyTorch's single-tensor AdamW: mul_, lerp_, mul_ and
/// addcmul_, sqrt / bias_correction2_sqrt + eps, addcdiv_):
///   p = p * decay
///   m = m + a1 * (g - m)
///   v = v * b2 + (a2 * g) * g
///   p = p + k * (m / (sqrt(v) / c2 + e))
/// Requires lr >= 0, 0 <= beta1, beta2 < 1, eps > 0, wd >= 0.
void adamW(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamWConfig& config,
           std::int64_t step);

}  // namespace gizml::netops
