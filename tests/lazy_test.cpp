// Lazy products (SPEC §2 Lazy, §3 affine / patchRows / lazyConv / lazyConv3): host = the literal
// reference bit for bit on edge shapes (k = 0 included) and thread counts, every epilogue step,
// accuracy against float64, bad input, and the GPU against the host.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "gizml/gizml.hpp"
#include "reference/lazy_reference.hpp"
#include "support/compare.hpp"
#include "support/errors.hpp"
#include "support/gpu.hpp"

using gizml::DType;
using gizml::Device;
using gizml::Key;
using gizml::Lazy;
using gizml::Tensor;
using gizml::test::forThreadCounts;
using gizml::test::randomFloats;
using gizml::test::expectThrowsNaming;
using gizml::test::sameBits;
namespace ref = gizml::reference;

namespace {

struct GemmCase {
  std::int64_t m, n, k;
  std::string name() const { return std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k); }
};
// Around the host's 14 x 32 register block, its 256-step k blocks and the GPU's 64 x 64 tiles.
const GemmCase kGemmCases[] = {{1, 1, 1},    {1, 1, 0},     {3, 5, 0},     {2, 3, 7},     {14, 32, 256},
                               {15, 33, 257}, {13, 31, 255}, {29, 65, 513}, {1, 100, 40}, {100, 1, 40},
                               {64, 64, 64},  {65, 63, 129}, {150, 97, 700}};

Tensor host(const std::vector<float>& v, const gizml::Shape& s) { return Tensor::fromVector(v, s); }

std::vector<float> refMatmul(const std::vector<float>& a, const std::vector<float>& w, const GemmCase& c) {
  std::vector<float> out(static_cast<std::size_t>(c.m * c.n));
  ref::matmul(a.data(), w.data(), c.m, c.n, c.k, out.data());
  return out;
}

/// Inputs with some NaN, inf, and products that round to -0 (so a chain can hold -0).
std::vector<float> operand(Key key, std::int64_t count, bool specials) {
  auto v = randomFloats(key, count);
  if (specials && count > 8) {
    v[count / 3] = std::numeric_limits<float>::quiet_NaN();
    v[count / 2] = std::numeric_limits<float>::infinity();
    v[1] = -1e-30f;  // times another tiny value: an exact product that rounds to -0
    v[2] = -0.0f;
  }
  return v;
}


}  // namespace

// ---- the exact GEMM -------------------------------------------------------------------------------------

TEST(LazyMatmul, HostEqualsReference) {
  for (const auto& c : kGemmCases) {
    SCOPED_TRACE(c.name());
    auto a = operand(Key{1, static_cast<std::uint32_t>(c.k)}, c.m * c.k, c.m * c.k > 100);
    auto w = operand(Key{2, static_cast<std::uint32_t>(c.n)}, c.n * c.k, false);
    auto want = refMatmul(a, w, c);
    forThreadCounts([&] {
      Tensor got = gizml::lazyMatmul(host(a, {c.m, c.k}), host(w, {c.n, c.k})).store();
      EXPECT_EQ(got.shape(), (gizml::Shape{c.m, c.n}));
      EXPECT_TRUE(sameBits(got.toVector<float>(), want));
    });
  }
}

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

TEST(LazyMatmul, RowAloneEqualsRowInBatch) {
  const GemmCase c{40, 70, 300};
  auto a = randomFloats(Key{3, 3}, c.m * c.k), w = randomFloats(Key{4, 4}, c.n * c.k);
  auto batch = gizml::lazyMatmul(host(a, {c.m, c.k}), host(w, {c.n, c.k})).store().toVector<float>();
  for (std::int64_t r : {0, 13, 39}) {
    std::vector<float> row(a.begin() + r * c.k, a.begin() + (r + 1) * c.k);
    auto alone = gizml::lazyMatmul(host(row, {1, c.k}), host(w, {c.n, c.k})).store().toVector<float>();
    EXPECT_TRUE(sameBits(alone, std::vector<float>(batch.begin() + r * c.n, batch.begin() + (r + 1) * c.n)));
  }
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

TEST(LazyMatmul, BF16ComputeOnTheHostRoundsTheOperands) {
  const GemmCase c{9, 20, 50};
  auto a = randomFloats(Key{7, 7}, c.m * c.k), w = randomFloats(Key{8, 8}, c.n * c.k);
  auto ab = a, wb = w;
  for (float& v : ab) v = gizml::bf16ToFloat(gizml::floatToBF16(v));
  for (float& v : wb) v = gizml::bf16ToFloat(gizml::floatToBF16(v));
  auto got = gizml::lazyMatmul(host(a, {c.m, c.k}), host(w, {c.n, c.k}), DType::BF16).store().toVector<float>();
  EXPECT_TRUE(sameBits(got, refMatmul(ab, wb, c)));
  auto wh = w, ah = a;
  for (float& v : ah) v = gizml::f16ToFloat(gizml::floatToF16(v));
  for (float& v : wh) v = gizml::f16ToFloat(gizml::floatToF16(v));
  EXPECT_TRUE(sameBits(gizml::lazyMatmul(host(a, {c.m, c.k}), host(w, {c.n, c.k}), DType::F16).store().toVector<float>(),
                       refMatmul(ah, wh, c)));
}

// ---- the epilogue ---------------------------------------------------------------------------------------

TEST(LazyEpilogue, EveryStepInOrderEqualsTheReference) {
  const GemmCase c{7, 37, 19};
  auto a = randomFloats(Key{9, 9}, c.m * c.k, 0.5f), w = randomFloats(Key{10, 10}, c.n * c.k, 0.5f);
  auto b = randomFloats(Key{11, 11}, c.n), r = randomFloats(Key{12, 12}, c.m * c.n);
  auto prod = refMatmul(a, w, c);
  struct Chain {
    std::string name;
    std::vector<int> ops;  // Lazy::Op codes
  };
  const Chain chains[] = {{"bias", {0}},
                          {"bias silu", {0, 2}},
                          {"scale gelu residual", {1, 3, 5}},
                          {"relu bias scale", {4, 0, 1}},
                          {"residual silu gelu relu", {5, 2, 3, 4}},
                          {"gelu", {3}}};
  for (const auto& ch : chains)
    for (DType out : {DType::F32, DType::BF16, DType::F16}) {
      SCOPED_TRACE(ch.name + " -> " + gizml::dtypeName(out));
      Lazy l = gizml::lazyMatmul(host(a, {c.m, c.k}), host(w, {c.n, c.k}));
      for (int op : ch.ops) {
        if (op == 0) l.bias(host(b, {c.n}));
        if (op == 1) l.scale(0.75);
        if (op == 2) l.silu();
        if (op == 3) l.gelu();
        if (op == 4) l.relu();
        if (op == 5) l.residual(host(r, {c.m, c.n}));
      }
      l.dtype(out);
      std::vector<float> want(prod.size());
      for (std::int64_t i = 0; i < c.m; ++i)
        for (std::int64_t j = 0; j < c.n; ++j) {
          float v = prod[i * c.n + j];
          for (int op : ch.ops) v = ref::epilogueStep(op, v, op == 0 ? b[j] : op == 5 ? r[i * c.n + j] : 0.0f, 0.75f);
          want[i * c.n + j] = out == DType::F32 ? v
                              : out == DType::BF16 ? gizml::bf16ToFloat(gizml::floatToBF16(v))
                                                   : gizml::f16ToFloat(gizml::floatToF16(v));
        }
      Tensor got = l.store();
      EXPECT_EQ(got.dtype(), out);
      EXPECT_TRUE(sameBits(got.toFloats(), want));
      Tensor into = Tensor::zeros({c.m, c.n}, out);
      l.storeInto(into);
      EXPECT_TRUE(sameBits(into.toFloats(), want));
    }
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

TEST(Affine, EqualsMatmulPlusBias) {
  const GemmCase c{33, 17, 65};
  auto x = randomFloats(Key{13, 13}, c.m * c.k), w = randomFloats(Key{14, 14}, c.n * c.k), b = randomFloats(Key{15, 15}, c.n);
  auto prod = refMatmul(x, w, c);
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) prod[i * c.n + j] = prod[i * c.n + j] + b[j];
  forThreadCounts([&] {
    EXPECT_TRUE(sameBits(gizml::netops::affine(host(x, {c.m, c.k}), host(w, {c.n, c.k}), host(b, {c.n})).toVector<float>(), prod));
  });
}

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

struct ConvCase {
  std::int64_t o, c, h, w, kh, kw, pad;
  std::string name() const {
    return std::to_string(o) + "<-" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) + " k" +
           std::to_string(kh) + "x" + std::to_string(kw) + " pad " + std::to_string(pad);
  }
};
const ConvCase kConvCases[] = {{1, 1, 1, 1, 1, 1, 0}, {3, 2, 5, 7, 3, 3, 1}, {8, 3, 9, 9, 3, 3, 1},
                               {5, 4, 6, 5, 2, 3, 0}, {4, 2, 4, 4, 5, 5, 2}, {17, 5, 11, 13, 3, 3, 1},
                               {2, 1, 3, 3, 3, 3, 0}, {6, 3, 8, 2, 1, 1, 0}};

TEST(PatchRows, EqualsReference) {
  for (const auto& c : kConvCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{20, 20}, c.c * c.h * c.w);
    const std::int64_t oh = c.h + 2 * c.pad - c.kh + 1, ow = c.w + 2 * c.pad - c.kw + 1;
    for (auto [r0, r1] : {std::pair<std::int64_t, std::int64_t>{0, oh}, {oh / 2, oh}, {0, 0}}) {
      std::vector<float> want(static_cast<std::size_t>(c.c * c.kh * c.kw * (r1 - r0) * ow));
      ref::patchRows(x.data(), c.c, c.h, c.w, c.kh, c.kw, c.pad, r0, r1, want.data());
      Tensor got = gizml::netops::patchRows(host(x, {c.c, c.h, c.w}), c.kh, c.kw, c.pad, r0, r1);
      EXPECT_EQ(got.shape(), (gizml::Shape{c.c * c.kh * c.kw, (r1 - r0) * ow}));
      EXPECT_TRUE(sameBits(got.toVector<float>(), want));
      std::vector<float> wantBF16 = want;
      for (float& v : wantBF16) v = gizml::bf16ToFloat(gizml::floatToBF16(v));
      EXPECT_TRUE(sameBits(gizml::netops::patchRows(host(x, {c.c, c.h, c.w}), c.kh, c.kw, c.pad, r0, r1, DType::BF16).toFloats(), wantBF16));
    }
  }
}

TEST(LazyConv, HostEqualsReference) {
  for (const auto& c : kConvCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{21, 21}, c.c * c.h * c.w);
    auto w = randomFloats(Key{22, 22}, c.o * c.c * c.kh * c.kw);
    auto b = randomFloats(Key{23, 23}, c.o);
    const std::int64_t pixels = (c.h + 2 * c.pad - c.kh + 1) * (c.w + 2 * c.pad - c.kw + 1);
    std::vector<float> want(static_cast<std::size_t>(c.o * pixels));
    ref::conv(w.data(), x.data(), c.o, c.c, c.h, c.w, c.kh, c.kw, c.pad, want.data());
    for (std::int64_t oc = 0; oc < c.o; ++oc)
      for (std::int64_t p = 0; p < pixels; ++p) want[oc * pixels + p] = ref::epilogueStep(0, want[oc * pixels + p], b[oc], 0);
    forThreadCounts([&] {
      Tensor got = gizml::lazyConv(host(w, {c.o, c.c * c.kh * c.kw}), host(x, {c.c, c.h, c.w}), c.kh, c.kw, c.pad)
                       .bias(host(b, {c.o}))
                       .store();
      EXPECT_EQ(got.shape(), (gizml::Shape{c.o, pixels}));
      EXPECT_TRUE(sameBits(got.toVector<float>(), want));
    });
  }
}

TEST(LazyConv3, EachFrameIsAConvOfThreeFrames) {
  const std::int64_t n = 3, c = 2, h = 5, w = 6, o = 4;
  auto xv = randomFloats(Key{24, 24}, (n + 2) * c * h * w);
  Tensor x = host(xv, {n + 2, c, h, w}).to(DType::BF16);
  auto xb = x.toFloats();  // the BF16 values
  auto wv = randomFloats(Key{25, 25}, o * 27 * c);
  auto b = randomFloats(Key{26, 26}, o);
  Tensor got = gizml::lazyConv3(host(wv, {o, 27 * c}), x).bias(host(b, {o})).store();
  ASSERT_EQ(got.shape(), (gizml::Shape{n, o, h * w}));
  auto gv = got.toVector<float>();
  for (std::int64_t t = 0; t < n; ++t) {
    std::vector<float> want(static_cast<std::size_t>(o * h * w));
    ref::conv(wv.data(), xb.data() + t * c * h * w, o, 3 * c, h, w, 3, 3, 1, want.data());
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t p = 0; p < h * w; ++p) want[oc * h * w + p] = want[oc * h * w + p] + b[oc];
    EXPECT_TRUE(sameBits(std::vector<float>(gv.begin() + t * o * h * w, gv.begin() + (t + 1) * o * h * w), want))
        << "frame " << t;
  }
}

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

// ---- the GPU -------------------------------------------------------------------------------------------------

TEST(LazyCuda, ExactProductsEqualTheHost) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  for (const auto& c : kGemmCases) {
    SCOPED_TRACE(c.name());
    auto a = operand(Key{30, 30}, c.m * c.k, c.m * c.k > 100), w = operand(Key{31, 31}, c.n * c.k, false);
    auto b = randomFloats(Key{32, 32}, c.n);
    Tensor ah = host(a, {c.m, c.k}), wh = host(w, {c.n, c.k}), bh = host(b, {c.n});
    auto want = gizml::lazyMatmul(ah, wh).bias(bh).gelu().dtype(DType::BF16).store().toFloats();
    auto got = gizml::lazyMatmul(ah.to(gpu), wh.to(gpu)).bias(bh.to(gpu)).gelu().dtype(DType::BF16).store();
    EXPECT_EQ(got.device(), gpu);
    EXPECT_TRUE(sameBits(got.toFloats(), want));
  }
  for (const auto& c : kConvCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{33, 33}, c.c * c.h * c.w), w = randomFloats(Key{34, 34}, c.o * c.c * c.kh * c.kw);
    Tensor xh = host(x, {c.c, c.h, c.w}), wh = host(w, {c.o, c.c * c.kh * c.kw});
    EXPECT_TRUE(sameBits(gizml::lazyConv(wh.to(gpu), xh.to(gpu), c.kh, c.kw, c.pad).silu().store().toVector<float>(),
                         gizml::lazyConv(wh, xh, c.kh, c.kw, c.pad).silu().store().toVector<float>()));
    EXPECT_TRUE(sameBits(gizml::netops::patchRows(xh.to(gpu), c.kh, c.kw, c.pad, 0, 1).toVector<float>(),
                         gizml::netops::patchRows(xh, c.kh, c.kw, c.pad, 0, 1).toVector<float>()));
  }
}

namespace {
double relativeError(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}
}  // namespace

TEST(LazyCuda, MatrixCoresHoldTheirTolerance) {
  // BF16 / F16 compute on matrix cores: ||gpu - host|| / ||host|| <= 1e-3 against the host's BF16
  // compute (the same rounded operands, the exact chain) and <= 1e-2 against exact F32.
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  for (const GemmCase& c : {GemmCase{64, 64, 64}, GemmCase{100, 70, 333}, GemmCase{256, 512, 1024}, GemmCase{1, 8, 16}}) {
    SCOPED_TRACE(c.name());
    auto a = randomFloats(Key{35, 35}, c.m * c.k), w = randomFloats(Key{36, 36}, c.n * c.k);
    Tensor ah = host(a, {c.m, c.k}), wh = host(w, {c.n, c.k});
    for (DType compute : {DType::BF16, DType::F16}) {
      auto hostRounded = gizml::lazyMatmul(ah, wh, compute).store().toVector<float>();
      auto exact = gizml::lazyMatmul(ah, wh).store().toVector<float>();
      auto got = gizml::lazyMatmul(ah.to(gpu), wh.to(gpu), compute).store().toVector<float>();
      EXPECT_LE(relativeError(got, hostRounded), 1e-3) << gizml::dtypeName(compute);
      EXPECT_LE(relativeError(got, exact), 1e-2) << gizml::dtypeName(compute);
    }
  }
  // lazyConv on matrix cores (implicit GEMM), 64 -> 64 channels, 3 x 3, pad 1.
  auto x = randomFloats(Key{37, 37}, 64 * 20 * 24), w = randomFloats(Key{38, 38}, 64 * 64 * 9, 0.1f);
  Tensor xh = host(x, {64, 20, 24}), wh = host(w, {64, 64 * 9});
  auto exact = gizml::lazyConv(wh, xh, 3, 3, 1).store().toVector<float>();
  auto got = gizml::lazyConv(wh.to(gpu), xh.to(gpu), 3, 3, 1, DType::BF16).store().toVector<float>();
  EXPECT_LE(relativeError(got, exact), 1e-2);
  // lazyConv3 on a GPU (BF16 matrix cores) against the host's exact F32.
  Tensor x3 = host(randomFloats(Key{39, 39}, 4 * 8 * 6 * 7), {4, 8, 6, 7}).to(DType::BF16);
  Tensor w3 = host(randomFloats(Key{40, 40}, 16 * 27 * 8, 0.2f), {16, 27 * 8});
  EXPECT_LE(relativeError(gizml::lazyConv3(w3.to(gpu), x3.to(gpu)).store().toVector<float>(),
                          gizml::lazyConv3(w3, x3).store().toVector<float>()),
            1e-2);
}
