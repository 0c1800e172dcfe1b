// Test helpers: bitwise and float64 comparisons that say where to look.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/inputs.hpp"

namespace gizml::test {

/// Equal bit for bit, except that any two NaNs count as equal: a NaN result is a NaN on every
/// device, its sign and payload are not part of the contract (support/bits.hpp). On failure: the
/// first differing index, both values and their bit patterns, and how many differ.
::testing::AssertionResult sameBits(const std::vector<float>& got, const std::vector<float>& want);
::testing::AssertionResult sameBits(float got, float want);
::testing::AssertionResult sameBits(double got, double want);

/// Distance in units in the last place of the F32 result `got` from the exact value `want`
/// (the spacing of floats at `want`, at least 2^-149).
inline double ulpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  // Past the largest float the correctly rounded result is inf: then only inf is right.
  float rounded = static_cast<float>(want);
  if (std::isinf(got) || std::isinf(rounded)) return got == rounded ? 0.0 : INFINITY;
  // want is a finite double here, and every double within a float's range is normal (or 0): its
  // exponent field gives ilogb(|want|), and 2^(e - 23) >= 2^-149 is a normal double built from its
  // bits. (ilogb and ldexp, library calls, took a quarter of the exhaustive sweeps' time.) Inline,
  // and a product by 1 / ulp (a power of two, exact as the quotient is): the sweeps call it for
  // every float.
  std::uint64_t bits;
  std::memcpy(&bits, &want, sizeof bits);
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  int e = field > 0 ? field - 1023 : -126;
  if (e < -126) e = -126;  // the subnormals' spacing, 2^-149
  const std::uint64_t perUlpBits = static_cast<std::uint64_t>(23 - e + 1023) << 52;  // 2^(23 - e)
  double perUlp;
  std::memcpy(&perUlp, &perUlpBits, sizeof perUlp);
  return std::fabs(static_cast<double>(got) - want) * perUlp;
}

/// n host threads, each host loop on as many of them as its rows allow, however small its shape
/// (exact::setHostWorkAThread(1)), so that a test's small shapes split across threads too.
void setThreadsForTest(int n);
/// The thread count before the first setThreadsForTest, and the default work a thread.
void restoreThreadsForTest();

/// Runs `body` once with 1 host thread and once with 2, restoring the thread count after.
template <class Body>
void forThreadCounts(Body body) {
  for (int t : {1, 2}) {
    SCOPED_TRACE("host threads = " + std::to_string(t));
    setThreadsForTest(t);
    body();
  }
  restoreThreadsForTest();
}

}  // namespace gizml::test
