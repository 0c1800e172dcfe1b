// gizml::netops, the 8-bit rows (SPEC §3 "Diffusion norms and 8-bit rows"): the regular Hadamard
// transform of rows (the rotation of ConvRot, comfy-kitchen and WanGP) and int8Rows, its rows
// quantized to 8 or 4 bits with a scale a row. Each runs where its operands are, and is exact: the
// same bits on the host (any thread count, any SIMD width, any batch) and on a CUDA GPU.
#pragma once

#include "gizml/tensor.hpp"

namespace gizml::netops {

/// The regular Hadamard transform of each 256 values of each row: x [..., width] F32 or BF16, width
/// a positive multiple of 256 (rows = the leading extents' product) → F32, x's shape. H256 = H4 ⊗ H4
/// ⊗ H4 ⊗ H4 / 16, H4 = [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]]: symmetric and its own
/// inverse. Exact steps: four stages, strides s = 1, 4, 16, 64 in that order; in a stage
/// out[i] = 0.5f * (((±u0 ± u1) ± u2) ± u3), u_e = in[b + e s], d = (i / s) % 4, b = i - d s, the
/// signs row d of H4. A NaN makes its whole 256-block NaN; a ±inf makes it ±inf (two may make NaN).
Tensor hadamardRows(const Tensor& x);
/// hadamardRows into y (F32, x's shape and device). y may be x itself (F32, in place: each
/// 256-block is read whole before any of it is written); no other overlap is allowed (an error).
/// A failed check leaves y untouched.
void hadamardRowsInto(const Tensor& x, const Tensor& y);
/// Weight rows w [out, in] rotated to fit activations rotated by hadamardRows: (x H)(w H)ᵀ =
/// x wᵀ, H being symmetric and its own inverse, so this is the same transform of each 256 values
/// of each row — an alias of hadamardRows (errors name this function and `w`).
Tensor rotateWeightRows(const Tensor& w);

struct Int8RowsResult {
  Tensor q;  // x's shape: F32 integers on the host; I8 (8 bits) or I4 (4 bits, two a byte, low nibble first) on a GPU
  Tensor s;  // [rows, 1] F32
};
/// x [rows, width] F32 (the SPEC's BF16 values held as F32; any F32 is accepted) or BF16 (the same
/// result as its F32 values), width a positive multiple of 256, bits 8 or 4. Per row: y = hadamardRows(x) in F32 (not rounded
/// further); s = max(max|y| / 127, F32(1e-30)) (/ 7 for 4 bits); q = clamp(rint(y / s), -128,
/// 127) ([-8, 7]), rint ties to even, every zero code +0.
/// NaN and inf: the maximum ignores NaN (SPEC §1.3) and starts from +0, so a NaN in x (which
/// makes its 256-block of y NaN) leaves s to the rest of the row and gives code 0 there; a row
/// whose y are all NaN has s = 1e-30 and codes 0. A ±inf y makes s = inf and every code of its row
/// 0 (finite / inf = 0, inf / inf = NaN → 0).
Int8RowsResult int8Rows(const Tensor& x, int bits = 8);
/// int8Rows into q (x's shape: F32 on the host, I8 / I4 on a GPU) and s ([rows, 1] F32), all on
/// x's device, apart from x and from each other (an overlap is an error). Nothing is written when
/// an argument is wrong.
void int8RowsInto(const Tensor& x, const Tensor& q, const Tensor& s, int bits = 8);

/// int8Rows of modulatedNorm's rows rounded to BF16, in one pass: the same bits as
/// modulatedNormInto(x, w, shift, scale, map, eps, centered, a BF16 y), then int8RowsInto(y, q, s,
/// bits) (SPEC §1.6). x [rows, width] F32 with width a multiple of 256; w, shift, scale and map as
/// modulatedNorm's; q and s as int8RowsInto's. y: Tensor() for none, or BF16 [rows, width], which
/// then receives the BF16 rows too. The outputs (y, q, s) share no memory with the inputs or each
/// other (an error). On a GPU a bad map entry sets the device error flag and its row is skipped.
void modulatedInt8RowsInto(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale, const Tensor& map,
                           double eps, const Tensor& y, const Tensor& q, const Tensor& s, bool centered, int bits = 8);
/// modulatedInt8RowsInto new codes and scales (int8Rows' {q, s}: F32 codes on the host, I8 / I4 on a
/// GPU), without the BF16 rows.
Int8RowsResult modulatedInt8Rows(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale,
                                 const Tensor& map, double eps, bool centered = false, int bits = 8);

/// The product of two matrices of 8-bit rows as int8Rows gives them — activations (qa, sa) =
/// int8Rows(x) and weights (qb, sb) = int8Rows(w), both rotated by the same transform, so the
/// product approximates x wᵀ (ConvRot's W8A8 or W4A8 linear layer): qa [m, k] and qb [n, k] codes,
/// sa [m, 1] and sb [n, 1] F32, bias F32 [n] or Tensor() for none → F32 [m, n],
///   out[i, j] = ((F32(Σ_p qa[i, p] qb[j, p]) * sa[i]) * sb[j]) + bias[j]
/// The sum is of integers, exact in int32 in any order; F32(sum) rounds to nearest even (exact up
/// to 2^24), then two F32 products, sa's first, then one F32 add (none without a bias: a -0
/// product stays -0). So it is an exact op: the same bits on the host
/// (16-bit multiply-adds) and on a GPU (dp4a for up to 8 rows of qa, INT8 matrix cores, mma.sync
/// m16n8k32 .s8, for more). Codes: I8, or
/// I4 (two a byte, low nibble first; 4-bit and 8-bit operands may be mixed), on any device; on the
/// host also F32 integers in [-128, 127] (int8Rows' host form; anything else is an error naming
/// the argument and the first bad element). k a positive multiple of 256 (int8Rows' widths) up to
/// 130816, which keeps every sum within int32. Scales are used as they are: an inf or NaN scale
/// gives inf or NaN products (0 * inf = NaN). Every argument on one device.
Tensor int8RowsProduct(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb,
                       const Tensor& bias = Tensor());
/// int8RowsProduct into out ([m, n] on the operands' device): F32, or BF16 (each value, bias
/// added, rounded once to nearest even, as a W8A8 layer hands its output on). out sharing memory
/// with an operand is an error. Nothing is written when an argument is wrong.
void int8RowsProductInto(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb, const Tensor& out,
                         const Tensor& bias = Tensor());

}  // namespace gizml::netops
