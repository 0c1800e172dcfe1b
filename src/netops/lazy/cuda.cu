// Lazy products on a CUDA GPU: the exact SIMT GEMM (each output element one thread's fma chain
// over k, tiles through shared memory, no split-K), the matrix-core GEMM (mma.sync m16n8k16,
// BF16 or F16 operands, F32 accumulate; fast), both reading B through a loader so a convolution
// reads its patches from x as the tiles fill (implicit GEMM), and the epilogue.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/convert.hpp"
#include "netops/lazy/lazy.hpp"

namespace gizml::netops::lazy::cuda {

using detail::checkLaunch;
using detail::gridFor;

namespace {

// ---- operand loaders: element (row or column, step of the chain) --------------------------------
struct DenseA {  // a [m, k], row stride ld
  const float* p;
  std::int64_t ld;
  __device__ float operator()(std::int64_t row, std::int64_t kk) const { return p[row * ld + kk]; }
};
struct StridedB {  // element (j, p) at p[j * sN + p * sK]
  const float* p;
  std::int64_t sN, sK;
  static constexpr bool kPixelFast = false;
  __device__ float operator()(std::int64_t j, std::int64_t kk) const { return p[j * sN + kk * sK]; }
};
template <bool kBF16>
struct PatchB {  // column j = output pixel (oy, ox), step q = (ch, i, j) of x [c, h, w]
  const void* x;
  std::int64_t h, w, kh, kw, pad, ow;
  static constexpr bool kPixelFast = true;
  __device__ float operator()(std::int64_t pix, std::int64_t q) const {
    const std::int64_t ch = q / (kh * kw), i = (q / kw) % kh, jj = q % kw;
    const std::int64_t y = pix / ow + i - pad, xx = pix % ow + jj - pad;
    if (y < 0 || y >= h || xx < 0 || xx >= w) return 0.0f;
    const std::int64_t at = (ch * h + y) * w + xx;
    if constexpr (kBF16) return exact::bf16ToFloat(static_cast<const std::uint16_t*>(x)[at]);
    else return static_cast<const float*>(x)[at];
  }
};

// ---- the exact SIMT GEMM ------------------------------------------------------------------------
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

template <class LoadB>
__global__ void __launch_bounds__(kThreads) gemmExactKernel(std::int64_t m, std::int64_t n, std::int64_t k, DenseA la,
                                                             LoadB lb, float* c, std::int64_t ldc) {
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * kBM, n0 = static_cast<std::int64_t>(blockIdx.x) * kBN;
  float acc[4][4] = {};
  for (std::int64_t k0 = 0; k0 < k; k0 += kBK) {
    const int kc = static_cast<int>(k - k0 < kBK ? k - k0 : kBK);
    for (int e = tid; e < kBK * kBM; e += kThreads) {
      const int kk = e % kBK, r = e / kBK;  // consecutive threads along k: a's rows are k-contiguous
      As[kk][r] = (m0 + r < m && kk < kc) ? la(m0 + r, k0 + kk) : 0.0f;
    }
    for (int e = tid; e < kBK * kBN; e += kThreads) {
      const int kk = LoadB::kPixelFast ? e / kBN : e % kBK;
      const int j = LoadB::kPixelFast ? e % kBN : e / kBK;
      Bs[kk][j] = (n0 + j < n && kk < kc) ? lb(n0 + j, k0 + kk) : 0.0f;
    }
    __syncthreads();
    // Steps past k are never taken: a zero step would turn a -0 accumulator into +0.
    for (int kk = 0; kk < kc; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const std::int64_t row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;
      if (row < m && col < n) c[row * ldc + col] = acc[i][j];
    }
}

// ---- the matrix-core GEMM -------------------------------------------------------------------------
// A block: 64 x 64 outputs, 4 warps as 2 x 2, each warp 32 x 32 = 2 (m16) x 4 (n8) mma tiles;
// k in steps of 32 (two k16 steps). Operands are rounded to BF16 (F16) as the tiles are filled.
constexpr int kMmaBK = 32, kPadK = kMmaBK + 8;  // +8 halves: rows fall on different banks

template <bool kBF16>
__device__ __forceinline__ std::uint16_t toHalf(float v) {
  return kBF16 ? exact::floatToBF16(v) : exact::floatToF16(v);
}

template <bool kBF16>
__device__ __forceinline__ void mma16816(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  if constexpr (kBF16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <bool kBF16, class LoadB>
__global__ void __launch_bounds__(128) gemmMmaKernel(std::int64_t m, std::int64_t n, std::int64_t k, DenseA la,
                                                      LoadB lb, float* c, std::int64_t ldc) {
  __shared__ __align__(16) std::uint16_t As[64][kPadK];
  __shared__ __align__(16) std::uint16_t Bs[64][kPadK];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2, g = lane / 4, t = lane % 4;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * 64, n0 = static_cast<std::int64_t>(blockIdx.x) * 64;
  float acc[2][4][4] = {};
  for (std::int64_t k0 = 0; k0 < k; k0 += kMmaBK) {
    for (int e = tid; e < 64 * kMmaBK; e += 128) {
      const int kk = e % kMmaBK, r = e / kMmaBK;
      const bool in = m0 + r < m && k0 + kk < k;
      As[r][kk] = toHalf<kBF16>(in ? la(m0 + r, k0 + kk) : 0.0f);
    }
    for (int e = tid; e < 64 * kMmaBK; e += 128) {
      const int kk = LoadB::kPixelFast ? e / 64 : e % kMmaBK;
      const int j = LoadB::kPixelFast ? e % 64 : e / kMmaBK;
      const bool in = n0 + j < n && k0 + kk < k;
      Bs[j][kk] = toHalf<kBF16>(in ? lb(n0 + j, k0 + kk) : 0.0f);
    }
    __syncthreads();
    for (int ks = 0; ks < kMmaBK; ks += 16) {
      for (int mi = 0; mi < 2; ++mi) {
        const int r = wm * 32 + mi * 16 + g;
        const std::uint32_t a0 = *reinterpret_cast<const std::uint32_t*>(&As[r][ks + 2 * t]);
        const std::uint32_t a1 = *reinterpret_cast<const std::uint32_t*>(&As[r + 8][ks + 2 * t]);
        const std::uint32_t a2 = *reinterpret_cast<const std::uint32_t*>(&As[r][ks + 2 * t + 8]);
        const std::uint32_t a3 = *reinterpret_cast<const std::uint32_t*>(&As[r + 8][ks + 2 * t + 8]);
        for (int ni = 0; ni < 4; ++ni) {
          const int j = wn * 32 + ni * 8 + g;
          const std::uint32_t b0 = *reinterpret_cast<const std::uint32_t*>(&Bs[j][ks + 2 * t]);
          const std::uint32_t b1 = *reinterpret_cast<const std::uint32_t*>(&Bs[j][ks + 2 * t + 8]);
          mma16816<kBF16>(acc[mi][ni], a0, a1, a2, a3, b0, b1);
        }
      }
    }
    __syncthreads();
  }
  for (int mi = 0; mi < 2; ++mi)
    for (int ni = 0; ni < 4; ++ni)
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < 2; ++q) {
          const std::int64_t row = m0 + wm * 32 + mi * 16 + g + 8 * h;
          const std::int64_t col = n0 + wn * 32 + ni * 8 + 2 * t + q;
          if (row < m && col < n) c[row * ldc + col] = acc[mi][ni][2 * h + q];
        }
}

template <class LoadB>
void launchGemm(DType compute, std::int64_t m, std::int64_t n, std::int64_t k, DenseA la, LoadB lb, float* c,
                std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const std::int64_t gy = (m + 63) / 64, gx = (n + 63) / 64;
  if (gy > 65535) throw Error("gizml: a product of " + std::to_string(m) + " rows is too tall for one launch");
  dim3 grid(gridFor(gx, 1), static_cast<unsigned>(gy));
  if (compute == DType::F32) gemmExactKernel<LoadB><<<grid, kThreads>>>(m, n, k, la, lb, c, ldc);
  else if (compute == DType::BF16) gemmMmaKernel<true, LoadB><<<grid, 128>>>(m, n, k, la, lb, c, ldc);
  else gemmMmaKernel<false, LoadB><<<grid, 128>>>(m, n, k, la, lb, c, ldc);
}

// ---- epilogue and patches ---------------------------------------------------------------------------
__global__ void epilogueKernel(const float* c, std::int64_t rows, std::int64_t cols, Epilogue e, void* out, int outKind) {
  const std::int64_t idx = detail::globalThread();
  if (idx >= rows * cols) return;
  const float v = applyEpilogue(e, c[idx], idx / cols, idx % cols, cols);
  if (outKind == 0) static_cast<float*>(out)[idx] = v;
  else static_cast<std::uint16_t*>(out)[idx] = toHalfBits(v, outKind == 1);
}

__global__ void patchRowsKernel(const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
                                std::int64_t kw, std::int64_t pad, std::int64_t r0, std::int64_t r1, void* out, bool bf16) {
  const std::int64_t ow = w + 2 * pad - kw + 1, cols = (r1 - r0) * ow;
  const std::int64_t idx = detail::globalThread();
  if (idx >= c * kh * kw * cols) return;
  const std::int64_t q = idx / cols, pix = idx % cols;
  PatchB<false> patch{x, h, w, kh, kw, pad, ow};
  const float v = patch(pix + r0 * ow, q);
  if (bf16) static_cast<std::uint16_t*>(out)[idx] = exact::floatToBF16(v);
  else static_cast<float*>(out)[idx] = v;
}

}  // namespace

void gemmExact(int device, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
               const float* b, std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc) {
  detail::useDevice(device, "gizml::Lazy::store");
  launchGemm(DType::F32, m, n, k, DenseA{a, lda}, StridedB{b, bsN, bsK}, c, ldc);
  checkLaunch("gizml::Lazy::store (exact GEMM)");
}

void gemmMma(int device, DType compute, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
             std::int64_t lda, const float* b, std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc) {
  detail::useDevice(device, "gizml::Lazy::store");
  launchGemm(compute, m, n, k, DenseA{a, lda}, StridedB{b, bsN, bsK}, c, ldc);
  checkLaunch("gizml::Lazy::store (matrix-core GEMM)");
}

void conv(int device, DType compute, const float* w, const void* x, bool xIsBF16, std::int64_t o, std::int64_t c,
          std::int64_t h, std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t pad, float* out) {
  detail::useDevice(device, "gizml::lazyConv");
  const std::int64_t oh = h + 2 * pad - kh + 1, ow = wd + 2 * pad - kw + 1, q = c * kh * kw;
  if (xIsBF16) launchGemm(compute, o, oh * ow, q, DenseA{w, q}, PatchB<true>{x, h, wd, kh, kw, pad, ow}, out, oh * ow);
  else launchGemm(compute, o, oh * ow, q, DenseA{w, q}, PatchB<false>{x, h, wd, kh, kw, pad, ow}, out, oh * ow);
  checkLaunch("gizml::lazyConv (implicit GEMM)");
}

void epilogue(int device, const float* c, std::int64_t rows, std::int64_t cols, const Epilogue& e, void* out,
              DType outDType) {
  if (rows * cols == 0) return;
  detail::useDevice(device, "gizml::Lazy::store");
  const int kind = outDType == DType::F32 ? 0 : outDType == DType::BF16 ? 1 : 2;
  epilogueKernel<<<gridFor(rows * cols, 256), 256>>>(c, rows, cols, e, out, kind);
  checkLaunch("gizml::Lazy::store (epilogue)");
}

void patchRows(int device, const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
               std::int64_t kw, std::int64_t pad, std::int64_t r0, std::int64_t r1, void* out, DType dtype) {
  detail::useDevice(device, "gizml::netops::patchRows");
  const std::int64_t total = c * kh * kw * (r1 - r0) * (w + 2 * pad - kw + 1);
  patchRowsKernel<<<gridFor(total, 256), 256>>>(x, c, h, w, kh, kw, pad, r0, r1, out, dtype == DType::BF16);
  checkLaunch("gizml::netops::patchRows");
}

}  // namespace gizml::netops::lazy::cuda
