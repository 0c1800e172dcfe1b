// The backward pass (gizml/netops/grad.hpp; lazyMatmulNN, lazyMatmulTN, lazyConvBatch) beyond the
// registry's checks (tests/registry/grad_cases.cpp): each gradient against float64 finite
// differences, PyTorch's autograd values (tests/data/torch_grad.txt), a small CNN's gradients
// composed from gizml's ops against PyTorch's, the orders the header states, and bad input.
#include <algorithm>
#include <cmath>
#include <functional>

#include "reference/conv_reference.hpp"
#include "support/preamble.hpp"

namespace {

using Vec = std::vector<float>;
using Vec64 = std::vector<double>;

/// Largest |got - want|, relative to the largest |want| (at least `floor`).
double relativeError(const Vec& got, const std::vector<double>& want, double floor = 1e-30) {
  double worst = 0, scale = floor;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return got.size() == want.size() ? worst / scale : 1e30;
}

/// dL/dp_i by central differences in float64, L = loss(p).
Vec64 finiteDifferences(const Vec& p, const std::function<double(const Vec64&)>& loss, double h = 1e-3) {
  Vec64 at(p.begin(), p.end()), g(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double keep = at[i];
    at[i] = keep + h;
    const double up = loss(at);
    at[i] = keep - h;
    const double down = loss(at);
    at[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

/// The batched convolution in float64: y [n, o, oh ow] of w [o, c kh kw], x [n, c, h, w].
struct Conv64 {
  std::int64_t n, c, h, w, o, kh, kw, stride, pad;
  std::int64_t oh() const { return (h + 2 * pad - kh) / stride + 1; }
  std::int64_t ow() const { return (w + 2 * pad - kw) / stride + 1; }
  Vec64 operator()(const Vec64& wt, const Vec64& x, const Vec64& b) const {
    Vec64 y(n * o * oh() * ow());
    for (std::int64_t bi = 0; bi < n; ++bi)
      for (std::int64_t oc = 0; oc < o; ++oc)
        for (std::int64_t oy = 0; oy < oh(); ++oy)
          for (std::int64_t ox = 0; ox < ow(); ++ox) {
            double acc = b.empty() ? 0.0 : b[oc];
            for (std::int64_t ch = 0; ch < c; ++ch)
              for (std::int64_t i = 0; i < kh; ++i)
                for (std::int64_t j = 0; j < kw; ++j) {
                  const std::int64_t yy = oy * stride + i - pad, xx = ox * stride + j - pad;
                  if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                  acc += wt[(oc * c + ch) * kh * kw + i * kw + j] * x[((bi * c + ch) * h + yy) * w + xx];
                }
            y[((bi * o + oc) * oh() + oy) * ow() + ox] = acc;
          }
    return y;
  }
};

double dot(const Vec& a, const Vec64& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

Vec64 widen(const Vec& v) { return Vec64(v.begin(), v.end()); }

}  // namespace

// ---- finite differences ------------------------------------------------------------------------

TEST(GradFiniteDifferences, Convolution) {
  for (const Conv64 g : {Conv64{2, 2, 5, 6, 3, 3, 3, 2, 1}, Conv64{3, 3, 6, 6, 4, 3, 3, 1, 1}, Conv64{1, 2, 7, 5, 2, 2, 3, 3, 2}}) {
    SCOPED_TRACE("n c h w o = " + std::to_string(g.n) + " " + std::to_string(g.c) + " " + std::to_string(g.h) + " " +
                 std::to_string(g.w) + " " + std::to_string(g.o) + " stride " + std::to_string(g.stride));
    const std::int64_t q = g.c * g.kh * g.kw, pixels = g.oh() * g.ow();
    const Vec x = randomFloats(Key{1, 1}, g.n * g.c * g.h * g.w), w = randomFloats(Key{2, 2}, g.o * q, 0.5f),
              b = randomFloats(Key{3, 3}, g.o), dy = randomFloats(Key{4, 4}, g.n * g.o * pixels);
    const Tensor xt = host(x, {g.n, g.c, g.h, g.w}), wt = host(w, {g.o, q}), dyt = host(dy, {g.n, g.o, pixels});
    // L = dy . conv(w, x) + bias: its gradients in w, x and b.
    const Vec dw = netops::convWeightGrad(dyt, xt, g.kh, g.kw, g.stride, g.pad).toVector<float>();
    const Vec dx = netops::convInputGrad(dyt, wt, g.h, g.w, g.kh, g.kw, g.stride, g.pad).toVector<float>();
    const Vec db = netops::sumChannels(dyt).toVector<float>();
    const Vec64 fw = finiteDifferences(w, [&](const Vec64& p) { return dot(dy, g(p, widen(x), {})); });
    const Vec64 fx = finiteDifferences(x, [&](const Vec64& p) { return dot(dy, g(widen(w), p, {})); });
    const Vec64 fb = finiteDifferences(b, [&](const Vec64& p) { return dot(dy, g(widen(w), widen(x), p)); });
    EXPECT_LT(relativeError(dw, fw), 1e-5);
    EXPECT_LT(relativeError(dx, fx), 1e-5);
    EXPECT_LT(relativeError(db, fb), 1e-5);
    // And the forward product against float64.
    const Vec y = lazyConvBatch(wt, xt, g.kh, g.kw, g.stride, g.pad).bias(host(b, {g.o})).store().toVector<float>();
    EXPECT_LT(relativeError(y, g(widen(w), widen(x), widen(b))), 1e-5);
  }
}

TEST(GradFiniteDifferences, AffineAndRelu) {
  const std::int64_t rows = 7, in = 19, out = 5;
  const Vec x = randomFloats(Key{5, 5}, rows * in), w = randomFloats(Key{6, 6}, out * in), b = randomFloats(Key{7, 7}, out),
            dy = randomFloats(Key{8, 8}, rows * out);
  // L = sum dy * relu(x wᵀ + b), away from relu's kink (no pre-activation within 1e-2 of 0).
  auto pre = [&](const Vec64& xv, const Vec64& wv, const Vec64& bv) {
    Vec64 y(rows * out);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t o = 0; o < out; ++o) {
        double acc = bv[o];
        for (std::int64_t i = 0; i < in; ++i) acc += xv[r * in + i] * wv[o * in + i];
        y[r * out + o] = acc;
      }
    return y;
  };
  auto loss = [&](const Vec64& xv, const Vec64& wv, const Vec64& bv) {
    Vec64 y = pre(xv, wv, bv);
    for (double& v : y) v = v > 0 ? v : 0;
    return dot(dy, y);
  };
  for (double v : pre(widen(x), widen(w), widen(b))) ASSERT_GT(std::abs(v), 1e-2);
  const Tensor xt = host(x, {rows, in}), wt = host(w, {out, in}), bt = host(b, {out}), dyt = host(dy, {rows, out});
  const Tensor z = netops::affine(xt, wt, bt);
  const Tensor dz = netops::reluGrad(dyt, z);
  const Vec dx = lazyMatmulNN(dz, wt).store().toVector<float>();
  const Vec dw = lazyMatmulTN(dz, xt).store().toVector<float>();
  const Vec db = netops::sumRows(dz).toVector<float>();
  EXPECT_LT(relativeError(dx, finiteDifferences(x, [&](const Vec64& p) { return loss(p, widen(w), widen(b)); })), 1e-5);
  EXPECT_LT(relativeError(dw, finiteDifferences(w, [&](const Vec64& p) { return loss(widen(x), p, widen(b)); })), 1e-5);
  EXPECT_LT(relativeError(db, finiteDifferences(b, [&](const Vec64& p) { return loss(widen(x), widen(w), p); })), 1e-5);
}

// ---- PyTorch's autograd values -------------------------------------------------------------------

TEST(GradTorch, Conv2dAndItsGradients) {
  auto cases = gizml::test::torchCases("torch_grad.txt", "conv2d");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto& v = tc.ints;  // n c h w o kh kw stride pad
    const std::int64_t n = v[0], c = v[1], h = v[2], w = v[3], o = v[4], kh = v[5], kw = v[6], stride = v[7], pad = v[8];
    const Tensor x = host(tc.floats("x"), {n, c, h, w}), wt = host(tc.floats("w"), {o, c * kh * kw}),
                 b = host(tc.floats("b"), {o});
    const Vec y = lazyConvBatch(wt, x, kh, kw, stride, pad).bias(b).store().toVector<float>();
    EXPECT_LT(relativeError(y, tc.field("y")), 1e-5);
    const std::int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
    const Tensor dy = host(tc.floats("dy"), {n, o, oh, ow});
    EXPECT_LT(relativeError(netops::convInputGrad(dy, wt, h, w, kh, kw, stride, pad).toVector<float>(), tc.field("dx")), 1e-5);
    EXPECT_LT(relativeError(netops::convWeightGrad(dy, x, kh, kw, stride, pad).toVector<float>(), tc.field("dw")), 1e-5);
    EXPECT_LT(relativeError(netops::sumChannels(dy).toVector<float>(), tc.field("db")), 1e-5);
  }
}

TEST(GradTorch, LinearAndItsGradients) {
  auto cases = gizml::test::torchCases("torch_grad.txt", "linear");
  ASSERT_GE(cases.size(), 3u);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::int64_t rows = tc.ints[0], in = tc.ints[1], out = tc.ints[2];
    const Tensor x = host(tc.floats("x"), {rows, in}), w = host(tc.floats("w"), {out, in}), b = host(tc.floats("b"), {out}),
                 dy = host(tc.floats("dy"), {rows, out});
    EXPECT_LT(relativeError(netops::affine(x, w, b).toVector<float>(), tc.field("y")), 1e-5);
    EXPECT_LT(relativeError(lazyMatmulNN(dy, w).store().toVector<float>(), tc.field("dx")), 1e-5);
    EXPECT_LT(relativeError(lazyMatmulTN(dy, x).store().toVector<float>(), tc.field("dw")), 1e-5);
    EXPECT_LT(relativeError(netops::sumRows(dy).toVector<float>(), tc.field("db")), 1e-5);
    // transpose, then the plain product: the same chains, so the same bits.
    EXPECT_TRUE(sameBits(lazyMatmulTN(dy, x).store().toVector<float>(),
                         lazyMatmul(netops::transpose(dy), netops::transpose(x)).store().toVector<float>()));
  }
}

TEST(GradTorch, ReluAndItsGradient) {
  auto cases = gizml::test::torchCases("torch_grad.txt", "relu");
  ASSERT_EQ(cases.size(), 1u);
  const auto& tc = cases[0];
  const Tensor x = host(tc.floats("x"), {tc.ints[0]}), dy = host(tc.floats("dy"), {tc.ints[0]});
  // PyTorch's relu keeps -0 (its max(x, 0) returns x on a tie); gizml's is the epilogue's relu,
  // x > 0 ? x : +0 (SPEC §2): the one difference.
  Vec want = tc.floats("y");
  for (float& v : want) v = v == 0.0f ? 0.0f : v;
  EXPECT_TRUE(sameBits(netops::relu(x).toVector<float>(), want));
  EXPECT_TRUE(sameBits(netops::reluGrad(dy, x).toVector<float>(), tc.floats("dx")));
}

TEST(GradTorch, AdamWThreeSteps) {
  auto cases = gizml::test::torchCases("torch_grad.txt", "adamW");
  ASSERT_EQ(cases.size(), 1u);
  const auto& tc = cases[0];
  const std::int64_t count = tc.ints[0];
  Tensor p = host(tc.floats("p"), {count}), m = Tensor::zeros({count}), v = Tensor::zeros({count});
  const netops::AdamWConfig config{1e-2, 0.9, 0.999, 1e-8, 0.1};
  for (int t = 1; t <= 3; ++t)
    netops::adamW(p, host(tc.floats("g" + std::to_string(t)), {count}), m, v, config, t);
  // The same steps as PyTorch's loop; its CPU kernels may round a step differently (a vectorised
  // lerp or addcmul), so a few ulp of the update are allowed.
  const Vec got = p.toVector<float>();
  const auto& want = tc.field("out");
  for (std::int64_t i = 0; i < count; ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::abs(want[i]))) << i;
}

TEST(GradTorch, SmallCnnGradientsFromGizmlOps) {
  auto cases = gizml::test::torchCases("torch_grad.txt", "cnn");
  ASSERT_EQ(cases.size(), 1u);
  const auto& tc = cases[0];
  const std::int64_t n = tc.ints[0];
  const std::vector<std::int64_t> labels(tc.ints.begin() + 1, tc.ints.end());
  const Tensor x = host(tc.floats("x"), {n, 1, 8, 8}), w1 = host(tc.floats("w1"), {3, 9}), b1 = host(tc.floats("b1"), {3}),
               w2 = host(tc.floats("w2"), {5, 48}), b2 = host(tc.floats("b2"), {5});
  // Forward: conv + bias + relu, pool, flatten, affine, cross entropy.
  const Tensor a1 = lazyConvBatch(w1, x, 3, 3, 1, 1).bias(b1).relu().store().reshape({n, 3, 8, 8});
  const Tensor p1 = netops::pool2d(a1, 2, 2, false);
  const Tensor flat = p1.reshape({n, 48});
  const Tensor logits = netops::affine(flat, w2, b2);
  const double loss = netops::crossEntropyLoss(logits, labels);
  EXPECT_NEAR(loss, tc.field("loss")[0], 1e-5 * std::abs(tc.field("loss")[0]));
  // Backward.
  const Tensor dlogits = netops::crossEntropyGrad(logits, labels, 1.0 / static_cast<double>(n));
  const Tensor dw2 = lazyMatmulTN(dlogits, flat).store(), db2 = netops::sumRows(dlogits);
  const Tensor dflat = lazyMatmulNN(dlogits, w2).store();
  const Tensor da1 = netops::pool2dGrad(dflat.reshape({n, 3, 4, 4}), a1, 2, 2, false);
  const Tensor dz1 = netops::reluGrad(da1, a1);
  const Tensor dw1 = netops::convWeightGrad(dz1, x, 3, 3, 1, 1), db1 = netops::sumChannels(dz1);
  EXPECT_LT(relativeError(dw2.toVector<float>(), tc.field("dw2")), 1e-5);
  EXPECT_LT(relativeError(db2.toVector<float>(), tc.field("db2")), 1e-5);
  EXPECT_LT(relativeError(dw1.toVector<float>(), tc.field("dw1")), 1e-5);
  EXPECT_LT(relativeError(db1.toVector<float>(), tc.field("db1")), 1e-5);
}

// ---- the orders stated ---------------------------------------------------------------------------

TEST(GradOrder, SumsAddInTheStatedOrder) {
  // 1e8 + 1 - 1e8: +0 + 1e8 = 1e8, + 1 = 1e8 (rounded), - 1e8 = 0; any other order gives 1.
  const Tensor x = host({1e8f, 1.0f, -1e8f}, {3, 1});
  EXPECT_TRUE(sameBits(netops::sumRows(x).toVector<float>()[0], 0.0f));
  EXPECT_TRUE(sameBits(netops::sumChannels(x.reshape({3, 1, 1})).toVector<float>()[0], 0.0f));
  EXPECT_TRUE(sameBits(netops::sumChannels(x.reshape({1, 1, 3})).toVector<float>()[0], 0.0f));
  // The empty sums are +0.
  EXPECT_TRUE(sameBits(netops::sumRows(Tensor::zeros({0, 2})).toVector<float>(), Vec{0.0f, 0.0f}));
  // The chain of a product with a transposed operand runs over k in order: the same example.
  const Tensor a = host({1e8f, 1.0f, -1e8f}, {3, 1}), ones = host({1.0f, 1.0f, 1.0f}, {3, 1});
  EXPECT_TRUE(sameBits(lazyMatmulTN(a, ones).store().toVector<float>()[0], 0.0f));
  EXPECT_TRUE(sameBits(lazyMatmulNN(a.reshape({1, 3}), ones).store().toVector<float>()[0], 0.0f));
}

TEST(GradOrder, ConvBatchIsLazyConvPerImage) {
  // Stride 1: each image's result equals lazyConv's (the same chain over (ch, i, j)), bit for bit,
  // through every epilogue and output dtype. The host computes the batch as one product whose
  // columns are the images' pixels, each tile stored into its image's output: 14-wide images put
  // image edges inside a tile, and 80 channels (720 steps) take more than one k block.
  struct Shape {
    std::int64_t n, c, h, w;
  };
  for (const Shape& s : {Shape{3, 2, 7, 6}, Shape{4, 3, 14, 14}, Shape{3, 80, 9, 5}}) {
    SCOPED_TRACE("x [" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " + std::to_string(s.h) + ", " +
                 std::to_string(s.w) + "]");
    const std::int64_t o = 5, q = s.c * 9, pixels = s.h * s.w, image = s.c * s.h * s.w;
    const Tensor x = host(withSpecials(Key{9, 9}, s.n * image), {s.n, s.c, s.h, s.w});
    const Tensor w = host(randomFloats(Key{10, 10}, o * q), {o, q}), b = host(randomFloats(Key{11, 11}, o), {o});
    const Tensor r = host(randomFloats(Key{12, 12}, s.n * o * pixels), {s.n, o, pixels});
    const Tensor silu = lazyConvBatch(w, x, 3, 3, 1, 1).bias(b).silu().store();
    const Tensor res = lazyConvBatch(w, x, 3, 3, 1, 1).residual(r).relu().dtype(DType::BF16).store();
    const Tensor bf = lazyConvBatch(w, x, 3, 3, 1, 1, DType::BF16).bias(b).store();
    for (std::int64_t i = 0; i < s.n; ++i) {
      const Tensor xi = x.rows(i, i + 1).reshape({s.c, s.h, s.w}), ri = r.rows(i, i + 1).reshape({o, pixels});
      const Tensor one = lazyConv(w, xi, 3, 3, 1).bias(b).silu().store();
      EXPECT_TRUE(sameBits(silu.rows(i, i + 1).toVector<float>(), one.toVector<float>())) << "bias silu, image " << i;
      const Tensor oneRes = lazyConv(w, xi, 3, 3, 1).residual(ri).relu().dtype(DType::BF16).store();
      EXPECT_TRUE(sameBits(res.rows(i, i + 1).to(DType::F32).toVector<float>(), oneRes.to(DType::F32).toVector<float>()))
          << "residual relu BF16, image " << i;
      const Tensor oneBf = lazyConv(w, xi, 3, 3, 1, DType::BF16).bias(b).store();
      EXPECT_TRUE(sameBits(bf.rows(i, i + 1).toVector<float>(), oneBf.toVector<float>())) << "BF16 compute, image " << i;
    }
  }
}

TEST(GradOrder, AdamWFollowsItsSteps) {
  // One element by hand, in the header's order.
  const float p0 = 0.5f, g = -0.25f, m0 = 0.125f, v0 = 0.0625f;
  Tensor p = host({p0}, {1}), m = host({m0}, {1}), v = host({v0}, {1});
  const netops::AdamWConfig c{0.01, 0.9, 0.999, 1e-8, 0.1};
  netops::adamW(p, host({g}, {1}), m, v, c, 2);
  float pp = p0 * static_cast<float>(1.0 - 0.01 * 0.1);
  const float mm = m0 + static_cast<float>(1.0 - 0.9) * (g - m0);
  const float vv = v0 * 0.999f + (static_cast<float>(1.0 - 0.999) * g) * g;
  const float denom = std::sqrt(vv) / static_cast<float>(std::sqrt(1.0 - 0.999 * 0.999)) + 1e-8f;
  pp = pp + static_cast<float>(-(0.01 / (1.0 - 0.9 * 0.9))) * (mm / denom);
  EXPECT_TRUE(sameBits(p.toVector<float>()[0], pp));
  EXPECT_TRUE(sameBits(m.toVector<float>()[0], mm));
  EXPECT_TRUE(sameBits(v.toVector<float>()[0], vv));
}

// ---- bad input ---------------------------------------------------------------------------------------

TEST(GradBadInput, ElementwiseAndSums) {
  const Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  expectThrowsNaming([&] { netops::add(a, b); }, "gizml::netops::add", "b");
  expectThrowsNaming([&] { netops::add(a.to(DType::BF16), a); }, "gizml::netops::add", "a");
  expectThrowsNaming([&] { netops::mul(a, Tensor()); }, "gizml::netops::mul", "b");
  expectThrowsNaming([&] { netops::scale(a, 1e300); }, "gizml::netops::scale", "s");
  expectThrowsNaming([&] { netops::scale(Tensor::zeros({2}, DType::F64), 2); }, "gizml::netops::scale", "x");
  expectThrowsNaming([&] { netops::axpy(NAN, a, a); }, "gizml::netops::axpy", "alpha");
  expectThrowsNaming([&] { netops::axpy(1, a, b); }, "gizml::netops::axpy", "y");
  expectThrowsNaming([&] { netops::relu(Tensor()); }, "gizml::netops::relu", "x");
  expectThrowsNaming([&] { netops::reluGrad(a, b); }, "gizml::netops::reluGrad", "x");
  expectThrowsNaming([&] { netops::sumRows(Tensor::zeros({2, 3, 4})); }, "gizml::netops::sumRows", "x");
  expectThrowsNaming([&] { netops::sumChannels(Tensor::zeros({4})); }, "gizml::netops::sumChannels", "x");
  expectThrowsNaming([&] { netops::transpose(Tensor::zeros({4})); }, "gizml::netops::transpose", "x");
}

TEST(GradBadInput, Products) {
  const Tensor a = Tensor::zeros({4, 3}), b = Tensor::zeros({5, 2});
  expectThrowsNaming([&] { lazyMatmulNN(a, b); }, "gizml::lazyMatmulNN", "b");
  expectThrowsNaming([&] { lazyMatmulNN(Tensor::zeros({4}), b); }, "gizml::lazyMatmulNN", "a");
  expectThrowsNaming([&] { lazyMatmulNN(a, Tensor::zeros({3, 2}), DType::I8); }, "gizml::lazyMatmulNN", "compute");
  expectThrowsNaming([&] { lazyMatmulTN(a, b); }, "gizml::lazyMatmulTN", "b");
  expectThrowsNaming([&] { lazyMatmulTN(a, Tensor::zeros({4, 2}, DType::BF16)); }, "gizml::lazyMatmulTN", "b");
  const Tensor x = Tensor::zeros({2, 3, 5, 5}), w = Tensor::zeros({4, 27});
  expectThrowsNaming([&] { lazyConvBatch(w, x.reshape({6, 5, 5}), 3, 3, 1, 1); }, "gizml::lazyConvBatch", "x");
  expectThrowsNaming([&] { lazyConvBatch(Tensor::zeros({4, 26}), x, 3, 3, 1, 1); }, "gizml::lazyConvBatch", "w");
  expectThrowsNaming([&] { lazyConvBatch(w, x, 3, 3, 0, 1); }, "gizml::lazyConvBatch", "stride");
  expectThrowsNaming([&] { lazyConvBatch(w, x, 3, 3, 1, -1); }, "gizml::lazyConvBatch", "pad");
  expectThrowsNaming([&] { lazyConvBatch(Tensor::zeros({4, 3 * 64}), x, 8, 8, 1, 1); }, "gizml::lazyConvBatch", "kh, kw");
  expectThrowsNaming([&] { lazyConvBatch(w, x, 3, 3, 1, 1).bias(Tensor::zeros({3})); }, "gizml::Lazy::bias", "b");
}

TEST(GradBadInput, ConvolutionGradients) {
  const Tensor x = Tensor::zeros({2, 3, 5, 5}), w = Tensor::zeros({4, 27}), dy = Tensor::zeros({2, 4, 25});
  const char* fw = "gizml::netops::convWeightGrad";
  expectThrowsNaming([&] { netops::convWeightGrad(dy, x.reshape({6, 5, 5}), 3, 3, 1, 1); }, fw, "x");
  expectThrowsNaming([&] { netops::convWeightGrad(Tensor::zeros({2, 4, 24}), x, 3, 3, 1, 1); }, fw, "dy");
  expectThrowsNaming([&] { netops::convWeightGrad(Tensor::zeros({3, 4, 25}), x, 3, 3, 1, 1); }, fw, "dy");
  expectThrowsNaming([&] { netops::convWeightGrad(dy, x, 3, 3, 0, 1); }, fw, "stride");
  expectThrowsNaming([&] { netops::convWeightGrad(dy, x, 9, 3, 1, 1); }, fw, "kh");
  const char* fi = "gizml::netops::convInputGrad";
  expectThrowsNaming([&] { netops::convInputGrad(dy, Tensor::zeros({4, 26}), 5, 5, 3, 3, 1, 1); }, fi, "w");
  expectThrowsNaming([&] { netops::convInputGrad(Tensor::zeros({2, 5, 25}), w, 5, 5, 3, 3, 1, 1); }, fi, "dy");
  expectThrowsNaming([&] { netops::convInputGrad(dy, w, 0, 5, 3, 3, 1, 1); }, fi, "h");
  expectThrowsNaming([&] { netops::convInputGrad(dy, w, 5, 5, 3, 3, 1, -1); }, fi, "pad");
  expectThrowsNaming([&] { netops::convInputGrad(dy.to(DType::BF16), w, 5, 5, 3, 3, 1, 1); }, fi, "dy");
}

TEST(GradBadInput, AdamWLeavesEverythingUntouched) {
  Tensor p = host({1, 2, 3}, {3}), g = host({1, 1, 1}, {3}), m = Tensor::zeros({3}), v = Tensor::zeros({3});
  const char* fn = "gizml::netops::adamW";
  netops::AdamWConfig c;
  expectThrowsNaming([&] { netops::adamW(p, g, m, v, c, 0); }, fn, "step");
  expectThrowsNaming([&] { netops::adamW(p, g, m, Tensor::zeros({4}), c, 1); }, fn, "v");
  expectThrowsNaming([&] { netops::adamW(p, g.to(DType::BF16), m, v, c, 1); }, fn, "grad");
  expectThrowsNaming([&] { netops::adamW(p, g, m, m, c, 1); }, fn, "m, v");
  c.beta1 = 1.0;
  expectThrowsNaming([&] { netops::adamW(p, g, m, v, c, 1); }, fn, "config.beta1");
  c = {};
  c.eps = 0;
  expectThrowsNaming([&] { netops::adamW(p, g, m, v, c, 1); }, fn, "config.eps");
  c = {};
  c.lr = -1;
  expectThrowsNaming([&] { netops::adamW(p, g, m, v, c, 1); }, fn, "config.lr");
  EXPECT_TRUE(sameBits(p.toVector<float>(), Vec{1, 2, 3}));
  EXPECT_TRUE(sameBits(m.toVector<float>(), Vec{0, 0, 0}));
  EXPECT_TRUE(sameBits(v.toVector<float>(), Vec{0, 0, 0}));
}
