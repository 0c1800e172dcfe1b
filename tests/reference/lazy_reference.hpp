// The literal reference of the Lazy products (SPEC §1.3 chain, §2 Lazy, §3 affine, patchRows,
// lazyConv, lazyConv3): scalar loops, one step at a time as the SPEC writes them.
#pragma once

#include <cstdint>
#include <vector>

#include "gizml/lazy.hpp"

namespace gizml::reference {

/// chain: acc = +0, then acc = fma(a[p], b[p * bStride], acc) for p = 0 .. n - 1.
float chain(const float* a, const float* b, std::int64_t n, std::int64_t bStride = 1);
/// c [m, n] = a [m, k] times w [n, k] transposed, each element one chain.
void matmul(const float* a, const float* w, std::int64_t m, std::int64_t n, std::int64_t k, float* c);

/// One epilogue step: `operand` is the bias or residual element, `value` the scale.
float epilogueStep(Lazy::Op op, float v, float operand, float value);

/// patchRows of x [c, h, w] into out [c kh kw, (r1 - r0) ow].
void patchRows(const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
               std::int64_t pad, std::int64_t r0, std::int64_t r1, float* out);
/// w [o, c kh kw] times the patches: out [o, oh ow], each element one chain over (ch, i, j).
void conv(const float* w, const float* x, std::int64_t o, std::int64_t c, std::int64_t h, std::int64_t wd,
          std::int64_t kh, std::int64_t kw, std::int64_t pad, float* out);

}  // namespace gizml::reference
