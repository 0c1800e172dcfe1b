// The Lazy products' cases (SPEC §2 Lazy, §3 affine, patchRows, lazyConv, lazyConv3): shapes
// around the host's 6 x 64 register block and 256- to 512-step k blocks and the GPU's 64 x 64 tiles, k = 0,
// m over many tiles, every epilogue step and output dtype, and the BF16 / F16 matrix-core paths.
#include "reference/lazy_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;
using Op = Lazy::Op;
using test::randomFloats;

struct GemmShape {
  std::int64_t m, n, k;
  std::string name() const { return std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k); }
};
const GemmShape kGemmShapes[] = {{1, 1, 1},     {1, 1, 0},      {3, 5, 0},      {2, 3, 7},     {6, 64, 256},
                                 {7, 65, 257},  {5, 63, 255},   {12, 128, 512}, {14, 32, 256}, {15, 33, 257},
                                 {13, 31, 255}, {29, 65, 513},  {1, 100, 40},   {100, 1, 40},  {64, 64, 64},
                                 {65, 63, 129}, {150, 97, 700}, {4500, 5, 33}};
const GemmShape kTypicalGemm{128, 256, 512};

/// A [m, k] operand with NaN, ±inf and -0 planted, and -1e-30 (times another tiny value: an
/// exact product that rounds to -0, so a chain can hold -0).
Tensor specialOperand(Key key, std::int64_t rows, std::int64_t cols) {
  auto v = rows * cols > 100 ? test::withSpecials(key, rows * cols) : randomFloats(key, rows * cols);
  if (v.size() > 8) {
    v[1] = -1e-30f;
    v[2] = -0.0f;
  }
  return host(v, {rows, cols});
}
Tensor randomTensor(Key key, const Shape& shape, float scale = 1.0f) {
  return host(randomFloats(key, Tensor::empty(shape).numel(), scale), shape);
}

std::vector<float> referenceProduct(const std::vector<float>& a, const std::vector<float>& w, std::int64_t m,
                                    std::int64_t n, std::int64_t k) {
  std::vector<float> out(m * n);
  ref::matmul(a.data(), w.data(), m, n, k, out.data());
  return out;
}

/// A case of a product's output [m, n] cut by a's rows (and by the residual's, input 3).
Case productCase(const std::string& op, const std::string& name, bool residual = false) {
  Case c{.op = op, .name = name};
  c.cut = {{{0, 1}}, {{0, 1}}};
  if (residual) c.cut.inputs.push_back({3, 1});
  return c;
}

Case matmulCase(const GemmShape& s, bool typical) {
  Case c = productCase("lazyMatmul", s.name());
  c.typical = typical;
  c.inputs = [s] {
    return Tensors{specialOperand(Key{1, static_cast<std::uint32_t>(s.k)}, s.m, s.k),
                   randomTensor(Key{2, static_cast<std::uint32_t>(s.n)}, {s.n, s.k})};
  };
  c.run = [](const Tensors& in) { return Tensors{lazyMatmul(in[0], in[1]).store()}; };
  c.reference = [](const Tensors& in) {
    const std::int64_t m = in[0].dim(0), n = in[1].dim(0), k = in[0].dim(1);
    return Tensors{host(referenceProduct(valuesOf(in[0]), valuesOf(in[1]), m, n, k), {m, n})};
  };
  return c;
}

/// The epilogue in the order given, stored as F32, BF16 and (through storeInto) F16: inputs
/// a [m, k], w [n, k], bias [n], residual [m, n].
Case epilogueCase(const GemmShape& s, const std::string& chainName, std::vector<Op> chain) {
  Case c = productCase("lazyMatmul", s.name() + " " + chainName, true);
  c.outputNames = {"F32", "BF16", "F16 (storeInto)"};
  c.cut.outputs = {{0, 1}, {1, 1}, {2, 1}};
  c.inputs = [s] {
    return Tensors{specialOperand(Key{9, static_cast<std::uint32_t>(s.k)}, s.m, s.k),
                   randomTensor(Key{10, 10}, {s.n, s.k}, 0.5f), randomTensor(Key{11, 11}, {s.n}),
                   randomTensor(Key{12, 12}, {s.m, s.n})};
  };
  c.run = [chain](const Tensors& in) {
    Lazy l = lazyMatmul(in[0], in[1]);
    for (Op op : chain) {
      if (op == Op::Bias) l.bias(in[2]);
      if (op == Op::Scale) l.scale(0.75);
      if (op == Op::Silu) l.silu();
      if (op == Op::Gelu) l.gelu();
      if (op == Op::Relu) l.relu();
      if (op == Op::Residual) l.residual(in[3]);
    }
    Tensor f32 = l.store(), bf16 = l.dtype(DType::BF16).store();
    Tensor f16 = Tensor::zeros(l.shape(), DType::F16, in[0].device());
    l.dtype(DType::F16).storeInto(f16);
    return Tensors{f32, bf16, f16};
  };
  c.reference = [chain](const Tensors& in) {
    const std::int64_t m = in[0].dim(0), n = in[1].dim(0), k = in[0].dim(1);
    auto out = referenceProduct(valuesOf(in[0]), valuesOf(in[1]), m, n, k);
    const auto b = valuesOf(in[2]), r = valuesOf(in[3]);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (Op op : chain)
          out[i * n + j] = ref::epilogueStep(op, out[i * n + j],
                                             op == Op::Bias       ? b[j]
                                             : op == Op::Residual ? r[i * n + j]
                                                                  : 0.0f,
                                             0.75f);
    Tensor f32 = host(out, {m, n});
    return Tensors{f32, f32.to(DType::BF16), f32.to(DType::F16)};
  };
  return c;
}

/// BF16 / F16 compute: matrix cores on a GPU (within `tolerance` of the host), and on the host
/// the exact chain over the operands rounded to `compute`.
Case roundedComputeCase(const GemmShape& s, DType compute) {
  Case c = productCase("lazyMatmul", s.name() + " compute " + dtypeName(compute));
  c.gpu = GpuCompare::Tolerance;
  c.tolerance = 1e-3;
  c.inputs = [s] { return Tensors{randomTensor(Key{35, 35}, {s.m, s.k}), randomTensor(Key{36, 36}, {s.n, s.k})}; };
  c.run = [compute](const Tensors& in) { return Tensors{lazyMatmul(in[0], in[1], compute).store()}; };
  c.reference = [compute](const Tensors& in) {
    const std::int64_t m = in[0].dim(0), n = in[1].dim(0), k = in[0].dim(1);
    return Tensors{host(
        referenceProduct(roundedTo(valuesOf(in[0]), compute), roundedTo(valuesOf(in[1]), compute), m, n, k), {m, n})};
  };
  return c;
}

Case affineCase(const GemmShape& s, bool typical) {
  Case c = productCase("affine", s.name());
  c.typical = typical;
  c.inputs = [s] {
    return Tensors{specialOperand(Key{13, 13}, s.m, s.k), randomTensor(Key{14, 14}, {s.n, s.k}),
                   randomTensor(Key{15, 15}, {s.n})};
  };
  c.run = [](const Tensors& in) { return Tensors{netops::affine(in[0], in[1], in[2])}; };
  c.reference = [](const Tensors& in) {
    const std::int64_t m = in[0].dim(0), n = in[1].dim(0), k = in[0].dim(1);
    auto out = referenceProduct(valuesOf(in[0]), valuesOf(in[1]), m, n, k);
    const auto b = valuesOf(in[2]);
    for (std::int64_t i = 0; i < m * n; ++i) out[i] = ref::epilogueStep(Op::Bias, out[i], b[i % n], 0.0f);
    return Tensors{host(out, {m, n})};
  };
  return c;
}

// ---- convolutions ------------------------------------------------------------------------------------

struct ConvShape {
  std::int64_t o, c, h, w, kh, kw, pad;
  bool typical = false;
  std::int64_t oh() const { return h + 2 * pad - kh + 1; }
  std::int64_t ow() const { return w + 2 * pad - kw + 1; }
  std::string name() const {
    return std::to_string(o) + "<-" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) + " k" +
           std::to_string(kh) + "x" + std::to_string(kw) + " pad " + std::to_string(pad);
  }
};
const ConvShape kConvShapes[] = {{1, 1, 1, 1, 1, 1, 0}, {3, 2, 5, 7, 3, 3, 1}, {8, 3, 9, 9, 3, 3, 1},
                                 {5, 4, 6, 5, 2, 3, 0}, {4, 2, 4, 4, 5, 5, 2}, {17, 5, 11, 13, 3, 3, 1},
                                 {2, 1, 3, 3, 3, 3, 0}, {6, 3, 8, 2, 1, 1, 0}, {64, 32, 32, 32, 3, 3, 1, true}};

Tensor image(Key key, const ConvShape& s) { return host(test::withSpecials(key, s.c * s.h * s.w), {s.c, s.h, s.w}); }

/// patchRows of every row, of the second half, and of none; as F32, then as BF16.
Case patchRowsCase(const ConvShape& s) {
  Case c{.op = "patchRows", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] { return Tensors{image(Key{20, 20}, s)}; };
  auto ranges = [s](const Tensor& x) {
    const std::int64_t oh = x.dim(1) + 2 * s.pad - s.kh + 1;
    return std::vector<std::pair<std::int64_t, std::int64_t>>{{0, oh}, {oh / 2, oh}, {0, 0}};
  };
  c.run = [s, ranges](const Tensors& in) {
    Tensors out;
    for (DType dtype : {DType::F32, DType::BF16})
      for (auto [r0, r1] : ranges(in[0])) out.push_back(netops::patchRows(in[0], s.kh, s.kw, s.pad, r0, r1, dtype));
    return out;
  };
  c.reference = [s, ranges](const Tensors& in) {
    Tensors out;
    for (DType dtype : {DType::F32, DType::BF16})
      for (auto [r0, r1] : ranges(in[0])) {
        std::vector<float> p(s.c * s.kh * s.kw * (r1 - r0) * s.ow());
        ref::patchRows(valuesOf(in[0]).data(), s.c, s.h, s.w, s.kh, s.kw, s.pad, r0, r1, p.data());
        out.push_back(host(p, {s.c * s.kh * s.kw, (r1 - r0) * s.ow()}).to(dtype));
      }
    return out;
  };
  return c;
}

std::vector<float> referenceConv(const std::vector<float>& w, const std::vector<float>& x, const ConvShape& s) {
  std::vector<float> out(s.o * s.oh() * s.ow());
  ref::conv(w.data(), x.data(), s.o, s.c, s.h, s.w, s.kh, s.kw, s.pad, out.data());
  return out;
}

/// lazyConv(w, x).bias(b).silu(): inputs w [o, c kh kw], x [c, h, w], b [o].
Case lazyConvCase(const ConvShape& s) {
  Case c{.op = "lazyConv", .name = s.name() + " bias silu"};
  c.typical = s.typical;
  c.inputs = [s] {
    return Tensors{randomTensor(Key{22, 22}, {s.o, s.c * s.kh * s.kw}, 0.3f), image(Key{21, 21}, s),
                   randomTensor(Key{23, 23}, {s.o})};
  };
  c.run = [s](const Tensors& in) {
    return Tensors{lazyConv(in[0], in[1], s.kh, s.kw, s.pad).bias(in[2]).silu().store()};
  };
  c.reference = [s](const Tensors& in) {
    auto out = referenceConv(valuesOf(in[0]), valuesOf(in[1]), s);
    const auto b = valuesOf(in[2]);
    const std::int64_t pixels = s.oh() * s.ow();
    for (std::int64_t i = 0; i < s.o * pixels; ++i)
      out[i] = ref::epilogueStep(Op::Silu, ref::epilogueStep(Op::Bias, out[i], b[i / pixels], 0.0f), 0.0f, 0.0f);
    return Tensors{host(out, {s.o, pixels})};
  };
  return c;
}

/// BF16 compute: the implicit GEMM on matrix cores on a GPU; the rounded operands' exact chain on
/// the host.
Case lazyConvBF16Case(const ConvShape& s) {
  Case c{.op = "lazyConv", .name = s.name() + " compute BF16"};
  c.gpu = GpuCompare::Tolerance;
  c.tolerance = 1e-2;
  c.inputs = [s] {
    return Tensors{randomTensor(Key{38, 38}, {s.o, s.c * s.kh * s.kw}, 0.1f),
                   randomTensor(Key{37, 37}, {s.c, s.h, s.w})};
  };
  c.run = [s](const Tensors& in) { return Tensors{lazyConv(in[0], in[1], s.kh, s.kw, s.pad, DType::BF16).store()}; };
  c.reference = [s](const Tensors& in) {
    return Tensors{
        host(referenceConv(roundedTo(valuesOf(in[0]), DType::BF16), roundedTo(valuesOf(in[1]), DType::BF16), s),
             {s.o, s.oh() * s.ow()})};
  };
  return c;
}

/// lazyConv3(w, x).bias(b): each of the n frames is the 3 x 3 conv, pad 1, of frames t .. t + 2.
/// x holds BF16 values; the host computes in F32 (exact), a GPU on matrix cores (fast).
Case lazyConv3Case(std::int64_t n, std::int64_t ch, std::int64_t h, std::int64_t w, std::int64_t o, bool typical) {
  Case c{.op = "lazyConv3", .name = "x " + dims({n + 2, ch, h, w}) + " o " + std::to_string(o)};
  c.typical = typical;
  c.gpu = GpuCompare::Tolerance;
  c.tolerance = 1e-2;
  c.inputs = [=] {
    return Tensors{randomTensor(Key{25, 25}, {o, 27 * ch}, 0.2f),
                   randomTensor(Key{24, 24}, {n + 2, ch, h, w}).to(DType::BF16), randomTensor(Key{26, 26}, {o})};
  };
  c.run = [](const Tensors& in) { return Tensors{lazyConv3(in[0], in[1]).bias(in[2]).store()}; };
  c.reference = [=](const Tensors& in) {
    const auto wv = valuesOf(in[0]), x = valuesOf(in[1]), b = valuesOf(in[2]);
    const ConvShape frame{o, 3 * ch, h, w, 3, 3, 1};
    std::vector<float> out;
    for (std::int64_t t = 0; t < n; ++t) {
      auto f =
          referenceConv(wv, std::vector<float>(x.begin() + t * ch * h * w, x.begin() + (t + 3) * ch * h * w), frame);
      for (std::int64_t i = 0; i < o * h * w; ++i) f[i] = ref::epilogueStep(Op::Bias, f[i], b[i / (h * w)], 0.0f);
      out.insert(out.end(), f.begin(), f.end());
    }
    return Tensors{host(out, {n, o, h * w})};
  };
  return c;
}

}  // namespace

std::vector<Case> gemmCases() {
  std::vector<Case> cases;
  for (const GemmShape& s : kGemmShapes) cases.push_back(matmulCase(s, false));
  cases.push_back(matmulCase(kTypicalGemm, true));
  const std::pair<std::string, std::vector<Op>> chains[] = {
      {"bias", {Op::Bias}},
      {"bias silu", {Op::Bias, Op::Silu}},
      {"scale gelu residual", {Op::Scale, Op::Gelu, Op::Residual}},
      {"relu bias scale", {Op::Relu, Op::Bias, Op::Scale}},
      {"residual silu gelu relu", {Op::Residual, Op::Silu, Op::Gelu, Op::Relu}},
      {"gelu", {Op::Gelu}}};
  for (const auto& [name, chain] : chains) cases.push_back(epilogueCase({7, 37, 19}, name, chain));
  for (const GemmShape& s : {GemmShape{1, 1, 0}, GemmShape{65, 63, 129}, GemmShape{300, 70, 40}})
    cases.push_back(epilogueCase(s, "bias gelu", {Op::Bias, Op::Gelu}));
  // Several k blocks and column blocks of the host's blocking: the chains between k blocks wait
  // in the F32 output, or in a thread's own block for a 16-bit one.
  cases.push_back(epilogueCase({29, 530, 1100}, "bias gelu residual", {Op::Bias, Op::Gelu, Op::Residual}));
  for (const GemmShape& s :
       {GemmShape{64, 64, 64}, GemmShape{100, 70, 333}, GemmShape{1, 8, 16}, GemmShape{256, 256, 512}})
    for (DType compute : {DType::BF16, DType::F16}) cases.push_back(roundedComputeCase(s, compute));
  for (const GemmShape& s : {GemmShape{1, 1, 0}, GemmShape{33, 17, 65}, GemmShape{4500, 5, 33}})
    cases.push_back(affineCase(s, false));
  cases.push_back(affineCase({67, 93, 301}, true));
  for (const ConvShape& s : kConvShapes) {
    cases.push_back(patchRowsCase(s));
    cases.push_back(lazyConvCase(s));
  }
  cases.push_back(lazyConvBF16Case({64, 64, 20, 24, 3, 3, 1}));
  cases.push_back(lazyConv3Case(3, 2, 5, 6, 4, false));
  cases.push_back(lazyConv3Case(2, 8, 6, 7, 16, true));
  return cases;
}

}  // namespace gizml::registry
