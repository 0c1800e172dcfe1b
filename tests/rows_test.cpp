// The row ops (SPEC §3) beyond the registry's checks (tests/registry/rows_cases.cpp): leading axes,
// ties and NaN in argmax, dropout's mask, accuracy against float64, PyTorch's values, bad input.
#include <algorithm>
#include <cmath>

#include "support/preamble.hpp"

namespace {

struct RowsCase {
  std::int64_t rows, n;
  std::string name() const { return "[" + std::to_string(rows) + ", " + std::to_string(n) + "]"; }
};
// Widths around the 16 lanes and their multiples, and a long odd row.
const RowsCase kCases[] = {{1, 1}, {3, 2}, {2, 15}, {3, 16}, {4, 17}, {2, 31}, {3, 255}, {2, 256}, {5, 257}, {7, 1000}, {2, 4097}};

}  // namespace

// ---- layerNorm ------------------------------------------------------------------------------------

TEST(LayerNorm, LeadingAxesAreRows) {
  auto x = randomFloats(Key{4, 4}, 2 * 3 * 17);
  auto w = randomFloats(Key{5, 5}, 17), b = randomFloats(Key{6, 6}, 17);
  auto a = netops::layerNorm(host(x, {2, 3, 17}), host(w, {17}), host(b, {17}), 1e-5);
  auto flat = netops::layerNorm(host(x, {6, 17}), host(w, {17}), host(b, {17}), 1e-5);
  EXPECT_EQ(a.y.shape(), (gizml::Shape{2, 3, 17}));
  EXPECT_EQ(a.mean.shape(), (gizml::Shape{6}));
  EXPECT_TRUE(sameBits(a.y.toVector<float>(), flat.y.toVector<float>()));
}

TEST(LayerNorm, AccuracyAgainstFloat64) {
  // Bound: |y - y64| <= 1e-5 (|w xhat64| + |b|) + 1e-6, measured worst about a tenth of that.
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{10, static_cast<std::uint32_t>(c.n)}, c.rows * c.n, 2.0f, 1.0f);
    auto w = randomFloats(Key{11, 0}, c.n), b = randomFloats(Key{12, 0}, c.n);
    auto y = netops::layerNorm(host(x, {c.rows, c.n}), host(w, {c.n}), host(b, {c.n}), 1e-5).y.toVector<float>();
    double worst = 0;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      double mu = 0, var = 0;
      for (std::int64_t i = 0; i < c.n; ++i) mu += x[r * c.n + i];
      mu /= c.n;
      for (std::int64_t i = 0; i < c.n; ++i) var += (x[r * c.n + i] - mu) * (x[r * c.n + i] - mu);
      var /= c.n;
      for (std::int64_t i = 0; i < c.n; ++i) {
        double xh = (x[r * c.n + i] - mu) / std::sqrt(var + static_cast<double>(1e-5f));
        double want = xh * w[i] + b[i];
        double bound = 1e-5 * (std::fabs(xh * w[i]) + std::fabs(b[i])) + 1e-6;
        worst = std::max(worst, std::fabs(y[r * c.n + i] - want) / bound);
      }
    }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

TEST(LayerNorm, MatchesPyTorch) {
  auto cases = torchCases("torch_rows.txt", "layerNorm");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::int64_t rows = c.ints.at(0), n = c.ints.at(1);
    auto out = netops::layerNorm(host(c.floats("x"), {rows, n}), host(c.floats("weight"), {n}),
                                 host(c.floats("bias"), {n}), c.field("eps").at(0));
    auto y = out.y.toVector<float>();
    const auto& want = c.field("y");
    for (std::size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], want[i], 2e-5 * (1.0 + std::fabs(want[i]))) << "element " << i;
  }
}

TEST(LayerNorm, BadInput) {
  const char* fn = "gizml::netops::layerNorm";
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4});
  Tensor w = host(randomFloats(Key{2, 2}, 4), {4}), b = host(randomFloats(Key{3, 3}, 4), {4});
  expectThrowsNaming([&] { netops::layerNorm(x, host({1, 2, 3}, {3}), b, 1e-5); }, fn, "weight");
  expectThrowsNaming([&] { netops::layerNorm(x, w, host({1, 2, 3, 4, 5}, {5}), 1e-5); }, fn, "bias");
  expectThrowsNaming([&] { netops::layerNorm(x.to(DType::BF16), w, b, 1e-5); }, fn, "x");
  expectThrowsNaming([&] { netops::layerNorm(x, w.to(DType::F64), b, 1e-5); }, fn, "weight");
  expectThrowsNaming([&] { netops::layerNorm(Tensor::empty({3, 0}), host({}, {0}), host({}, {0}), 1e-5); }, fn, "x");
  expectThrowsNaming([&] { netops::layerNorm(x, w, b, -1.0); }, fn, "eps");
  expectThrowsNaming([&] { netops::layerNorm(x, w, b, std::nan("")); }, fn, "eps");
  expectThrowsNaming([&] { netops::layerNorm(Tensor(), w, b, 1e-5); }, fn, "x");
}

// ---- layerNormGrad --------------------------------------------------------------------------------

TEST(LayerNormGrad, AccuracyAgainstFloat64) {
  // dx against the float64 formula; bound 1e-5 (|rstd| (|g| + |a| + |xhat c|)) + 1e-6.
  const std::int64_t rows = 6, n = 300;
  auto x = randomFloats(Key{30, 0}, rows * n, 2.0f, 0.5f);
  auto dy = randomFloats(Key{31, 0}, rows * n);
  auto w = randomFloats(Key{32, 0}, n), b = randomFloats(Key{33, 0}, n);
  auto fwd = netops::layerNorm(host(x, {rows, n}), host(w, {n}), host(b, {n}), 1e-5);
  auto g = netops::layerNormGrad(host(dy, {rows, n}), host(x, {rows, n}), host(w, {n}), fwd.mean, fwd.rstd);
  auto dx = g.dx.toVector<float>(), dw = g.dweight.toVector<float>(), db = g.dbias.toVector<float>();
  auto mean = fwd.mean.toVector<float>(), rstd = fwd.rstd.toVector<float>();
  double worst = 0;
  std::vector<double> dw64(n, 0.0), db64(n, 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double a = 0, cc = 0;
    std::vector<double> xh(n), gg(n);
    for (std::int64_t i = 0; i < n; ++i) {
      xh[i] = (static_cast<double>(x[r * n + i]) - mean[r]) * rstd[r];
      gg[i] = static_cast<double>(dy[r * n + i]) * w[i];
      a += gg[i];
      cc += gg[i] * xh[i];
      dw64[i] += static_cast<double>(dy[r * n + i]) * xh[i];
      db64[i] += dy[r * n + i];
    }
    a /= n;
    cc /= n;
    for (std::int64_t i = 0; i < n; ++i) {
      double want = rstd[r] * (gg[i] - a - xh[i] * cc);
      double bound = 1e-5 * rstd[r] * (std::fabs(gg[i]) + std::fabs(a) + std::fabs(xh[i] * cc)) + 1e-6;
      worst = std::max(worst, std::fabs(dx[r * n + i] - want) / bound);
    }
  }
  EXPECT_LE(worst, 1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(dw[i], dw64[i], 1e-5 * (1 + std::fabs(dw64[i])));
    EXPECT_NEAR(db[i], db64[i], 1e-5 * (1 + std::fabs(db64[i])));
  }
}

TEST(LayerNormGrad, BadInput) {
  const char* fn = "gizml::netops::layerNormGrad";
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}), dy = host(randomFloats(Key{1, 2}, 12), {3, 4});
  Tensor w = host(randomFloats(Key{2, 2}, 4), {4});
  Tensor mean = host({0, 0, 0}, {3}), rstd = host({1, 1, 1}, {3});
  expectThrowsNaming([&] { netops::layerNormGrad(host(randomFloats(Key{1, 3}, 8), {2, 4}), x, w, mean, rstd); }, fn, "dy");
  expectThrowsNaming([&] { netops::layerNormGrad(dy, x, host({1, 2}, {2}), mean, rstd); }, fn, "weight");
  expectThrowsNaming([&] { netops::layerNormGrad(dy, x, w, host({0, 0}, {2}), rstd); }, fn, "mean");
  expectThrowsNaming([&] { netops::layerNormGrad(dy, x, w, mean, rstd.to(DType::BF16)); }, fn, "rstd");
  expectThrowsNaming([&] { netops::layerNormGrad(dy, x.to(DType::F16), w, mean, rstd); }, fn, "x");
}

// ---- rmsNorm ----------------------------------------------------------------------------------------

TEST(RmsNorm, AccuracyAgainstFloat64) {
  // Bound: |y - y64| <= 1e-5 |y64| + 1e-7 (dot16 of positive terms in 16 lanes, then three
  // roundings); measured worst about a tenth of it.
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{13, static_cast<std::uint32_t>(c.n)}, c.rows * c.n, 2.0f, 0.5f);
    auto w = randomFloats(Key{14, 0}, c.n);
    auto out = netops::rmsNorm(host(x, {c.rows, c.n}), host(w, {c.n}), 1e-6);
    auto y = out.y.toVector<float>(), scale = out.rstd.toVector<float>();
    double worst = 0;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      double ss = 0;
      for (std::int64_t i = 0; i < c.n; ++i) ss += static_cast<double>(x[r * c.n + i]) * x[r * c.n + i];
      const double s64 = 1.0 / std::sqrt(ss / c.n + static_cast<double>(1e-6f));
      EXPECT_NEAR(scale[r], s64, 1e-5 * s64) << "row " << r;
      for (std::int64_t i = 0; i < c.n; ++i) {
        const double want = x[r * c.n + i] * s64 * w[i];
        worst = std::max(worst, std::fabs(y[r * c.n + i] - want) / (1e-5 * std::fabs(want) + 1e-7));
      }
    }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

TEST(RmsNorm, BadInput) {
  const char* fn = "gizml::netops::rmsNorm";
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}), w = host(randomFloats(Key{2, 2}, 4), {4});
  expectThrowsNaming([&] { netops::rmsNorm(x, host({1, 2, 3}, {3}), 1e-6); }, fn, "weight");
  expectThrowsNaming([&] { netops::rmsNorm(x, w.to(DType::BF16), 1e-6); }, fn, "weight");
  expectThrowsNaming([&] { netops::rmsNorm(x.to(DType::F16), w, 1e-6); }, fn, "x");
  expectThrowsNaming([&] { netops::rmsNorm(Tensor::empty({3, 0}), host({}, {0}), 1e-6); }, fn, "x");
  expectThrowsNaming([&] { netops::rmsNorm(x, w, -1.0); }, fn, "eps");
  expectThrowsNaming([&] { netops::rmsNorm(x, w, std::nan("")); }, fn, "eps");
  expectThrowsNaming([&] { netops::rmsNorm(Tensor(), w, 1e-6); }, fn, "x");
}

// ---- crossEntropy -----------------------------------------------------------------------------------

TEST(CrossEntropy, AccuracyAgainstFloat64) {
  // Loss within 2e-6 (|m| + log(n) + |x[label]| + 1) of float64's; gradient within 1e-6 absolute.
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{44, static_cast<std::uint32_t>(c.n)}, c.rows * c.n, 4.0f);
    auto labels = randomLabels(Key{45, 0}, c.rows, c.n);
    auto rows = netops::crossEntropyRows(host(x, {c.rows, c.n}), labels).toVector<float>();
    auto grad = netops::crossEntropyGrad(host(x, {c.rows, c.n}), labels, 1.0).toVector<float>();
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const float* xr = x.data() + r * c.n;
      double m = *std::max_element(xr, xr + c.n), s = 0;
      for (std::int64_t i = 0; i < c.n; ++i) s += std::exp(static_cast<double>(xr[i]) - m);
      double want = m + std::log(s) - xr[labels[r]];
      EXPECT_NEAR(rows[r], want, 2e-6 * (std::fabs(m) + std::log(double(c.n)) + std::fabs(xr[labels[r]]) + 1));
      for (std::int64_t i = 0; i < c.n; ++i) {
        double p = std::exp(static_cast<double>(xr[i]) - m) / s - (i == labels[r] ? 1.0 : 0.0);
        EXPECT_NEAR(grad[r * c.n + i], p, 1e-6) << "row " << r << " class " << i;
      }
    }
  }
}

TEST(CrossEntropy, MatchesPyTorch) {
  auto cases = torchCases("torch_rows.txt", "crossEntropy");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::int64_t rows = c.ints.at(0), classes = c.ints.at(1);
    Tensor logits = host(c.floats("logits"), {rows, classes});
    std::vector<std::int64_t> labels;
    for (double l : c.field("labels")) labels.push_back(static_cast<std::int64_t>(l));
    const auto& wantRows = c.field("rows");
    auto got = netops::crossEntropyRows(logits, labels).toVector<float>();
    for (std::int64_t r = 0; r < rows; ++r) EXPECT_NEAR(got[r], wantRows[r], 1e-5 * (1 + std::fabs(wantRows[r])));
    double mean = c.field("mean").at(0);
    EXPECT_NEAR(netops::crossEntropyLoss(logits, labels), mean, 1e-5 * (1 + std::fabs(mean)));
    auto grad = netops::crossEntropyGrad(logits, labels, 1.0).toVector<float>();
    const auto& wantGrad = c.field("grad");
    for (std::size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], wantGrad[i], 1e-6) << "element " << i;
  }
}

TEST(CrossEntropy, BadInput) {
  Tensor logits = host(randomFloats(Key{1, 1}, 12), {3, 4});
  for (const char* fn : {"gizml::netops::crossEntropyLoss", "gizml::netops::crossEntropyRows",
                         "gizml::netops::crossEntropyGrad"}) {
    auto call = [&](const Tensor& l, const std::vector<std::int64_t>& labels) {
      std::string f = fn;
      if (f.ends_with("Loss")) netops::crossEntropyLoss(l, labels);
      else if (f.ends_with("Rows")) netops::crossEntropyRows(l, labels);
      else netops::crossEntropyGrad(l, labels, 1.0);
    };
    expectThrowsNaming([&] { call(logits, {0, 1}); }, fn, "labels");           // wrong count
    expectThrowsNaming([&] { call(logits, {0, 1, 4}); }, fn, "labels");        // out of range
    expectThrowsNaming([&] { call(logits, {0, -1, 2}); }, fn, "labels");       // negative
    expectThrowsNaming([&] { call(logits.to(DType::BF16), {0, 1, 2}); }, fn, "logits");
    expectThrowsNaming([&] { call(logits.reshape({12}), {0}); }, fn, "logits");  // not [rows, classes]
    expectThrowsNaming([&] { call(Tensor::empty({0, 4}), {}); }, fn, "logits");  // no rows
    expectThrowsNaming([&] { call(Tensor::empty({2, 0}), {0, 0}); }, fn, "logits");  // empty rows
  }
}

// ---- argmax ---------------------------------------------------------------------------------------------

TEST(Argmax, TiesNaNAndInfinities) {
  std::vector<float> x = {
      1, 3, 3, 2,                 // tie: the first
      kNaN, kNaN, kNaN, kNaN,     // all NaN: 0
      kNaN, -kInf, kNaN, -kInf,   // NaN never wins; -inf is a value
      -0.0f, 0.0f, -1, -0.0f,     // -0 and +0 are equal: the first
      kNaN, 5, kInf, kInf,        // +inf wins, first of two
  };
  EXPECT_EQ(host(x, {5, 4}).argmax(), (std::vector<std::int64_t>{1, 0, 1, 0, 2}));
  // A tie 16 lanes apart (the same lane) and one in another lane.
  std::vector<float> y(40, 0.0f);
  y[21] = 7;
  y[37] = 7;
  y[5] = 7;
  EXPECT_EQ(host(y, {1, 40}).argmax(), (std::vector<std::int64_t>{5}));
}

TEST(Argmax, BadInput) {
  expectThrowsNaming([&] { host({1, 2}, {2}).to(DType::I32).argmax(); }, "gizml::netops::argmax", "x");
  expectThrowsNaming([&] { Tensor::empty({3, 0}).argmax(); }, "gizml::netops::argmax", "x");
}

// ---- dropout --------------------------------------------------------------------------------------------

TEST(Dropout, MaskFollowsTheKeysUniformDraw) {
  const std::int64_t n = 100000;
  auto x = randomFloats(Key{63, 0}, n);
  auto y = host(x, {n}).dropout(Key{64, 65}, 0.3).toVector<float>();
  auto u = Tensor::uniform(Key{64, 65}, {n}).toVector<float>();
  std::int64_t kept = 0;
  const float factor = static_cast<float>(1.0 / 0.7);
  for (std::int64_t i = 0; i < n; ++i) {
    if (u[i] >= 0.3f) {
      ++kept;
      ASSERT_TRUE(sameBits(y[i], x[i] * factor)) << i;
    } else {
      ASSERT_TRUE(sameBits(y[i], 0.0f)) << i;
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.01);
  EXPECT_TRUE(sameBits(host(x, {n}).dropout(Key{1, 1}, 0.0).toVector<float>(), x)) << "p = 0 keeps x";
  EXPECT_TRUE(sameBits(host(x, {n}).dropout(Key{1, 1}, 1.0).toVector<float>(), std::vector<float>(n, 0.0f)))
      << "p = 1 gives zeros";
}

TEST(Dropout, BadInput) {
  Tensor x = host({1, 2, 3}, {3});
  for (double p : {-0.1, 1.1, std::nan("")}) expectThrowsNaming([&] { x.dropout(Key{}, p); }, "gizml::netops::dropout", "p");
  expectThrowsNaming([&] { x.to(DType::BF16).dropout(Key{}, 0.5); }, "gizml::netops::dropout", "x");
}

// ---- the GPU = the host, bit for bit ----------------------------------------------------------------

TEST(RowsCuda, MixedDevicesAreAnError) {
  GIZML_NEED_GPU();
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4});
  Tensor w = host(randomFloats(Key{2, 2}, 4), {4}), b = host(randomFloats(Key{3, 3}, 4), {4});
  expectThrowsNaming([&] { netops::layerNorm(x.to(Device::cuda(0)), w, b, 1e-5); }, "gizml::netops::layerNorm", "weight");
}
