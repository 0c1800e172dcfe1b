// gizml::netops, convolution (SPEC §3 "Convolution and pooling"): im2col / col2im in 2-d and 1-d,
// conv1d and convTranspose1d. Every op takes F32 tensors and runs where they are; each output
// element is computed by one thread in the order stated. Sizes are int64; every extent, product
// and window is checked first (gizml::Error naming the argument). Channels (c, and o for conv)
// must be >= 1; a batch (n) or a length may be 0 where the window still fits in the padding.
// (lazyConv and patchRows, the convolution as a product, are in gizml/netops/gemm.hpp.)
#pragma once

#include <cstdint>
#include <vector>

#include "gizml/tensor.hpp"

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

}  // namespace gizml::netops
