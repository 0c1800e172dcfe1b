// Host memory for tensors: 64-byte aligned, and reused. Freed blocks are kept (up to a cap) and
// handed out again for the same size, so an op run in a loop writes into memory that is already
// mapped instead of taking a page fault on every 4 KiB of a fresh allocation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gizml::detail {

void* hostAllocate(std::size_t bytes);
void hostRelease(void* p, std::size_t bytes) noexcept;
/// Returns every cached block to the system.
void hostTrimCache() noexcept;
/// Bytes held in the cache now.
std::size_t hostCachedBytes() noexcept;

/// The bytes of a scratch of `count` values of T: at least one value, in whole 64-byte lines.
template <class T>
std::size_t scratchBytes(std::int64_t count) {
  return (static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * sizeof(T) + 63) / 64 * 64;
}

/// An op's scratch: `count` values of T (at least one), 64-byte aligned, uninitialized, from the
/// cache above, so that a product in a loop reuses pages already mapped.
template <class T>
class HostScratch {
 public:
  explicit HostScratch(std::int64_t count)
      : bytes_(scratchBytes<T>(count)), p_(static_cast<T*>(hostAllocate(bytes_))) {}
  ~HostScratch() { hostRelease(p_, bytes_); }
  HostScratch(const HostScratch&) = delete;
  HostScratch& operator=(const HostScratch&) = delete;
  T* data() const { return p_; }

 private:
  std::size_t bytes_;
  T* p_;
};

/// The calling thread's kept scratch (ThreadScratch's): a block of at least `bytes`, or nullptr
/// where the thread's block is lent already (a nested use) or `bytes` is over kThreadKeptBytes.
void* threadKeptTake(std::size_t bytes) noexcept;
/// Gives the thread's kept block back (after threadKeptTake gave it).
void threadKeptGiveBack() noexcept;
/// The most a thread keeps between calls: a row loop's buffers for rows of up to 128 Ki floats.
inline constexpr std::size_t kThreadKeptBytes = std::size_t{1} << 20;

/// A host loop's per-thread scratch: `count` values of T (at least one), 64-byte aligned,
/// uninitialized, from a block each thread keeps between calls (grown as needed, up to
/// kThreadKeptBytes; larger or nested ones come from HostScratch's cache). For the scratch that
/// every call of a small op takes on every thread (the 8-bit rows' two row buffers): no lock, no
/// allocation, no zeroing. One thread, a Zen 2, int8Rows of a decode step's one row, us a call:
/// [1, 3072] 2.57 with a std::vector zeroed and freed each call, 2.06 from HostScratch, 2.01 from
/// the thread's block; [1, 256] 0.65, 0.60 and 0.45 (HostScratch's cache takes a lock, and a
/// map's search and erase).
template <class T>
class ThreadScratch {
 public:
  explicit ThreadScratch(std::int64_t count)
      : bytes_(scratchBytes<T>(count)),
        p_(static_cast<T*>(threadKeptTake(bytes_))),
        kept_(p_ != nullptr) {
    if (!kept_) p_ = static_cast<T*>(hostAllocate(bytes_));
  }
  ~ThreadScratch() {
    if (kept_) threadKeptGiveBack();
    else hostRelease(p_, bytes_);
  }
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;
  T* data() const { return p_; }

 private:
  std::size_t bytes_;
  T* p_;
  bool kept_;
};

}  // namespace gizml::detail
