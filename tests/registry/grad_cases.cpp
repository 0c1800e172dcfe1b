// The backward pass's cases (gizml/netops/grad.hpp, and lazy.hpp's lazyMatmulNN / lazyMatmulTN /
// lazyConvBatch): products around the host's register block and k blocks, the 2-d convolution
// shapes of shapes.hpp (strides, padding, windows in the padding) as a batched convolution and
// its two gradients, the elementwise ops, the sums, the transpose and AdamW, with NaN, ±inf and -0
// in the data.
#include "reference/grad_reference.hpp"
#include "reference/lazy_reference.hpp"
#include "registry/registry.hpp"
#include "registry/shapes.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;
using test::randomFloats;
using test::withSpecials;

Tensor special(Key key, const Shape& shape) { return host(withSpecials(key, Tensor::empty(shape).numel()), shape); }
Tensor random(Key key, const Shape& shape, float scale = 1.0f) {
  return host(randomFloats(key, Tensor::empty(shape).numel(), scale), shape);
}
std::uint32_t u(std::int64_t v) { return static_cast<std::uint32_t>(v); }

struct ProductShape {
  std::int64_t m, n, k;
  std::string name() const { return std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k); }
};
const ProductShape kProducts[] = {{1, 1, 1}, {1, 1, 0}, {2, 3, 7},    {6, 64, 256},  {7, 65, 257},
                                  {13, 31, 255}, {64, 10, 128}, {128, 10, 64}, {33, 97, 300}};

/// lazyMatmulNN(a [m, k], b [k, n]), and with bias and relu: outputs plain, bias relu.
Case matmulNNCase(const ProductShape& s, bool typical) {
  Case c{.op = "lazyMatmulNN", .name = s.name()};
  c.typical = typical;
  c.outputNames = {"product", "bias relu"};
  c.inputs = [s] {
    return Tensors{special(Key{1, u(s.k)}, {s.m, s.k}), random(Key{2, u(s.n)}, {s.k, s.n}), random(Key{3, 3}, {s.n})};
  };
  c.run = [](const Tensors& in) {
    return Tensors{lazyMatmulNN(in[0], in[1]).store(), lazyMatmulNN(in[0], in[1]).bias(in[2]).relu().store()};
  };
  c.reference = [](const Tensors& in) {
    const std::int64_t m = in[0].dim(0), k = in[0].dim(1), n = in[1].dim(1);
    std::vector<float> out(m * n);
    ref::matmulNN(valuesOf(in[0]).data(), valuesOf(in[1]).data(), m, n, k, out.data());
    auto br = out;
    const auto b = valuesOf(in[2]);
    for (std::int64_t i = 0; i < m * n; ++i)
      br[i] = ref::epilogueStep(Lazy::Op::Relu, ref::epilogueStep(Lazy::Op::Bias, br[i], b[i % n], 0.0f), 0.0f, 0.0f);
    return Tensors{host(out, {m, n}), host(br, {m, n})};
  };
  c.cut = {{{0, 1}}, {{0, 1}, {1, 1}}};
  return c;
}

/// lazyMatmulTN(a [k, m], b [k, n]): the chain over a's and b's rows. No batch: every output
/// element sums over them.
Case matmulTNCase(const ProductShape& s, bool typical) {
  Case c{.op = "lazyMatmulTN", .name = s.name()};
  c.typical = typical;
  c.inputs = [s] { return Tensors{special(Key{4, u(s.k)}, {s.k, s.m}), random(Key{5, u(s.n)}, {s.k, s.n})}; };
  c.run = [](const Tensors& in) { return Tensors{lazyMatmulTN(in[0], in[1]).store()}; };
  c.reference = [](const Tensors& in) {
    const std::int64_t k = in[0].dim(0), m = in[0].dim(1), n = in[1].dim(1);
    std::vector<float> out(m * n);
    ref::matmulTN(valuesOf(in[0]).data(), valuesOf(in[1]).data(), m, n, k, out.data());
    return Tensors{host(out, {m, n})};
  };
  return c;
}

// ---- the batched convolution and its gradients (shapes.hpp's 2-d shapes, o output channels) -------

std::int64_t outChannels(const Shape2d& s) { return s.typical ? 16 : 3 + s.c % 3; }

/// lazyConvBatch(w, x).bias(b).relu(), and plain.
Case convBatchCase(const Shape2d& s) {
  Case c{.op = "lazyConvBatch", .name = s.name() + " o " + std::to_string(outChannels(s))};
  c.typical = s.typical;
  c.outputNames = {"product", "bias relu"};
  const std::int64_t o = outChannels(s);
  c.inputs = [s, o] {
    return Tensors{random(Key{6, u(o)}, {o, s.width()}, 0.5f), special(Key{7, u(s.h * 100 + s.w)}, {s.n, s.c, s.h, s.w}),
                   random(Key{8, 8}, {o})};
  };
  c.run = [s](const Tensors& in) {
    return Tensors{lazyConvBatch(in[0], in[1], s.kh, s.kw, s.stride, s.pad).store(),
                   lazyConvBatch(in[0], in[1], s.kh, s.kw, s.stride, s.pad).bias(in[2]).relu().store()};
  };
  c.reference = [s, o](const Tensors& in) {
    const std::int64_t n = in[1].dim(0), pixels = s.oh() * s.ow();
    std::vector<float> out(n * o * pixels);
    ref::convBatch(valuesOf(in[0]).data(), valuesOf(in[1]).data(), n, o, s.c, s.h, s.w, s.kh, s.kw, s.stride, s.pad,
                   out.data());
    auto br = out;
    const auto b = valuesOf(in[2]);
    for (std::int64_t i = 0; i < n * o * pixels; ++i)
      br[i] = ref::epilogueStep(Lazy::Op::Relu, ref::epilogueStep(Lazy::Op::Bias, br[i], b[(i / pixels) % o], 0.0f),
                                0.0f, 0.0f);
    return Tensors{host(out, {n, o, pixels}), host(br, {n, o, pixels})};
  };
  c.cut = {{{1, 1}}, {{0, 1}, {1, 1}}};
  return c;
}

/// convWeightGrad(dy [n, o, oh ow], x): a sum over the batch, no cut.
Case convWeightGradCase(const Shape2d& s) {
  Case c{.op = "convWeightGrad", .name = s.name() + " o " + std::to_string(outChannels(s))};
  c.typical = s.typical;
  const std::int64_t o = outChannels(s);
  c.inputs = [s, o] {
    return Tensors{random(Key{9, u(o)}, {s.n, o, s.oh() * s.ow()}), special(Key{10, u(s.h * 100 + s.w)}, {s.n, s.c, s.h, s.w})};
  };
  c.run = [s](const Tensors& in) { return Tensors{netops::convWeightGrad(in[0], in[1], s.kh, s.kw, s.stride, s.pad)}; };
  c.reference = [s, o](const Tensors& in) {
    std::vector<float> dw(o * s.width());
    ref::convWeightGrad(valuesOf(in[0]).data(), valuesOf(in[1]).data(), s.n, o, s.c, s.h, s.w, s.kh, s.kw, s.stride,
                        s.pad, dw.data());
    return Tensors{host(dw, {o, s.width()})};
  };
  return c;
}

/// convInputGrad(dy [n, o, oh, ow], w): each image its own.
Case convInputGradCase(const Shape2d& s) {
  Case c{.op = "convInputGrad", .name = s.name() + " o " + std::to_string(outChannels(s))};
  c.typical = s.typical;
  const std::int64_t o = outChannels(s);
  c.inputs = [s, o] {
    return Tensors{special(Key{11, u(o)}, {s.n, o, s.oh(), s.ow()}), random(Key{12, u(s.h)}, {o, s.width()})};
  };
  c.run = [s](const Tensors& in) {
    return Tensors{netops::convInputGrad(in[0], in[1], s.h, s.w, s.kh, s.kw, s.stride, s.pad)};
  };
  c.reference = [s, o](const Tensors& in) {
    const std::int64_t n = in[0].dim(0);
    std::vector<float> dx(n * s.c * s.h * s.w);
    ref::convInputGrad(valuesOf(in[0]).data(), valuesOf(in[1]).data(), n, o, s.c, s.h, s.w, s.kh, s.kw, s.stride,
                       s.pad, dx.data());
    return Tensors{host(dx, {n, s.c, s.h, s.w})};
  };
  c.cut = {{{0, 1}}, {{0, 1}}};
  return c;
}

// ---- elementwise, sums, transpose, AdamW ------------------------------------------------------------

const Shape kElementShapes[] = {{1}, {17}, {3, 5}, {16, 33}, {7, 2, 9}, {128, 1000}};

Case elementwiseCase(const Shape& shape) {
  Case c{.op = "elementwise", .name = shapeString(shape)};
  c.typical = shape == Shape{128, 1000};
  c.outputNames = {"add", "mul", "scale", "axpy", "relu", "reluGrad"};
  c.inputs = [shape] {
    Tensor a = special(Key{13, u(shape[0])}, shape), b = special(Key{14, u(shape[0])}, shape);
    return Tensors{a, b};
  };
  c.run = [](const Tensors& in) {
    return Tensors{netops::add(in[0], in[1]),   netops::mul(in[0], in[1]),       netops::scale(in[0], 0.3),
                   netops::axpy(-0.7, in[0], in[1]), netops::relu(in[0]), netops::reluGrad(in[1], in[0])};
  };
  c.reference = [](const Tensors& in) {
    const auto a = valuesOf(in[0]), b = valuesOf(in[1]);
    std::vector<std::vector<float>> out(6, std::vector<float>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i) {
      out[0][i] = ref::add(a[i], b[i]);
      out[1][i] = ref::mul(a[i], b[i]);
      out[2][i] = ref::scale(a[i], 0.3f);
      out[3][i] = ref::axpy(-0.7f, a[i], b[i]);
      out[4][i] = ref::relu(a[i]);
      out[5][i] = ref::reluGrad(b[i], a[i]);
    }
    Tensors t;
    for (auto& o : out) t.push_back(host(o, in[0].shape()));
    return t;
  };
  c.cut = {{{0, 1}, {1, 1}}, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}};
  return c;
}

Case sumRowsCase(std::int64_t rows, std::int64_t cols) {
  Case c{.op = "sumRows", .name = dims({rows, cols})};
  c.typical = rows == 128 && cols == 1000;
  c.inputs = [=] { return Tensors{special(Key{15, u(cols)}, {rows, cols})}; };
  c.run = [](const Tensors& in) { return Tensors{netops::sumRows(in[0])}; };
  c.reference = [](const Tensors& in) {
    return Tensors{host(ref::sumRows(valuesOf(in[0]), in[0].dim(0), in[0].dim(1)), {in[0].dim(1)})};
  };
  return c;
}

Case sumChannelsCase(const Shape& shape) {
  Case c{.op = "sumChannels", .name = shapeString(shape)};
  c.typical = shape == Shape{64, 32, 28, 28};
  c.inputs = [shape] { return Tensors{special(Key{16, u(shape[1])}, shape)}; };
  c.run = [](const Tensors& in) { return Tensors{netops::sumChannels(in[0])}; };
  c.reference = [](const Tensors& in) {
    const std::int64_t n = in[0].dim(0), ch = in[0].dim(1), inner = n * ch == 0 ? 0 : in[0].numel() / (n * ch);
    return Tensors{host(ref::sumChannels(valuesOf(in[0]), n, ch, inner), {ch})};
  };
  return c;
}

Case transposeCase(std::int64_t r, std::int64_t cols) {
  Case c{.op = "transpose", .name = dims({r, cols})};
  c.typical = r == 512 && cols == 1000;
  c.inputs = [=] { return Tensors{special(Key{17, u(r)}, {r, cols})}; };
  c.run = [](const Tensors& in) { return Tensors{netops::transpose(in[0])}; };
  c.reference = [](const Tensors& in) {
    return Tensors{host(ref::transpose(valuesOf(in[0]), in[0].dim(0), in[0].dim(1)), {in[0].dim(1), in[0].dim(0)})};
  };
  return c;
}

/// Three AdamW steps on copies of p, m, v (v >= 0), with the gradient g; outputs p, m, v.
Case adamWCase(const Shape& shape) {
  Case c{.op = "adamW", .name = shapeString(shape)};
  c.typical = shape == Shape{128, 1000};
  c.outputNames = {"param", "m", "v"};
  c.inputs = [shape] {
    Tensor v = random(Key{21, 21}, shape, 0.01f);
    std::vector<float> vv = valuesOf(v);
    for (float& x : vv) x = x * x;
    return Tensors{special(Key{18, u(shape[0])}, shape), random(Key{19, 19}, shape), random(Key{20, 20}, shape, 0.1f),
                   host(vv, shape)};
  };
  const netops::AdamWConfig config{2e-3, 0.9, 0.999, 1e-8, 0.05};
  c.run = [config](const Tensors& in) {
    Tensor p = in[0].clone(), m = in[2].clone(), v = in[3].clone();
    for (std::int64_t t = 1; t <= 3; ++t) netops::adamW(p, in[1], m, v, config, t);
    return Tensors{p, m, v};
  };
  c.reference = [config](const Tensors& in) {
    auto p = valuesOf(in[0]), g = valuesOf(in[1]), m = valuesOf(in[2]), v = valuesOf(in[3]);
    for (std::int64_t t = 1; t <= 3; ++t)
      ref::adamW(p, g, m, v, config.lr, config.beta1, config.beta2, config.eps, config.weightDecay, t);
    return Tensors{host(p, in[0].shape()), host(m, in[0].shape()), host(v, in[0].shape())};
  };
  c.cut = {{{0, 1}, {1, 1}, {2, 1}, {3, 1}}, {{0, 1}, {1, 1}, {2, 1}}};
  return c;
}

}  // namespace

std::vector<Case> gradCases() {
  std::vector<Case> cases;
  for (const ProductShape& s : kProducts) {
    cases.push_back(matmulNNCase(s, false));
    cases.push_back(matmulTNCase(s, false));
  }
  cases.push_back(matmulNNCase({128, 3136, 128}, true));
  cases.push_back(matmulTNCase({128, 3136, 128}, true));
  for (const Shape2d& s : kShapes2d) {
    cases.push_back(convBatchCase(s));
    cases.push_back(convWeightGradCase(s));
    cases.push_back(convInputGradCase(s));
  }
  for (const Shape& s : kElementShapes) {
    cases.push_back(elementwiseCase(s));
    cases.push_back(adamWCase(s));
  }
  for (auto [r, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {0, 5}, {3, 17}, {100, 65}, {128, 1000}})
    cases.push_back(sumRowsCase(r, cols));
  for (const Shape& s : {Shape{1, 1}, Shape{2, 3, 5}, Shape{3, 17, 4, 5}, Shape{0, 4, 3}, Shape{64, 32, 28, 28}})
    cases.push_back(sumChannelsCase(s));
  for (auto [r, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {1, 7}, {7, 1}, {17, 33}, {512, 1000}})
    cases.push_back(transposeCase(r, cols));
  return cases;
}

}  // namespace gizml::registry
