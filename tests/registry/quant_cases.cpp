// The 8-bit rows' cases (SPEC §3 "Diffusion norms and 8-bit rows"): one 256-block, several blocks a
// row, more rows than one GPU block (8 rows of 16 lanes); a row with a NaN (its block of y NaN), a
// row with +inf, a row of zeros with a -0, a row of subnormals, and withSpecials' NaN / ±inf / -0.
#include "reference/quant_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;

struct QuantShape {
  std::int64_t rows, n;
  bool typical = false;
  std::uint32_t seed() const { return static_cast<std::uint32_t>(rows * 10000 + n); }
  std::string name() const { return dims({rows, n}); }
};
const QuantShape kShapes[] = {{1, 256}, {2, 512}, {3, 768}, {6, 256}, {9, 512}, {17, 1024}, {64, 3072, true}};

/// withSpecials' values, and in rows 1 .. 4 (where there are): a NaN in block 0, +inf, zeros with
/// a -0, values around 1e-39 (subnormals).
Tensor quantRows(Key key, std::int64_t rows, std::int64_t n) {
  auto v = test::withSpecials(key, rows * n);
  if (rows >= 2) v[n + 7] = test::kNaN;
  if (rows >= 3) v[2 * n + n / 2] = test::kInf;
  if (rows >= 4)
    for (std::int64_t i = 0; i < n; ++i) v[3 * n + i] = i == 5 ? -0.0f : 0.0f;
  if (rows >= 5)
    for (std::int64_t i = 0; i < n; ++i) v[4 * n + i] = (i % 7 - 3) * 1e-39f;
  return host(v, {rows, n});
}

Case hadamardRowsCase(const std::string& name, Shape shape, bool typical) {
  Case c{.op = "hadamardRows", .name = name};
  c.typical = typical;
  c.inputs = [shape] {
    const std::int64_t n = shape.back(), rows = Tensor::empty(shape).numel() / n;
    return Tensors{quantRows(Key{1, static_cast<std::uint32_t>(rows * n)}, rows, n).reshape(shape)};
  };
  c.run = [](const Tensors& in) { return Tensors{netops::hadamardRows(in[0])}; };
  c.reference = [](const Tensors& in) {
    std::vector<float> y(in[0].numel());
    ref::hadamardRows(valuesOf(in[0]).data(), in[0].rowCount(), in[0].rowLength(), y.data());
    return Tensors{host(y, in[0].shape())};
  };
  c.outputNames = {"y"};
  c.cut = {{{0, 1}}, {{0, 1}}};
  return c;
}

}  // namespace

std::vector<Case> quantCases() {
  std::vector<Case> cases;
  for (const QuantShape& s : kShapes) cases.push_back(hadamardRowsCase(s.name(), {s.rows, s.n}, s.typical));
  cases.push_back(hadamardRowsCase("[2, 3, 512] leading axes are rows", {2, 3, 512}, false));
  return cases;
}

}  // namespace gizml::registry
