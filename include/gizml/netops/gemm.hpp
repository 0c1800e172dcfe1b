// gizml::netops, the ops built on the exact product (SPEC §3 "Affine and norms", "Convolution and
// pooling"): affine, and patchRows (the patches lazyConv multiplies). Lazy itself is gizml/lazy.hpp.
#pragma once

#include <cstdint>

#include "gizml/dtype.hpp"
#include "gizml/lazy.hpp"
#include "gizml/tensor.hpp"

namespace gizml::netops {

/// x [rows, in] times w [out, in] transposed plus b [out]: lazyMatmul(x, w, compute).bias(b).store().
Tensor affine(const Tensor& x, const Tensor& w, const Tensor& b, DType compute = DType::F32);

/// The patches of x [c, h, w] (stride 1, `pad` zeros around) for output rows [r0, r1), laid by
/// patch entry: [c kh kw, (r1 - r0) ow] of `dtype` (F32 or BF16), entry
/// (ch kh kw + i kw + j, (oy - r0) ow + ox) = x[ch, oy + i - pad, ox + j - pad] or 0 outside.
Tensor patchRows(const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t pad, std::int64_t r0,
                 std::int64_t r1, DType dtype = DType::F32);

}  // namespace gizml::netops
