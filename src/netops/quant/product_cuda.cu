// int8RowsProduct on a CUDA GPU: INT8 matrix cores (mma.sync m16n8k32 .s8, int32 accumulators).
// An integer sum is exact in any order, so the tiles, the k steps and the instruction's own order
// inside give the host's sums, and int8ProductValue (product.hpp, shared with the host) the same
// F32 bits. A first, plain form, not measured on a GPU yet: a block of 128 threads (2 x 2 warps)
// a 64 x 64 tile of the output, k in steps of 64 codes through shared memory (16-byte loads, I4
// codes widened to bytes as they are stored there), one buffer, no cp.async.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"
#include "netops/quant/product.hpp"

namespace gizml::netops::quant {

namespace {

namespace mma = exact::mma;

constexpr int kTile = 64, kStepK = 64, kThreads = 128;
constexpr int kRowBytes = kStepK + 16;  // +16: a warp's fragment loads (8 rows, 4 words) fall on 32 banks

/// The 4 bytes of codes c .. c + 3 of an I4 byte pair's nibbles, as signed bytes: the nibbles of
/// `word` (8 codes, low nibble first) from nibble `from`.
__device__ __forceinline__ std::uint32_t widenedNibbles(std::uint32_t word, int from) {
  std::uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t nibble = (word >> (4 * (from + i))) & 15u;
    out |= ((nibble ^ 8u) - 8u & 0xffu) << (8 * i);  // the nibble's two's complement, as a byte
  }
  return out;
}

/// Rows [r0, r0 + 64) of codes, codes [k0, k0 + 64), into tile (zeros past `rows`).
__device__ __forceinline__ void loadTile(std::int8_t (*tile)[kRowBytes], const void* q, Codes codes, std::int64_t rows,
                                         std::int64_t k, std::int64_t r0, std::int64_t k0) {
  const int tid = threadIdx.x;
  if (codes == Codes::I8) {
    for (int e = tid; e < kTile * (kStepK / 16); e += kThreads) {  // 4 chunks of 16 codes a row
      const int r = e / 4, c = e % 4;
      uint4 v = {0, 0, 0, 0};
      if (r0 + r < rows) v = *reinterpret_cast<const uint4*>(static_cast<const std::int8_t*>(q) + (r0 + r) * k + k0 + 16 * c);
      *reinterpret_cast<uint4*>(&tile[r][16 * c]) = v;
    }
  } else {  // I4: 2 chunks of 32 codes (16 bytes) a row, each widened to 32 bytes
    for (int e = tid; e < kTile * (kStepK / 32); e += kThreads) {
      const int r = e / 2, c = e % 2;
      uint4 v = {0, 0, 0, 0};
      if (r0 + r < rows)
        v = *reinterpret_cast<const uint4*>(static_cast<const std::uint8_t*>(q) + ((r0 + r) * k + k0) / 2 + 16 * c);
      const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
      std::uint32_t* to = reinterpret_cast<std::uint32_t*>(&tile[r][32 * c]);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        to[2 * w] = widenedNibbles(words[w], 0);
        to[2 * w + 1] = widenedNibbles(words[w], 4);
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads) productKernel(const Int8RowsProduct::Args a) {
  __shared__ __align__(16) std::int8_t As[kTile][kRowBytes];
  __shared__ __align__(16) std::int8_t Bs[kTile][kRowBytes];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  const std::int64_t tilesN = (a.n + kTile - 1) / kTile;
  const std::int64_t m0 = blockIdx.x / tilesN * kTile, n0 = blockIdx.x % tilesN * kTile;
  std::int32_t acc[2][4][4] = {};
  for (std::int64_t k0 = 0; k0 < a.k; k0 += kStepK) {
    loadTile(As, a.a, a.aCodes, a.m, a.k, m0, k0);
    loadTile(Bs, a.b, a.bCodes, a.n, a.k, n0, k0);
    __syncthreads();
    // The fragments by the PTX maps (exact/mma_layout.hpp): a register's four bytes are
    // k-adjacent in a row of As (of Bs: Bs holds b's rows, k contiguous), one 32-bit load each.
    for (int ks = 0; ks < kStepK; ks += 32) {
      std::uint32_t b[4][2];
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int reg = 0; reg < 2; ++reg) {
          const mma::RowCol at = mma::fragmentB32x8(lane, reg, 0);  // (k, n)
          b[ni][reg] = *reinterpret_cast<const std::uint32_t*>(&Bs[wn * 32 + ni * 8 + at.col][ks + at.row]);
        }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        std::uint32_t fa[4];
#pragma unroll
        for (int reg = 0; reg < 4; ++reg) {
          const mma::RowCol at = mma::fragmentA16x32(lane, reg, 0);
          fa[reg] = *reinterpret_cast<const std::uint32_t*>(&As[wm * 32 + mi * 16 + at.row][ks + at.col]);
        }
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma::mmaM16N8K32S8(acc[mi][ni], fa, b[ni][0], b[ni][1]);
      }
    }
    __syncthreads();
  }
  for (int mi = 0; mi < 2; ++mi)
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const mma::RowCol at = mma::fragmentC16x8(lane, i);
        const std::int64_t row = m0 + wm * 32 + mi * 16 + at.row, col = n0 + wn * 32 + ni * 8 + at.col;
        if (row < a.m && col < a.n) a.out[row * a.n + col] = int8ProductValue(acc[mi][ni][i], a.sa[row], a.sb[col]);
      }
}

}  // namespace

void Int8RowsProduct::cuda(const Gpu& g, const Args& a) {
  if (a.m == 0 || a.n == 0) return;
  const std::int64_t tiles = ((a.m + kTile - 1) / kTile) * ((a.n + kTile - 1) / kTile);
  detail::launch(g, kName, productKernel, detail::Grid{detail::gridFor(tiles, 1), kThreads}, a);
}

}  // namespace gizml::netops::quant
