// The backward pass and the optimizer (gizml/netops/grad.hpp): each op's element formula, written
// once for the host and CUDA, and its kernel struct (core/dispatch.hpp). The convolution gradients
// have no kernel of their own: they are layouts (gemm/batch.hpp), im2col / col2im (conv.hpp) and
// the exact GEMM (gemm.hpp), composed in host.cpp.
#pragma once

#include <cmath>
#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::grad {

enum class Elementwise : int { Add, Mul, Scale, Axpy, Relu, ReluGrad };

/// One element: a and b the operands (relu: a = x; reluGrad: a = dy, b = x; axpy: a = x, b = y),
/// s the scalar (scale, axpy's alpha).
GIZML_HD float elementwiseValue(Elementwise op, float a, float b, float s) {
  switch (op) {
    case Elementwise::Add: return a + b;
    case Elementwise::Mul: return a * b;
    case Elementwise::Scale: return a * s;
    case Elementwise::Axpy: {
      const float t = s * a;
      return t + b;
    }
    case Elementwise::Relu: return exact::reluLanes(a);
    case Elementwise::ReluGrad: break;
  }
  return b > 0.0f ? a : 0.0f;
}

struct ElementwiseOp {
  static constexpr const char* kName = "gizml::netops (elementwise)";
  struct Args {
    Elementwise op;
    const float* a;
    const float* b;  // null for scale and relu
    float s;
    std::int64_t count;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.count; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    return elementwiseValue(a.op, a.a[e], a.b ? a.b[e] : 0.0f, a.s);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// out[j] = +0, then + x[r, j] for r = 0, 1, ... (one thread a column).
struct SumRows {
  static constexpr const char* kName = "gizml::netops::sumRows";
  struct Args {
    const float* x;
    std::int64_t rows, cols;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.cols; }
  GIZML_HD static float element(const Args& a, std::int64_t j) {
    float acc = 0.0f;
    for (std::int64_t r = 0; r < a.rows; ++r) acc = acc + a.x[r * a.cols + j];
    return acc;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// out[ch] = +0, then + x[b, ch, p] for b, then p, increasing (one thread a channel).
struct SumChannels {
  static constexpr const char* kName = "gizml::netops::sumChannels";
  struct Args {
    const float* x;
    std::int64_t n, c, inner;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.c; }
  GIZML_HD static float element(const Args& a, std::int64_t ch) {
    float acc = 0.0f;
    for (std::int64_t b = 0; b < a.n; ++b) {
      const float* p = a.x + (b * a.c + ch) * a.inner;
      for (std::int64_t i = 0; i < a.inner; ++i) acc = acc + p[i];
    }
    return acc;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// AdamW's scalars, each rounded once to F32 (gizml/netops/grad.hpp says how they are made).
struct AdamWScalars {
  float decay, a1, b2, a2, c2, e, k;
};

/// One AdamW step on one element, in place.
GIZML_HD void adamWElement(const AdamWScalars& s, float& p, float g, float& m, float& v) {
  p = p * s.decay;
  const float dm = g - m;
  m = m + s.a1 * dm;
  const float ag = s.a2 * g;
  v = v * s.b2 + ag * g;
  const float denom = sqrtf(v) / s.c2 + s.e;
  const float r = m / denom;
  p = p + s.k * r;
}

struct AdamW {
  static constexpr const char* kName = "gizml::netops::adamW";
  struct Args {
    AdamWScalars s;
    float* p;
    const float* g;
    float* m;
    float* v;
    std::int64_t count;
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::grad
