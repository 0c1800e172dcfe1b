// The diffusion norms on a CUDA GPU: each row a half-warp running the row function of norms.hpp
// (the same source as the host's, so the same order and the same bits), through the one launch
// path; a row map's entries are checked by the kernel with the device error flag.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "core/cuda_rows.cuh"
#include "netops/norms/norms.hpp"

namespace gizml::netops::norms {

namespace {

// One thread a (frame, pixel): its chain over the channels.
__global__ void pixelNormKernel(const PixelNorm::Args a) {
  const std::int64_t i = detail::globalThread();
  if (i >= a.frames * a.pixels) return;
  PixelNorm::pixels(exact::WarpRow::At{i % a.pixels}, a, i / a.pixels);
}

}  // namespace

void ModulatedNorm::cuda(const Gpu& g, const Args& a) { detail::launchMappedRows<ModulatedNorm>(g, a, "map"); }

void GatedNormAdd::cuda(const Gpu& g, const Args& a) { detail::launchMappedRows<GatedNormAdd>(g, a, "map"); }

void RowNormRope::cuda(const Gpu& g, const Args& a) { detail::launchRows<RowNormRope>(g, a); }

// A half-warp a slice, then a half-warp a channel (each adds its group's partial sums in order).
void GroupNormSlices::cuda(const Gpu& g, const Args& a) { detail::launchRows<GroupNormSlices>(g, a); }

void GroupNorm::cuda(const Gpu& g, const Args& a) { detail::launchRows<GroupNorm>(g, a); }

void PixelNorm::cuda(const Gpu& g, const Args& a) {
  detail::launch(g, kName, pixelNormKernel, detail::Grid::forItems(a.frames * a.pixels), a);
}

}  // namespace gizml::netops::norms
