// The GPU simulator's own semantics (src/sim/, README "The GPU simulator"), in GIZML_CUDA_SIM builds
// only: kernels of a few lines, launched straight through the simulator's runtime, whose results
// are what CUDA defines: shuffles with masks and widths, a vote, __syncthreads, cp.async landing at
// its wait, blocks resident at once (GIZML_SIM_RESIDENT_BLOCKS) each with its own shared memory,
// threads taking their turns in a shuffled order (GIZML_SIM_SHUFFLE), and the launches and waits a
// GPU would refuse or never finish failing as such.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

#include "core/cuda_row_blocks.cuh"
#include "exact/mma_ptx.cuh"
#include "gizml/gizml.hpp"
#include "support/gpu.hpp"

namespace {

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  std::size_t n;
  explicit DeviceBuffer(std::size_t n_) : n(n_) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<T> read() const {
    std::vector<T> out(n);
    cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }
};

/// Sets an environment variable of the simulator's for a scope (unsets it where `value` is null),
/// as it was after: GIZML_SIM_RESIDENT_BLOCKS, GIZML_SIM_SHUFFLE (read at every launch).
struct SimEnvironment {
  std::string name, before;
  bool had;
  SimEnvironment(const char* name_, const char* value) : name(name_) {
    const char* b = std::getenv(name_);
    had = b != nullptr;
    if (had) before = b;
    if (value) setenv(name_, value, 1);
    else unsetenv(name_);
  }
  ~SimEnvironment() {
    if (had) setenv(name.c_str(), before.c_str(), 1);
    else unsetenv(name.c_str());
  }
};
/// The simulator's own order for a scope: a block at a time, its threads in order.
struct InOrder {
  SimEnvironment resident{"GIZML_SIM_RESIDENT_BLOCKS", nullptr}, shuffle{"GIZML_SIM_SHUFFLE", nullptr};
};

/// The launch's error (cleared) and the simulator's words for it.
std::string lastError() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

// out[t]: __shfl_sync from lane 31 over the whole warp, then on the upper half-warp only a
// __shfl_xor_sync of width 16 (lanes 16..31 swap with lane ^ 1); the lower half reads lane 0 with
// width 16 (its own group's lane 0).
__global__ void shuffleKernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  int v = __shfl_sync(0xffffffffu, 100 + lane, 31);
  if (lane >= 16) v += __shfl_xor_sync(0xffff0000u, 1000 * lane, 1, 16);
  else v += __shfl_sync(0x0000ffffu, 1000 * lane, 0, 16);
  out[threadIdx.x] = v;
}

TEST(GpuSimulator, ShufflesFollowMasksAndWidths) {
  DeviceBuffer<int> out(64);
  GIZML_LAUNCH(1, 64, 0, nullptr, shuffleKernel)(out.p);
  ASSERT_EQ(lastError(), "");
  const std::vector<int> v = out.read();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    const int expected = 131 + (lane >= 16 ? 1000 * (lane ^ 1) : 0);
    EXPECT_EQ(v[t], expected) << "thread " << t;
  }
}

// __byte_perm and __dp4a as CUDA's documentation defines them (the libdevice guide's
// __nv_byte_perm: byte n of the result is byte s<4n+2:4n> of y:x, the selector's upper 16 bits and
// each nibble's top bit unused; __dp4a: c plus the four products of signed bytes), which the 8-bit
// product's dot form (quant/product_cuda.cu) builds on: the kernels that use them agree with the
// simulator, and these cases tie the simulator to CUDA.
TEST(GpuSimulator, BytePermutesAndByteDotProductsAreCudas) {
  const unsigned x = 0x33221100u, y = 0x77665544u;
  EXPECT_EQ(__byte_perm(x, y, 0x3210u), x);
  EXPECT_EQ(__byte_perm(x, y, 0x7654u), y);
  EXPECT_EQ(__byte_perm(x, y, 0x5140u), 0x55114400u);
  EXPECT_EQ(__byte_perm(x, y, 0x7362u), 0x77336622u);
  EXPECT_EQ(__byte_perm(x, y, 0x9999u), 0x11111111u);   // a nibble's top bit unused
  EXPECT_EQ(__byte_perm(x, y, 0xabcd3210u), x);          // the upper 16 bits unused
  EXPECT_EQ(__dp4a(0x01020304, 0x01010101, 10), 20);
  EXPECT_EQ(__dp4a(static_cast<int>(0xff80017fu), 0x02020202, 0), -2);  // 2 (127 + 1 - 128 - 1)
  EXPECT_EQ(__dp4a(static_cast<int>(0x80808080u), static_cast<int>(0x80808080u), -65536), 0);
}

// A shuffle of width 16 whose xor reaches into a later group gives the caller its own value; one
// into an earlier group reads it (CUDA's __shfl_xor_sync).
__global__ void shuffleBeyondGroupKernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, lane, 16, 16);
}

TEST(GpuSimulator, ShuffleXorIntoALaterGroupKeepsTheCallersValue) {
  DeviceBuffer<int> out(32);
  GIZML_LAUNCH(1, 32, 0, nullptr, shuffleBeyondGroupKernel)(out.p);
  ASSERT_EQ(lastError(), "");
  const std::vector<int> v = out.read();
  for (int t = 0; t < 32; ++t) EXPECT_EQ(v[t], t < 16 ? t : t - 16) << "lane " << t;
}

// Thread t writes shared[t], then (after __syncthreads) reads its neighbour's. Without the barrier
// each simulated thread runs on to the vote before the next one starts, so in order it reads a slot
// not yet written: the launch's fresh dynamic shared memory, 0xff bytes (-1).
__global__ void syncKernel(int* out, bool withBarrier) {
  GIZML_DYNAMIC_SHARED(int, shared);
  const int t = static_cast<int>(threadIdx.x);
  shared[t] = 7 * t + 1;
  if (withBarrier) __syncthreads();
  const int neighbour = shared[(t + 1) % 128];
  const bool any = __any_sync(0xffffffffu, t % 32 == 5);
  out[t] = neighbour + (any ? 1000 : 0);
}

/// syncKernel's out, launched on 128 threads; after the barrier every thread has its neighbour's
/// value (checked here).
std::vector<int> syncKernelOut(bool withBarrier) {
  DeviceBuffer<int> out(128);
  GIZML_LAUNCH(1, 128, 128 * 4, nullptr, syncKernel)(out.p, withBarrier);
  EXPECT_EQ(lastError(), "");
  const std::vector<int> v = out.read();
  if (withBarrier)
    for (int t = 0; t < 128; ++t) EXPECT_EQ(v[t], 7 * ((t + 1) % 128) + 1 + 1000) << "thread " << t;
  return v;
}

TEST(GpuSimulator, SyncthreadsOrdersSharedMemoryAndItsAbsenceShows) {
  const InOrder inOrder;
  syncKernelOut(true);
  const std::vector<int> v = syncKernelOut(false);
  for (int t = 0; t < 127; ++t) EXPECT_EQ(v[t], -1 + 1000) << "thread " << t;
  EXPECT_EQ(v[127], 1 + 1000);  // shared[0], written by thread 0 before thread 127 ran
}

TEST(GpuSimulator, ShuffledTurnsGiveTheSameResultsWhereTheThreadsSynchronize) {
  const SimEnvironment shuffle("GIZML_SIM_SHUFFLE", "1");
  syncKernelOut(true);
  // Without the barrier, threads whose neighbour took its turn first now read what it wrote.
  const std::vector<int> v = syncKernelOut(false);
  int early = 0, late = 0;
  for (int t = 0; t < 128; ++t) {
    if (v[t] == 7 * ((t + 1) % 128) + 1 + 1000) ++early;
    else if (v[t] == -1 + 1000) ++late;
  }
  EXPECT_EQ(early + late, 128);
  EXPECT_GT(early, 1);  // in order only thread 127's neighbour (thread 0) has gone first
  EXPECT_GT(late, 0);
  const SimEnvironment bad("GIZML_SIM_SHUFFLE", "-3");
  DeviceBuffer<int> out(128);
  GIZML_LAUNCH(1, 128, 128 * 4, nullptr, syncKernel)(out.p, true);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

// cp.async: the copy lands at the wait that covers it, not before.
__global__ void copyKernel(const std::uint16_t* src, int* out) {
  GIZML_DYNAMIC_SHARED(std::uint16_t, tile);
  const int t = static_cast<int>(threadIdx.x);
  tile[8 * t] = 7;
  gizml::exact::mma::copyChunk16(tile + 8 * t, src + 8 * t);
  gizml::exact::mma::commitCopies();
  out[2 * t] = tile[8 * t];  // before the wait: still 7
  gizml::exact::mma::waitCopies<0>();
  out[2 * t + 1] = tile[8 * t];  // the source's
}

TEST(GpuSimulator, AsyncCopiesLandAtTheirWait) {
  DeviceBuffer<std::uint16_t> src(8 * 32);
  std::vector<std::uint16_t> host(8 * 32);
  for (int i = 0; i < 8 * 32; ++i) host[i] = static_cast<std::uint16_t>(100 + i);
  cudaMemcpy(src.p, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  DeviceBuffer<int> out(64);
  GIZML_LAUNCH(1, 32, 8 * 32 * 2, nullptr, copyKernel)(src.p, out.p);
  ASSERT_EQ(lastError(), "");
  const std::vector<int> v = out.read();
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(v[2 * t], 7) << "thread " << t;
    EXPECT_EQ(v[2 * t + 1], 100 + 8 * t) << "thread " << t;
  }
}

// Failures a GPU would hang on or refuse.
// Block 0 waits (a volatile poll with __nanosleep) for a flag that the grid's last block sets:
// a GPU finishes it only while both are resident. out[b * blockDim.x + t]: block b's static shared
// value (b + 1), written before the wait and read after it.
__global__ void waitForTheLastBlockKernel(int* flag, int* out) {
  __shared__ int mine;
  if (threadIdx.x == 0) mine = static_cast<int>(blockIdx.x) + 1;
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0)
    while (*static_cast<volatile int*>(flag) == 0) __nanosleep(64);
  if (threadIdx.x == 0 && blockIdx.x + 1 == gridDim.x) *static_cast<volatile int*>(flag) = 1;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = mine;
}

__global__ void skippedBarrierKernel(int* out) {
  if (threadIdx.x != 0) __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void partialShuffleKernel(int* out) {
  if (threadIdx.x % 32 < 31) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
}
__global__ void trapKernel(int*) { __trap(); }
__global__ void unwaitedCopyKernel(const std::uint16_t* src, int*) {
  GIZML_DYNAMIC_SHARED(std::uint16_t, tile);
  gizml::exact::mma::copyChunk16(tile + 8 * threadIdx.x, src + 8 * threadIdx.x);
  gizml::exact::mma::commitCopies();
}

TEST(GpuSimulator, DeadlocksTrapsAndRefusedLaunchesFailTheLaunch) {
  const InOrder inOrder;  // the first thread to fail is thread 0
  DeviceBuffer<int> out(64);
  GIZML_LAUNCH(1, 64, 0, nullptr, skippedBarrierKernel)(out.p);
  // Thread 0 ends; the other 63 meet at the barrier, which counts the live threads: CUDA's
  // behaviour for exited threads, so this one completes.
  EXPECT_EQ(lastError(), "");

  GIZML_LAUNCH(1, 32, 0, nullptr, partialShuffleKernel)(out.p);
  std::string e = lastError();
  EXPECT_NE(e.find("cudaErrorLaunchFailure"), std::string::npos) << e;
  EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("a warp shuffle"), std::string::npos) << e;

  GIZML_LAUNCH(2, 32, 0, nullptr, trapKernel)(out.p);
  e = lastError();
  EXPECT_NE(e.find("__trap()"), std::string::npos) << e;
  EXPECT_NE(e.find("block (0, 0, 0), thread (0, 0, 0)"), std::string::npos) << e;

  DeviceBuffer<std::uint16_t> src(8 * 32);
  GIZML_LAUNCH(1, 32, 512, nullptr, unwaitedCopyKernel)(src.p, out.p);
  e = lastError();
  EXPECT_NE(e.find("never waited for"), std::string::npos) << e;

  GIZML_LAUNCH(1, 32, 49 * 1024, nullptr, unwaitedCopyKernel)(src.p, out.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // over 48 KiB without cudaFuncSetAttribute
  // 48 KiB of dynamic memory beside static __shared__ bytes is over the 48 KiB too; the simulator,
  // which cannot count static bytes, refuses more than 47 KiB without the leave.
  GIZML_LAUNCH(1, 32, 48 * 1024, nullptr, waitForTheLastBlockKernel)(out.p, out.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(unwaitedCopyKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024),
            cudaErrorInvalidValue);  // over an H200's 227 KiB
  GIZML_LAUNCH(1, 2048, 0, nullptr, trapKernel)(out.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

TEST(GpuSimulator, ResidentBlocksRunAtOnceEachWithItsOwnSharedMemory) {
  DeviceBuffer<int> flag(1), out(3 * 64);
  // The launch of 3 blocks of 64 threads with `resident` at once (null: unset); its error.
  const auto launchWith = [&](const char* resident) {
    const SimEnvironment set("GIZML_SIM_RESIDENT_BLOCKS", resident);
    cudaMemset(flag.p, 0, sizeof(int));
    cudaMemset(out.p, 0, 3 * 64 * sizeof(int));
    GIZML_LAUNCH(3, 64, 0, nullptr, waitForTheLastBlockKernel)(flag.p, out.p);
    return lastError();
  };
  const std::string e = launchWith(nullptr);  // one block at a time: block 0 waits for ever
  EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("block (0, 0, 0), thread (0, 0, 0) waits at __nanosleep"), std::string::npos) << e;
  // 2: blocks 0 and 1, and block 2 once block 1 ends, beside the waiting 0. 3: all at once.
  for (const char* resident : {"2", "3"}) {
    EXPECT_EQ(launchWith(resident), "") << resident;
    const std::vector<int> o = out.read();
    for (int b = 0; b < 3; ++b)
      for (int t = 0; t < 64; ++t) ASSERT_EQ(o[b * 64 + t], b + 1) << resident << ": block " << b << ", thread " << t;
  }
  const SimEnvironment bad("GIZML_SIM_RESIDENT_BLOCKS", "many");
  GIZML_LAUNCH(1, 32, 0, nullptr, waitForTheLastBlockKernel)(flag.p, out.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // and the simulator says why on stderr
}

__global__ void carveoutKernel(float* p) { p[threadIdx.x] = 0.0f; }

// detail::preferSharedFor (core/cuda.cu, the block a row's launches under GIZML_CUDA_ROWS_PER_SM):
// the carveout, in whole percent rounded up, of blocks x (dynamic bytes + static bytes + the 1 KiB
// CUDA keeps a block) against a multiprocessor's 228 KiB; the simulator keeps what a kernel was
// asked, as CUDA does, and checks it as CUDA does (0 to 100, or -1).
TEST(GpuSimulator, CarveoutIsWhatTheBlocksTake) {
  const void* kernel = reinterpret_cast<const void*>(carveoutKernel);
  cudaFuncAttributes a{};
  ASSERT_EQ(cudaFuncGetAttributes(&a, carveoutKernel), cudaSuccess);
  EXPECT_EQ(a.preferredShmemCarveout, -1);
  gizml::detail::preferSharedFor(0, kernel, 24 * 1024, 4);  // 100 KiB of 228: 43.9 %
  ASSERT_EQ(cudaFuncGetAttributes(&a, carveoutKernel), cudaSuccess);
  EXPECT_EQ(a.preferredShmemCarveout, 44);
  gizml::detail::preferSharedFor(0, kernel, 24 * 1024, 9);  // 225 KiB: 98.7 %
  ASSERT_EQ(cudaFuncGetAttributes(&a, carveoutKernel), cudaSuccess);
  EXPECT_EQ(a.preferredShmemCarveout, 99);
  gizml::detail::preferSharedFor(0, kernel, 48 * 1024, 9);  // more than there is: all of it
  ASSERT_EQ(cudaFuncGetAttributes(&a, carveoutKernel), cudaSuccess);
  EXPECT_EQ(a.preferredShmemCarveout, 100);
  for (int bad : {101, -2})
    EXPECT_EQ(cudaFuncSetAttribute(carveoutKernel, cudaFuncAttributePreferredSharedMemoryCarveout, bad),
              cudaErrorInvalidValue);
}

__global__ void carveoutTakenBackKernel(float* p) { p[threadIdx.x] = 0.0f; }

/// The carveout CUDA holds for carveoutTakenBackKernel (-1: none).
int carveoutTakenBack() {
  cudaFuncAttributes a{};
  EXPECT_EQ(cudaFuncGetAttributes(&a, carveoutTakenBackKernel), cudaSuccess);
  return a.preferredShmemCarveout;
}

// A kernel keeps the last carveout set on it, so a hint one launch asked for (a plan holding fewer
// blocks a multiprocessor than fit) would hold for the kernel's later launches, of another shape or
// of an op whose plan holds none, and keep their blocks' shared memory from them. residentGrid
// takes it back (preferSharedFor with 0 blocks) where a launch holds no fewer than fit, and
// residentPerMultiprocessor before it asks CUDA for an occupancy it keeps (which a hint may limit).
TEST(GpuSimulator, ACarveoutHintIsTakenBackWhereALaunchAsksNone) {
  const void* k = reinterpret_cast<const void*>(carveoutTakenBackKernel);
  gizml::detail::preferSharedFor(0, k, 24 * 1024, 4);
  EXPECT_EQ(carveoutTakenBack(), 44);
  gizml::detail::preferSharedFor(0, k, 24 * 1024, 0);
  EXPECT_EQ(carveoutTakenBack(), -1);
  gizml::detail::preferSharedFor(0, k, 24 * 1024, 4);
  ASSERT_EQ(carveoutTakenBack(), 44);
  const int perSm = gizml::detail::residentPerMultiprocessor(0, k, 128, 24 * 1024);
  EXPECT_EQ(perSm, 9);  // 228 KiB / 25 KiB: asked without the hint
  EXPECT_EQ(carveoutTakenBack(), -1);
  gizml::detail::preferSharedFor(0, k, 24 * 1024, 4);
  EXPECT_EQ(gizml::detail::residentPerMultiprocessor(0, k, 128, 24 * 1024), 9);  // kept: nothing asked
  EXPECT_EQ(carveoutTakenBack(), 44);
}

// The same through residentGrid, as the block-a-row launches: 2 blocks a multiprocessor of the 9
// that fit (2 x 25 KiB of 228: 22 %), then a plan with no limit.
TEST(RowBlocksCuda, AKernelsCarveoutHintHoldsOnlyForLaunchesThatAskIt) {
  GIZML_NEED_GPU();
  const auto kernel = carveoutTakenBackKernel;  // residentGrid takes the kernel's own type
  const gizml::Gpu g = gizml::Gpu::open(0);
  gizml::detail::RowPlan few;
  few.rowsPerSm = 2;
  const gizml::detail::Grid limited = gizml::detail::residentGrid(g, kernel, 1000, 128, 24 * 1024, few);
  EXPECT_EQ(limited.blocks, 2u * gizml::detail::multiprocessors(0));
  EXPECT_EQ(carveoutTakenBack(), 22);
  const gizml::detail::Grid all = gizml::detail::residentGrid(g, kernel, 1000, 128, 24 * 1024, gizml::detail::RowPlan{});
  EXPECT_EQ(all.blocks, 9u * gizml::detail::multiprocessors(0));
  EXPECT_EQ(carveoutTakenBack(), -1);
}

// ---- prefetches into the L2 (cp.async.bulk.prefetch.L2; the half-warp rows' detail::prefetchRow) ----

__global__ void prefetchKernel(const char* p, unsigned bytes) { gizml::exact::mma::prefetchL2(p, bytes); }

TEST(GpuSimulator, PrefetchesAreCountedAndKeptInsideTheirAllocation) {
  DeviceBuffer<char> x(1000);
  const std::uint64_t before = gizml::sim::prefetchedL2Bytes();
  GIZML_LAUNCH(1, 1, 0, nullptr, prefetchKernel)(x.p + 16, 976);  // up to 992 of the 1000 bytes
  EXPECT_EQ(lastError(), "");
  EXPECT_EQ(gizml::sim::prefetchedL2Bytes() - before, 976u);
  GIZML_LAUNCH(1, 1, 0, nullptr, prefetchKernel)(x.p + 992, 16);  // 8 bytes past the end
  std::string e = lastError();
  EXPECT_NE(e.find("outside every allocation"), std::string::npos) << e;
  for (const auto& [offset, bytes] : {std::pair{8, 16u}, std::pair{0, 24u}, std::pair{0, 0u}}) {
    GIZML_LAUNCH(1, 1, 0, nullptr, prefetchKernel)(x.p + offset, bytes);
    e = lastError();
    EXPECT_NE(e.find("not a multiple of 16"), std::string::npos) << offset << ", " << bytes << ": " << e;
  }
  int local[8];
  GIZML_LAUNCH(1, 1, 0, nullptr, prefetchKernel)(reinterpret_cast<const char*>(local), 16);
  e = lastError();
  EXPECT_NE(e.find("outside every allocation"), std::string::npos) << e;
  DeviceBuffer<char> large(1 << 20);
  GIZML_LAUNCH(1, 1, 0, nullptr, prefetchKernel)(large.p, (1 << 20) - 16);  // the most one instruction takes
  EXPECT_EQ(lastError(), "");
  GIZML_LAUNCH(1, 1, 0, nullptr, prefetchKernel)(large.p, 1 << 20);
  e = lastError();
  EXPECT_NE(e.find("over 65535 chunks"), std::string::npos) << e;
  EXPECT_EQ(gizml::sim::prefetchedL2Bytes() - before, 976u + (1 << 20) - 16);
}

/// A row kernel of the half-warp rows that only counts its rows (out[r] += 1), its stagedRow the
/// rows of x `stride` floats apart.
struct CountedRows {
  struct Args {
    const float* x;
    std::int64_t rows, n, stride;
    float* out;
  };
  static const float* stagedRow(const Args& a, std::int64_t r) { return a.x + r * a.stride; }
  template <class Row>
  static void row(const Row& row, const Args& a, std::int64_t r) {
    if (row.leader()) a.out[r] += 1.0f;
  }
};
static_assert(gizml::detail::NamesStagedRow<CountedRows>);

TEST(GpuSimulator, AHalfWarpPrefetchesItsRowsWholeChunks) {
  const InOrder inOrder;
  DeviceBuffer<float> x(20 * 12289), out(20);
  cudaMemset(out.p, 0, 20 * sizeof(float));
  // The whole 16-byte chunks inside each row's bytes, counted apart from prefetchRow's own loop.
  const auto chunkBytes = [&](const CountedRows::Args& a) {
    std::uint64_t sum = 0;
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const auto start = reinterpret_cast<std::uintptr_t>(a.x + r * a.stride), end = start + 4 * a.n;
      if (4 * a.n > gizml::detail::kMostPrefetchedRow) continue;
      for (std::uintptr_t c = start - start % 16; c + 16 <= end; c += 16) sum += c >= start ? 16 : 0;
    }
    return sum;
  };
  // [5, 3072] (12 KiB rows); rows of 100 floats starting 4 bytes past 16 (the
  // first 12 and last 4 bytes of each left out); rows of 12288 floats (48 KiB, the most) and of 12289
  // (none); 20 rows on 2 blocks of 8 rows, so that the half-warps stride.
  const CountedRows::Args cases[] = {{x.p, 5, 3072, 3072, out.p},
                                     {x.p + 1, 7, 100, 103, out.p},
                                     {x.p, 3, 12288, 12288, out.p},
                                     {x.p, 3, 12289, 12289, out.p},
                                     {x.p + 2, 20, 520, 601, out.p}};
  for (const CountedRows::Args& a : cases) {
    const std::uint64_t before = gizml::sim::prefetchedL2Bytes();
    GIZML_LAUNCH(2, 16 * gizml::detail::kRowsPerBlock, 0, nullptr, gizml::detail::rowsKernel<CountedRows, true>)(a);
    ASSERT_EQ(lastError(), "") << a.n;
    EXPECT_EQ(gizml::sim::prefetchedL2Bytes() - before, chunkBytes(a)) << a.rows << " rows of " << a.n;
  }
  EXPECT_EQ(chunkBytes(cases[0]), 5u * 3072 * 4);
  EXPECT_EQ(chunkBytes(cases[3]), 0u);
  // Without kPrefetch (the default) nothing is asked.
  const std::uint64_t before = gizml::sim::prefetchedL2Bytes();
  GIZML_LAUNCH(2, 16 * gizml::detail::kRowsPerBlock, 0, nullptr, gizml::detail::rowsKernel<CountedRows>)(cases[0]);
  ASSERT_EQ(lastError(), "");
  EXPECT_EQ(gizml::sim::prefetchedL2Bytes(), before);
  // Every row ran once a launch: 6 launches of case 0's rows 0 .. 4, 5 of row 5 and 6, ...
  const std::vector<float> counts = out.read();
  EXPECT_EQ(counts[0], 6.0f);
  EXPECT_EQ(counts[19], 1.0f);
}

/// A row kernel of the half-warp rows whose values walk (forEachWide) stores y = x * 2 + w at each
/// element (F32, or BF16 where yBF16), x's rows `stride` floats apart, and marks which kind of step
/// took each element: 1 a quad's (QuadWarpRow::QuadAt), 2 an element's own (WarpRow::At).
struct QuadSteps {
  struct Args {
    const float *x, *w;
    std::int64_t rows, n, stride;
    float* y;
    std::uint16_t* yBF16;
    float* kind;
  };
  template <class Row>
  static void row(const Row& row, const Args& a, std::int64_t r) {
    const float* x = a.x + r * a.stride;
    row.forEachWide([&](const auto& at) {
      using At = std::decay_t<decltype(at)>;
      if constexpr (std::is_same_v<At, gizml::exact::QuadWarpRow::QuadAt>) a.kind[r * a.n + at.i] = 1.0f;
      if constexpr (std::is_same_v<At, gizml::exact::WarpRow::HeldAt> || std::is_same_v<At, gizml::exact::WarpRow::At>)
        a.kind[r * a.n + at.i] = 2.0f;
      const float v = at.load(x) * 2.0f + at.load(a.w);
      if (a.yBF16) at.store(a.yBF16 + r * a.n, v);
      else at.store(a.y + r * a.n, v);
    });
  }
};

// A QuadWarpRow's values walk takes quads, 16-byte (F32) or 8-byte (BF16) accesses, where n is a
// multiple of 4 and every row it reads and writes starts on such bytes; else an element a step, as
// a WarpRow always does. Either way each element's value is its own: the same bits.
TEST(GpuSimulator, AQuadRowTakesQuadsWhereItsRowsAreAligned) {
  const InOrder inOrder;
  constexpr std::int64_t kMost = 20 * 200;
  DeviceBuffer<float> x(kMost + 8), w(208), y(kMost), kind(kMost);
  DeviceBuffer<std::uint16_t> yBF16(kMost);
  std::vector<float> hostX(kMost + 8), hostW(208);
  for (std::size_t i = 0; i < hostX.size(); ++i) hostX[i] = 0.37f * static_cast<float>(i % 97) - 11.0f;
  for (std::size_t i = 0; i < hostW.size(); ++i) hostW[i] = 0.11f * static_cast<float>(i) + 0.5f;
  cudaMemcpy(x.p, hostX.data(), hostX.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(w.p, hostW.data(), hostW.size() * sizeof(float), cudaMemcpyHostToDevice);
  struct Case {
    std::int64_t offset, rows, n, stride;
    bool bf16;
    float kind;  // every element's step: 1 quads, 2 an element's own
  };
  // 20 rows of 200 (quads; 2 blocks of 8 rows, so the half-warps stride; 50 quads a row: a partial
  // step of 16); n = 18 and a row 4 bytes off 16 (an element a step); BF16 y; a stride that puts
  // every other row off 16 bytes (each row decides for itself).
  const Case cases[] = {{0, 20, 200, 200, false, 1.0f}, {0, 5, 18, 18, false, 2.0f},   {1, 5, 64, 64, false, 2.0f},
                        {0, 7, 100, 100, true, 1.0f},   {0, 9, 64, 66, false, 0.0f}};
  for (const Case& c : cases)
    for (const bool quads : {true, false}) {
      cudaMemset(kind.p, 0, kMost * sizeof(float));
      const QuadSteps::Args a{x.p + c.offset, w.p, c.rows, c.n, c.stride, c.bf16 ? nullptr : y.p,
                              c.bf16 ? yBF16.p : nullptr, kind.p};
      constexpr unsigned kThreads = 16 * gizml::detail::kRowsPerBlock;
      if (quads) GIZML_LAUNCH(2, kThreads, 0, nullptr, gizml::detail::rowsKernel<QuadSteps, false, true>)(a);
      else GIZML_LAUNCH(2, kThreads, 0, nullptr, gizml::detail::rowsKernel<QuadSteps>)(a);
      ASSERT_EQ(lastError(), "") << c.n;
      const std::vector<float> kinds = kind.read(), ys = y.read();
      const std::vector<std::uint16_t> bf16s = yBF16.read();
      for (std::int64_t r = 0; r < c.rows; ++r)
        for (std::int64_t i = 0; i < c.n; ++i) {
          const float want = hostX[c.offset + r * c.stride + i] * 2.0f + hostW[i];
          const std::int64_t at = r * c.n + i;
          const std::string where = std::to_string(c.n) + " row " + std::to_string(r) + " at " + std::to_string(i);
          if (c.bf16) ASSERT_EQ(bf16s[at], gizml::exact::floatToBF16(want)) << where;
          else ASSERT_EQ(gizml::exact::toBits(ys[at]), gizml::exact::toBits(want)) << where;
          // Case 4's rows start 264 bytes apart: the even rows on 16 bytes, the odd ones 8 off.
          const float wanted = !quads ? 2.0f : c.kind != 0.0f ? c.kind : r % 2 == 0 ? 1.0f : 2.0f;
          ASSERT_EQ(kinds[at], wanted) << where << (quads ? " (quads)" : "");
        }
    }
}

// The row ops' launches: where an op's plan prefetches (GIZML_CUDA_L2_PREFETCH=1 for every op in
// ctest's RowPrefetchCuda_l2_prefetch; GIZML_CUDA_ROW_PLAN for some in RowPrefetchCuda_row_plan)
// every half-warp of that op asks for the row it reads twice, whole, once; else (the default)
// nothing is asked. A GPU test by its name (GIZML_CUDA_SIM=1 runs it), on the simulator only: it
// counts what it asks.
TEST(RowPrefetchCuda, RowOpsAskForTheirRowsWhereAsked) {
  GIZML_NEED_GPU();
  using gizml::DType, gizml::Tensor, gizml::Key;
  namespace netops = gizml::netops;
  const gizml::Device gpu = gizml::Device::cuda(0);
  const std::int64_t rows = 5, n = 512;
  const Tensor x = Tensor::normal(Key{1, 1}, {rows, n}, gpu), w = Tensor::normal(Key{2, 1}, {n}, gpu);
  const Tensor shift = Tensor::normal(Key{3, 1}, {2, n}, gpu), scale = Tensor::normal(Key{4, 1}, {2, n}, gpu);
  const Tensor map = Tensor::fromFloats({0, 1, 1, 0, 1}, {rows}, DType::F32, gpu);
  const Tensor y = Tensor::empty({rows, n}, DType::BF16, gpu), q = Tensor::empty({rows, n}, DType::I8, gpu);
  const Tensor s = Tensor::empty({rows, 1}, DType::F32, gpu), sum = x.clone();
  int asking = 0;
  const auto expectAsked = [&](const char* op, std::uint64_t bytes, const auto& run) {
    const bool asked = gizml::detail::rowPlan(op).prefetch;
    asking += asked;
    const std::uint64_t before = gizml::sim::prefetchedL2Bytes();
    run();
    EXPECT_EQ(gizml::sim::prefetchedL2Bytes() - before, asked ? bytes : 0) << op;
  };
  const std::uint64_t f32Rows = rows * n * 4, bf16Rows = rows * n * 2;
  expectAsked("modulatedNorm", f32Rows, [&] { netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, false, y); });
  expectAsked("gatedNormAddInto", bf16Rows, [&] { netops::gatedNormAddInto(sum, y, w, shift, map, 1e-6); });
  expectAsked("rmsNorm", f32Rows, [&] { (void)netops::rmsNorm(x, w, 1e-6); });
  expectAsked("int8Rows", f32Rows, [&] { netops::int8RowsInto(x, q, s); });
  expectAsked("int8Rows", bf16Rows, [&] { netops::int8RowsInto(y, q, s); });
  expectAsked("modulatedInt8RowsInto", f32Rows,
              [&] { netops::modulatedInt8RowsInto(x, w, shift, scale, map, 1e-6, y, q, s, true); });
  (void)s.to(gizml::Device::host());  // the device error flag checked: no map entry was bad
  // How many of the six asked, as the ctest run says (GIZML_TEST_PREFETCHING; unset: any number).
  if (const char* expected = std::getenv("GIZML_TEST_PREFETCHING")) EXPECT_EQ(asking, std::atoi(expected));
}

TEST(GpuSimulator, MemoryStartsAsNaNsAndFreeingWhatWasNotAllocatedFails) {
  DeviceBuffer<float> x(5);
  for (float v : x.read()) EXPECT_TRUE(v != v);
  int local = 0;
  EXPECT_EQ(cudaFree(&local), cudaErrorInvalidDevicePointer);
}

}  // namespace
