// The literal reference of the diffusion norms (SPEC §3 "Diffusion norms and 8-bit rows"): scalar
// loops, no threads, no SIMD, each step as the SPEC writes it. Test-only.
#pragma once

#include <cstdint>

namespace gizml::reference {

/// y[r] = fma(n * w, 1 + scale[m], shift[m]) with m = map[r] (valid indexes), n the RMS norm of
/// the row, or of d = x - sum16(x) / n when centered; F32 values.
void modulatedNorm(const float* x, const float* w, const float* shift, const float* scale, const float* map,
                   double eps, bool centered, std::int64_t rows, std::int64_t n, float* y);
/// x = fma((y * rsqrt(dot16(y, y) / n + eps)) * w, gate[map[r]], x), in place; y holds BF16 values.
void gatedNormAdd(float* x, const float* y, const float* w, const float* gate, const float* map, double eps,
                  std::int64_t rows, std::int64_t n);

/// Per frame and pixel of x [frames, c, pixels]: ss = chain over channels of x * x; y = x *
/// rsqrt(ss / c + eps), silu when act; F32 values (the caller rounds to BF16 where it stores BF16).
void pixelNorm(const float* x, std::int64_t frames, std::int64_t c, std::int64_t pixels, double eps, bool act,
               float* y);

/// groupNorm of x [c, S] in `groups` groups with `slices` slices a group, F32 values (the caller
/// rounds to BF16 where it stores BF16).
void groupNorm(const float* x, std::int64_t c, std::int64_t spatial, std::int64_t groups, std::int64_t slices,
               const float* w, const float* b, double eps, bool act, float* y);

/// rowNormRopeInto on rows of BF16 values held as F32 (row r at v + r stride), in place: the RMS
/// norm over the width, then each head's split-halves rotation, each result rounded to BF16.
void rowNormRope(float* v, std::int64_t stride, std::int64_t rows, std::int64_t width, std::int64_t head,
                 const float* w, double eps, const float* cos, const float* sin);

}  // namespace gizml::reference
