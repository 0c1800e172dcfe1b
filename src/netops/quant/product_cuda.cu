// int8RowsProduct on a CUDA GPU. An integer sum is exact in any order, so how the work is cut (tiles,
// k steps, lanes, the matrix instruction's own order inside) changes no bit: every form gives the
// host's sums, and int8ProductValue (product.hpp, shared with the host) the same F32 bits. Three
// forms, none measured on a GPU yet:
// - few rows of a (decoding: a token, or a few sequences' tokens; at most kMostDotRows): dot
//   products, a warp for each of b's rows, read once as it is stored with 16-byte loads (a product
//   of one row is a read of the weights, bound by memory), against a's few rows through the L1; 4
//   codes a dp4a, each lane's sums then added across the warp by shuffles;
// - more rows, I8 codes in a and I8 or I4 in b (W8A8, W4A8): INT8 matrix cores (mma.sync m16n8k32
//   .s8, int32 accumulators), tiles of 128 (or 64) x 128 through shared memory by cp.async as
//   stored, 4 steps of k in flight, fragments by ldmatrix (b's I4 ones by 16-bit loads, widened);
// - more rows with I4 codes in a: the same matrix cores on 64 x 64 tiles, the codes loaded into
//   registers and widened to bytes as they are stored to shared memory.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "core/cuda_row_blocks.cuh"
#include "core/cuda_rows.cuh"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"
#include "netops/quant/product.hpp"

namespace gizml::netops::quant {

namespace {

namespace mma = exact::mma;

// ---- Few rows: dot products -------------------------------------------------------------------

/// The most rows of a that take the dot form: a lane holds a sum for each. Above it the matrix
/// cores' 64-row tiles waste less than the dot form's reads of a cost (a guess, as the host's
/// AVX-512 threshold; not measured on a GPU).
constexpr int kMostDotRows = 8;
constexpr int kDotWarps = 8;   // a block's warps, each one of b's rows at a time
constexpr int kDotAhead = 4;   // a lane's steps of 32 codes of b in flight at once

/// 32 codes of a row as read from memory: I8 two 16-byte chunks, I4 one (its second unused).
struct RawCodes32 {
  uint4 chunk[2];
};
/// 32 codes as signed bytes in order, four a word (the first in a word's low byte).
struct Codes32 {
  std::uint32_t word[8];
};

/// Codes p .. p + 31 of a row of codes (p a multiple of 32), as stored.
__device__ __forceinline__ RawCodes32 loadCodes32(const void* row, Codes codes, std::int64_t p) {
  RawCodes32 r{};
  if (codes == Codes::I8) {
    const uint4* at = reinterpret_cast<const uint4*>(static_cast<const std::int8_t*>(row) + p);
    r.chunk[0] = at[0];
    r.chunk[1] = at[1];
  } else {
    r.chunk[0] = *reinterpret_cast<const uint4*>(static_cast<const std::uint8_t*>(row) + p / 2);
  }
  return r;
}

/// Four bytes each holding a 4-bit two's-complement code in its low nibble, sign-extended to
/// signed bytes: bit 3 of each byte copied to bits 4 - 7 (8 * 0x1e = 0xf0: no carry between bytes).
__device__ __forceinline__ std::uint32_t signedNibbleBytes(std::uint32_t v) { return v | ((v & 0x08080808u) * 0x1eu); }

/// The 8 I4 codes of `word` (low nibble first) as signed bytes in order, codes 0 - 3 in `first`,
/// 4 - 7 in `second`: the low nibbles are the even codes, the high nibbles the odd, interleaved
/// again by byte permutes.
__device__ __forceinline__ void widenNibbleWord(std::uint32_t word, std::uint32_t& first, std::uint32_t& second) {
  const std::uint32_t even = signedNibbleBytes(word & 0x0f0f0f0fu), odd = signedNibbleBytes((word >> 4) & 0x0f0f0f0fu);
  first = __byte_perm(even, odd, 0x5140);   // bytes: even's 0, odd's 0, even's 1, odd's 1
  second = __byte_perm(even, odd, 0x7362);  // even's 2, odd's 2, even's 3, odd's 3
}

/// The 32 codes of r as signed bytes in order.
__device__ __forceinline__ Codes32 widenCodes32(const RawCodes32& r, Codes codes) {
  Codes32 c;
  if (codes == Codes::I8) {
    const uint4 lo = r.chunk[0], hi = r.chunk[1];
    const std::uint32_t words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) c.word[i] = words[i];
  } else {
    const std::uint32_t words[4] = {r.chunk[0].x, r.chunk[0].y, r.chunk[0].z, r.chunk[0].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) widenNibbleWord(words[i], c.word[2 * i], c.word[2 * i + 1]);
  }
  return c;
}

/// out[i, col] for i < a.m <= kRows, a warp for each column col (b's row): its lanes take b's row
/// 32 codes at a time (lane l codes 32 l .. 32 l + 31, then 32 (l + 32) ..: a warp's loads are one
/// contiguous KiB of I8 codes), kDotAhead of them loaded before any is used; a's codes at the same
/// place from every row (a few KiB, read by every warp: the L1 keeps them). Each lane's sums are
/// added across the warp by shuffles, then lane i stores row i.
template <int kRows>
__global__ void __launch_bounds__(kDotWarps * 32) dotKernel(const Int8RowsProduct::Args a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kDotWarps + threadIdx.x / 32;
  if (col >= a.n) return;  // the whole warp
  const std::int64_t steps = a.k / 32, aRowBytes = codeRowBytes(a.aCodes, a.k);
  const void* bRow = static_cast<const std::uint8_t*>(a.b) + col * codeRowBytes(a.bCodes, a.k);
  std::int32_t sum[kRows] = {};
  for (std::int64_t first = lane; first < steps; first += 32 * kDotAhead) {
    RawCodes32 raw[kDotAhead];
#pragma unroll
    for (int u = 0; u < kDotAhead; ++u)
      if (first + 32 * u < steps) raw[u] = loadCodes32(bRow, a.bCodes, 32 * (first + 32 * u));
#pragma unroll
    for (int u = 0; u < kDotAhead; ++u) {
      const std::int64_t p = 32 * (first + 32 * u);
      if (p >= a.k) break;
      const Codes32 b = widenCodes32(raw[u], a.bCodes);
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        if (i >= a.m) break;
        const void* aRow = static_cast<const std::uint8_t*>(a.a) + i * aRowBytes;
        const Codes32 x = widenCodes32(loadCodes32(aRow, a.aCodes, p), a.aCodes);
#pragma unroll
        for (int w = 0; w < 8; ++w)
          sum[i] = __dp4a(static_cast<int>(x.word[w]), static_cast<int>(b.word[w]), sum[i]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
#pragma unroll
    for (int apart = 16; apart > 0; apart /= 2) sum[i] += __shfl_xor_sync(0xffffffffu, sum[i], apart);
    if (i < a.m && lane == i) Int8RowsProduct::store(a, i, col, sum[i]);
  }
}

// ---- More rows: matrix cores -------------------------------------------------------------------

constexpr int kStepK = 64;  // codes of k a step through shared memory

/// Stores a warp's tile of out from its accumulators: kMi x 4 fragments of 16 x 8 (mma's C map),
/// the first at (row0, col0), each sum through Int8RowsProduct::store (the host's formula). Unrolled
/// whole, so that acc stays in registers (indexed at run time it went to local memory).
template <int kMi>
__device__ __forceinline__ void storeWarpTile(const Int8RowsProduct::Args& a, const std::int32_t (&acc)[kMi][4][4],
                                              std::int64_t row0, std::int64_t col0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const mma::RowCol at = mma::fragmentC16x8(lane, i);
        const std::int64_t row = row0 + mi * 16 + at.row, col = col0 + ni * 8 + at.col;
        if (row < a.m && col < a.n) Int8RowsProduct::store(a, row, col, acc[mi][ni][i]);
      }
}

// I8 codes in a, I8 or I4 in b (a W8A8 or W4A8 layer): the tiles go from memory to shared memory by
// cp.async, kPipeStages steps of k in flight, as they are stored (b's I4 codes two a byte). A block
// of 8 warps (2 along m x 4 along n) takes a tile of kRowsM x 128 of out, each warp kRowsM / 2 x 32.
// a's fragments come by ldmatrix; b's I8 fragments too, its I4 ones by two 16-bit loads (the 4 codes
// of a register, which ldmatrix cannot hand a lane from a tile of nibbles), widened in registers.
// Per 32 codes of k: kRowsM / 32 ldmatrix.x4 for a, 2 for b (or 8 16-bit loads), 4 kRowsM / 32
// mma. kRowsM is 128 where the 128-row tiles are enough to give every multiprocessor one, else 64
// (a guess, not measured).

constexpr int kPipeN = 128, kPipeThreads = 256, kPipeStages = 4;

/// The bytes of a tile row for a step of k: kStepK codes, I8 or (kNibbles) I4.
template <bool kNibbles>
constexpr int kTileRowBytes = kNibbles ? kStepK / 2 : kStepK;

/// A stage of a pipelined block's shared memory: a's tile, then b's.
template <int kRowsM, bool kNibblesB>
constexpr int kStageBytes = kRowsM * kTileRowBytes<false> + kPipeN * kTileRowBytes<kNibblesB>;
/// A pipelined block's dynamic shared memory: kPipeStages stages.
template <int kRowsM, bool kNibblesB>
constexpr std::size_t kPipeSharedBytes = static_cast<std::size_t>(kPipeStages) * kStageBytes<kRowsM, kNibblesB>;

/// Where byte `col` of row `row` of a tile with rows of kRowBytes lies, its 16-byte chunks swizzled
/// (mma::swizzledChunk: two rows of 4 chunks, or four of 2, a 128-byte line) so that 8 consecutive
/// rows' chunk (an ldmatrix phase; I4: the 16-bit loads of a fragment, 8 of a row's bytes) and a
/// cp.async phase (8 consecutive chunks) each meet every bank once.
template <int kRowBytes>
__device__ __forceinline__ int pipeOffset(int row, int col) {
  return row * kRowBytes + 16 * mma::swizzledChunk(row, col / 16, kRowBytes / 16) + col % 16;
}

/// cp.async of rows [r0, r0 + kRows) of q (rows of `stride` bytes), bytes [b0, b0 + kRowBytes)
/// of each, into tile; rows past the operand's `rows` zero-filled (nothing read).
template <int kRows, int kRowBytes>
__device__ __forceinline__ void copyTile(std::uint8_t* tile, const std::uint8_t* q, std::int64_t rows,
                                         std::int64_t stride, std::int64_t r0, std::int64_t b0) {
  constexpr int kChunks = kRowBytes / 16;
#pragma unroll
  for (int step = 0; step < kRows * kChunks / kPipeThreads; ++step) {
    const mma::Chunk c = mma::copyChunkOf(static_cast<int>(threadIdx.x), step, kPipeThreads, kChunks);
    const bool in = r0 + c.row < rows;
    const std::uint8_t* src = in ? q + (r0 + c.row) * stride + b0 + 16 * c.chunk : q;
    mma::copyChunk16(tile + pipeOffset<kRowBytes>(c.row, 16 * c.chunk), src, in);
  }
}

/// The four I4 codes of a 16-bit load (low nibble first) as signed bytes in order: widenNibbleWord's
/// first word (its second, of the zero high bits, is left unused and not computed).
__device__ __forceinline__ std::uint32_t widenNibblePair(std::uint32_t half) {
  std::uint32_t first, unused;
  widenNibbleWord(half, first, unused);
  return first;
}

/// acc += this warp's kRowsM / 2 x 32 of As Bsᵀ over a step's kStepK codes. ldmatrix reads the byte
/// tiles as 16-bit pairs: a register's 4 bytes are then k-adjacent, as m16n8k32 .s8 wants
/// (mma::ldmatrixAddressA / B, checked against the fragment maps by mma_layout_test). From a tile of
/// nibbles, register r of a column's B fragment (codes 4 t + 16 r .. + 3 of the 32, t the lane's
/// threadInGroup: mma::fragmentB32x8) is the 16 bits at byte 2 t + 8 r of its row's 16.
template <int kMi, bool kNibblesB>
__device__ __forceinline__ void multiplyPipelined(const std::uint8_t* As, const std::uint8_t* Bs,
                                                  std::int32_t (&acc)[kMi][4][4]) {
  constexpr int kRowA = kTileRowBytes<false>, kRowB = kTileRowBytes<kNibblesB>;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
  const mma::RowCol atA = mma::ldmatrixAddressA(lane), atB = mma::ldmatrixAddressB(lane);
  const auto pairs = [](const std::uint8_t* p) { return reinterpret_cast<const std::uint16_t*>(p); };
#pragma unroll
  for (int ks = 0; ks < kStepK; ks += 32) {
    std::uint32_t b[4][2];
    if constexpr (kNibblesB) {
      const mma::RowCol at = mma::fragmentB32x8(lane, 0, 0);  // (k, n): k = 4 t
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int reg = 0; reg < 2; ++reg) {
          const int byte = (ks + at.row + 16 * reg) / 2;
          b[ni][reg] = widenNibblePair(*pairs(Bs + pipeOffset<kRowB>(wn * 32 + ni * 8 + at.col, byte)));
        }
    } else {
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // columns 16 half .. 16 half + 15 of the warp's 32
        std::uint32_t r[4];
        mma::ldmatrixX4<false>(r, pairs(Bs + pipeOffset<kRowB>(wn * 32 + 16 * half + atB.row, ks + 2 * atB.col)));
        b[2 * half][0] = r[0];
        b[2 * half][1] = r[1];
        b[2 * half + 1][0] = r[2];
        b[2 * half + 1][1] = r[3];
      }
    }
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi) {
      std::uint32_t fa[4];
      mma::ldmatrixX4<false>(fa, pairs(As + pipeOffset<kRowA>(wm * kMi * 16 + mi * 16 + atA.row, ks + 2 * atA.col)));
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) mma::mmaM16N8K32S8(acc[mi][ni], fa, b[ni][0], b[ni][1]);
    }
  }
}

/// Step t's tiles are copied while steps t - kPipeStages + 1 .. t - 1 are multiplied: a commit
/// group a step (empty past the last), so that waiting for all but kPipeStages - 2 groups means
/// step t has landed; one __syncthreads a step, after which the stage of step t - 1 is free again.
template <int kRowsM, bool kNibblesB>
__global__ void __launch_bounds__(kPipeThreads, 2) pipelinedKernel(const Int8RowsProduct::Args a) {
  constexpr int kMi = kRowsM / 32, kRowA = kTileRowBytes<false>, kRowB = kTileRowBytes<kNibblesB>;
  GIZML_DYNAMIC_SHARED(std::uint8_t, shared);
  const auto tileA = [&](std::int64_t t) { return shared + (t % kPipeStages) * kStageBytes<kRowsM, kNibblesB>; };
  const auto tileB = [&](std::int64_t t) { return tileA(t) + kRowsM * kRowA; };
  const std::int64_t tilesN = (a.n + kPipeN - 1) / kPipeN, steps = a.k / kStepK;
  const std::int64_t m0 = blockIdx.x / tilesN * kRowsM, n0 = blockIdx.x % tilesN * kPipeN;
  const auto* qa = static_cast<const std::uint8_t*>(a.a);
  const auto* qb = static_cast<const std::uint8_t*>(a.b);
  const std::int64_t strideB = codeRowBytes(kNibblesB ? Codes::I4 : Codes::I8, a.k);
  const auto copyStep = [&](std::int64_t t) {
    copyTile<kRowsM, kRowA>(tileA(t), qa, a.m, a.k, m0, t * kRowA);
    copyTile<kPipeN, kRowB>(tileB(t), qb, a.n, strideB, n0, t * kRowB);
  };
#pragma unroll
  for (int t = 0; t < kPipeStages - 1; ++t) {
    if (t < steps) copyStep(t);
    mma::commitCopies();
  }
  std::int32_t acc[kMi][4][4] = {};
  for (std::int64_t t = 0; t < steps; ++t) {
    mma::waitCopies<kPipeStages - 2>();
    __syncthreads();
    if (t + kPipeStages - 1 < steps) copyStep(t + kPipeStages - 1);
    mma::commitCopies();
    multiplyPipelined<kMi, kNibblesB>(tileA(t), tileB(t), acc);
  }
  const int warp = threadIdx.x / 32;
  storeWarpTile<kMi>(a, acc, m0 + warp / 4 * kMi * 16, n0 + warp % 4 * 32);
}

template <int kRowsM, bool kNibblesB>
void launchPipelined(const Gpu& g, const Int8RowsProduct::Args& a) {
  const std::int64_t tiles = ((a.m + kRowsM - 1) / kRowsM) * ((a.n + kPipeN - 1) / kPipeN);
  const auto kernel = pipelinedKernel<kRowsM, kNibblesB>;
  constexpr std::size_t kBytes = kPipeSharedBytes<kRowsM, kNibblesB>;
  detail::allowShared(g, Int8RowsProduct::kName, kernel, kBytes);
  const detail::Grid grid{detail::gridFor(tiles, 1), kPipeThreads};
  detail::launch(g, Int8RowsProduct::kName, kernel, grid, a, kBytes);
}

/// The pipelined tiles for codes I8 in a and kNibblesB ? I4 : I8 in b: 128 rows where those tiles
/// give every multiprocessor one, else 64.
template <bool kNibblesB>
void launchPipelined(const Gpu& g, const Int8RowsProduct::Args& a) {
  const std::int64_t tiles128 = ((a.m + 127) / 128) * ((a.n + kPipeN - 1) / kPipeN);
  if (tiles128 >= detail::multiprocessors(g.device.index)) launchPipelined<128, kNibblesB>(g, a);
  else launchPipelined<64, kNibblesB>(g, a);
}

// With I4 codes in a: a block of 128 threads (2 x 2 warps) a 64 x 64 tile of the output,
// k in steps of 64 codes through two buffers of shared memory, 16-byte loads held in registers
// while the step before is multiplied, I4 codes widened to bytes as they are stored.

constexpr int kTile = 64, kThreads = 128;
constexpr int kRowBytes = kStepK + 16;  // +16: a warp's fragment loads (8 rows, 4 words) fall on 32 banks

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
    for (int w = 0; w < 4; ++w) widenNibbleWord(words[w], to[2 * w], to[2 * w + 1]);
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
  const int warp = threadIdx.x / 32;
  storeWarpTile<2>(a, acc, m0 + warp / 2 * 32, n0 + warp % 2 * 32);
}

}  // namespace

void Int8RowsProduct::cuda(const Gpu& g, const Args& a) {
  if (a.m == 0 || a.n == 0) return;
  if (a.m <= kMostDotRows) {
    const detail::Grid grid{detail::gridFor(a.n, kDotWarps), kDotWarps * 32};
    if (a.m == 1) detail::launch(g, kName, dotKernel<1>, grid, a);
    else if (a.m == 2) detail::launch(g, kName, dotKernel<2>, grid, a);
    else if (a.m <= 4) detail::launch(g, kName, dotKernel<4>, grid, a);
    else detail::launch(g, kName, dotKernel<kMostDotRows>, grid, a);
    return;
  }
  if (a.aCodes == Codes::I8) {
    if (a.bCodes == Codes::I8) launchPipelined<false>(g, a);
    else launchPipelined<true>(g, a);
    return;
  }
  const std::int64_t tiles = ((a.m + kTile - 1) / kTile) * ((a.n + kTile - 1) / kTile);
  detail::launch(g, kName, productKernel, detail::Grid{detail::gridFor(tiles, 1), kThreads}, a);
}

}  // namespace gizml::netops::quant
