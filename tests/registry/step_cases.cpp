// A language model's step's cases (SPEC §3): rows of logits read directly (with columns past the
// vocabulary that must not be read) or through blocks (the last partial), widths around 16 and
// 256, NaN / ±inf / -0, a row of NaN and a tie for the maximum; the split sum with and without y.
#include <cmath>
#include <tuple>

#include "reference/step_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;

struct LogitShape {
  std::int64_t rows, vocab, stride;
  bool indirect = false, typical = false;
  std::int64_t blocks() const { return indirect ? (vocab + stride - 1) / stride : 1; }
  std::string name() const {
    return dims({rows, vocab}) + (indirect ? " in blocks of " : " stride ") + std::to_string(stride);
  }
};
const LogitShape kShapes[] = {
    {1, 1, 1},           {3, 17, 17},         {5, 255, 300},       {37, 1000, 1024},   {2, 4097, 4100},
    {3, 100, 32, true},  {2, 17, 17, true},   {5, 1000, 256, true}, {9, 777, 128, true}, {64, 32000, 32000, false, true}};

/// The logits as [rows, stride] (direct) or [blocks, rows, stride] (indirect): specials, row 1 all
/// NaN, row 2's maximum twice, ties inside one candidates worker (tokens 256 apart: 5, 5, 5 and
/// -0 before +0), and +inf in every column past the vocabulary (never to be read).
Tensor logits(const LogitShape& s) {
  const std::int64_t rows = s.rows, stride = s.stride, blocks = s.blocks();
  std::vector<float> v = test::withSpecials(Key{70, static_cast<std::uint32_t>(s.vocab)}, blocks * rows * stride);
  auto at = [&](std::int64_t r, std::int64_t t) -> float& {
    return s.indirect ? v[((t / stride) * rows + r) * stride + t % stride] : v[r * stride + t];
  };
  for (std::int64_t b = 0; b < blocks; ++b)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < stride; ++j)
        if ((s.indirect ? b * stride + j : j) >= s.vocab) v[(b * rows + r) * stride + j] = test::kInf;
  if (rows >= 2)
    for (std::int64_t t = 0; t < s.vocab; ++t) at(1, t) = test::kNaN;
  if (rows >= 3 && s.vocab >= 3) at(2, s.vocab - 1) = at(2, s.vocab / 2) = 1e30f;
  if (rows >= 3 && s.vocab > 513) {
    at(2, 0) = at(2, 256) = at(2, 512) = 5.0f;
    at(2, 1) = -0.0f;
    at(2, 257) = 0.0f;
  }
  return s.indirect ? host(v, {blocks, rows, stride}) : host(v, {rows, stride});
}

std::int64_t rowsOf(const LogitShape& s, const Tensor& x) { return s.indirect ? x.dim(1) : x.dim(0); }

/// The block addresses of x [blocks, rows, stride], in a tensor on x's device.
Tensor blockTable(const Tensor& x) {
  std::vector<std::int64_t> addresses;
  for (std::int64_t b = 0; b < x.dim(0); ++b)
    addresses.push_back(reinterpret_cast<std::intptr_t>(x.data<float>() + b * x.dim(1) * x.dim(2)));
  return Tensor::fromVector(addresses, {x.dim(0)}, x.device());
}

/// op(g, rows, vocab, stride, indirect, out, logits, blocks) on the case's logits, wherever they are.
template <class Op>
Tensor runOnLogits(const LogitShape& s, const Tensor& x, std::int64_t width, Op op) {
  const std::int64_t rows = rowsOf(s, x);
  Tensor out = width == 1 ? Tensor::empty({rows}, DType::F32, x.device())
                          : Tensor::empty({rows, width}, DType::F32, x.device());
  const Tensor table = s.indirect ? blockTable(x) : Tensor();
  op(Gpu{x.device(), nullptr}, rows, s.vocab, s.stride, s.indirect, out.data<float>(),
     s.indirect ? nullptr : x.data<float>(), s.indirect ? static_cast<const float* const*>(table.raw()) : nullptr);
  return out;
}

/// The reference's view of the host values `x` holds.
ref::LogitSource sourceOf(const LogitShape& s, const std::vector<float>& x, std::int64_t rows) {
  ref::LogitSource src{x.data(), {}, s.vocab, s.stride, s.indirect};
  for (std::int64_t b = 0; s.indirect && b < s.blocks(); ++b) src.blocks.push_back(x.data() + b * rows * s.stride);
  return src;
}

Case logitCase(const std::string& op, const LogitShape& s) {
  Case c{.op = op, .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] { return Tensors{logits(s)}; };
  if (!s.indirect) c.cut = {{{0, 1}}, {{0, 1}}};  // indirect logits are cut by blocks, not rows
  return c;
}

Case argmaxIntoCase(const LogitShape& s) {
  Case c = logitCase("argmaxInto", s);
  c.run = [s](const Tensors& in) { return Tensors{runOnLogits(s, in[0], 1, netops::argmaxInto)}; };
  c.reference = [s](const Tensors& in) {
    const std::int64_t rows = rowsOf(s, in[0]);
    const std::vector<float> x = valuesOf(in[0]);
    std::vector<float> top(rows);
    ref::argmaxInto(sourceOf(s, x, rows), rows, top.data());
    return Tensors{host(top, {rows})};
  };
  return c;
}

Case candidatesIntoCase(const LogitShape& s) {
  Case c = logitCase("candidatesInto", s);
  c.run = [s](const Tensors& in) {
    return Tensors{runOnLogits(s, in[0], netops::CANDIDATE_ROW, netops::candidatesInto)};
  };
  c.reference = [s](const Tensors& in) {
    const std::int64_t rows = rowsOf(s, in[0]);
    const std::vector<float> x = valuesOf(in[0]);
    std::vector<float> cand(rows * netops::CANDIDATE_ROW);
    ref::candidatesInto(sourceOf(s, x, rows), rows, cand.data());
    return Tensors{host(cand, {rows, netops::CANDIDATE_ROW})};
  };
  return c;
}

Case splitSumIntoCase(std::int64_t total, std::int64_t splits, bool add, bool typical) {
  Case c{.op = "splitSumInto", .name = dims({splits, total}) + (add ? " add" : "")};
  c.typical = typical;
  c.inputs = [=] {
    return Tensors{host(test::withSpecials(Key{71, static_cast<std::uint32_t>(total)}, total), {total}),
                   host(test::withSpecials(Key{72, static_cast<std::uint32_t>(splits)}, splits * total), {splits, total})};
  };
  c.run = [add](const Tensors& in) {
    Tensor y = in[0].clone();
    netops::splitSumInto(Gpu{y.device(), nullptr}, y.data<float>(), in[1].data<float>(), y.numel(), in[1].dim(0), add);
    return Tensors{y};
  };
  c.reference = [add](const Tensors& in) {
    std::vector<float> y = valuesOf(in[0]);
    ref::splitSumInto(y.data(), valuesOf(in[1]).data(), in[0].numel(), in[1].dim(0), add);
    return Tensors{host(y, in[0].shape())};
  };
  return c;
}

/// normRotateInto {x [xRows, width], w, d, map or empty}: y [rows, stride] zeros but the written
/// columns [offset, offset + width).
Case normRotateCase(std::int64_t rows, std::int64_t width, bool rotate, bool mapped, bool typical) {
  const std::int64_t offset = 3, stride = width + 5, xRows = mapped ? rows + 2 : rows;
  Case c{.op = "normRotateInto",
         .name = dims({rows, width}) + (rotate ? " rotate" : "") + (mapped ? " map" : "")};
  c.typical = typical;
  c.inputs = [=] {
    std::vector<float> map;
    for (std::int64_t r = 0; r < rows && mapped; ++r) map.push_back(static_cast<float>((3 * r + 1) % xRows));
    return Tensors{host(test::withSpecials(Key{73, static_cast<std::uint32_t>(width)}, xRows * width), {xRows, width}),
                   host(test::randomFloats(Key{74, 0}, width), {width}),
                   host(test::randomFloats(Key{75, 0}, width, 1.0f, 0.5f), {width}),
                   mapped ? host(map, {rows}) : Tensor::zeros({0})};
  };
  c.run = [=](const Tensors& in) {
    Tensor y = Tensor::zeros({rows, stride}, DType::F32, in[0].device());
    netops::normRotateInto(Gpu{y.device(), nullptr}, rows, width, 1e-6, rotate, stride, offset, y.data<float>(),
                           in[0].data<float>(), in[1].data<float>(), in[2].data<float>(),
                           mapped ? in[3].data<float>() : nullptr, xRows);
    return Tensors{y};
  };
  c.reference = [=](const Tensors& in) {
    std::vector<float> y(rows * stride, 0.0f);
    const std::vector<float> map = valuesOf(in[3]);
    ref::normRotateInto(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(),
                        mapped ? map.data() : nullptr, 1e-6, rotate, rows, width, stride, offset, y.data());
    return Tensors{host(y, {rows, stride})};
  };
  return c;
}

/// siluMulRotatedInto {p [parts, rows, 2 ffn], d or empty}: y [rows, ffn].
Case siluMulCase(std::int64_t rows, std::int64_t ffn, std::int64_t parts, bool rotate, bool typical) {
  Case c{.op = "siluMulRotatedInto", .name = dims({parts, rows, 2 * ffn}) + (rotate ? " rotate" : "")};
  c.typical = typical;
  c.inputs = [=] {
    return Tensors{host(test::withSpecials(Key{76, static_cast<std::uint32_t>(ffn)}, parts * rows * 2 * ffn),
                        {parts, rows, 2 * ffn}),
                   rotate ? host(test::randomFloats(Key{77, 0}, ffn), {ffn}) : Tensor::zeros({0})};
  };
  c.run = [=](const Tensors& in) {
    Tensor y = Tensor::empty({rows, ffn}, DType::F32, in[0].device());
    netops::siluMulRotatedInto(Gpu{y.device(), nullptr}, rows, ffn, parts, y.data<float>(), in[0].data<float>(),
                               rotate ? in[1].data<float>() : nullptr);
    return Tensors{y};
  };
  c.reference = [=](const Tensors& in) {
    std::vector<float> y(rows * ffn);
    const std::vector<float> d = valuesOf(in[1]);
    ref::siluMulRotatedInto(valuesOf(in[0]).data(), rotate ? d.data() : nullptr, rows, ffn, parts, y.data());
    return Tensors{host(y, {rows, ffn})};
  };
  return c;
}

}  // namespace

std::vector<Case> stepCases() {
  std::vector<Case> cases;
  for (const LogitShape& s : kShapes) cases.push_back(argmaxIntoCase(s));
  for (const LogitShape& s : kShapes) cases.push_back(candidatesIntoCase(s));
  for (auto [total, splits] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {17, 3}, {1000, 4}, {4097, 7}})
    for (bool add : {false, true}) cases.push_back(splitSumIntoCase(total, splits, add, false));
  cases.push_back(splitSumIntoCase(64 * 4096, 4, true, true));
  for (bool mapped : {false, true}) {
    for (auto [rows, width] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 17}, {37, 300}})
      cases.push_back(normRotateCase(rows, width, false, mapped, false));
    for (auto [rows, width] : {std::pair<std::int64_t, std::int64_t>{1, 256}, {9, 768}})
      cases.push_back(normRotateCase(rows, width, true, mapped, false));
  }
  cases.push_back(normRotateCase(64, 4096, true, false, true));
  for (auto [rows, ffn, parts] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 1}, {3, 17, 2}, {37, 300, 3}})
    cases.push_back(siluMulCase(rows, ffn, parts, false, false));
  for (auto [rows, ffn, parts] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 256, 1}, {9, 512, 3}})
    cases.push_back(siluMulCase(rows, ffn, parts, true, false));
  cases.push_back(siluMulCase(64, 11008, 2, true, true));
  return cases;
}

}  // namespace gizml::registry
