// Lazy products (SPEC §2 "Lazy", §3 "Affine", "Convolution and pooling"): a matrix product or a
// convolution not yet computed, with an epilogue applied to each element as it is stored.
#pragma once

#include <cstdint>
#include <vector>

#include "gizml/dtype.hpp"
#include "gizml/tensor.hpp"

namespace gizml {

/// A product A · Bᵀ (lazyMatmul), A · B (lazyMatmulNN), Aᵀ · B (lazyMatmulTN) or a convolution
/// (lazyConv, lazyConvBatch, lazyConv3) plus its epilogue.
///
/// Exact order of every output element: the product's `chain` over k (one accumulator from +0.0f,
/// acc = fma(a, b, acc) for k = 0, 1, ...), then each epilogue step in the order it was added,
/// each one rounded F32 operation:
///   bias(b)      v + b[column] for a product, v + b[output channel] for a convolution
///   scale(s)     v * F32(s)
///   silu()       v / (1 + exp(-v))                         (gizml's exp)
///   gelu()       the tanh form, 0.5 v (1 + tanh(u)) written as v / (1 + exp(-2u)) with
///                u = ((v * v * v) * 0.044715 + v) * sqrt(2 / pi), so 2u = that * 1.5957691
///   relu()       v > 0 ? v : +0, NaN stays NaN
///   residual(r)  v + r[element] (r F32, of the output's shape)
/// then rounded to the output dtype (F32, BF16 or F16; round to nearest even).
///
/// `compute` F32 is exact on every device. BF16 (or F16) compute on a GPU runs on matrix cores
/// (fast: tolerance stated in the test), on the host it rounds the operands to BF16 (F16) and
/// runs the exact chain.
class Lazy {
 public:
  enum class Kind { Matmul, Conv, Conv3, MatmulNN, MatmulTN, ConvBatch };
  enum class Op { Bias, Scale, Silu, Gelu, Relu, Residual };
  struct Step {
    Op op;
    float value = 0;  // scale
    Tensor tensor;    // bias or residual
  };

  Lazy& bias(const Tensor& b);
  Lazy& scale(double s);
  Lazy& silu();
  Lazy& gelu();
  Lazy& relu();
  Lazy& residual(const Tensor& r);
  /// The stored dtype: F32 (default), BF16 or F16.
  Lazy& dtype(DType d);

  /// The output's shape: [m, n] (the products), [o, oh ow] (conv), [n, o, oh ow] (convBatch),
  /// [n, o, h w] (conv3).
  const Shape& shape() const { return shape_; }
  DType outputDType() const { return out_; }
  Device device() const;
  /// Computes the product and its epilogue into a new tensor on the operands' device.
  Tensor store() const;
  /// The same into `out` (the output's shape and dtype, on the operands' device). Checked before
  /// anything is written.
  void storeInto(const Tensor& out) const;

 private:
  friend Lazy lazyMatmul(const Tensor&, const Tensor&, DType);
  friend Lazy lazyConv(const Tensor&, const Tensor&, std::int64_t, std::int64_t, std::int64_t, DType);
  friend Lazy lazyConv3(const Tensor&, const Tensor&);
  friend Lazy lazyMatmulNN(const Tensor&, const Tensor&, DType);
  friend Lazy lazyMatmulTN(const Tensor&, const Tensor&, DType);
  friend Lazy lazyConvBatch(const Tensor&, const Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, DType);
  Lazy() = default;

  Kind kind_ = Kind::Matmul;
  Tensor a_, b_;  // matmul: a [m, k], w [n, k]; NN: a [m, k], b [k, n]; TN: a [k, m], b [k, n];
                  // conv: w [o, c kh kw], x [c, h, w]; convBatch: w, x [n, c, h, w]; conv3: w, x
  DType compute_ = DType::F32;
  std::int64_t kh_ = 0, kw_ = 0, pad_ = 0, stride_ = 1;
  Shape shape_;
  DType out_ = DType::F32;
  std::vector<Step> steps_;
};

/// a [m, k] times w [n, k] transposed: [m, n]. a and w F32 on one device; compute F32, BF16 or F16.
Lazy lazyMatmul(const Tensor& a, const Tensor& w, DType compute = DType::F32);

/// w [o, c kh kw] times patchRows(x [c, h, w], kh, kw, pad, 0, oh): [o, oh ow], stride 1,
/// oh = h + 2 pad - kh + 1, ow = w + 2 pad - kw + 1. The chain runs over (ch, i, j) in that order.
/// On a GPU the product reads the patches from x as it fills its tiles (implicit GEMM), never
/// storing them; BF16 compute runs on matrix cores.
Lazy lazyConv(const Tensor& w, const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t pad,
              DType compute = DType::F32);

/// a [m, k] times b [k, n]: [m, n] (dX = dY W of an affine layer). Element (i, j) is the chain
/// over p = 0, 1, ..., k - 1 of a[i, p] b[p, j]. a and b F32 on one device; compute as lazyMatmul.
Lazy lazyMatmulNN(const Tensor& a, const Tensor& b, DType compute = DType::F32);

/// a [k, m] transposed times b [k, n]: [m, n] (dW = dYᵀ X of an affine layer, the chain running
/// over the batch's rows in order). Element (i, j) is the chain over p = 0, 1, ..., k - 1 of
/// a[p, i] b[p, j]. a and b F32 on one device; compute as lazyMatmul. (a is transposed into a
/// temporary first, a copy: it changes no bit.)
Lazy lazyMatmulTN(const Tensor& a, const Tensor& b, DType compute = DType::F32);

/// A batch of convolutions with a stride (PyTorch's conv2d, groups 1, dilation 1): w [o, c kh kw]
/// (conv2d's weight [o, c, kh, kw] flattened) over each image of x [n, c, h, w]: [n, o, oh ow],
/// oh = (h + 2 pad - kh) / stride + 1 (ow likewise). Element (b, oc, oy ow + ox) is the chain over
/// q = (ch, i, j) in that order of w[oc, q] times im2col's entry (row (b, oy, ox), column q) —
/// x[b, ch, oy stride + i - pad, ox stride + j - pad], +0 outside (a padded tap still takes its
/// fma). Each image is its own: an image's result never depends on the others. bias() is per
/// output channel. x F32; compute as lazyConv (BF16 / F16 on a GPU: matrix cores, fast).
Lazy lazyConvBatch(const Tensor& w, const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t stride,
                   std::int64_t pad, DType compute = DType::F32);

/// w [o, 27 c] (inputs in (time, channel, height, width) order) over frames 1 .. n of x
/// [n + 2, c, h, w] (BF16 values; F32 holding BF16 values is accepted on the host): frame t of the
/// [n, o, h w] output is the 3 x 3 convolution, pad 1, of frames t .. t + 2 seen as one image of
/// 3 c channels, computed in F32 (exact) on the host and on matrix cores (BF16, fast) on a GPU.
Lazy lazyConv3(const Tensor& w, const Tensor& x);

}  // namespace gizml
