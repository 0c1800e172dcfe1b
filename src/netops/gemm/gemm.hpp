// The exact product family (Lazy products, affine, patches): the epilogue formulas host and CUDA
// share, the epilogue as data for a kernel, and each kernel's struct (core/dispatch.hpp): its
// arguments, its host path (host.cpp: the packed GEMM, the patches, the epilogue over 16 lanes)
// and its launcher (cuda.cu).
#pragma once

#include <cstdint>

#include "exact/convert.hpp"
#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "gizml/dtype.hpp"
#include "gizml/gpu.hpp"
#include "gizml/lazy.hpp"

namespace gizml::netops::gemm {

using Op = Lazy::Op;

/// One epilogue step on an element (or 16 lanes of them): `operand` is the bias or residual
/// element for those ops, `value` the scale.
template <class F>
GIZML_HD F epilogueStep(Op op, F v, F operand, float value) {
  switch (op) {
    case Op::Bias:
    case Op::Residual: return v + operand;
    case Op::Scale: return v * value;
    case Op::Silu: return exact::siluLanes(v);
    case Op::Gelu: return exact::geluTanhLanes(v);
    case Op::Relu: break;
  }
  return exact::reluLanes(v);
}

/// The epilogue as plain data, for a kernel argument.
constexpr int kMaxSteps = 12;
struct EpilogueStepData {
  Op op;
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
    if (st.op == Op::Bias) operand = st.data[e.biasPerRow ? row : col];
    else if (st.op == Op::Residual) operand = st.data[row * cols + col];
    v = epilogueStep(st.op, v, operand, st.value);
  }
  return v;
}

/// The stored value of an F32 result in the output dtype (BF16 or F16), as raw bits.
GIZML_HD std::uint16_t toHalfBits(float v, bool bf16) { return bf16 ? exact::floatToBF16(v) : exact::floatToF16(v); }

/// A's operand rounded as `compute` asks (BF16 or F16; F32 keeps it): the host's BF16 compute
/// rounds the operands, then runs the exact chain.
GIZML_HD float roundOperand(float v, DType compute) {
  if (compute == DType::BF16) return exact::roundToBF16(v);
  if (compute == DType::F16) return exact::f16ToFloat(exact::floatToF16(v));
  return v;
}

// ---- the kernels ----------------------------------------------------------------------------------------

/// Where a product's chains go when its epilogue is in the store: out [m, n] (row stride n) as
/// outDType, each chain through e as it leaves the registers (no F32 product, no second pass).
/// out null: the F32 chains to the product's c as they are.
struct EpilogueTarget {
  Epilogue e;
  void* out = nullptr;
  DType outDType = DType::F32;
};

/// C [m, n] (row stride ldc) = the chain over k of a [m, k] (row stride lda) times b, where b's
/// element (j, p) — column j of C, step p of the chain — is b[j * bsN + p * bsK]. F32 compute is
/// exact everywhere: on the host a packed, register-blocked micro-kernel whose accumulators are
/// loaded from C between k blocks (each element one chain; threads split rows and columns of C,
/// never k), on a GPU the SIMT kernel (one thread an element's chain). BF16 / F16 compute rounds
/// the operands on the host and runs on matrix cores (mma.sync) on a GPU (fast).
struct Gemm {
  static constexpr const char* kName = "gizml::Lazy::store (GEMM)";
  struct Args {
    DType compute;
    std::int64_t m, n, k;
    const float* a;
    std::int64_t lda;
    const float* b;
    std::int64_t bsN, bsK;
    float* c;
    std::int64_t ldc;
    EpilogueTarget store{};  // set: the epilogue in the store, c unused
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// The host's product with its epilogue in the store: out [m, n] (row stride ldo, outDType F32,
/// BF16 or F16) = the epilogue of the chain over k of a [m, k] (row stride lda) times b (as in
/// Gemm::Args), each tile of C taken through the epilogue as it leaves the registers after its
/// last k block. out must not overlap a or b; with an F32 out the k blocks' chains wait in out,
/// so it must not overlap a residual or bias either (Lazy::storeInto checks, else it computes
/// the product first).
struct ImagePatches;
struct GemmStore {
  DType compute;
  std::int64_t m, n, k;
  const float* a;
  std::int64_t lda;
  const float* b;
  std::int64_t bsN, bsK;
  Epilogue e;
  void* out;
  DType outDType;
  std::int64_t ldo;
  /// Set: b is read from an image's patches (a convolution; already rounded as compute asks),
  /// b and its strides unused.
  const ImagePatches* patches = nullptr;
  /// Set: a's rows are made by packA (a is unused): rows [row0, row0 + rows) and steps [p0, p0 +
  /// kc) written to dst row-major (row stride kc), for operands that are not stored as a matrix
  /// (conv1d's patch rows). compute must be F32.
  void (*packA)(const void* ctx, std::int64_t row0, std::int64_t rows, std::int64_t p0, std::int64_t kc,
                float* dst) = nullptr;
  const void* packACtx = nullptr;
  /// > 0: the columns come in groups of colGroup (a batch's images), group g's output (and
  /// residual) starting groupStride elements after group g - 1's: element (i, j) is stored at
  /// (j / colGroup) groupStride + i ldo + j % colGroup. A bias is then per row (a convolution's).
  std::int64_t colGroup = 0, groupStride = 0;
};
/// A convolution's B read straight from the image x [c, h, w] (F32, already rounded as compute
/// asks) as the B panels are packed: element (pixel, q) is patchValue(...), so no patch matrix
/// is built.
struct ImagePatches {
  const float* x;
  std::int64_t c, h, w, kh, kw, pad, ow;
  /// > 0: a batch's images one after another (each c h w floats), column j = (image, pixel) with
  /// `pixels` = oh ow pixels an image; 0: one image.
  std::int64_t pixels = 0;
};
void gemmStoreHost(const GemmStore& g);

/// The epilogue of `count` elements of output row `row` from column col0, their chains at v (F32),
/// stored to out (row stride ldo) as dtype: 16 lanes a step. The GEMM's store and EpilogueStore
/// both run it, so the two paths give the same bits.
void epilogueSegment(const Epilogue& e, const float* v, std::int64_t row, std::int64_t col0, std::int64_t count,
                     void* out, DType dtype, std::int64_t ldo);

/// out [o, oh ow] = w [o, c kh kw] times the patches of x [c, h, w] (stride 1, pad): on the host
/// patchRows then the GEMM; on a GPU the product reads the patches from x as it fills its tiles
/// (implicit GEMM). `xIsBF16`: x holds BF16 bits.
struct ConvProduct {
  static constexpr const char* kName = "gizml::lazyConv (product)";
  struct Args {
    DType compute;
    const float* w;
    const void* x;
    bool xIsBF16;
    std::int64_t o, c, h, wd, kh, kw, pad;
    float* out;
    EpilogueTarget store{};  // set: the epilogue in the store (bias per row), out unused
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// The host's convolution with its epilogue in the store (a.out unused): the patches, then
/// gemmStoreHost into out [o, oh ow] as outDType. The same conditions on out as GemmStore.
void convStoreHost(const ConvProduct::Args& a, const Epilogue& e, void* out, DType outDType);

/// The host's batched convolution (lazyConvBatch, stride 1) with its epilogue in the store: one
/// product w [o, c kh kw] times the patches of all n images of x [n, c, h, w] (packed into the B
/// panels from the images), each tile stored through the epilogue straight into out [n, o, oh ow]
/// (GemmStore::colGroup), a bias per output channel. No patch matrix, no F32 product.
void convBatchStoreHost(DType compute, const float* w, const float* x, std::int64_t n, std::int64_t o, std::int64_t c,
                        std::int64_t h, std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t pad,
                        const Epilogue& e, void* out, DType outDType);

/// out = the epilogue of c [rows, cols], stored as outDType (F32, BF16 or F16).
struct EpilogueStore {
  static constexpr const char* kName = "gizml::Lazy::store (epilogue)";
  struct Args {
    const float* c;
    std::int64_t rows, cols;
    Epilogue e;
    void* out;
    DType outDType;
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// A patch entry (q, pixel) = (ch kh kw + i kw + j, oy ow + ox) of an image [c, h, w] read by
/// `image(at)` (F32Image or BF16Image): image[ch, oy + i - pad, ox + j - pad], +0 outside.
template <class Image>
GIZML_HD float patchValue(const Image& image, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
                          std::int64_t pad, std::int64_t ow, std::int64_t pixel, std::int64_t q) {
  const std::int64_t ch = q / (kh * kw), i = (q / kw) % kh, j = q % kw;
  const std::int64_t y = pixel / ow + i - pad, xx = pixel % ow + j - pad;
  return (y < 0 || y >= h || xx < 0 || xx >= w) ? 0.0f : image((ch * h + y) * w + xx);
}
struct F32Image {
  const float* p;
  GIZML_HD float operator()(std::int64_t at) const { return p[at]; }
};
struct BF16Image {
  const std::uint16_t* p;
  GIZML_HD float operator()(std::int64_t at) const { return exact::bf16ToFloat(p[at]); }
};

/// patchRows of x [c, h, w] into out [c kh kw, (r1 - r0) ow] (F32 or BF16).
struct PatchRows {
  static constexpr const char* kName = "gizml::netops::patchRows";
  struct Args {
    const float* x;
    std::int64_t c, h, w, kh, kw, pad, r0, r1;
    void* out;
    DType dtype;
  };
  GIZML_HD static std::int64_t ow(const Args& a) { return a.w + 2 * a.pad - a.kw + 1; }
  GIZML_HD static std::int64_t count(const Args& a) { return a.c * a.kh * a.kw * (a.r1 - a.r0) * ow(a); }
  /// Output element e (row q, column p of [c kh kw, (r1 - r0) ow]), as the kernel indexes it.
  GIZML_HD static float element(const Args& a, std::int64_t e) {
    const std::int64_t cols = (a.r1 - a.r0) * ow(a), q = e / cols, pixel = e % cols + a.r0 * ow(a);
    return patchValue(F32Image{a.x}, a.h, a.w, a.kh, a.kw, a.pad, ow(a), pixel, q);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::gemm
