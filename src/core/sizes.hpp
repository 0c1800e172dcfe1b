// Size arithmetic for the ops' argument checks (SPEC §1.7): every product and sum of extents is
// checked before any work, and fails naming the function and the argument. Host only.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "gizml/error.hpp"

namespace gizml::detail {

/// The largest element count an op accepts: Tensor::empty's own limit (its bytes must fit too).
inline constexpr std::int64_t kMaxElements = std::numeric_limits<std::int64_t>::max() / 16;

inline void requireAtLeast(const char* fn, const char* arg, std::int64_t v, std::int64_t least) {
  if (v < least) fail(fn, arg, "expected " + std::string(arg) + " >= " + std::to_string(least) + ", got " + std::to_string(v));
}

/// a * b for extents a, b >= 0; fails naming `arg` when it passes kMaxElements.
inline std::int64_t checkedMul(const char* fn, const char* arg, std::int64_t a, std::int64_t b) {
  if (a != 0 && b > kMaxElements / a)
    fail(fn, arg, "the size " + std::to_string(a) + " * " + std::to_string(b) + " overflows");
  return a * b;
}

/// a + b for a, b >= 0; fails naming `arg` when it passes kMaxElements.
inline std::int64_t checkedAdd(const char* fn, const char* arg, std::int64_t a, std::int64_t b) {
  if (b > kMaxElements - a) fail(fn, arg, "the size " + std::to_string(a) + " + " + std::to_string(b) + " overflows");
  return a + b;
}

/// The output length of a window of `k` taps `dilation` apart sliding by `stride` over `length`
/// values padded by `pad` on each side: (length + 2 pad - dilation (k - 1) - 1) / stride + 1.
/// k, stride, dilation >= 1 and pad, length >= 0 are checked by the caller. Fails naming
/// `kernelArg` when the window is longer than the padded input.
inline std::int64_t windowCount(const char* fn, const char* kernelArg, std::int64_t length, std::int64_t k,
                                std::int64_t stride, std::int64_t pad, std::int64_t dilation) {
  const std::int64_t padded = checkedAdd(fn, "pad", length, checkedMul(fn, "pad", 2, pad));
  const std::int64_t span = checkedAdd(fn, kernelArg, checkedMul(fn, kernelArg, dilation, k - 1), 1);
  if (span > padded)
    fail(fn, kernelArg,
         "expected a window of " + std::to_string(span) + " values (dilation (k - 1) + 1) within the padded input of " +
             std::to_string(padded) + " (length + 2 pad)");
  return (padded - span) / stride + 1;
}

}  // namespace gizml::detail
