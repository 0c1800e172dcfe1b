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

/// An op's scratch: `count` values of T (at least one), 64-byte aligned, uninitialized, from the
/// cache above, so that a product in a loop reuses pages already mapped.
template <class T>
class HostScratch {
 public:
  explicit HostScratch(std::int64_t count)
      : bytes_((static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * sizeof(T) + 63) / 64 * 64),
        p_(static_cast<T*>(hostAllocate(bytes_))) {}
  ~HostScratch() { hostRelease(p_, bytes_); }
  HostScratch(const HostScratch&) = delete;
  HostScratch& operator=(const HostScratch&) = delete;
  T* data() const { return p_; }

 private:
  std::size_t bytes_;
  T* p_;
};

}  // namespace gizml::detail
