// The host paths of the exact product family. The GEMM (BLIS's way, with the roles of the caches
// chosen for this register block): each thread packs its own block of B (kc steps x nc columns,
// half of its L2, sized from the caches read at run time) into panels of NR columns; the
// micro-kernel runs MR x NR accumulators over kc steps, reading A's MR rows in place (their kc
// values stay in L1 while the block's B panels stream from L2). Between k blocks the accumulators
// are stored and loaded again, which is exact, so every element of C is one fma chain over
// k = 0, 1, ..., k - 1 (SPEC §1.3 `chain`). Threads split the columns (and the rows, when there
// are few column blocks) of C into items, each computed by one thread over all of k; k is never
// split, and the threads meet only at the end. The epilogue (bias, scale, activations, residual,
// output dtype) is applied as a tile leaves the registers after its last k block: no F32 product
// is stored and read again.
//
// Where the earlier kernel lost its time (an AMD EPYC Zen 3 VM, 2 vCPUs shared with other work,
// AVX2): the threads shared each packed block and met at two barriers for every block of 240
// rows x 256 steps (about 150 barriers for a 2048^3 product); where a thread is descheduled a
// barrier costs milliseconds (measured: the same blocking with a barrier a block ran at 8-20
// GFLOP/s against 65-150 without); B (w [n, k]) was packed by scalar strided reads, A likewise;
// its shared B block (256 x 2048 floats, 2 MiB) was 4 times this machine's L2; and the epilogue
// was a second pass over an F32 product.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/caches.hpp"
#include "core/host_memory.hpp"
#include "exact/row16.hpp"
#include "exact/vec16.hpp"
#include "netops/gemm/gemm.hpp"
#include "netops/gemm/transpose8.hpp"

namespace gizml::netops::gemm {

namespace {

// The micro-kernel works on the machine's own vectors: a chain is per element, so the vector
// width never changes a bit. AVX-512 has 32 registers of 16 floats: 6 x 4 accumulators + 4 of B
// (the broadcasts of A are memory operands of the FMAs). AVX2 has 16 registers of 8 floats:
// 6 x 2 accumulators + 2 of B + 1 broadcast.
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
constexpr std::int64_t kMaxKC = 1024;  // k steps a block at most (A's MR rows x kc take half of L1)
constexpr std::int64_t kAlign = 64;

std::int64_t roundUp(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

using ::gizml::detail::Caches;  // the run-time cache sizes (core/caches.hpp)
using ::gizml::detail::caches;

/// The block sizes of one product: kc steps a k block (A's MR rows x kc in half of L1; balanced,
/// so no block is a sliver), nc columns of each thread's packed B block (kc x nc in half of its
/// L2), and mc rows at most in one thread's item (bounding a 16-bit output's F32 block).
struct Blocking {
  std::int64_t kc, nc, mc;
};
Blocking blockingFor(std::int64_t k, std::int64_t n, bool costlyA) {
  const Caches& cs = caches();
  std::int64_t kcMax = std::clamp<std::int64_t>(cs.l1 / 2 / (MR * 4) / 16 * 16, 64, kMaxKC);
  // Rows of A that are made, not read (conv1d's patches), are made once a k block when one B
  // block holds all n columns: shorter k blocks, if that is what fits half of L2.
  const std::int64_t kcAllColumns = cs.l2 / 2 / (roundUp(n, NR) * 4) / 16 * 16;
  if (costlyA && kcAllColumns >= 128) kcMax = std::min(kcMax, kcAllColumns);
  const std::int64_t blocks = (k + kcMax - 1) / kcMax;
  const std::int64_t kc = roundUp((k + blocks - 1) / blocks, 4);
  const std::int64_t nc = std::max<std::int64_t>(NR, cs.l2 / 2 / (kc * 4) / NR * NR);
  return {kc, nc, 170 * MR};
}

/// The micro-kernel: the MR x NR chains continued over kc steps of a (MR rows, row stride lda,
/// read in place: each row's kc values stay in L1 while the block's B panels pass) and the packed
/// b (kc x NR, 64-byte aligned). `load`: continue from cin (row stride ldi); else start from +0.
/// The chains are stored to cout (row stride ldo).
inline void microKernel(std::int64_t kc, const float* __restrict ap, std::int64_t lda, const float* __restrict bp,
                        const float* cin, std::int64_t ldi, float* cout, std::int64_t ldo, bool load) {
  Vec acc[MR][NRV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NRV; ++v) {
      if (load) std::memcpy(&acc[i][v], cin + i * ldi + kLanes * v, sizeof(Vec));
      else acc[i][v] = Vec{};
    }
  const float* __restrict row[MR];
  for (int i = 0; i < MR; ++i) row[i] = ap + i * lda;
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    Vec b[NRV];
    for (int v = 0; v < NRV; ++v) b[v] = *reinterpret_cast<const Vec*>(bp + p * NR + kLanes * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const Vec ai = broadcastVec(row[i][p]);
      for (int v = 0; v < NRV; ++v) acc[i][v] = fmaVec(ai, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NRV; ++v) std::memcpy(cout + i * ldo + kLanes * v, &acc[i][v], sizeof(Vec));
}


/// packB's panels read from an image's patches (see ImagePatches): for each step q = (ch, i, j),
/// a panel's pixels in one output row are consecutive values of the image's row oy + i - pad from
/// ox + j - pad (zero outside it). The block's columns are cut once into such runs (a panel
/// crosses output rows where ow is not a multiple of NR, as a 14- or 28-wide image's do), then
/// every step copies its runs: no division a panel and step. The values are the image's, so the
/// chains are those of the patch matrix.
void packPatches(const ImagePatches& ip, std::int64_t n, std::int64_t j0, std::int64_t nc, std::int64_t p0,
                 std::int64_t kc, float* out) {
  struct Run {
    // pixels (oy, ox .. ox + len) of the image at `image` go to the panel offset `at`; oy < 0: zeros
    std::int64_t image, oy, ox, len, at;
  };
  thread_local std::vector<Run> runs;
  runs.clear();
  const std::int64_t panels = (nc + NR - 1) / NR, pixels = ip.pixels > 0 ? ip.pixels : n;
  const std::int64_t imageFloats = ip.c * ip.h * ip.w;
  for (std::int64_t q = 0; q < panels; ++q) {
    const std::int64_t jq = j0 + q * NR, cols = std::min<std::int64_t>(NR, n - jq);
    std::int64_t b = jq / pixels, oy = jq % pixels / ip.ow, ox = jq % pixels % ip.ow;
    for (std::int64_t l = 0; l < cols; ox = 0) {
      const std::int64_t len = std::min(cols - l, ip.ow - ox);
      runs.push_back({b * imageFloats, oy, ox, len, q * kc * NR + l});
      l += len;
      if (++oy * ip.ow == pixels) oy = 0, ++b;  // the image's last row: the next image's first
    }
    if (cols < NR) runs.push_back({0, -1, 0, NR - cols, q * kc * NR + cols});  // past n: zero
  }
  const std::int64_t taps = ip.kh * ip.kw;
  std::int64_t ch = p0 / taps, i = (p0 / ip.kw) % ip.kh, j = p0 % ip.kw;  // step p0, then counted on
  for (std::int64_t p = 0; p < kc; ++p) {
    const float* plane = ip.x + ch * ip.h * ip.w;
    for (const Run& r : runs) {
      float* d = out + r.at + p * NR;
      const std::int64_t y = r.oy + i - ip.pad, x0 = r.ox + j - ip.pad;
      if (r.oy < 0 || y < 0 || y >= ip.h) {
        for (std::int64_t t = 0; t < r.len; t += 16) exact::store16(d + t, exact::f32x16{}, r.len - t);
        continue;
      }
      const float* src = plane + r.image + y * ip.w + x0;
      if (x0 >= 0 && x0 + r.len <= ip.w) {
        for (std::int64_t t = 0; t < r.len; t += 16) exact::store16(d + t, exact::load16(src + t, r.len - t), r.len - t);
      } else {
        for (std::int64_t t = 0; t < r.len; ++t) d[t] = x0 + t >= 0 && x0 + t < ip.w ? src[t] : 0.0f;
      }
    }
    if (++j == ip.kw) {
      j = 0;
      if (++i == ip.kh) {
        i = 0;
        ++ch;
      }
    }
  }
}

/// Packs b's columns [j0, j0 + nc) and steps [p0, p0 + kc) into panels of NR columns, each kc x NR
/// step-major; columns past n are zero (their results are never stored).
void packB(const float* b, std::int64_t bsN, std::int64_t bsK, std::int64_t n, std::int64_t j0, std::int64_t nc,
           std::int64_t p0, std::int64_t kc, float* out) {
  const std::int64_t panels = (nc + NR - 1) / NR;
  for (std::int64_t q = 0; q < panels; ++q) {
    float* dst = out + q * kc * NR;
    const std::int64_t jq = j0 + q * NR;
    const std::int64_t cols = std::min<std::int64_t>(NR, n - jq);
    if (bsN == 1 && cols == NR) {  // b's columns contiguous (a convolution's patches): copy rows
      for (std::int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * NR, b + jq + (p0 + p) * bsK, sizeof(float) * NR);
      continue;
    }
    if (bsK == 1) {  // b's steps contiguous (w [n, k]): 8 columns x 8 steps at a time,
                     // transposed in registers (a scalar copy cost ~6 cycles an element here)
      for (std::int64_t pb = 0; pb < kc; pb += 8) {
        const std::int64_t steps = std::min<std::int64_t>(8, kc - pb);
        for (std::int64_t j = 0; j < NR; j += 8) {
          float* d = dst + pb * NR + j;
#if defined(__AVX__)
          if (steps == 8 && j + 8 <= cols) {
            __m256 r[8];
            for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(b + (jq + j + i) * bsN + p0 + pb);
            transpose8x8(r);
            for (int i = 0; i < 8; ++i) _mm256_store_ps(d + i * NR, r[i]);
            continue;
          }
#endif
          for (std::int64_t jj = 0; jj < 8; ++jj)
            for (std::int64_t p = 0; p < steps; ++p)
              d[p * NR + jj] = j + jj < cols ? b[(jq + j + jj) * bsN + p0 + pb + p] : 0.0f;
        }
      }
      continue;
    }
    for (std::int64_t p = 0; p < kc; ++p)
      for (std::int64_t j = 0; j < NR; ++j) dst[p * NR + j] = j < cols ? b[(jq + j) * bsN + (p0 + p) * bsK] : 0.0f;
  }
}

/// Where a product goes: the epilogue, the output and its dtype.
struct Target {
  const Epilogue* e;
  void* out;
  DType dtype;
  std::int64_t ldo;
  std::int64_t colGroup = 0, groupStride = 0;  // GemmStore's
  /// The chains are the output as they are: F32, no epilogue, the columns not regrouped.
  bool plain() const { return e->count == 0 && dtype == DType::F32 && colGroup == 0; }
};

/// x[i] = epilogueStep(op, x[i], operand[i], value) for the R rows, with op a constant in each
/// case: one formula (epilogueStep's), and the rows' chains independent, so an activation's
/// latency is hidden behind the other rows'.
template <int R>
inline __attribute__((always_inline)) void stepRows(Op op, exact::f32x16 (&x)[R], const exact::f32x16 (&operand)[R],
                                                    float value) {
  switch (op) {
#define GIZML_STEP_ROWS(o) \
  case o:                  \
    for (int i = 0; i < R; ++i) x[i] = epilogueStep(o, x[i], operand[i], value); \
    break;
    GIZML_STEP_ROWS(Op::Bias)
    GIZML_STEP_ROWS(Op::Residual)
    GIZML_STEP_ROWS(Op::Scale)
    GIZML_STEP_ROWS(Op::Silu)
    GIZML_STEP_ROWS(Op::Gelu)
    GIZML_STEP_ROWS(Op::Relu)
#undef GIZML_STEP_ROWS
  }
}

/// The epilogue of `count` elements of `rows` (<= R) output rows from (row0, col0), their chains
/// at v (row stride ldv), stored to out (row stride ldo) as dtype: 16 lanes of R rows a step.
template <int R>
void epilogueRows(const Epilogue& e, const float* v, std::int64_t ldv, std::int64_t rows, std::int64_t row0,
                  std::int64_t col0, std::int64_t count, void* out, DType dtype, std::int64_t ldo) {
  using exact::f32x16;
  for (std::int64_t j = 0; j < count; j += 16) {
    const std::int64_t left = count - j, col = col0 + j;
    f32x16 x[R];
    for (int i = 0; i < R; ++i) x[i] = i < rows ? exact::load16(v + i * ldv + j, left) : f32x16{};
    for (int s = 0; s < e.count; ++s) {
      const EpilogueStepData& st = e.steps[s];
      f32x16 operand[R] = {};
      for (int i = 0; i < R && i < rows; ++i) {
        const std::int64_t row = row0 + i;
        if (st.op == Op::Bias) operand[i] = e.biasPerRow ? exact::splat(st.data[row]) : exact::load16(st.data + col, left);
        else if (st.op == Op::Residual) operand[i] = exact::load16(st.data + row * ldo + col, left);
      }
      stepRows<R>(st.op, x, operand, st.value);
    }
    for (int i = 0; i < R && i < rows; ++i) {
      const std::int64_t at = (row0 + i) * ldo + col;
      if (dtype == DType::F32) {
        exact::store16(static_cast<float*>(out) + at, x[i], left);
      } else {
        auto* h = static_cast<std::uint16_t*>(out) + at;
        if (dtype == DType::BF16 && left >= 16) {
          exact::storeBF16x16(h, x[i]);
        } else {
          float lanes[16];
          std::memcpy(lanes, &x[i], sizeof lanes);
          for (std::int64_t l = 0; l < std::min<std::int64_t>(16, left); ++l) h[l] = toHalfBits(lanes[l], dtype == DType::BF16);
        }
      }
    }
  }
}

/// The epilogue of `rows` output rows from (row0, col0), `count` columns, their chains at v (row
/// stride ldv), stored where t says: with column groups (a batch's images) cut at the groups'
/// edges, each piece stored into its group's output (and read from its group's residual).
template <int R>
void storeThrough(const Target& t, const float* v, std::int64_t ldv, std::int64_t rows, std::int64_t row0,
                  std::int64_t col0, std::int64_t count) {
  if (t.colGroup == 0) {
    epilogueRows<R>(*t.e, v, ldv, rows, row0, col0, count, t.out, t.dtype, t.ldo);
    return;
  }
  for (std::int64_t c = 0; c < count;) {
    const std::int64_t group = (col0 + c) / t.colGroup, at = (col0 + c) % t.colGroup;
    const std::int64_t piece = std::min(count - c, t.colGroup - at);
    Epilogue e = *t.e;
    for (int s = 0; s < e.count; ++s)
      if (e.steps[s].op == Op::Residual) e.steps[s].data += group * t.groupStride;
    epilogueRows<R>(e, v + c, ldv, rows, row0, at, piece, static_cast<char*>(t.out) + dtypeBytes(t.dtype, group * t.groupStride),
                    t.dtype, t.ldo);
    c += piece;
  }
}

/// One tile of C: the chains over the block [kc) of its MR x NR elements (rows x cols of them
/// real), continued from `inter` (row stride ldi) unless this is the first block; stored to
/// inter, or, after the last block, through the epilogue to the output at (row0, col0).
void tile(std::int64_t kc, const float* ap, std::int64_t lda, const float* bp, bool first, bool last, std::int64_t rows,
          std::int64_t cols, float* inter, std::int64_t ldi, const Target& t, std::int64_t row0, std::int64_t col0) {
  const bool full = rows == MR && cols == NR;
  if (full && (!last || t.plain())) {
    // inter is the output itself when the result is plain F32
    microKernel(kc, ap, lda, bp, inter, ldi, inter, ldi, !first);
    return;
  }
  alignas(kAlign) float local[MR * NR];
  const float* in = inter;
  std::int64_t ldin = ldi;
  if (!first && !full) {
    for (std::int64_t i = 0; i < rows; ++i) std::memcpy(local + i * NR, inter + i * ldi, sizeof(float) * cols);
    in = local;
    ldin = NR;
  }
  microKernel(kc, ap, lda, bp, in, ldin, local, NR, !first);
  if (!last || t.plain()) {
    for (std::int64_t i = 0; i < rows; ++i) std::memcpy(inter + i * ldi, local + i * NR, sizeof(float) * cols);
    return;
  }
  storeThrough<MR>(t, local, NR, rows, row0, col0, cols);
}

/// `count` values at p rounded as `compute` asks, in `keep` (F32 compute: p itself).
const float* roundedOperand(const float* p, std::int64_t count, DType compute, std::vector<float>& keep) {
  if (compute == DType::F32) return p;
  keep.resize(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) keep[i] = roundOperand(p[i], compute);
  return keep.data();
}

}  // namespace

void epilogueSegment(const Epilogue& e, const float* v, std::int64_t row, std::int64_t col0, std::int64_t count,
                     void* out, DType dtype, std::int64_t ldo) {
  epilogueRows<1>(e, v, 0, 1, row, col0, count, out, dtype, ldo);
}

void gemmStoreHost(const GemmStore& g) {
  const std::int64_t m = g.m, n = g.n, k = g.k;
  if (m == 0 || n == 0) return;
  if (g.compute != DType::F32) {  // the operands rounded as compute asks, then the exact chain
    std::vector<float> keepA, keepB;
    GemmStore r = g;
    r.compute = DType::F32;
    r.a = g.packA ? g.a : roundedOperand(g.a, (m - 1) * g.lda + k, g.compute, keepA);
    r.b = k == 0 || g.patches ? g.b : roundedOperand(g.b, (n - 1) * g.bsN + (k - 1) * g.bsK + 1, g.compute, keepB);
    gemmStoreHost(r);
    return;
  }
  const Target target{&g.e, g.out, g.outDType, g.ldo, g.colGroup, g.groupStride};
  if (k == 0) {  // the empty chain is +0, then the epilogue
    std::vector<float> zeros(static_cast<std::size_t>(n), 0.0f);
    for (std::int64_t i = 0; i < m; ++i) storeThrough<1>(target, zeros.data(), 0, 1, i, 0, n);
    return;
  }
  const Blocking bl = blockingFor(k, n, g.packA != nullptr);
  // The k blocks' chains wait in the output when it is F32 with its columns in place; else (a
  // 16-bit output, column groups) in a thread's own F32 block (the item's rows x nc), only when k
  // takes more than one block.
  const bool interInOut = g.outDType == DType::F32 && g.colGroup == 0;
  const bool oneBlock = k <= bl.kc;
  const int threads = omp_get_max_threads();
  // Each item is a block of nc columns and a share of the rows (at most mc of them; more shares
  // when there are fewer blocks than twice the threads), computed by one thread over all of k:
  // the threads meet only at the end, a barrier being costly where a thread can be descheduled.
  const std::int64_t rowPanels = (m + MR - 1) / MR, colBlocks = (n + bl.nc - 1) / bl.nc;
  const std::int64_t rowParts = std::min<std::int64_t>(
      rowPanels, std::max((2 * threads + colBlocks - 1) / colBlocks, (m + bl.mc - 1) / bl.mc));

#pragma omp parallel
  {
    detail::HostScratch<float> bPacked(bl.kc * bl.nc);
    detail::HostScratch<float> inter(interInOut || oneBlock ? 0 : ((rowPanels + rowParts - 1) / rowParts) * MR * bl.nc);
    alignas(kAlign) float edgeRows[MR * kMaxKC];  // a last panel of fewer than MR rows, zero-padded
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t item = 0; item < colBlocks * rowParts; ++item) {
      const std::int64_t jb = item / rowParts, part = item % rowParts;
      const std::int64_t q0 = part * rowPanels / rowParts, q1 = (part + 1) * rowPanels / rowParts;
      const std::int64_t j0 = jb * bl.nc, nc = std::min(bl.nc, n - j0), colTiles = (nc + NR - 1) / NR;
      const std::int64_t ldi = interInOut ? g.ldo : bl.nc;
      for (std::int64_t p0 = 0; p0 < k; p0 += bl.kc) {
        const std::int64_t kc = std::min(bl.kc, k - p0);
        const bool first = p0 == 0, last = p0 + kc == k;
        if (g.patches) packPatches(*g.patches, n, j0, nc, p0, kc, bPacked.data());
        else packB(g.b, g.bsN, g.bsK, n, j0, nc, p0, kc, bPacked.data());
        for (std::int64_t q = q0; q < q1; ++q) {
          const std::int64_t row0 = q * MR, rows = std::min<std::int64_t>(MR, m - row0);
          const float* ap = g.a + row0 * g.lda + p0;
          std::int64_t lda = g.lda;
          if (g.packA) {  // rows made on the spot, zero past m
            g.packA(g.packACtx, row0, rows, p0, kc, edgeRows);
            std::fill(edgeRows + rows * kc, edgeRows + MR * kc, 0.0f);
            ap = edgeRows;
            lda = kc;
          } else if (rows < MR) {
            for (std::int64_t i = 0; i < MR; ++i)
              if (i < rows) std::memcpy(edgeRows + i * kc, ap + i * g.lda, sizeof(float) * kc);
              else std::fill(edgeRows + i * kc, edgeRows + (i + 1) * kc, 0.0f);
            ap = edgeRows;
            lda = kc;
          }
          float* rowAt =
              interInOut ? static_cast<float*>(g.out) + row0 * g.ldo + j0 : inter.data() + (q - q0) * MR * bl.nc;
          for (std::int64_t t = 0; t < colTiles; ++t) {
            const std::int64_t col0 = j0 + t * NR, cols = std::min<std::int64_t>(NR, n - col0);
            // The next tile's chains (or, in the first block, the lines it will write) are
            // fetched while this one runs: a tile of C is far from the caches by the time its
            // next k block comes round.
            if (t + 1 < colTiles && rows == MR)
              for (int i = 0; i < MR; ++i)
                for (int v = 0; v < NR; v += 16) __builtin_prefetch(rowAt + i * ldi + (t + 1) * NR + v, 1);
            tile(kc, ap, lda, bPacked.data() + t * kc * NR, first, last, rows, cols, rowAt + t * NR, ldi, target, row0,
                 col0);
          }
        }
      }
    }
  }
}

namespace {

/// C [m, n] = the exact chain over k (see Gemm in gemm.hpp), F32 operands, no epilogue.
void gemmHost(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
              std::int64_t bsN, std::int64_t bsK, float* c, std::int64_t ldc) {
  GemmStore g{DType::F32, m, n, k, a, lda, b, bsN, bsK, Epilogue{}, c, DType::F32, ldc};
  gemmStoreHost(g);
}

// ---- the operands, the patches and the epilogue --------------------------------------------------------

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
  if (a.store.out) {
    gemmStoreHost({a.compute, a.m, a.n, a.k, a.a, a.lda, a.b, a.bsN, a.bsK, a.store.e, a.store.out, a.store.outDType, a.n});
    return;
  }
  gemmStoreHost({a.compute, a.m, a.n, a.k, a.a, a.lda, a.b, a.bsN, a.bsK, Epilogue{}, a.c, DType::F32, a.ldc});
}

void convStoreHost(const ConvProduct::Args& a, const Epilogue& e, void* out, DType outDType) {
  const std::int64_t q = a.c * a.kh * a.kw, oh = a.h + 2 * a.pad - a.kh + 1, pixels = oh * (a.wd + 2 * a.pad - a.kw + 1);
  const std::int64_t xCount = a.c * a.h * a.wd;
  std::vector<float> xf, keepX;
  const float* x = static_cast<const float*>(a.x);
  if (a.xIsBF16) {
    xf.resize(static_cast<std::size_t>(xCount));
    const BF16Image image{static_cast<const std::uint16_t*>(a.x)};
    for (std::int64_t i = 0; i < xCount; ++i) xf[i] = image(i);
    x = xf.data();
  }
  // The patches are packed into the GEMM's B panels straight from x (ImagePatches), never built.
  const ImagePatches patches{roundedOperand(x, xCount, a.compute, keepX), a.c, a.h, a.wd, a.kh, a.kw, a.pad,
                             pixels / oh};
  std::vector<float> keepW;
  gemmStoreHost({DType::F32, a.o, pixels, q, roundedOperand(a.w, a.o * q, a.compute, keepW), q, nullptr, 0, 0, e, out,
                 outDType, pixels, &patches});
}

void convBatchStoreHost(DType compute, const float* w, const float* x, std::int64_t n, std::int64_t o, std::int64_t c,
                        std::int64_t h, std::int64_t wd, std::int64_t kh, std::int64_t kw, std::int64_t pad,
                        const Epilogue& e, void* out, DType outDType) {
  const std::int64_t q = c * kh * kw, oh = h + 2 * pad - kh + 1, ow = wd + 2 * pad - kw + 1, pixels = oh * ow;
  std::vector<float> keepX, keepW;
  const ImagePatches patches{roundedOperand(x, n * c * h * wd, compute, keepX), c, h, wd, kh, kw, pad, ow, pixels};
  Epilogue perRow = e;
  perRow.biasPerRow = true;
  GemmStore g{DType::F32, o, n * pixels, q, roundedOperand(w, o * q, compute, keepW), q, nullptr, 0, 0, perRow, out,
              outDType, pixels, &patches};
  g.colGroup = pixels;
  g.groupStride = o * pixels;
  gemmStoreHost(g);
}

void ConvProduct::host(const Args& a) {
  Epilogue e = a.store.out ? a.store.e : Epilogue{};
  e.biasPerRow = true;
  if (a.store.out) convStoreHost(a, e, a.store.out, a.store.outDType);
  else convStoreHost(a, e, a.out, DType::F32);
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

/// The epilogue over 16 lanes a step (epilogueSegment, as the GEMM's store runs it), OpenMP over rows.
void EpilogueStore::host(const Args& a) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < a.rows; ++r) epilogueSegment(a.e, a.c + r * a.cols, r, 0, a.cols, a.out, a.outDType, a.cols);
}

}  // namespace gizml::netops::gemm
