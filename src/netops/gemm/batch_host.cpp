// The host paths of gemm/batch.hpp: copies split over threads by output rows, and the batched
// convolution's store, the epilogue over 16 pixels a step (epilogueStep, as EpilogueStore::host).
#include <immintrin.h>

#include <algorithm>

#include "exact/vec16.hpp"
#include "netops/gemm/batch.hpp"
#include "netops/gemm/transpose8.hpp"

namespace gizml::netops::gemm {

namespace {

/// out [B, C, R] = x [B, R, C] transposed (Permute3 with perm {0, 2, 1}): blocks of 16 columns x 8
/// rows through 8 x 8 register transposes (whole cache lines read, 8 output rows written a
/// block), the ragged edges element by element. Threads split (image, column block) pairs. A
/// copy: the same bits as Permute3::element.
void transposeBatch(const float* x, std::int64_t B, std::int64_t R, std::int64_t C, float* out) {
  constexpr std::int64_t kCols = 16;
  const std::int64_t colBlocks = (C + kCols - 1) / kCols;
#pragma omp parallel for schedule(static)
  for (std::int64_t item = 0; item < B * colBlocks; ++item) {
    const std::int64_t b = item / colBlocks, c0 = item % colBlocks * kCols, cols = std::min(kCols, C - c0);
    const float* src = x + b * R * C;
    float* dst = out + b * C * R;
    std::int64_t r0 = 0;
#if defined(__AVX__)
    for (; r0 + 8 <= R; r0 += 8)
      for (std::int64_t c = c0; c + 8 <= c0 + cols; c += 8) {
        __m256 v[8];
        for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(src + (r0 + i) * C + c);
        transpose8x8(v);
        for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (c + i) * R + r0, v[i]);
      }
    // The columns of this block past its whole groups of 8, in the rows done above.
    for (std::int64_t c = c0 + cols / 8 * 8; c < c0 + cols; ++c)
      for (std::int64_t r = 0; r < r0; ++r) dst[c * R + r] = src[r * C + c];
#endif
    for (std::int64_t c = c0; c < c0 + cols; ++c)
      for (std::int64_t r = r0; r < R; ++r) dst[c * R + r] = src[r * C + c];
  }
}

}  // namespace

void Permute3::host(const Args& a) {
  if (a.perm[0] == 0 && a.perm[1] == 2 && a.perm[2] == 1) {
    transposeBatch(a.x, a.d[0], a.d[1], a.d[2], a.out);
    return;
  }
  const std::int64_t e1 = a.d[a.perm[1]], e2 = a.d[a.perm[2]], lines = a.d[a.perm[0]] * e1;
  const std::int64_t step = a.perm[2] == 2 ? 1 : a.perm[2] == 1 ? a.d[2] : a.d[1] * a.d[2];
#pragma omp parallel for schedule(static)
  for (std::int64_t line = 0; line < lines; ++line) {
    const float* src = a.x + source(a, line * e2);
    float* dst = a.out + line * e2;
    for (std::int64_t k = 0; k < e2; ++k) dst[k] = src[k * step];
  }
}

namespace {

/// Patch row `row` = (ch, i, j) of image b: its oh ow values into dst.
void patchRun(const float* x, const conv::Geometry2d& g, std::int64_t row, std::int64_t b, float* dst) {
  const std::int64_t j = row % g.kw, i = (row / g.kw) % g.kh, ch = row / (g.kw * g.kh);
  const float* plane = x + (b * g.c + ch) * g.h * g.w;
  for (std::int64_t oy = 0; oy < g.oh; ++oy) {
    const std::int64_t y = oy * g.stride + i - g.pad;
    float* out = dst + oy * g.ow;
    if (y < 0 || y >= g.h) {
      std::fill(out, out + g.ow, 0.0f);
      continue;
    }
    const float* src = plane + y * g.w;
    if (g.stride == 1) {  // zeros left of the row, one copy of its values, zeros right of it
      const std::int64_t x0 = j - g.pad, lo = std::clamp<std::int64_t>(-x0, 0, g.ow),
                         hi = std::clamp<std::int64_t>(g.w - x0, lo, g.ow);
      std::fill(out, out + lo, 0.0f);
      std::copy(src + x0 + lo, src + x0 + hi, out + lo);
      std::fill(out + hi, out + g.ow, 0.0f);
      continue;
    }
    for (std::int64_t ox = 0; ox < g.ow; ++ox) {
      const std::int64_t xx = ox * g.stride + j - g.pad;
      out[ox] = (xx >= 0 && xx < g.w) ? src[xx] : 0.0f;
    }
  }
}

}  // namespace

void ConvPatches::host(const Args& a) {
  const conv::Geometry2d& g = a.g;
  const std::int64_t q = g.rowWidth(), pixels = g.oh * g.ow, cols = g.n * pixels;
  // Threads split (patch row, image) pairs: each writes its image's run of one patch row.
#pragma omp parallel for schedule(static)
  for (std::int64_t item = 0; item < q * g.n; ++item) {
    const std::int64_t row = item / g.n, b = item % g.n;
    patchRun(a.x, g, row, b, a.out + row * cols + b * pixels);
  }
}

void ConvBatchStore::host(const Args& a) {
  using exact::f32x16;
  const Epilogue& e = a.e;
  const std::int64_t pixels = a.pixels, lines = a.n * a.o;
#pragma omp parallel for schedule(static)
  for (std::int64_t line = 0; line < lines; ++line) {  // (b, oc)
    const std::int64_t b = line / a.o, oc = line % a.o;
    const float* src = a.c + oc * a.n * pixels + b * pixels;
    for (std::int64_t p = 0; p < pixels; p += 16) {
      const std::int64_t left = pixels - p;
      f32x16 v = exact::load16(src + p, left);
      for (int s = 0; s < e.count; ++s) {
        const EpilogueStepData& st = e.steps[s];
        f32x16 operand{};
        if (st.op == Op::Bias) operand = exact::splat(st.data[oc]);
        else if (st.op == Op::Residual) operand = exact::load16(st.data + line * pixels + p, left);
        v = epilogueStep(st.op, v, operand, st.value);
      }
      if (a.outDType == DType::F32) {
        exact::store16(static_cast<float*>(a.out) + line * pixels + p, v, left);
      } else {
        auto* h = static_cast<std::uint16_t*>(a.out) + line * pixels + p;
        for (std::int64_t l = 0; l < std::min<std::int64_t>(16, left); ++l) h[l] = toHalfBits(v[l], a.outDType == DType::BF16);
      }
    }
  }
}

}  // namespace gizml::netops::gemm
