// The host paths of the exact product family. The GEMM (BLIS's way): B is packed into panels of NR columns, A into panels of MR
// rows, and a register-blocked micro-kernel runs MR x NR accumulators over a block of KC steps.
// Between k blocks the accumulators are stored to C and loaded again, which is exact, so every
// element of C is one fma chain over k = 0, 1, ..., k - 1 (SPEC §1.3 `chain`). Threads split the
// columns of a block of C; k is never split.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "exact/vec16.hpp"
#include "netops/gemm/gemm.hpp"

namespace gizml::netops::gemm {

namespace {

// The micro-kernel works on the machine's own vectors: a chain is per element, so the vector
// width never changes a bit. AVX-512 has 32 registers of 16 floats: 6 x 4 accumulators + 4 of B
// + 1 broadcast (measured faster here than 14 x 2: fewer loads a step). AVX2 has 16 registers of
// 8 floats: 6 x 2 accumulators + 2 of B + 1 broadcast.
#if defined(__AVX512F__)
using Vec = float __attribute__((vector_size(64)));
constexpr int kLanes = 16;
constexpr int MR = 6;
constexpr int NRV = 4;
inline Vec fmaVec(Vec a, Vec b, Vec c) { return (Vec)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
inline Vec broadcastVec(float v) { return (Vec)_mm512_set1_ps(v); }
#elif defined(__FMA__)
using Vec = float __attribute__((vector_size(32)));
constexpr int kLanes = 8;
constexpr int MR = 6;
constexpr int NRV = 2;
inline Vec fmaVec(Vec a, Vec b, Vec c) { return (Vec)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
inline Vec broadcastVec(float v) { return (Vec)_mm256_set1_ps(v); }
#else
using Vec = float __attribute__((vector_size(16)));
constexpr int kLanes = 4;
constexpr int MR = 4;
constexpr int NRV = 2;
inline Vec fmaVec(Vec a, Vec b, Vec c) {
  Vec r;
  for (int l = 0; l < kLanes; ++l) r[l] = fmaf(a[l], b[l], c[l]);
  return r;
}
inline Vec broadcastVec(float v) { return Vec{v, v, v, v}; }
#endif
constexpr int NR = kLanes * NRV;
constexpr std::int64_t KC = 256;       // k steps a block (128 and 192 measured slower here)
constexpr std::int64_t MC = MR * 40;   // rows of A packed at a time (L2)
constexpr std::int64_t NC = 2048;      // columns of B packed at a time (shared by the threads)

/// The micro-kernel: c[MR x NR] (row stride ldc) = its chain continued over kc steps of the
/// packed a (kc x MR, step-major) and b (kc x NR). `load`: continue from c; else start from +0.
inline void microKernel(std::int64_t kc, const float* __restrict ap, const float* __restrict bp, float* c,
                        std::int64_t ldc, bool load) {
  Vec acc[MR][NRV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NRV; ++v) {
      if (load) std::memcpy(&acc[i][v], c + i * ldc + kLanes * v, sizeof(Vec));
      else acc[i][v] = Vec{};
    }
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    __builtin_prefetch(bp + (p + 8) * NR);
    __builtin_prefetch(ap + (p + 8) * MR);
    Vec b[NRV];
    for (int v = 0; v < NRV; ++v) std::memcpy(&b[v], bp + p * NR + kLanes * v, sizeof(Vec));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const Vec ai = broadcastVec(ap[p * MR + i]);
      for (int v = 0; v < NRV; ++v) acc[i][v] = fmaVec(ai, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NRV; ++v) std::memcpy(c + i * ldc + kLanes * v, &acc[i][v], sizeof(Vec));
}

/// An edge tile (fewer than MR rows or NR columns): run the kernel on a full local tile.
void edgeKernel(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc, bool load,
                std::int64_t rows, std::int64_t cols) {
  alignas(64) float tile[MR * NR] = {};
  if (load)
    for (std::int64_t i = 0; i < rows; ++i) std::memcpy(tile + i * NR, c + i * ldc, sizeof(float) * cols);
  microKernel(kc, ap, bp, tile, NR, load);
  for (std::int64_t i = 0; i < rows; ++i) std::memcpy(c + i * ldc, tile + i * NR, sizeof(float) * cols);
}

/// Packs b's columns [j0, j0 + nc) and steps [p0, p0 + kc) into panels of NR columns, each kc x NR
/// step-major; columns past n are zero (their results are never stored).
void packB(const float* b, std::int64_t bsN, std::int64_t bsK, std::int64_t n, std::int64_t j0, std::int64_t nc,
           std::int64_t p0, std::int64_t kc, float* out) {
  const std::int64_t panels = (nc + NR - 1) / NR;
#pragma omp for schedule(static)
  for (std::int64_t q = 0; q < panels; ++q) {
    float* dst = out + q * kc * NR;
    const std::int64_t jq = j0 + q * NR;
    const std::int64_t cols = std::min<std::int64_t>(NR, n - jq);
    if (bsN == 1 && cols == NR) {  // b's columns contiguous (a convolution's patches): copy rows
      for (std::int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * NR, b + jq + (p0 + p) * bsK, sizeof(float) * NR);
      continue;
    }
    for (std::int64_t p = 0; p < kc; ++p)
      for (std::int64_t j = 0; j < NR; ++j) dst[p * NR + j] = j < cols ? b[(jq + j) * bsN + (p0 + p) * bsK] : 0.0f;
  }
}

/// Packs a's rows [i0, i0 + mc) and steps [p0, p0 + kc) into panels of MR rows, kc x MR step-major.
void packA(const float* a, std::int64_t lda, std::int64_t m, std::int64_t i0, std::int64_t mc, std::int64_t p0,
           std::int64_t kc, float* out) {
  for (std::int64_t q = 0; q * MR < mc; ++q) {
    float* dst = out + q * kc * MR;
    for (std::int64_t i = 0; i < MR; ++i) {
      const std::int64_t row = i0 + q * MR + i;
      if (row < m) {
        const float* src = a + row * lda + p0;
        for (std::int64_t p = 0; p < kc; ++p) dst[p * MR + i] = src[p];
      } else {
        for (std::int64_t p = 0; p < kc; ++p) dst[p * MR + i] = 0.0f;
      }
    }
  }
}

/// C [m, n] = the exact chain over k (see Gemm in gemm.hpp), F32 operands.
void gemmHost(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
              std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // the empty chain is +0
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const std::int64_t ncMax = std::min(NC, (n + NR - 1) / NR * NR);
  const std::int64_t kcMax = std::min(KC, k);
  const std::int64_t mcMax = std::min(MC, (m + MR - 1) / MR * MR);
  std::vector<float> bPacked(static_cast<std::size_t>(ncMax * kcMax));
  std::vector<float> aPacked(static_cast<std::size_t>(mcMax * kcMax));

  // The threads share each packed block of A and of B and split the block's column tiles: on a
  // core whose two hardware threads share the caches, one copy of each block serves both.
#pragma omp parallel
  for (std::int64_t j0 = 0; j0 < n; j0 += NC) {
    const std::int64_t nc = std::min(NC, n - j0);
    const std::int64_t colTiles = (nc + NR - 1) / NR;
    for (std::int64_t p0 = 0; p0 < k; p0 += KC) {
      const std::int64_t kc = std::min(KC, k - p0);
      const bool load = p0 > 0;  // the first block starts the chain from +0
      packB(b, bsN, bsK, n, j0, nc, p0, kc, bPacked.data());  // omp for: a barrier after
      for (std::int64_t i0 = 0; i0 < m; i0 += MC) {
        const std::int64_t mc = std::min(MC, m - i0);
        const std::int64_t rowPanels = (mc + MR - 1) / MR;
#pragma omp for schedule(static)
        for (std::int64_t q = 0; q < rowPanels; ++q)
          packA(a, lda, m, i0 + q * MR, MR, p0, kc, aPacked.data() + q * kc * MR);
#pragma omp for schedule(static)
        for (std::int64_t tile = 0; tile < colTiles; ++tile) {
          const std::int64_t jr = tile * NR;
          const float* bp = bPacked.data() + tile * kc * NR;
          const std::int64_t cols = std::min<std::int64_t>(NR, nc - jr);
          for (std::int64_t q = 0; q < rowPanels; ++q) {
            const float* ap = aPacked.data() + q * kc * MR;
            float* cTile = c + (i0 + q * MR) * ldc + j0 + jr;
            const std::int64_t rows = std::min<std::int64_t>(MR, mc - q * MR);
            if (rows == MR && cols == NR) microKernel(kc, ap, bp, cTile, ldc, load);
            else edgeKernel(kc, ap, bp, cTile, ldc, load, rows, cols);
          }
        }  // omp for: a barrier before A is packed again
      }
    }
  }
}

// ---- the operands, the patches and the epilogue --------------------------------------------------------

/// `count` values at p rounded as `compute` asks, in `keep` (F32 compute: p itself).
const float* roundedOperand(const float* p, std::int64_t count, DType compute, std::vector<float>& keep) {
  if (compute == DType::F32) return p;
  keep.resize(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) keep[i] = roundOperand(p[i], compute);
  return keep.data();
}

/// patchRows into F32 [c kh kw, (r1 - r0) ow]: threads split the patch rows q = (ch, i, j).
void patchRowsHost(const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
                   std::int64_t pad, std::int64_t r0, std::int64_t r1, float* out) {
  const std::int64_t ow = w + 2 * pad - kw + 1, cols = (r1 - r0) * ow;
#pragma omp parallel for schedule(static)
  for (std::int64_t q = 0; q < c * kh * kw; ++q) {
    const std::int64_t ch = q / (kh * kw), i = (q / kw) % kh, j = q % kw;
    float* dst = out + q * cols;
    for (std::int64_t oy = r0; oy < r1; ++oy) {
      const std::int64_t y = oy + i - pad;
      float* row = dst + (oy - r0) * ow;
      if (y < 0 || y >= h) {
        std::fill(row, row + ow, 0.0f);
        continue;
      }
      const float* src = x + (ch * h + y) * w;
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const std::int64_t xx = ox + j - pad;
        row[ox] = (xx >= 0 && xx < w) ? src[xx] : 0.0f;
      }
    }
  }
}

}  // namespace

void Gemm::host(const Args& a) {
  std::vector<float> keepA, keepB;
  const std::int64_t aCount = a.m == 0 ? 0 : (a.m - 1) * a.lda + a.k;
  const std::int64_t bCount = (a.n == 0 || a.k == 0) ? 0 : (a.n - 1) * a.bsN + (a.k - 1) * a.bsK + 1;
  gemmHost(a.m, a.n, a.k, roundedOperand(a.a, aCount, a.compute, keepA), a.lda,
           roundedOperand(a.b, bCount, a.compute, keepB), a.bsN, a.bsK, a.c, a.ldc);
}

void ConvProduct::host(const Args& a) {
  const std::int64_t q = a.c * a.kh * a.kw, oh = a.h + 2 * a.pad - a.kh + 1, pixels = oh * (a.wd + 2 * a.pad - a.kw + 1);
  const std::int64_t xCount = a.c * a.h * a.wd;
  std::vector<float> xf, keepW, keepX;
  const float* x = static_cast<const float*>(a.x);
  if (a.xIsBF16) {
    xf.resize(static_cast<std::size_t>(xCount));
    const BF16Image image{static_cast<const std::uint16_t*>(a.x)};
    for (std::int64_t i = 0; i < xCount; ++i) xf[i] = image(i);
    x = xf.data();
  }
  std::vector<float> patches(static_cast<std::size_t>(q * pixels));
  patchRowsHost(roundedOperand(x, xCount, a.compute, keepX), a.c, a.h, a.wd, a.kh, a.kw, a.pad, 0, oh, patches.data());
  gemmHost(a.o, pixels, q, roundedOperand(a.w, a.o * q, a.compute, keepW), q, patches.data(), 1, pixels, a.out, pixels);
}

void PatchRows::host(const Args& a) {
  if (a.dtype == DType::F32) {
    patchRowsHost(a.x, a.c, a.h, a.w, a.kh, a.kw, a.pad, a.r0, a.r1, static_cast<float*>(a.out));
    return;
  }
  std::vector<float> f(static_cast<std::size_t>(count(a)));
  patchRowsHost(a.x, a.c, a.h, a.w, a.kh, a.kw, a.pad, a.r0, a.r1, f.data());
  auto* out = static_cast<std::uint16_t*>(a.out);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count(a); ++i) out[i] = exact::floatToBF16(f[i]);
}

/// The epilogue over 16 lanes a step, OpenMP over rows.
void EpilogueStore::host(const Args& a) {
  using exact::f32x16;
  const Epilogue& e = a.e;
  const std::int64_t cols = a.cols;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < a.rows; ++r) {
    for (std::int64_t j = 0; j < cols; j += 16) {
      const std::int64_t left = cols - j;
      f32x16 v = exact::load16(a.c + r * cols + j, left);
      for (int s = 0; s < e.count; ++s) {
        const EpilogueStepData& st = e.steps[s];
        f32x16 operand{};
        if (st.op == Op::Bias) operand = e.biasPerRow ? exact::splat(st.data[r]) : exact::load16(st.data + j, left);
        else if (st.op == Op::Residual) operand = exact::load16(st.data + r * cols + j, left);
        v = epilogueStep(st.op, v, operand, st.value);
      }
      if (a.outDType == DType::F32) {
        exact::store16(static_cast<float*>(a.out) + r * cols + j, v, left);
      } else {
        auto* h = static_cast<std::uint16_t*>(a.out) + r * cols + j;
        for (std::int64_t l = 0; l < std::min<std::int64_t>(16, left); ++l) h[l] = toHalfBits(v[l], a.outDType == DType::BF16);
      }
    }
  }
}

}  // namespace gizml::netops::gemm
