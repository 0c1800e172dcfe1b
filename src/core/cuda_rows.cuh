// The GPU's loop over rows, the counterpart of exact::hostRows: a row a half-warp, 8 rows a block,
// the grid striding over the rows (so any number of rows fits in one launch).
#pragma once

#include <type_traits>

#include "core/cuda_launch.cuh"
#include "core/row_plan.hpp"
#include "exact/mma_ptx.cuh"
#include "exact/row16.hpp"

namespace gizml::detail {

constexpr int kRowsPerBlock = 8;

/// The most blocks a row launch on `device` starts, the rest of its rows taken by striding:
/// kMostBlocks, or where a plan holds at most rowsPerSm rows a multiprocessor at once (RowPlan,
/// core/row_plan.hpp; 0: no such limit) rowsPerSm / rowsPerBlock blocks of each, at least one. It
/// is there to measure one question on a GPU: all of a large tensor's rows at once read 2x their
/// bytes from memory (an H200, modulatedNorm on [8192, 3072] F32: 201 MB for 100 MB), as a row's
/// second read finds it gone from L2; fewer rows at once would keep it there, but leave fewer reads
/// in flight (cuda.cu).
unsigned rowBlocksCap(int device, long rowsPerSm, int rowsPerBlock = kRowsPerBlock);
/// `device`'s multiprocessors (0 where it cannot say). Read once a device (cuda.cu).
unsigned multiprocessors(int device);

/// The most bytes of a row prefetched: a longer row's is left alone (48 KiB, the most a block a row
/// stages; [8192, 3072] F32 rows are 12 KiB).
constexpr std::int64_t kMostPrefetchedRow = 48 * 1024;

/// A half-warp a row, kRowsPerBlock rows a block, at most rowBlocksCap blocks (the kernels stride).
inline Grid rowsGrid(const Gpu& g, std::int64_t rows, const RowPlan& plan) {
  const std::int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const std::int64_t cap = rowBlocksCap(g.device.index, plan.rowsPerSm);
  return Grid{static_cast<unsigned>(blocks < cap ? blocks : cap), 16 * kRowsPerBlock};
}

/// work(r) for this half-warp's rows of `rows`: kRowsPerBlock rows a block, the grid striding. The
/// 16 lanes of a half-warp share r, so they leave the loop together (the tree's shuffles need all
/// 16).
template <class Work>
__device__ void forHalfWarpRows(std::int64_t rows, Work work) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 16; r < rows; r += step)
    work(r);
}

/// Asks the L2 for the `bytes` at `first` (a row's input, where its op's plan prefetches:
/// RowPlan::prefetch): one instruction, the half-warp's first lane's, for the whole 16-byte chunks
/// inside them (the instruction's unit); nothing for a row over kMostPrefetchedRow. A hint: no
/// value changes. (The instruction takes uniform registers, one value a warp: nvcc loops over the
/// lanes whose values differ, so one lane a half-warp asks, two turns of that loop a warp, where a
/// lane for each kilobyte took some 24.)
/// Why: a half-warp keeps 4 loads of its own in flight, and all 8192 rows of [8192, 3072] at once
/// (a row a half-warp, the default) have some 2 MB in flight where an H200's memory wants 4 to 5;
/// fewer rows at once (RowPlan::rowsPerSm) would keep each row in the L2 for its second read, but
/// with fewer loads in flight still. A prefetch of the whole row moves it all into the L2 at once,
/// holding no register: with 16 or 32 rows a multiprocessor (25 or 50 MB of rows, the L2's 50 MB)
/// both reads could come from the L2. Not measured on a GPU yet: the sweep's runs pN ask
/// (tools/gpu-rows-sweep.sh). The row functions that read a row twice (Kernel::stagedRow) and the
/// 8-bit rows by rows prefetch.
__device__ inline void prefetchRow(const exact::WarpRow& row, const void* first, std::int64_t bytes) {
  if (!row.leader() || bytes > kMostPrefetchedRow) return;
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(first);
  const std::uintptr_t begin = (start + 15) & ~std::uintptr_t{15}, end = (start + bytes) & ~std::uintptr_t{15};
  if (begin < end)
    exact::mma::prefetchL2(reinterpret_cast<const void*>(begin), static_cast<std::uint32_t>(end - begin));
}
/// prefetchRow of n values of T at `first`.
template <class T>
__device__ void prefetchRow(const exact::WarpRow& row, const T* first, std::int64_t n) {
  prefetchRow(row, static_cast<const void*>(first), n * static_cast<std::int64_t>(sizeof(T)));
}

/// Whether Kernel names the input its rows read twice (stagedRow: F32 or BF16, a.n values), which
/// the half-warp rows prefetch where their plan asks (RowPlan::prefetch).
template <class Kernel>
concept NamesStagedRow = requires(const typename Kernel::Args& a) { Kernel::stagedRow(a, std::int64_t{}); };

/// Whether Kernel's row function has a values walk that can take quads (forEachWide over rows it
/// reads and writes at its elements: exact::QuadWarpRow::forEachQuadFrom), where its plan asks for them
/// (RowPlan::quads). Only those kernels are built both ways.
template <class Kernel>
concept TakesQuads = Kernel::kValuesInQuads;

/// The half-warp's row of a row kernel: with kQuads one whose values walk takes quads where it can.
template <bool kQuads>
using RowOf = std::conditional_t<kQuads, exact::QuadWarpRow, exact::WarpRow>;

/// With kQuads the half-warp's row takes quads where it can (RowOf).
template <class Kernel, bool kPrefetch = false, bool kQuads = false>
__global__ void rowsKernel(const typename Kernel::Args a) {
  const RowOf<kQuads> row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  forHalfWarpRows(a.rows, [&](std::int64_t r) {
    if constexpr (kPrefetch) prefetchRow(row, Kernel::stagedRow(a, r), a.n);
    Kernel::row(row, a, r);
  });
}

/// Kernel::row(WarpRow, args, r) for every row of args (Kernel::Args holds `rows` and `n`), as
/// Kernel's plan says (rowPlan(Kernel::kName)).
template <class Kernel>
void launchRows(const Gpu& g, const typename Kernel::Args& a) {
  if (a.rows == 0) return;
  const RowPlan& plan = rowPlan(Kernel::kName);
  const auto run = [&](auto* kernel) { launch(g, Kernel::kName, kernel, rowsGrid(g, a.rows, plan), a); };
  if constexpr (TakesQuads<Kernel>)
    if (plan.quads) {
      if constexpr (NamesStagedRow<Kernel>)
        if (plan.prefetch) return run(rowsKernel<Kernel, true, true>);
      return run(rowsKernel<Kernel, false, true>);
    }
  if constexpr (NamesStagedRow<Kernel>)
    if (plan.prefetch) return run(rowsKernel<Kernel, true>);
  run(rowsKernel<Kernel>);
}

/// rowsKernel for row functions that read a row map: row r runs only when Kernel::mapped(a, r)
/// lies in [0, a.mods); else the device error flag records it (naming the launch's first checked
/// argument) and the row is skipped, so nothing is read out of bounds. The half-warp's lanes read
/// the same entry, so they skip together.
template <class Kernel, bool kPrefetch = false, bool kQuads = false>
__global__ void mappedRowsKernel(const typename Kernel::Args a, const ErrorFlag flag) {
  const RowOf<kQuads> row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  forHalfWarpRows(a.rows, [&](std::int64_t r) {
    if (!flag.inRange(0, Kernel::mapped(a, r), a.mods)) return;
    if constexpr (kPrefetch) prefetchRow(row, Kernel::stagedRow(a, r), a.n);
    Kernel::row(row, a, r);
  });
}

/// Kernel::row for every row whose map entry (the argument `mapName`) is in range; a bad entry's
/// error names `fn` (the public function called: Kernel::kName unless told).
template <class Kernel>
void launchMappedRows(const Gpu& g, const typename Kernel::Args& a, const char* mapName,
                      const char* fn = Kernel::kName) {
  if (a.rows == 0) return;
  const RowPlan& plan = rowPlan(Kernel::kName);
  const auto run = [&](auto* kernel) { launchChecked(g, fn, {mapName}, kernel, rowsGrid(g, a.rows, plan), a); };
  if constexpr (TakesQuads<Kernel>)
    if (plan.quads) {
      if constexpr (NamesStagedRow<Kernel>)
        if (plan.prefetch) return run(mappedRowsKernel<Kernel, true, true>);
      return run(mappedRowsKernel<Kernel, false, true>);
    }
  if constexpr (NamesStagedRow<Kernel>)
    if (plan.prefetch) return run(mappedRowsKernel<Kernel, true>);
  run(mappedRowsKernel<Kernel>);
}

}  // namespace gizml::detail
