// A language model's step on a CUDA GPU: argmax a row a half-warp by the row function of step.hpp,
// candidates a block of 256 workers a row, the split sum a thread an element — the host's formulas.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "core/cuda_rows.cuh"
#include "netops/step/step.hpp"

namespace gizml::netops::step {

namespace {

// A block a row (the grid strides over the rows), thread t its worker t.
__global__ void candidatesKernel(const CandidatesInto::Args a) {
  for (std::int64_t r = blockIdx.x; r < a.rows; r += gridDim.x)
    CandidatesInto::worker(a, r, static_cast<int>(threadIdx.x), a.cand + r * CANDIDATE_ROW + 2 * TOP_EACH * threadIdx.x);
}

__global__ void splitSumKernel(const SplitSumInto::Args a) {
  const std::int64_t i = detail::globalThread();
  if (i >= a.total) return;
  a.y[i] = splitSumValue(a.add ? a.y[i] : 0.0f, a.splits, [&](std::int64_t s) { return a.p[s * a.total + i]; });
}

}  // namespace

void ArgmaxInto::cuda(const Gpu& g, const Args& a) { detail::launchRows<ArgmaxInto>(g, a); }

void CandidatesInto::cuda(const Gpu& g, const Args& a) {
  detail::launch(g, kName, candidatesKernel, detail::Grid{detail::stridingBlocks(a.rows), CANDIDATE_WORKERS}, a);
}

void NormRotateInto::cuda(const Gpu& g, const Args& a) {
  if (a.map) detail::launchMappedRows<NormRotateInto>(g, a, "map");
  else detail::launchRows<NormRotateInto>(g, a);
}

void SiluMulRotatedInto::cuda(const Gpu& g, const Args& a) { detail::launchRows<SiluMulRotatedInto>(g, a); }

void SplitSumInto::cuda(const Gpu& g, const Args& a) {
  detail::launch(g, kName, splitSumKernel, detail::Grid::forItems(a.total), a);
}

}  // namespace gizml::netops::step
