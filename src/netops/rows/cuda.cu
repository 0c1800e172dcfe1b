// The row ops on a CUDA GPU: each row a half-warp running the row function of rows.hpp (the same
// source as the host's, so the same order and the same bits), through the one launch path; where
// their plans ask (RowPlan::blocks) layerNorm and rmsNorm a block a row, x's row staged in shared
// memory (core/cuda_row_blocks.cuh: read once, not twice).
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "core/cuda_row_blocks.cuh"
#include "core/cuda_rows.cuh"
#include "exact/philox.hpp"
#include "netops/rows/rows.hpp"

namespace gizml::netops::rows {

namespace {

// One thread a column: its chains over the rows in order.
__global__ void layerNormGradColumnsKernel(const LayerNormGrad::Args a) {
  const std::int64_t j = detail::globalThread();
  if (j >= a.n) return;
  float accW = 0.0f, accB = 0.0f;
  for (std::int64_t r = 0; r < a.rows; ++r)
    LayerNormGrad::columnStep(a.dy[r * a.n + j], layerNormXhat(a.x[r * a.n + j], a.mean[r], a.rstd[r]), accW, accB);
  a.dweight[j] = accW;
  a.dbias[j] = accB;
}

// One thread a Philox counter: elements 4 g .. 4 g + 3.
__global__ void dropoutKernel(const Dropout::Args a) {
  const std::int64_t g = detail::globalThread();
  if (4 * g >= a.count) return;
  const exact::Philox4 w = exact::drawGroup(a.k0, a.k1, static_cast<std::uint64_t>(g));
  for (int j = 0; j < 4 && 4 * g + j < a.count; ++j)
    a.y[4 * g + j] = dropoutValue(a.x[4 * g + j], exact::uniformOfWord(w.v[j]), a.p, a.factor);
}

}  // namespace

void LayerNorm::cuda(const Gpu& g, const Args& a) { detail::launchRowsStaged<LayerNorm>(g, a, a.n); }

void RmsNorm::cuda(const Gpu& g, const Args& a) { detail::launchRowsStaged<RmsNorm>(g, a, a.n); }

void CrossEntropy::cuda(const Gpu& g, const Args& a) { detail::launchRows<CrossEntropy>(g, a); }

void Argmax::cuda(const Gpu& g, const Args& a) { detail::launchRows<Argmax>(g, a); }

void LayerNormGrad::cuda(const Gpu& g, const Args& a) {
  detail::launchRows<LayerNormGrad>(g, a);
  detail::launch(g, kName, layerNormGradColumnsKernel, detail::Grid::forItems(a.n), a);
}

void Dropout::cuda(const Gpu& g, const Args& a) {
  detail::launch(g, kName, dropoutKernel, detail::Grid::forItems((a.count + 3) / 4), a);
}

}  // namespace gizml::netops::rows
