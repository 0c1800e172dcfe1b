// The exact product family on a CUDA GPU: the exact SIMT GEMM (each output element one thread's fma chain
// over k, tiles through shared memory, no split-K), the matrix-core GEMM (mma.sync m16n8k16,
// BF16 or F16 operands, F32 accumulate; fast), both reading B through a loader so a convolution
// reads its patches from x as the tiles fill (implicit GEMM), and the epilogue.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/convert.hpp"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"
#include "netops/gemm/gemm.hpp"

namespace gizml::netops::gemm {

namespace {

namespace mma = exact::mma;

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
template <class Image>
struct PatchB {  // column j = output pixel (oy, ox), step q = (ch, i, j) of the image [c, h, w]
  Image image;
  std::int64_t h, w, kh, kw, pad, ow;
  static constexpr bool kPixelFast = true;
  __device__ float operator()(std::int64_t pix, std::int64_t q) const { return patchValue(image, h, w, kh, kw, pad, ow, pix, q); }
};

// ---- the exact SIMT GEMM ------------------------------------------------------------------------
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

/// A block's 64 x 64 output tile: blocks run over the tiles row by row of tiles in one grid
/// dimension (up to 2^31 - 1 tiles), so the rows are not held to gridDim.y's 65535.
struct Tile {
  std::int64_t m0, n0;
};
__device__ __forceinline__ Tile tileOf(std::int64_t n, int tileN) {
  const std::int64_t tilesN = (n + tileN - 1) / tileN, b = blockIdx.x;
  return {b / tilesN * kBM, b % tilesN * tileN};
}

/// Element (row, col) of an [.., cols] output through the epilogue, stored as the target's dtype:
/// the GEMMs' store and the epilogue kernel share it.
__device__ __forceinline__ void storeThroughEpilogue(const EpilogueTarget& t, float v, std::int64_t row,
                                                     std::int64_t col, std::int64_t cols) {
  const float y = applyEpilogue(t.e, v, row, col, cols);
  const std::int64_t at = row * cols + col;
  if (t.outDType == DType::F32) static_cast<float*>(t.out)[at] = y;
  else static_cast<std::uint16_t*>(t.out)[at] = toHalfBits(y, t.outDType == DType::BF16);
}

/// Where a block's chains go as they leave the registers: c (row stride ldc) as they are, or with
/// target.out set through the epilogue into target.out [m, n] (the epilogue in the store: no F32
/// product, no second pass).
struct ChainStore {
  float* c;
  std::int64_t ldc, n;
  EpilogueTarget target;
  __device__ void operator()(std::int64_t row, std::int64_t col, float v) const {
    if (target.out) storeThroughEpilogue(target, v, row, col, n);
    else c[row * ldc + col] = v;
  }
};

template <class LoadB>
__device__ void exactBlock(std::int64_t m, std::int64_t n, std::int64_t k, DenseA la, LoadB lb, const ChainStore& store) {
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const Tile tile = tileOf(n, kBN);
  const std::int64_t m0 = tile.m0, n0 = tile.n0;
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
      if (row < m && col < n) store(row, col, acc[i][j]);
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


template <bool kBF16, class LoadB>
__device__ void mmaBlock(std::int64_t m, std::int64_t n, std::int64_t k, DenseA la, LoadB lb, const ChainStore& store) {
  __shared__ __align__(16) std::uint16_t As[64][kPadK];
  __shared__ __align__(16) std::uint16_t Bs[64][kPadK];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  const Tile tile = tileOf(n, 64);
  const std::int64_t m0 = tile.m0, n0 = tile.n0;
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
    // The fragments by the PTX maps (exact/mma_layout.hpp, checked by tests/mma_layout_test.cpp):
    // a register's two halves are k-adjacent in a row of As (of Bs: Bs holds Bᵀ, k contiguous), so
    // each register is one 32-bit load at its element 0.
    for (int ks = 0; ks < kMmaBK; ks += 16) {
      for (int mi = 0; mi < 2; ++mi) {
        std::uint32_t a[4];
#pragma unroll
        for (int reg = 0; reg < 4; ++reg) {
          const mma::RowCol at = mma::fragmentA16x16(lane, reg, 0);
          a[reg] = *reinterpret_cast<const std::uint32_t*>(&As[wm * 32 + mi * 16 + at.row][ks + at.col]);
        }
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          std::uint32_t b[2];
#pragma unroll
          for (int reg = 0; reg < 2; ++reg) {
            const mma::RowCol at = mma::fragmentB16x8(lane, reg, 0);  // (k, n)
            b[reg] = *reinterpret_cast<const std::uint32_t*>(&Bs[wn * 32 + ni * 8 + at.col][ks + at.row]);
          }
          mma::mmaM16N8K16<kBF16>(acc[mi][ni], a, b[0], b[1]);
        }
      }
    }
    __syncthreads();
  }
  for (int mi = 0; mi < 2; ++mi)
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const mma::RowCol at = mma::fragmentC16x8(lane, i);
        const std::int64_t row = m0 + wm * 32 + mi * 16 + at.row;
        const std::int64_t col = n0 + wn * 32 + ni * 8 + at.col;
        if (row < m && col < n) store(row, col, acc[mi][ni][i]);
      }
}

struct GemmLaunch {
  std::int64_t m, n, k;
  std::int64_t ldc;
  float* c;
  EpilogueTarget target;  // out set: the chains through the epilogue into target.out, c unused
};

template <class LoadB>
struct ProductArgs {
  GemmLaunch p;
  DenseA la;
  LoadB lb;
};

template <class LoadB>
__global__ void __launch_bounds__(kThreads) exactKernel(const ProductArgs<LoadB> a) {
  exactBlock(a.p.m, a.p.n, a.p.k, a.la, a.lb, ChainStore{a.p.c, a.p.ldc, a.p.n, a.p.target});
}
template <bool kBF16, class LoadB>
__global__ void __launch_bounds__(128) mmaKernel(const ProductArgs<LoadB> a) {
  mmaBlock<kBF16>(a.p.m, a.p.n, a.p.k, a.la, a.lb, ChainStore{a.p.c, a.p.ldc, a.p.n, a.p.target});
}

/// The product on the device: the exact SIMT kernel for F32 compute, matrix cores for BF16 / F16.
template <class LoadB>
void launchProduct(const Gpu& g, const char* function, DType compute, const ProductArgs<LoadB>& a) {
  if (a.p.m == 0 || a.p.n == 0) return;
  const std::int64_t tiles = ((a.p.m + 63) / 64) * ((a.p.n + 63) / 64);
  const unsigned blocks = detail::gridFor(tiles, 1);
  if (compute == DType::F32) detail::launch(g, function, exactKernel<LoadB>, detail::Grid{blocks, kThreads}, a);
  else if (compute == DType::BF16) detail::launch(g, function, mmaKernel<true, LoadB>, detail::Grid{blocks, 128}, a);
  else detail::launch(g, function, mmaKernel<false, LoadB>, detail::Grid{blocks, 128}, a);
}

// ---- epilogue and patches ---------------------------------------------------------------------------

__global__ void epilogueKernel(const EpilogueStore::Args a) {
  const std::int64_t idx = detail::globalThread();
  if (idx >= a.rows * a.cols) return;
  storeThroughEpilogue({a.e, a.out, a.outDType}, a.c[idx], idx / a.cols, idx % a.cols, a.cols);
}

__global__ void patchRowsKernel(const PatchRows::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e >= PatchRows::count(a)) return;
  const float v = PatchRows::element(a, e);
  if (a.dtype == DType::BF16) static_cast<std::uint16_t*>(a.out)[e] = exact::floatToBF16(v);
  else static_cast<float*>(a.out)[e] = v;
}

}  // namespace

void Gemm::cuda(const Gpu& g, const Args& a) {
  const ProductArgs<StridedB> p{{a.m, a.n, a.k, a.ldc, a.c, a.store}, DenseA{a.a, a.lda}, StridedB{a.b, a.bsN, a.bsK}};
  launchProduct(g, kName, a.compute, p);
}

void ConvProduct::cuda(const Gpu& g, const Args& a) {
  const std::int64_t oh = a.h + 2 * a.pad - a.kh + 1, ow = a.wd + 2 * a.pad - a.kw + 1, q = a.c * a.kh * a.kw;
  EpilogueTarget store = a.store;
  store.e.biasPerRow = true;  // a convolution's bias is per output channel
  const GemmLaunch p{a.o, oh * ow, q, oh * ow, a.out, store};
  auto run = [&](auto image) {
    using Patches = PatchB<decltype(image)>;
    launchProduct(g, kName, a.compute,
                  ProductArgs<Patches>{p, DenseA{a.w, q}, Patches{image, a.h, a.wd, a.kh, a.kw, a.pad, ow}});
  };
  if (a.xIsBF16) run(BF16Image{static_cast<const std::uint16_t*>(a.x)});
  else run(F32Image{static_cast<const float*>(a.x)});
}

void EpilogueStore::cuda(const Gpu& g, const Args& a) {
  if (a.rows * a.cols == 0) return;
  detail::launch(g, kName, epilogueKernel, detail::Grid::forItems(a.rows * a.cols), a);
}

void PatchRows::cuda(const Gpu& g, const Args& a) {
  if (count(a) == 0) return;
  detail::launch(g, kName, patchRowsKernel, detail::Grid::forItems(count(a)), a);
}

}  // namespace gizml::netops::gemm
