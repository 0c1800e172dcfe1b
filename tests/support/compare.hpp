// Test helpers: bitwise and float64 comparisons that say where to look.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
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
double ulpError(float got, double want);

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
