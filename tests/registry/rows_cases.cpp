// The row ops' cases (SPEC §3 "Affine and norms", "Losses and argmax"): widths around the 16
// lanes and their multiples, a long odd row, more rows than one GPU block (8 rows of 16 lanes),
// many rows of whole 16-byte chunks (a GPU's block a row stages them), NaN / ±inf / -0 in the data.
#include "reference/rows_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;
using test::randomFloats;
using test::withSpecials;

struct RowsShape {
  std::int64_t rows, n;
  bool typical = false;
  std::uint32_t seed() const { return static_cast<std::uint32_t>(rows * 10000 + n); }
  std::string name() const { return dims({rows, n}); }
};
const RowsShape kShapes[] = {{1, 1},   {3, 2},   {2, 15},   {3, 16},   {4, 17},   {2, 31},   {3, 255},
                             {2, 256}, {5, 257}, {7, 1000}, {2, 4097}, {37, 257}, {300, 17}, {64, 1027, true},
                             {40, 64}};

/// Random values with NaN, +inf, -inf and -0 planted (support/inputs.hpp).
Tensor specialRows(Key key, const RowsShape& s) { return host(withSpecials(key, s.rows * s.n), {s.rows, s.n}); }
Tensor randomRow(Key key, std::int64_t n) { return host(randomFloats(key, n), {n}); }
Tensor labelTensor(Key key, const RowsShape& s) {
  return Tensor::fromVector(test::randomLabels(key, s.rows, s.n), {s.rows});
}
Tensor lossTensor(double loss) { return Tensor::fromVector(std::vector<double>{loss}, {1}); }

/// A case of `op` on shape `s`; the caller fills inputs, run, reference and cut.
Case rowsCase(const std::string& op, const RowsShape& s) {
  Case c;
  c.op = op;
  c.name = s.name();
  c.typical = s.typical;
  return c;
}

Case layerNormCase(const std::string& name, Shape shape, std::int64_t rowsPerItem, bool typical) {
  Case c{.op = "layerNorm", .name = name};
  c.typical = typical;
  c.inputs = [shape] {
    const std::int64_t n = shape.back(), count = Tensor::empty(shape).numel();
    return Tensors{host(withSpecials(Key{1, static_cast<std::uint32_t>(count)}, count), shape), randomRow(Key{2, 0}, n),
                   randomRow(Key{3, 0}, n)};
  };
  c.run = [](const Tensors& in) {
    auto o = netops::layerNorm(in[0], in[1], in[2], 1e-5);
    return Tensors{o.y, o.mean, o.rstd};
  };
  c.reference = [](const Tensors& in) {
    const std::int64_t rows = in[0].rowCount(), n = in[0].rowLength();
    std::vector<float> y(rows * n), mean(rows), rstd(rows);
    ref::layerNorm(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(), 1e-5, rows, n, y.data(),
                   mean.data(), rstd.data());
    return Tensors{host(y, in[0].shape()), host(mean, {rows}), host(rstd, {rows})};
  };
  c.outputNames = {"y", "mean", "rstd"};
  c.cut = {{{0, 1}}, {{0, 1}, {1, rowsPerItem}, {2, rowsPerItem}}};
  return c;
}

Case layerNormGradCase(const RowsShape& s) {
  Case c = rowsCase("layerNormGrad", s);
  c.inputs = [s] {
    Tensor x = specialRows(Key{20, s.seed()}, s), w = randomRow(Key{22, 0}, s.n), b = randomRow(Key{23, 0}, s.n);
    std::vector<float> y(s.rows * s.n), mean(s.rows), rstd(s.rows);
    ref::layerNorm(valuesOf(x).data(), valuesOf(w).data(), valuesOf(b).data(), 1e-5, s.rows, s.n, y.data(), mean.data(),
                   rstd.data());
    return Tensors{host(randomFloats(Key{21, s.seed()}, s.rows * s.n), {s.rows, s.n}), x, w, host(mean, {s.rows}),
                   host(rstd, {s.rows})};
  };
  c.run = [](const Tensors& in) {
    auto g = netops::layerNormGrad(in[0], in[1], in[2], in[3], in[4]);
    return Tensors{g.dx, g.dweight, g.dbias};
  };
  c.reference = [](const Tensors& in) {
    const std::int64_t rows = in[0].rowCount(), n = in[0].rowLength();
    std::vector<float> dx(rows * n), dw(n), db(n);
    ref::layerNormGrad(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(), valuesOf(in[3]).data(),
                       valuesOf(in[4]).data(), rows, n, dx.data(), dw.data(), db.data());
    return Tensors{host(dx, {rows, n}), host(dw, {n}), host(db, {n})};
  };
  c.outputNames = {"dx", "dweight", "dbias"};
  c.cut = {{{0, 1}, {1, 1}, {3, 1}, {4, 1}}, {{0, 1}}};  // dweight and dbias sum over the batch
  return c;
}

Case rmsNormCase(const RowsShape& s) {
  Case c = rowsCase("rmsNorm", s);
  c.inputs = [s] { return Tensors{specialRows(Key{10, s.seed()}, s), randomRow(Key{11, 0}, s.n)}; };
  c.run = [](const Tensors& in) {
    auto o = netops::rmsNorm(in[0], in[1], 1e-6);
    return Tensors{o.y, o.rstd};
  };
  c.reference = [](const Tensors& in) {
    const std::int64_t rows = in[0].rowCount(), n = in[0].rowLength();
    std::vector<float> y(rows * n), rstd(rows);
    ref::rmsNorm(valuesOf(in[0]).data(), valuesOf(in[1]).data(), 1e-6, rows, n, y.data(), rstd.data());
    return Tensors{host(y, in[0].shape()), host(rstd, {rows})};
  };
  c.outputNames = {"y", "rstd"};
  c.cut = {{{0, 1}}, {{0, 1}, {1, 1}}};
  return c;
}

/// The cross-entropy ops' inputs: logits with specials and an I64 tensor of labels.
Case crossEntropyCase(const std::string& op, const RowsShape& s) {
  Case c = rowsCase(op, s);
  c.inputs = [s] { return Tensors{specialRows(Key{40, s.seed()}, s), labelTensor(Key{41, s.seed()}, s)}; };
  c.cut = {{{0, 1}, {1, 1}}, {{0, 1}}};
  return c;
}

Case crossEntropyLossCase(const RowsShape& s) {
  Case c = crossEntropyCase("crossEntropyLoss", s);
  c.run = [](const Tensors& in) { return Tensors{lossTensor(netops::crossEntropyLoss(in[0], labelsOf(in[1])))}; };
  c.reference = [](const Tensors& in) {
    return Tensors{
        lossTensor(ref::crossEntropyLoss(valuesOf(in[0]).data(), in[0].dim(0), in[0].dim(1), labelsOf(in[1])))};
  };
  c.cut = {};  // the mean is over the batch
  c.hostOutputs = true;
  return c;
}

Case crossEntropyRowsCase(const RowsShape& s) {
  Case c = crossEntropyCase("crossEntropyRows", s);
  c.run = [](const Tensors& in) { return Tensors{netops::crossEntropyRows(in[0], labelsOf(in[1]))}; };
  c.reference = [](const Tensors& in) {
    const std::int64_t rows = in[0].dim(0), n = in[0].dim(1);
    const auto x = valuesOf(in[0]);
    const auto labels = labelsOf(in[1]);
    std::vector<float> out(rows);
    for (std::int64_t r = 0; r < rows; ++r) out[r] = ref::crossEntropyRow(x.data() + r * n, n, labels[r]);
    return Tensors{host(out, {rows})};
  };
  return c;
}

Case crossEntropyGradCase(const RowsShape& s) {
  Case c = crossEntropyCase("crossEntropyGrad", s);
  c.run = [](const Tensors& in) { return Tensors{netops::crossEntropyGrad(in[0], labelsOf(in[1]), 0.25)}; };
  c.reference = [](const Tensors& in) {
    std::vector<float> out(in[0].numel());
    ref::crossEntropyGrad(valuesOf(in[0]).data(), in[0].dim(0), in[0].dim(1), labelsOf(in[1]), 0.25, out.data());
    return Tensors{host(out, in[0].shape())};
  };
  return c;
}

Case argmaxCase(const RowsShape& s) {
  Case c = rowsCase("Tensor.argmax", s);
  c.inputs = [s] { return Tensors{specialRows(Key{50, s.seed()}, s)}; };
  c.run = [](const Tensors& in) { return Tensors{Tensor::fromVector(in[0].argmax(), {in[0].rowCount()})}; };
  c.reference = [](const Tensors& in) {
    const std::int64_t rows = in[0].rowCount(), n = in[0].rowLength();
    const auto x = valuesOf(in[0]);
    std::vector<std::int64_t> out(rows);
    for (std::int64_t r = 0; r < rows; ++r) out[r] = ref::argmaxRow(x.data() + r * n, n);
    return Tensors{Tensor::fromVector(out, {rows})};
  };
  c.cut = {{{0, 1}}, {{0, 1}}};
  c.hostOutputs = true;  // a std::vector of indices
  return c;
}

/// One output a drop rate; the mask follows the element's index, so a batch item alone is not
/// the item in its batch (no cut).
Case dropoutCase(std::int64_t n, std::vector<double> rates, bool typical) {
  Case c{.op = "Tensor.dropout", .name = dims({n}) + " p " + [&] {
           std::string s;
           for (double p : rates) s += (s.empty() ? "" : ", ") + std::to_string(p).substr(0, 5);
           return s;
         }()};
  c.typical = typical;
  c.inputs = [n] {
    auto x = randomFloats(Key{60, static_cast<std::uint32_t>(n)}, n);
    x[n / 2] = test::kNaN;
    return Tensors{host(x, {n})};
  };
  c.run = [rates](const Tensors& in) {
    Tensors out;
    for (double p : rates) out.push_back(in[0].dropout(Key{61, 62}, p));
    return out;
  };
  c.reference = [rates](const Tensors& in) {
    Tensors out;
    for (double p : rates) {
      std::vector<float> y(in[0].numel());
      ref::dropout(valuesOf(in[0]).data(), in[0].numel(), Key{61, 62}, p, y.data());
      out.push_back(host(y, in[0].shape()));
    }
    return out;
  };
  return c;
}

}  // namespace

std::vector<Case> rowsCases() {
  std::vector<Case> cases;
  for (const RowsShape& s : kShapes) cases.push_back(layerNormCase(s.name(), {s.rows, s.n}, 1, s.typical));
  cases.push_back(layerNormCase("[2, 3, 17] leading axes are rows", {2, 3, 17}, 3, false));
  for (auto make : {layerNormGradCase, rmsNormCase, crossEntropyRowsCase, crossEntropyGradCase, argmaxCase})
    for (const RowsShape& s : kShapes) cases.push_back(make(s));
  // The mean adds crossEntropyRows' values: a few shapes suffice.
  for (const RowsShape& s : {kShapes[0], kShapes[4], kShapes[9], kShapes[11], kShapes[13]})
    cases.push_back(crossEntropyLossCase(s));
  const std::vector<double> rates = {0.0, 0.1, 0.5, 1.0 / 3.0, 0.9, 1.0};
  for (std::int64_t n : {1, 3, 4, 15, 16, 17, 63, 64, 65, 1000, 4097}) cases.push_back(dropoutCase(n, rates, false));
  cases.push_back(dropoutCase(64 * 1027, {0.2}, true));
  return cases;
}

}  // namespace gizml::registry
