// The GPU simulator's device side (GIZML_CUDA_SIM builds; README "The GPU simulator"): what a
// kernel's source needs from CUDA when the .cu files are compiled by the host's C++ compiler and
// run on the CPU. CMake includes this before anything else in each .cu file of such a build
// (-include), with __CUDACC__ and __CUDA_ARCH__ (900) defined, so the kernels compile exactly the
// source nvcc compiles for the device, down to the same #if branches.
//
// Each CUDA thread of a block is a fiber (src/sim/sim.cpp); a block's fibers run on one OS thread,
// taking turns only where a thread must wait for others: __syncthreads, a warp's shuffles and votes,
// and the warp-wide matrix instructions of exact/mma_ptx.cuh (ldmatrix, mma), which the simulator
// computes from the PTX ISA's fragment tables (written apart from exact/mma_layout.hpp, so the two
// check each other). cp.async copies land only at the cp.async.wait_group that covers them, so a
// read of shared memory before its wait sees the old contents. A thread that waits where the others
// never come (a __syncthreads or a shuffle some lanes skip) is reported as a deadlock, not a hang.
#pragma once

#if !defined(GIZML_CUDA_SIM)
#error "cuda_sim.hpp is for GIZML_CUDA_SIM builds"
#endif

#include <bit>
#include <cstdint>
#include <type_traits>

// ---- CUDA's keywords ------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __align__(n) __attribute__((aligned(n)))
// A block's static shared memory: its fibers run on one OS thread, one block at a time there (the
// resident blocks of GIZML_SIM_RESIDENT_BLOCKS each on a thread of its own: sim.cpp).
#define __shared__ static thread_local

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
// CUDA's vector types that kernels use, with their sizes and alignments.
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

namespace gizml::sim {

/// The running CUDA thread: its indices, its launch's shape and dynamic shared memory.
struct ThreadIndices {
  dim3 threadIndex, blockIndex, blockShape, gridShape;  // threadIdx, blockIdx, blockDim, gridDim
  void* dynamicShared;
  unsigned lane;  // the thread's lane in its warp (its index in the block, mod 32)
};
/// The fiber running now (set by the scheduler at every switch).
const ThreadIndices& current();

// The collectives, all blocking the calling fiber until the lanes they name have come.
void syncThreads();
/// A shuffle: every lane in `mask` (of the calling thread's warp) puts in `bytes` of `mine`; once
/// all have, each reads lane `src`'s into `out`.
void warpExchange(unsigned mask, const void* mine, void* out, unsigned bytes, int src);
/// Whether `predicate` holds on any lane in `mask`.
bool warpAny(unsigned mask, bool predicate);
/// __syncwarp: every lane in `mask` waits until all have come.
void syncWarp(unsigned mask);
[[noreturn]] void trap();
/// __nanosleep: the calling thread's turn ends without its moving past a wait (no progress).
void pause();

// The warp-wide instructions of exact/mma_ptx.cuh (sim.cpp).
void copyAsync(void* dst, const void* src, unsigned bytes, unsigned srcBytes);
void commitCopies();
void waitCopies(int pending);
/// cp.async.bulk.prefetch.L2: a hint, so nothing moves; but checked as strictly as a copy (the
/// address and size 16-byte whole, at most 65535 chunks of 16 bytes, the bytes inside one
/// allocation: a kernel's prefetch must never reach past its tensor) and counted (prefetchedL2Bytes).
void prefetchL2(const void* p, unsigned bytes);
/// The bytes that prefetchL2 was asked for since the process started.
std::uint64_t prefetchedL2Bytes();
void ldmatrixX4(std::uint32_t (&r)[4], const void* row, bool trans);
enum class MmaKind { BF16, F16, S8, E4M3 };
/// d += a b of one m16n8k16 (BF16, F16) or m16n8k32 (S8, E4M3) instruction; d is float[4], or
/// std::int32_t[4] for S8.
void mma(MmaKind kind, void* d, const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1);

/// The source lane of __shfl_*_sync's `width` groups: lane's group start plus `srcInGroup`.
inline int laneInGroup(int lane, int srcInGroup, int width) { return (lane & ~(width - 1)) + (srcInGroup & (width - 1)); }

template <class T>
T shuffle(unsigned mask, T v, int src) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "a shuffled value is 4 or 8 bytes");
  T out;
  warpExchange(mask, &v, &out, sizeof(T), src);
  return out;
}

}  // namespace gizml::sim

#define threadIdx (::gizml::sim::current().threadIndex)
#define blockIdx (::gizml::sim::current().blockIndex)
#define blockDim (::gizml::sim::current().blockShape)
#define gridDim (::gizml::sim::current().gridShape)
/// `extern __shared__ __align__(16) T name[]`, a launch's dynamic shared memory (16-byte aligned).
#define GIZML_DYNAMIC_SHARED(T, name) T* const name = static_cast<T*>(::gizml::sim::current().dynamicShared)

inline void __syncthreads() { ::gizml::sim::syncThreads(); }
[[noreturn]] inline void __trap() { ::gizml::sim::trap(); }

template <class T>
T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32) {
  const int lane = static_cast<int>(::gizml::sim::current().lane);
  return ::gizml::sim::shuffle(mask, v, ::gizml::sim::laneInGroup(lane, srcLane, width));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  const int lane = static_cast<int>(::gizml::sim::current().lane), src = lane ^ laneMask;
  // CUDA: a source in a later group of `width` lanes gives the caller's own value (an earlier
  // group's is read).
  const bool later = (src & ~(width - 1)) > (lane & ~(width - 1));
  return ::gizml::sim::shuffle(mask, v, later ? lane : src);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::gizml::sim::syncWarp(mask); }
inline int __any_sync(unsigned mask, int predicate) { return ::gizml::sim::warpAny(mask, predicate != 0); }

/// __dp4a: c plus the four products of a's and b's bytes, each a signed byte (dp4a.s32.s32).
inline int __dp4a(int a, int b, int c) {
  const auto byte = [](int v, int i) { return static_cast<int>(static_cast<std::int8_t>(v >> (8 * i))); };
  for (int i = 0; i < 4; ++i) c += byte(a, i) * byte(b, i);
  return c;
}
/// __byte_perm (prmt.b32): byte i of the result is byte (s >> 4 i) & 7 of the 8 bytes x, y (x's
/// first); the default mode only.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const std::uint64_t bytes = (static_cast<std::uint64_t>(y) << 32) | x;
  unsigned out = 0;
  for (int i = 0; i < 4; ++i) out |= static_cast<unsigned>((bytes >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return out;
}

inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }

/// The block's fibers take turns on one OS thread only at collectives, so a read-modify-write
/// between two of them is never interleaved; blocks of one launch run one after another.
inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned desired) {
  const unsigned old = *p;
  if (old == expected) *p = desired;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
/// Memory is one (the host's), its order the program's: nothing to fence.
inline void __threadfence() {}
/// A load past the L1 (ld.global.cg): a plain load of the one memory.
template <class T>
T __ldcg(const T* p) {
  return *p;
}
/// A streaming store (st.global.cs: the L2 evicts its line first): a plain store, the simulator
/// having no cache.
template <class T>
void __stcs(T* p, T v) {
  *p = v;
}
/// A spin-wait's pause: the thread's turn ends (sim::pause), so that the threads it waits for run;
/// where every thread of the block only pauses, nothing can change and the launch fails as a deadlock.
inline void __nanosleep(unsigned) { ::gizml::sim::pause(); }
