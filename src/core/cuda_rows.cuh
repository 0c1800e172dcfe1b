// The GPU's loop over rows, the counterpart of exact::hostRows: a row a half-warp, 8 rows a block,
// the grid striding over the rows (so any number of rows fits in one launch).
#pragma once

#include "core/cuda_launch.cuh"
#include "exact/row16.hpp"

namespace gizml::detail {

constexpr int kRowsPerBlock = 8;

/// The most blocks a row launch on `device` starts, the rest of its rows taken by striding:
/// kMostBlocks, or fewer where the environment asks. GIZML_CUDA_ROWS_PER_SM=N (N > 0) holds at most N
/// rows a multiprocessor at once (N / rowsPerBlock blocks of each, at least one; unset or 0: no
/// such limit). It is there to measure one question on a GPU: all of a large tensor's rows at once
/// read 2x their bytes from memory (an H200, modulatedNorm on [8192, 3072] F32: 201 MB for 100 MB),
/// as a row's second read finds it gone from L2; fewer rows at once would keep it there, but
/// leave fewer reads in flight. Read once a process (cuda.cu).
unsigned rowBlocksCap(int device, int rowsPerBlock = kRowsPerBlock);
/// `device`'s multiprocessors (0 where it cannot say). Read once a device (cuda.cu).
unsigned multiprocessors(int device);

/// A half-warp a row, kRowsPerBlock rows a block, at most rowBlocksCap blocks (the kernels stride).
inline Grid rowsGrid(const Gpu& g, std::int64_t rows) {
  const std::int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock, cap = rowBlocksCap(g.device.index);
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

template <class Kernel>
__global__ void rowsKernel(const typename Kernel::Args a) {
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  forHalfWarpRows(a.rows, [&](std::int64_t r) { Kernel::row(row, a, r); });
}

/// Kernel::row(WarpRow, args, r) for every row of args (Kernel::Args holds `rows` and `n`).
template <class Kernel>
void launchRows(const Gpu& g, const typename Kernel::Args& a) {
  if (a.rows == 0) return;
  launch(g, Kernel::kName, rowsKernel<Kernel>, rowsGrid(g, a.rows), a);
}

/// rowsKernel for row functions that read a row map: row r runs only when Kernel::mapped(a, r)
/// lies in [0, a.mods); else the device error flag records it (naming the launch's first checked
/// argument) and the row is skipped, so nothing is read out of bounds. The half-warp's lanes read
/// the same entry, so they skip together.
template <class Kernel>
__global__ void mappedRowsKernel(const typename Kernel::Args a, const ErrorFlag flag) {
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  forHalfWarpRows(a.rows, [&](std::int64_t r) {
    if (flag.inRange(0, Kernel::mapped(a, r), a.mods)) Kernel::row(row, a, r);
  });
}

/// Kernel::row for every row whose map entry (the argument `mapName`) is in range.
template <class Kernel>
void launchMappedRows(const Gpu& g, const typename Kernel::Args& a, const char* mapName) {
  if (a.rows == 0) return;
  launchChecked(g, Kernel::kName, {mapName}, mappedRowsKernel<Kernel>, rowsGrid(g, a.rows), a);
}

}  // namespace gizml::detail
