// The 8-bit rows (SPEC §3) beyond the registry's checks (tests/registry/quant_cases.cpp): the
// transform against its dense matrix and as its own inverse, bad input.
#include <algorithm>
#include <cmath>

#include "support/preamble.hpp"

namespace {

constexpr double kU = 0x1p-24;  // F32's unit roundoff

/// Entry (i, j) of H256: (-1)^c / 16, c = the base-4 digit places where i_t + j_t = 3.
double hadamardEntry(int i, int j) {
  int c = 0;
  for (int t = 0; t < 4; ++t, i /= 4, j /= 4) c += (i % 4 + j % 4 == 3);
  return (c % 2 ? -1.0 : 1.0) / 16.0;
}

/// The dense product H256 x of each 256-block, in float64.
std::vector<double> denseHadamard64(const std::vector<float>& x) {
  std::vector<double> y(x.size());
  for (std::size_t b = 0; b < x.size(); b += 256)
    for (int i = 0; i < 256; ++i) {
      double acc = 0;
      for (int j = 0; j < 256; ++j) acc += hadamardEntry(i, j) * x[b + j];
      y[b + i] = acc;
    }
  return y;
}

double blockNorm(const std::vector<float>& x, std::size_t i) {
  double ss = 0;
  for (std::size_t j = i / 256 * 256; j < i / 256 * 256 + 256; ++j) ss += static_cast<double>(x[j]) * x[j];
  return std::sqrt(ss);
}

}  // namespace

// ---- hadamardRows -----------------------------------------------------------------------------------

TEST(HadamardRows, MatchesTheDenseMatrixInFloat64) {
  // Each stage is orthogonal (H4 / 2), so every value stays <= ||x||_2 of its block; a stage's three
  // additions add <= 3u ||x|| to an element and pass on at most twice the error before:
  // E = 3, 9, 21, 45 u ||x||. Bound: 48 u ||x_block||_2.
  const auto x = randomFloats(Key{3, 1}, 4 * 768, 3.0f, 0.5f);
  const auto y = netops::hadamardRows(host(x, {4, 768})).toVector<float>();
  const auto want = denseHadamard64(x);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(y[i] - want[i]) / (kU * blockNorm(x, i)));
  EXPECT_LE(worst, 48.0) << "worst error in u ||x_block||";
  std::printf("hadamardRows vs float64: worst %.3f u ||x_block||_2 (bound 48)\n", worst);
}

TEST(HadamardRows, OneHotGivesTheMatrixColumnExactly) {
  // The SPEC's stages and its matrix entries (-1)^c / 16 are the same transform.
  for (int j : {0, 1, 3, 17, 63, 64, 200, 255}) {
    std::vector<float> e(256, 0.0f);
    e[j] = 1.0f;
    const auto y = netops::hadamardRows(host(e, {1, 256})).toVector<float>();
    for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], static_cast<float>(hadamardEntry(i, j))) << "i " << i << " j " << j;
  }
}

TEST(HadamardRows, IsItsOwnInverse) {
  // Exact for small integers (every sum is exact). Random values: the second transform passes the
  // first one's error on through rows of L2 norm 1 (<= 16 * 45 u ||x||) and adds its own 45 u ||x||:
  // bound 768 u ||x_block||_2.
  std::vector<float> ints(3 * 512);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<float>(static_cast<int>(i * 7919 % 17) - 8);
  const Tensor xi = host(ints, {3, 512});
  EXPECT_TRUE(sameBits(netops::hadamardRows(netops::hadamardRows(xi)).toVector<float>(), ints));

  const auto x = randomFloats(Key{4, 1}, 5 * 512, 2.0f, -0.25f);
  const auto back = netops::hadamardRows(netops::hadamardRows(host(x, {5, 512}))).toVector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(back[i] - x[i]) / (kU * blockNorm(x, i)));
  EXPECT_LE(worst, 768.0) << "worst error in u ||x_block||";
  std::printf("H H x vs x: worst %.3f u ||x_block||_2 (bound 768)\n", worst);
}

TEST(HadamardRows, RotateWeightRowsIsTheSameTransform) {
  const Tensor w = host(randomFloats(Key{5, 1}, 6 * 512), {6, 512});
  EXPECT_TRUE(sameBits(netops::rotateWeightRows(w).toVector<float>(), netops::hadamardRows(w).toVector<float>()));
}

TEST(HadamardRows, BadInput) {
  const char* fn = "gizml::netops::hadamardRows";
  expectThrowsNaming([] { netops::hadamardRows(host(randomFloats(Key{1, 1}, 2 * 255), {2, 255})); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(host(randomFloats(Key{1, 1}, 2 * 300), {2, 300})); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(Tensor::empty({2, 0})); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(Tensor::zeros({2, 256}, DType::BF16)); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(Tensor()); }, fn, "x");
  expectThrowsNaming([] { netops::rotateWeightRows(Tensor::zeros({2, 100})); }, "gizml::netops::rotateWeightRows", "w");
}

