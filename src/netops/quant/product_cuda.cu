// int8RowsProduct on a CUDA GPU: INT8 matrix cores (mma.sync m16n8k32 .s8, int32 accumulators).
// An integer sum is exact in any order, so the tiles, the k steps and the instruction's own order
// inside give the host's sums, and int8ProductValue (product.hpp, shared with the host) the same
// F32 bits. A first, plain form, not measured on a GPU yet: a block of 128 threads (2 x 2 warps)
// a 64 x 64 tile of the output, k in steps of 64 codes through two buffers of shared memory
// (16-byte loads held in registers while the step before is multiplied; I4 codes widened to bytes
// as they are stored), no cp.async, no ldmatrix.
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

/// Four I4 codes as four signed bytes: nibbles from .. from + 3 of `word` (8 codes, low nibble
/// first), the first in the low byte.
__device__ __forceinline__ std::uint32_t widenedNibbles(std::uint32_t word, int from) {
  std::uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i)  // each value's low byte: its two's complement as a signed byte
    out |= (static_cast<std::uint32_t>(exact::i4Value(word >> (4 * (from + i)))) & 0xffu) << (8 * i);
  return out;
}

/// A thread's share of one operand's tile for a step of k, as read from memory: I8 two chunks of 16
/// codes, I4 one of 32 (16 bytes), zeros for rows past the operand's.
struct TileChunks {
  uint4 chunk[2];
};

/// Rows [r0, r0 + 64) of q's codes [k0, k0 + 64): this thread's chunks.
__device__ __forceinline__ TileChunks fetchTile(const void* q, Codes codes, std::int64_t rows, std::int64_t k,
                                                std::int64_t r0, std::int64_t k0) {
  TileChunks t{};
  const int tid = threadIdx.x;
  if (codes == Codes::I8) {
#pragma unroll
    for (int x = 0; x < 2; ++x) {  // 4 chunks a row
      const int e = tid + x * kThreads, r = e / 4, c = e % 4;
      if (r0 + r < rows)
        t.chunk[x] = *reinterpret_cast<const uint4*>(static_cast<const std::int8_t*>(q) + (r0 + r) * k + k0 + 16 * c);
    }
  } else {  // I4: 2 chunks a row
    const int r = tid / 2, c = tid % 2;
    if (r0 + r < rows)
      t.chunk[0] =
          *reinterpret_cast<const uint4*>(static_cast<const std::uint8_t*>(q) + ((r0 + r) * k + k0) / 2 + 16 * c);
  }
  return t;
}

/// The chunks of fetchTile into tile (I4's codes widened to bytes).
__device__ __forceinline__ void putTile(std::int8_t (*tile)[kRowBytes], const TileChunks& t, Codes codes) {
  const int tid = threadIdx.x;
  if (codes == Codes::I8) {
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int e = tid + x * kThreads, r = e / 4, c = e % 4;
      *reinterpret_cast<uint4*>(&tile[r][16 * c]) = t.chunk[x];
    }
  } else {
    const int r = tid / 2, c = tid % 2;
    const std::uint32_t words[4] = {t.chunk[0].x, t.chunk[0].y, t.chunk[0].z, t.chunk[0].w};
    std::uint32_t* to = reinterpret_cast<std::uint32_t*>(&tile[r][32 * c]);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      to[2 * w] = widenedNibbles(words[w], 0);
      to[2 * w + 1] = widenedNibbles(words[w], 4);
    }
  }
}

/// acc += this warp's 32 x 32 of As Bsᵀ over the step's 64 codes of k. The fragments by the PTX
/// maps (exact/mma_layout.hpp): a register's four bytes are k-adjacent in a row of As (of Bs: Bs
/// holds b's rows, k contiguous), one 32-bit load each.
__device__ __forceinline__ void multiplyStep(const std::int8_t (*As)[kRowBytes], const std::int8_t (*Bs)[kRowBytes],
                                             std::int32_t (&acc)[2][4][4]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
#pragma unroll
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
}

/// Two buffers of shared memory: while the matrix cores work on one step's tiles, the next step's
/// chunks are in flight from memory (in registers), then stored to the other buffer; one
/// __syncthreads a step.
__global__ void __launch_bounds__(kThreads) productKernel(const Int8RowsProduct::Args a) {
  __shared__ __align__(16) std::int8_t As[2][kTile][kRowBytes];
  __shared__ __align__(16) std::int8_t Bs[2][kTile][kRowBytes];
  const std::int64_t tilesN = (a.n + kTile - 1) / kTile;
  const std::int64_t m0 = blockIdx.x / tilesN * kTile, n0 = blockIdx.x % tilesN * kTile;
  std::int32_t acc[2][4][4] = {};
  TileChunks ta = fetchTile(a.a, a.aCodes, a.m, a.k, m0, 0), tb = fetchTile(a.b, a.bCodes, a.n, a.k, n0, 0);
  putTile(As[0], ta, a.aCodes);
  putTile(Bs[0], tb, a.bCodes);
  __syncthreads();
  int cur = 0;
  for (std::int64_t k0 = 0; k0 < a.k; k0 += kStepK) {
    const bool more = k0 + kStepK < a.k;
    if (more) {
      ta = fetchTile(a.a, a.aCodes, a.m, a.k, m0, k0 + kStepK);
      tb = fetchTile(a.b, a.bCodes, a.n, a.k, n0, k0 + kStepK);
    }
    multiplyStep(As[cur], Bs[cur], acc);
    if (more) {  // the other buffer was last read before the previous step's __syncthreads
      putTile(As[cur ^ 1], ta, a.aCodes);
      putTile(Bs[cur ^ 1], tb, a.bCodes);
    }
    __syncthreads();
    cur ^= 1;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  // Unrolled whole, so that acc stays in registers (indexed at run time it went to local memory).
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const mma::RowCol at = mma::fragmentC16x8(lane, i);
        const std::int64_t row = m0 + wm * 32 + mi * 16 + at.row, col = n0 + wn * 32 + ni * 8 + at.col;
        if (row < a.m && col < a.n)
          Int8RowsProduct::store(a, row, col, acc[mi][ni][i]);
      }
}

}  // namespace

void Int8RowsProduct::cuda(const Gpu& g, const Args& a) {
  if (a.m == 0 || a.n == 0) return;
  const std::int64_t tiles = ((a.m + kTile - 1) / kTile) * ((a.n + kTile - 1) / kTile);
  detail::launch(g, kName, productKernel, detail::Grid{detail::gridFor(tiles, 1), kThreads}, a);
}

}  // namespace gizml::netops::quant
