// The 8-bit rows on a CUDA GPU: each row a half-warp running the row function of quant.hpp (the
// same source as the host's, so the same stages, the same order and the same bits), its blocks
// taken by rows where the tensors allow (below), or, where the op's plan asks (RowPlan::blocks), a
// block a row.
#include "core/cuda_row_blocks.cuh"
#include "core/cuda_rows.cuh"
#include "netops/quant/quant.hpp"

namespace gizml::netops::quant {

namespace {

// ---- a block a row ----------------------------------------------------------------------------------
// A half-warp a row transforms each 256-block twice (once for the row's maximum, once for its
// codes) and reads x twice, modulatedInt8Rows three times (its statistics first). With a block a
// row, half-warp h of H transforms the row's blocks h, h + H, ... (at most K of them) once and
// keeps them in its registers (16 values a lane a block, the layout of exact/hadamard.hpp); the
// row's max |y| is the largest of the half-warps' maxima (a maximum is order-free: the same s);
// then each half-warp codes its own blocks. modulatedInt8Rows first copies the row's x to shared
// memory (core/cuda_row_blocks.cuh: the next row's copy in flight meanwhile; SwizzledBlocksRow) and
// one half-warp finds its statistics there. A half-warp takes its blocks by rows (16 consecutive
// values a lane, 16-byte accesses) and transforms them with no shuffle, through shared memory
// (exact::hadamard256FromRows; int8Rows' a scratch of its own, modulatedInt8Rows' the block's
// copy of x). Each value's formula and order are the row function's (ModulatedInt8Rows::block,
// BlockRows::transformed): the same bits. Not measured on a GPU yet (cuda_row_blocks.cuh).

constexpr int kMostHalves = 32;  // 512 threads

/// The K whose blocks of threads cover n / 256 blocks (at most kMostHalves half-warps of K each),
/// or 0 where none does.
int blocksPerHalf(std::int64_t n) {
  const std::int64_t blocks = n / exact::kHadamardBlock;
  return blocks <= kMostHalves ? 1 : blocks <= 2 * kMostHalves ? 2 : 0;
}

/// A block of threads for n / 256 blocks at K a half-warp: whole warps.
unsigned threadsFor(std::int64_t n, int k) {
  const std::int64_t halves = (n / exact::kHadamardBlock + k - 1) / k;
  return static_cast<unsigned>(32 * ((halves + 1) / 2));
}

/// Row r's codes and scale from this half-warp's blocks, block(b, v) putting the transform of the
/// row's 256-block at element b in v; every thread of the block calls it. Ends with a
/// __syncthreads, after which `halfMax` is free again.
template <int K, class Block>
__device__ void codeRowBlocks(const exact::WarpRow& row, const Int8Rows::Args& c, std::int64_t r, float* halfMax,
                              Block block) {
  const int half = static_cast<int>(threadIdx.x / 16), halves = static_cast<int>(blockDim.x / 16);
  float v[K][16];
  float best = 0.0f;  // +0, as the row function's
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t b = exact::kHadamardBlock * (half + k * halves);
    if (b < c.n) {
      block(b, v[k]);
      for (int j = 0; j < 16; ++j) best = exact::maxMagnitude(best, v[k][j]);
    }
  }
  best = exact::laneMax(row, best);
  if (row.leader()) halfMax[half] = best;
  __syncthreads();
  float m = 0.0f;
  for (int h = 0; h < halves; ++h) m = exact::maxIgnoringNaN(halfMax[h], m);
  const float s = int8Scale(m, c.maxCode);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t b = exact::kHadamardBlock * (half + k * halves);
    if (b < c.n) Int8Rows::storeBlockCodes(row, c, s, r * c.n + b, v[k]);
  }
  if (threadIdx.x == 0) c.s[r] = s;
  __syncthreads();
}

/// Dynamic shared memory: a half-warp's scratch (exact::kRowsScratch floats each), through which
/// its blocks, loaded by rows (16-byte loads), pass once into the transform's layout
/// (exact::hadamard256FromRows). x on 16 bytes. Bounded to 512 threads (threadsFor's most), so
/// that ptxas keeps a block's registers within a multiprocessor's 64 K (128 a thread), which
/// nothing held before: past them the launch would fail. sm_90a: 51 and 64 registers for K = 1
/// and 2 with the bound (56 and 72 without), no spills.
template <int K>
__global__ void __launch_bounds__(16 * kMostHalves) int8RowBlocksKernel(const Int8Rows::Args a) {
  GIZML_DYNAMIC_SHARED(float, scratch);
  __shared__ float halfMax[kMostHalves];
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  float* mine = scratch + exact::kRowsScratch * (threadIdx.x / 16);
  for (std::int64_t r = blockIdx.x; r < a.rows; r += gridDim.x)
    codeRowBlocks<K>(row, a, r, halfMax, [&](std::int64_t b, float(&v)[16]) {
      exact::loadBlockRows(row, a.x, a.xBF16, r * a.n + b, v);
      exact::hadamard256FromRows(row, v, mine);
    });
}

/// The dynamic shared memory of a block of `threads` running int8RowBlocksKernel.
std::size_t rowsScratchBytes(unsigned threads) { return (threads / 16) * exact::kRowsScratch * sizeof(float); }

/// modulatedInt8Rows' 256-block at element b of row r by rows (lane a: elements b + 16 a ... + 15),
/// each value ModulatedInt8Rows::block's (the same formula and rounding: the same bits): x's four
/// 16-byte pieces from xChunk(c), w, shift and scale in 16-byte loads (four each, not 16 of 4
/// bytes), y where stored in 16-byte stores (two, not 16 of 2 bytes); then the transform through
/// `scratch` (exact::hadamard256FromRows).
template <class XChunk>
__device__ void modulatedBlockByRows(const exact::WarpRow& row, const ModulatedInt8Rows::Args& a, std::int64_t r,
                                     const exact::MeanRstd& st, std::int64_t b, bool storeY, float (&v)[16],
                                     XChunk xChunk, float* scratch) {
  const norms::ModulatedNorm::Args& m = a.norm;
  const std::int64_t at = b + 16 * row.lane, mod = ModulatedInt8Rows::mapped(a, r) * m.n;
  for (int c = 0; c < 4; ++c) {
    const float4 x = xChunk(c);
    const float4 w = exact::loadFloat4(m.w + at + 4 * c), scale = exact::loadFloat4(m.scale + mod + at + 4 * c),
                 shift = exact::loadFloat4(m.shift + mod + at + 4 * c);
    const auto value = [&](float xi, float wi, float scalei, float shifti) {
      return exact::roundToBF16Lanes(norms::modulatedValue(xi, st.mean, st.rstd, wi, scalei, shifti));
    };
    v[4 * c] = value(x.x, w.x, scale.x, shift.x);
    v[4 * c + 1] = value(x.y, w.y, scale.y, shift.y);
    v[4 * c + 2] = value(x.z, w.z, scale.z, shift.z);
    v[4 * c + 3] = value(x.w, w.w, scale.w, shift.w);
  }
  if (storeY) {
    // v is BF16 values already: element at + 2 i and its neighbour are word i's low and high halves.
    float words[8];
    for (int i = 0; i < 8; ++i) words[i] = exact::fromBits(exact::packBF16Values(v[2 * i], v[2 * i + 1]));
    float* y = reinterpret_cast<float*>(m.yBF16 + r * m.n + at);
    exact::streamFloat4(y, float4{words[0], words[1], words[2], words[3]});
    exact::streamFloat4(y + 4, float4{words[4], words[5], words[6], words[7]});
  }
  exact::hadamard256FromRows(row, v, scratch);
}

/// Dynamic shared memory: two rows of x laid out as SwizzledBlocksRow (detail::forStagedSwizzledRows),
/// each block's copy then its half-warp's scratch. x, w, shift, scale and y on 16 bytes. Registers
/// held to 56 and 80 (ptxas sm_90a, nvcc 13: left to itself it takes 64 and 81, a block of 192
/// threads fewer a multiprocessor at [., 3072], 6 -> 5, and one of 384 at [., 12288], 2 -> 1). At
/// 56 it spills 32 bytes a thread (92 read back), at 80 nothing (stop 51; stop 34 saw two
/// registers spilled at 80 and none at 56): whether 64 and 5 blocks would be faster is unmeasured.
template <int K>
__global__ void __maxnreg__(K == 1 ? 56 : 80) modulatedInt8RowBlocksKernel(const ModulatedInt8Rows::Args a, const detail::ErrorFlag flag) {
  GIZML_DYNAMIC_SHARED(float, staging);
  __shared__ float halfMax[kMostHalves];
  __shared__ exact::MeanRstd stats;
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  const Int8Rows::Args codes = ModulatedInt8Rows::codeArgs(a);
  const bool storeY = a.norm.yBF16 != nullptr;
  detail::forStagedSwizzledRows(
      a.rows, a.n, staging, [&](std::int64_t r) { return a.norm.x + r * a.n; },
      [&](std::int64_t r, const detail::SwizzledBlocksRow x) {
        if (!flag.inRange(0, ModulatedInt8Rows::mapped(a, r), a.mods)) return;  // the whole block skips
        if (threadIdx.x < 16) {
          const exact::MeanRstd st = norms::modulatedStats(row, x, a.norm.eps, a.norm.centered);
          if (threadIdx.x == 0) stats = st;
        }
        __syncthreads();
        const exact::MeanRstd st = stats;  // read by every thread before codeRowBlocks' first __syncthreads
        float* copy = staging + (x.copy - staging);  // this row's buffer: the transforms write it
        codeRowBlocks<K>(row, codes, r, halfMax, [&](std::int64_t b, float(&v)[16]) {
          // The block's copy gives x, then is the half-warp's scratch: only it reads the copy now.
          float* block = copy + detail::SwizzledBlocksRow::blockAt(b);
          const auto xChunk = [&](int c) { return exact::loadFloat4(block + exact::rowsScratchAt(row.lane, 4 * c)); };
          modulatedBlockByRows(row, a, r, st, b, storeY, v, xChunk, block);
        });
      });
}

// ---- a half-warp a row, by rows -------------------------------------------------------------------------
// The half-warp rows (detail::rowsKernel's loop, the row functions' two walks) with each block taken
// by rows and transformed through a scratch of the half-warp's own (static shared memory, 8.5 KiB a
// block of 8 rows), as the block-a-row kernels' blocks: no shuffles. x (and modulatedInt8Rows' w,
// shift, scale and y) on 16 bytes; else the row functions as they are.

/// Whether the op's rows can be taken by rows: its inputs and outputs read and written in 16-byte
/// pieces on 16 bytes (their rows too: n is a multiple of 256).
bool on16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
bool onChunks(const Int8Rows::Args& a) { return on16(a.x); }
bool onChunks(const ModulatedInt8Rows::Args& a) {
  return on16(a.norm.x) && on16(a.norm.w) && on16(a.norm.shift) && on16(a.norm.scale) && on16(a.norm.yBF16);
}

/// With kPrefetch the half-warp asks the L2 for its row's x as it starts it (detail::prefetchRow,
/// RowPlan::prefetch), which both walks read.
template <bool kPrefetch>
__global__ void int8RowsByRowsKernel(const Int8Rows::Args a) {
  __shared__ __align__(16) float scratch[detail::kRowsPerBlock * exact::kRowsScratch];
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  float* mine = scratch + exact::kRowsScratch * (threadIdx.x / 16);
  const std::int64_t rowBytes = a.n * (a.xBF16 ? 2 : 4);
  detail::forHalfWarpRows(a.rows, [&](std::int64_t r) {
    if constexpr (kPrefetch) detail::prefetchRow(row, static_cast<const char*>(a.x) + r * rowBytes, rowBytes);
    Int8Rows::rowWith(row, a, r, [&](std::int64_t at, bool, float(&v)[16]) {
      exact::loadBlockRows(row, a.x, a.xBF16, at, v);
      exact::hadamard256FromRows(row, v, mine);
    });
  });
}

template <bool kPrefetch>
__global__ void modulatedInt8RowsByRowsKernel(const ModulatedInt8Rows::Args a, const detail::ErrorFlag flag) {
  __shared__ __align__(16) float scratch[detail::kRowsPerBlock * exact::kRowsScratch];
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  float* mine = scratch + exact::kRowsScratch * (threadIdx.x / 16);
  detail::forHalfWarpRows(a.rows, [&](std::int64_t r) {
    if (!flag.inRange(0, ModulatedInt8Rows::mapped(a, r), a.mods)) return;
    const float* x = a.norm.x + r * a.n;
    if constexpr (kPrefetch) detail::prefetchRow(row, x, a.n);  // read by the statistics and both walks
    ModulatedInt8Rows::rowWith(row, a, r, [&](const exact::MeanRstd& st, std::int64_t b, bool storeY, float(&v)[16]) {
      const auto xChunk = [&](int c) { return exact::loadFloat4(x + b + 16 * row.lane + 4 * c); };
      modulatedBlockByRows(row, a, r, st, b, storeY, v, xChunk, mine);
    });
  });
}

}  // namespace

void HadamardRows::cuda(const Gpu& g, const Args& a) { detail::launchRows<HadamardRows>(g, a); }

// Three forms of each op, the same bits, as its plan says (core/row_plan.hpp): a block a row
// (RowPlan::blocks, rows of at most 64
// 256-blocks), a half-warp a row by rows (the default), and the row functions as they are, a
// half-warp a row by shuffles (RowPlan::byRows false, and wherever a tensor is off 16 bytes).

void Int8Rows::cuda(const Gpu& g, const Args& a) {
  if (a.rows == 0) return;
  const int k = blocksPerHalf(a.n);
  if (!onChunks(a)) return detail::launchRows<Int8Rows>(g, a);
  const detail::RowPlan& plan = detail::rowPlan(kName);
  if (plan.blocks && k > 0) {
    const detail::Grid grid = detail::rowBlocksGrid(g, a.rows, threadsFor(a.n, k), plan);
    const std::size_t shared = rowsScratchBytes(grid.threads);
    const auto kernel = k == 1 ? int8RowBlocksKernel<1> : int8RowBlocksKernel<2>;
    detail::allowShared(g, kName, kernel, shared);
    return detail::launch(g, kName, kernel, grid, a, shared);
  }
  if (plan.byRows) {
    const auto kernel = plan.prefetch ? int8RowsByRowsKernel<true> : int8RowsByRowsKernel<false>;
    return detail::launch(g, kName, kernel, detail::rowsGrid(g, a.rows, plan), a);
  }
  detail::launchRows<Int8Rows>(g, a);
}

void ModulatedInt8Rows::cuda(const Gpu& g, const Args& a, const char* fn) {
  if (a.rows == 0) return;
  const int k = blocksPerHalf(a.n);
  if (!onChunks(a)) return detail::launchMappedRows<ModulatedInt8Rows>(g, a, "map", fn);
  const detail::RowPlan& plan = detail::rowPlan(kName);
  if (plan.blocks && k > 0 && detail::stageable(a.norm.x, a.n, a.n)) {
    const std::size_t shared = detail::stagedSwizzledSharedBytes(a.n);
    const auto kernel = k == 1 ? modulatedInt8RowBlocksKernel<1> : modulatedInt8RowBlocksKernel<2>;
    detail::allowShared(g, fn, kernel, shared);
    return detail::launchChecked(g, fn, {"map"}, kernel,
                                 detail::residentGrid(g, kernel, a.rows, threadsFor(a.n, k), shared, plan), a, shared);
  }
  if (plan.byRows) {
    const auto kernel = plan.prefetch ? modulatedInt8RowsByRowsKernel<true> : modulatedInt8RowsByRowsKernel<false>;
    return detail::launchChecked(g, fn, {"map"}, kernel, detail::rowsGrid(g, a.rows, plan), a);
  }
  detail::launchMappedRows<ModulatedInt8Rows>(g, a, "map", fn);
}

}  // namespace gizml::netops::quant
