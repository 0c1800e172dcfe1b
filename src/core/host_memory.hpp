// Host memory for tensors: 64-byte aligned, and reused. Freed blocks are kept (up to a cap) and
// handed out again for the same size, so an op run in a loop writes into memory that is already
// mapped instead of taking a page fault on every 4 KiB of a fresh allocation.
#pragma once

#include <cstddef>

namespace gizml::detail {

void* hostAllocate(std::size_t bytes);
void hostRelease(void* p, std::size_t bytes) noexcept;
/// Returns every cached block to the system.
void hostTrimCache() noexcept;
/// Bytes held in the cache now.
std::size_t hostCachedBytes() noexcept;

}  // namespace gizml::detail
