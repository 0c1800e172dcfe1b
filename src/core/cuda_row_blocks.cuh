// The GPU's second loop over rows: a block a row, for the row ops that read a row twice (their
// statistics, then their values). rowsKernel (core/cuda_rows.cuh) gives a row a half-warp, and on
// an H200 all 8192 rows of a [8192, 3072] F32 tensor are then resident at once: a row's second
// read misses the L2 (modulatedNorm read 201 MB for its 100 MB of x), and a half-warp keeps only a
// few loads in flight. Here a block copies its row into shared memory with cp.async, every thread
// a few 16-byte chunks (the whole row in flight at once), its next row's copy starting as this
// row's work does; one half-warp finds the statistics from the copy (the row type's chains, the
// same order as a half-warp's row: the same bits); then every thread takes its share of the
// values (elementwise, so any share gives the same bits). Nothing is read twice from memory.
//
// Not measured on a GPU yet: it runs only where an op's plan asks (RowPlan::blocks,
// core/row_plan.hpp; GIZML_CUDA_ROW_BLOCKS=1 for every op), so that a GPU session can compare it
// with the half-warp rows in one build (tools/gpu-rows-sweep.sh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/cuda_launch.cuh"
#include "core/cuda_rows.cuh"
#include "exact/hadamard.hpp"
#include "exact/mma_ptx.cuh"
#include "exact/row16.hpp"

namespace gizml::detail {

/// A staged row's most bytes (its block holds two: 96 KiB, allowShared).
constexpr std::int64_t kMostStagedBytes = 48 * 1024;

/// Whether rows of n values of T, row r at first + r stride, can be staged by 16-byte copies:
/// every row starting on 16 bytes and whole chunks, at most kMostStagedBytes.
template <class T>
bool stageable(const T* first, std::int64_t n, std::int64_t stride) {
  const std::int64_t bytes = n * static_cast<std::int64_t>(sizeof(T));
  return first != nullptr && reinterpret_cast<std::uintptr_t>(first) % 16 == 0 && bytes % 16 == 0 &&
         (stride * static_cast<std::int64_t>(sizeof(T))) % 16 == 0 && bytes > 0 && bytes <= kMostStagedBytes;
}

/// The grid of a launch of a block an item (a row, a tile): a block for each item, at most
/// rowBlocksCap's (the plan's rowsPerSm counting blocks).
inline Grid rowBlocksGrid(const Gpu& g, std::int64_t items, unsigned threads, const RowPlan& plan) {
  const std::int64_t cap = rowBlocksCap(g.device.index, plan.rowsPerSm, 1);
  return Grid{static_cast<unsigned>(items < cap ? items : cap), threads};
}

/// The blocks of `kernel` that a multiprocessor of `device` holds at once with `threads` threads
/// and `sharedBytes` of dynamic shared memory (0 where CUDA cannot say; allowShared first where
/// that is over 48 KiB). CUDA is asked once for each (device, kernel, threads, bytes), not at every
/// launch: a launch of a few rows is a few microseconds (cuda.cu).
int residentPerMultiprocessor(int device, const void* kernel, unsigned threads, std::size_t sharedBytes);

/// Asks that a multiprocessor of `device` keep as shared memory (its carveout, in percent; the
/// rest is L1) what `blocks` blocks of `kernel` with `sharedBytes` of dynamic shared memory take
/// (its static bytes and the 1 KiB CUDA keeps a block counted): a hint, which the driver may
/// overrule; nothing where CUDA cannot say (cuda.cu). blocks <= 0 takes back the kernel's hint,
/// if it has one (the driver's own split again). The hint stays on the kernel until then, and
/// residentPerMultiprocessor takes it back before it asks CUDA for an occupancy to keep.
void preferSharedFor(int device, const void* kernel, std::size_t sharedBytes, int blocks);

/// rowBlocksGrid for a kernel whose blocks stride over their items and copy the next one while
/// working on this one (forStaged): at most as many blocks as `device` holds at once (its
/// multiprocessors times the kernel's occupancy at `threads` and `sharedBytes`; allowShared
/// first), so that every block has items to pipeline. Where the plan holds fewer
/// blocks a multiprocessor than fit, the kernel asks for only their shared memory
/// (preferSharedFor): without it the driver gives the shared memory that the most blocks would
/// take (at [., 3072] F32 rows, 9 blocks: 216 KiB, the L1 left some 28 KiB), and w, shift and
/// scale (36 KiB a modulatedNorm row) come from the L2 for every row. Not yet measured on a GPU:
/// tools/gpu-rows-sweep.sh's run b4 asks the question.
template <class Kernel>
Grid residentGrid(const Gpu& g, Kernel* kernel, std::int64_t items, unsigned threads, std::size_t sharedBytes,
                  const RowPlan& plan) {
  Grid grid = rowBlocksGrid(g, items, threads, plan);
  const void* k = reinterpret_cast<const void*>(kernel);
  const int perSm = residentPerMultiprocessor(g.device.index, k, threads, sharedBytes);
  const unsigned sms = multiprocessors(g.device.index);
  const std::int64_t resident = static_cast<std::int64_t>(sms) * perSm;
  if (resident > 0 && resident < grid.blocks) grid.blocks = static_cast<unsigned>(resident);
  const unsigned cap = rowBlocksCap(g.device.index, plan.rowsPerSm, 1);
  const bool fewer = cap != kMostBlocks && sms > 0 && static_cast<int>(cap / sms) < perSm;
  // Else no hint (0): a hint an earlier launch of this kernel left (another shape, or another
  // plan's op on the same kernel) would still hold, and keep shared memory from blocks that fit.
  preferSharedFor(g.device.index, k, sharedBytes, fewer ? static_cast<int>(cap / sms) : 0);
  return grid;
}

/// A row of F32 values (n a multiple of 256) copied to shared memory a 256-block in
/// exact::kRowsScratch (272) floats, laid out as a half-warp's scratch of
/// exact::hadamard256FromRows: element 16 a + j of a block at rowsScratchAt(a, j), its 16-float
/// rows' 16-byte chunks swizzled. So a half-warp reads its block by rows (lane a: 16 consecutive
/// elements, four 16-byte reads) and a half-warp reading the whole row a step at a time (its
/// statistics: 16 consecutive elements a step) with no bank met twice; a warp's two half-warps,
/// on neighbouring blocks 272 floats apart, fall on different halves of the banks; and a block's
/// copy, once read, is its half-warp's scratch for the transform. Read through
/// exact::WarpRow::At::load (at(e)).
struct SwizzledBlocksRow {
  const float* copy;
  /// Where block b's copy starts (b a multiple of 256), and where element e lies.
  GIZML_HD static std::int64_t blockAt(std::int64_t b) { return (b >> 8) * exact::kRowsScratch; }
  GIZML_HD static std::int64_t index(std::int64_t e) {
    return blockAt(e) + exact::rowsScratchAt(static_cast<int>((e & 255) >> 4), static_cast<int>(e & 15));
  }
  /// The floats a copy of a row of n values takes (a multiple of 4: whole 16-byte chunks).
  GIZML_HD static std::int64_t floats(std::int64_t n) { return blockAt(n); }
  GIZML_HD float at(std::int64_t e) const { return copy[index(e)]; }
};

#if defined(__CUDACC__)
/// Starts copying a row of n values of T (stageable) from `from` to `to` (shared memory, 16-byte
/// aligned) with cp.async, the block's threads a chunk in turn: one commit group a thread.
template <class T>
__device__ void copyRow(T* to, const T* from, std::int64_t n) {
  constexpr std::int64_t kPerChunk = 16 / sizeof(T);
  const std::int64_t chunks = n / kPerChunk;
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
    exact::mma::copyChunk16(to + c * kPerChunk, from + c * kPerChunk);
  exact::mma::commitCopies();
}

/// A block's items i = blockIdx.x, i + gridDim.x, ... (< items), each copied to shared memory
/// before work(i, copy) runs on it, in two buffers of `perBuffer` values (`buffers`, 16-byte
/// aligned, as perBuffer values of T are) taken in turn, so that the next item's copy is in flight
/// while this one's work runs: issue(i, buffer) starts item i's copy with cp.async (copyRow, or
/// the caller's own chunks), committing one group a thread. Every thread of the block calls it;
/// work starts with the copy complete for every thread, and a buffer is refilled only after every
/// thread's work on it has ended.
template <class T, class Issue, class Work>
__device__ void forStaged(std::int64_t items, std::int64_t perBuffer, T* buffers, Issue issue, Work work) {
  std::int64_t i = blockIdx.x;
  if (i < items) issue(i, buffers);
  for (int cur = 0; i < items; i += gridDim.x, cur ^= 1) {
    const std::int64_t next = i + gridDim.x;
    if (next < items) {
      issue(next, buffers + (cur ^ 1) * perBuffer);
      exact::mma::waitCopies<1>();  // all groups but the next item's: this item's chunks are in
    } else {
      exact::mma::waitCopies<0>();
    }
    __syncthreads();  // every thread's chunks
    work(i, static_cast<const T*>(buffers + cur * perBuffer));
    __syncthreads();  // every thread done with this buffer before the next iteration refills it
  }
}

/// forStaged over rows: row r's input is n values of T at rowOf(r) (stageable).
template <class T, class RowOf, class Work>
__device__ void forStagedRows(std::int64_t rows, std::int64_t n, T* buffers, RowOf rowOf, Work work) {
  forStaged(rows, n, buffers, [&](std::int64_t r, T* to) { copyRow(to, rowOf(r), n); }, work);
}

/// forStagedRows for rows of n F32 values (a multiple of 256) copied as SwizzledBlocksRow lays them
/// out: work(r, SwizzledBlocksRow{copy}).
template <class RowOf, class Work>
__device__ void forStagedSwizzledRows(std::int64_t rows, std::int64_t n, float* buffers, RowOf rowOf, Work work) {
  forStaged(
      rows, SwizzledBlocksRow::floats(n), buffers,
      [&](std::int64_t r, float* to) {
        const float* from = rowOf(r);
        for (std::int64_t c = threadIdx.x; c < n / 4; c += blockDim.x)  // 16-byte chunks, whole in the copy too
          exact::mma::copyChunk16(to + SwizzledBlocksRow::index(4 * c), from + 4 * c);
        exact::mma::commitCopies();
      },
      [&](std::int64_t r, const float* copy) { work(r, SwizzledBlocksRow{copy}); });
}

/// Row r of Kernel with the whole block (every thread calls it), its staged input at `staged`.
/// Kernel gives
///   Staged, stagedRow(a, r)         the input the row reads twice (F32 or BF16, a.n values)
///   statsOf(row, a, r, staged)      its statistics, that input read from `staged`: a RowAt
///   valueSteps(a), values(at, a, v) its values, one step at a time (a WarpRow step: one element
///                                   or pair), each step's alone
/// `shared` hands the RowAt to every thread; free again at forStaged's closing __syncthreads.
/// With kQuads its values walk takes quads where it can (RowOf, exact::QuadWarpRow: 4 consecutive
/// elements a thread a step).
template <class Kernel, bool kQuads, class RowAt>
__device__ void stagedRow(const typename Kernel::Args& a, std::int64_t r, const typename Kernel::Staged* staged,
                          RowAt& shared) {
  if (threadIdx.x < 16) {
    const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x), 0xffffu};
    const RowAt v = Kernel::statsOf(row, a, r, staged);
    if (threadIdx.x == 0) shared = v;
  }
  __syncthreads();
  const RowAt v = shared;
  const RowOf<kQuads> steps{Kernel::valueSteps(a), static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  steps.forEachWideFrom(threadIdx.x, blockDim.x, [&](const auto& at) GIZML_HD_LAMBDA { Kernel::values(at, a, v); });
}

template <class Kernel>
using StagedRowAt = decltype(Kernel::statsOf(std::declval<const exact::WarpRow&>(), std::declval<const typename Kernel::Args&>(),
                                             0, std::declval<const typename Kernel::Staged*>()));

/// Whether a block a row of Kernel can take its values walk by quads (RowPlan::quads): a kernel whose
/// half-warp rows can (TakesQuads), but for one whose staged values take a step of their own that
/// a quad's 4 consecutive steps may not share (kStagedValuesInQuads false: rowNormRope's pairs,
/// whose heads a quad could straddle).
template <class Kernel>
concept TakesStagedQuads =
    TakesQuads<Kernel> && (!requires { Kernel::kStagedValuesInQuads; } || Kernel::kStagedValuesInQuads);

/// Kernel's rows with a block a row. Dynamic shared memory: two rows of Staged.
template <class Kernel, bool kQuads = false>
__global__ void stagedRowsKernel(const typename Kernel::Args a) {
  using Staged = typename Kernel::Staged;
  GIZML_DYNAMIC_SHARED(float, staging);  // one name and type for every instantiation (16-byte aligned)
  __shared__ StagedRowAt<Kernel> shared;
  forStagedRows(a.rows, a.n, reinterpret_cast<Staged*>(staging), [&](std::int64_t r) { return Kernel::stagedRow(a, r); },
                [&](std::int64_t r, const Staged* staged) { stagedRow<Kernel, kQuads>(a, r, staged, shared); });
}

/// The same for a Kernel whose rows read a row map (mapped(a, r), a.mods): a row whose entry is out
/// of range is skipped by the whole block (every thread reads the same entry) and recorded in the
/// device error flag. (Its copy is made all the same: the copy reads no mapped row.)
template <class Kernel, bool kQuads = false>
__global__ void stagedMappedRowsKernel(const typename Kernel::Args a, const ErrorFlag flag) {
  using Staged = typename Kernel::Staged;
  GIZML_DYNAMIC_SHARED(float, staging);
  __shared__ StagedRowAt<Kernel> shared;
  forStagedRows(a.rows, a.n, reinterpret_cast<Staged*>(staging), [&](std::int64_t r) { return Kernel::stagedRow(a, r); },
                [&](std::int64_t r, const Staged* staged) {
                  if (flag.inRange(0, Kernel::mapped(a, r), a.mods)) stagedRow<Kernel, kQuads>(a, r, staged, shared);
                });
}
#endif

/// The dynamic shared memory of a block a row staging rows of n values of T: two rows. Over 48 KiB
/// the kernel must be allowed it first (allowShared).
template <class T>
std::size_t stagedSharedBytes(std::int64_t n) {
  return 2 * static_cast<std::size_t>(n) * sizeof(T);
}

/// The same for rows of n F32 values laid out as SwizzledBlocksRow (n a multiple of 256).
inline std::size_t stagedSwizzledSharedBytes(std::int64_t n) {
  return 2 * static_cast<std::size_t>(SwizzledBlocksRow::floats(n)) * sizeof(float);
}

/// Lets `kernel` take `bytes` of dynamic shared memory a block on `device`; asks CUDA only where
/// the kernel has not been allowed as many bytes there before (cuda.cu).
void allowSharedOnce(int device, const char* function, const void* kernel, std::size_t bytes);

/// allowSharedOnce for every launch with dynamic shared memory, not only those over 48 KiB: a
/// kernel may take 48 KiB without asking in all, its static __shared__ variables included, so
/// one with a few static bytes (stagedRowsKernel's, pixelTiles' scales) and a dynamic 48 KiB
/// (rows of 24 KiB staged twice) must ask too, or its launch fails.
template <class Kernel>
void allowShared(const Gpu& g, const char* function, Kernel* kernel, std::size_t bytes) {
  if (bytes > 0) allowSharedOnce(g.device.index, function, reinterpret_cast<const void*>(kernel), bytes);
}

/// The threads of a block a row for the staged row ops: 4 warps (at two rows of 12 KiB, a [., 3072]
/// F32 tensor's, a multiprocessor's shared memory holds 9 such blocks).
constexpr unsigned kStagedRowThreads = 128;

/// Kernel's rows with a block a row where its plan asks (RowPlan::blocks) and its rows are
/// stageable (rows `stride` values apart); else a half-warp a row (launchRows). The same bits
/// either way.
template <class Kernel>
void launchRowsStaged(const Gpu& g, const typename Kernel::Args& a, std::int64_t stride) {
  if (a.rows == 0) return;
  const RowPlan& plan = rowPlan(Kernel::kName);
  if (!plan.blocks || !stageable(Kernel::stagedRow(a, 0), a.n, stride)) return launchRows<Kernel>(g, a);
  const std::size_t bytes = stagedSharedBytes<typename Kernel::Staged>(a.n);
  const auto run = [&](auto* kernel) {
    allowShared(g, Kernel::kName, kernel, bytes);
    launch(g, Kernel::kName, kernel, residentGrid(g, kernel, a.rows, kStagedRowThreads, bytes, plan), a, bytes);
  };
  if constexpr (TakesStagedQuads<Kernel>)
    if (plan.quads) return run(stagedRowsKernel<Kernel, true>);
  run(stagedRowsKernel<Kernel>);
}

/// The same for a Kernel whose rows read a row map (`mapName`, checked; else launchMappedRows), a bad
/// entry's error naming `fn` (the public function called: Kernel::kName unless told).
template <class Kernel>
void launchMappedRowsStaged(const Gpu& g, const typename Kernel::Args& a, const char* mapName,
                            const char* fn = Kernel::kName) {
  if (a.rows == 0) return;
  const RowPlan& plan = rowPlan(Kernel::kName);
  if (!plan.blocks || !stageable(Kernel::stagedRow(a, 0), a.n, a.n))
    return launchMappedRows<Kernel>(g, a, mapName, fn);
  const std::size_t bytes = stagedSharedBytes<typename Kernel::Staged>(a.n);
  const auto run = [&](auto* kernel) {
    allowShared(g, fn, kernel, bytes);
    launchChecked(g, fn, {mapName}, kernel, residentGrid(g, kernel, a.rows, kStagedRowThreads, bytes, plan), a, bytes);
  };
  if constexpr (TakesStagedQuads<Kernel>)
    if (plan.quads) return run(stagedMappedRowsKernel<Kernel, true>);
  run(stagedMappedRowsKernel<Kernel>);
}

}  // namespace gizml::detail
