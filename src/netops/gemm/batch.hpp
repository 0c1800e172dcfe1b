// The layouts around the exact product that the batched products need: a 3-axis permutation (the
// transposed operand of lazyMatmulTN, the transpose op, the convolution gradients' dy), the
// patches of a batch of images with a stride (lazyConvBatch's B operand) and lazyConvBatch's store
// (its [o, n oh ow] product as [n, o, oh ow], with the epilogue). Each is a copy or the epilogue of
// gemm.hpp: none adds a sum, so none can change a bit of the chains the GEMM computes.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "gizml/dtype.hpp"
#include "gizml/gpu.hpp"
#include "netops/conv/conv.hpp"
#include "netops/gemm/gemm.hpp"

namespace gizml::netops::gemm {

/// out = x [d0, d1, d2] with its axes permuted: output axis k is input axis perm[k].
struct Permute3 {
  static constexpr const char* kName = "gizml::netops::transpose (permute)";
  struct Args {
    const float* x;
    std::int64_t d[3];
    int perm[3];
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.d[0] * a.d[1] * a.d[2]; }
  /// The input index of output element e.
  GIZML_HD static std::int64_t source(const Args& a, std::int64_t e) {
    const std::int64_t stride[3] = {a.d[1] * a.d[2], a.d[2], 1};
    const std::int64_t e2 = a.d[a.perm[2]], e1 = a.d[a.perm[1]];
    const std::int64_t o2 = e % e2, o1 = (e / e2) % e1, o0 = e / (e2 * e1);
    return o0 * stride[a.perm[0]] + o1 * stride[a.perm[1]] + o2 * stride[a.perm[2]];
  }
  GIZML_HD static float element(const Args& a, std::int64_t e) { return a.x[source(a, e)]; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// The patches of a batch with a stride, as the GEMM's B: out [c kh kw, n oh ow], entry (q, t)
/// = im2col's entry (row t = (b, oy, ox), column q = (ch, i, j)).
struct ConvPatches {
  static constexpr const char* kName = "gizml::lazyConvBatch (patches)";
  struct Args {
    const float* x;
    conv::Geometry2d g;
    float* out;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.g.rowWidth() * a.g.n * a.g.oh * a.g.ow; }
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const conv::Geometry2d& g = a.g;
    const std::int64_t cols = g.n * g.oh * g.ow, q = e / cols, t = e % cols;
    const std::int64_t ox = t % g.ow, oy = (t / g.ow) % g.oh, b = t / (g.ow * g.oh);
    const std::int64_t j = q % g.kw, i = (q / g.kw) % g.kh, ch = q / (g.kw * g.kh);
    return conv::im2colValue(a.x, g, b, oy, ox, ch, i, j);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// The epilogue of lazyConvBatch's element (b, oc, pixel): bias[oc], residual[flat] with flat =
/// (b o + oc) pixels + pixel, each step as epilogueStep (the host runs the same steps on 16
/// pixels at once).
GIZML_HD float convBatchEpilogue(const Epilogue& e, float v, std::int64_t oc, std::int64_t flat) {
  for (int s = 0; s < e.count; ++s) {
    const EpilogueStepData& st = e.steps[s];
    float operand = 0.0f;
    if (st.op == Op::Bias) operand = st.data[oc];
    else if (st.op == Op::Residual) operand = st.data[flat];
    v = epilogueStep(st.op, v, operand, st.value);
  }
  return v;
}

/// lazyConvBatch's store: c [o, n pixels] (the product) → out [n, o, pixels] of outDType, each
/// element through the epilogue (bias per output channel).
struct ConvBatchStore {
  static constexpr const char* kName = "gizml::Lazy::store (batched convolution)";
  struct Args {
    const float* c;
    std::int64_t n, o, pixels;
    Epilogue e;
    void* out;
    DType outDType;
  };
  GIZML_HD static std::int64_t count(const Args& a) { return a.n * a.o * a.pixels; }
  /// Output element e = (b, oc, pixel), through the epilogue, in F32.
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const std::int64_t pixel = e % a.pixels, oc = (e / a.pixels) % a.o, b = e / (a.pixels * a.o);
    const float v = a.c[oc * a.n * a.pixels + b * a.pixels + pixel];
    return convBatchEpilogue(a.e, v, oc, e);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::gemm
