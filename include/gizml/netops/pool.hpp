// gizml::netops, 2-d pooling (SPEC §3 "Convolution and pooling"): F32 tensors, run where they are,
// each output element computed by one thread in the order stated; bad sizes fail first.
#pragma once

#include <cstdint>

#include "gizml/tensor.hpp"

namespace gizml::netops {

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

}  // namespace gizml::netops
