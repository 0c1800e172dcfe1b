// The GPU's second loop over rows: a block a row, for the row ops that read a row twice (their
// statistics, then their values). rowsKernel (core/cuda_rows.cuh) gives a row a half-warp, and on
// an H200 all 8192 rows of a [8192, 3072] F32 tensor are then resident at once: a row's second
// read misses the L2 (modulatedNorm read 201 MB for its 100 MB of x), and a half-warp keeps only a
// few loads in flight. Here a block copies its row into shared memory with cp.async, every thread
// a few 16-byte chunks (the whole row in flight at once); one half-warp finds the statistics from
// that copy (the row type's chains, the same order as a half-warp's row: the same bits); then
// every thread takes its share of the values (elementwise, so any share gives the same bits).
// Nothing is read twice from memory, and the rows in flight are those of the blocks resident.
//
// Not measured on a GPU yet: it runs only where GIZML_CUDA_ROW_BLOCKS=1 (rowBlocksWanted), so
// that a GPU session can compare it with the half-warp rows in one build (tools/gpu-rows-sweep.sh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/cuda_launch.cuh"
#include "core/cuda_rows.cuh"
#include "exact/mma_ptx.cuh"
#include "exact/row16.hpp"

namespace gizml::detail {

/// Whether the row ops that can take a block a row do (GIZML_CUDA_ROW_BLOCKS=1; unset or 0: a
/// half-warp a row, as before). Read once a process (cuda.cu).
bool rowBlocksWanted();

/// A staged row's most bytes: the 48 KiB a block may have without asking for more.
constexpr std::int64_t kMostStagedBytes = 48 * 1024;

/// Whether rows of n values of T, row r at first + r stride, can be staged by 16-byte copies:
/// every row starting on 16 bytes and whole chunks, at most kMostStagedBytes.
template <class T>
bool stageable(const T* first, std::int64_t n, std::int64_t stride) {
  const std::int64_t bytes = n * static_cast<std::int64_t>(sizeof(T));
  return first != nullptr && reinterpret_cast<std::uintptr_t>(first) % 16 == 0 && bytes % 16 == 0 &&
         (stride * static_cast<std::int64_t>(sizeof(T))) % 16 == 0 && bytes > 0 && bytes <= kMostStagedBytes;
}

/// The grid of a launch of a block a row: a block for each row, at most rowBlocksCap's.
inline Grid rowBlocksGrid(const Gpu& g, std::int64_t rows, unsigned threads) {
  const std::int64_t cap = rowBlocksCap(g.device.index, 1);
  return Grid{static_cast<unsigned>(rows < cap ? rows : cap), threads};
}

#if defined(__CUDACC__)
/// Copies a row of n values of T (stageable) from `from` to `to` (shared memory, 16-byte aligned),
/// the block's threads a chunk in turn, and waits until every chunk is in (for every thread).
template <class T>
__device__ void stageRow(T* to, const T* from, std::int64_t n) {
  constexpr std::int64_t kPerChunk = 16 / sizeof(T);
  const std::int64_t chunks = n / kPerChunk;
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
    exact::mma::copyChunk16(to + c * kPerChunk, from + c * kPerChunk);
  exact::mma::commitCopies();
  exact::mma::waitCopies<0>();
  __syncthreads();
}

/// Row r of Kernel with the whole block (every thread calls it). Kernel gives
///   Staged, stagedRow(a, r)         the input the row reads twice (F32 or BF16, a.n values)
///   statsOf(row, a, r, staged)      its statistics, that input read from `staged`: a RowAt
///   valueSteps(a), values(at, a, v) its values, one step at a time (a WarpRow step: one element
///                                   or pair), each step's alone
/// Dynamic shared memory: the staged row. Ends with a __syncthreads (the copy and `shared` free).
template <class Kernel, class RowAt>
__device__ void stagedRow(const typename Kernel::Args& a, std::int64_t r, typename Kernel::Staged* staged, RowAt& shared) {
  stageRow(staged, Kernel::stagedRow(a, r), a.n);
  if (threadIdx.x < 16) {
    const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x), 0xffffu};
    const RowAt v = Kernel::statsOf(row, a, r, staged);
    if (threadIdx.x == 0) shared = v;
  }
  __syncthreads();
  const RowAt v = shared;
  const exact::WarpRow steps{Kernel::valueSteps(a), static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  steps.forEachWideFrom(threadIdx.x, blockDim.x, [&](const auto& at) GIZML_HD_LAMBDA { Kernel::values(at, a, v); });
  __syncthreads();
}

template <class Kernel>
using StagedRowAt = decltype(Kernel::statsOf(std::declval<const exact::WarpRow&>(), std::declval<const typename Kernel::Args&>(),
                                             0, std::declval<const typename Kernel::Staged*>()));

/// Kernel's rows with a block a row: rows r = blockIdx.x, + gridDim.x, ...
template <class Kernel>
__global__ void stagedRowsKernel(const typename Kernel::Args a) {
  GIZML_DYNAMIC_SHARED(float, staging);  // one name and type for every instantiation (16-byte aligned)
  __shared__ StagedRowAt<Kernel> shared;
  for (std::int64_t r = blockIdx.x; r < a.rows; r += gridDim.x)
    stagedRow<Kernel>(a, r, reinterpret_cast<typename Kernel::Staged*>(staging), shared);
}

/// The same for a Kernel whose rows read a row map (mapped(a, r), a.mods): a row whose entry is out
/// of range is skipped by the whole block (every thread reads the same entry) and recorded in the
/// device error flag.
template <class Kernel>
__global__ void stagedMappedRowsKernel(const typename Kernel::Args a, const ErrorFlag flag) {
  GIZML_DYNAMIC_SHARED(float, staging);
  __shared__ StagedRowAt<Kernel> shared;
  for (std::int64_t r = blockIdx.x; r < a.rows; r += gridDim.x)
    if (flag.inRange(0, Kernel::mapped(a, r), a.mods))
      stagedRow<Kernel>(a, r, reinterpret_cast<typename Kernel::Staged*>(staging), shared);
}
#endif

/// The threads of a block a row for the staged row ops: 4 warps (at 12 KiB a row, as a [., 3072]
/// F32 one, 16 blocks of them fill a multiprocessor's 2048 threads).
constexpr unsigned kStagedRowThreads = 128;

/// Kernel's rows with a block a row where rowBlocksWanted() and its rows are stageable (rows
/// `stride` values apart); else a half-warp a row (launchRows). The same bits either way.
template <class Kernel>
void launchRowsStaged(const Gpu& g, const typename Kernel::Args& a, std::int64_t stride) {
  if (a.rows == 0) return;
  if (!rowBlocksWanted() || !stageable(Kernel::stagedRow(a, 0), a.n, stride)) return launchRows<Kernel>(g, a);
  launch(g, Kernel::kName, stagedRowsKernel<Kernel>, rowBlocksGrid(g, a.rows, kStagedRowThreads), a,
         static_cast<std::size_t>(a.n) * sizeof(typename Kernel::Staged));
}

/// The same for a Kernel whose rows read a row map (`mapName`, checked; else launchMappedRows).
template <class Kernel>
void launchMappedRowsStaged(const Gpu& g, const typename Kernel::Args& a, const char* mapName) {
  if (a.rows == 0) return;
  if (!rowBlocksWanted() || !stageable(Kernel::stagedRow(a, 0), a.n, a.n)) return launchMappedRows<Kernel>(g, a, mapName);
  launchChecked(g, Kernel::kName, {mapName}, stagedMappedRowsKernel<Kernel>, rowBlocksGrid(g, a.rows, kStagedRowThreads),
                a, static_cast<std::size_t>(a.n) * sizeof(typename Kernel::Staged));
}

}  // namespace gizml::detail
