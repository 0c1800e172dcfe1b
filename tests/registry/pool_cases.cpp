// The 2-d pooling cases (SPEC §3 "Convolution and pooling"): one pixel, overlapping windows,
// strides larger than the window (pixels no window holds), the window as the image, a remainder
// left out; NaN, ±inf, -0 next to +0, a tie and a window of NaN only.
#include "reference/conv_reference.hpp"
#include "registry/registry.hpp"
#include "registry/shapes.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;

Tensor poolInput(Key key, const PoolShape& s) {
  return host(test::poolSpecials(key, s.n * s.c, s.h, s.w, s.size), {s.n, s.c, s.h, s.w});
}

/// Each case has two outputs: max, then average.
const bool kKinds[] = {false, true};

Case pool2dCase(const PoolShape& s) {
  Case c{.op = "pool2d", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] { return Tensors{poolInput(Key{1, static_cast<std::uint32_t>(s.h * 100 + s.w)}, s)}; };
  c.run = [s](const Tensors& in) {
    Tensors out;
    for (bool average : kKinds) out.push_back(netops::pool2d(in[0], s.size, s.stride, average));
    return out;
  };
  c.reference = [s](const Tensors& in) {
    const std::int64_t n = in[0].dim(0);
    Tensors out;
    for (bool average : kKinds) {
      std::vector<float> y(n * s.c * s.oh() * s.ow());
      ref::pool2d(valuesOf(in[0]).data(), n, s.c, s.h, s.w, s.size, s.stride, average, y.data());
      out.push_back(host(y, {n, s.c, s.oh(), s.ow()}));
    }
    return out;
  };
  c.outputNames = {"max", "average"};
  c.cut = {{{0, 1}}, {{0, 1}, {1, 1}}};
  return c;
}

/// pool2dGrad(dy, x): dy random with an inf.
Case pool2dGradCase(const PoolShape& s) {
  Case c{.op = "pool2dGrad", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    auto dy = test::randomFloats(Key{3, static_cast<std::uint32_t>(s.h)}, s.n * s.c * s.oh() * s.ow());
    if (dy.size() >= 4) dy[1] = test::kInf;
    return Tensors{host(dy, {s.n, s.c, s.oh(), s.ow()}),
                   poolInput(Key{2, static_cast<std::uint32_t>(s.h * 100 + s.w)}, s)};
  };
  c.run = [s](const Tensors& in) {
    Tensors out;
    for (bool average : kKinds) out.push_back(netops::pool2dGrad(in[0], in[1], s.size, s.stride, average));
    return out;
  };
  c.reference = [s](const Tensors& in) {
    const std::int64_t n = in[1].dim(0);
    Tensors out;
    for (bool average : kKinds) {
      std::vector<float> dx(in[1].numel());
      ref::pool2dGrad(valuesOf(in[0]).data(), valuesOf(in[1]).data(), n, s.c, s.h, s.w, s.size, s.stride, average,
                      dx.data());
      out.push_back(host(dx, in[1].shape()));
    }
    return out;
  };
  c.outputNames = {"max", "average"};
  c.cut = {{{0, 1}, {1, 1}}, {{0, 1}, {1, 1}}};
  return c;
}

}  // namespace

std::vector<Case> poolCases() {
  std::vector<Case> cases;
  for (const PoolShape& s : kPoolShapes) {
    cases.push_back(pool2dCase(s));
    cases.push_back(pool2dGradCase(s));
  }
  return cases;
}

}  // namespace gizml::registry
