// attentionRows' fast path on a CUDA GPU (flash.hpp): flash attention on BF16 matrix cores
// (mma.sync m16n8k16, F32 accumulate), not exact: SPEC §3 "Attention" states its tolerance.
//
// A block of 4 warps takes a tile of 64 queries of one (group, head); each warp 16 of them. The
// keys of the group go by in tiles of 64, double-buffered: cp.async fills tile t + 1 (K and V, one
// commit group) while the warps compute tile t. Per tile:
//   S = Q Kᵀ       Q's fragments held in registers (ldmatrix once), K's by ldmatrix (Kᵀ's rows are
//                  K's rows: no .trans), F32 accumulators, then times F32(scale);
//   mask           only a Partial tile (the group's ragged last one), by flash_step.hpp;
//   online softmax each thread holds 2 query rows x 16 keys; the row's maximum over its quad of 4
//                  lanes (shuffles; a maximum is order-free), c = rescaleFactor, p = blockWeight,
//                  l = l c + this lane's p (the quad's partial sums are added once, at the end);
//   O = O c + P V  P's accumulators rounded to BF16 are the A operand as they lie in the registers
//                  (mma::accumulatorOfA16x16), V by ldmatrix .trans.
// Then out = finishOutput(O, l). Every register and shared-memory index goes through
// exact/mma_layout.hpp (the maps tests/mma_layout_test.cpp checks on the host); the softmax steps
// and masks are flash_step.hpp's (tests/flash_step_test.cpp). No float atomics: each output
// element is one thread's.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/convert.hpp"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"
#include "netops/attention/flash.hpp"
#include "netops/attention/flash_step.hpp"

namespace gizml::netops::attn {

namespace {

namespace mma = exact::mma;

constexpr int kBlockQ = 64, kBlockK = 64, kWarps = kBlockQ / 16, kThreads = 32 * kWarps;

/// Shared memory of the kernel for padded head D: Q [64][D], then K and V, two buffers each.
constexpr int flashSharedBytes(int d) { return (kBlockQ + 4 * kBlockK) * d * 2; }

// ---- pack: qkv into BF16 panels ---------------------------------------------------------------------

__global__ void packKernel(const FlashRows::Args a) {
  const std::int64_t total = 3 * a.heads * a.rows * a.dPad;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t idx = detail::globalThread(); idx < total; idx += step) {
    const std::int64_t c = idx % a.dPad, r = (idx / a.dPad) % a.rows;
    const std::int64_t unit = idx / (a.dPad * a.rows);  // part (q, k, v) * heads + head
    std::uint16_t v = 0;                               // pad columns: +0
    if (c < a.head) {
      const std::int64_t at = r * 3 * a.heads * a.head + unit * a.head + c;
      v = a.qkvBF16 ? static_cast<const std::uint16_t*>(a.qkv)[at]
                    : exact::floatToBF16(static_cast<const float*>(a.qkv)[at]);
    }
    a.panels[idx] = v;
  }
}

// ---- tiles and registers --------------------------------------------------------------------------

/// Rows [row0, row0 + 64) of a panel (rows of D BF16 values) into a swizzled shared tile [64][D] by
/// the cp.async chunk map; rows from rowsLeft on are zero-filled.
template <int D>
__device__ __forceinline__ void loadTile(std::uint16_t* tile, const std::uint16_t* panel, std::int64_t row0,
                                         std::int64_t rowsLeft, int tid) {
  constexpr int chunks = D / 8, steps = kBlockK * chunks / kThreads;
#pragma unroll
  for (int step = 0; step < steps; ++step) {
    const mma::Chunk c = mma::copyChunkOf(tid, step, kThreads, chunks);
    const bool in = c.row < rowsLeft;
    const std::uint16_t* src = panel + (in ? (row0 + c.row) * D + 8 * c.chunk : 0);
    // `in` false zero-fills the chunk (nothing read): rows past the group's end hold +0, so masked
    // keys meet V = 0, never NaN * 0.
    mma::copyChunk16(tile + mma::swizzledOffset(c.row, 8 * c.chunk, D), src, in);
  }
}

/// Two F32 values as one register of BF16 halves (element 0 in the low 16 bits).
__device__ __forceinline__ std::uint32_t packBF16(float lo, float hi) {
  return static_cast<std::uint32_t>(exact::floatToBF16(lo)) | (static_cast<std::uint32_t>(exact::floatToBF16(hi)) << 16);
}

// ---- the flash kernel --------------------------------------------------------------------------------

template <int D>
__global__ void __launch_bounds__(kThreads) flashKernel(const FlashRows::Args a) {
  extern __shared__ __align__(16) std::uint16_t shared[];
  std::uint16_t* const qTile = shared;                      // [64][D]
  std::uint16_t* const kTiles = shared + kBlockQ * D;       // 2 x [64][D]
  std::uint16_t* const vTiles = kTiles + 2 * kBlockK * D;   // 2 x [64][D]
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;

  // The block's (group, head, tile of queries); the group's queries are its rows below outRows.
  const std::int64_t qTiles = (a.group + kBlockQ - 1) / kBlockQ, block = blockIdx.x;
  const std::int64_t qt = block % qTiles, h = (block / qTiles) % a.heads, g = block / (qTiles * a.heads);
  const std::int64_t first = g * a.group;
  const std::int64_t tq = a.outRows - first < a.group ? a.outRows - first : a.group, tk = a.group;
  const std::int64_t i0 = qt * kBlockQ;
  if (i0 >= tq) return;  // the whole block: a tile of the last group past its queries
  const std::int64_t rowsHere = tq - i0 < kBlockQ ? tq - i0 : kBlockQ;

  const std::int64_t panel = a.rows * D;
  const std::uint16_t* const qPanel = a.panels + (0 * a.heads + h) * panel + first * D;
  const std::uint16_t* const kPanel = a.panels + (1 * a.heads + h) * panel + first * D;
  const std::uint16_t* const vPanel = a.panels + (2 * a.heads + h) * panel + first * D;

  loadTile<D>(qTile, qPanel, i0, tq - i0, tid);
  loadTile<D>(kTiles, kPanel, 0, tk, tid);
  loadTile<D>(vTiles, vPanel, 0, tk, tid);
  mma::commitCopies();

  std::uint32_t qFrag[D / 16][4];
  float acc[D / 8][4];
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nb][i] = 0.0f;
  OnlineRow state[2];  // this lane's rows: groupID (0) and groupID + 8 (1) of the warp's 16
  // The half (0, 1) of the warp's 16 rows that accumulator i of a C fragment lies in: its row less
  // the lane's groupID, so that it folds to a constant for a constant i (a register index, not a
  // local-memory one).
  auto rowHalf = [&](int i) { return (mma::fragmentC16x8(lane, i).row - mma::groupId(lane)) >> 3; };

  const std::int64_t nTiles = (tk + kBlockK - 1) / kBlockK;
  for (std::int64_t t = 0; t < nTiles; ++t) {
    const int buf = static_cast<int>(t & 1);
    if (t + 1 < nTiles) {
      const std::int64_t next = (t + 1) * kBlockK;
      loadTile<D>(kTiles + (buf ^ 1) * kBlockK * D, kPanel, next, tk - next, tid);
      loadTile<D>(vTiles + (buf ^ 1) * kBlockK * D, vPanel, next, tk - next, tid);
    }
    mma::commitCopies();  // always a group (maybe empty): wait_group 1 then means tile t has landed
    mma::waitCopies<1>();
    __syncthreads();

    if (t == 0) {
      const mma::RowCol at = mma::ldmatrixAddressA(lane);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        mma::ldmatrixX4<false>(qFrag[kk], qTile + mma::swizzledOffset(16 * warp + at.row, 16 * kk + at.col, D));
    }

    const std::int64_t j0 = t * kBlockK;
    const TileMask mask = tileMask(i0, rowsHere, j0, kBlockK, tq, tk, false);
    if (mask != TileMask::Empty) {
      const std::uint16_t* const kt = kTiles + buf * kBlockK * D;
      const std::uint16_t* const vt = vTiles + buf * kBlockK * D;

      // S = Q Kᵀ: 8 accumulator tiles of 16 queries x 8 keys.
      float s[kBlockK / 8][4];
#pragma unroll
      for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) s[nb][i] = 0.0f;
      const mma::RowCol kAt = mma::ldmatrixAddressB(lane);  // (key, channel)
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
        for (int nb = 0; nb < kBlockK / 16; ++nb) {
          std::uint32_t b[4];
          mma::ldmatrixX4<false>(b, kt + mma::swizzledOffset(16 * nb + kAt.row, 16 * kk + kAt.col, D));
          mma::mmaM16N8K16<true>(s[2 * nb], qFrag[kk], b[0], b[1]);
          mma::mmaM16N8K16<true>(s[2 * nb + 1], qFrag[kk], b[2], b[3]);
        }

      // The online softmax of this lane's two rows.
      float mNew[2] = {state[0].m, state[1].m};
#pragma unroll
      for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float v = s[nb][i] * a.scale;
          if (mask == TileMask::Partial) {
            const mma::RowCol at = mma::fragmentC16x8(lane, i);
            v = maskedScore(v, keyVisible(i0 + 16 * warp + at.row, j0 + 8 * nb + at.col, tq, tk, false));
          }
          s[nb][i] = v;
          mNew[rowHalf(i)] = runningMax(mNew[rowHalf(i)], v);
        }
      float c[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mNew[r] = runningMax(mNew[r], __shfl_xor_sync(0xffffffffu, mNew[r], 1));  // the quad holds the row
        mNew[r] = runningMax(mNew[r], __shfl_xor_sync(0xffffffffu, mNew[r], 2));
        c[r] = rescaleFactor(state[r].m, mNew[r]);
        state[r].m = mNew[r];
        state[r].l = state[r].l * c[r];
      }
#pragma unroll
      for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float p = blockWeight(s[nb][i], state[rowHalf(i)].m);
          state[rowHalf(i)].l = state[rowHalf(i)].l + p;
          s[nb][i] = p;
        }
#pragma unroll
      for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nb][i] = acc[nb][i] * c[rowHalf(i)];

      // O += P V, 16 keys a step: P's accumulators are the A operand in place.
      const mma::RowCol vAt = mma::ldmatrixTransAddressB(lane);  // (key, channel)
#pragma unroll
      for (int kk = 0; kk < kBlockK / 16; ++kk) {
        std::uint32_t pFrag[4];
#pragma unroll
        for (int reg = 0; reg < 4; ++reg) {
          const mma::TileAccumulator lo = mma::accumulatorOfA16x16(reg, 0), hi = mma::accumulatorOfA16x16(reg, 1);
          pFrag[reg] = packBF16(s[2 * kk + lo.tile][lo.i], s[2 * kk + hi.tile][hi.i]);
        }
#pragma unroll
        for (int nb = 0; nb < D / 16; ++nb) {
          std::uint32_t b[4];
          mma::ldmatrixX4<true>(b, vt + mma::swizzledOffset(16 * kk + vAt.row, 16 * nb + vAt.col, D));
          mma::mmaM16N8K16<true>(acc[2 * nb], pFrag, b[0], b[1]);
          mma::mmaM16N8K16<true>(acc[2 * nb + 1], pFrag, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the buffer just read is the one the next iteration fills
  }

  // l: the quad's four partial sums of each row.
  float l[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] = state[r].l;
    l[r] = l[r] + __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] = l[r] + __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  const std::int64_t width = a.heads * a.head;
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const mma::RowCol at = mma::fragmentC16x8(lane, i);
      const std::int64_t qi = i0 + 16 * warp + at.row, col = 8 * nb + at.col;
      if (qi >= tq || col >= a.head) continue;
      const float y = finishOutput(acc[nb][i], l[rowHalf(i)], visibleKeys(qi, tq, tk, false) > 0);
      const std::int64_t at1 = (first + qi) * width + h * a.head + col;
      if (a.outBF16) static_cast<std::uint16_t*>(a.out)[at1] = exact::floatToBF16(y);
      else static_cast<float*>(a.out)[at1] = y;
    }
}

template <int D>
void launchFlash(const Gpu& g, const FlashRows::Args& a) {
  const std::int64_t qTiles = (a.group + kBlockQ - 1) / kBlockQ;
  const std::int64_t groups = (a.outRows + a.group - 1) / a.group;  // those holding queries
  const unsigned blocks = detail::gridFor(qTiles * a.heads * groups, 1);
  detail::useDevice(g.device.index, FlashRows::kName);
  detail::cudaCheck(cudaFuncSetAttribute(flashKernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         flashSharedBytes(D)),
                    FlashRows::kName);
  flashKernel<D><<<blocks, kThreads, flashSharedBytes(D), detail::streamOf(g)>>>(a);
  detail::afterLaunch(g, FlashRows::kName);
}

}  // namespace

void FlashRows::pack(const Gpu& g, const Args& a) {
  const std::int64_t total = 3 * a.heads * a.rows * a.dPad;
  if (total == 0) return;
  const std::int64_t blocks = (total + 255) / 256;
  detail::launch(g, kName, packKernel, detail::Grid{static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20)), 256}, a);
}

void FlashRows::run(const Gpu& g, const Args& a) {
  if (a.outRows == 0) return;
  if (a.dPad == 64) launchFlash<64>(g, a);
  else launchFlash<128>(g, a);
}

}  // namespace gizml::netops::attn
