// The exact host GEMM (BLIS's way): B is packed into panels of NR columns, A into panels of MR
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

#include "netops/lazy/lazy.hpp"

namespace gizml::netops::lazy {

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

}  // namespace

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

}  // namespace gizml::netops::lazy
