// The 8-bit rows (SPEC §3) beyond the registry's checks (tests/registry/quant_cases.cpp): the
// transform against its dense matrix and as its own inverse, int8Rows against a float64 quantizer,
// NaN and inf, the Into form, bad input.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/host_memory.hpp"
#include "netops/quant/quant.hpp"
#include "reference/quant_reference.hpp"
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

TEST(HadamardRows, MatchesTheKroneckerDefinition) {
  // tests/data/make_torch_norms_values.py: x times H4 (x) H4 (x) H4 (x) H4 / 16 by torch.kron, in
  // float64; the four stages round each step, so within 1e-6 (1 + |y|).
  const auto cases = gizml::test::torchCases("torch_norms.txt", "hadamard");
  ASSERT_GE(cases.size(), 2u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto y = netops::hadamardRows(host(c.floats("x"), {c.ints[0], c.ints[1]})).toVector<float>();
    const auto& want = c.field("y");
    ASSERT_EQ(y.size(), want.size());
    for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6 * (1 + std::fabs(want[i]))) << i;
  }
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
  // What it is for: rotated activations times rotated weights are the product unrotated,
  // (x H)(w H)ᵀ = x wᵀ. Each rotated value is off by <= 48 u ||its block||, a rotated row of 512
  // by <= sqrt(512) 48 u ||row|| in L2, so the dot product by <= 2 (1087 u) ||x_row|| ||w_row||
  // (first order) < 2^-13 ||x_row|| ||w_row||.
  const auto x = randomFloats(Key{5, 2}, 4 * 512), wv = w.toVector<float>();
  const auto xr = netops::hadamardRows(host(x, {4, 512})).toVector<float>();
  const auto wr = netops::rotateWeightRows(w).toVector<float>();
  for (int i = 0; i < 4; ++i)
    for (int o = 0; o < 6; ++o) {
      double rotated = 0, plain = 0, xx = 0, ww = 0;
      for (int j = 0; j < 512; ++j) {
        rotated += static_cast<double>(xr[i * 512 + j]) * wr[o * 512 + j];
        plain += static_cast<double>(x[i * 512 + j]) * wv[o * 512 + j];
        xx += static_cast<double>(x[i * 512 + j]) * x[i * 512 + j];
        ww += static_cast<double>(wv[o * 512 + j]) * wv[o * 512 + j];
      }
      EXPECT_LE(std::fabs(rotated - plain), 0x1p-13 * std::sqrt(xx * ww)) << "x row " << i << ", w row " << o;
    }
}

TEST(HadamardRows, ZerosKeepTheStagesSigns) {
  // A stage's output d is -0 from zeros only as ((s0 u0 + s1 u1) + s2 u2) + s3 u3 makes it: u_e = -0
  // where s_e = +1 and +0 where s_e = -1 (d = 0: -0 -0 -0 +0; d = 3: +0 -0 -0 -0); from all +0 it
  // is +0. Each block here is zeros signed so that its element `target` comes out -0 through the
  // four stages, through output d = target's base-4 digit at every stage: a shortcut that computes
  // u1 - u0 as -(u0 - u1), or drops a zero's sign elsewhere, gives +0. Compared with the reference
  // bit for bit, every element.
  const int targets[] = {0, 85, 170, 255, 27, 228};  // digits all 0, 1, 2, 3, and mixed
  const int blocks = static_cast<int>(std::size(targets));
  std::vector<float> x(static_cast<std::size_t>(blocks) * 256);
  // want(stage, e, negative): stage t's output e (strides 1, 4, 16, 64 for t = 0 .. 3) is -0 where
  // negative, else +0; stage -1 is the input.
  const auto want = [&](auto& self, float* block, int stage, int e, bool negative) -> void {
    if (stage < 0) {
      block[e] = negative ? -0.0f : 0.0f;
      return;
    }
    const int stride = 1 << (2 * stage), d = e / stride % 4, base = e - d * stride;
    for (int k = 0; k < 4; ++k) self(self, block, stage - 1, base + k * stride, negative && (d + k != 3));
  };
  for (int b = 0; b < blocks; ++b) want(want, x.data() + 256 * b, 3, targets[b], true);
  const auto got = netops::hadamardRows(host(x, {1, blocks * 256})).toVector<float>();
  std::vector<float> expected(x.size());
  gizml::reference::hadamardRows(x.data(), 1, blocks * 256, expected.data());
  for (int b = 0; b < blocks; ++b) EXPECT_TRUE(std::signbit(expected[256 * b + targets[b]])) << "target " << targets[b];
  EXPECT_TRUE(sameBits(got, expected));
}

TEST(HadamardRows, Bf16RowsAreTheirF32Values) {
  const Tensor xb = host(withSpecials(Key{6, 1}, 3 * 512), {3, 512}).to(DType::BF16);
  EXPECT_TRUE(sameBits(netops::hadamardRows(xb).toVector<float>(),
                       netops::hadamardRows(xb.to(DType::F32)).toVector<float>()));
  for (int bits : {8, 4}) {
    const auto a = netops::int8Rows(xb, bits), b = netops::int8Rows(xb.to(DType::F32), bits);
    EXPECT_TRUE(sameBits(a.q.toVector<float>(), b.q.toVector<float>()));
    EXPECT_TRUE(sameBits(a.s.toVector<float>(), b.s.toVector<float>()));
  }
}

TEST(HadamardRows, IntoEqualsHadamardRowsAndRunsInPlace) {
  // Rows of one and of three blocks, F32 and BF16 x; in place for F32 (y = x).
  for (std::int64_t n : {256, 768}) {
    SCOPED_TRACE(n);
    const Tensor x = host(withSpecials(Key{7, static_cast<std::uint32_t>(n)}, 5 * n), {5, n});
    for (const Tensor& in : {x, x.to(DType::BF16)}) {
      Tensor y = Tensor::zeros({5, n});
      netops::hadamardRowsInto(in, y);
      EXPECT_TRUE(sameBits(y.toVector<float>(), netops::hadamardRows(in).toVector<float>()));
    }
    Tensor inPlace = x.clone();
    netops::hadamardRowsInto(inPlace, inPlace);
    EXPECT_TRUE(sameBits(inPlace.toVector<float>(), netops::hadamardRows(x).toVector<float>()));
  }
}

TEST(HadamardRows, BadInput) {
  const char* fn = "gizml::netops::hadamardRows";
  expectThrowsNaming([] { netops::hadamardRows(host(randomFloats(Key{1, 1}, 2 * 255), {2, 255})); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(host(randomFloats(Key{1, 1}, 2 * 300), {2, 300})); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(Tensor::empty({2, 0})); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(Tensor::zeros({2, 256}, DType::F16)); }, fn, "x");
  expectThrowsNaming([] { netops::hadamardRows(Tensor()); }, fn, "x");
  expectThrowsNaming([] { netops::rotateWeightRows(Tensor::zeros({2, 100})); }, "gizml::netops::rotateWeightRows", "w");
  const char* into = "gizml::netops::hadamardRowsInto";
  const Tensor x = host(randomFloats(Key{1, 2}, 2 * 256), {2, 256});
  Tensor y = host(std::vector<float>(2 * 256, 7.0f), {2, 256});
  expectThrowsNaming([&] { netops::hadamardRowsInto(host(randomFloats(Key{1, 1}, 2 * 300), {2, 300}), y); }, into, "x");
  expectThrowsNaming([&] { netops::hadamardRowsInto(x, Tensor()); }, into, "y");
  expectThrowsNaming([&] { netops::hadamardRowsInto(x, Tensor::zeros({2, 256}, DType::BF16)); }, into, "y");
  expectThrowsNaming([&] { netops::hadamardRowsInto(x, Tensor::zeros({1, 512})); }, into, "y");
  expectThrowsNaming([&] { netops::hadamardRowsInto(x.to(DType::BF16), y.to(DType::BF16)); }, into, "y");
  EXPECT_TRUE(sameBits(y.toVector<float>(), std::vector<float>(2 * 256, 7.0f))) << "y untouched";
}

TEST(QuantOutputs, OverlappingTheirInputsIsAnError) {
  // Views into one buffer: an output sharing a byte with an input, other than x itself where
  // hadamardRowsInto runs in place, is an error naming the output, and nothing is written.
  Tensor buf = host(randomFloats(Key{2, 9}, 4 * 256), {4, 256});
  const std::vector<float> before = buf.toVector<float>();
  const Tensor x = buf.rows(0, 2);
  const Tensor column = buf.reshape({4 * 256, 1});  // [rows, 1] views anywhere in buf
  expectThrowsNaming([&] { netops::hadamardRowsInto(x, buf.rows(1, 3)); }, "gizml::netops::hadamardRowsInto", "y",
                     "x itself");
  const char* into = "gizml::netops::int8RowsInto";
  expectThrowsNaming([&] { netops::int8RowsInto(x, buf.rows(1, 3), Tensor::zeros({2, 1})); }, into, "q",
                     "apart from x");
  expectThrowsNaming([&] { netops::int8RowsInto(x, buf.rows(2, 4), column.rows(300, 302)); }, into, "s",
                     "apart from x");
  expectThrowsNaming([&] { netops::int8RowsInto(x, buf.rows(2, 4), column.rows(600, 602)); }, into, "s",
                     "apart from q");
  // modulatedInt8RowsInto: the codes apart from the modulation.
  const Tensor w = buf.rows(3, 4).reshape({256}), shift = buf.rows(2, 3), map = host({0, 0}, {2});
  const Tensor fresh = host(randomFloats(Key{2, 10}, 2 * 256), {2, 256});
  const Tensor q = buf.rows(2, 4), s = Tensor::zeros({2, 1});
  expectThrowsNaming([&] { netops::modulatedInt8RowsInto(fresh, w, shift, shift, map, 1e-6, Tensor(), q, s, false); },
                     "gizml::netops::modulatedInt8RowsInto", "q", "apart from w");
  // int8RowsProductInto: out apart from every operand.
  Tensor codes = Tensor::zeros({2, 256});
  const Tensor scales = host({0.5f, 0.25f}, {2, 1});
  const char* product = "gizml::netops::int8RowsProductInto";
  const Tensor inCodes = codes.reshape({256, 2}).rows(0, 2);
  expectThrowsNaming([&] { netops::int8RowsProductInto(codes, scales, codes, scales, inCodes); }, product, "out",
                     "apart from qa");
  Tensor out = host({7.0f, 7.0f, 7.0f, 7.0f}, {2, 2});
  const Tensor inOut = out.reshape({4}).rows(2, 4);
  expectThrowsNaming([&] { netops::int8RowsProductInto(codes, scales, codes, scales, out, inOut); }, product, "out",
                     "apart from bias");
  EXPECT_TRUE(sameBits(out.toVector<float>(), std::vector<float>(4, 7.0f)));
  EXPECT_TRUE(sameBits(buf.toVector<float>(), before)) << "nothing written";
  EXPECT_TRUE(std::all_of(codes.data<float>(), codes.data<float>() + 512, [](float c) { return c == 0.0f; }));
  netops::hadamardRowsInto(x, x);  // x itself: in place
}

// ---- int8Rows ---------------------------------------------------------------------------------------

TEST(Int8Rows, MatchesAFloat64Quantizer) {
  // Against y64 = the dense float64 product, s64 = max(max|y64| / maxCode, 1e-30),
  // code64 = clamp(rint(y64 / s64)): every code within one. Against the float64 quantizer of
  // gizml's own F32 y and s: equal wherever the F32 y / s is more than an ulp from a half.
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const double maxCode = bits == 8 ? 127 : 7, lo = -maxCode - 1;
    const std::int64_t rows = 16, n = 768;
    const auto x = randomFloats(Key{6, static_cast<std::uint32_t>(bits)}, rows * n, 1.5f, 0.1f);
    const auto out = netops::int8Rows(host(x, {rows, n}), bits);
    const auto q = out.q.toVector<float>(), s = out.s.toVector<float>();
    const auto y = netops::hadamardRows(host(x, {rows, n})).toVector<float>();
    const auto y64 = denseHadamard64(x);
    std::int64_t sameAsFloat64 = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      double m64 = 0;
      float m = 0;
      for (std::int64_t i = r * n; i < (r + 1) * n; ++i) {
        m64 = std::max(m64, std::fabs(y64[i]));
        m = std::max(m, std::fabs(y[i]));
      }
      ASSERT_TRUE(sameBits(s[r], std::max(m / static_cast<float>(maxCode), 1e-30f))) << "row " << r;
      const double s64 = std::max(m64 / maxCode, 1e-30);
      for (std::int64_t i = r * n; i < (r + 1) * n; ++i) {
        const double code64 = std::clamp(std::rint(y64[i] / s64), lo, maxCode);
        ASSERT_LE(std::fabs(q[i] - code64), 1.0) << "element " << i;
        sameAsFloat64 += q[i] == code64;
        const float v = y[i] / s[r];
        const float half = std::floor(v) + 0.5f;
        if (std::fabs(v - half) > std::nextafter(std::fabs(v), INFINITY) - std::fabs(v))
          ASSERT_EQ(q[i], std::clamp(std::rint(static_cast<double>(y[i]) / s[r]), lo, maxCode)) << "element " << i;
      }
    }
    // Measured: all of them; a code off by one needs y64 / s64 within ~1e-4 of a half.
    EXPECT_GE(sameAsFloat64, rows * n * 999 / 1000);
    std::printf("bits %d: %lld of %lld codes equal the float64 quantizer's\n", bits,
                static_cast<long long>(sameAsFloat64), static_cast<long long>(rows * n));
  }
}

// A GPU's codes: int8CodeByReciprocal (quant.hpp) gives int8Code's code from y * (1 / s) wherever it
// does not decline, and declines rarely. Run here on the host: the same source as a GPU's.
TEST(Int8Rows, Int8CodeByReciprocal) {
  using netops::quant::int8Code, netops::quant::int8CodeByReciprocal, netops::quant::kCodeBias;
  const float largest = std::numeric_limits<float>::max() / 7.0f;  // the largest scale (4 bits' maxCode)
  std::vector<float> scales = {1e-30f, 3.3e-29f, 1e-20f, 0.0078125f, 0.013f, 1.0f, 1.0f / 3.0f, 2.5f, 1e20f, 1e36f, largest, INFINITY};
  const auto random = randomFloats(Key{12, 1}, 24, 4.0f, 0.0f);
  for (float r : random) scales.push_back(std::ldexp(1.0f + std::fabs(r), static_cast<int>(r * 8.0f)));
  const auto hexBits = [](float v) {
    char text[16];
    std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(gizml::exact::toBits(v)));
    return std::string(text);
  };
  std::int64_t tried = 0, declined = 0;
  const auto check = [&](float y, float s, float lo, float hi) {
    float biased = 0;
    const bool decided = int8CodeByReciprocal(y, 1.0f / s, lo, hi, biased);
    ++tried;
    if (!decided) return ++declined, ::testing::AssertionSuccess();
    const float want = int8Code(y, s, lo, hi);
    if (!sameBits(biased - kCodeBias, want) || static_cast<std::int8_t>(gizml::exact::toBits(biased)) != static_cast<int>(want))
      return ::testing::AssertionFailure() << "y " << y << " (bits 0x" << hexBits(y) << "), s " << s << ": code "
                                           << biased - kCodeBias << ", int8Code " << want;
    return ::testing::AssertionSuccess();
  };
  for (const auto& [lo, hi] : {std::pair{-128.0f, 127.0f}, std::pair{-8.0f, 7.0f}}) {
    for (float s : scales) {
      // Every distance of up to 40 ulps from y = h s, h a half-integer inside and past the clamp.
      for (float h = -300.5f; h <= 300.5f; h += 1.0f) {
        const float centre = h * s;
        float below = centre, above = centre;
        for (int d = 0; d <= 40; ++d) {
          ASSERT_TRUE(check(below, s, lo, hi));
          ASSERT_TRUE(check(above, s, lo, hi));
          below = std::nextafter(below, -INFINITY), above = std::nextafter(above, INFINITY);
        }
      }
      for (float y : {0.0f, -0.0f, 1e-45f, -1e-40f, kNaN, INFINITY, -INFINITY, std::numeric_limits<float>::max()})
        ASSERT_TRUE(check(y, s, lo, hi));
    }
  }
  // Near the halves it declines often, as it should (where q and the quotient round apart).
  EXPECT_GT(declined, tried / 100);
  // Away from them: a typical row's values, in codes, decline some 1 in 10^4 (a band of 2^-13 around
  // each half).
  std::int64_t typical = 0, typicalDeclined = 0;
  const auto ys = randomFloats(Key{12, 2}, 1 << 16, 60.0f, 0.0f);
  for (float y : ys) {
    float biased = 0;
    ++typical;
    if (!int8CodeByReciprocal(y, 1.0f / 0.5f, -128.0f, 127.0f, biased)) ++typicalDeclined;
    ASSERT_TRUE(check(y, 0.5f, -128.0f, 127.0f));
  }
  EXPECT_LE(typicalDeclined, typical / 1000);
  std::printf("int8CodeByReciprocal: declined %lld of %lld values near halves, %lld of %lld typical ones\n",
              static_cast<long long>(declined), static_cast<long long>(tried), static_cast<long long>(typicalDeclined),
              static_cast<long long>(typical));
}

TEST(Int8Rows, NaNAndInfinity) {
  const std::int64_t n = 512;
  auto x = randomFloats(Key{7, 1}, 4 * n);
  x[300] = kNaN;                                                  // row 0, block 1
  x[n + 10] = kInf;                                               // row 1
  std::fill(x.begin() + 2 * n, x.begin() + 3 * n, kNaN);          // row 2: all NaN
  std::fill(x.begin() + 3 * n, x.begin() + 4 * n, -0.0f);         // row 3: zeros
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const auto out = netops::int8Rows(host(x, {4, n}), bits);
    const auto q = out.q.toVector<float>(), s = out.s.toVector<float>();
    // Row 0: block 1's y are NaN, its codes 0; s and block 0's codes are block 0's alone.
    const auto block0 = netops::int8Rows(host(std::vector<float>(x.begin(), x.begin() + 256), {1, 256}), bits);
    EXPECT_TRUE(sameBits(s[0], block0.s.toVector<float>()[0]));
    EXPECT_TRUE(sameBits(std::vector<float>(q.begin(), q.begin() + 256), block0.q.toVector<float>()));
    EXPECT_TRUE(sameBits(std::vector<float>(q.begin() + 256, q.begin() + n), std::vector<float>(256, 0.0f)));
    // Row 1: s = inf, every code 0. Rows 2 and 3: s = 1e-30, codes 0 (+0, never -0).
    EXPECT_TRUE(sameBits(s[1], kInf));
    EXPECT_TRUE(sameBits(s[2], 1e-30f));
    EXPECT_TRUE(sameBits(s[3], 1e-30f));
    EXPECT_TRUE(sameBits(std::vector<float>(q.begin() + n, q.end()), std::vector<float>(3 * n, 0.0f)));
  }
}

/// 40 rows of 512 values of every magnitude (AnyExponentEqualsTheReference's): rows whose values
/// span the whole exponent range, rows of subnormals and tiny normals (where halving rounds), rows
/// near the top (sums that overflow to inf), rows of small integers (codes on halves) and a row
/// with a NaN.
static std::vector<float> anyExponentRows(std::int64_t rows, std::int64_t n) {
  std::vector<float> x(rows * n);
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  const auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint64_t u = next();
      const std::uint32_t sign = static_cast<std::uint32_t>(u >> 63) << 31, mantissa = (u >> 8) & 0x7fffff;
      int exponent;  // the biased exponent field
      switch (r % 5) {
        case 0: exponent = static_cast<int>(u % 255); break;        // anything finite, subnormals included
        case 1: exponent = static_cast<int>(u % 8); break;          // subnormals and the lowest binades
        case 2: exponent = 240 + static_cast<int>(u % 15); break;   // near FLT_MAX
        case 3: exponent = i < 256 ? 120 : static_cast<int>(u % 6); break;  // one ordinary block, one tiny
        default: exponent = -1; break;
      }
      float v;
      if (exponent >= 0) {
        const std::uint32_t bits = sign | static_cast<std::uint32_t>(exponent) << 23 | mantissa;
        std::memcpy(&v, &bits, sizeof v);
      } else {
        v = static_cast<float>(static_cast<int>(u % 9) - 4);  // small integers
      }
      x[r * n + i] = v;
    }
  x[7 * n + 100] = kNaN;
  return x;
}

TEST(Int8Rows, AnyExponentEqualsTheReference) {
  // The host keeps each row's last stage unhalved (every stage for BF16 rows, walked again where
  // that overflowed) and rounds its codes without the clamp (host.cpp: Int8Walker, codeOfHeld); it
  // must still give the reference's bits for every magnitude (anyExponentRows), as F32 and as BF16.
  const std::int64_t rows = 40, n = 512;
  const std::vector<float> x = anyExponentRows(rows, n);
  for (DType dtype : {DType::F32, DType::BF16}) {
    const Tensor in = host(x, {rows, n}).to(dtype);
    const std::vector<float> values = in.toFloats();
    for (int bits : {8, 4}) {
      SCOPED_TRACE(dtypeName(dtype) + " bits " + std::to_string(bits));
      std::vector<float> q(rows * n), scale(rows);
      gizml::reference::int8Rows(values.data(), rows, n, bits, q.data(), scale.data());
      const auto out = netops::int8Rows(in, bits);
      EXPECT_TRUE(sameBits(out.q.toVector<float>(), q)) << "q";
      EXPECT_TRUE(sameBits(out.s.toVector<float>(), scale)) << "s";
    }
  }
}

TEST(Int8Rows, EachRowAloneEqualsTheReference) {
  // A thread's last row (all of a decode step's one row) has its codes found by the reciprocal on
  // AVX-512 (host.cpp: codeOfHeldByReciprocal), by the division where a lane lies near a half:
  // every row of anyExponentRows alone, F32 and BF16, 8 and 4 bits, against the reference.
  const std::int64_t rows = 40, n = 512;
  const std::vector<float> x = anyExponentRows(rows, n);
  for (DType dtype : {DType::F32, DType::BF16})
    for (int bits : {8, 4})
      for (std::int64_t r = 0; r < rows; ++r) {
        SCOPED_TRACE(dtypeName(dtype) + " bits " + std::to_string(bits) + " row " + std::to_string(r));
        const Tensor in = host(std::vector<float>(x.begin() + r * n, x.begin() + (r + 1) * n), {1, n}).to(dtype);
        const std::vector<float> values = in.toFloats();
        std::vector<float> q(n), scale(1);
        gizml::reference::int8Rows(values.data(), 1, n, bits, q.data(), scale.data());
        const auto out = netops::int8Rows(in, bits);
        ASSERT_TRUE(sameBits(out.q.toVector<float>(), q)) << "q";
        ASSERT_TRUE(sameBits(out.s.toVector<float>(), scale)) << "s";
      }
}

TEST(Int8Rows, IntoWritesTheGivenTensors) {
  const Tensor x = host(randomFloats(Key{8, 1}, 3 * 512), {3, 512});
  for (int bits : {8, 4}) {
    const auto want = netops::int8Rows(x, bits);
    Tensor q = Tensor::zeros({3, 512}), s = Tensor::zeros({3, 1});
    netops::int8RowsInto(x, q, s, bits);
    EXPECT_TRUE(sameBits(q.toVector<float>(), want.q.toVector<float>()));
    EXPECT_TRUE(sameBits(s.toVector<float>(), want.s.toVector<float>()));
  }
  // A failing call writes nothing: neither q nor s.
  Tensor q = Tensor::zeros({3, 512}), s = Tensor::zeros({3, 1});
  EXPECT_THROW(netops::int8RowsInto(x, q, s, 6), gizml::Error);
  EXPECT_THROW(netops::int8RowsInto(x, q, Tensor::zeros({3, 2}), 8), gizml::Error);
  EXPECT_TRUE(sameBits(q.toVector<float>(), std::vector<float>(3 * 512, 0.0f)));
  EXPECT_TRUE(sameBits(s.toVector<float>(), std::vector<float>(3, 0.0f)));
}

TEST(Int8Rows, NoRows) {
  const auto out = netops::int8Rows(Tensor::zeros({0, 512}), 4);
  EXPECT_EQ(out.q.shape(), (gizml::Shape{0, 512}));
  EXPECT_EQ(out.s.shape(), (gizml::Shape{0, 1}));
  EXPECT_EQ(netops::hadamardRows(Tensor::zeros({0, 256})).shape(), (gizml::Shape{0, 256}));
}

TEST(Int8Rows, BadInput) {
  const char* fn = "gizml::netops::int8Rows";
  const Tensor x = host(randomFloats(Key{9, 1}, 2 * 256), {2, 256});
  for (int bits : {0, 2, 6, 16}) expectThrowsNaming([&] { netops::int8Rows(x, bits); }, fn, "bits");
  expectThrowsNaming([] { netops::int8Rows(host(randomFloats(Key{1, 1}, 600), {2, 300})); }, fn, "x");
  expectThrowsNaming([] { netops::int8Rows(Tensor::zeros({2, 256}, DType::F16)); }, fn, "x");
  expectThrowsNaming([] { netops::int8Rows(Tensor::zeros({2, 2, 256})); }, fn, "x");
  const char* into = "gizml::netops::int8RowsInto";
  const Tensor q = Tensor::zeros({2, 256}), s = Tensor::zeros({2, 1});
  expectThrowsNaming([&] { netops::int8RowsInto(x, q, s, 3); }, into, "bits");
  expectThrowsNaming([&] { netops::int8RowsInto(x, Tensor::zeros({2, 256}, DType::I8), s); }, into, "q");
  expectThrowsNaming([&] { netops::int8RowsInto(x, Tensor::zeros({2, 512}), s); }, into, "q");
  expectThrowsNaming([&] { netops::int8RowsInto(x, q, Tensor::zeros({2})); }, into, "s");
  expectThrowsNaming([&] { netops::int8RowsInto(x, q, Tensor()); }, into, "s");
  expectThrowsNaming([&] { netops::int8RowsInto(host(randomFloats(Key{1, 1}, 600), {2, 300}), Tensor::zeros({2, 300}), s); },
                     into, "x");
  expectThrowsNaming([&] { netops::int8RowsInto(x.to(DType::F16), q, s); }, into, "x");
  expectThrowsNaming([&] { netops::int8RowsInto(Tensor(), q, s); }, into, "x");
}

TEST(Int8RowsCuda, CodesAreI8OrI4) {
  GIZML_NEED_GPU();
  const Tensor x = host(randomFloats(Key{10, 1}, 3 * 512), {3, 512}).to(Device::cuda(0));
  EXPECT_EQ(netops::int8Rows(x, 8).q.dtype(), DType::I8);
  EXPECT_EQ(netops::int8Rows(x, 4).q.dtype(), DType::I4);
  // I4's bytes: two codes a byte, the even element's in the low nibble (two's complement), the
  // codes the host's.
  const Tensor q4 = netops::int8Rows(x, 4).q.to(Device::host());
  const std::vector<float> want = netops::int8Rows(x.to(Device::host()), 4).q.toVector<float>();
  const auto* bytes = static_cast<const std::uint8_t*>(q4.raw());
  for (std::size_t i = 0; i < want.size(); i += 2) {
    const unsigned lo = static_cast<unsigned>(static_cast<int>(want[i])) & 15u;
    const unsigned hi = static_cast<unsigned>(static_cast<int>(want[i + 1])) & 15u;
    ASSERT_EQ(bytes[i / 2], lo | (hi << 4)) << "byte " << i / 2;
  }
  Tensor q = Tensor::zeros({3, 512}, DType::F32, x.device()), s = Tensor::zeros({3, 1}, DType::F32, x.device());
  expectThrowsNaming([&] { netops::int8RowsInto(x, q, s); }, "gizml::netops::int8RowsInto", "q");
  // On a GPU q's dtype is the codes' width: I8 for 8 bits, I4 for 4, not the other.
  const Tensor i8 = Tensor::zeros({3, 512}, DType::I8, x.device()), i4 = Tensor::zeros({3, 512}, DType::I4, x.device());
  expectThrowsNaming([&] { netops::int8RowsInto(x, i8, s, 4); }, "gizml::netops::int8RowsInto", "q");
  expectThrowsNaming([&] { netops::int8RowsInto(x, i4, s, 8); }, "gizml::netops::int8RowsInto", "q");
  netops::int8RowsInto(x, i4, s, 4);
  EXPECT_TRUE(sameBits(s.toFloats(), netops::int8Rows(x.to(Device::host()), 4).s.toFloats())) << "the right width runs";
}

// ---- modulatedInt8RowsInto ----------------------------------------------------------------------------

namespace {
/// {x [rows, n], w [n], shift, scale [2, n], map [rows]} for modulatedInt8RowsInto.
std::vector<Tensor> modulatedInputs(std::int64_t rows, std::int64_t n) {
  std::vector<float> map(rows);
  for (std::int64_t r = 0; r < rows; ++r) map[r] = static_cast<float>(r % 2);
  return {host(randomFloats(Key{11, 1}, rows * n, 2.0f), {rows, n}), host(randomFloats(Key{11, 2}, n), {n}),
          host(randomFloats(Key{11, 3}, 2 * n, 0.1f), {2, n}), host(randomFloats(Key{11, 4}, 2 * n, 0.1f), {2, n}),
          host(map, {rows})};
}
}  // namespace

TEST(ModulatedInt8Rows, EqualsModulatedNormThenInt8Rows) {
  // SPEC §1.6: the fused op equals modulatedNormInto a BF16 y, then int8RowsInto of y, bit for bit;
  // so do its form without y and its returning form (modulatedInt8Rows).
  const std::int64_t rows = 5, n = 768;
  const std::vector<Tensor> in = modulatedInputs(rows, n);
  for (int bits : {8, 4})
    for (bool centered : {false, true}) {
      SCOPED_TRACE("bits " + std::to_string(bits) + (centered ? " centered" : " rms"));
      Tensor y = Tensor::zeros({rows, n}, DType::BF16), q = Tensor::zeros({rows, n}), s = Tensor::zeros({rows, 1});
      netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], 1e-6, y, q, s, centered, bits);
      Tensor y2 = Tensor::zeros({rows, n}, DType::BF16), q2 = Tensor::zeros({rows, n}), s2 = Tensor::zeros({rows, 1});
      netops::modulatedNormInto(in[0], in[1], in[2], in[3], in[4], 1e-6, centered, y2);
      netops::int8RowsInto(y2, q2, s2, bits);
      EXPECT_TRUE(sameBits(y.toFloats(), y2.toFloats())) << "y";
      EXPECT_TRUE(sameBits(q.toFloats(), q2.toFloats())) << "q";
      EXPECT_TRUE(sameBits(s.toFloats(), s2.toFloats())) << "s";
      Tensor q3 = Tensor::zeros({rows, n}), s3 = Tensor::zeros({rows, 1});
      netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], 1e-6, Tensor(), q3, s3, centered, bits);
      EXPECT_TRUE(sameBits(q3.toFloats(), q.toFloats())) << "without y, the same codes";
      EXPECT_TRUE(sameBits(s3.toFloats(), s.toFloats())) << "without y, the same scales";
      // The returning form: new codes and scales (int8Rows' forms), the same bits.
      const netops::Int8RowsResult r = netops::modulatedInt8Rows(in[0], in[1], in[2], in[3], in[4], 1e-6, centered, bits);
      EXPECT_EQ(r.q.dtype(), DType::F32);
      EXPECT_EQ(r.s.shape(), (std::vector<std::int64_t>{rows, 1}));
      EXPECT_TRUE(sameBits(r.q.toFloats(), q.toFloats())) << "modulatedInt8Rows' codes";
      EXPECT_TRUE(sameBits(r.s.toFloats(), s.toFloats())) << "modulatedInt8Rows' scales";
    }
}

TEST(ModulatedInt8Rows, RowsOfFewModulationsEqualModulatedNormThenInt8Rows) {
  // Where the modulations serve 16 rows or more each, in calls of 512 rows or more, the host makes
  // each one's 1 + scale once, and rounds a row it has proven free of NaN without the NaN's test
  // (quant/host.cpp, ModulatedInt8RowsHost::numbers). Rows it takes so, and rows it must not (a NaN
  // x, a zero row with eps 0: rstd inf; a modulation with a NaN shift; a NaN w, and w = 3e38 with
  // 1 + scale = 0: inf * 0), equal the two ops apart. The NaNs carry the payload 0x7fff8001, which
  // rounded without the test would carry into the sign (-0) where it must stay a NaN; 1 + scale =
  // 3e38 makes infinities.
  const std::int64_t rows = 512, n = 256;
  std::uint32_t payload = 0x7fff8001u;
  float nan;
  std::memcpy(&nan, &payload, sizeof nan);
  for (bool badW : {false, true}) {
    std::vector<Tensor> in = modulatedInputs(rows, n);  // modulation r % 2
    float *x = in[0].data<float>(), *w = in[1].data<float>(), *shift = in[2].data<float>(),
          *scale = in[3].data<float>();
    x[4 * n + 10] = nan;                          // row 4 (modulation 0): NaN statistics
    std::fill(x + 6 * n, x + 7 * n, 0.0f);        // row 6: zeros
    shift[n + 20] = nan;                          // modulation 1 (the odd rows)
    scale[5] = 3e38f;                             // modulation 0: y past FLT_MAX at element 5
    if (badW) w[3] = 3e38f, scale[3] = -1.0f, w[7] = nan;  // (d rstd) w = ±inf where |d rstd| > 1.2, times 0
    for (double eps : {1e-6, 0.0})
      for (int bits : {8, 4})
        for (bool centered : {false, true}) {
          SCOPED_TRACE(std::string(badW ? "bad w, " : "") + "eps " + std::to_string(eps) + ", bits " +
                       std::to_string(bits) + (centered ? " centered" : " rms"));
          Tensor y = Tensor::zeros({rows, n}, DType::BF16), q = Tensor::zeros({rows, n});
          Tensor s = Tensor::zeros({rows, 1});
          netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], eps, y, q, s, centered, bits);
          Tensor y2 = Tensor::zeros({rows, n}, DType::BF16), q2 = Tensor::zeros({rows, n});
          Tensor s2 = Tensor::zeros({rows, 1});
          netops::modulatedNormInto(in[0], in[1], in[2], in[3], in[4], eps, centered, y2);
          netops::int8RowsInto(y2, q2, s2, bits);
          EXPECT_TRUE(sameBits(y.toFloats(), y2.toFloats())) << "y";
          EXPECT_TRUE(sameBits(q.toFloats(), q2.toFloats())) << "q";
          EXPECT_TRUE(sameBits(s.toFloats(), s2.toFloats())) << "s";
        }
  }
}

/// Outputs of 32 MiB or more (a video model's [8192, 3072]) are streamed past the caches on the
/// host (exact::streamable); smaller ones (a decode step's, read by the next op) are stored as any.
/// Each row of a streamed call equals that row alone: int8Rows' codes and scales (8 and 4 bits),
/// modulatedInt8Rows' and hadamardRows' values.
TEST(QuantRows, StreamedOutputsEqualRowsAlone) {
  const std::int64_t rows = 2752, n = 3072;  // 33.8 MB of F32 codes
  const std::vector<Tensor> in = modulatedInputs(rows, n);
  const std::vector<float> xs = in[0].toFloats(), maps = in[4].toFloats();
  const auto rowOf = [&](const std::vector<float>& all, std::int64_t r) {
    return std::vector<float>(all.begin() + r * n, all.begin() + (r + 1) * n);
  };
  const std::vector<netops::Int8RowsResult> whole = {
      netops::int8Rows(in[0], 8), netops::int8Rows(in[0], 4),
      netops::modulatedInt8Rows(in[0], in[1], in[2], in[3], in[4], 1e-6, false, 8)};
  std::vector<std::vector<float>> q, s;
  for (const netops::Int8RowsResult& w : whole) {
    q.push_back(w.q.toFloats());
    s.push_back(w.s.toFloats());
  }
  const std::vector<float> h = netops::hadamardRows(in[0]).toFloats();
  for (std::int64_t r : {std::int64_t{0}, std::int64_t{1}, rows / 2 + 1, rows - 1}) {
    SCOPED_TRACE("row " + std::to_string(r));
    const Tensor one = host(rowOf(xs, r), {1, n});
    const std::vector<netops::Int8RowsResult> alone = {
        netops::int8Rows(one, 8), netops::int8Rows(one, 4),
        netops::modulatedInt8Rows(one, in[1], in[2], in[3], host({maps[static_cast<std::size_t>(r)]}, {1}), 1e-6,
                                  false, 8)};
    for (std::size_t k = 0; k < alone.size(); ++k) {
      SCOPED_TRACE(k == 2 ? "modulatedInt8Rows" : k == 1 ? "int8Rows, 4 bits" : "int8Rows, 8 bits");
      EXPECT_TRUE(sameBits(alone[k].q.toFloats(), rowOf(q[k], r))) << "codes";
      EXPECT_TRUE(sameBits(alone[k].s.toFloats(), {s[k][static_cast<std::size_t>(r)]})) << "scale";
    }
    EXPECT_TRUE(sameBits(netops::hadamardRows(one).toFloats(), rowOf(h, r))) << "hadamardRows";
  }
}

/// The 8-bit rows keep each row's transformed values in a block that each thread keeps between
/// calls (detail::ThreadScratch), not initialized: whatever it held, the same codes. (One row: the
/// call's loop runs on this thread, with this thread's block.)
TEST(Int8Rows, WhatItsScratchHeldChangesNoBit) {
  const std::int64_t n = 3072;
  const std::vector<Tensor> in = modulatedInputs(1, n);
  const auto fill = [&](float v) {
    const gizml::detail::ThreadScratch<float> block(2 * n + 64);
    std::fill(block.data(), block.data() + 2 * n + 64, v);
  };
  const auto both = [&] {
    return std::vector<netops::Int8RowsResult>{
        netops::int8Rows(in[0], 8), netops::modulatedInt8Rows(in[0], in[1], in[2], in[3], in[4], 1e-6, true, 4)};
  };
  fill(0.0f);
  const std::vector<netops::Int8RowsResult> clean = both();
  for (float v : {NAN, INFINITY, -1e30f}) {
    SCOPED_TRACE(v);
    fill(v);
    const std::vector<netops::Int8RowsResult> after = both();
    for (std::size_t k = 0; k < clean.size(); ++k) {
      EXPECT_TRUE(sameBits(after[k].q.toFloats(), clean[k].q.toFloats())) << k;
      EXPECT_TRUE(sameBits(after[k].s.toFloats(), clean[k].s.toFloats())) << k;
    }
  }
}

TEST(ModulatedInt8Rows, ReturningFormBadInput) {
  const std::int64_t rows = 3;
  const std::vector<Tensor> in = modulatedInputs(rows, 512);
  const char* fn = "gizml::netops::modulatedInt8Rows";
  const auto call = [&](const Tensor& x, const Tensor& w, const Tensor& map, int bits) {
    return [=, &in] { netops::modulatedInt8Rows(x, w, in[2], in[3], map, 1e-6, false, bits); };
  };
  expectThrowsNaming(call(Tensor(), in[1], in[4], 8), fn, "x");
  expectThrowsNaming(call(in[0], in[1], in[4], 6), fn, "bits");
  expectThrowsNaming(call(in[0].to(DType::F16), in[1], in[4], 8), fn, "x");
  expectThrowsNaming(call(host(randomFloats(Key{1, 5}, rows * 300), {rows, 300}), in[1], in[4], 8), fn, "x");
  expectThrowsNaming(call(in[0], host(randomFloats(Key{1, 2}, 128), {128}), in[4], 8), fn, "w");
  expectThrowsNaming(call(in[0], in[1], host({0, 1, 2}, {3}), 8), fn, "map");
  expectThrowsNaming(call(in[0], in[1], in[4].to(DType::I32), 8), fn, "map");
}

TEST(ModulatedInt8Rows, BadInput) {
  const char* fn = "gizml::netops::modulatedInt8RowsInto";
  const std::int64_t rows = 2, n = 256;
  std::vector<Tensor> in = modulatedInputs(rows, n);
  // Outputs filled with 7: a failed call must leave every one of them so.
  Tensor q = host(std::vector<float>(rows * n, 7.0f), {rows, n}), s = host({7.0f, 7.0f}, {rows, 1});
  Tensor y = host(std::vector<float>(rows * n, 7.0f), {rows, n}).to(DType::BF16);
  auto call = [&](const Tensor& x, const Tensor& map, const Tensor& yy, const Tensor& qq, int bits) {
    netops::modulatedInt8RowsInto(x, in[1], in[2], in[3], map, 1e-6, yy, qq, s, false, bits);
  };
  auto modulation = [&](const Tensor& w, const Tensor& shift, const Tensor& scale) {
    return [=, &in] { netops::modulatedInt8RowsInto(in[0], w, shift, scale, in[4], 1e-6, y, q, s, true, 8); };
  };
  expectThrowsNaming([&] { call(in[0], in[4], y, q, 5); }, fn, "bits");
  const std::vector<Tensor> narrow = modulatedInputs(rows, 300);
  expectThrowsNaming([&] { netops::modulatedInt8RowsInto(narrow[0], narrow[1], narrow[2], narrow[3], narrow[4], 1e-6,
                                                         Tensor(), Tensor::zeros({rows, 300}), s, false); },
                     fn, "x");
  expectThrowsNaming([&] { call(in[0].to(DType::BF16), in[4], y, q, 8); }, fn, "x");
  expectThrowsNaming([&] { call(Tensor(), in[4], y, q, 8); }, fn, "x");
  expectThrowsNaming(modulation(host(randomFloats(Key{1, 2}, 128), {128}), in[2], in[3]), fn, "w");
  expectThrowsNaming(modulation(in[1].to(DType::BF16), in[2], in[3]), fn, "w");
  expectThrowsNaming(modulation(in[1], host(randomFloats(Key{1, 3}, 2 * 128), {2, 128}), in[3]), fn, "shift");
  expectThrowsNaming(modulation(in[1], in[2].to(DType::BF16), in[3]), fn, "shift");
  expectThrowsNaming(modulation(in[1], in[2], host(randomFloats(Key{1, 4}, 3 * n), {3, n})), fn, "scale");
  expectThrowsNaming(modulation(in[1], in[2], in[3].to(DType::BF16)), fn, "scale");
  expectThrowsNaming([&] { call(in[0], host({0}, {1}), y, q, 8); }, fn, "map");  // one entry for two rows
  expectThrowsNaming([&] { call(in[0], in[4].to(DType::I32), y, q, 8); }, fn, "map");  // F32 indexes (SPEC)
  expectThrowsNaming([&] { call(in[0], in[4].to(DType::BF16), y, q, 8); }, fn, "map");
  // Bad map entries (2 is past the 2 modulation rows; a fraction; a negative; NaN).
  for (float bad : {2.0f, 0.5f, -1.0f, kNaN}) {
    SCOPED_TRACE("map entry " + std::to_string(bad));
    expectThrowsNaming([&] { call(in[0], host({0, bad}, {2}), y, q, 8); }, fn, "map");
  }
  expectThrowsNaming([&] { netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], -1.0, y, q, s, false, 8); },
                     fn, "eps");
  expectThrowsNaming([&] { call(in[0], in[4], Tensor::zeros({rows, n}), q, 8); }, fn, "y");
  expectThrowsNaming([&] { call(in[0], in[4], Tensor::zeros({rows, 2 * n}, DType::BF16), q, 8); }, fn, "y");
  expectThrowsNaming([&] { call(in[0], in[4], y, Tensor::zeros({rows, n}, DType::I8), 8); }, fn, "q");
  expectThrowsNaming([&] { call(in[0], in[4], y, Tensor::zeros({rows, 2 * n}), 8); }, fn, "q");
  expectThrowsNaming([&] {
    netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], 1e-6, y, q, Tensor::zeros({rows}), false, 8);
  }, fn, "s");
  EXPECT_TRUE(sameBits(q.toFloats(), std::vector<float>(rows * n, 7.0f))) << "a failed call writes no q";
  EXPECT_TRUE(sameBits(y.toFloats(), std::vector<float>(rows * n, 7.0f))) << "a failed call writes no y";
  EXPECT_TRUE(sameBits(s.toFloats(), std::vector<float>(rows, 7.0f))) << "a failed call writes no s";
}

TEST(HadamardRowsCuda, IntoEqualsHadamardRowsAndRunsInPlace) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const Tensor x = host(withSpecials(Key{13, 1}, 3 * 768), {3, 768}).to(gpu);
  Tensor y = Tensor::zeros({3, 768}, DType::F32, gpu);
  netops::hadamardRowsInto(x.to(DType::BF16), y);
  EXPECT_TRUE(sameBits(y.toFloats(), netops::hadamardRows(x.to(DType::BF16)).toFloats()));
  Tensor inPlace = x.clone();
  netops::hadamardRowsInto(inPlace, inPlace);
  EXPECT_TRUE(sameBits(inPlace.toFloats(), netops::hadamardRows(x).toFloats()));
}

// ---- on a GPU: bad map entries, mixed devices ---------------------------------------------------------------

TEST(ModulatedInt8RowsCuda, BadMapSetsTheDeviceErrorFlag) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const std::int64_t rows = 3, n = 256;
  std::vector<Tensor> in = modulatedInputs(rows, n);
  for (Tensor& t : in) t = t.to(gpu);
  Tensor q = Tensor::zeros({rows, n}, DType::I8, gpu), s = Tensor::zeros({rows, 1}, DType::F32, gpu);
  for (float bad : {2.0f, 0.5f, -1.0f, kNaN}) {
    SCOPED_TRACE("map entry " + std::to_string(bad));
    const Tensor map = host({0, bad, 1}, {rows}).to(gpu);
    expectThrowsNaming([&] {
      netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], map, 1e-6, Tensor(), q, s, false, 8);
      s.toFloats();
    }, "gizml::netops::modulatedInt8RowsInto", "map");
    // The device's error names the function called, as the host's does.
    expectThrowsNaming([&] { netops::modulatedInt8Rows(in[0], in[1], in[2], in[3], map, 1e-6, false, 8).s.toFloats(); },
                       "gizml::netops::modulatedInt8Rows", "map");
  }
  // The flag is cleared once reported: a good map runs.
  EXPECT_NO_THROW({
    netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], 1e-6, Tensor(), q, s, false, 8);
    s.toFloats();
  });
}

TEST(ModulatedInt8RowsCuda, ReturningFormGivesTheHostCodes) {
  GIZML_NEED_GPU();
  const std::int64_t rows = 3, n = 512;
  const std::vector<Tensor> in = modulatedInputs(rows, n);
  std::vector<Tensor> g;
  for (const Tensor& t : in) g.push_back(t.to(Device::cuda(0)));
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const netops::Int8RowsResult want = netops::modulatedInt8Rows(in[0], in[1], in[2], in[3], in[4], 1e-6, true, bits);
    const netops::Int8RowsResult got = netops::modulatedInt8Rows(g[0], g[1], g[2], g[3], g[4], 1e-6, true, bits);
    EXPECT_EQ(got.q.dtype(), bits == 8 ? DType::I8 : DType::I4);
    EXPECT_EQ(got.q.to(Device::host()).to(DType::F32).toVector<float>(), want.q.toVector<float>()) << "q";
    EXPECT_TRUE(sameBits(got.s.toFloats(), want.s.toFloats())) << "s";
  }
}

// A GPU takes the 8-bit rows' blocks in 16-byte pieces where every tensor lies on 16 bytes
// (quant/cuda.cu); a view one float in keeps the row functions as they were: the same bits.
TEST(QuantCuda, TensorsOffSixteenBytesGiveTheSameBits) {
  GIZML_NEED_GPU();
  const std::int64_t rows = 5, n = 768;
  const Device gpu = Device::cuda(0);
  // t's values on the GPU, one element into a larger tensor: its data 4 (BF16: 2) bytes off 16.
  const auto offBy1 = [&](const Tensor& t) {
    Tensor flat = Tensor::zeros({t.numel() + 1}, t.dtype(), gpu);
    Tensor view = flat.rows(1, t.numel() + 1).reshape(t.shape());
    view.copyFrom(t.to(gpu));
    return view;
  };
  const auto x = host(randomFloats(Key{13, 1}, rows * n, 3.0f), {rows, n});
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const auto want = netops::int8Rows(x, bits);
    for (const Tensor& onGpu : {offBy1(x), offBy1(x.to(DType::BF16))}) {
      const auto got = netops::int8Rows(onGpu, bits);
      const auto wantHere = onGpu.dtype() == DType::BF16 ? netops::int8Rows(x.to(DType::BF16), bits) : want;
      EXPECT_TRUE(sameBits(got.s.toFloats(), wantHere.s.toFloats())) << "s";
      EXPECT_EQ(got.q.to(Device::host()).to(DType::F32).toVector<float>(), wantHere.q.toVector<float>()) << "q";
    }
  }
  const std::vector<Tensor> in = modulatedInputs(rows, n);
  Tensor y = Tensor::zeros({rows, n}, DType::BF16), q = Tensor::zeros({rows, n}), s = Tensor::zeros({rows, 1});
  netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], 1e-6, y, q, s, false, 8);
  for (int off = 0; off < 4; ++off) {  // x, w, shift, scale in turn one float in
    SCOPED_TRACE("input " + std::to_string(off) + " off 16 bytes");
    std::vector<Tensor> g;
    for (int i = 0; i < 5; ++i) g.push_back(i == off ? offBy1(in[i]) : in[i].to(gpu));
    Tensor yg = Tensor::zeros({rows, n}, DType::BF16, gpu), qg = Tensor::zeros({rows, n}, DType::I8, gpu),
           sg = Tensor::zeros({rows, 1}, DType::F32, gpu);
    netops::modulatedInt8RowsInto(g[0], g[1], g[2], g[3], g[4], 1e-6, yg, qg, sg, false, 8);
    EXPECT_TRUE(sameBits(yg.toFloats(), y.toFloats())) << "y";
    EXPECT_EQ(qg.to(Device::host()).to(DType::F32).toVector<float>(), q.toVector<float>()) << "q";
    EXPECT_TRUE(sameBits(sg.toFloats(), s.toFloats())) << "s";
  }
}

TEST(QuantCuda, MixedDevicesAreAnError) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const Tensor x = host(randomFloats(Key{12, 1}, 2 * 256), {2, 256});
  expectThrowsNaming([&] { netops::hadamardRowsInto(x.to(gpu), Tensor::zeros({2, 256})); },
                     "gizml::netops::hadamardRowsInto", "y");
  expectThrowsNaming([&] { netops::int8RowsInto(x.to(gpu), Tensor::zeros({2, 256}), Tensor::zeros({2, 1})); },
                     "gizml::netops::int8RowsInto", "q");
  expectThrowsNaming([&] {
    netops::int8RowsInto(x.to(gpu), Tensor::zeros({2, 256}, DType::I8, gpu), Tensor::zeros({2, 1}));
  }, "gizml::netops::int8RowsInto", "s");
  std::vector<Tensor> in = modulatedInputs(2, 256);
  const Tensor q = Tensor::zeros({2, 256}, DType::I8, gpu), s = Tensor::zeros({2, 1}, DType::F32, gpu);
  expectThrowsNaming([&] {
    netops::modulatedInt8RowsInto(in[0].to(gpu), in[1], in[2].to(gpu), in[3].to(gpu), in[4].to(gpu), 1e-6, Tensor(), q, s, false);
  }, "gizml::netops::modulatedInt8RowsInto", "w");
  expectThrowsNaming([&] {
    netops::modulatedInt8RowsInto(in[0].to(gpu), in[1].to(gpu), in[2].to(gpu), in[3].to(gpu), in[4].to(gpu), 1e-6,
                                  Tensor::zeros({2, 256}, DType::BF16), q, s, false);
  }, "gizml::netops::modulatedInt8RowsInto", "y");
}

// ---- int8RowsProduct ----------------------------------------------------------------------------------

namespace {
/// rows x k codes, uniform over [lo, hi], as F32 integers.
Tensor codeRows(Key key, std::int64_t rows, std::int64_t k, int lo, int hi) {
  std::vector<float> v(static_cast<std::size_t>(rows * k));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(lo + static_cast<int>(key.uniform(i) * static_cast<float>(hi - lo + 1)) % (hi - lo + 1));
  return host(v, {rows, k});
}
Tensor scaleRows(Key key, std::int64_t rows) {
  std::vector<float> v(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1e-3f + key.uniform(i);
  return host(v, {rows, 1});
}
}  // namespace

TEST(Int8RowsProduct, MatchesFloat64) {
  // The integer sum is exact; F32(sum) and the two products each round once: within 3 u of the
  // float64 value (here k = 8192: sums up to 2^27, so F32(sum) does round).
  const std::int64_t m = 7, n = 9, k = 8192;
  const Tensor qa = codeRows(Key{20, 1}, m, k, -128, 127), qb = codeRows(Key{20, 2}, n, k, -128, 127);
  const Tensor sa = scaleRows(Key{20, 3}, m), sb = scaleRows(Key{20, 4}, n);
  // Row 0 of qa all 127, row 0 of qb the magnitudes of its codes: a sum of about 2^26 with random
  // low bits, which F32 rounds; row 1 of both all -128: the largest sum, 16384 k = 2^27.
  std::vector<float> a = qa.toVector<float>(), b = qb.toVector<float>();
  std::fill(a.begin(), a.begin() + k, 127.0f);
  for (std::int64_t p = 0; p < k; ++p) b[p] = std::fmin(std::fabs(b[p]), 127.0f);
  std::fill(a.begin() + k, a.begin() + 2 * k, -128.0f);
  std::fill(b.begin() + k, b.begin() + 2 * k, -128.0f);
  const std::vector<float> out = netops::int8RowsProduct(host(a, {m, k}), sa, host(b, {n, k}), sb).toVector<float>();
  const std::vector<float> as = sa.toVector<float>(), bs = sb.toVector<float>();
  int rounded = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) sum += static_cast<double>(a[i * k + p]) * b[j * k + p];
      rounded += static_cast<double>(static_cast<float>(sum)) != sum;
      const double exact = sum * as[i] * bs[j];
      ASSERT_LE(std::fabs(out[i * n + j] - exact), 3 * kU * std::fabs(exact) + 1e-37) << i << ", " << j;
    }
  EXPECT_GT(rounded, 0) << "no sum beyond 2^24: F32(sum) untested";
}

TEST(Int8RowsProduct, ApproximatesTheProductOfTheUnquantizedRows) {
  // int8Rows(x) and int8Rows(w), both rotated by H (symmetric, its own inverse), multiply to
  // about x wᵀ. Gaussian rows of 1024: after H their largest |y| is about 3.5 sigma, so a code's
  // step s is 3.5 / 127 sigma (8 bits) or 3.5 / 7 sigma (4 bits) and its error s / sqrt(12); a
  // product's relative error about sqrt(2) of that over sigma: 1.1 % and 20 %. Bounds: twice that.
  const std::int64_t m = 16, n = 24, k = 1024;
  const std::vector<float> x = randomFloats(Key{21, 1}, m * k), w = randomFloats(Key{21, 2}, n * k);
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const auto qx = netops::int8Rows(host(x, {m, k}), bits), qw = netops::int8Rows(host(w, {n, k}), bits);
    const std::vector<float> out = netops::int8RowsProduct(qx.q, qx.s, qw.q, qw.s).toVector<float>();
    double err = 0, norm = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double exact = 0;
        for (std::int64_t p = 0; p < k; ++p) exact += static_cast<double>(x[i * k + p]) * w[j * k + p];
        err += (out[i * n + j] - exact) * (out[i * n + j] - exact);
        norm += exact * exact;
      }
    EXPECT_LE(std::sqrt(err / norm), bits == 8 ? 0.022 : 0.4);
    EXPECT_GT(std::sqrt(err / norm), bits == 8 ? 1e-4 : 1e-2);  // it is a quantized product
  }
}

TEST(Int8RowsProduct, CodesInAnyFormGiveTheSameBits) {
  const std::int64_t m = 5, n = 6, k = 512;
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const int lo = bits == 8 ? -128 : -8, hi = -lo - 1;
    const Tensor qa = codeRows(Key{22, 1}, m, k, lo, hi), qb = codeRows(Key{22, 2}, n, k, lo, hi);
    const Tensor sa = scaleRows(Key{22, 3}, m), sb = scaleRows(Key{22, 4}, n);
    const std::vector<float> want = netops::int8RowsProduct(qa, sa, qb, sb).toVector<float>();
    std::vector<DType> forms{DType::F32, DType::I8};
    if (bits == 4) forms.push_back(DType::I4);
    for (DType fa : forms)
      for (DType fb : forms) {
        SCOPED_TRACE(dtypeName(fa) + " x " + dtypeName(fb));
        EXPECT_TRUE(sameBits(netops::int8RowsProduct(qa.to(fa), sa, qb.to(fb), sb).toVector<float>(), want));
      }
  }
}

TEST(Int8RowsProduct, TheLongestRowsKeepTheirSumsInInt32) {
  // k = 130816, every code -128: the sum 16384 k = 2143289344 < 2^31, as the bound promises; its
  // F32 is the nearest even float. 128 x 128 at any k would need 130816 <= 131071 too.
  const std::int64_t k = 130816;
  const Tensor q = host(std::vector<float>(k, -128.0f), {1, k}), s = host({1.0f}, {1, 1});
  const float got = netops::int8RowsProduct(q, s, q.to(DType::I8), s).toVector<float>()[0];
  EXPECT_EQ(got, static_cast<float>(16384.0 * k));
  const Tensor wider = host(std::vector<float>(k + 256, 1.0f), {1, k + 256});
  expectThrowsNaming([&] { netops::int8RowsProduct(wider, s, wider, s); }, "gizml::netops::int8RowsProduct", "qa");
}

TEST(Int8RowsProduct, ScalesAsTheyAre) {
  // A +0 scale gives ±0 (or NaN with an inf), an inf scale ±inf (NaN where the sum is 0).
  const std::int64_t k = 256;
  std::vector<float> a(2 * k, 1.0f), b(k, 2.0f);
  std::fill(a.begin() + k, a.end(), 0.0f);
  const std::vector<float> out =
      netops::int8RowsProduct(host(a, {2, k}), host({kInf, kInf}, {2, 1}), host(b, {1, k}), host({1.0f}, {1, 1}))
          .toVector<float>();
  EXPECT_EQ(out[0], kInf);
  EXPECT_TRUE(std::isnan(out[1]));
}

TEST(Int8RowsProduct, NoRows) {
  const Tensor q = Tensor::zeros({3, 256}), s = Tensor::zeros({3, 1});
  const Tensor none = Tensor::zeros({0, 256}), noScales = Tensor::zeros({0, 1});
  EXPECT_EQ(netops::int8RowsProduct(none, noScales, q, s).shape(), (gizml::Shape{0, 3}));
  EXPECT_EQ(netops::int8RowsProduct(q, s, none, noScales).shape(), (gizml::Shape{3, 0}));
}

TEST(Int8RowsProduct, BadInput) {
  const char* fn = "gizml::netops::int8RowsProduct";
  const Tensor q = codeRows(Key{23, 1}, 2, 256, -128, 127), s = scaleRows(Key{23, 2}, 2);
  expectThrowsNaming([&] { netops::int8RowsProduct(Tensor(), s, q, s); }, fn, "qa");
  expectThrowsNaming([&] { netops::int8RowsProduct(q.to(DType::F16), s, q, s); }, fn, "qa");
  expectThrowsNaming([&] { netops::int8RowsProduct(q.reshape({512}), s, q, s); }, fn, "qa");
  expectThrowsNaming([&] { netops::int8RowsProduct(Tensor::zeros({2, 300}), s, q, s); }, fn, "qa");
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, Tensor::zeros({2, 512}), s); }, fn, "qb");
  expectThrowsNaming([&] { netops::int8RowsProduct(q, Tensor::zeros({2}), q, s); }, fn, "sa");
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, q, Tensor::zeros({3, 1})); }, fn, "sb");
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, q, s.to(DType::BF16)); }, fn, "sb");
  // F32 codes must be integers in [-128, 127]; the message names the first bad element.
  std::vector<float> v = q.toVector<float>();
  v[256 + 3] = 0.5f;
  expectThrowsNaming([&] { netops::int8RowsProduct(host(v, {2, 256}), s, q, s); }, fn, "qa", "[1, 3]");
  v[256 + 3] = 128.0f;
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, host(v, {2, 256}), s); }, fn, "qb", "128");
  v[256 + 3] = kNaN;
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, host(v, {2, 256}), s); }, fn, "qb");
  const char* into = "gizml::netops::int8RowsProductInto";
  Tensor out = host(std::vector<float>(4, 7.0f), {2, 2});
  expectThrowsNaming([&] { netops::int8RowsProductInto(q, s, q, s, Tensor::zeros({2, 3})); }, into, "out");
  expectThrowsNaming([&] { netops::int8RowsProductInto(q, s, q, s, Tensor::zeros({2, 2}, DType::F16)); }, into, "out");
  expectThrowsNaming([&] { netops::int8RowsProductInto(q, s, q, s, Tensor()); }, into, "out");
  expectThrowsNaming([&] { netops::int8RowsProductInto(q, s, host(v, {2, 256}), s, out); }, into, "qb");
  // A bias: F32 [n] (n = qb's rows).
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, q, s, Tensor::zeros({3})); }, fn, "bias", "[2]");
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, q, s, Tensor::zeros({1, 2})); }, fn, "bias");
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, q, s, Tensor::zeros({2}, DType::BF16)); }, fn, "bias");
  expectThrowsNaming([&] { netops::int8RowsProductInto(q, s, q, s, out, Tensor::zeros({3})); }, into, "bias");
  EXPECT_EQ(out.toVector<float>(), std::vector<float>(4, 7.0f)) << "a failed check wrote out";
  netops::int8RowsProductInto(q, s, q, s, out);
  EXPECT_TRUE(sameBits(out.toVector<float>(), netops::int8RowsProduct(q, s, q, s).toVector<float>()));
}

TEST(Int8RowsProduct, Bf16OutputIsTheF32ValueRoundedOnce) {
  // k = 8192 spans several of the host's blocks of k for an F32 output; a BF16 one takes all of k
  // in one block: the same sums.
  const std::int64_t m = 13, n = 70, k = 8192;
  const Tensor qa = codeRows(Key{26, 1}, m, k, -128, 127), qb = codeRows(Key{26, 2}, n, k, -8, 7);
  const Tensor sa = scaleRows(Key{26, 3}, m), sb = scaleRows(Key{26, 4}, n);
  Tensor out = Tensor::zeros({m, n}, DType::BF16);
  netops::int8RowsProductInto(qa, sa, qb.to(DType::I4), sb, out);
  EXPECT_TRUE(sameBits(out.toFloats(), netops::int8RowsProduct(qa, sa, qb, sb).to(DType::BF16).toFloats()));
}

TEST(Int8RowsProductCuda, CodesAsInt8RowsGivesThemThere) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const std::int64_t m = 70, n = 66, k = 768;
  const std::vector<float> x = randomFloats(Key{24, 1}, m * k), w = randomFloats(Key{24, 2}, n * k);
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    const auto hx = netops::int8Rows(host(x, {m, k}), bits), hw = netops::int8Rows(host(w, {n, k}), bits);
    const auto gx = netops::int8Rows(host(x, {m, k}).to(gpu), bits);
    const auto gw = netops::int8Rows(host(w, {n, k}).to(gpu), bits);
    EXPECT_TRUE(sameBits(netops::int8RowsProduct(gx.q, gx.s, gw.q, gw.s).toFloats(),
                         netops::int8RowsProduct(hx.q, hx.s, hw.q, hw.s).toVector<float>()));
  }
  const char* fn = "gizml::netops::int8RowsProduct";
  const Tensor q = codeRows(Key{25, 1}, 2, 256, -128, 127).to(gpu), s = scaleRows(Key{25, 2}, 2).to(gpu);
  expectThrowsNaming([&] { netops::int8RowsProduct(q, s, q.to(DType::I8), s); }, fn, "qa", "F32 codes");
  const Tensor q8 = q.to(DType::I8);
  expectThrowsNaming([&] { netops::int8RowsProduct(q8, s, q8, s.to(Device::host())); }, fn, "sb");
  expectThrowsNaming([&] { netops::int8RowsProduct(q8, s, q8, s, Tensor::zeros({2})); }, fn, "bias");
  // Codes that do not start 16-byte aligned (a view one byte into a larger tensor).
  const Tensor flat = Tensor::zeros({2 * 256 + 1}, DType::I8, gpu);
  const Tensor off = flat.rows(1, 2 * 256 + 1).reshape({2, 256});
  expectThrowsNaming([&] { netops::int8RowsProduct(off, s, q8, s); }, fn, "qa", "aligned");
}
