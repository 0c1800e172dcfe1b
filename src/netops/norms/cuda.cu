// The diffusion norms on a CUDA GPU: each row a half-warp running the row function of norms.hpp
// (the same source as the host's, so the same order and the same bits), through the one launch
// path; a row map's entries are checked by the kernel with the device error flag.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "core/cuda_launch.cuh"
#include "core/cuda_row_blocks.cuh"
#include "core/cuda_rows.cuh"
#include "exact/mma_ptx.cuh"
#include "netops/norms/norms.hpp"

namespace gizml::netops::norms {

namespace {

/// groupNorm's first pass, streamed: a half-warp a slice, as GroupNormSlices::row (lane l's two
/// chains over elements l, l + 16, ... in order, then the tree), but the slice's values come
/// through a ring of Stages stages of shared memory, filled by cp.async Stages - 1 stages ahead.
/// A video VAE's groups give few slices (512 for one image: 32 groups of 16), each long (3072
/// values a lane), so a GPU holds at most a few warps of them a multiprocessor; a lane's plain
/// loads would keep far too few bytes in flight for its memory, where the ring keeps
/// (Stages - 1) 4 KiB of each slice in flight. A lane reads Ahead of its values from the stage
/// before it runs their steps (in order), so that its shared-memory loads overlap.
namespace slices {
constexpr int kStageValues = 1024;  // 4 KiB
constexpr int kSlicesPerBlock = 2;  // a warp

/// The ring's depth and a lane's loads ahead: as measured on an H200 (6 stages, 48 KiB a block,
/// 4 loads ahead), or where GIZML_CUDA_ROW_BLOCKS=1 (not yet measured) 12 stages (96 KiB a
/// block: 44 KiB of each slice in flight) and 16 loads ahead.
struct Shallow {
  static constexpr int kStages = 6, kAhead = 4;
};
struct Deep {
  static constexpr int kStages = 12, kAhead = 16;
};

template <class Depth>
constexpr std::size_t sharedBytes() {
  return sizeof(float) * kSlicesPerBlock * Depth::kStages * kStageValues;
}

/// Whether every slice starts on 16 bytes and is whole 16-byte chunks (cp.async's unit).
bool streamable(const GroupNormSlices::Args& a) {
  return reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0 && a.n % 4 == 0 && a.groupLength % 4 == 0;
}

/// Dynamic shared memory: sharedBytes<Depth>(), a ring a half-warp.
template <class Depth>
__global__ void streamedKernel(const GroupNormSlices::Args a) {
  constexpr int kStages = Depth::kStages, kAhead = Depth::kAhead;
  GIZML_DYNAMIC_SHARED(float, ring);
  const int lane = static_cast<int>(threadIdx.x % 16), half = static_cast<int>(threadIdx.x / 16);
  const exact::WarpRow row{a.n, lane, 0xffffu << (threadIdx.x & 16u)};
  float* stages = ring + half * kStages * kStageValues;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kSlicesPerBlock;
  // Both half-warps of a warp leave together only if they run the same count of slices: the
  // loop runs to the first slice index past the end for both, and a half-warp past the end
  // takes an empty slice (no copies, no values).
  for (std::int64_t s0 = static_cast<std::int64_t>(blockIdx.x) * kSlicesPerBlock; s0 < a.rows; s0 += step) {
    const std::int64_t s = s0 + half;
    std::int64_t length = 0;
    const float* x = s < a.rows ? GroupNormSlices::slice(a, s, length) : a.x;
    const std::int64_t count = (length + kStageValues - 1) / kStageValues;
    const auto valuesOf = [&](std::int64_t t) {  // stage t's values (the last one may be short)
      const std::int64_t rest = length - t * kStageValues;
      return rest < kStageValues ? rest : std::int64_t{kStageValues};
    };
    // Stage t (values [t kStageValues, ...)) into ring slot t % kStages: 16-byte chunks, lane
    // by lane; one commit group a stage, empty past the last, so that "all but kStages - 1
    // groups done" always means "stage t is in".
    const auto issue = [&](std::int64_t t) {
      if (t < count) {
        const float* from = x + t * kStageValues;
        float* slot = stages + (t % kStages) * kStageValues;
        for (std::int64_t q = 4 * lane, values = valuesOf(t); q < values; q += 64) exact::mma::copyChunk16(slot + q, from + q);
      }
      exact::mma::commitCopies();
    };
    for (int t = 0; t < kStages - 1; ++t) issue(t);
    float sum = 0.0f, squares = 0.0f;
    for (std::int64_t t = 0; t < count; ++t) {
      issue(t + kStages - 1);
      exact::mma::waitCopies<kStages - 1>();  // this lane's chunks of stage t are in
      __syncwarp(row.mask);                   // and every lane's
      const float* slot = stages + (t % kStages) * kStageValues;
      const std::int64_t values = valuesOf(t);
      std::int64_t j = lane;
      for (; j + 16 * (kAhead - 1) < values; j += 16 * kAhead) {  // kAhead loads, then their steps
        float v[kAhead];
        for (int k = 0; k < kAhead; ++k) v[k] = slot[j + 16 * k];
        for (int k = 0; k < kAhead; ++k) GroupNormSlices::step(v[k], sum, squares);
      }
      for (; j < values; j += 16) GroupNormSlices::step(slot[j], sum, squares);
      __syncwarp(row.mask);  // every lane is done with the slot before the next issue refills it
    }
    exact::mma::waitCopies<0>();  // (only empty groups are left)
    sum = row.tree(sum);
    squares = row.tree(squares);
    if (s < a.rows && row.leader()) {
      a.partial[2 * s] = sum;
      a.partial[2 * s + 1] = squares;
    }
  }
}

template <class Depth>
void launch(const Gpu& g, const GroupNormSlices::Args& a) {
  const std::int64_t blocks = (a.rows + kSlicesPerBlock - 1) / kSlicesPerBlock;
  detail::allowShared(g, GroupNormSlices::kName, streamedKernel<Depth>, sharedBytes<Depth>());
  detail::launch(g, GroupNormSlices::kName, streamedKernel<Depth>,
                 detail::Grid{detail::stridingBlocks(blocks), 16 * kSlicesPerBlock}, a, sharedBytes<Depth>());
}
}  // namespace slices

/// pixelNorm where GIZML_CUDA_ROW_BLOCKS=1 (not yet measured on a GPU, as the block a row of
/// core/cuda_row_blocks.cuh): a thread a pixel reads its column twice (the chain, then the
/// values), and with every pixel resident at once the second read mostly misses the L2. Here a
/// block takes a tile of kTile pixels of a frame with all their channels, copied to shared memory
/// (16-byte cp.async chunks, the block's next tile's copy in flight meanwhile: forStaged); a warp's
/// lanes run the tile's chains over the channels from the copy (pixelSquareStep in channel order,
/// a pixel's chain in one lane, as pixelNormPixels'), then every thread takes channels of one pixel
/// for the values (pixelValue: each its own). x is read once; the same bits.
namespace pixelTiles {
constexpr std::int64_t kTile = 32;
constexpr unsigned kThreads = 256;
constexpr std::int64_t kMostTileBytes = 96 * 1024;  // two of them a block: 192 KiB (allowShared)

std::int64_t tileBytes(const PixelNorm::Args& a) { return a.c * kTile * (a.bf16 ? 2 : 4); }

/// Whether a frame's pixels are whole tiles on 16-byte addresses, a tile at most kMostTileBytes.
bool fits(const PixelNorm::Args& a) {
  return a.c > 0 && a.pixels % kTile == 0 && reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0 &&
         tileBytes(a) <= kMostTileBytes;
}

template <class T>
__global__ void kernel(const PixelNorm::Args a) {
  GIZML_DYNAMIC_SHARED(float, staging);
  __shared__ float scales[kTile];
  constexpr std::int64_t kPerChunk = 16 / sizeof(T), kChunksPerChannel = kTile / kPerChunk;
  const T* x = static_cast<const T*>(a.x);
  T* out = static_cast<T*>(a.out);
  const std::int64_t tilesPerFrame = a.pixels / kTile;
  // Tile t's element (channel 0, its first pixel) in x and out.
  const auto origin = [&](std::int64_t t) { return (t / tilesPerFrame) * a.c * a.pixels + (t % tilesPerFrame) * kTile; };
  detail::forStaged(
      a.frames * tilesPerFrame, a.c * kTile, reinterpret_cast<T*>(staging),
      [&](std::int64_t t, T* to) {  // channel ch's kTile values to to + ch kTile
        const T* from = x + origin(t);
        for (std::int64_t q = threadIdx.x; q < a.c * kChunksPerChannel; q += blockDim.x) {
          const std::int64_t ch = q / kChunksPerChannel, at = (q % kChunksPerChannel) * kPerChunk;
          exact::mma::copyChunk16(to + ch * kTile + at, from + ch * a.pixels + at);
        }
        exact::mma::commitCopies();
      },
      [&](std::int64_t t, const T* tile) {
        if (threadIdx.x < kTile) {
          const exact::WarpRow::At at{static_cast<std::int64_t>(threadIdx.x)};
          float ss = 0.0f;
          GIZML_UNROLL(8)
          for (std::int64_t ch = 0; ch < a.c; ++ch) ss = pixelSquareStep(at.load(tile + ch * kTile), ss);
          scales[threadIdx.x] = pixelScale(ss, a.c, a.eps);
        }
        __syncthreads();
        const exact::WarpRow::At at{static_cast<std::int64_t>(threadIdx.x % kTile)};
        const float r = scales[threadIdx.x % kTile];
        T* const o = out + origin(t);
        const std::int64_t step = blockDim.x / kTile;
        std::int64_t ch = threadIdx.x / kTile;
        for (; ch + 3 * step < a.c; ch += 4 * step) {  // 4 channels' loads before their stores
          float v[4];
          for (int k = 0; k < 4; ++k) v[k] = at.load(tile + (ch + k * step) * kTile);
          for (int k = 0; k < 4; ++k) at.store(o + (ch + k * step) * a.pixels, pixelValue(v[k], r, a.act));
        }
        for (; ch < a.c; ch += step) at.store(o + ch * a.pixels, pixelValue(at.load(tile + ch * kTile), r, a.act));
      });
}

void launch(const Gpu& g, const PixelNorm::Args& a) {
  const auto k = a.bf16 ? kernel<std::uint16_t> : kernel<float>;
  const std::size_t bytes = 2 * static_cast<std::size_t>(tileBytes(a));
  detail::allowShared(g, PixelNorm::kName, k, bytes);
  detail::launch(g, PixelNorm::kName, k,
                 detail::residentGrid(g, k, a.frames * (a.pixels / kTile), kThreads, bytes), a, bytes);
}
}  // namespace pixelTiles

// One thread a (frame, pixel): its chain over the channels.
__global__ void pixelNormKernel(const PixelNorm::Args a) {
  const std::int64_t i = detail::globalThread();
  if (i >= a.frames * a.pixels) return;
  PixelNorm::pixels(exact::WarpRow::At{i % a.pixels}, a, i / a.pixels);
}

}  // namespace

// A half-warp a row, or with GIZML_CUDA_ROW_BLOCKS=1 a block a row, its x (y) staged in shared
// memory (core/cuda_row_blocks.cuh).
void ModulatedNorm::cuda(const Gpu& g, const Args& a) { detail::launchMappedRowsStaged<ModulatedNorm>(g, a, "map"); }

void GatedNormAdd::cuda(const Gpu& g, const Args& a) { detail::launchMappedRowsStaged<GatedNormAdd>(g, a, "map"); }

void RowNormRope::cuda(const Gpu& g, const Args& a) { detail::launchRowsStaged<RowNormRope>(g, a, a.stride); }

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

// A half-warp a slice (streamed where the slices are 16-byte aligned), then a half-warp a chunk of
// a channel (each adds its group's partial sums in order).
void GroupNormSlices::cuda(const Gpu& g, const Args& a) {
  if (a.rows == 0) return;
  if (!slices::streamable(a)) return detail::launchRows<GroupNormSlices>(g, a);
  // The deeper ring only where a slice outlasts the shallow one (it costs a block 96 KiB).
  if (detail::rowBlocksWanted() && a.n > slices::Shallow::kStages * slices::kStageValues)
    return slices::launch<slices::Deep>(g, a);
  slices::launch<slices::Shallow>(g, a);
}

namespace {
/// groupNorm's second pass where GIZML_CUDA_ROW_BLOCKS=1 (not yet measured on a GPU, as the block a
/// row of core/cuda_row_blocks.cuh): a block a chunk of kChunk values of a channel, each thread
/// kSteps 16-byte pieces of it (4 values a load: 64 bytes in flight a thread, against 16 for a
/// half-warp lane's 4 steps), loaded before its group's statistics are found (by thread 0, the
/// loads in flight meanwhile). groupNormValue on each value: the same bits, in any order of chunks.
namespace quads {
constexpr unsigned kThreads = 256;
constexpr int kSteps = 4;
constexpr std::int64_t kChunk = 4 * kSteps * kThreads;  // 4096 values

struct Args {
  GroupNorm::Args channels;
  std::int64_t chunks;  // a channel's
};

/// Whether every piece starts on 16 bytes in x and y (8 in a BF16 y): channels of whole pieces.
bool fits(const GroupNorm::Args& a) {
  const auto on = [](const void* p, unsigned bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; };
  return a.n % 4 == 0 && on(a.x, 16) && (a.yBF16 ? on(a.yBF16, 8) : on(a.y, 16));
}

#if defined(GIZML_CUDA_SIM)
// The simulator's threads are C++ code: copies, no type punning; an unaligned piece traps as a GPU's
// load would fault.
inline float4 loadPiece(const float* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) __trap();
  float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storePiece(float* p, const float4& v) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) __trap();
  std::memcpy(p, &v, sizeof v);
}
inline void storePiece(std::uint16_t* p, const uint2& v) {
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) __trap();
  std::memcpy(p, &v, sizeof v);
}
#else
__device__ __forceinline__ float4 loadPiece(const float* p) { return *reinterpret_cast<const float4*>(p); }
// Streaming stores (st.global.cs: nothing reads y back soon), one 16-byte (8-byte) store each.
__device__ __forceinline__ void storePiece(float* p, const float4& v) { __stcs(reinterpret_cast<float4*>(p), v); }
__device__ __forceinline__ void storePiece(std::uint16_t* p, const uint2& v) { __stcs(reinterpret_cast<uint2*>(p), v); }
#endif

__global__ void kernel(const Args q) {
  const GroupNorm::Args& a = q.channels;
  __shared__ exact::MeanRstd shared;
  for (std::int64_t c = blockIdx.x; c < a.rows * q.chunks; c += gridDim.x) {
    // Every channel's last chunk first, then every channel's one before it, and so on: the first
    // pass streams all slices at once, so what the L2 still holds of x after it is the end of each
    // slice (a channel, for a VAE's 16 channels a group of 16 slices); these blocks read it first.
    const std::int64_t ch = c % a.rows, start = (q.chunks - 1 - c / a.rows) * kChunk, rest = a.n - start;
    const std::int64_t pieces = (rest < kChunk ? rest : kChunk) / 4, at0 = ch * a.n + start;
    float4 v[kSteps];
    for (int k = 0; k < kSteps; ++k) {
      const std::int64_t p = threadIdx.x + k * kThreads;
      if (p < pieces) v[k] = loadPiece(a.x + at0 + 4 * p);
    }
    if (threadIdx.x == 0) shared = GroupNorm::stats(a, ch);
    __syncthreads();
    const exact::MeanRstd s = shared;
    const float w = a.w[ch], b = a.b[ch];
    const auto value = [&](float x) { return groupNormValue(x, s.mean, s.rstd, w, b, a.act); };
    for (int k = 0; k < kSteps; ++k) {
      const std::int64_t p = threadIdx.x + k * kThreads;
      if (p >= pieces) continue;
      const float4 y{value(v[k].x), value(v[k].y), value(v[k].z), value(v[k].w)};
      if (a.yBF16) {
        storePiece(a.yBF16 + at0 + 4 * p, uint2{exact::packBF16(y.x, y.y), exact::packBF16(y.z, y.w)});
      } else {
        storePiece(a.y + at0 + 4 * p, y);
      }
    }
    __syncthreads();  // `shared` free for the next chunk
  }
}
}  // namespace quads
}  // namespace

void GroupNorm::cuda(const Gpu& g, const Args& a) {
  if (detail::rowBlocksWanted() && quads::fits(a)) {
    const std::int64_t chunks = (a.n + quads::kChunk - 1) / quads::kChunk;
    if (a.rows * chunks == 0) return;
    return detail::launch(g, kName, quads::kernel, detail::rowBlocksGrid(g, a.rows * chunks, quads::kThreads),
                          quads::Args{a, chunks});
  }
  const std::int64_t n = a.n < GroupNormChunks::kChunk ? a.n : GroupNormChunks::kChunk;
  const std::int64_t chunks = n == 0 ? 0 : (a.n + n - 1) / n;
  detail::launchRows<GroupNormChunks>(g, {a, a.rows * chunks, n, chunks});
}

void PixelNorm::cuda(const Gpu& g, const Args& a) {
  if (a.frames * a.pixels == 0) return;
  if (detail::rowBlocksWanted() && pixelTiles::fits(a)) return pixelTiles::launch(g, a);
  detail::launch(g, kName, pixelNormKernel, detail::Grid::forItems(a.frames * a.pixels), a);
}

}  // namespace gizml::netops::norms
