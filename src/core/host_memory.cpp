#include "core/host_memory.hpp"
#include "gizml/tensor.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace gizml::detail {

namespace {

constexpr std::size_t kCacheCap = std::size_t{2} << 30;  // bytes kept for reuse at most
constexpr std::size_t kHuge = std::size_t{2} << 20;      // 2 MiB: large blocks are aligned to it

struct Cache {
  std::mutex lock;
  std::multimap<std::size_t, void*> free;  // rounded size -> block
  std::size_t cached = 0;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may be freed during static destruction
  return *c;
}

std::size_t rounded(std::size_t bytes) {
  std::size_t align = bytes >= kHuge ? kHuge : 64;
  return (bytes + align - 1) / align * align;
}

}  // namespace

void* hostAllocate(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> g(c.lock);
    auto it = c.free.find(size);
    if (it != c.free.end()) {
      void* p = it->second;
      c.free.erase(it);
      c.cached -= size;
      return p;
    }
  }
  void* p = std::aligned_alloc(size >= kHuge ? kHuge : 64, size);
  if (!p) throw std::bad_alloc();
  if (size >= kHuge) madvise(p, size, MADV_HUGEPAGE);  // fewer faults on first touch, where THP is on
  return p;
}

void hostRelease(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  const std::size_t size = rounded(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> g(c.lock);
    if (c.cached + size <= kCacheCap) {
      c.free.emplace(size, p);
      c.cached += size;
      return;
    }
  }
  std::free(p);
}

namespace {
/// A thread's kept scratch block (ThreadScratch), freed as the thread ends. Emptied there too: an
/// op run by a later destructor of the same thread (the main thread's static ones) then allocates
/// a block anew instead of reusing the freed one.
struct ThreadKept {
  void* p = nullptr;
  std::size_t bytes = 0;
  bool lent = false;
  ~ThreadKept() {
    std::free(p);
    p = nullptr;
    bytes = 0;
  }
};
thread_local ThreadKept tKept;
}  // namespace

void* threadKeptTake(std::size_t bytes) noexcept {
  ThreadKept& k = tKept;
  if (k.lent || bytes > kThreadKeptBytes) return nullptr;
  if (k.bytes < bytes) {
    void* p = std::aligned_alloc(64, bytes);  // bytes: a multiple of 64 (scratchBytes)
    if (!p) return nullptr;                   // then HostScratch's cache, which throws bad_alloc
    std::free(k.p);
    k.p = p;
    k.bytes = bytes;
  }
  k.lent = true;
  return k.p;
}

void threadKeptGiveBack() noexcept { tKept.lent = false; }

void hostTrimCache() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.lock);
  for (auto& [size, p] : c.free) std::free(p);
  c.free.clear();
  c.cached = 0;
}

std::size_t hostCachedBytes() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.lock);
  return c.cached;
}

}  // namespace gizml::detail

namespace gizml {
std::size_t cachedHostBytes() { return detail::hostCachedBytes(); }
void releaseCachedHostMemory() { detail::hostTrimCache(); }
}  // namespace gizml
