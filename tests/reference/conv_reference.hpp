// The literal reference of the convolution and pooling ops (SPEC §3 "Convolution and pooling"):
// scalar loops, no threads, no SIMD, each step as the SPEC writes it. Test-only (and gizml-check's
// "host = reference"). Arguments are assumed valid; the library checks them.
#pragma once

#include <cstdint>

namespace gizml::reference {

/// x [n, c, h, w] → cols [n oh ow, c kh kw].
void im2col(const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
            std::int64_t kw, std::int64_t stride, std::int64_t pad, float* cols);
/// cols [n oh ow, c kh kw] → x [n, c, h, w].
void col2im(const float* cols, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
            std::int64_t kw, std::int64_t stride, std::int64_t pad, float* x);
/// ot = (t + 2 pad - dilation (k - 1) - 1) / stride + 1.
std::int64_t conv1dLength(std::int64_t t, std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation);
/// x [t, c] → rows [first, first + count) of im2col1d, [count, c k].
void im2col1d(const float* x, std::int64_t t, std::int64_t c, std::int64_t k, std::int64_t stride, std::int64_t pad,
              std::int64_t dilation, std::int64_t first, std::int64_t count, float* out);
/// cols [n, c k] → [length, c].
void col2im1d(const float* cols, std::int64_t n, std::int64_t c, std::int64_t length, std::int64_t k,
              std::int64_t stride, std::int64_t pad, float* out);
/// x [t, c], w [o, c, k], bias [o] or nullptr → [ot, o].
void conv1d(const float* x, std::int64_t t, std::int64_t c, const float* w, std::int64_t o, std::int64_t k,
            const float* bias, std::int64_t stride, std::int64_t pad, std::int64_t dilation, float* out);
/// x [n, c], w [c, o, k], bias [o] or nullptr → [(n - 1) stride - 2 pad + k, o].
void convTranspose1d(const float* x, std::int64_t n, std::int64_t c, const float* w, std::int64_t o, std::int64_t k,
                     const float* bias, std::int64_t stride, std::int64_t pad, float* out);
/// x [n, c, h, w] → [n, c, (h - size) / stride + 1, (w - size) / stride + 1].
void pool2d(const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t size,
            std::int64_t stride, bool average, float* y);
/// dy [n, c, oh, ow], x [n, c, h, w] → dx [n, c, h, w].
void pool2dGrad(const float* dy, const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                std::int64_t size, std::int64_t stride, bool average, float* dx);

}  // namespace gizml::reference
