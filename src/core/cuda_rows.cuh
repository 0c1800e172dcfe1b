// The GPU's loop over rows, the counterpart of exact::hostRows: a row a half-warp, 8 rows a block,
// the grid striding over the rows (so any number of rows fits in one launch).
#pragma once

#include "core/cuda_launch.cuh"
#include "exact/row16.hpp"

namespace gizml::detail {

constexpr int kRowsPerBlock = 8;

template <class Kernel>
__global__ void rowsKernel(const typename Kernel::Args a) {
  const exact::WarpRow row{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock;
  // The 16 lanes of a half-warp share r, so they leave the loop together (the tree's shuffles
  // need all 16).
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 16; r < a.rows; r += step)
    Kernel::row(row, a, r);
}

/// Kernel::row(WarpRow, args, r) for every row of args (Kernel::Args holds `rows` and `n`).
template <class Kernel>
void launchRows(const Gpu& g, const typename Kernel::Args& a) {
  if (a.rows == 0) return;
  const std::int64_t blocks = (a.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const unsigned gridBlocks = static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));  // the grid strides
  launch(g, Kernel::kName, rowsKernel<Kernel>, Grid{gridBlocks, 16 * kRowsPerBlock}, a);
}

}  // namespace gizml::detail
