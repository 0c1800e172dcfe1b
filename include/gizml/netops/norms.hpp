// gizml::netops, the diffusion norms (SPEC §3 "Diffusion norms and 8-bit rows"): norms modulated
// per row through a row map, the gated residual add, the pixel norm, the group norm, and the
// norm-and-rotary of raw BF16 rows. Each runs where its operands are; each is
// exact (the same bits on the host, any thread count or SIMD width, and on a CUDA GPU), except that
// modulatedNorm's GPU result is the host's rounded once to BF16, as the SPEC says.
#pragma once

#include <cstdint>

#include "gizml/dtype.hpp"
#include "gizml/gpu.hpp"
#include "gizml/tensor.hpp"

namespace gizml::netops {

/// Per row r of x [rows, width] F32 (width >= 1), with w [width], shift and scale [mods, width]
/// (mods >= 1), all F32, and map [rows] F32 holding integers: m = map[r], then
///   RMS (centered = false):  n = x * rsqrt(dot16(x, x) / width + F32(eps))
///   centered:                d = x - sum16(x) / width; n = d * rsqrt(dot16(d, d) / width + F32(eps))
///   y = fma(n * w, 1 + scale[m], shift[m])
/// where rsqrt(v) = 1 / sqrt(v) and `1 + scale[m]` is one F32 add (rounded before the fma).
/// The map is required: an entry that is not an integer in [0, mods) (NaN included) is an error —
/// on the host before anything is written; on a GPU the kernel skips that row and the next
/// synchronising call throws gizml::Error naming "map" (the output is then unspecified; a fraction
/// or NaN is reported as the index -1).
/// Returns F32 on the host; on a GPU the same values rounded to BF16 (a BF16 tensor).
Tensor modulatedNorm(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale, const Tensor& map,
                     double eps, bool centered);
/// modulatedNorm into y [rows, width]: BF16 on a GPU; BF16 or F32 on the host (BF16: each value
/// rounded once, to nearest even). y sharing memory with x, w, shift, scale or map is an error.
/// y is untouched when an argument is bad.
void modulatedNormInto(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale,
                       const Tensor& map, double eps, bool centered, const Tensor& y);

/// In place on x [rows, width] F32, with y [rows, width] BF16, w [width] and gate [mods, width] F32
/// and map [rows] as modulatedNorm's: per row r, with r' = rsqrt(dot16(y, y) / width + F32(eps)),
///   x = fma((y * r') * w, gate[map[r]], x)
/// (the SPEC's product order: (y * r') * w, then one fma with the gate and x). x sharing memory
/// with y, w, gate or map is an error. Bad map entries as modulatedNorm's: on the host x is
/// untouched.
void gatedNormAddInto(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& gate, const Tensor& map,
                      double eps);

/// x [frames, c, pixels] (c >= 1), F32 or BF16, into out of x's dtype and shape (out may be x):
/// per frame and pixel, ss = the chain over channels of x * x (acc = fma(x, x, acc) from +0, in
/// channel order); y = x * rsqrt(ss / c + F32(eps)), then SiLU (gizml's own) when act; stored
/// as out's dtype (BF16: rounded once). PyTorch's pixel norm is eps = 1e-8. Any other overlap of
/// out with x than x itself is an error.
void pixelNormInto(const Tensor& x, double eps, bool act, const Tensor& out);
/// pixelNormInto a new tensor of x's shape, dtype and device.
Tensor pixelNorm(const Tensor& x, double eps, bool act);

/// Raw rows of BF16 values (std::uint16_t bits) on gpu's device (Gpu::host() for host memory), in
/// place: row r (r < rows) is the `width` values at `at + r stride`. Per row
///   v = (v * rsqrt(dot16(v, v) / width + F32(eps))) * w        over the whole row (F32, not rounded)
/// then in each head h of `head` values (head even, dividing width), for e < head / 2, HeadPrep's
/// split-halves rotation of (p, q) = (v[h head + e], v[h head + e + head / 2]) with pair
/// j = h head / 2 + e of the row's cos / sin:
///   v[.. + e] = fma(p, cos[j], -(q * sin[j]))    v[.. + e + head / 2] = fma(q, cos[j], p * sin[j])
/// stored back as BF16 (rounded once). w [width], cos and sin [rows, width / 2] are F32 on the same
/// device. The values past width in each stride are untouched. Null addresses, stride < width, a
/// head that is odd or does not divide width, rows < 0, eps < 0, and w, cos or sin sharing memory
/// with the rows are gizml::Error.
void rowNormRopeInto(const Gpu& gpu, std::uint16_t* at, std::int64_t stride, std::int64_t rows, std::int64_t width,
                     std::int64_t head, const float* w, double eps, const float* cos, const float* sin);

/// groupNorm's slices a group (SPEC "GROUP_SLICES"): its statistics are 16 F32 partial sums added
/// in f64, so one group is 16 independent pieces of work wherever it runs.
inline constexpr std::int64_t GROUP_SLICES = 16;

/// x [c, ...] F32 (rank >= 1; S = the product of the trailing extents, 1 for rank 1), groups >= 1
/// dividing c, w and b [c] F32. Group g is the L = (c / groups) S contiguous values of its
/// channels, cut into GROUP_SLICES slices of ceil(L / GROUP_SLICES) (the last ones shorter or
/// empty); each slice gives sum16(x) and dot16(x, x) in F32; the group adds them as f64 in slice
/// order (S1, S2); mean = S1 / L, var = max(S2 / L - mean², 0) in f64 (a NaN stays NaN);
/// y = fma((x - F32(mean)) * F32(1 / sqrt(var + eps)), w[ch], b[ch]), SiLU when act, stored as
/// dtype (F32 or BF16, rounded once). eps is rounded to F32 at the call (SPEC §1), then widened
/// to f64 for var + eps. Returns x's shape, on x's device.
Tensor groupNorm(const Tensor& x, std::int64_t groups, const Tensor& w, const Tensor& b, double eps, bool act,
                 DType dtype);
/// groupNorm into out (x's shape and device, F32 or BF16: the dtype the values are stored as).
/// out may be x itself (F32, in place: each value is read before it is written); no other overlap
/// of out with x, w or b is allowed (an error). A failed check leaves out untouched.
void groupNormInto(const Tensor& x, std::int64_t groups, const Tensor& w, const Tensor& b, double eps, bool act,
                   const Tensor& out);

}  // namespace gizml::netops
