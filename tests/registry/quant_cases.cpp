// The 8-bit rows' cases (SPEC §3 "Diffusion norms and 8-bit rows"): one 256-block, several blocks a
// row, more rows than one GPU block (8 rows of 16 lanes); a row with a NaN (its block of y NaN), a
// row with +inf (int8Rows: s = inf), a row of zeros with a -0 (s = 1e-30), a row of subnormals
// (codes clamped), and withSpecials' NaN / ±inf / -0.
#include <cmath>

#include "reference/norms_reference.hpp"
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
/// Rows of 33 blocks: a GPU's block a row (GIZML_CUDA_ROW_BLOCKS=1, quant/cuda.cu) gives each of its
/// 17 half-warps two blocks (the last one one).
const QuantShape kLongRows{3, 33 * 256};

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

/// x as `dtype` (F32, or BF16: the values rounded once); through hadamardRowsInto where `into`.
Case hadamardRowsCase(const std::string& name, Shape shape, bool typical, DType dtype = DType::F32, bool into = false) {
  Case c{.op = into ? "hadamardRowsInto" : "hadamardRows", .name = name};
  c.typical = typical;
  c.inputs = [shape, dtype] {
    const std::int64_t n = shape.back(), rows = Tensor::empty(shape).numel() / n;
    return Tensors{quantRows(Key{1, static_cast<std::uint32_t>(rows * n)}, rows, n).reshape(shape).to(dtype)};
  };
  c.run = [into](const Tensors& in) {
    if (!into) return Tensors{netops::hadamardRows(in[0])};
    Tensors out{Tensor::empty(in[0].shape(), DType::F32, in[0].device())};
    netops::hadamardRowsInto(in[0], out[0]);
    return out;
  };
  c.reference = [](const Tensors& in) {
    std::vector<float> y(in[0].numel());
    ref::hadamardRows(valuesOf(in[0]).data(), in[0].rowCount(), in[0].rowLength(), y.data());
    return Tensors{host(y, in[0].shape())};
  };
  c.outputNames = {"y"};
  c.cut = {{{0, 1}}, {{0, 1}}};
  return c;
}

/// int8Rows (or int8RowsInto, `into`) at `bits`, x as `dtype`; outputs q and s.
Case int8RowsCase(const QuantShape& s, int bits, bool into, DType dtype = DType::F32) {
  Case c{.op = into ? "int8RowsInto" : "int8Rows",
         .name = s.name() + " bits " + std::to_string(bits) + (dtype == DType::BF16 ? " BF16 x" : "")};
  c.typical = s.typical && bits == 8 && dtype == DType::F32;
  c.inputs = [s, dtype] { return Tensors{quantRows(Key{2, s.seed()}, s.rows, s.n).to(dtype)}; };
  c.run = [bits, into](const Tensors& in) {
    if (!into) {
      auto o = netops::int8Rows(in[0], bits);
      return Tensors{o.q, o.s};
    }
    const DType codes = in[0].device().isHost() ? DType::F32 : bits == 8 ? DType::I8 : DType::I4;
    Tensors out{Tensor::empty(in[0].shape(), codes, in[0].device()),
                Tensor::empty({in[0].dim(0), 1}, DType::F32, in[0].device())};
    netops::int8RowsInto(in[0], out[0], out[1], bits);
    return out;
  };
  c.reference = [bits](const Tensors& in) {
    const std::int64_t rows = in[0].dim(0), n = in[0].dim(1);
    std::vector<float> q(rows * n), scale(rows);
    ref::int8Rows(valuesOf(in[0]).data(), rows, n, bits, q.data(), scale.data());
    return Tensors{host(q, {rows, n}), host(scale, {rows, 1})};
  };
  c.outputNames = {"q", "s"};
  c.gpu = GpuCompare::ValuesAsFloats;  // the GPU's I8 / I4 codes against the host's F32 integers
  c.cut = {{{0, 1}}, {{0, 1}, {1, 1}}};
  return c;
}

/// modulatedInt8RowsInto {x, w, shift, scale, map} (3 modulations, row r takes (5 r) % 3); outputs
/// q, s and, `withY`, the BF16 rows.
Case modulatedInt8RowsCase(const QuantShape& s, int bits, bool centered, bool withY) {
  Case c{.op = "modulatedInt8RowsInto",
         .name = s.name() + " bits " + std::to_string(bits) + (centered ? " centered" : " rms") + (withY ? " y" : "")};
  c.typical = s.typical && bits == 8 && !centered && withY;
  const std::int64_t mods = 3;
  c.inputs = [s] {
    std::vector<float> map(s.rows);
    for (std::int64_t r = 0; r < s.rows; ++r) map[r] = static_cast<float>((5 * r) % mods);
    return Tensors{quantRows(Key{3, s.seed()}, s.rows, s.n), host(test::randomFloats(Key{4, 0}, s.n), {s.n}),
                   host(test::randomFloats(Key{5, 0}, mods * s.n, 0.1f), {mods, s.n}),
                   host(test::randomFloats(Key{6, 0}, mods * s.n, 0.1f), {mods, s.n}), host(map, {s.rows})};
  };
  c.run = [bits, centered, withY](const Tensors& in) {
    const Device d = in[0].device();
    const DType codes = d.isHost() ? DType::F32 : bits == 8 ? DType::I8 : DType::I4;
    Tensors out{Tensor::empty(in[0].shape(), codes, d), Tensor::empty({in[0].dim(0), 1}, DType::F32, d)};
    if (withY) out.push_back(Tensor::empty(in[0].shape(), DType::BF16, d));
    netops::modulatedInt8RowsInto(in[0], in[1], in[2], in[3], in[4], 1e-6, withY ? out[2] : Tensor(), out[0], out[1],
                                  centered, bits);
    return out;
  };
  c.reference = [bits, centered, withY](const Tensors& in) {  // modulatedNorm, rounded to BF16, then int8Rows
    const std::int64_t rows = in[0].dim(0), n = in[0].dim(1);
    std::vector<float> y(rows * n), q(rows * n), scale(rows);
    ref::modulatedNorm(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(), valuesOf(in[3]).data(),
                       valuesOf(in[4]).data(), 1e-6, centered, rows, n, y.data());
    const Tensor yBF16 = host(y, {rows, n}).to(DType::BF16);
    ref::int8Rows(valuesOf(yBF16).data(), rows, n, bits, q.data(), scale.data());
    Tensors out{host(q, {rows, n}), host(scale, {rows, 1})};
    if (withY) out.push_back(yBF16);
    return out;
  };
  c.outputNames = {"q", "s", "y"};
  c.gpu = GpuCompare::ValuesAsFloats;
  c.cut = {{{0, 1}, {4, 1}}, {{0, 1}, {1, 1}}};
  if (withY) c.cut.outputs.push_back({2, 1});
  return c;
}

/// int8RowsProduct's operands: qa [m, k] and qb [n, k] random codes (F32 integers in [-128, 127],
/// or [-8, 7] for 4 bits), with, where there are rows enough, a row of qa and one of qb all -128
/// (-8): their sum 16384 k (64 k) is beyond 2^24 for k >= 1024 at 8 bits, so F32(sum) rounds;
/// sa [m, 1] and sb [n, 1] positive scales with a +0 and an inf (0 inf = NaN) where there are rows.
struct ProductShape {
  std::int64_t m, n, k;
  bool typical = false;
  std::string name() const {
    return "[" + std::to_string(m) + ", " + std::to_string(k) + "] x [" + std::to_string(n) + ", " + std::to_string(k) +
           "]";
  }
};
// The host has two forms (product_host.cpp): few rows of a (at most 8 with AVX-512, 4 with AVX2;
// with I4 weights 32 and 8) take the dot products, more the panels; [3, 5] and [7, 6] cut the dot
// form's blocks, and every kind of code and output, and a bias, runs in both forms at 8192 (the
// panels' blocks of k) and below. A GPU has three (product_cuda.cu): a warp a column for at
// most 8 rows of a ([8, 33] x 4352: its most rows, a lane's steps of k in two passes, the second
// partial); above, with I8 codes in qa (I8 or I4 in qb), pipelined tiles of 64 x 128, or 128 x 128
// where they are at least one a multiprocessor (the simulator has 4: [200, 300] x 512, ragged both
// ways); with I4 codes in qa tiles of 64 x 64.
const ProductShape kProductShapes[] = {{1, 1, 256},    {3, 5, 512},     {7, 6, 512},    {64, 64, 256},
                                       {65, 70, 768},  {100, 70, 768},  {17, 130, 1024}, {3, 5, 8192},
                                       {100, 5, 8192}, {128, 256, 3072, true}, {8, 33, 4352}, {200, 300, 512}};

Tensor productCodes(Key key, std::int64_t rows, std::int64_t k, int bits) {
  const float most = bits == 8 ? 128.0f : 8.0f;
  std::vector<float> v(static_cast<std::size_t>(rows * k));
  for (std::int64_t i = 0; i < rows * k; ++i)  // uniform over [-most, most - 1], a zero +0
    v[i] = std::fmin(std::floor(key.uniform(static_cast<std::uint64_t>(i)) * 2.0f * most) - most, most - 1.0f) + 0.0f;
  if (rows >= 3)
    for (std::int64_t p = 0; p < k; ++p) v[2 * k + p] = -most;
  return host(v, {rows, k});
}
Tensor productScales(Key key, std::int64_t rows) {
  std::vector<float> v(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) v[i] = 0.001f + 0.01f * key.uniform(static_cast<std::uint64_t>(i));
  if (rows >= 4) v[3] = 0.0f;
  if (rows >= 5) v[4] = test::kInf;
  return host(v, {rows, 1});
}

/// How a product case runs: int8RowsProductInto where `into`, into an `out` of dtype `out`; qb
/// 4-bit (I4) whatever qa is where `mixed`, qa 4-bit whatever qb is where `mixedA`; with a bias
/// where `bias`.
struct ProductOptions {
  bool into = false, mixed = false, mixedA = false, bias = false;
  DType out = DType::F32;
};

/// A bias [n]: uniform in [-1, 1), with a -0 where there are 2 columns, and a -inf at column 4,
/// whose scale sb is inf (productScales): NaN where the product is +inf, -inf where it is -inf.
Tensor productBias(Key key, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) v[j] = 2.0f * key.uniform(static_cast<std::uint64_t>(j)) - 1.0f;
  if (n >= 2) v[1] = -0.0f;
  if (n >= 5) v[4] = -test::kInf;
  return host(v, {n});
}

/// int8RowsProduct (options as `o`) at `bits` a code, the codes held as `codes` on every device, or
/// (DType::F32) as int8Rows gives them: F32 on the host, I8 / I4 on a GPU.
Case int8RowsProductCase(const ProductShape& s, int bits, DType codes, ProductOptions o = {}) {
  Case c{.op = o.into ? "int8RowsProductInto" : "int8RowsProduct",
         .name = s.name() + " bits " + std::to_string(bits) + (codes == DType::F32 ? "" : " " + dtypeName(codes)) +
                 (o.mixed ? ", qb I4" : "") + (o.mixedA ? ", qa I4" : "") + (o.out == DType::F32 ? "" : ", out " + dtypeName(o.out)) +
                 (o.bias ? ", bias" : "")};
  c.typical =
      s.typical && bits == 8 && codes == DType::F32 && !o.mixed && !o.mixedA && o.out == DType::F32 && !o.bias;
  c.inputs = [s, bits, o] {
    const auto seed = static_cast<std::uint32_t>(s.m * 1000 + s.n);
    Tensors in{productCodes(Key{7, seed}, s.m, s.k, o.mixedA ? 4 : bits), productScales(Key{8, seed}, s.m),
               productCodes(Key{9, seed}, s.n, s.k, o.mixed ? 4 : bits), productScales(Key{10, seed}, s.n)};
    if (o.bias) in.push_back(productBias(Key{11, seed}, s.n));
    return in;
  };
  c.run = [bits, codes, o](const Tensors& in) {
    const bool onHost = in[0].device().isHost();
    const auto held = [&](const Tensor& q, int b) {
      const DType want = codes != DType::F32 ? codes : onHost ? DType::F32 : b == 8 ? DType::I8 : DType::I4;
      return q.dtype() == want ? q : q.to(want);
    };
    const Tensor qa = o.mixedA ? in[0].to(DType::I4) : held(in[0], bits);
    const Tensor qb = o.mixed ? in[2].to(DType::I4) : held(in[2], bits);
    const Tensor bias = o.bias ? in[4] : Tensor();
    if (!o.into) return Tensors{netops::int8RowsProduct(qa, in[1], qb, in[3], bias)};
    Tensors out{Tensor::empty({in[0].dim(0), in[2].dim(0)}, o.out, in[0].device())};
    netops::int8RowsProductInto(qa, in[1], qb, in[3], out[0], bias);
    return out;
  };
  c.reference = [o](const Tensors& in) {
    const std::int64_t m = in[0].dim(0), n = in[2].dim(0), k = in[0].dim(1);
    std::vector<float> out(m * n);
    const std::vector<float> bias = o.bias ? valuesOf(in[4]) : std::vector<float>();
    ref::int8RowsProduct(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(),
                         valuesOf(in[3]).data(), o.bias ? bias.data() : nullptr, m, n, k, out.data());
    return Tensors{host(out, {m, n}).to(o.out)};  // BF16: the F32 value rounded once
  };
  c.outputNames = {"out"};
  c.cut = {{{0, 1}, {1, 1}}, {{0, 1}}};  // a row of qa (and its scale) alone: that row of out
  return c;
}

}  // namespace

std::vector<Case> quantCases() {
  std::vector<Case> cases;
  for (const QuantShape& s : kShapes) cases.push_back(hadamardRowsCase(s.name(), {s.rows, s.n}, s.typical));
  cases.push_back(hadamardRowsCase("[2, 3, 512] leading axes are rows", {2, 3, 512}, false));
  cases.push_back(hadamardRowsCase("[17, 1024] BF16 x", {17, 1024}, false, DType::BF16));
  for (const QuantShape& s : {kShapes[0], kShapes[5], kShapes[6]})
    cases.push_back(hadamardRowsCase(s.name(), {s.rows, s.n}, s.typical, DType::F32, true));
  cases.push_back(hadamardRowsCase("[17, 1024] BF16 x", {17, 1024}, false, DType::BF16, true));
  for (int bits : {8, 4})
    for (const QuantShape& s : kShapes) cases.push_back(int8RowsCase(s, bits, false));
  for (int bits : {8, 4}) cases.push_back(int8RowsCase(kShapes[5], bits, false, DType::BF16));
  for (int bits : {8, 4})
    for (const QuantShape& s : {kShapes[0], kShapes[5], kShapes[6]}) cases.push_back(int8RowsCase(s, bits, true));
  for (int bits : {8, 4})
    for (bool centered : {false, true})
      for (const QuantShape& s : {kShapes[0], kShapes[2], kShapes[5]})
        cases.push_back(modulatedInt8RowsCase(s, bits, centered, s.rows > 2));
  cases.push_back(modulatedInt8RowsCase(kShapes[6], 8, false, true));
  cases.push_back(int8RowsCase(kLongRows, 8, false));
  cases.push_back(int8RowsCase(kLongRows, 4, false, DType::BF16));
  cases.push_back(modulatedInt8RowsCase(kLongRows, 8, true, true));
  for (const ProductShape& s : kProductShapes) cases.push_back(int8RowsProductCase(s, 8, DType::F32));
  for (const ProductShape& s : {kProductShapes[1], kProductShapes[2], kProductShapes[4], kProductShapes[5],
                                kProductShapes[6], kProductShapes[7], kProductShapes[8], kProductShapes[10],
                                kProductShapes[11]}) {
    cases.push_back(int8RowsProductCase(s, 8, DType::I8));
    cases.push_back(int8RowsProductCase(s, 4, DType::F32));
    cases.push_back(int8RowsProductCase(s, 4, DType::I4));
    cases.push_back(int8RowsProductCase(s, 8, DType::I8, {.mixed = true}));
  }
  // 4-bit activations against 8-bit weights: the dot form, and above it a GPU's register-staged
  // tiles (which take I4 in qa; the pipelined ones I8).
  for (const ProductShape& s : {kProductShapes[1], kProductShapes[4], kProductShapes[10], kProductShapes[11]})
    cases.push_back(int8RowsProductCase(s, 8, DType::I8, {.mixedA = true}));
  for (const ProductShape& s : {kProductShapes[4], kProductShapes[9]})
    cases.push_back(int8RowsProductCase(s, 8, DType::F32, {.into = true}));
  // BF16 out: the panels then take all of k in one block.
  for (const ProductShape& s : {kProductShapes[4], kProductShapes[5], kProductShapes[7], kProductShapes[8]})
    cases.push_back(int8RowsProductCase(s, 8, DType::I8, {.into = true, .out = DType::BF16}));
  // A bias: in both forms, over blocks of k, and rounded to BF16 with the product.
  for (const ProductShape& s :
       {kProductShapes[1], kProductShapes[2], kProductShapes[4], kProductShapes[5], kProductShapes[8],
        kProductShapes[10], kProductShapes[11]})
    cases.push_back(int8RowsProductCase(s, 8, DType::F32, {.bias = true}));
  for (const ProductShape& s : {kProductShapes[4], kProductShapes[5]})
    cases.push_back(int8RowsProductCase(s, 4, DType::I4, {.into = true, .bias = true, .out = DType::BF16}));
  return cases;
}

}  // namespace gizml::registry
