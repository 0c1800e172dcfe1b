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

/// groupNorm's second pass on a GPU: a half-warp a chunk of kChunk values of a channel (the last
/// one shorter), not a whole channel: a video VAE's 512 channels of 48 x 1024 would be 512
/// half-warps (8192 threads), far too few to keep a GPU's memory busy; in chunks they are 6144.
/// Each chunk adds its group's partial sums again (groupStats: the same f64 steps, the same bits).
struct GroupNormChunks {
  static constexpr const char* kName = GroupNorm::kName;
  static constexpr std::int64_t kChunk = 4096;
  struct Args {
    GroupNorm::Args channels;
    std::int64_t rows, n;  // the chunks, kChunk (or the channels' length, if shorter)
    std::int64_t chunks;   // a channel's
  };
  template <class Row>
  __device__ static void row(const Row& row, const Args& a, std::int64_t r) {
    const std::int64_t ch = r / a.chunks, start = (r % a.chunks) * a.n, rest = a.channels.n - start;
    GroupNorm::chunk(row.ofLength(rest < a.n ? rest : a.n), a.channels, ch, start);
  }
};

// A half-warp a slice, then a half-warp a chunk of a channel (each adds its group's partial sums
// in order).
void GroupNormSlices::cuda(const Gpu& g, const Args& a) { detail::launchRows<GroupNormSlices>(g, a); }

void GroupNorm::cuda(const Gpu& g, const Args& a) {
  const std::int64_t n = a.n < GroupNormChunks::kChunk ? a.n : GroupNormChunks::kChunk;
  const std::int64_t chunks = n == 0 ? 0 : (a.n + n - 1) / n;
  detail::launchRows<GroupNormChunks>(g, {a, a.rows * chunks, n, chunks});
}

void PixelNorm::cuda(const Gpu& g, const Args& a) {
  detail::launch(g, kName, pixelNormKernel, detail::Grid::forItems(a.frames * a.pixels), a);
}

}  // namespace gizml::netops::norms
