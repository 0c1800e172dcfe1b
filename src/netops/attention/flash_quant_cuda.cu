// attentionRows' quantized path on a CUDA GPU (flash_quant.hpp): SageAttention2's split, flash
// attention on INT8 (Q K'ᵀ, mma.sync m16n8k32 .s8, exact int32) and E4M3 (P V, m16n8k32 .e4m3, F32
// accumulators) matrix cores. Not exact: SPEC §3 "Attention" states its tolerance (cosine >= 0.995,
// relative L1 <= 0.05 against the exact op); every formula is sage_quant.hpp's, which
// tests/sage_quant_test.cpp runs on the host as an emulation of this file.
//
// Why each launch (see flash_quant.hpp for what it writes):
//   stats, scales, codes  quantization needs whole-group and whole-block statistics (K's channel
//                         means, block maxima) before any code exists; each is a plain reduction
//                         in a fixed order (sums in key order, then in block order; maxima, which
//                         are order-free), one thread or one warp per result: same bits every run,
//                         no atomics.
//   attention             modelled on flash_cuda.cu's BF16 kernel: a block of 4 warps takes 64
//                         queries of one (group, head), each warp 16; keys go by in tiles of 64,
//                         double-buffered by cp.async (K' codes [64][D] and V's transposed codes
//                         [D][64], one commit group). Per tile:
//     S = Q K'ᵀ       INT8 codes: Q's A fragments by ldmatrix (bytes read as 16-bit pairs, as
//                     mma_layout.hpp's ldmatrixAddressA allows), K's B fragments by ldmatrix (K'ᵀ's
//                     rows are K's rows); int32 accumulators, exact; s = quantScore(dot, qScale kScale
//                     scale), the warp's Q block scale and the tile's K block scale;
//     softmax         flash_step.hpp's online step, as the BF16 kernel (quad shuffles for the row
//                     maximum, this lane's partial l, summed over the quad at the end);
//     P V             p to E4M3 (pCode) in place: the S accumulators of 32 keys are an m16n8k32 A
//                     operand by mma::accumulatorOfA16x32, whose columns are permuted; V's codes were
//                     stored with the same permutation, so V's B fragments come by a plain ldmatrix of
//                     the transposed tile. Each tile's 64 keys are summed into fresh accumulators
//                     (two .e4m3 mma steps), then added to the running output after its rescale
//                     (addBlock): SageAttention2's two-level accumulation, since the FP8 instruction
//                     keeps fewer bits than F32 inside it.
//   out = sageOutput(o, l, vScale): the running sum is in units of 448 vScale.
// P's conversion is floatToE4M3 in software (the emulation's bits by construction). The hardware's
// cvt.rn.satfinite.e4m3x2.f32 was tried: ptxas then took the D = 128 kernel from 181 registers to
// 255 with a spill (D = 64: 133 to 174), so it waits for a GPU to measure whether it pays.
// The .e4m3 instruction exists from sm_89: this build's sm_80 code of the attention kernel traps,
// and SageRows::available tells the host which one the device runs. Every register and
// shared-memory index goes through exact/mma_layout.hpp.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "exact/convert.hpp"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"
#include "netops/attention/flash_quant.hpp"
#include "netops/attention/flash_step.hpp"
#include "netops/attention/flash_warp.cuh"
#include "netops/attention/sage_quant.hpp"

namespace gizml::netops::attn {

namespace {

namespace mma = exact::mma;

constexpr int kBlockQ = 64, kBlockK = kSageKBlock, kWarps = kBlockQ / kSageQBlock, kThreads = 32 * kWarps;
static_assert(kBlockK == 64 && kSageQBlock == 16, "the kernel's tiles are the quantization's blocks");

/// Shared memory of the attention kernel for head D, in bytes: Q codes [64][D], then two buffers of
/// K codes [64][D] and two of V's transposed codes [D][64].
constexpr int quantSharedBytes(int d) { return kBlockQ * d + 2 * kBlockK * d + 2 * d * kBlockK; }

/// Value `c` of part (0 q, 1 k, 2 v) of head h in qkv's row `row`, as F32.
__device__ __forceinline__ float valueOf(const SageRows::Args& a, int part, std::int64_t row, std::int64_t h,
                                         std::int64_t c) {
  const std::int64_t at = row * 3 * a.heads * a.head + (part * a.heads + h) * a.head + c;
  return a.qkvBF16 ? exact::bf16ToFloat(static_cast<const std::uint16_t*>(a.qkv)[at])
                   : static_cast<const float*>(a.qkv)[at];
}

/// The queries of group g: its rows below outRows (0 for a group past them).
__device__ __forceinline__ std::int64_t queriesOf(const SageRows::Args& a, std::int64_t g) {
  const std::int64_t left = a.outRows - g * a.group;
  return left <= 0 ? 0 : left < a.group ? left : a.group;
}

// ---- stats: K's channel means, V's channel scales ------------------------------------------------------

/// One thread a (group, head, block of 64 keys, channel): the block's K sum in key order and max |v|.
__global__ void blockStatsKernel(const SageRows::Args a) {
  const std::int64_t groups = SageRows::groups(a), kb = SageRows::kBlocks(a);
  const std::int64_t total = a.heads * groups * kb * a.head, idx = detail::globalThread();
  if (idx >= total) return;
  const std::int64_t c = idx % a.head, b = (idx / a.head) % kb, hg = idx / (a.head * kb);
  const std::int64_t h = hg / groups, g = hg % groups;
  const std::int64_t j0 = b * kSageKBlock, j1 = j0 + kSageKBlock < a.group ? j0 + kSageKBlock : a.group;
  float sum = 0.0f, vMax = 0.0f;
  for (std::int64_t j = j0; j < j1; ++j) {
    sum = sum + valueOf(a, 1, g * a.group + j, h, c);
    const float v = fabsf(valueOf(a, 2, g * a.group + j, h, c));
    vMax = v > vMax ? v : vMax;
  }
  a.kBlockSums[idx] = sum;  // idx = ((h groups + g) kBlocks + b) head + c
  a.vBlockMaxes[idx] = vMax;
}

/// One thread a (group, head, channel): the blocks' sums added in block order, their maximum.
__global__ void statsKernel(const SageRows::Args a) {
  const std::int64_t groups = SageRows::groups(a), kb = SageRows::kBlocks(a);
  const std::int64_t total = a.heads * groups * a.head, idx = detail::globalThread();
  if (idx >= total) return;
  const std::int64_t c = idx % a.head, hg = idx / a.head;
  float sum = 0.0f, vMax = 0.0f;
  for (std::int64_t b = 0; b < kb; ++b) {
    sum = sum + a.kBlockSums[(hg * kb + b) * a.head + c];
    const float v = a.vBlockMaxes[(hg * kb + b) * a.head + c];
    vMax = v > vMax ? v : vMax;
  }
  a.kMeans[idx] = keyMean(sum, a.group);  // idx = (h groups + g) head + c
  a.vScales[idx] = vScaleOf(vMax);
}

// ---- scales: one warp a block of Q rows or K keys ------------------------------------------------------

__global__ void scalesKernel(const SageRows::Args a) {
  const std::int64_t groups = SageRows::groups(a), qb = SageRows::qBlocks(a), kb = SageRows::kBlocks(a);
  const std::int64_t warp = detail::globalThread() / 32, total = a.heads * groups * (qb + kb);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= total) return;  // the whole warp
  const std::int64_t b = warp % (qb + kb), hg = warp / (qb + kb), g = hg % groups, h = hg / groups;
  const bool isQ = b < qb;
  // Q: rows [16 b, 16 b + 16) of the group's queries; K: keys [64 kb, 64 kb + 64) of its keys.
  const std::int64_t r0 = isQ ? b * kSageQBlock : (b - qb) * kSageKBlock;
  const std::int64_t end = isQ ? queriesOf(a, g) : a.group;
  const std::int64_t r1 = r0 + (isQ ? kSageQBlock : kSageKBlock) < end ? r0 + (isQ ? kSageQBlock : kSageKBlock) : end;
  float m = 0.0f;
  for (std::int64_t e = r0 * a.head + lane; e < r1 * a.head; e += 32) {
    const std::int64_t r = e / a.head, c = e % a.head;
    const float x = isQ ? valueOf(a, 0, g * a.group + r, h, c)
                        : centeredKey(valueOf(a, 1, g * a.group + r, h, c), a.kMeans[hg * a.head + c]);
    const float v = fabsf(x);
    m = v > m ? v : m;
  }
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) {  // a maximum: any order gives the same value
    const float other = __shfl_xor_sync(0xffffffffu, m, o);
    m = other > m ? other : m;
  }
  if (lane == 0) {
    if (isQ) a.qScales[hg * qb + b] = int8Scale(m);
    else a.kScales[hg * kb + (b - qb)] = int8Scale(m);
  }
}

// ---- codes: Q and K' to INT8 ----------------------------------------------------------------------------

__global__ void qkCodesKernel(const SageRows::Args a) {
  const std::int64_t groups = SageRows::groups(a), total = 2 * a.heads * a.rows * a.head;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t idx = detail::globalThread(); idx < total; idx += step) {
    const std::int64_t part = idx / (a.heads * a.rows * a.head), rem = idx % (a.heads * a.rows * a.head);
    const std::int64_t h = rem / (a.rows * a.head), r = (rem / a.head) % a.rows, c = rem % a.head;
    const std::int64_t g = r / a.group, j = r - g * a.group, hg = h * groups + g;
    if (part == 0) {
      // Rows past the queries are never read (the attention kernel zero-fills them).
      a.qCodes[rem] =
          r < a.outRows ? int8Code(valueOf(a, 0, r, h, c), a.qScales[hg * SageRows::qBlocks(a) + j / kSageQBlock]) : 0;
    } else {
      const float x = centeredKey(valueOf(a, 1, r, h, c), a.kMeans[hg * a.head + c]);
      a.kCodes[rem] = int8Code(x, a.kScales[hg * SageRows::kBlocks(a) + j / kSageKBlock]);
    }
  }
}

// ---- codes: V to E4M3, transposed, keys permuted ---------------------------------------------------------

/// One block a tile of 64 keys x 64 channels of one (group, head): V's codes into shared memory as
/// they are read (channels fastest: coalesced), then out transposed (positions fastest: coalesced),
/// position pos of the tile holding key (pos's 32) + accumulatorColumnOfA16x32(pos % 32), the column
/// of P that the P V product's A operand holds there. Keys past the group: +0.
constexpr int kVTile = 64, kVThreads = 256;

__global__ void __launch_bounds__(kVThreads) vCodesKernel(const SageRows::Args a) {
  __shared__ std::uint8_t tile[kVTile][kVTile + 4];  // [key][channel]
  const std::int64_t groups = SageRows::groups(a), keyTiles = SageRows::tkPad(a) / kVTile, chTiles = a.head / kVTile;
  const std::int64_t block = blockIdx.x, ct = block % chTiles, kt = (block / chTiles) % keyTiles;
  const std::int64_t hg = block / (chTiles * keyTiles), h = hg / groups, g = hg % groups;
  const int tid = static_cast<int>(threadIdx.x);
  for (int e = tid; e < kVTile * kVTile; e += kVThreads) {
    const int key = e / kVTile, ch = e % kVTile;
    const std::int64_t j = kt * kVTile + key, c = ct * kVTile + ch;
    tile[key][ch] = j < a.group ? vCode(valueOf(a, 2, g * a.group + j, h, c), a.vScales[hg * a.head + c]) : 0;
  }
  __syncthreads();
  for (int e = tid; e < kVTile * kVTile; e += kVThreads) {
    const int ch = e / kVTile, pos = e % kVTile;
    const int key = (pos & ~31) + mma::accumulatorColumnOfA16x32(pos & 31);
    a.vCodes[(hg * a.head + ct * kVTile + ch) * SageRows::tkPad(a) + kt * kVTile + pos] = tile[key][ch];
  }
}

// ---- the attention kernel -------------------------------------------------------------------------------

/// Rows [0, Rows) of a panel (rows of Cols16 16-bit pairs of codes, `stride` pairs apart) into a
/// swizzled shared tile [Rows][Cols16] by the cp.async chunk map; rows from rowsLeft on zero-filled.
template <int Rows, int Cols16>
__device__ __forceinline__ void loadTile(std::uint16_t* tile, const std::uint16_t* panel, std::int64_t stride,
                                         std::int64_t rowsLeft, int tid) {
  constexpr int chunks = Cols16 / 8, steps = Rows * chunks / kThreads;
  static_assert(Rows * chunks % kThreads == 0, "whole steps");
#pragma unroll
  for (int step = 0; step < steps; ++step) {
    const mma::Chunk c = mma::copyChunkOf(tid, step, kThreads, chunks);
    const bool in = c.row < rowsLeft;
    const std::uint16_t* src = panel + (in ? c.row * stride + 8 * c.chunk : 0);
    // Zero codes past the group's keys: their scores are masked, their V rows are +0.
    mma::copyChunk16(tile + mma::swizzledOffset(c.row, 8 * c.chunk, Cols16), src, in);
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads) sageKernel(const SageRows::Args a) {
#if GIZML_HAS_FP8_MMA
  GIZML_DYNAMIC_SHARED(std::uint16_t, shared);
  constexpr int qkCols = D / 2, vCols = kBlockK / 2;  // 16-bit pairs of codes a row
  std::uint16_t* const qTile = shared;                     // [64][D] INT8
  std::uint16_t* const kTiles = qTile + kBlockQ * qkCols;  // 2 x [64][D] INT8
  std::uint16_t* const vTiles = kTiles + 2 * kBlockK * qkCols;  // 2 x [D][64] E4M3
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;

  const std::int64_t groups = SageRows::groups(a), tkPad = SageRows::tkPad(a);
  const std::int64_t qTiles = (a.group + kBlockQ - 1) / kBlockQ, block = blockIdx.x;
  const std::int64_t qt = block % qTiles, h = (block / qTiles) % a.heads, g = block / (qTiles * a.heads);
  const std::int64_t first = g * a.group, hg = h * groups + g;
  const std::int64_t tq = a.outRows - first < a.group ? a.outRows - first : a.group, tk = a.group;
  const std::int64_t i0 = qt * kBlockQ;
  if (i0 >= tq) return;
  const std::int64_t rowsHere = tq - i0 < kBlockQ ? tq - i0 : kBlockQ;

  const auto* qPanel = reinterpret_cast<const std::uint16_t*>(a.qCodes + (h * a.rows + first) * D);
  const auto* kPanel = reinterpret_cast<const std::uint16_t*>(a.kCodes + (h * a.rows + first) * D);
  const auto* vPanel = reinterpret_cast<const std::uint16_t*>(a.vCodes + hg * D * tkPad);

  loadTile<kBlockQ, qkCols>(qTile, qPanel + i0 * qkCols, qkCols, tq - i0, tid);
  loadTile<kBlockK, qkCols>(kTiles, kPanel, qkCols, tk, tid);
  loadTile<D, vCols>(vTiles, vPanel, tkPad / 2, D, tid);
  mma::commitCopies();

  // This warp's Q block scale (16 rows): a block past the group's queries has none (its codes are 0).
  const std::int64_t qBlock = (i0 + 16 * warp) / kSageQBlock;
  const float qScale = i0 + 16 * warp < tq ? a.qScales[hg * SageRows::qBlocks(a) + qBlock] : 0.0f;

  float acc[D / 8][4];
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nb][i] = 0.0f;
  OnlineRow state[2];
  auto rowHalf = [&](int i) { return rowHalfOf(lane, i); };  // the row half of accumulator i (flash_warp.cuh)

  // Q's fragments: at D = 64 held in registers from the first tile on; at D = 128 read from shared
  // memory again every tile (holding its 16 registers pushed the kernel past 255 and spilled), and
  // then every other array is an index the compiler folds: qFrag[kk] is one register either way.
  constexpr bool kHoldQ = D <= 64;
  const mma::RowCol qAt = mma::ldmatrixAddressA(lane);
  std::uint32_t qFrag[D / 32][4];
  const std::int64_t nTiles = (tk + kBlockK - 1) / kBlockK;
  for (std::int64_t t = 0; t < nTiles; ++t) {
    const int buf = static_cast<int>(t & 1);
    if (t + 1 < nTiles) {
      const std::int64_t next = (t + 1) * kBlockK;
      loadTile<kBlockK, qkCols>(kTiles + (buf ^ 1) * kBlockK * qkCols, kPanel + next * qkCols, qkCols, tk - next, tid);
      loadTile<D, vCols>(vTiles + (buf ^ 1) * D * vCols, vPanel + next / 2, tkPad / 2, D, tid);
    }
    mma::commitCopies();
    mma::waitCopies<1>();
    __syncthreads();

    if (kHoldQ && t == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 32; ++kk)
        mma::ldmatrixX4<false>(qFrag[kk], qTile + mma::swizzledOffset(16 * warp + qAt.row, 16 * kk + qAt.col, qkCols));
    }

    const std::int64_t j0 = t * kBlockK;
    const TileMask mask = tileMask(i0, rowsHere, j0, kBlockK, tq, tk, false);
    if (mask != TileMask::Empty) {
      const std::uint16_t* const kt = kTiles + buf * kBlockK * qkCols;
      const std::uint16_t* const vt = vTiles + buf * D * vCols;

      // S = Q K'ᵀ in int32: 8 accumulator tiles of 16 queries x 8 keys.
      std::int32_t si[kBlockK / 8][4];
#pragma unroll
      for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) si[nb][i] = 0;
      const mma::RowCol kAt = mma::ldmatrixAddressB(lane);  // (key, channel pair)
#pragma unroll
      for (int kk = 0; kk < D / 32; ++kk) {
        if constexpr (!kHoldQ)
          mma::ldmatrixX4<false>(qFrag[kk], qTile + mma::swizzledOffset(16 * warp + qAt.row, 16 * kk + qAt.col, qkCols));
#pragma unroll
        for (int nb = 0; nb < kBlockK / 16; ++nb) {
          std::uint32_t b[4];
          mma::ldmatrixX4<false>(b, kt + mma::swizzledOffset(16 * nb + kAt.row, 16 * kk + kAt.col, qkCols));
          mma::mmaM16N8K32S8(si[2 * nb], qFrag[kk], b[0], b[1]);
          mma::mmaM16N8K32S8(si[2 * nb + 1], qFrag[kk], b[2], b[3]);
        }
      }

      // The online softmax of this lane's two rows.
      const float factor = scoreScale(qScale, a.kScales[hg * SageRows::kBlocks(a) + t], a.scale);
      float s[kBlockK / 8][4];
#pragma unroll
      for (int nb = 0; nb < kBlockK / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float v = quantScore(si[nb][i], factor);
          if (mask == TileMask::Partial) {
            const mma::RowCol at = mma::fragmentC16x8(lane, i);
            v = maskedScore(v, keyVisible(i0 + 16 * warp + at.row, j0 + 8 * nb + at.col, tq, tk, false));
          }
          s[nb][i] = v;
        }
      float c[2];
      softmaxTile(s, state, c, lane);

      // P's E4M3 codes as two m16n8k32 A operands (keys 0-31, 32-63), from the registers in place.
      std::uint32_t pFrag[2][4];
#pragma unroll
      for (int ks = 0; ks < 2; ++ks)
#pragma unroll
        for (int reg = 0; reg < 4; ++reg) {
          std::uint32_t r = 0;
#pragma unroll
          for (int byte = 0; byte < 4; ++byte) {
            const mma::TileAccumulator at = mma::accumulatorOfA16x32(reg, byte);
            r |= static_cast<std::uint32_t>(pCode(s[4 * ks + at.tile][at.i])) << (8 * byte);
          }
          pFrag[ks][reg] = r;
        }

      // O = O c + (P V over this tile's 64 keys, in fresh accumulators), 16 channels a step.
      const mma::RowCol vAt = mma::ldmatrixAddressB(lane);  // (channel, key pair)
#pragma unroll
      for (int nb = 0; nb < D / 16; ++nb) {
        float blk[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
          std::uint32_t b[4];
          mma::ldmatrixX4<false>(b, vt + mma::swizzledOffset(16 * nb + vAt.row, 16 * ks + vAt.col, vCols));
          mma::mmaM16N8K32E4M3(blk[0], pFrag[ks], b[0], b[1]);
          mma::mmaM16N8K32E4M3(blk[1], pFrag[ks], b[2], b[3]);
        }
#pragma unroll
        for (int x = 0; x < 2; ++x)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[2 * nb + x][i] = addBlock(acc[2 * nb + x][i], c[rowHalf(i)], blk[x][i]);
      }
    }
    __syncthreads();  // the buffer just read is the one the next iteration fills
  }

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
      if (qi >= tq) continue;
      const float y = sageOutput(acc[nb][i], l[rowHalf(i)], a.vScales[hg * D + col], visibleKeys(qi, tq, tk, false) > 0);
      const std::int64_t at1 = (first + qi) * width + h * a.head + col;
      if (a.outBF16) static_cast<std::uint16_t*>(a.out)[at1] = exact::floatToBF16(y);
      else static_cast<float*>(a.out)[at1] = y;
    }
#elif defined(__CUDA_ARCH__)
  (void)a;
  __trap();  // no FP8 matrix cores in this compilation: SageRows::available chose another path
#endif
}

template <int D>
void launchSage(const Gpu& g, const SageRows::Args& a) {
  const std::int64_t qTiles = (a.group + kBlockQ - 1) / kBlockQ;
  const std::int64_t groups = (a.outRows + a.group - 1) / a.group;  // those holding queries
  const unsigned blocks = detail::gridFor(qTiles * a.heads * groups, 1);
  detail::useDevice(g.device.index, SageRows::kName);
  detail::cudaCheck(cudaFuncSetAttribute(sageKernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         quantSharedBytes(D)),
                    SageRows::kName);
  GIZML_LAUNCH(blocks, kThreads, quantSharedBytes(D), detail::streamOf(g), sageKernel<D>)(a);
  detail::afterLaunch(g, SageRows::kName);
}

}  // namespace

bool SageRows::available(const Gpu& g) {
  // The code the device runs: its own SASS (sm_90a here, ptxVersion 90) or the compute_80 PTX
  // compiled for it at load (ptxVersion 80, no FP8 instruction), as core/mma_for_test.cu decides.
  cudaFuncAttributes attributes{};
  detail::useDevice(g.device.index, kName);
  detail::cudaCheck(cudaFuncGetAttributes(&attributes, sageKernel<64>), kName);
  return attributes.ptxVersion >= 89;
}

void SageRows::run(const Gpu& g, const Args& a) {
  if (a.outRows == 0 || a.rows == 0) return;
  detail::launch(g, kName, blockStatsKernel, detail::Grid::forItems(a.heads * groups(a) * kBlocks(a) * a.head), a);
  detail::launch(g, kName, statsKernel, detail::Grid::forItems(a.heads * groups(a) * a.head), a);
  detail::launch(g, kName, scalesKernel, detail::Grid::forItems(32 * a.heads * groups(a) * (qBlocks(a) + kBlocks(a))), a);
  const std::int64_t codes = 2 * a.heads * a.rows * a.head, blocks = (codes + 255) / 256;
  detail::launch(g, kName, qkCodesKernel, detail::Grid{detail::stridingBlocks(blocks), 256}, a);
  const std::int64_t vTiles = a.heads * groups(a) * (tkPad(a) / kVTile) * (a.head / kVTile);
  detail::launch(g, kName, vCodesKernel, detail::Grid{detail::gridFor(vTiles, 1), kVThreads}, a);
  if (a.head == 64) launchSage<64>(g, a);
  else launchSage<128>(g, a);
}

}  // namespace gizml::netops::attn
