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
/// 4 loads ahead), or where groupNorm's plan asks for blocks (RowPlan::blocks; not yet measured)
/// 12 stages (96 KiB a block: 44 KiB of each slice in flight) and 16 loads ahead.
struct Shallow {
  static constexpr int kStages = 6, kAhead = 4;
};
struct Deep {
  static constexpr int kStages = 12, kAhead = 16;
};
/// The shallow ring with the deep one's 16 loads ahead, for groupNorm's one launch ("ahead"), whose
/// slices run a few groups at a time and must each keep up with the second pass: a slice's time is
/// its lanes' chains of steps, and a lane that loads 4 values from its stage then runs their steps
/// waits out a shared-memory load's latency (some 30 cycles) every 4 values, 16 every 16.
struct ShallowWide {
  static constexpr int kStages = 6, kAhead = 16;
};

/// Half-warp h's ring starts h ringStride floats into the block's shared memory: its stages, then 16
/// floats (64 bytes) unused. A warp's two half-warps read the same step together, lanes 0 - 15 and
/// 16 - 31 each 16 consecutive floats of their own rings; a whole number of 32 banks apart (6 or
/// 12 stages of 1024 floats) both would read banks 0 - 15, a 2-way conflict on every read.
template <class Depth>
constexpr std::int64_t ringStride() {
  return Depth::kStages * kStageValues + 16;
}

template <class Depth>
constexpr std::size_t sharedBytes() {
  return sizeof(float) * kSlicesPerBlock * ringStride<Depth>();
}

/// Whether every slice starts on 16 bytes and is whole 16-byte chunks (cp.async's unit).
bool streamable(const GroupNormSlices::Args& a) {
  return reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0 && a.n % 4 == 0 && a.groupLength % 4 == 0;
}

/// Slice s through a half-warp's ring `stages` (Depth::kStages stages of shared memory): its two
/// sums, stored to partial by the leader. An s past the last slice is an empty one: no copies, no
/// values, nothing stored.
template <class Depth>
__device__ void streamSlice(const GroupNormSlices::Args& a, std::int64_t s, const exact::WarpRow& row, float* stages) {
  constexpr int kStages = Depth::kStages, kAhead = Depth::kAhead;
  const int lane = row.lane;
  std::int64_t length = 0;
  const float* x = s < a.rows ? GroupNormSlices::slice(a, s, length) : a.x;
  const std::int64_t count = (length + kStageValues - 1) / kStageValues;
  const auto valuesOf = [&](std::int64_t t) {  // stage t's values (the last one may be short)
    const std::int64_t rest = length - t * kStageValues;
    return rest < kStageValues ? rest : std::int64_t{kStageValues};
  };
  // Stage t (values [t kStageValues, ...)) into ring slot t % kStages: 16-byte chunks, lane by
  // lane; one commit group a stage, empty past the last, so that "all but kStages - 1 groups done"
  // always means "stage t is in".
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

/// This thread's half-warp as a slice's row: lanes 0 - 15 or 16 - 31 of its warp.
__device__ inline exact::WarpRow sliceRow(const GroupNormSlices::Args& a) {
  return exact::WarpRow{a.n, static_cast<int>(threadIdx.x % 16), 0xffffu << (threadIdx.x & 16u)};
}

/// Dynamic shared memory: sharedBytes<Depth>(), a ring a half-warp.
template <class Depth>
__global__ void streamedKernel(const GroupNormSlices::Args a) {
  GIZML_DYNAMIC_SHARED(float, ring);
  const int half = static_cast<int>(threadIdx.x / 16);
  const exact::WarpRow row = sliceRow(a);
  float* stages = ring + half * ringStride<Depth>();
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kSlicesPerBlock;
  // Both half-warps of a warp leave together only if they run the same count of slices: the
  // loop runs to the first slice index past the end for both, and a half-warp past the end
  // takes an empty slice.
  for (std::int64_t s0 = static_cast<std::int64_t>(blockIdx.x) * kSlicesPerBlock; s0 < a.rows; s0 += step)
    streamSlice<Depth>(a, s0 + half, row, stages);
}

template <class Depth>
void launch(const Gpu& g, const GroupNormSlices::Args& a) {
  const std::int64_t blocks = (a.rows + kSlicesPerBlock - 1) / kSlicesPerBlock;
  detail::allowShared(g, GroupNormSlices::kName, streamedKernel<Depth>, sharedBytes<Depth>());
  detail::launch(g, GroupNormSlices::kName, streamedKernel<Depth>,
                 detail::Grid{detail::stridingBlocks(blocks), 16 * kSlicesPerBlock}, a, sharedBytes<Depth>());
}
}  // namespace slices

/// pixelNorm where its plan asks for blocks (RowPlan::blocks; not yet measured on a GPU, as the
/// block a row of core/cuda_row_blocks.cuh): a thread a pixel reads its column twice (the chain, then the
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
  const detail::Grid grid =
      detail::residentGrid(g, k, a.frames * (a.pixels / kTile), kThreads, bytes, detail::rowPlan(PixelNorm::kName));
  detail::launch(g, PixelNorm::kName, k, grid, a, bytes);
}
}  // namespace pixelTiles

// One thread a (frame, pixel): its chain over the channels.
__global__ void pixelNormKernel(const PixelNorm::Args a) {
  const std::int64_t i = detail::globalThread();
  if (i >= a.frames * a.pixels) return;
  PixelNorm::pixels(exact::WarpRow::At{i % a.pixels}, a, i / a.pixels);
}

}  // namespace

// A half-warp a row, or where the op's plan asks (RowPlan::blocks) a block a row, its x (y) staged
// in shared memory (core/cuda_row_blocks.cuh).
void ModulatedNorm::cuda(const Gpu& g, const Args& a, const char* fn) {
  detail::launchMappedRowsStaged<ModulatedNorm>(g, a, "map", fn);
}

void GatedNormAdd::cuda(const Gpu& g, const Args& a) { detail::launchMappedRowsStaged<GatedNormAdd>(g, a, "map"); }

void RowNormRope::cuda(const Gpu& g, const Args& a) { detail::launchRowsStaged<RowNormRope>(g, a, a.stride); }

/// groupNorm's second pass on a GPU: a half-warp a chunk of kChunk values of a channel (the last
/// one shorter), not a whole channel: a video VAE's 512 channels of 48 x 1024 would be 512
/// half-warps (8192 threads), far too few to keep a GPU's memory busy; in chunks they are 6144.
/// Each chunk adds its group's partial sums again (groupStats: the same f64 steps, the same bits).
/// Chunk r is every channel's last first, then every channel's one before it, as quads::kernel
/// takes them (what the L2 still holds after the first pass is the end of each slice), and its
/// values from its end (WarpRow::forEachWideFrom).
struct GroupNormChunks {
  static constexpr const char* kName = GroupNorm::kName;
  static constexpr bool kValuesInQuads = true;  // a chunk's walk takes quads where its plan asks
  static constexpr std::int64_t kChunk = 4096;
  struct Args {
    GroupNorm::Args channels;
    std::int64_t rows, n;  // the chunks, kChunk (or the channels' length, if shorter)
    std::int64_t chunks;   // a channel's
  };
  template <class Row>
  __device__ static void row(const Row& row, const Args& a, std::int64_t r) {
    const std::int64_t ch = r % a.channels.rows, start = (a.chunks - 1 - r / a.channels.rows) * a.n;
    const std::int64_t rest = a.channels.n - start;
    GroupNorm::chunk(row.ofLength(rest < a.n ? rest : a.n), a.channels, ch, start);
  }
};

// A half-warp a slice (streamed where the slices are 16-byte aligned), then a half-warp a chunk of
// a channel (each adds its group's partial sums in order).
void GroupNormSlices::cuda(const Gpu& g, const Args& a) {
  if (a.rows == 0) return;
  if (!slices::streamable(a)) return detail::launchRows<GroupNormSlices>(g, a);
  // The deeper ring only where a slice outlasts the shallow one (it costs a block 96 KiB).
  if (detail::rowPlan(kName).blocks && a.n > slices::Shallow::kStages * slices::kStageValues)
    return slices::launch<slices::Deep>(g, a);
  slices::launch<slices::Shallow>(g, a);
}

namespace {
/// groupNorm's values in 16-byte pieces of x (4 values: an F32 y's 16 bytes, a BF16 y's 8), for the
/// kernels below that take a chunk of a channel a lane's pieces at a time.
namespace pieces {
/// Whether every piece starts on 16 bytes in x and y (8 in a BF16 y): channels of whole pieces.
bool fit(const GroupNorm::Args& a) {
  const auto on = [](const void* p, unsigned bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; };
  return a.n % 4 == 0 && on(a.x, 16) && (a.yBF16 ? on(a.yBF16, 8) : on(a.y, 16));
}

GIZML_HD float4 load(const float* p) { return exact::loadFloat4(p); }
// Streaming stores (st.global.cs: nothing reads y back soon), one 16-byte (8-byte) store each.
GIZML_HD void store(float* p, const float4& v) { exact::streamFloat4(p, v); }
#if defined(GIZML_CUDA_SIM)
// The simulator's threads are C++ code: copies, no type punning; an unaligned piece traps as a GPU's
// store would fault.
inline void store(std::uint16_t* p, const uint2& v) {
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) __trap();
  std::memcpy(p, &v, sizeof v);
}
#else
__device__ __forceinline__ void store(std::uint16_t* p, const uint2& v) { __stcs(reinterpret_cast<uint2*>(p), v); }
#endif

/// The piece v of x at `at` (channel ch's, its group's statistics s) as y: groupNormValue of each
/// value (each its own: the same bits in any order), one store.
__device__ __forceinline__ void storeValues(const GroupNorm::Args& a, std::int64_t at, const float4& v,
                                            const exact::MeanRstd& s, float w, float b) {
  const auto value = [&](float x) { return groupNormValue(x, s.mean, s.rstd, w, b, a.act); };
  const float4 y{value(v.x), value(v.y), value(v.z), value(v.w)};
  if (a.yBF16) store(a.yBF16 + at, uint2{exact::packBF16(y.x, y.y), exact::packBF16(y.z, y.w)});
  else store(a.y + at, y);
}
}  // namespace pieces

/// groupNorm's second pass where its plan asks for blocks (not yet measured on a GPU, as the block a
/// row of core/cuda_row_blocks.cuh): a block a chunk of kChunk values of a channel, each thread
/// kSteps 16-byte pieces of it (4 values a load: 64 bytes in flight a thread, against 16 for a
/// half-warp lane's 4 steps), loaded before its group's statistics are found (by thread 0, the
/// loads in flight meanwhile).
namespace quads {
constexpr unsigned kThreads = 256;
constexpr int kSteps = 4;
constexpr std::int64_t kChunk = 4 * kSteps * kThreads;  // 4096 values

struct Args {
  GroupNorm::Args channels;
  std::int64_t chunks;  // a channel's
};

__global__ void kernel(const Args q) {
  const GroupNorm::Args& a = q.channels;
  __shared__ exact::MeanRstd shared;
  for (std::int64_t c = blockIdx.x; c < a.rows * q.chunks; c += gridDim.x) {
    // Every channel's last chunk first, then every channel's one before it, and so on: the first
    // pass streams all slices at once, so what the L2 still holds of x after it is the end of each
    // slice (a channel, for a VAE's 16 channels a group of 16 slices); these blocks read it first.
    const std::int64_t ch = c % a.rows, start = (q.chunks - 1 - c / a.rows) * kChunk, rest = a.n - start;
    const std::int64_t count = (rest < kChunk ? rest : kChunk) / 4, at0 = ch * a.n + start;
    float4 v[kSteps];
    for (int k = 0; k < kSteps; ++k) {
      const std::int64_t p = threadIdx.x + k * kThreads;
      if (p < count) v[k] = pieces::load(a.x + at0 + 4 * p);
    }
    if (threadIdx.x == 0) shared = GroupNorm::stats(a, ch);
    __syncthreads();
    const exact::MeanRstd s = shared;
    const float w = a.w[ch], b = a.b[ch];
    for (int k = 0; k < kSteps; ++k) {
      const std::int64_t p = threadIdx.x + k * kThreads;
      if (p < count) pieces::storeValues(a, at0 + 4 * p, v[k], s, w, b);
    }
    __syncthreads();  // `shared` free for the next chunk
  }
}
}  // namespace quads

/// groupNorm in one launch, where its plan has it L >= 1 groups ahead (RowPlan::ahead; not yet
/// measured on a GPU).
/// In two launches the second pass reads x after the first has read all of it: a VAE's x of 100 MB
/// is twice an H200's L2, so x comes from memory twice and the op moves 3 bytes for its 2 (its
/// input and output), at best 67 % of a copy. Here the first pass runs at most L groups ahead of the
/// second, so that a group's x is still in the L2 when its chunks read it.
/// A block is a slice warp (warp 0, with a ring for each half-warp: streamSlice, as the first pass's
/// launch) and kChunkWarps chunk warps (a chunk of kChunk values of a channel, a lane's 16-byte
/// pieces kSteps at a time, as quads'). Each kind takes its items in order from a counter of its own
/// (a ticket each): slice pairs (2 of a group's 16 slices) group by group, and chunks group by group.
/// A group's chunks wait until its 16 slices are done (a counter the slices bump after their partial
/// sums); a group's slices wait until every chunk of group g - L is done (a counter the chunks bump).
/// Every wait is for items of earlier groups or earlier tickets, held by warps that are running and
/// that wait only for earlier ones still: no cycle, whatever the grid and however many of its blocks
/// are resident. The sums and the values are the two launches' (streamSlice, groupStats,
/// groupNormValue): the same bits.
namespace ahead {
constexpr int kChunkWarps = 3;  // a multiprocessor's 4 blocks (48 KiB each): 12, reading from the L2
constexpr unsigned kThreads = 32 * (1 + kChunkWarps);
constexpr std::int64_t kPairs = kGroupSlices / 2;  // a group's slice pairs
constexpr int kSteps = 8;                          // a lane's pieces loaded before their values
constexpr std::int64_t kChunk = 4096;              // 4 rounds of a warp's 32 x kSteps pieces

/// The counters, each on a 128-byte line of its own (GroupNormPasses::counterBytes: the waiting
/// warps of different groups poll different lines, so no one part of the L2 takes all the polls):
/// line 0, slice pairs taken; 1, chunks taken; 2 + g, group g's slices done; 2 + groups + g, group
/// g's chunks done.
constexpr std::int64_t kCounterStride = 128 / sizeof(unsigned long long);

struct Args {
  GroupNormSlices::Args slices;
  GroupNorm::Args channels;
  unsigned long long* counters;  // zeros at the launch
  std::int64_t groups, lead;     // lead: L
  std::int64_t chunks;           // a channel's
  GIZML_HD std::int64_t groupChunks() const { return channels.perGroup * chunks; }
  GIZML_HD unsigned long long* counter(std::int64_t line) const { return counters + kCounterStride * line; }
};

/// A warp's next item of the counter: lane 0 takes it, every lane gets it.
__device__ std::int64_t takeTicket(unsigned long long* counter) {
  unsigned long long t = 0;
  if (threadIdx.x % 32 == 0) t = atomicAdd(counter, 1ull);
  return static_cast<std::int64_t>(__shfl_sync(0xffffffffu, t, 0));
}

/// One thread waits until *counter >= n (polling at most every 2 us, from 64 ns on), then fences:
/// what was written before the counter reached n (another multiprocessor's partial sums) is then
/// what this thread reads past its L1 (__ldcg).
__device__ void waitFor(const unsigned long long* counter, std::int64_t n) {
  unsigned pause = 64;
  while (*static_cast<const volatile unsigned long long*>(counter) < static_cast<unsigned long long>(n)) {
    __nanosleep(pause);
    if (pause < 2048) pause *= 2;
  }
  __threadfence();
}

template <class Depth>
__device__ void sliceWarp(const Args& t, float* ring) {
  const exact::WarpRow row = slices::sliceRow(t.slices);
  float* stages = ring + (threadIdx.x / 16) * slices::ringStride<Depth>();
  for (;;) {
    const std::int64_t ticket = takeTicket(t.counter(0));
    if (ticket >= kPairs * t.groups) return;
    const std::int64_t g = ticket / kPairs;
    if (g >= t.lead) {  // no more than L groups ahead: every chunk of group g - L done
      if (threadIdx.x == 0) waitFor(t.counter(2 + t.groups + g - t.lead), t.groupChunks());
      __syncwarp();
    }
    slices::streamSlice<Depth>(t.slices, g * kGroupSlices + 2 * (ticket % kPairs) + threadIdx.x / 16, row, stages);
    if (row.leader()) {  // after its store of the slice's sums
      __threadfence();
      atomicAdd(t.counter(2 + g), 1ull);
    }
  }
}

__device__ void chunkWarp(const Args& t) {
  const GroupNorm::Args& a = t.channels;
  const std::int64_t lane = threadIdx.x % 32;
  for (;;) {
    const std::int64_t ticket = takeTicket(t.counter(1));
    if (ticket >= t.groupChunks() * t.groups) return;
    const std::int64_t g = ticket / t.groupChunks(), r = ticket % t.groupChunks();
    const std::int64_t ch = g * a.perGroup + r / t.chunks, start = (r % t.chunks) * kChunk, rest = a.n - start;
    const std::int64_t count = (rest < kChunk ? rest : kChunk) / 4, at0 = ch * a.n + start;
    exact::MeanRstd s{0.0f, 0.0f};
    if (lane == 0) {
      waitFor(t.counter(2 + g), kGroupSlices);
      float partial[2 * kGroupSlices];
      for (std::int64_t k = 0; k < 2 * kGroupSlices; ++k) partial[k] = __ldcg(a.partial + 2 * kGroupSlices * g + k);
      s = groupStats(partial, a.perGroup * a.n, a.eps);  // GroupNorm::stats' own
    }
    s.mean = __shfl_sync(0xffffffffu, s.mean, 0);
    s.rstd = __shfl_sync(0xffffffffu, s.rstd, 0);
    // Lane 0's wait orders the other lanes' stores too (y may be x, which the group's slices read):
    // the PTX memory model gives that order to a warp barrier, not to a shuffle.
    __syncwarp();
    const float w = a.w[ch], b = a.b[ch];
    for (std::int64_t p0 = lane; p0 < count; p0 += 32 * kSteps) {
      float4 v[kSteps];
      for (int k = 0; k < kSteps; ++k)
        if (p0 + 32 * k < count) v[k] = pieces::load(a.x + at0 + 4 * (p0 + 32 * k));
      for (int k = 0; k < kSteps; ++k)
        if (p0 + 32 * k < count) pieces::storeValues(a, at0 + 4 * (p0 + 32 * k), v[k], s, w, b);
    }
    __syncwarp();  // every lane's stores issued before lane 0 counts the chunk done
    if (lane == 0) atomicAdd(t.counter(2 + t.groups + g), 1ull);
  }
}

/// Dynamic shared memory: slices::sharedBytes<Depth>(), the slice warp's two rings (ShallowWide: 48
/// KiB and 128 bytes, 4 blocks a multiprocessor; Deep: 96 KiB and 128 bytes, 2; ptxas sm_90a: 80
/// registers).
template <class Depth>
__global__ void __launch_bounds__(kThreads) kernel(const Args t) {
  GIZML_DYNAMIC_SHARED(float, ring);
  if (threadIdx.x < 32) sliceWarp<Depth>(t, ring);
  else chunkWarp(t);
}

/// Whether the one launch takes these passes: L >= 1, and the slices and the chunks of whole
/// 16-byte pieces (else the two launches, whose kernels take any shape).
bool wanted(const GroupNormPasses::Args& p, const detail::RowPlan& plan) {
  return plan.ahead > 0 && p.counters != nullptr && slices::streamable(p.slices) && pieces::fit(p.channels);
}

template <class Depth>
void launch(const Gpu& g, const GroupNormPasses::Args& p, const detail::RowPlan& plan) {
  const std::int64_t groups = p.slices.rows / kGroupSlices, chunks = (p.channels.n + kChunk - 1) / kChunk;
  const Args t{p.slices, p.channels, p.counters, groups, plan.ahead, chunks};
  detail::useDevice(g.device.index, GroupNorm::kName);
  detail::cudaCheck(cudaMemsetAsync(p.counters, 0, GroupNormPasses::counterBytes(groups), detail::streamOf(g)),
                    GroupNorm::kName);
  const std::size_t bytes = slices::sharedBytes<Depth>();
  detail::allowShared(g, GroupNorm::kName, kernel<Depth>, bytes);
  // Enough blocks for every slice pair or for the chunks a chunk warp each, at most those resident.
  const std::int64_t chunkBlocks = (t.groupChunks() * groups + kChunkWarps - 1) / kChunkWarps;
  const std::int64_t blocks = kPairs * groups > chunkBlocks ? kPairs * groups : chunkBlocks;
  const detail::Grid grid = detail::residentGrid(g, kernel<Depth>, blocks, kThreads, bytes, plan);
  detail::launch(g, GroupNorm::kName, kernel<Depth>, grid, t, bytes);
}
}  // namespace ahead
}  // namespace

// Two launches (GroupNormSlices', GroupNorm's), or where groupNorm's plan has it L groups ahead
// one (its slices' ring the deeper one where the plan asks for blocks too).
void GroupNormPasses::cuda(const Gpu& g, const Args& a) {
  if (a.slices.rows == 0) return;
  const detail::RowPlan& plan = detail::rowPlan(GroupNorm::kName);
  if (ahead::wanted(a, plan)) {
    // The deeper ring as the first pass's launch takes it: where the plan asks for blocks, for
    // slices that outlast the shallow one.
    if (plan.blocks && a.slices.n > slices::Shallow::kStages * slices::kStageValues)
      return ahead::launch<slices::Deep>(g, a, plan);
    return ahead::launch<slices::ShallowWide>(g, a, plan);
  }
  GroupNormSlices::cuda(g, a.slices);
  GroupNorm::cuda(g, a.channels);
}

void GroupNorm::cuda(const Gpu& g, const Args& a) {
  const detail::RowPlan& plan = detail::rowPlan(kName);
  if (plan.blocks && pieces::fit(a)) {
    const std::int64_t chunks = (a.n + quads::kChunk - 1) / quads::kChunk;
    if (a.rows * chunks == 0) return;
    return detail::launch(g, kName, quads::kernel, detail::rowBlocksGrid(g, a.rows * chunks, quads::kThreads, plan),
                          quads::Args{a, chunks});
  }
  const std::int64_t n = a.n < GroupNormChunks::kChunk ? a.n : GroupNormChunks::kChunk;
  const std::int64_t chunks = n == 0 ? 0 : (a.n + n - 1) / n;
  detail::launchRows<GroupNormChunks>(g, {a, a.rows * chunks, n, chunks});
}

void PixelNorm::cuda(const Gpu& g, const Args& a) {
  if (a.frames * a.pixels == 0) return;
  if (detail::rowPlan(kName).blocks && pixelTiles::fits(a)) return pixelTiles::launch(g, a);
  detail::launch(g, kName, pixelNormKernel, detail::Grid::forItems(a.frames * a.pixels), a);
}

}  // namespace gizml::netops::norms
