// The attention family (SPEC §3 "Attention") beyond the registry's checks
// (tests/registry/attention_cases.cpp): for now the causal mask's meaning and its bad input.
#include <cmath>

#include "support/preamble.hpp"

TEST(CausalMask, LastQuerySeesEveryKey) {
  // tq < tk: the last query sees every key, the first sees tk - tq + 1.
  auto m = netops::causalMask(2, 4).toVector<float>();
  EXPECT_EQ(m, (std::vector<float>{0, 0, 0, -kInf, 0, 0, 0, 0}));
  EXPECT_FALSE(std::signbit(m[0]));  // +0
}

TEST(CausalMask, BadInput) {
  const char* fn = "gizml::netops::causalMask";
  expectThrowsNaming([&] { netops::causalMask(-1, 3); }, fn, "tq");
  expectThrowsNaming([&] { netops::causalMask(3, -1); }, fn, "tk");
  expectThrowsNaming([&] { netops::causalMask(std::int64_t{1} << 40, std::int64_t{1} << 40); }, fn, "tk");
}
