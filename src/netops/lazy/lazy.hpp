// Lazy products: the epilogue formulas host and CUDA share, the epilogue as data for a kernel,
// and the GEMM entry points of each tier.
#pragma once

#include <cstdint>

#include "exact/convert.hpp"
#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "gizml/dtype.hpp"

namespace gizml::netops::lazy {

// Op codes, in Lazy::Op's order.
enum : int { kBias = 0, kScale, kSilu, kGelu, kRelu, kResidual };

/// GELU, tanh form: v / (1 + exp(-2u)), 2u = ((v * v * v) * 0.044715 + v) * 1.5957691
/// (= 2 sqrt(2 / pi)); equal to 0.5 v (1 + tanh(u)) and well conditioned for every v.
template <class F>
GIZML_HD F geluTanhLanes(F v) {
  F c = v * v;
  c = c * v;
  c = c * 0.044715f;
  c = c + v;
  F twoU = c * 1.59576912f;
  return v / (exact::expLanes(-twoU) + 1.0f);
}

/// ReLU: v > 0 ? v : +0; NaN stays NaN.
template <class F>
GIZML_HD F reluLanes(F v) {
  return exact::select(v > 0.0f, v, exact::select(exact::isNan(v), v, F{}));
}

/// One epilogue step on an element (or 16 lanes of them): `operand` is the bias or residual
/// element for those ops, `value` the scale.
template <class F>
GIZML_HD F epilogueStep(int op, F v, F operand, float value) {
  switch (op) {
    case kBias:
    case kResidual: return v + operand;
    case kScale: return v * value;
    case kSilu: return exact::siluLanes(v);
    case kGelu: return geluTanhLanes(v);
    default: return reluLanes(v);
  }
}

/// The epilogue as plain data, for a kernel argument.
constexpr int kMaxSteps = 12;
struct EpilogueStepData {
  int op;
  float value;
  const float* data;  // bias [columns] (or [rows] when biasPerRow), residual [rows, columns]
};
struct Epilogue {
  int count = 0;
  bool biasPerRow = false;  // a convolution's bias is per output channel, its output's row
  EpilogueStepData steps[kMaxSteps];
};

/// The epilogue of element (row, col) of a [rows, cols] output, on one float.
GIZML_HD float applyEpilogue(const Epilogue& e, float v, std::int64_t row, std::int64_t col, std::int64_t cols) {
  for (int s = 0; s < e.count; ++s) {
    const EpilogueStepData& st = e.steps[s];
    float operand = 0.0f;
    if (st.op == kBias) operand = st.data[e.biasPerRow ? row : col];
    else if (st.op == kResidual) operand = st.data[row * cols + col];
    v = epilogueStep(st.op, v, operand, st.value);
  }
  return v;
}

/// The stored value of an F32 result in the output dtype (F32, BF16 or F16), as raw bits.
GIZML_HD std::uint16_t toHalfBits(float v, bool bf16) { return bf16 ? exact::floatToBF16(v) : exact::floatToF16(v); }

// ---- host -------------------------------------------------------------------------------------------
/// C [m, n] (row stride ldc) = the exact chain over k of a [m, k] (row stride lda) times b, where
/// b's element (j, p) — column j of C, step p of the chain — is b[j * bsN + p * bsK]. Packed
/// panels and a register-blocked micro-kernel whose accumulators are loaded from C between k
/// blocks, so each element is one chain; threads split rows of C, never k.
void gemmHost(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
              std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc);

// ---- CUDA (cuda.cu); pointers are device memory ----------------------------------------------------
namespace cuda {
/// The exact chain on the SIMT cores (tiles through shared memory, one thread per element's chain).
void gemmExact(int device, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
               const float* b, std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc);
/// The same product on matrix cores (mma.sync m16n8k16, BF16 or F16 operands, F32 accumulate).
void gemmMma(int device, DType compute, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
             std::int64_t lda, const float* b, std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc);
/// Convolution w [o, c kh kw] x [c, h, w] -> out [o, oh ow], stride 1: the patches are read from x
/// as the tiles are filled (implicit GEMM). `xIsBF16`: x holds BF16 bits. compute F32 is the exact
/// SIMT chain; BF16 / F16 run on matrix cores.
void conv(int device, DType compute, const float* w, const void* x, bool xIsBF16, std::int64_t o, std::int64_t c,
          std::int64_t h, std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t pad, float* out);
/// out = the epilogue of c [rows, cols], stored as outDType (F32, BF16 or F16).
void epilogue(int device, const float* c, std::int64_t rows, std::int64_t cols, const Epilogue& e, void* out,
              DType outDType);
/// patchRows on the GPU (dtype F32 or BF16).
void patchRows(int device, const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
               std::int64_t kw, std::int64_t pad, std::int64_t r0, std::int64_t r1, void* out, DType dtype);
}  // namespace cuda

}  // namespace gizml::netops::lazy
