// 2-d pooling (SPEC §3 "Convolution and pooling") beyond the registry's checks
// (tests/registry/pool_cases.cpp): ties, NaN and -0 in max, the mean's accuracy against float64,
// PyTorch's values and gradients, bad input, and the formulas the GPU runs, run on the host.
#include <cmath>

#include "netops/pool/pool.hpp"
#include "reference/conv_reference.hpp"
#include "registry/shapes.hpp"
#include "support/preamble.hpp"

namespace {

// The registry's shape list (tests/registry/shapes.hpp).
using PoolCase = gizml::registry::PoolShape;
const auto& kCases = gizml::registry::kPoolShapes;

std::vector<float> withSpecials(Key key, const PoolCase& c) {
  return gizml::test::poolSpecials(key, c.n * c.c, c.h, c.w, c.size);
}

}  // namespace

TEST(Pool2d, MaxTakesTheFirstLargestAndNeverNaN) {
  // Four 2x2 windows of a 2x8 image, window order row-major: (0,0) (0,1) (1,0) (1,1).
  std::vector<float> x = {
      3, 7,       kNaN, 1,     kNaN, kNaN,  -0.0f, 0.0f,
      7, 2,       -kInf, kNaN, kNaN, kNaN,  0.0f, -1,
  };
  auto y = netops::pool2d(host(x, {1, 1, 2, 8}), 2, 2, false).toVector<float>();
  EXPECT_TRUE(sameBits(y[0], 7.0f));
  EXPECT_TRUE(sameBits(y[1], 1.0f));    // NaN first, then values: NaN never wins
  EXPECT_TRUE(std::isnan(y[2]));        // all NaN: the first element
  EXPECT_TRUE(sameBits(y[3], -0.0f));   // -0 and +0 tie: the first
  // The gradient goes to the first of tied maxima only, and nowhere in the all-NaN window but
  // its first element.
  auto dx = netops::pool2dGrad(host({10, 20, 30, 40}, {1, 1, 1, 4}), host(x, {1, 1, 2, 8}), 2, 2, false).toVector<float>();
  std::vector<float> want(16, 0.0f);
  want[1] = 10;   // the 7 at (0, 1), not the one at (1, 0)
  want[3] = 20;
  want[4] = 30;   // the all-NaN window's first element
  want[6] = 40;   // -0 at (0, 6)
  EXPECT_TRUE(sameBits(dx, want));
}

TEST(Pool2d, MeanAccuracyAgainstFloat64) {
  // |y - mean64| <= (size² + 2) 2^-23 mean64(|x|): the window's adds, the factor's rounding and
  // the product's, with a factor 2 to spare.
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{6, static_cast<std::uint32_t>(c.w)}, c.count(), 3.0f, 1.0f);
    auto y = netops::pool2d(host(x, {c.n, c.c, c.h, c.w}), c.size, c.stride, true).toVector<float>();
    double worst = 0;
    for (std::int64_t p = 0; p < c.n * c.c; ++p)
      for (std::int64_t oy = 0; oy < c.oh(); ++oy)
        for (std::int64_t ox = 0; ox < c.ow(); ++ox) {
          double s = 0, a = 0;
          for (std::int64_t i = 0; i < c.size; ++i)
            for (std::int64_t j = 0; j < c.size; ++j) {
              const double v = x[(p * c.h + oy * c.stride + i) * c.w + ox * c.stride + j];
              s += v;
              a += std::fabs(v);
            }
          const double k2 = static_cast<double>(c.size * c.size);
          const double bound = (k2 + 2) * std::ldexp(1.0, -23) * a / k2 + 1e-30;
          worst = std::max(worst, std::fabs(y[(p * c.oh() + oy) * c.ow() + ox] - s / k2) / bound);
        }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

TEST(Pool2d, MatchesPyTorch) {
  // max_pool2d / avg_pool2d and their autograd gradients. Max: the same value exactly; the rest
  // within 1e-6 (1 + |want|) (PyTorch divides by size² where gizml multiplies by F32(1 / size²),
  // and may add overlapping windows' gradients in another order).
  std::int64_t count = 0;
  for (const auto& tc : torchCases("torch_conv.txt", "pool2d")) {
    ++count;
    SCOPED_TRACE(tc.name);
    const auto& v = tc.ints;  // n c h w size stride average
    const bool average = v[6] != 0;
    Tensor x = host(tc.floats("x"), {v[0], v[1], v[2], v[3]});
    auto y = netops::pool2d(x, v[4], v[5], average).toVector<float>();
    const auto& wantY = tc.field("y");
    ASSERT_EQ(y.size(), wantY.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (average) EXPECT_NEAR(y[i], wantY[i], 1e-6 * (1 + std::fabs(wantY[i]))) << "y " << i;
      else EXPECT_EQ(y[i], wantY[i]) << "y " << i;
    }
    const std::int64_t oh = (v[2] - v[4]) / v[5] + 1, ow = (v[3] - v[4]) / v[5] + 1;
    auto dx = netops::pool2dGrad(host(tc.floats("dy"), {v[0], v[1], oh, ow}), x, v[4], v[5], average).toVector<float>();
    const auto& wantDx = tc.field("dx");
    ASSERT_EQ(dx.size(), wantDx.size());
    for (std::size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], wantDx[i], 1e-6 * (1 + std::fabs(wantDx[i]))) << "dx " << i;
  }
  EXPECT_GE(count, 10);
}

TEST(Pool2d, BadInput) {
  Tensor x = host(randomFloats(Key{1, 1}, 2 * 3 * 6 * 5), {2, 3, 6, 5});
  Tensor dy = host(randomFloats(Key{2, 2}, 2 * 3 * 3 * 2), {2, 3, 3, 2});  // size 2, stride 2
  {
    const char* fn = "gizml::netops::pool2d";
    EXPECT_NO_THROW(netops::pool2d(x, 2, 2, false));
    expectThrowsNaming([&] { netops::pool2d(x.to(DType::BF16), 2, 2, false); }, fn, "x");
    expectThrowsNaming([&] { netops::pool2d(x.reshape({6, 6, 5}), 2, 2, false); }, fn, "x");
    expectThrowsNaming([&] { netops::pool2d(Tensor(), 2, 2, false); }, fn, "x");
    expectThrowsNaming([&] { netops::pool2d(x, 0, 2, true); }, fn, "size");
    expectThrowsNaming([&] { netops::pool2d(x, -3, 2, true); }, fn, "size");
    expectThrowsNaming([&] { netops::pool2d(x, 6, 1, true); }, fn, "size");  // 6 > w = 5
    expectThrowsNaming([&] { netops::pool2d(x, 2, 0, true); }, fn, "stride");
    expectThrowsNaming([&] { netops::pool2d(x, 2, -1, false); }, fn, "stride");
  }
  {
    const char* fn = "gizml::netops::pool2dGrad";
    EXPECT_NO_THROW(netops::pool2dGrad(dy, x, 2, 2, false));
    expectThrowsNaming([&] { netops::pool2dGrad(dy, x, 2, 1, false); }, fn, "dy");  // [2, 3, 5, 4] expected
    expectThrowsNaming([&] { netops::pool2dGrad(dy.reshape({6, 6}), x, 2, 2, false); }, fn, "dy");
    expectThrowsNaming([&] { netops::pool2dGrad(dy.to(DType::F64), x, 2, 2, false); }, fn, "dy");
    expectThrowsNaming([&] { netops::pool2dGrad(dy, x.to(DType::F16), 2, 2, false); }, fn, "x");
    expectThrowsNaming([&] { netops::pool2dGrad(dy, x, 7, 2, true); }, fn, "size");
    expectThrowsNaming([&] { netops::pool2dGrad(dy, x, 2, 0, true); }, fn, "stride");
  }
}

// ---- the formulas the GPU runs, run here ---------------------------------------------------------------

TEST(PoolFormulas, OneThreadAnElementAsTheKernelsIndexIt) {
  // cuda.cu's kernels compute element e (and pool2dGrad's window maxima) by the kernel structs of
  // pool.hpp: here the same functions on the host, so where no GPU is present the formulas and
  // index arithmetic the GPU runs are still checked, among them the gather that the host's
  // per-plane scatter replaces.
  namespace pool = gizml::netops::pool;
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name());
    auto x = withSpecials(Key{20, static_cast<std::uint32_t>(c.h * 100 + c.w)}, c);
    auto dy = randomFloats(Key{21, static_cast<std::uint32_t>(c.h)}, c.outCount());
    const pool::Geometry g{c.n * c.c, c.h, c.w, c.size, c.stride, c.oh(), c.ow()};
    const float factor = static_cast<float>(1.0 / static_cast<double>(c.size * c.size));
    for (bool average : {false, true}) {
      SCOPED_TRACE(average ? "average" : "max");
      const pool::Pool2d::Args forward{x.data(), g, average, factor, nullptr};
      std::vector<float> got(pool::Pool2d::count(forward)), want(got.size());
      for (std::int64_t e = 0; e < pool::Pool2d::count(forward); ++e) got[e] = pool::Pool2d::element(forward, e);
      ref::pool2d(x.data(), c.n, c.c, c.h, c.w, c.size, c.stride, average, want.data());
      EXPECT_TRUE(sameBits(got, want)) << "pool2d";

      const pool::Pool2dGrad::Args backward{dy.data(), x.data(), g, average, factor, nullptr, nullptr};
      std::vector<std::int64_t> argmax(pool::Pool2dGrad::windows(backward));
      for (std::int64_t e = 0; e < pool::Pool2dGrad::windows(backward); ++e)
        argmax[e] = pool::Pool2dGrad::windowArgmax(backward, e);
      got.assign(pool::Pool2dGrad::count(backward), 0.0f);
      want.assign(got.size(), 0.0f);
      for (std::int64_t e = 0; e < pool::Pool2dGrad::count(backward); ++e)
        got[e] = pool::Pool2dGrad::element(backward, argmax.data(), e);
      ref::pool2dGrad(dy.data(), x.data(), c.n, c.c, c.h, c.w, c.size, c.stride, average, want.data());
      EXPECT_TRUE(sameBits(got, want)) << "pool2dGrad";
    }
  }
}

// ---- the GPU = the host, bit for bit ----------------------------------------------------------------

TEST(PoolCuda, MixedDevicesAreAnError) {
  GIZML_NEED_GPU();
  Tensor x = host(randomFloats(Key{1, 1}, 2 * 3 * 6 * 5), {2, 3, 6, 5});
  Tensor dy = host(randomFloats(Key{2, 2}, 2 * 3 * 3 * 2), {2, 3, 3, 2});
  expectThrowsNaming([&] { netops::pool2dGrad(dy, x.to(Device::cuda(0)), 2, 2, false); }, "gizml::netops::pool2dGrad",
                     "dy");
}
