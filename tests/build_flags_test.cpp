// The exact-FP flags (cmake/ExactFP.cmake) really reached the compilers: a * b + c stays two
// roundings in the library, in this test's own code and on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "gizml/device.hpp"
#include "support/compare.hpp"
#include "support/gpu.hpp"

float probeMultiplyAdd(float a, float b, float c);  // build_flags_probe.cpp
std::vector<std::int64_t> probeInitializerList();   // build_flags_probe.cpp

namespace {
// a * a = 1 + 2^-12 + 2^-26 rounds to 1 + 2^-12, so the unfused a * a - (1 + 2^-12) is 0 while
// one fma gives 2^-26.
const float a = 1.0f + 0x1p-13f;
const float c = -(1.0f + 0x1p-12f);
}  // namespace

TEST(BuildFlags, LibraryDoesNotContract) {
  EXPECT_TRUE(gizml::test::sameBits(gizml::detail::hostMultiplyAdd(a, a, c), 0.0f));
  EXPECT_TRUE(gizml::test::sameBits(std::fma(a, a, c), 0x1p-26f)) << "the probe's inputs must tell the two apart";
}

TEST(BuildFlags, TestsDoNotContract) { EXPECT_TRUE(gizml::test::sameBits(probeMultiplyAdd(a, a, c), 0.0f)); }

TEST(BuildFlags, InitializerListsAreBuiltRight) {
  // GCC 12 with AVX-512 and SLP vectorization gives {2048, 2048, 2048, 2048} (cmake/ExactFP.cmake).
  // Element by element: a list written here would be built just as wrong.
  for (const auto& v : {probeInitializerList(), gizml::detail::hostInitializerList()}) {
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[0], 2048);
    EXPECT_EQ(v[2], 2048);
    EXPECT_EQ(v[3], 0) << "the last element of {2048, 2048, 2048, 0}";
  }
}

TEST(BuildFlags, NoFlushToZero) {
  volatile float tiny = 0x1p-140f;
  EXPECT_EQ(tiny * 0.5f, 0x1p-141f) << "subnormals must be kept";
}

TEST(BuildFlags, CudaDoesNotContract) {
  GIZML_NEED_GPU();
  EXPECT_TRUE(gizml::test::sameBits(gizml::detail::cudaMultiplyAdd(0, a, a, c), 0.0f));
}
