// Lazy products (SPEC §2 Lazy, §3 affine / patchRows / lazyConv / lazyConv3) beyond the registry's
// checks (tests/registry/gemm_cases.cpp): -0 chains, accuracy against float64, the activations
// against float64, bad input.
#include <cmath>

#include "support/preamble.hpp"

namespace {

struct GemmCase {
  std::int64_t m, n, k;
};

}  // namespace

// ---- the exact GEMM -------------------------------------------------------------------------------------

TEST(LazyMatmul, NegativeZeroChainsSurvive) {
  // Each product is -1e-60, which rounds to -0: the chain is -0 throughout, and k blocks, padding
  // or a zero step must not turn it into +0.
  for (std::int64_t k : {1, 255, 256, 257, 600}) {
    std::vector<float> a(3 * k, -1e-30f), w(33 * k, 1e-30f);
    auto got = gizml::lazyMatmul(host(a, {3, k}), host(w, {33, k})).store().toVector<float>();
    for (float v : got) ASSERT_TRUE(sameBits(v, -0.0f)) << "k = " << k;
  }
}

TEST(LazyMatmul, NegativeZeroOperandsKeepTheirSign) {
  // fma(-1e-30, 1e-30, +0) = -0, then fma(-0, 1, -0) = -0: a broadcast that lost the sign of
  // the -0 operand would give +0.
  std::vector<float> a = {-1e-30f, -0.0f}, w = {1e-30f, 1.0f};
  EXPECT_TRUE(sameBits(gizml::lazyMatmul(host(a, {1, 2}), host(w, {1, 2})).store().toVector<float>()[0], -0.0f));
  // A convolution's bias is per output row: -0 + -0 stays -0.
  std::vector<float> x = {1e-30f}, k = {-1e-30f}, b = {-0.0f};
  auto conv = gizml::lazyConv(host(k, {1, 1}), host(x, {1, 1, 1}), 1, 1, 0).bias(host(b, {1})).store();
  EXPECT_TRUE(sameBits(conv.toVector<float>()[0], -0.0f));
}

TEST(LazyMatmul, AccuracyAgainstFloat64) {
  // |c - c64| <= k 2^-24 sum_p |a_p w_p| (the chain's classical bound); measured far inside it.
  const GemmCase c{37, 41, 1000};
  auto a = randomFloats(Key{5, 5}, c.m * c.k), w = randomFloats(Key{6, 6}, c.n * c.k);
  auto got = gizml::lazyMatmul(host(a, {c.m, c.k}), host(w, {c.n, c.k})).store().toVector<float>();
  double worst = 0;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      double exact = 0, mag = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        exact += static_cast<double>(a[i * c.k + p]) * w[j * c.k + p];
        mag += std::fabs(static_cast<double>(a[i * c.k + p]) * w[j * c.k + p]);
      }
      worst = std::max(worst, std::fabs(got[i * c.n + j] - exact) / (c.k * 0x1p-24 * mag));
    }
  EXPECT_LE(worst, 1.0);
}

// ---- the epilogue ---------------------------------------------------------------------------------------

TEST(LazyEpilogue, StoreIntoItsOwnInputs) {
  // The host applies the epilogue as the tiles leave the registers, keeping the k blocks' chains
  // in an F32 output; an output that is also an input (the residual, or an operand) must still
  // give the values of a fresh output. k spans several k blocks, n several column blocks.
  const std::int64_t m = 13, n = 700, k = 1100;
  Tensor a = host(withSpecials(Key{40, 1}, m * k), {m, k}), w = host(randomFloats(Key{40, 2}, n * k, 0.5f), {n, k});
  Tensor b = host(randomFloats(Key{40, 3}, n), {n}), r = host(randomFloats(Key{40, 4}, m * n), {m, n});
  forThreadCounts([&] {
    const auto want = gizml::lazyMatmul(a, w).bias(b).gelu().residual(r).store().toVector<float>();
    Tensor inPlace = r.clone();
    gizml::lazyMatmul(a, w).bias(b).gelu().residual(inPlace).storeInto(inPlace);
    EXPECT_TRUE(sameBits(inPlace.toVector<float>(), want));
    // out = a (n == k): the product is computed before a is overwritten.
    Tensor sq = host(withSpecials(Key{40, 5}, m * k), {m, k}), wk = host(randomFloats(Key{40, 6}, k * k, 0.5f), {k, k});
    const auto wantSq = gizml::lazyMatmul(sq, wk).relu().store().toVector<float>();
    gizml::lazyMatmul(sq, wk).relu().storeInto(sq);
    EXPECT_TRUE(sameBits(sq.toVector<float>(), wantSq));
  });
}

TEST(LazyEpilogue, ActivationsAgainstFloat64) {
  // Each activation on its own over a range of values: SiLU within 4 ulp of float64, GELU within
  // (4 + 3 |2u|) ulp (the roundings in computing 2u move exp's argument by about |2u| ulp, which
  // exp turns into that relative error), plus 1e-37 absolute near their zeros; ReLU exact.
  std::vector<float> v;
  for (int i = -4000; i <= 4000; ++i) v.push_back(static_cast<float>(i) * 0.0037f);
  v.push_back(50.0f);
  v.push_back(-50.0f);
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  std::vector<float> one = {1.0f};
  Tensor a = host(v, {n, 1}), w = host(one, {1, 1});
  auto silu = gizml::lazyMatmul(a, w).silu().store().toVector<float>();
  auto gelu = gizml::lazyMatmul(a, w).gelu().store().toVector<float>();
  auto relu = gizml::lazyMatmul(a, w).relu().store().toVector<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    double x = v[i];
    double s = x / (1 + std::exp(-x));
    // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)); the second form keeps float64 accurate where
    // 1 + tanh(u) cancels (x below about -5).
    const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    double g = x / (1 + std::exp(-2 * u));
    if (std::fabs(x) < 3) EXPECT_NEAR(g, 0.5 * x * (1 + std::tanh(u)), 1e-15);
    EXPECT_LE(std::fabs(silu[i] - s), 4 * std::fabs(s) * 0x1p-24 + 1e-37) << x;
    EXPECT_LE(std::fabs(gelu[i] - g), (4 + 3 * std::fabs(2 * u)) * std::fabs(g) * 0x1p-24 + 1e-37) << x;
    EXPECT_EQ(relu[i], x > 0 ? v[i] : 0.0f);
  }
  std::vector<float> nan = {std::nanf("")};
  EXPECT_TRUE(std::isnan(gizml::lazyMatmul(host(nan, {1, 1}), w).relu().store().toVector<float>()[0]));
}

// ---- affine ------------------------------------------------------------------------------------------------

TEST(Affine, BadInput) {
  const char* fn = "gizml::netops::affine";
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}), w = host(randomFloats(Key{2, 2}, 8), {2, 4});
  Tensor b = host({1, 2}, {2});
  expectThrowsNaming([&] { gizml::netops::affine(x, host(randomFloats(Key{2, 2}, 6), {2, 3}), b); }, fn, "w");
  expectThrowsNaming([&] { gizml::netops::affine(x, w, host({1, 2, 3}, {3})); }, fn, "b");
  expectThrowsNaming([&] { gizml::netops::affine(x.to(DType::BF16), w, b); }, fn, "x");
  expectThrowsNaming([&] { gizml::netops::affine(x.reshape({12}), w, b); }, fn, "x");
  expectThrowsNaming([&] { gizml::netops::affine(x, w, b, DType::I8); }, fn, "compute");
}

TEST(Lazy, BadInput) {
  Tensor a = host(randomFloats(Key{1, 1}, 12), {3, 4}), w = host(randomFloats(Key{2, 2}, 8), {2, 4});
  expectThrowsNaming([&] { gizml::lazyMatmul(a, host(randomFloats(Key{2, 2}, 6), {2, 3})); }, "gizml::lazyMatmul", "w");
  expectThrowsNaming([&] { gizml::lazyMatmul(a.to(DType::F16), w); }, "gizml::lazyMatmul", "a");
  expectThrowsNaming([&] { gizml::lazyMatmul(a, w).bias(host({1, 2, 3}, {3})); }, "gizml::Lazy::bias", "b");
  expectThrowsNaming([&] { gizml::lazyMatmul(a, w).residual(host({1, 2}, {1, 2})); }, "gizml::Lazy::residual", "r");
  expectThrowsNaming([&] { gizml::lazyMatmul(a, w).dtype(DType::I8); }, "gizml::Lazy::dtype", "d");
  Lazy l = gizml::lazyMatmul(a, w);
  Tensor wrongShape = Tensor::zeros({2, 3}), wrongType = Tensor::zeros({3, 2}, DType::BF16);
  expectThrowsNaming([&] { l.storeInto(wrongShape); }, "gizml::Lazy::storeInto", "out");
  expectThrowsNaming([&] { l.storeInto(wrongType); }, "gizml::Lazy::storeInto", "out");
  EXPECT_TRUE(sameBits(wrongShape.toVector<float>(), std::vector<float>(6, 0.0f))) << "a failed store touches nothing";
}

// ---- patchRows, lazyConv, lazyConv3 ---------------------------------------------------------------------

TEST(LazyConv, BadInput) {
  Tensor x = host(randomFloats(Key{1, 1}, 2 * 4 * 4), {2, 4, 4});
  Tensor w = host(randomFloats(Key{2, 2}, 3 * 18), {3, 18});
  expectThrowsNaming([&] { gizml::lazyConv(w, x, 7, 7, 1); }, "gizml::lazyConv", "kh, kw");  // kernel > padded input
  expectThrowsNaming([&] { gizml::lazyConv(w, x, 0, 3, 1); }, "gizml::lazyConv", "kh, kw");
  expectThrowsNaming([&] { gizml::lazyConv(w, x, 3, 3, -1); }, "gizml::lazyConv", "pad");
  expectThrowsNaming([&] { gizml::lazyConv(host(randomFloats(Key{2, 2}, 27), {3, 9}), x, 3, 3, 1); }, "gizml::lazyConv", "w");
  expectThrowsNaming([&] { gizml::lazyConv(w, x.to(DType::BF16), 3, 3, 1); }, "gizml::lazyConv", "x");
  expectThrowsNaming([&] { gizml::lazyConv(w, x, 3, 3, 1).bias(host({1, 2}, {2})); }, "gizml::Lazy::bias", "b");
  expectThrowsNaming([&] { gizml::netops::patchRows(x, 3, 3, 1, 2, 1); }, "gizml::netops::patchRows", "r0, r1");
  expectThrowsNaming([&] { gizml::netops::patchRows(x, 3, 3, 1, 0, 5); }, "gizml::netops::patchRows", "r0, r1");
  expectThrowsNaming([&] { gizml::netops::patchRows(x, 3, 3, 1, 0, 1, DType::I8); }, "gizml::netops::patchRows", "dtype");
  Tensor x4 = host(randomFloats(Key{3, 3}, 4 * 2 * 3 * 3), {4, 2, 3, 3}).to(DType::BF16);
  expectThrowsNaming([&] { gizml::lazyConv3(host(randomFloats(Key{2, 2}, 3 * 27), {3, 27}), x4); }, "gizml::lazyConv3", "w");
  expectThrowsNaming([&] { gizml::lazyConv3(host(randomFloats(Key{2, 2}, 3 * 54), {3, 54}), x4.rows(0, 2)); }, "gizml::lazyConv3", "x");
}
