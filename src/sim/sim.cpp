// The GPU simulator (GIZML_CUDA_SIM builds; README "The GPU simulator"): the runtime of
// sim/include/cuda_runtime.h and the device side of sim/cuda_sim.hpp.
//
// A launch runs GIZML_SIM_RESIDENT_BLOCKS of its blocks at once (1, one after another, unless set;
// up to 64), each starting as an earlier one ends, in the grid's order: the first on the calling
// thread, the others each on an OS thread of its own (BlockThreads), one thread running at a time.
// A block's threads are fibers (each its own stack; the switch below saves what the x86-64 System
// V ABI has the callee keep), resumed in turn by the scheduler, block after block; a fiber gives up
// its turn only where it must wait for others. So blocks that wait on each other through global
// memory (a ticket, a counter polled with __nanosleep) run as on a GPU that holds that many at
// once, in one interleaving of the many a GPU may take (memory stays sequentially consistent: a
// missing fence does not show). When a whole round of turns lets no thread go on, the threads wait
// for something that will never happen (a __syncthreads or a shuffle that some threads skip, a
// spin-wait on a block that never runs): the launch fails, naming where each waits. Failures (a
// deadlock, a misused instruction, __trap) end the launch and come back as cudaErrorLaunchFailure
// from cudaGetLastError, with the simulator's words in cudaGetErrorString and on stderr.
#include <sys/mman.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GIZML_SIM_ASAN 1
#else
#define GIZML_SIM_ASAN 0
#endif

// ---- fibers --------------------------------------------------------------------------------------
// gizmlSimSwitch(save, load): stores the running stack's pointer at *save and continues on `load`'s,
// which an earlier switch saved (or fiberStack prepared). The callee-saved registers, MXCSR and the
// x87 control word travel on each stack. gizmlSimStart: a new fiber's first return lands here; it
// calls r13(r12) (fiberEntry(fiber)), which never returns.
asm(R"(
  .text
  .globl gizmlSimSwitch
  .type gizmlSimSwitch, @function
gizmlSimSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size gizmlSimSwitch, .-gizmlSimSwitch
  .globl gizmlSimStart
  .type gizmlSimStart, @function
gizmlSimStart:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size gizmlSimStart, .-gizmlSimStart
)");
extern "C" void gizmlSimSwitch(void** save, void* load);
extern "C" void gizmlSimStart();

namespace gizml::sim {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;
constexpr int kMaxThreads = 1024;
constexpr int kMostResidentBlocks = 64;
constexpr std::size_t kMaxShared = 227 * 1024;  // an H200's most dynamic shared memory a block
// What a kernel may take without cudaFuncSetAttribute's leave: 48 KiB on a GPU, its static
// __shared__ variables included, whose size the simulator cannot see (they are thread_local
// variables here). So it allows 47 KiB of dynamic memory, as if every kernel had up to 1 KiB of
// static: a launch of nearly 48 KiB that forgot to ask fails here too.
constexpr std::size_t kDefaultShared = 47 * 1024;

/// A failure of the running launch (a deadlock, a misused instruction, __trap).
struct Failure {
  std::string what;
};

struct Barrier {
  int arrived = 0, left = 0;
  bool leaving = false;
  std::uint64_t generation = 0;
};

/// A cp.async copy: its source's bytes read at issue (zero past srcBytes), written at its wait.
struct PendingCopy {
  void* dst;
  unsigned char data[16];
  unsigned bytes;
  std::uint64_t group;
};

struct Fiber {
  void* sp = nullptr;
  ThreadIndices idx{};
  int tid = 0;
  bool done = false;
  const char* waitingAt = nullptr;
  std::vector<PendingCopy> copies;
  std::uint64_t committed = 0;  // commit groups closed so far
};

struct Slot {
  alignas(16) unsigned char bytes[48];
};

/// The lanes of one mask meeting at their collectives: each puts its value in its slot. Slots are a
/// mask's own: a lane that leaves a full-warp exchange and enters a half-warp one must not overwrite
/// what the full warp's slower lanes have still to read.
struct Exchange {
  Barrier barrier;
  Slot slots[32];
};

struct Warp {
  std::deque<std::pair<unsigned, Exchange>> byMask;  // a deque: waiting lanes hold references into it
  Exchange& of(unsigned mask) {
    for (auto& [m, e] : byMask)
      if (m == mask) return e;
    return byMask.emplace_back(mask, Exchange{}).second;
  }
};

struct Block {
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  Barrier sync;
  int live = 0;
  std::uint64_t progress = 0;  // bumped whenever some thread moves past a wait or ends
  void* schedulerSp = nullptr;
  const std::function<void()>* body = nullptr;
  std::string failure;
  std::uint64_t shuffle = 0;  // GIZML_SIM_SHUFFLE's random state for this block (0: threads in order)
  std::vector<int> order;     // the threads' order in this round of turns
};

/// The next number of a xorshift64* sequence whose state `s` is not 0.
std::uint64_t nextRandom(std::uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1DULL;
}

thread_local Block* tBlock = nullptr;
thread_local Fiber* tFiber = nullptr;

/// The stacks of the fibers, kept across launches (their pages are touched only as used); an OS
/// thread's own (a resident block's, BlockThreads).
char* stackOf(int tid) {
  static thread_local std::vector<char*> stacks;
  while (static_cast<int>(stacks.size()) <= tid) {
    void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) std::abort();
    stacks.push_back(static_cast<char*>(p));
  }
  return stacks[tid];
}

// The two directions of a switch. Under AddressSanitizer each tells it which stack runs next (its
// checks of stack memory, and the unpoisoning at a throw, go by the running stack's bounds).
#if GIZML_SIM_ASAN
thread_local const void* tSchedulerStack = nullptr;
thread_local std::size_t tSchedulerStackBytes = 0;
#endif

void switchToFiber(Fiber& f) {
#if GIZML_SIM_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, stackOf(f.tid), kStackBytes);
#endif
  gizmlSimSwitch(&tBlock->schedulerSp, f.sp);
#if GIZML_SIM_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

/// From the running fiber to the scheduler; `ending`: the fiber is done, never to be resumed.
void switchToScheduler(bool ending) {
#if GIZML_SIM_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(ending ? nullptr : &fake, tSchedulerStack, tSchedulerStackBytes);
#endif
  gizmlSimSwitch(&tFiber->sp, tBlock->schedulerSp);
#if GIZML_SIM_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  (void)ending;
}

void yieldToScheduler() { switchToScheduler(false); }

template <class Ready>
void waitUntil(const char* what, Ready ready) {
  if (ready()) return;
  tFiber->waitingAt = what;
  do yieldToScheduler();
  while (!ready());
  tFiber->waitingAt = nullptr;
  ++tBlock->progress;
}

std::string describe(const Fiber& f) {
  const ThreadIndices& i = f.idx;
  return "block (" + std::to_string(i.blockIndex.x) + ", " + std::to_string(i.blockIndex.y) + ", " +
         std::to_string(i.blockIndex.z) + "), thread (" + std::to_string(i.threadIndex.x) + ", " +
         std::to_string(i.threadIndex.y) + ", " + std::to_string(i.threadIndex.z) + ")";
}

/// Ends the calling thread's turn for good: the launch fails.
[[noreturn]] void failHere(const std::string& what) { throw Failure{what + " (" + describe(*tFiber) + ")"}; }

void fiberEntry(Fiber* f) {
#if GIZML_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &tSchedulerStack, &tSchedulerStackBytes);  // the first switch in
#endif
  try {
    (*tBlock->body)();
    if (!f->copies.empty()) failHere("the thread ended with cp.async copies it never waited for");
  } catch (const Failure& e) {
    if (tBlock->failure.empty()) tBlock->failure = e.what;
  } catch (...) {
    if (tBlock->failure.empty()) tBlock->failure = "an exception left the kernel (" + describe(*f) + ")";
  }
  f->done = true;
  --tBlock->live;
  ++tBlock->progress;
  // A __syncthreads that waited only for this thread is complete now.
  Barrier& s = tBlock->sync;
  if (s.arrived > 0 && s.arrived >= tBlock->live) {
    s.arrived = 0;
    ++s.generation;
  }
  switchToScheduler(true);
  std::abort();  // never resumed
}

void prepareFiber(Fiber& f) {
  // The stack as gizmlSimSwitch leaves it: MXCSR and control word, r15 .. rbp, then the return
  // address gizmlSimStart; after the `ret` the stack is 16-byte aligned for its call.
  char* const stack = stackOf(f.tid);
#if GIZML_SIM_ASAN
  ASAN_UNPOISON_MEMORY_REGION(stack, kStackBytes);  // a fiber left mid-kernel by a failure poisoned its frames
#endif
  auto* top = reinterpret_cast<std::uint64_t*>(stack + kStackBytes);
  std::uint64_t* sp = top - 10;  // the control words, six registers, the return address, two spare
  std::uint32_t mxcsr;
  std::uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  std::memset(sp, 0, 10 * sizeof(std::uint64_t));  // r15, r14, rbx, rbp (sp[1], sp[2], sp[5], sp[6]): 0
  std::memcpy(reinterpret_cast<char*>(sp), &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(sp) + 4, &fpucw, 2);
  sp[3] = reinterpret_cast<std::uint64_t>(&fiberEntry);  // r13: what gizmlSimStart calls
  sp[4] = reinterpret_cast<std::uint64_t>(&f);           // r12: its argument
  sp[7] = reinterpret_cast<std::uint64_t>(&gizmlSimStart);
  f.sp = sp;
}

// ---- the collectives -----------------------------------------------------------------------------

/// Waits until `count` threads have arrived at b (after the previous round's have all left).
void arrive(Barrier& b, int count, const char* what) {
  waitUntil(what, [&] { return !b.leaving; });
  const std::uint64_t generation = b.generation;
  ++b.arrived;
  ++tBlock->progress;
  if (b.arrived == count) b.leaving = true;
  else waitUntil(what, [&] { return b.leaving && b.generation == generation; });
}
void leave(Barrier& b, int count) {
  if (++b.left == count) {
    b.arrived = b.left = 0;
    b.leaving = false;
    ++b.generation;
  }
}

int laneOf() { return static_cast<int>(tFiber->idx.lane); }
Warp& warpOf() { return tBlock->warps[tFiber->tid / 32]; }

/// Every lane of `mask` puts `bytes` of `mine` in its slot; once all have, `read` sees the warp's
/// slots; then the lane leaves.
template <class Read>
void exchange(unsigned mask, const void* mine, unsigned bytes, const char* what, Read read) {
  const int lane = laneOf();
  if (!((mask >> lane) & 1u)) failHere(std::string(what) + ": the calling lane is not in the mask");
  if (bytes > sizeof(Slot)) failHere("sim: an exchange too large");
  Exchange& e = warpOf().of(mask);
  Barrier& b = e.barrier;
  const int count = std::popcount(mask);
  waitUntil(what, [&] { return !b.leaving; });
  std::memcpy(e.slots[lane].bytes, mine, bytes);
  arrive(b, count, what);
  read(e.slots);
  leave(b, count);
}

// ---- number formats of the matrix instructions -------------------------------------------------------

double bf16Value(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }
double f16Value(std::uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(m, -24);
  else v = std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}
double e4m3Value(std::uint8_t b) {
  const int sign = b >> 7, e = (b >> 3) & 15, m = b & 7;
  double v;
  if (e == 15 && m == 7) v = NAN;  // E4M3 has no infinities
  else if (e == 0) v = std::ldexp(m, -9);
  else v = std::ldexp(8 + m, e - 10);
  return sign ? -v : v;
}

struct Operands {
  std::uint32_t a[4], b[2];
};

}  // namespace

// ---- the device side ----------------------------------------------------------------------------------

const ThreadIndices& current() { return tFiber->idx; }

void syncThreads() {
  Block& blk = *tBlock;
  Barrier& s = blk.sync;
  const std::uint64_t generation = s.generation;
  ++s.arrived;
  ++blk.progress;
  if (s.arrived >= blk.live) {
    s.arrived = 0;
    ++s.generation;
    return;
  }
  waitUntil("__syncthreads", [&] { return s.generation != generation; });
}

void warpExchange(unsigned mask, const void* mine, void* out, unsigned bytes, int src) {
  if (src < 0 || src > 31 || !((mask >> src) & 1u)) failHere("a shuffle reads a lane outside its mask");
  exchange(mask, mine, bytes, "a warp shuffle", [&](const Slot* slots) { std::memcpy(out, slots[src].bytes, bytes); });
}

bool warpAny(unsigned mask, bool predicate) {
  bool any = false;
  exchange(mask, &predicate, sizeof predicate, "__any_sync", [&](const Slot* slots) {
    for (int l = 0; l < 32; ++l)
      if ((mask >> l) & 1u) any = any || slots[l].bytes[0] != 0;
  });
  return any;
}

void syncWarp(unsigned mask) {
  const char none = 0;
  exchange(mask, &none, 1, "__syncwarp", [](const Slot*) {});
}

void trap() { failHere("__trap()"); }

void pause() {
  tFiber->waitingAt = "__nanosleep (a spin-wait)";
  yieldToScheduler();
  tFiber->waitingAt = nullptr;
}

void copyAsync(void* dst, const void* src, unsigned bytes, unsigned srcBytes) {
  if (srcBytes > bytes || bytes > 16) failHere("cp.async: a source size past the copy's");
  if (reinterpret_cast<std::uintptr_t>(dst) % bytes || (srcBytes && reinterpret_cast<std::uintptr_t>(src) % bytes))
    failHere("cp.async: an address not aligned to the copy's size");
  PendingCopy c{dst, {}, bytes, tFiber->committed};
  std::memset(c.data, 0, sizeof c.data);
  if (srcBytes) std::memcpy(c.data, src, srcBytes);
  tFiber->copies.push_back(c);
}

void commitCopies() { ++tFiber->committed; }

void waitCopies(int pending) {
  // Groups below committed - pending are complete: their copies land now, in order.
  const std::uint64_t done = tFiber->committed < static_cast<std::uint64_t>(pending) ? 0 : tFiber->committed - pending;
  std::vector<PendingCopy>& copies = tFiber->copies;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    if (copies[i].group < done) std::memcpy(copies[i].dst, copies[i].data, copies[i].bytes);
    else copies[kept++] = copies[i];
  }
  copies.resize(kept);
}

// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16 (PTX ISA, "Warp-level matrix load instruction:
// ldmatrix"): lanes 8 m .. 8 m + 7 give the addresses of matrix m's 8 rows (16 bytes each); lane l
// receives, in register m, matrix m's row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 (low half
// first); with .trans the matrix is transposed first: elements (2 (l % 4) + e, l / 4).
void ldmatrixX4(std::uint32_t (&r)[4], const void* row, bool trans) {
  if (reinterpret_cast<std::uintptr_t>(row) % 16) failHere("ldmatrix: a row address not 16-byte aligned");
  const int lane = laneOf();
  exchange(0xffffffffu, &row, sizeof row, "ldmatrix", [&](const Slot* slots) {
    for (int m = 0; m < 4; ++m) {
      std::uint16_t e[2];
      for (int k = 0; k < 2; ++k) {
        const int rowIndex = trans ? 2 * (lane % 4) + k : lane / 4, col = trans ? lane / 4 : 2 * (lane % 4) + k;
        const std::uint16_t* p;
        std::memcpy(&p, slots[8 * m + rowIndex].bytes, sizeof p);
        e[k] = p[col];
      }
      r[m] = static_cast<std::uint32_t>(e[0]) | (static_cast<std::uint32_t>(e[1]) << 16);
    }
  });
}

// mma.sync.aligned (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" and
// "for mma.m16n8k32"): with g = lane / 4, t = lane % 4,
//   m16n8k16 (16-bit): A register r, half e: row g + 8 (r % 2), column 2 t + e + 8 (r / 2);
//                      B register r, half e: k 2 t + e + 8 r, n g;
//   m16n8k32 (8-bit):  A register r, byte e: row g + 8 (r % 2), column 4 t + e + 16 (r / 2);
//                      B register r, byte e: k 4 t + e + 16 r, n g;
//   C and D element i: row g + 8 (i / 2), column 2 t + i % 2.
// Floating-point products are summed in double and rounded once with c (the hardware keeps fewer
// bits; callers hold a tolerance); integer ones exactly.
void mma(MmaKind kind, void* d, const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  const Operands mine{{a[0], a[1], a[2], a[3]}, {b0, b1}};
  const int lane = laneOf(), g = lane / 4, t = lane % 4;
  const bool bytes8 = kind == MmaKind::S8 || kind == MmaKind::E4M3;
  const int K = bytes8 ? 32 : 16;
  exchange(0xffffffffu, &mine, sizeof mine, "mma.sync", [&](const Slot* slots) {
    double A[16][32], B[32][8];
    for (int l = 0; l < 32; ++l) {
      Operands o;
      std::memcpy(&o, slots[l].bytes, sizeof o);
      const int gl = l / 4, tl = l % 4;
      for (int r = 0; r < 4; ++r)
        for (int e = 0; e < (bytes8 ? 4 : 2); ++e) {
          const int row = gl + 8 * (r % 2);
          if (bytes8) {
            const auto byte = static_cast<std::uint8_t>(o.a[r] >> (8 * e));
            A[row][4 * tl + e + 16 * (r / 2)] = kind == MmaKind::S8 ? static_cast<std::int8_t>(byte) : e4m3Value(byte);
          } else {
            const auto half = static_cast<std::uint16_t>(o.a[r] >> (16 * e));
            A[row][2 * tl + e + 8 * (r / 2)] = kind == MmaKind::BF16 ? bf16Value(half) : f16Value(half);
          }
        }
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < (bytes8 ? 4 : 2); ++e) {
          if (bytes8) {
            const auto byte = static_cast<std::uint8_t>(o.b[r] >> (8 * e));
            B[4 * tl + e + 16 * r][gl] = kind == MmaKind::S8 ? static_cast<std::int8_t>(byte) : e4m3Value(byte);
          } else {
            const auto half = static_cast<std::uint16_t>(o.b[r] >> (16 * e));
            B[2 * tl + e + 8 * r][gl] = kind == MmaKind::BF16 ? bf16Value(half) : f16Value(half);
          }
        }
    }
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
      if (kind == MmaKind::S8) {
        std::int64_t sum = 0;
        for (int k = 0; k < K; ++k) sum += static_cast<std::int64_t>(A[row][k]) * static_cast<std::int64_t>(B[k][col]);
        auto* di = static_cast<std::int32_t*>(d);
        di[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(di[i]) + static_cast<std::uint32_t>(sum));
      } else {
        double sum = 0.0;
        for (int k = 0; k < K; ++k) sum += A[row][k] * B[k][col];
        auto* df = static_cast<float*>(d);
        df[i] = static_cast<float>(sum + static_cast<double>(df[i]));
      }
    }
  });
}

// ---- the scheduler -------------------------------------------------------------------------------------

namespace {

std::mutex& launchLock() {
  static std::mutex m;
  return m;
}

/// The OS threads that run the resident blocks past the first (GIZML_SIM_RESIDENT_BLOCKS): a
/// block's static shared memory is thread_local (cuda_sim.hpp: `__shared__`), as are the fibers'
/// stacks and the running block, so blocks at once need a thread each. The threads take turns with
/// the launching one, never two at once (run waits for its job's end): the simulation stays on one
/// thread of control. Kept across launches (launches are serial: launchLock), never ended.
class BlockThreads {
 public:
  /// Runs `job` on the thread of resident slot `slot` (0: the calling one) and waits for its end.
  void run(int slot, const std::function<void()>& job) {
    if (slot == 0) return job();
    Worker& w = worker(slot);
    std::unique_lock<std::mutex> g(w.m);
    w.job = &job;
    w.done = false;
    w.cv.notify_all();
    w.cv.wait(g, [&] { return w.done; });
  }

 private:
  struct Worker {
    std::mutex m;
    std::condition_variable cv;
    const std::function<void()>* job = nullptr;
    bool done = false;
  };
  std::deque<Worker> workers_;  // a deque: each thread holds a reference to its Worker

  Worker& worker(int slot) {
    while (static_cast<int>(workers_.size()) < slot) {
      Worker& w = workers_.emplace_back();
      std::thread([&w] {
        std::unique_lock<std::mutex> g(w.m);
        for (;;) {
          w.cv.wait(g, [&] { return w.job != nullptr; });
          const std::function<void()>* job = w.job;
          g.unlock();
          (*job)();
          g.lock();
          w.job = nullptr;
          w.done = true;
          w.cv.notify_all();
        }
      }).detach();
    }
    return workers_[slot - 1];
  }
};
BlockThreads& blockThreads() {
  static BlockThreads* t = new BlockThreads;  // never destroyed: its threads wait on it until exit
  return *t;
}

struct RuntimeState {
  std::mutex lock;
  std::map<const char*, std::size_t, std::less<>> allocations;  // by start, ordered (prefetchL2 looks one up)
  std::unordered_map<const void*, int> maxDynamicShared;  // by kernel
  std::unordered_map<const void*, int> carveout;          // by kernel: the percent last asked for
  cudaError_t lastError = cudaSuccess;
  std::string lastFailure;
};
RuntimeState& state() {
  static RuntimeState* s = new RuntimeState;  // never destroyed: tensors may be freed at exit
  return *s;
}

cudaError_t launchError(const std::string& what, cudaError_t code) {
  std::fprintf(stderr, "gizml GPU simulator: %s\n", what.c_str());
  RuntimeState& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  s.lastError = code;
  s.lastFailure = what;
  return code;
}

/// Makes `blk` block `at` of the launch (on the OS thread that will run it: its fibers' stacks).
void startBlock(Block& blk, dim3 at, dim3 grid, dim3 block, void* shared) {
  const int threads = static_cast<int>(block.x * block.y * block.z);
  blk.fibers.assign(threads, Fiber{});
  blk.warps.assign((threads + 31) / 32, Warp{});
  blk.sync = Barrier{};
  blk.live = threads;
  blk.failure.clear();
  for (int t = 0; t < threads; ++t) {
    Fiber& f = blk.fibers[t];
    f.tid = t;
    f.idx.threadIndex = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
    f.idx.blockIndex = at;
    f.idx.blockShape = block;
    f.idx.gridShape = grid;
    f.idx.dynamicShared = shared;
    f.idx.lane = static_cast<unsigned>(t % 32);
    prepareFiber(f);
  }
}

/// A turn for each of blk's live threads, until one fails the launch (blk.failure).
void runTurns(Block& blk) {
  tBlock = &blk;
  const int threads = static_cast<int>(blk.fibers.size());
  blk.order.resize(threads);
  for (int t = 0; t < threads; ++t) blk.order[t] = t;
  if (blk.shuffle != 0)  // a new order every round (Fisher-Yates)
    for (int t = threads - 1; t > 0; --t)
      std::swap(blk.order[t], blk.order[nextRandom(blk.shuffle) % static_cast<std::uint64_t>(t + 1)]);
  for (const int t : blk.order) {
    Fiber& f = blk.fibers[t];
    if (f.done) continue;
    tFiber = &f;
    switchToFiber(f);
    tFiber = nullptr;
    if (!blk.failure.empty()) break;
  }
  tBlock = nullptr;
}

/// The simulator's environment variable `name` (read at every launch, so that a test may change it
/// between two): `unset` where it is unset or empty, the whole number it holds from 1 to `most`,
/// or std::nullopt where it holds anything else. GIZML_SIM_RESIDENT_BLOCKS: the blocks a launch
/// runs at once (1 unless set). GIZML_SIM_SHUFFLE: 0 unless set (each round of turns takes a
/// block's threads in order, and the resident blocks in order), else a seed from which each round
/// draws a new order of both.
std::optional<long long> simVariable(const char* name, long long unset, long long most) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return unset;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n < 1 || n > most) return std::nullopt;
  return n;
}

}  // namespace

void launch(const void* kernel, dim3 grid, dim3 block, std::size_t dynamicShared, cudaStream_t,
            const std::function<void()>& body) {
  const std::uint64_t threads = static_cast<std::uint64_t>(block.x) * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu ||
      grid.y > 65535 || grid.z > 65535) {
    launchError("a launch of grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
                    std::to_string(grid.z) + ") and " + std::to_string(threads) + " threads a block",
                cudaErrorInvalidConfiguration);
    return;
  }
  {
    RuntimeState& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    const auto at = s.maxDynamicShared.find(kernel);
    const std::size_t allowed = at == s.maxDynamicShared.end() ? kDefaultShared : static_cast<std::size_t>(at->second);
    if (dynamicShared > allowed) {
      s.lastError = cudaErrorInvalidValue;
      s.lastFailure = std::to_string(dynamicShared) + " bytes of dynamic shared memory where the kernel may have " +
                      std::to_string(allowed) + " (cudaFuncSetAttribute)";
      std::fprintf(stderr, "gizml GPU simulator: %s\n", s.lastFailure.c_str());
      return;
    }
  }
  constexpr long long kMostSeed = std::numeric_limits<long long>::max();
  const std::optional<long long> resident = simVariable("GIZML_SIM_RESIDENT_BLOCKS", 1, kMostResidentBlocks),
                                 seed = simVariable("GIZML_SIM_SHUFFLE", 0, kMostSeed);
  if (!resident || !seed) {
    const char* name = !resident ? "GIZML_SIM_RESIDENT_BLOCKS" : "GIZML_SIM_SHUFFLE";
    const long long most = !resident ? kMostResidentBlocks : kMostSeed;
    launchError(std::string(name) + " is not a whole number from 1 to " + std::to_string(most), cudaErrorInvalidValue);
    return;
  }
  std::lock_guard<std::mutex> serial(launchLock());
  const std::uint64_t blocks = static_cast<std::uint64_t>(grid.x) * grid.y * grid.z;
  const int slots = static_cast<int>(blocks < static_cast<std::uint64_t>(*resident) ? blocks : *resident);
  // Each resident block's shared memory: exactly the launch's bytes, 16-byte aligned
  // (AddressSanitizer sees a read past them).
  struct Resident {
    Block blk;
    std::unique_ptr<void, decltype(&std::free)> shared{nullptr, &std::free};
    bool running = false;
  };
  std::vector<Resident> slot(slots);
  std::uint64_t next = 0;  // the grid's next block to start, x fastest
  const auto startNext = [&](int s) {
    Resident& r = slot[s];
    r.running = next < blocks;
    if (!r.running) return;
    const dim3 at(static_cast<unsigned>(next % grid.x), static_cast<unsigned>(next / grid.x % grid.y),
                  static_cast<unsigned>(next / (static_cast<std::uint64_t>(grid.x) * grid.y)));
    // A shuffling block's own sequence, from the seed and its place in the grid (never state 0).
    r.blk.shuffle = *seed == 0 ? 0 : (static_cast<std::uint64_t>(*seed) * 0x9E3779B97F4A7C15ULL) ^ (next + 1) ^ 0x5851F42D4C957F2DULL;
    if (*seed != 0 && r.blk.shuffle == 0) r.blk.shuffle = 1;
    ++next;
    std::memset(r.shared.get(), 0xff, dynamicShared);  // shared memory starts as whatever was there
    blockThreads().run(s, [&] { startBlock(r.blk, at, grid, block, r.shared.get()); });
  };
  for (int s = 0; s < slots; ++s) {
    void* p = nullptr;
    if (posix_memalign(&p, 16, dynamicShared == 0 ? 1 : dynamicShared) != 0) std::abort();
    slot[s].shared.reset(p);
    slot[s].blk.body = &body;
    startNext(s);
  }
  // Rounds of a turn for every live thread of every running block; a round in which none moves on
  // (and no block ends, so none starts) is a deadlock.
  const auto progress = [&] {
    std::uint64_t sum = next;
    for (const Resident& r : slot) sum += r.blk.progress;
    return sum;
  };
  std::vector<int> slotOrder(slots);
  for (int s = 0; s < slots; ++s) slotOrder[s] = s;
  std::uint64_t slotShuffle = *seed == 0 ? 0 : (static_cast<std::uint64_t>(*seed) ^ 0xD1B54A32D192ED03ULL) | 1;
  for (bool running = slots > 0; running;) {
    const std::uint64_t before = progress();
    running = false;
    if (slotShuffle != 0)
      for (int s = slots - 1; s > 0; --s)
        std::swap(slotOrder[s], slotOrder[nextRandom(slotShuffle) % static_cast<std::uint64_t>(s + 1)]);
    for (const int s : slotOrder) {
      Resident& r = slot[s];
      if (!r.running) continue;
      blockThreads().run(s, [&] { runTurns(r.blk); });
      if (!r.blk.failure.empty()) {
        launchError("a kernel failed: " + r.blk.failure, cudaErrorLaunchFailure);
        return;
      }
      if (r.blk.live == 0) startNext(s);
      running = running || r.running;
    }
    if (running && progress() == before) {
      std::string what = "deadlock: no thread can go on;";
      int shown = 0, waiting = 0;
      for (const Resident& r : slot) {
        if (!r.running) continue;
        waiting += r.blk.live;
        for (const Fiber& f : r.blk.fibers)
          if (!f.done && shown++ < 4) what += " " + describe(f) + " waits at " + (f.waitingAt ? f.waitingAt : "?") + ";";
      }
      launchError("a kernel failed: " + what + " " + std::to_string(waiting) + " threads wait", cudaErrorLaunchFailure);
      return;
    }
  }
}

cudaError_t funcSetAttribute(const void* kernel, cudaFuncAttribute attr, int value) {
  // A carveout (percent of a multiprocessor's shared memory, the rest L1) is a hint for a cache
  // the simulator has not: checked as CUDA checks it and kept, for cudaFuncGetAttributes to say.
  const bool carveout = attr == cudaFuncAttributePreferredSharedMemoryCarveout;
  if (carveout ? value < -1 || value > 100
               : attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
                     static_cast<std::size_t>(value) > kMaxShared)
    return cudaErrorInvalidValue;
  RuntimeState& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  (carveout ? s.carveout : s.maxDynamicShared)[kernel] = value;
  return cudaSuccess;
}

cudaError_t funcGetAttributes(cudaFuncAttributes* out, const void* kernel) {
  *out = cudaFuncAttributes{};  // an sm_90 kernel: ptxVersion 90 (the FP8 instructions are there)
  RuntimeState& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  if (const auto it = s.carveout.find(kernel); it != s.carveout.end()) out->preferredShmemCarveout = it->second;
  return cudaSuccess;
}

// An sm_90 multiprocessor's limits without registers (the simulator has none): 2048 threads, 32
// blocks, 228 KiB of shared memory (1 KiB of it each block's own). 0 where a block could not run.
cudaError_t occupancy(int* blocks, const void* kernel, int threads, std::size_t dynamicShared) {
  if (threads <= 0 || threads > 1024) return cudaErrorInvalidValue;
  std::size_t allowed = kDefaultShared;
  {
    RuntimeState& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    const auto it = s.maxDynamicShared.find(kernel);
    if (it != s.maxDynamicShared.end()) allowed = static_cast<std::size_t>(it->second);
  }
  if (dynamicShared > allowed) {
    *blocks = 0;
    return cudaSuccess;
  }
  const std::size_t byShared = (228 * 1024) / (dynamicShared + 1024);
  std::size_t n = 2048 / static_cast<std::size_t>(threads);
  if (byShared < n) n = byShared;
  *blocks = static_cast<int>(n < 32 ? n : 32);
  return cudaSuccess;
}

namespace {
std::atomic<std::uint64_t> prefetched{0};  // prefetchL2's bytes
}  // namespace

void prefetchL2(const void* p, unsigned bytes) {
  const char* at = static_cast<const char*>(p);
  if (bytes == 0 || bytes % 16 != 0 || reinterpret_cast<std::uintptr_t>(at) % 16 != 0)
    failHere("cp.async.bulk.prefetch.L2: an address or a size not a multiple of 16");
  // sm_90a's SASS (UBLKPF) takes the size as 16 bits of 16-byte chunks (nvcc 13 keeps size >> 4's low
  // 16 bits): a larger size would prefetch something else.
  if (bytes / 16 > 0xffff) failHere("cp.async.bulk.prefetch.L2: over 65535 chunks of 16 bytes");
  {
    RuntimeState& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.allocations.upper_bound(at);  // the first allocation past `at`; the one before may hold it
    const bool inside = it != s.allocations.begin() && (--it, at + bytes <= it->first + it->second);
    if (!inside) failHere("cp.async.bulk.prefetch.L2: bytes outside every allocation");
  }
  prefetched += bytes;
}

std::uint64_t prefetchedL2Bytes() { return prefetched.load(); }

}  // namespace gizml::sim

// ---- the runtime API -----------------------------------------------------------------------------------

using gizml::sim::state;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  static thread_local std::string text;
  {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    text = s.lastFailure;
  }
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorLaunchFailure:
    case cudaErrorInvalidConfiguration:
      text = "the GPU simulator: " + text;
      return text.c_str();
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "the GPU simulator is built in but off (GIZML_CUDA_SIM=1 in the environment turns it on)";
    default: return cudaGetErrorName(e);
  }
}

cudaError_t cudaGetLastError() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  const cudaError_t e = s.lastError;
  s.lastError = cudaSuccess;
  return e;
}

// The simulated GPU is there only when asked for: a build with the simulator runs its host tests and
// programs as a host-only build would (a training run on the simulator would take hours).
cudaError_t cudaGetDeviceCount(int* count) {
  const char* on = std::getenv("GIZML_CUDA_SIM");
  *count = on && std::strcmp(on, "1") == 0 ? 1 : 0;
  return *count ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  // Memory pools, 4 multiprocessors (only a launch's grid reads it: GIZML_CUDA_ROWS_PER_SM) of an
  // sm_90's 228 KiB of shared memory, 1 KiB of it each block's own.
  switch (attr) {
    case cudaDevAttrMemoryPoolsSupported: *value = 1; break;
    case cudaDevAttrMultiProcessorCount: *value = 4; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = 228 * 1024; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = 1024; break;
    default: *value = 0;
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  *pool = reinterpret_cast<cudaMemPool_t>(0x1);
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  // 256-byte aligned as CUDA's, and exactly `bytes` long, so that under AddressSanitizer a kernel's
  // read one past the end is reported.
  void* q = nullptr;
  if (posix_memalign(&q, 256, bytes == 0 ? 1 : bytes) != 0) return cudaErrorMemoryAllocation;
  std::memset(q, 0xff, bytes);  // a GPU's new memory holds whatever was there: NaNs here
  auto& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  s.allocations[static_cast<const char*>(q)] = bytes;
  *p = q;
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  auto& s = state();
  {
    std::lock_guard<std::mutex> g(s.lock);
    if (s.allocations.erase(static_cast<const char*>(p)) == 0) return cudaErrorInvalidDevicePointer;
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t) { return cudaMemset(p, value, bytes); }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
