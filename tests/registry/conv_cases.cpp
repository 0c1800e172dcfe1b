// The convolution helpers' cases (SPEC §3 "Convolution and pooling"): one pixel, strides larger
// than the kernel (pixels no window sees), windows wholly in the padding, the kernel as large as
// the padded input, dilation, odd sizes and many channels; NaN / ±inf / -0 in the data.
#include "reference/conv_reference.hpp"
#include "registry/registry.hpp"
#include "registry/shapes.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;
using test::withSpecials;

Tensor special(Key key, const Shape& shape) { return host(withSpecials(key, Tensor::empty(shape).numel()), shape); }
std::string num(std::int64_t v) { return std::to_string(v); }

// ---- im2col / col2im -----------------------------------------------------------------------------------

Case im2colCase(const Shape2d& s) {
  Case c{.op = "im2col", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    return Tensors{special(Key{1, static_cast<std::uint32_t>(s.h * 100 + s.w)}, {s.n, s.c, s.h, s.w})};
  };
  c.run = [s](const Tensors& in) { return Tensors{netops::im2col(in[0], s.kh, s.kw, s.stride, s.pad)}; };
  c.reference = [s](const Tensors& in) {
    const std::int64_t n = in[0].dim(0);
    std::vector<float> cols(n * s.oh() * s.ow() * s.width());
    ref::im2col(valuesOf(in[0]).data(), n, s.c, s.h, s.w, s.kh, s.kw, s.stride, s.pad, cols.data());
    return Tensors{host(cols, {n * s.oh() * s.ow(), s.width()})};
  };
  c.cut = {{{0, 1}}, {{0, s.oh() * s.ow()}}};
  return c;
}

Case col2imCase(const Shape2d& s) {
  Case c{.op = "col2im", .name = s.name()};
  c.typical = s.typical;
  const std::int64_t itemRows = s.oh() * s.ow();
  c.inputs = [s, itemRows] {
    return Tensors{special(Key{2, static_cast<std::uint32_t>(s.h * 100 + s.w)}, {s.n * itemRows, s.width()})};
  };
  c.run = [s, itemRows](const Tensors& in) {
    return Tensors{netops::col2im(in[0], in[0].dim(0) / itemRows, s.c, s.h, s.w, s.kh, s.kw, s.stride, s.pad)};
  };
  c.reference = [s, itemRows](const Tensors& in) {
    const std::int64_t n = in[0].dim(0) / itemRows;
    std::vector<float> x(n * s.c * s.h * s.w);
    ref::col2im(valuesOf(in[0]).data(), n, s.c, s.h, s.w, s.kh, s.kw, s.stride, s.pad, x.data());
    return Tensors{host(x, {n, s.c, s.h, s.w})};
  };
  c.cut = {{{0, itemRows}}, {{0, 1}}};
  return c;
}

// ---- the 1-d ops -------------------------------------------------------------------------------------------

using Slices = std::vector<std::pair<std::int64_t, std::int64_t>>;  // (first, count), count -1: to the end

/// Everything, a middle slice, an empty one, the last row, the tail from first, the empty tail.
Slices edgeSlices(std::int64_t ot) {
  return {{0, -1}, {ot / 3, (ot + 1) / 2 - ot / 3}, {ot / 2, 0}, {ot - 1, 1}, {ot / 2, -1}, {ot, 0}};
}

/// im2col1d of each (first, count) slice, an output each.
Case im2col1dCase(const Shape1d& s, const Slices& slices, bool typical) {
  const std::int64_t ot = s.ot();
  Case c{.op = "im2col1d", .name = s.name()};
  if (typical) c.name += " rows " + num(slices[0].first) + " + " + num(slices[0].second);
  c.typical = typical;
  c.inputs = [s] { return Tensors{special(Key{10, static_cast<std::uint32_t>(s.t)}, {s.t, s.c})}; };
  c.run = [s, slices](const Tensors& in) {
    Tensors out;
    for (auto [first, count] : slices)
      out.push_back(netops::im2col1d(in[0], s.k, s.stride, s.pad, s.dilation, first, count));
    return out;
  };
  c.reference = [s, slices, ot](const Tensors& in) {
    Tensors out;
    for (auto [first, count] : slices) {
      const std::int64_t rows = count < 0 ? ot - first : count;
      std::vector<float> cols(rows * s.c * s.k);
      ref::im2col1d(valuesOf(in[0]).data(), s.t, s.c, s.k, s.stride, s.pad, s.dilation, first, rows, cols.data());
      out.push_back(host(cols, {rows, s.c * s.k}));
    }
    return out;
  };
  return c;
}

/// col2im1d of `rows` rows of cols into s.t positions (rows = ot is im2col1d's adjoint; other
/// counts are not tied to the length: entries past it drop).
Case col2im1dCase(const Shape1d& s, std::int64_t rows, bool typical) {
  Case c{.op = "col2im1d", .name = s.name() + " rows " + num(rows)};
  c.typical = typical;
  c.inputs = [s, rows] { return Tensors{special(Key{12, static_cast<std::uint32_t>(rows)}, {rows, s.c * s.k})}; };
  c.run = [s](const Tensors& in) { return Tensors{netops::col2im1d(in[0], s.c, s.t, s.k, s.stride, s.pad)}; };
  c.reference = [s](const Tensors& in) {
    std::vector<float> out(s.t * s.c);
    ref::col2im1d(valuesOf(in[0]).data(), in[0].dim(0), s.c, s.t, s.k, s.stride, s.pad, out.data());
    return Tensors{host(out, {s.t, s.c})};
  };
  return c;
}

/// The optional bias as the ops take it: none, or one tensor.
std::vector<Tensor> biasArg(const Tensors& in, bool bias) {
  return bias ? std::vector<Tensor>{in[2]} : std::vector<Tensor>{};
}
const float* biasData(const std::vector<float>& b, bool bias) { return bias ? b.data() : nullptr; }

/// conv1d(x [t, c], w [o, c, k], bias [o] or none).
Case conv1dCase(const Conv1dShape& shape) {
  const Shape1d& s = shape.g;
  const std::int64_t o = shape.o;
  const bool bias = shape.bias;
  Case c{.op = "conv1d", .name = s.name() + " o " + num(o) + (bias ? " bias" : "")};
  c.typical = shape.typical;
  c.inputs = [s, o] {
    return Tensors{special(Key{20, static_cast<std::uint32_t>(s.t)}, {s.t, s.c}),
                   special(Key{21, static_cast<std::uint32_t>(o)}, {o, s.c, s.k}),
                   host(test::randomFloats(Key{22, 0}, o), {o})};
  };
  c.run = [s, bias](const Tensors& in) {
    return Tensors{netops::conv1d(in[0], in[1], biasArg(in, bias), s.stride, s.pad, s.dilation)};
  };
  c.reference = [s, o, bias](const Tensors& in) {
    std::vector<float> out(s.ot() * o);
    ref::conv1d(valuesOf(in[0]).data(), s.t, s.c, valuesOf(in[1]).data(), o, s.k, biasData(valuesOf(in[2]), bias),
                s.stride, s.pad, s.dilation, out.data());
    return Tensors{host(out, {s.ot(), o})};
  };
  return c;
}

Case convTranspose1dCase(const TransposeShape& s) {
  Case c{.op = "convTranspose1d", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    return Tensors{special(Key{30, static_cast<std::uint32_t>(s.n)}, {s.n, s.c}),
                   special(Key{31, static_cast<std::uint32_t>(s.o)}, {s.c, s.o, s.k}),
                   host(test::randomFloats(Key{32, 0}, s.o), {s.o})};
  };
  c.run = [s](const Tensors& in) {
    return Tensors{netops::convTranspose1d(in[0], in[1], biasArg(in, s.bias), s.stride, s.pad)};
  };
  c.reference = [s](const Tensors& in) {
    std::vector<float> out(s.length() * s.o);
    ref::convTranspose1d(valuesOf(in[0]).data(), s.n, s.c, valuesOf(in[1]).data(), s.o, s.k,
                         biasData(valuesOf(in[2]), s.bias), s.stride, s.pad, out.data());
    return Tensors{host(out, {s.length(), s.o})};
  };
  return c;
}


}  // namespace

std::vector<Case> convCases() {
  std::vector<Case> cases;
  for (const Shape2d& s : kShapes2d) {
    cases.push_back(im2colCase(s));
    cases.push_back(col2imCase(s));
  }
  for (const Shape1d& s : kShapes1d) {
    cases.push_back(im2col1dCase(s, edgeSlices(s.ot()), false));
    if (s.dilation != 1) continue;  // col2im1d has no dilation
    for (std::int64_t rows : {s.ot(), s.ot() + 3, std::int64_t{1}})
      if (rows != 1 || s.ot() != 1) cases.push_back(col2im1dCase(s, rows, false));
  }
  cases.push_back(im2col1dCase({1000, 64, 5, 2, 2, 2}, {{10, 400}}, true));
  cases.push_back(col2im1dCase({300, 32, 4, 2, 1, 1}, 150, true));
  for (const Conv1dShape& s : kConv1dShapes) cases.push_back(conv1dCase(s));
  for (const TransposeShape& s : kTransposeShapes) cases.push_back(convTranspose1dCase(s));
  return cases;
}

}  // namespace gizml::registry
