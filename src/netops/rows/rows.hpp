// The row ops (SPEC §3 "Affine and norms", "Losses and argmax"): the per-element formulas that the
// host (16 float lanes) and CUDA (one float) share, and the CUDA launchers that host.cpp
// dispatches to.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "gizml/key.hpp"

namespace gizml::netops::rows {

/// layerNorm's output element: fma((x - mean) * rstd, weight, bias).
template <class F>
GIZML_HD F layerNormValue(F x, float mean, float rstd, F weight, F bias) {
  return exact::fmaLane((x - mean) * rstd, weight, bias);
}

/// layerNormGrad's xhat = (x - mean) * rstd.
template <class F>
GIZML_HD F layerNormXhat(F x, float mean, float rstd) {
  return (x - mean) * rstd;
}

/// layerNormGrad's dx = rstd * fma(-xhat, c, g - a).
template <class F>
GIZML_HD F layerNormGradDx(F g, F xhat, float a, float c, float rstd) {
  return exact::fmaLane(-xhat, exact::broadcast<F>(c), g - a) * rstd;
}

/// crossEntropyGrad's element: (e * inv - onehot) * scale, e = exp(x - m), inv = F32(1 / s).
template <class F>
GIZML_HD F crossEntropyGradValue(F e, float inv, F onehot, float scale) {
  return (e * inv - onehot) * scale;
}

/// dropout's element: x * factor where the uniform draw u >= p, else +0.
template <class F>
GIZML_HD F dropoutValue(F x, F u, float p, float factor) {
  return exact::select(u >= p, x * factor, F{});
}

// ---- CUDA launchers (cuda.cu); pointers are device memory; each returns after queueing ----------
namespace cuda {
// `device` is the CUDA device of the pointers.
void layerNorm(int device, const float* x, const float* w, const float* b, float eps, std::int64_t rows, std::int64_t n,
               float* y, float* mean, float* rstd);
void layerNormGrad(int device, const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
                   std::int64_t rows, std::int64_t n, float* dx, float* dweight, float* dbias);
/// labels: device memory, one int64 a row. grad == nullptr: losses only; else the gradient.
void crossEntropy(int device, const float* logits, const std::int64_t* labels, std::int64_t rows, std::int64_t classes,
                  float* losses, float* grad, float scale);
void argmax(int device, const float* x, std::int64_t rows, std::int64_t n, std::int64_t* out);
void dropout(int device, const float* x, std::int64_t count, Key key, float p, float factor, float* y);
}  // namespace cuda

}  // namespace gizml::netops::rows
