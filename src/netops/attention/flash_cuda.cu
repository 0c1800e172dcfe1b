// The fast GPU paths of attention (flash.hpp): flash attention on BF16 matrix cores (mma.sync
// m16n8k16, F32 accumulate), not exact: SPEC §3 "Attention" states its tolerance. One kernel
// template, flashKernel<D, FlashKeys>, serves attentionRows and crossAttentionRows (Groups) and
// neighborhood3d (Neighborhood); the two differ only in which keys a tile of queries meets and which
// (query, key) pairs are masked.
//
// A block of 4 warps takes a tile of 64 queries of one head (of one group); each warp 16 of them.
// The tile's keys go by in tiles of 64, double-buffered: cp.async fills tile t + 1 (K and V, one
// commit group) while the warps compute tile t. A key tile's rows are a group's consecutive rows, or
// (Neighborhood) the next 64 keys of the tile's box in raster order, each row gathered from where
// neighborhood_window.hpp puts it. Per tile:
//   S = Q Kᵀ       Q's fragments held in registers (ldmatrix once), K's by ldmatrix (Kᵀ's rows are
//                  K's rows: no .trans), F32 accumulators, then times F32(scale);
//   mask           Groups: only a Partial tile (the group's ragged last one), by flash_step.hpp;
//                  Neighborhood: every tile, each key against the query's window (a sub-box of the
//                  tile's box), and keys past the box's end, before S: a warp skips the products
//                  of the 16-key chunks none of its queries sees (most of a wide line's);
//   online softmax each thread holds 2 query rows x 16 keys; the row's maximum over its quad of 4
//                  lanes (shuffles; a maximum is order-free), c = rescaleFactor, p = blockWeight,
//                  l = l c + this lane's p (the quad's partial sums are added once, at the end);
//   O = O c + P V  P's accumulators rounded to BF16 are the A operand as they lie in the registers
//                  (mma::accumulatorOfA16x16), V by ldmatrix .trans.
// Then out = finishOutput(O, l). Every register and shared-memory index goes through
// exact/mma_layout.hpp (the maps tests/mma_layout_test.cpp checks on the host); the softmax steps
// and masks are flash_step.hpp's and the windows neighborhood_window.hpp's (tests/flash_step_test.cpp
// runs both tile loops on the host). No float atomics: each output element is one thread's.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/convert.hpp"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"
#include "netops/attention/flash.hpp"
#include "netops/attention/flash_step.hpp"
#include "netops/attention/flash_warp.cuh"

namespace gizml::netops::attn {

namespace {

namespace mma = exact::mma;

constexpr int kBlockQ = 64, kBlockK = 64, kWarps = kBlockQ / 16, kThreads = 32 * kWarps;

/// Shared memory of the kernel for padded head D: Q [64][D], then K and V, two buffers each.
constexpr int flashSharedBytes(int d) { return (kBlockQ + 4 * kBlockK) * d * 2; }

// ---- pack: rows into BF16 panels ------------------------------------------------------------------

__global__ void packKernel(const FlashPack a) {
  const std::int64_t total = a.units * a.rows * a.dPad;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t idx = detail::globalThread(); idx < total; idx += step) {
    const std::int64_t c = idx % a.dPad, r = (idx / a.dPad) % a.rows;
    const std::int64_t unit = idx / (a.dPad * a.rows);
    std::uint16_t v = 0;  // pad columns: +0
    if (c < a.head) {
      const std::int64_t at = r * a.rowStride + unit * a.head + c;
      v = a.srcBF16 ? static_cast<const std::uint16_t*>(a.src)[at]
                    : exact::floatToBF16(static_cast<const float*>(a.src)[at]);
    }
    a.panels[idx] = v;
  }
}

// ---- tiles and registers --------------------------------------------------------------------------

/// 64 rows of a panel (rows of D BF16 values) into a swizzled shared tile [64][D] by the cp.async
/// chunk map: tile row r is panel row rowOf(r), or zero-filled where rowOf(r) < 0.
template <int D, class RowOf>
__device__ __forceinline__ void loadTile(std::uint16_t* tile, const std::uint16_t* panel, RowOf rowOf, int tid) {
  constexpr int chunks = D / 8, steps = kBlockK * chunks / kThreads;
#pragma unroll
  for (int step = 0; step < steps; ++step) {
    const mma::Chunk c = mma::copyChunkOf(tid, step, kThreads, chunks);
    const std::int64_t row = rowOf(c.row);
    const bool in = row >= 0;
    const std::uint16_t* src = panel + (in ? row * D + 8 * c.chunk : 0);
    // `in` false zero-fills the chunk (nothing read): rows past the keys' end hold +0, so masked
    // keys there meet V = 0, never NaN * 0.
    mma::copyChunk16(tile + mma::swizzledOffset(c.row, 8 * c.chunk, D), src, in);
  }
}

/// What a Neighborhood block shares: its box of keys (tileBox), computed once by thread 0.
struct SharedBox {
  Box3 box;
  std::int64_t keys;  // boxSize
};

// ---- the flash kernel --------------------------------------------------------------------------------

// Launch bounds with a minimum of one block an SM: with the default, ptxas capped the Groups D = 64
// kernel at 128 registers and spilled a few; this lets it take ~168 (still 3 blocks an SM).
template <int D, FlashKeys kKeys>
__global__ void __launch_bounds__(kThreads, 1) flashKernel(const FlashParams a) {
  constexpr bool kBox = kKeys == FlashKeys::Neighborhood;
  GIZML_DYNAMIC_SHARED(std::uint16_t, shared);
  std::uint16_t* const qTile = shared;                      // [64][D]
  std::uint16_t* const kTiles = shared + kBlockQ * D;       // 2 x [64][D]
  std::uint16_t* const vTiles = kTiles + 2 * kBlockK * D;   // 2 x [64][D]
  __shared__ SharedBox sBox;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;

  // The block's (group, head, tile of queries). Groups: the group's queries are q's rows [first,
  // first + tq), its keys k's (and v's) rows [g kGroup, g kGroup + tk). Neighborhood: one group of
  // all the grid's rows; the tile's keys are its box's, tk of them.
  const std::int64_t qGroup = kBox ? a.queries : a.qGroup;
  const std::int64_t qTiles = (qGroup + kBlockQ - 1) / kBlockQ, block = blockIdx.x;
  const std::int64_t qt = block % qTiles, h = (block / qTiles) % a.heads, g = block / (qTiles * a.heads);
  const std::int64_t first = g * qGroup;
  const std::int64_t tq = a.queries - first < qGroup ? a.queries - first : qGroup;
  const std::int64_t i0 = qt * kBlockQ;
  if (i0 >= tq) return;  // the whole block: a tile of the last group past its queries
  const std::int64_t rowsHere = tq - i0 < kBlockQ ? tq - i0 : kBlockQ;
  if constexpr (kBox) {
    if (tid == 0) {
      sBox.box = tileBox(a.grid, i0, rowsHere);
      sBox.keys = boxSize(sBox.box);
    }
    __syncthreads();
  }
  const std::int64_t tk = kBox ? sBox.keys : a.kGroup;

  const std::uint16_t* const qPanel = a.q + h * a.qHead + first * D;
  const std::uint16_t* const kPanel = a.k + h * a.kvHead + g * a.kGroup * D;  // Neighborhood: g = 0
  const std::uint16_t* const vPanel = a.v + h * a.kvHead + g * a.kGroup * D;

  // The panel row of key j of the block's keys, or -1 past them.
  auto keyRow = [=](std::int64_t j) -> std::int64_t {
    if (j >= tk) return -1;
    if constexpr (kBox) {
      const Box3 box = sBox.box;
      unsigned at[3];
      boxOffsets(static_cast<unsigned>(j), static_cast<unsigned>(box.axis[2].length),
                 static_cast<unsigned>(box.axis[1].length), at);
      return rowOf(a.grid, Pos3{{box.axis[0].start + at[0], box.axis[1].start + at[1], box.axis[2].start + at[2]}});
    } else {
      return j;
    }
  };
  auto loadKeys = [=](int buf, std::int64_t j0) {
    loadTile<D>(kTiles + buf * kBlockK * D, kPanel, [=](int r) { return keyRow(j0 + r); }, tid);
    loadTile<D>(vTiles + buf * kBlockK * D, vPanel, [=](int r) { return keyRow(j0 + r); }, tid);
  };

  loadTile<D>(qTile, qPanel, [=](int r) -> std::int64_t { return r < rowsHere ? i0 + r : -1; }, tid);
  loadKeys(0, 0);
  mma::commitCopies();

  std::uint32_t qFrag[D / 16][4];
  float acc[D / 8][4];
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nb][i] = 0.0f;
  OnlineRow state[2];  // this lane's rows: groupID (0) and groupID + 8 (1) of the warp's 16
  auto rowHalf = [&](int i) { return rowHalfOf(lane, i); };  // the row half of accumulator i (flash_warp.cuh)

  // Neighborhood: this lane's two queries' windows as offsets from the box's start (32 bits: the
  // host checks the rows below 2^31); a row past the queries sees no key.
  int winStart[2][3] = {};
  if constexpr (kBox) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::int64_t qi = i0 + 16 * warp + mma::groupId(lane) + 8 * r;
      windowOffsets(a.grid, sBox.box, qi < tq ? qi : i0, qi < tq, winStart[r]);
    }
  }

  const std::int64_t nTiles = (tk + kBlockK - 1) / kBlockK;
  for (std::int64_t t = 0; t < nTiles; ++t) {
    const int buf = static_cast<int>(t & 1);
    if (t + 1 < nTiles) loadKeys(buf ^ 1, (t + 1) * kBlockK);
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
    const TileMask mask = kBox ? TileMask::Partial : tileMask(i0, rowsHere, j0, kBlockK, tq, tk, false);
    if (mask != TileMask::Empty) {
      const std::uint16_t* const kt = kTiles + buf * kBlockK * D;
      const std::uint16_t* const vt = vTiles + buf * kBlockK * D;

      // Neighborhood: which of this lane's 32 scores count (bit 4 nb + i: accumulator i of the 8
      // keys nb), and which 16-key chunks of the tile some query of the warp sees (bit c). The warp
      // skips the products of the others, whose weights would all be +0: on lines wider than a
      // tile's box needs, a warp's 16 queries see only a few of a line's chunks. __any_sync makes the
      // choice the whole warp's, as mma.sync and ldmatrix need.
      std::uint32_t seenBits = 0, chunks = (1u << (kBlockK / 16)) - 1;
      if constexpr (kBox) {
        const Box3 box = sBox.box;
#pragma unroll
        for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const std::int64_t j = j0 + 8 * nb + mma::fragmentC16x8(lane, i).col;
            unsigned at[3];
            boxOffsets(static_cast<unsigned>(j), static_cast<unsigned>(box.axis[2].length),
                       static_cast<unsigned>(box.axis[1].length), at);
            if (j < tk && windowsHoldOffsets(a.grid, winStart[rowHalf(i)], at)) seenBits |= 1u << (4 * nb + i);
          }
        chunks = 0;
#pragma unroll
        for (int c = 0; c < kBlockK / 16; ++c)
          if (__any_sync(0xffffffffu, (seenBits >> (8 * c)) & 0xffu)) chunks |= 1u << c;
      }

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
          if (!((chunks >> nb) & 1u)) continue;  // Groups: never (every chunk's bit is set)
          std::uint32_t b[4];
          mma::ldmatrixX4<false>(b, kt + mma::swizzledOffset(16 * nb + kAt.row, 16 * kk + kAt.col, D));
          mma::mmaM16N8K16<true>(s[2 * nb], qFrag[kk], b[0], b[1]);
          mma::mmaM16N8K16<true>(s[2 * nb + 1], qFrag[kk], b[2], b[3]);
        }

      // The scores, masked: Groups by flash_step.hpp's visibility, Neighborhood by the windows.
#pragma unroll
      for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float v = s[nb][i] * a.scale;
          if (mask == TileMask::Partial) {
            const mma::RowCol rc = mma::fragmentC16x8(lane, i);
            bool seen;
            if constexpr (kBox) seen = (seenBits >> (4 * nb + i)) & 1u;
            else seen = keyVisible(i0 + 16 * warp + rc.row, j0 + 8 * nb + rc.col, tq, tk, false);
            v = maskedScore(v, seen);
          }
          s[nb][i] = v;
        }
      float c[2];
      softmaxTile(s, state, c, lane);
#pragma unroll
      for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nb][i] = acc[nb][i] * c[rowHalf(i)];

      // O += P V, 16 keys a step: P's accumulators are the A operand in place.
      const mma::RowCol vAt = mma::ldmatrixTransAddressB(lane);  // (key, channel)
#pragma unroll
      for (int kk = 0; kk < kBlockK / 16; ++kk) {
        if (!((chunks >> kk) & 1u)) continue;  // the chunk's weights are all +0
        std::uint32_t pFrag[4];
#pragma unroll
        for (int reg = 0; reg < 4; ++reg) {
          const mma::TileAccumulator lo = mma::accumulatorOfA16x16(reg, 0), hi = mma::accumulatorOfA16x16(reg, 1);
          pFrag[reg] = exact::packBF16(s[2 * kk + lo.tile][lo.i], s[2 * kk + hi.tile][hi.i]);
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

  if (nTiles == 0) mma::waitCopies<0>();  // no keys (cross attention with nk = 0): no copy left in flight

  // l: the quad's four partial sums of each row.
  float l[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] = mma::quadSum(state[r].l);
  const std::int64_t width = a.heads * a.head;
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const mma::RowCol at = mma::fragmentC16x8(lane, i);
      const std::int64_t qi = i0 + 16 * warp + at.row, col = 8 * nb + at.col;
      if (qi >= tq || col >= a.head) continue;
      // A neighborhood's query always sees its own position; a group's sees its tk keys.
      const bool seesAny = kBox || visibleKeys(qi, tq, tk, false) > 0;
      const float y = finishOutput(acc[nb][i], l[rowHalf(i)], seesAny);
      const std::int64_t at1 = (first + qi) * width + h * a.head + col;
      if (a.outBF16) static_cast<std::uint16_t*>(a.out)[at1] = exact::floatToBF16(y);
      else static_cast<float*>(a.out)[at1] = y;
    }
}

template <int D, FlashKeys kKeys>
void launchFlash(const Gpu& g, const char* fn, const FlashParams& a) {
  const std::int64_t qGroup = kKeys == FlashKeys::Neighborhood ? a.queries : a.qGroup;
  const std::int64_t qTiles = (qGroup + kBlockQ - 1) / kBlockQ;
  const std::int64_t groups = (a.queries + qGroup - 1) / qGroup;  // those holding queries
  const unsigned blocks = detail::gridFor(qTiles * a.heads * groups, 1);
  detail::useDevice(g.device.index, fn);
  detail::cudaCheck(cudaFuncSetAttribute(flashKernel<D, kKeys>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         flashSharedBytes(D)),
                    fn);
  GIZML_LAUNCH(blocks, kThreads, flashSharedBytes(D), detail::streamOf(g), flashKernel<D, kKeys>)(a);
  detail::afterLaunch(g, fn);
}

template <FlashKeys kKeys>
void launchFlashKeys(const Gpu& g, const char* fn, const FlashParams& a) {
  if (a.dPad == 64) launchFlash<64, kKeys>(g, fn, a);
  else launchFlash<128, kKeys>(g, fn, a);
}

}  // namespace

void flashPack(const Gpu& g, const char* fn, const FlashPack& a) {
  const std::int64_t total = a.units * a.rows * a.dPad;
  if (total == 0) return;
  const std::int64_t blocks = (total + 255) / 256;
  detail::launch(g, fn, packKernel, detail::Grid{detail::stridingBlocks(blocks), 256}, a);
}

void flashRun(const Gpu& g, const char* fn, FlashKeys keys, const FlashParams& a) {
  if (a.queries == 0) return;
  if (keys == FlashKeys::Groups) launchFlashKeys<FlashKeys::Groups>(g, fn, a);
  else launchFlashKeys<FlashKeys::Neighborhood>(g, fn, a);
}

void FlashRows::pack(const Gpu& g, const Args& a) {
  flashPack(g, kName,
            FlashPack{.src = a.qkv,
                      .srcBF16 = a.qkvBF16,
                      .panels = a.panels,
                      .rows = a.rows,
                      .units = 3 * a.heads,
                      .head = a.head,
                      .dPad = a.dPad,
                      .rowStride = 3 * a.heads * a.head});
}

void FlashRows::run(const Gpu& g, const Args& a) {
  const std::int64_t panel = a.heads * a.rows * a.dPad;  // one part (q, k or v) of all heads
  flashRun(g, kName, FlashKeys::Groups,
           FlashParams{.q = a.panels,
                       .k = a.panels + panel,
                       .v = a.panels + 2 * panel,
                       .qHead = a.rows * a.dPad,
                       .kvHead = a.rows * a.dPad,
                       .out = a.out,
                       .outBF16 = a.outBF16,
                       .heads = a.heads,
                       .head = a.head,
                       .dPad = a.dPad,
                       .queries = a.outRows,
                       .qGroup = a.group,
                       .kGroup = a.group,
                       .grid = {},
                       .scale = a.scale});
}

}  // namespace gizml::netops::attn
