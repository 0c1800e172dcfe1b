// The convolution helpers (SPEC §3 "Convolution and pooling") beyond the registry's checks
// (tests/registry/conv_cases.cpp): col2im's order, slices and windows, the adjoint identities of
// im2col / col2im in float64, accuracy against float64, PyTorch's values, bad input, and the
// formulas the GPU runs, run on the host.
#include <cmath>

#include "netops/conv/conv.hpp"
#include "reference/conv_reference.hpp"
#include "registry/shapes.hpp"
#include "support/preamble.hpp"

namespace {

std::vector<float> slice(const std::vector<float>& v, std::int64_t from, std::int64_t count) {
  return std::vector<float>(v.begin() + from, v.begin() + from + count);
}

// The registry's shape lists (tests/registry/shapes.hpp).
using Case2d = gizml::registry::Shape2d;
using Case1d = gizml::registry::Shape1d;
using ConvCase = gizml::registry::Conv1dShape;
using TransposeCase = gizml::registry::TransposeShape;
const auto& kCases2d = gizml::registry::kShapes2d;
const auto& kCases1d = gizml::registry::kShapes1d;
const auto& kConvCases = gizml::registry::kConv1dShapes;
const auto& kTransposeCases = gizml::registry::kTransposeShapes;

}  // namespace

// ---- im2col / col2im ---------------------------------------------------------------------------------

TEST(Col2im, AddsInWindowOffsetOrder) {
  // One pixel seen by four windows (1x1 image, 2x2 kernel, stride 1, pad 1): window offsets
  // (0,0) (0,1) (1,0) (1,1) copied it from rows 3, 2, 1, 0. In offset order
  // (((0 + 1e8) + -1e8) + 1) + 1 = 2; in row order (((0 + 1) + 1) + -1e8) + 1e8 = 0.
  std::vector<float> cols(16, 12345.0f);  // entries that did not copy the pixel are never read
  cols[3 * 4 + 0] = 1e8f;                 // row 3, offset (0,0)
  cols[2 * 4 + 1] = -1e8f;                // row 2, offset (0,1)
  cols[1 * 4 + 2] = 1.0f;                 // row 1, offset (1,0)
  cols[0 * 4 + 3] = 1.0f;                 // row 0, offset (1,1)
  float got = netops::col2im(host(cols, {4, 4}), 1, 1, 1, 1, 2, 2, 1, 1).toVector<float>()[0];
  EXPECT_TRUE(sameBits(got, 2.0f));
}

TEST(Im2col, AdjointIdentityInFloat64) {
  // <im2col(x), c> = <x, col2im(c)>, both sides summed in float64. col2im rounds each element's
  // sum of at most kh kw entries, so the sides differ by at most kh kw 2^-24 sum |x| |c| over the
  // pairs; the test allows 1e-5 of that sum.
  for (const auto& c : kCases2d) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{5, static_cast<std::uint32_t>(c.h)}, c.n * c.c * c.h * c.w);
    auto cv = randomFloats(Key{6, static_cast<std::uint32_t>(c.w)}, c.rows() * c.width());
    auto ix = netops::im2col(host(x, {c.n, c.c, c.h, c.w}), c.kh, c.kw, c.stride, c.pad).toVector<float>();
    auto ac = netops::col2im(host(cv, {c.rows(), c.width()}), c.n, c.c, c.h, c.w, c.kh, c.kw, c.stride, c.pad)
                  .toVector<float>();
    double lhs = 0, rhs = 0, scale = 0;
    for (std::size_t e = 0; e < ix.size(); ++e) {
      lhs += static_cast<double>(ix[e]) * cv[e];
      scale += std::fabs(static_cast<double>(ix[e]) * cv[e]);
    }
    for (std::size_t e = 0; e < x.size(); ++e) rhs += static_cast<double>(x[e]) * ac[e];
    EXPECT_LE(std::fabs(lhs - rhs), 1e-5 * scale + 1e-30) << "lhs " << lhs << " rhs " << rhs;
  }
}

TEST(Im2col, MatchesPyTorchUnfold) {
  auto cases = torchCases("torch_conv.txt", "im2col");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto& v = tc.ints;
    Tensor cols = netops::im2col(host(tc.floats("x"), {v[0], v[1], v[2], v[3]}), v[4], v[5], v[6], v[7]);
    // A copy: exactly PyTorch's values.
    EXPECT_TRUE(sameBits(cols.toVector<float>(), tc.floats("cols")));
  }
}

// ---- im2col1d / col2im1d -------------------------------------------------------------------------------

TEST(Im2col1d, SliceEqualsRowsOfTheWhole) {
  const Case1d c{50, 6, 4, 3, 2, 2};
  auto x = randomFloats(Key{11, 11}, c.t * c.c);
  auto whole = netops::im2col1d(host(x, {c.t, c.c}), c.k, c.stride, c.pad, c.dilation).toVector<float>();
  const std::int64_t width = c.c * c.k;
  for (std::int64_t first : {0, 1, 7, 14})
    for (std::int64_t count : {0, 1, 2}) {
      auto part = netops::im2col1d(host(x, {c.t, c.c}), c.k, c.stride, c.pad, c.dilation, first, count);
      EXPECT_TRUE(sameBits(part.toVector<float>(), slice(whole, first * width, count * width)))
          << "first " << first << " count " << count;
    }
}

TEST(Im2col1d, AdjointIdentityInFloat64) {
  // <im2col1d(x), c> = <x, col2im1d(c)> with dilation 1; tolerance as Im2col's: 1e-5 sum |x| |c|.
  for (const auto& c : kCases1d) {
    if (c.dilation != 1) continue;
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{13, static_cast<std::uint32_t>(c.t)}, c.t * c.c);
    auto cv = randomFloats(Key{14, static_cast<std::uint32_t>(c.t)}, c.ot() * c.c * c.k);
    auto ix = netops::im2col1d(host(x, {c.t, c.c}), c.k, c.stride, c.pad, 1).toVector<float>();
    auto ac = netops::col2im1d(host(cv, {c.ot(), c.c * c.k}), c.c, c.t, c.k, c.stride, c.pad).toVector<float>();
    double lhs = 0, rhs = 0, scale = 0;
    for (std::size_t e = 0; e < ix.size(); ++e) {
      lhs += static_cast<double>(ix[e]) * cv[e];
      scale += std::fabs(static_cast<double>(ix[e]) * cv[e]);
    }
    for (std::size_t e = 0; e < x.size(); ++e) rhs += static_cast<double>(x[e]) * ac[e];
    EXPECT_LE(std::fabs(lhs - rhs), 1e-5 * scale + 1e-30) << "lhs " << lhs << " rhs " << rhs;
  }
}

// ---- conv1d ---------------------------------------------------------------------------------------------

namespace {

/// The float64 value of conv1d's output (r, oc) and the sum of its terms' magnitudes.
std::pair<double, double> conv1d64(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                                   const Case1d& g, std::int64_t r, std::int64_t oc) {
  double v = 0, mag = 0;
  for (std::int64_t ch = 0; ch < g.c; ++ch)
    for (std::int64_t j = 0; j < g.k; ++j) {
      const std::int64_t pos = r * g.stride + j * g.dilation - g.pad;
      if (pos < 0 || pos >= g.t) continue;
      const double term = static_cast<double>(x[pos * g.c + ch]) * w[(oc * g.c + ch) * g.k + j];
      v += term;
      mag += std::fabs(term);
    }
  if (bias) {
    v += bias[oc];
    mag += std::fabs(bias[oc]);
  }
  return {v, mag};
}

/// The float64 value of convTranspose1d's output (t, oc) and the sum of its terms' magnitudes.
std::pair<double, double> convTranspose1d64(const std::vector<float>& x, const std::vector<float>& w,
                                            const float* bias, std::int64_t n, std::int64_t c, std::int64_t o,
                                            std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t t,
                                            std::int64_t oc) {
  double v = 0, mag = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      if (i * stride + j - pad != t) continue;
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const double term = static_cast<double>(x[i * c + ch]) * w[(ch * o + oc) * k + j];
        v += term;
        mag += std::fabs(term);
      }
    }
  if (bias) {
    v += bias[oc];
    mag += std::fabs(bias[oc]);
  }
  return {v, mag};
}

std::vector<Tensor> biasArg(const std::vector<float>& b, bool on) {
  if (!on) return {};
  return {host(b, {static_cast<std::int64_t>(b.size())})};
}

}  // namespace

TEST(Conv1d, PaddedTapsTakeTheirFma) {
  // x = [1], w = [inf, 1, inf] over a pad of 1: the padded taps give 0 * inf = NaN, as
  // im2col1d-then-chain does.
  Tensor y = netops::conv1d(host({1.0f}, {1, 1}), host({kInf, 1.0f, kInf}, {1, 1, 3}), {}, 1, 1, 1);
  EXPECT_TRUE(std::isnan(y.toVector<float>()[0]));
  // A -0 product chain: acc = fma(-1e-30, 1e-30, +0) = -0; then fma(+0 (padding), 1, -0) = +0.
  Tensor z = netops::conv1d(host({-1e-30f}, {1, 1}), host({1e-30f, 1.0f}, {1, 1, 2}), {}, 1, 1, 1);
  auto zv = z.toVector<float>();
  std::vector<float> want(zv.size());
  std::vector<float> xs = {-1e-30f}, ws = {1e-30f, 1.0f};
  ref::conv1d(xs.data(), 1, 1, ws.data(), 1, 2, nullptr, 1, 1, 1, want.data());
  EXPECT_TRUE(sameBits(zv, want));
  EXPECT_TRUE(sameBits(zv[1], 0.0f)) << "the padded tap's fma turns -0 into +0";
  // A -0 patch keeps its sign in every lane: fma(-0, 1, -0) = -0 (a +0 would give +0).
  Tensor s = netops::conv1d(host({-1e-30f, -0.0f}, {2, 1}), host({1e-30f, 1.0f}, {1, 1, 2}), {}, 1, 0, 1);
  EXPECT_TRUE(sameBits(s.toVector<float>()[0], -0.0f));
}

TEST(Conv1d, WindowOfARangeEqualsTheWhole) {
  // Output row r depends only on its window: conv1d of x's rows [a, b) (pad 0) equals the
  // matching rows of conv1d of x.
  const std::int64_t t = 60, c = 7, o = 19, k = 4, dil = 2;
  auto x = randomFloats(Key{23, 0}, t * c), w = randomFloats(Key{24, 0}, o * c * k), b = randomFloats(Key{25, 0}, o);
  auto whole = netops::conv1d(host(x, {t, c}), host(w, {o, c, k}), biasArg(b, true), 1, 0, dil).toVector<float>();
  for (std::int64_t a : {0, 5, 20}) {
    const std::int64_t len = 17;
    auto part = netops::conv1d(host(slice(x, a * c, len * c), {len, c}), host(w, {o, c, k}), biasArg(b, true), 1, 0, dil);
    const std::int64_t rows = part.dim(0);
    EXPECT_TRUE(sameBits(part.toVector<float>(), slice(whole, a * o, rows * o))) << "from row " << a;
  }
}

TEST(Conv1d, AccuracyAgainstFloat64) {
  // |y - y64| <= (c k + 1) 2^-23 (sum |x w| + |bias|): the chain's and the bias add's roundings,
  // with a factor 2 to spare.
  for (const auto& cc : kConvCases) {
    const Case1d& c = cc.g;
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{26, static_cast<std::uint32_t>(c.t)}, c.t * c.c, 1.0f, 0.5f);
    auto w = randomFloats(Key{27, static_cast<std::uint32_t>(cc.o)}, cc.o * c.c * c.k);
    auto b = randomFloats(Key{28, 0}, cc.o);
    auto y = netops::conv1d(host(x, {c.t, c.c}), host(w, {cc.o, c.c, c.k}), biasArg(b, cc.bias), c.stride, c.pad,
                            c.dilation)
                 .toVector<float>();
    double worst = 0;
    for (std::int64_t r = 0; r < c.ot(); ++r)
      for (std::int64_t oc = 0; oc < cc.o; ++oc) {
        auto [v, mag] = conv1d64(x, w, cc.bias ? b.data() : nullptr, c, r, oc);
        const double bound = (c.c * c.k + 1) * std::ldexp(1.0, -23) * mag + 1e-30;
        worst = std::max(worst, std::fabs(y[r * cc.o + oc] - v) / bound);
      }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

TEST(Conv1d, MatchesPyTorch) {
  // PyTorch sums in its own order: within 1e-5 (1 + sum |x w| + |bias|).
  auto cases = torchCases("torch_conv.txt", "conv1d");
  ASSERT_GE(cases.size(), 6u);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto& v = tc.ints;  // t c o k stride pad dilation has_bias
    const Case1d g{v[0], v[1], v[3], v[4], v[5], v[6]};
    const std::int64_t o = v[2];
    const bool hasBias = v[7] != 0;
    auto x = tc.floats("x"), w = tc.floats("w");
    std::vector<float> b = hasBias ? tc.floats("bias") : std::vector<float>{};
    auto y = netops::conv1d(host(x, {g.t, g.c}), host(w, {o, g.c, g.k}), biasArg(b, hasBias), g.stride, g.pad, g.dilation)
                 .toVector<float>();
    const auto& want = tc.field("y");
    ASSERT_EQ(y.size(), want.size());
    for (std::int64_t r = 0; r < g.ot(); ++r)
      for (std::int64_t oc = 0; oc < o; ++oc) {
        const double mag = conv1d64(x, w, hasBias ? b.data() : nullptr, g, r, oc).second;
        EXPECT_NEAR(y[r * o + oc], want[r * o + oc], 1e-5 * (1 + mag)) << "row " << r << " channel " << oc;
      }
  }
}

// ---- convTranspose1d ------------------------------------------------------------------------------------


TEST(ConvTranspose1d, AccuracyAgainstFloat64) {
  // |y - y64| <= (c + k + 1) 2^-23 (sum |x w| + |bias|): each cols chain, the adds of col2im1d and
  // the bias add, with a factor 2 to spare.
  for (const auto& c : kTransposeCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{33, static_cast<std::uint32_t>(c.n)}, c.n * c.c, 1.0f, 0.5f);
    auto w = randomFloats(Key{34, static_cast<std::uint32_t>(c.o)}, c.c * c.o * c.k);
    auto b = randomFloats(Key{35, 0}, c.o);
    auto y = netops::convTranspose1d(host(x, {c.n, c.c}), host(w, {c.c, c.o, c.k}), biasArg(b, c.bias), c.stride, c.pad)
                 .toVector<float>();
    double worst = 0;
    for (std::int64_t t = 0; t < c.length(); ++t)
      for (std::int64_t oc = 0; oc < c.o; ++oc) {
        auto [v, mag] = convTranspose1d64(x, w, c.bias ? b.data() : nullptr, c.n, c.c, c.o, c.k, c.stride, c.pad, t, oc);
        const double bound = (c.c + c.k + 1) * std::ldexp(1.0, -23) * mag + 1e-30;
        worst = std::max(worst, std::fabs(y[t * c.o + oc] - v) / bound);
      }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

TEST(ConvTranspose1d, IsCols2im1dOfTheChains) {
  // The SPEC's steps through the public ops: cols by chain (here: conv1d of each row with k = 1 is
  // not the same layout, so build cols from the reference chain), then col2im1d, then + bias.
  const std::int64_t n = 7, c = 5, o = 6, k = 4, stride = 2, pad = 1;
  auto x = randomFloats(Key{36, 0}, n * c), w = randomFloats(Key{37, 0}, c * o * k), b = randomFloats(Key{38, 0}, o);
  std::vector<float> cols(n * o * k);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t col = 0; col < o * k; ++col) {
      float acc = 0.0f;
      for (std::int64_t ch = 0; ch < c; ++ch) acc = std::fma(x[i * c + ch], w[ch * o * k + col], acc);
      cols[i * o * k + col] = acc;
    }
  const std::int64_t length = (n - 1) * stride - 2 * pad + k;
  auto folded = netops::col2im1d(host(cols, {n, o * k}), o, length, k, stride, pad).toVector<float>();
  for (std::int64_t t = 0; t < length; ++t)
    for (std::int64_t oc = 0; oc < o; ++oc) folded[t * o + oc] = folded[t * o + oc] + b[oc];
  auto y = netops::convTranspose1d(host(x, {n, c}), host(w, {c, o, k}), biasArg(b, true), stride, pad);
  EXPECT_TRUE(sameBits(y.toVector<float>(), folded));
}

TEST(ConvTranspose1d, MatchesPyTorch) {
  auto cases = torchCases("torch_conv.txt", "convTranspose1d");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto& v = tc.ints;  // n c o k stride pad has_bias
    const std::int64_t n = v[0], c = v[1], o = v[2], k = v[3], stride = v[4], pad = v[5];
    const bool hasBias = v[6] != 0;
    auto x = tc.floats("x"), w = tc.floats("w");
    std::vector<float> b = hasBias ? tc.floats("bias") : std::vector<float>{};
    auto y = netops::convTranspose1d(host(x, {n, c}), host(w, {c, o, k}), biasArg(b, hasBias), stride, pad)
                 .toVector<float>();
    const auto& want = tc.field("y");
    ASSERT_EQ(y.size(), want.size());
    const std::int64_t length = (n - 1) * stride - 2 * pad + k;
    for (std::int64_t t = 0; t < length; ++t)
      for (std::int64_t oc = 0; oc < o; ++oc) {
        const double mag = convTranspose1d64(x, w, hasBias ? b.data() : nullptr, n, c, o, k, stride, pad, t, oc).second;
        EXPECT_NEAR(y[t * o + oc], want[t * o + oc], 1e-5 * (1 + mag)) << "row " << t << " channel " << oc;
      }
  }
}

// ---- bad input --------------------------------------------------------------------------------------------

TEST(ConvOps, BadInput) {
  Tensor x4 = host(randomFloats(Key{1, 1}, 2 * 3 * 5 * 6), {2, 3, 5, 6});
  {
    const char* fn = "gizml::netops::im2col";
    expectThrowsNaming([&] { netops::im2col(x4.to(DType::BF16), 3, 3, 1, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col(x4.reshape({6, 5, 6}), 3, 3, 1, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col(Tensor(), 3, 3, 1, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col(Tensor::empty({2, 0, 5, 6}), 3, 3, 1, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col(x4, 0, 3, 1, 1); }, fn, "kh");
    expectThrowsNaming([&] { netops::im2col(x4, 3, -1, 1, 1); }, fn, "kw");
    expectThrowsNaming([&] { netops::im2col(x4, 8, 3, 1, 1); }, fn, "kh");  // 8 > 5 + 2
    expectThrowsNaming([&] { netops::im2col(x4, 3, 9, 1, 1); }, fn, "kw");  // 9 > 6 + 2
    expectThrowsNaming([&] { netops::im2col(x4, 3, 3, 0, 1); }, fn, "stride");
    expectThrowsNaming([&] { netops::im2col(x4, 3, 3, -2, 1); }, fn, "stride");
    expectThrowsNaming([&] { netops::im2col(x4, 3, 3, 1, -1); }, fn, "pad");
    expectThrowsNaming([&] { netops::im2col(x4, 3, 3, 1, std::int64_t{1} << 62); }, fn, "pad");
    expectThrowsNaming([&] { netops::im2col(x4, std::int64_t{1} << 40, std::int64_t{1} << 40, 1, std::int64_t{1} << 40); },
                       fn, "x");  // output rows x columns overflow
  }
  {
    const char* fn = "gizml::netops::col2im";
    Tensor cols = host(randomFloats(Key{2, 2}, 60 * 27), {60, 27});  // x [2, 3, 5, 6], 3x3, pad 1
    EXPECT_NO_THROW(netops::col2im(cols, 2, 3, 5, 6, 3, 3, 1, 1));
    expectThrowsNaming([&] { netops::col2im(cols, 2, 3, 5, 7, 3, 3, 1, 1); }, fn, "cols");   // rows
    expectThrowsNaming([&] { netops::col2im(cols, 2, 2, 5, 6, 3, 3, 1, 1); }, fn, "cols");   // columns
    expectThrowsNaming([&] { netops::col2im(cols.to(DType::F64), 2, 3, 5, 6, 3, 3, 1, 1); }, fn, "cols");
    expectThrowsNaming([&] { netops::col2im(cols.reshape({60, 27, 1}), 2, 3, 5, 6, 3, 3, 1, 1); }, fn, "cols");
    expectThrowsNaming([&] { netops::col2im(cols, -1, 3, 5, 6, 3, 3, 1, 1); }, fn, "n");
    expectThrowsNaming([&] { netops::col2im(cols, 2, 0, 5, 6, 3, 3, 1, 1); }, fn, "c");
    expectThrowsNaming([&] { netops::col2im(cols, 2, 3, -5, 6, 3, 3, 1, 1); }, fn, "h");
    expectThrowsNaming([&] { netops::col2im(cols, 2, 3, 5, -6, 3, 3, 1, 1); }, fn, "w");
    expectThrowsNaming([&] { netops::col2im(cols, 2, 3, 5, 6, 8, 3, 1, 1); }, fn, "kh");
    expectThrowsNaming([&] { netops::col2im(cols, 2, 3, 5, 6, 3, 3, 0, 1); }, fn, "stride");
    expectThrowsNaming([&] { netops::col2im(cols, 2, 3, 5, 6, 3, 3, 1, -1); }, fn, "pad");
    expectThrowsNaming([&] { netops::col2im(cols, std::int64_t{1} << 31, 3, std::int64_t{1} << 31, 6, 1, 1, 1, 0); }, fn,
                       "cols");  // n oh ow x c kh kw overflows
  }
  Tensor x2 = host(randomFloats(Key{3, 3}, 10 * 3), {10, 3});
  {
    const char* fn = "gizml::netops::im2col1d";
    expectThrowsNaming([&] { netops::im2col1d(x2.to(DType::BF16), 3, 1, 0, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col1d(x2.reshape({30}), 3, 1, 0, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col1d(Tensor::empty({10, 0}), 3, 1, 0, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::im2col1d(x2, 0, 1, 0, 1); }, fn, "k");
    expectThrowsNaming([&] { netops::im2col1d(x2, 11, 1, 0, 1); }, fn, "k");      // 11 > 10
    expectThrowsNaming([&] { netops::im2col1d(x2, 4, 1, 0, 4); }, fn, "k");       // 3 4 + 1 = 13 > 10
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 0, 0, 1); }, fn, "stride");
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, -1, 1); }, fn, "pad");
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, 0, 0); }, fn, "dilation");
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, 0, -1); }, fn, "dilation");
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, 0, 1, -1, 2); }, fn, "first");
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, 0, 1, 9, 0); }, fn, "first");  // ot = 8
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, 0, 1, 7, 2); }, fn, "count");
    expectThrowsNaming([&] { netops::im2col1d(x2, 3, 1, 0, 1, 0, -2); }, fn, "count");
    expectThrowsNaming([&] { netops::im2col1d(x2, 2, 1, 0, std::int64_t{1} << 62); }, fn, "k");
    EXPECT_EQ(netops::im2col1d(x2, 3, 1, 0, 1, 8, 0).shape(), (gizml::Shape{0, 9}));
    EXPECT_EQ(netops::im2col1d(x2, 3, 1, 0, 1, 8).shape(), (gizml::Shape{0, 9}));
  }
  {
    const char* fn = "gizml::netops::col2im1d";
    Tensor cols = host(randomFloats(Key{4, 4}, 8 * 9), {8, 9});
    EXPECT_NO_THROW(netops::col2im1d(cols, 3, 10, 3, 1, 0));
    expectThrowsNaming([&] { netops::col2im1d(cols, 2, 10, 3, 1, 0); }, fn, "cols");  // 9 != 2 3
    expectThrowsNaming([&] { netops::col2im1d(cols.to(DType::F16), 3, 10, 3, 1, 0); }, fn, "cols");
    expectThrowsNaming([&] { netops::col2im1d(cols.reshape({72}), 3, 10, 3, 1, 0); }, fn, "cols");
    expectThrowsNaming([&] { netops::col2im1d(cols, 0, 10, 3, 1, 0); }, fn, "c");
    expectThrowsNaming([&] { netops::col2im1d(cols, 3, -1, 3, 1, 0); }, fn, "length");
    expectThrowsNaming([&] { netops::col2im1d(cols, 9, 10, 1, 0, 0); }, fn, "stride");
    expectThrowsNaming([&] { netops::col2im1d(cols, 3, 10, 3, 1, -1); }, fn, "pad");
    expectThrowsNaming([&] { netops::col2im1d(cols, 9, 10, 0, 1, 0); }, fn, "k");
    expectThrowsNaming([&] { netops::col2im1d(cols, 1, 1, 9, 1, 0); }, fn, "k");  // 9 > 1 + 0
  }
  {
    const char* fn = "gizml::netops::conv1d";
    Tensor w = host(randomFloats(Key{5, 5}, 4 * 3 * 3), {4, 3, 3});
    Tensor b = host(randomFloats(Key{6, 6}, 4), {4});
    EXPECT_NO_THROW(netops::conv1d(x2, w, {b}, 1, 0, 1));
    expectThrowsNaming([&] { netops::conv1d(x2.to(DType::BF16), w, {b}, 1, 0, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::conv1d(x2.reshape({30}), w, {b}, 1, 0, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::conv1d(x2, w.to(DType::F64), {b}, 1, 0, 1); }, fn, "w");
    expectThrowsNaming([&] { netops::conv1d(x2, w.reshape({4, 9}), {b}, 1, 0, 1); }, fn, "w");
    expectThrowsNaming([&] { netops::conv1d(x2, w.reshape({6, 2, 3}), {b}, 1, 0, 1); }, fn, "w");  // channels
    expectThrowsNaming([&] { netops::conv1d(x2, Tensor::empty({0, 3, 3}), {}, 1, 0, 1); }, fn, "w");
    expectThrowsNaming([&] { netops::conv1d(x2, Tensor::empty({4, 3, 0}), {}, 1, 0, 1); }, fn, "w");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b.rows(0, 3)}, 1, 0, 1); }, fn, "bias");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b.to(DType::BF16)}, 1, 0, 1); }, fn, "bias");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b, b}, 1, 0, 1); }, fn, "bias");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b}, 0, 0, 1); }, fn, "stride");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b}, 1, -1, 1); }, fn, "pad");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b}, 1, 0, 0); }, fn, "dilation");
    expectThrowsNaming([&] { netops::conv1d(x2, w, {b}, 1, 0, 5); }, fn, "w");  // 5 2 + 1 = 11 > 10
    expectThrowsNaming([&] { netops::conv1d(x2.rows(0, 2), w, {b}, 1, 0, 1); }, fn, "w");  // 3 > 2
  }
  {
    const char* fn = "gizml::netops::convTranspose1d";
    Tensor w = host(randomFloats(Key{7, 7}, 3 * 4 * 3), {3, 4, 3});
    Tensor b = host(randomFloats(Key{8, 8}, 4), {4});
    EXPECT_NO_THROW(netops::convTranspose1d(x2, w, {b}, 2, 1));
    expectThrowsNaming([&] { netops::convTranspose1d(x2.to(DType::F16), w, {b}, 2, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::convTranspose1d(Tensor::empty({0, 3}), w, {b}, 2, 1); }, fn, "x");
    expectThrowsNaming([&] { netops::convTranspose1d(x2, w.reshape({4, 3, 3}), {b}, 2, 1); }, fn, "w");  // channels
    expectThrowsNaming([&] { netops::convTranspose1d(x2, w.reshape({3, 12}), {b}, 2, 1); }, fn, "w");
    expectThrowsNaming([&] { netops::convTranspose1d(x2, w, {b.rows(0, 2)}, 2, 1); }, fn, "bias");
    expectThrowsNaming([&] { netops::convTranspose1d(x2, w, {b}, 0, 1); }, fn, "stride");
    expectThrowsNaming([&] { netops::convTranspose1d(x2, w, {b}, 1, -1); }, fn, "pad");
    expectThrowsNaming([&] { netops::convTranspose1d(x2.rows(0, 1), w, {b}, 1, 2); }, fn, "pad");  // 3 - 4 < 1
    expectThrowsNaming([&] { netops::convTranspose1d(x2, w, {b}, std::int64_t{1} << 62, 0); }, fn, "stride");
  }
}

// ---- the formulas the GPU runs, run here ---------------------------------------------------------------

namespace {
/// Every output element of a kernel struct by its element(a, e), as the GPU's threads compute them.
template <class Op>
std::vector<float> elementsOf(const typename Op::Args& a) {
  std::vector<float> out(static_cast<std::size_t>(Op::count(a)));
  for (std::int64_t e = 0; e < Op::count(a); ++e) out[e] = Op::element(a, e);
  return out;
}
}  // namespace

TEST(ConvFormulas, OneThreadAnElementAsTheKernelsIndexIt) {
  // cuda.cu's kernels compute element e of each op's kernel struct (conv.hpp): here the same
  // functions on the host, so where no GPU is present the formulas and index arithmetic the GPU
  // runs are still checked against the reference.
  namespace conv = gizml::netops::conv;
  for (const auto& c : kCases2d) {
    SCOPED_TRACE(c.name());
    auto x = withSpecials(Key{50, static_cast<std::uint32_t>(c.h)}, c.n * c.c * c.h * c.w);
    auto cols = withSpecials(Key{51, static_cast<std::uint32_t>(c.w)}, c.rows() * c.width());
    const conv::Geometry2d g{c.n, c.c, c.h, c.w, c.kh, c.kw, c.stride, c.pad, c.oh(), c.ow()};
    std::vector<float> want(c.rows() * c.width());
    ref::im2col(x.data(), c.n, c.c, c.h, c.w, c.kh, c.kw, c.stride, c.pad, want.data());
    EXPECT_TRUE(sameBits(elementsOf<conv::Im2col>({x.data(), g, nullptr}), want)) << "im2col";
    want.assign(x.size(), 0.0f);
    ref::col2im(cols.data(), c.n, c.c, c.h, c.w, c.kh, c.kw, c.stride, c.pad, want.data());
    EXPECT_TRUE(sameBits(elementsOf<conv::Col2im>({cols.data(), g, nullptr}), want)) << "col2im";
  }
  for (const auto& c : kCases1d) {
    SCOPED_TRACE(c.name());
    auto x = withSpecials(Key{52, static_cast<std::uint32_t>(c.t)}, c.t * c.c);
    const conv::Geometry1d g{c.t, c.c, c.k, c.stride, c.pad, c.dilation};
    const std::int64_t first = c.ot() / 3, rows = c.ot() - first, width = c.c * c.k;
    std::vector<float> want(rows * width);
    ref::im2col1d(x.data(), c.t, c.c, c.k, c.stride, c.pad, c.dilation, first, rows, want.data());
    EXPECT_TRUE(sameBits(elementsOf<conv::Im2col1d>({x.data(), g, first, rows, nullptr}), want)) << "im2col1d";
    const std::int64_t n = c.ot() + 1;
    auto cols = withSpecials(Key{53, static_cast<std::uint32_t>(c.t)}, n * width);
    want.assign(c.t * c.c, 0.0f);
    ref::col2im1d(cols.data(), n, c.c, c.t, c.k, c.stride, c.pad, want.data());
    EXPECT_TRUE(sameBits(elementsOf<conv::Col2im1d>({cols.data(), n, c.c, c.k, c.stride, c.pad, c.t, nullptr}), want))
        << "col2im1d";
  }
  for (const auto& cc : kConvCases) {
    const Case1d& c = cc.g;
    SCOPED_TRACE(c.name() + " o " + std::to_string(cc.o));
    auto x = withSpecials(Key{54, static_cast<std::uint32_t>(c.t)}, c.t * c.c);
    auto w = withSpecials(Key{55, static_cast<std::uint32_t>(cc.o)}, cc.o * c.c * c.k);
    auto b = randomFloats(Key{56, 0}, cc.o);
    const conv::Geometry1d g{c.t, c.c, c.k, c.stride, c.pad, c.dilation};
    std::vector<float> want(c.ot() * cc.o);
    ref::conv1d(x.data(), c.t, c.c, w.data(), cc.o, c.k, cc.bias ? b.data() : nullptr, c.stride, c.pad, c.dilation,
                want.data());
    EXPECT_TRUE(sameBits(elementsOf<conv::Conv1d>({x.data(), g, w.data(), cc.bias ? b.data() : nullptr, cc.o, c.ot(),
                                                   nullptr}),
                         want))
        << "conv1d";
  }
  for (const auto& c : kTransposeCases) {
    SCOPED_TRACE(c.name());
    auto x = withSpecials(Key{57, static_cast<std::uint32_t>(c.n)}, c.n * c.c);
    auto w = withSpecials(Key{58, static_cast<std::uint32_t>(c.o)}, c.c * c.o * c.k);
    auto b = randomFloats(Key{59, 0}, c.o);
    std::vector<float> want(c.length() * c.o);
    ref::convTranspose1d(x.data(), c.n, c.c, w.data(), c.o, c.k, c.bias ? b.data() : nullptr, c.stride, c.pad,
                         want.data());
    EXPECT_TRUE(sameBits(elementsOf<conv::ConvTranspose1d>({x.data(), c.n, c.c, w.data(), c.bias ? b.data() : nullptr,
                                                            c.o, c.k, c.stride, c.pad, c.length(), nullptr}),
                         want))
        << "convTranspose1d";
  }
}

// ---- the GPU = the host, bit for bit ----------------------------------------------------------------

TEST(ConvCuda, MixedDevicesAreAnError) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  Tensor x = host(randomFloats(Key{1, 1}, 10 * 3), {10, 3});
  Tensor w = host(randomFloats(Key{2, 2}, 4 * 3 * 3), {4, 3, 3});
  Tensor b = host(randomFloats(Key{3, 3}, 4), {4});
  expectThrowsNaming([&] { netops::conv1d(x.to(gpu), w, {}, 1, 0, 1); }, "gizml::netops::conv1d", "w");
  expectThrowsNaming([&] { netops::conv1d(x.to(gpu), w.to(gpu), {b}, 1, 0, 1); }, "gizml::netops::conv1d", "bias");
  Tensor wt = host(randomFloats(Key{4, 4}, 3 * 4 * 3), {3, 4, 3});
  expectThrowsNaming([&] { netops::convTranspose1d(x, wt.to(gpu), {}, 1, 0); }, "gizml::netops::convTranspose1d", "w");
}
