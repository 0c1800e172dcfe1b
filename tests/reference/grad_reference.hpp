// The literal reference of the backward pass and the optimizer (gizml/netops/grad.hpp) and of the
// products with a transposed operand and the batched convolution (gizml/lazy.hpp): scalar loops,
// no threads, no SIMD, each step as the header's comment writes it. Test-only. Arguments are
// assumed valid; the library checks them.
#pragma once

#include <cstdint>
#include <vector>

namespace gizml::reference {

/// a [m, k] times b [k, n] → c [m, n]: each element the chain over k in order.
void matmulNN(const float* a, const float* b, std::int64_t m, std::int64_t n, std::int64_t k, float* c);
/// a [k, m] transposed times b [k, n] → c [m, n]: each element the chain over k in order.
void matmulTN(const float* a, const float* b, std::int64_t m, std::int64_t n, std::int64_t k, float* c);
/// w [o, c kh kw] over each image of x [n, c, h, w] → [n, o, oh ow], before any epilogue.
void convBatch(const float* w, const float* x, std::int64_t n, std::int64_t o, std::int64_t c, std::int64_t h,
               std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad, float* out);
/// dy [n, o, oh ow], x [n, c, h, w] → dw [o, c kh kw].
void convWeightGrad(const float* dy, const float* x, std::int64_t n, std::int64_t o, std::int64_t c, std::int64_t h,
                    std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad, float* dw);
/// dy [n, o, oh ow], w [o, c kh kw] → dx [n, c, h, w].
void convInputGrad(const float* dy, const float* w, std::int64_t n, std::int64_t o, std::int64_t c, std::int64_t h,
                   std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad, float* dx);

float add(float a, float b);
float mul(float a, float b);
float scale(float x, float s);
float axpy(float alpha, float x, float y);
float relu(float x);
float reluGrad(float dy, float x);
/// x [rows, cols] → [cols].
std::vector<float> sumRows(const std::vector<float>& x, std::int64_t rows, std::int64_t cols);
/// x [n, c, inner] → [c].
std::vector<float> sumChannels(const std::vector<float>& x, std::int64_t n, std::int64_t c, std::int64_t inner);
/// x [r, c] → [c, r].
std::vector<float> transpose(const std::vector<float>& x, std::int64_t r, std::int64_t c);

/// One AdamW step on every element, the scalars made from the config as the header says.
void adamW(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v, double lr,
           double beta1, double beta2, double eps, double weightDecay, std::int64_t step);

}  // namespace gizml::reference
