// Test helpers: bitwise and float64 comparisons that say where to look, random inputs from Key.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gizml/key.hpp"

namespace gizml::test {

/// Equal bit for bit (any two NaNs count as equal: NaNs are canonicalised). On failure: the
/// first differing index, both values and their bit patterns, and how many differ.
::testing::AssertionResult sameBits(const std::vector<float>& got, const std::vector<float>& want);
::testing::AssertionResult sameBits(float got, float want);
::testing::AssertionResult sameBits(double got, double want);

/// Distance in units in the last place of the F32 result `got` from the exact value `want`
/// (the spacing of floats at `want`, at least 2^-149).
double ulpError(float got, double want);

/// `count` values (key's normal draw) * scale + offset: never all zeros.
std::vector<float> randomFloats(Key key, std::int64_t count, float scale = 1.0f, float offset = 0.0f);
/// Labels in [0, classes), from the key's words.
std::vector<std::int64_t> randomLabels(Key key, std::int64_t rows, std::int64_t classes);

void setThreadsForTest(int n);
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
