// gizml::netops, the 8-bit rows (SPEC §3 "Diffusion norms and 8-bit rows"): the regular Hadamard
// transform of rows (the rotation of ConvRot, comfy-kitchen and WanGP). Each runs where its
// operands are, and is exact: the same bits on the host (any thread count, any SIMD width, any
// batch) and on a CUDA GPU.
#pragma once

#include "gizml/tensor.hpp"

namespace gizml::netops {

/// The regular Hadamard transform of each 256 values of each row: x [..., width] F32, width a
/// positive multiple of 256 (rows = the leading extents' product) → F32, x's shape. H256 = H4 ⊗ H4
/// ⊗ H4 ⊗ H4 / 16, H4 = [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]]: symmetric and its own
/// inverse. Exact steps: four stages, strides s = 1, 4, 16, 64 in that order; in a stage
/// out[i] = 0.5f * (((±u0 ± u1) ± u2) ± u3), u_e = in[b + e s], d = (i / s) % 4, b = i - d s, the
/// signs row d of H4. A NaN makes its whole 256-block NaN; a ±inf makes it ±inf (two may make NaN).
Tensor hadamardRows(const Tensor& x);
/// Weight rows w [out, in] rotated to fit activations rotated by hadamardRows: (x H)(w H)ᵀ =
/// x wᵀ, H being symmetric and its own inverse, so this is the same transform of each 256 values
/// of each row — an alias of hadamardRows (errors name this function and `w`).
Tensor rotateWeightRows(const Tensor& w);

}  // namespace gizml::netops
