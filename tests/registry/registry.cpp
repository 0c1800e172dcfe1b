#include "registry/registry.hpp"

#include <cmath>
#include <sstream>

#include "support/bits.hpp"

namespace gizml::registry {

std::string Case::testName() const {
  std::string out;
  for (char ch : title()) {
    const bool word = std::isalnum(static_cast<unsigned char>(ch));
    if (word)
      out += ch;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

const std::vector<Case>& allCases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> all;
    for (auto family : {rowsCases, gemmCases, convCases, poolCases, attentionCases, normsCases, quantCases, stepCases,
                        gradCases})
      for (Case& c : family()) all.push_back(std::move(c));
    return all;
  }();
  return cases;
}

Tensors onDevice(const Tensors& tensors, Device device) {
  Tensors out;
  for (const Tensor& t : tensors) out.push_back(t.to(device));
  return out;
}

std::string exactDifference(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return "shape " + shapeString(got.shape()) + ", want " + shapeString(want.shape());
  if (got.dtype() != want.dtype()) return "dtype " + dtypeName(got.dtype()) + ", want " + dtypeName(want.dtype());
  if (got.dtype() == DType::F64) return test::bitDifference(got.toVector<double>(), want.toVector<double>());
  return test::bitDifference(got.toFloats(), want.toFloats());
}

namespace {
double relativeL2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}
}  // namespace

std::string gpuOutputDifference(const Case& c, const Tensor& gpu, const Tensor& host) {
  switch (c.gpu) {
    case GpuCompare::Exact:
      return exactDifference(gpu, host);
    case GpuCompare::HostRoundedToBF16:
      return exactDifference(gpu, host.to(DType::BF16));
    case GpuCompare::ValuesAsFloats:
      if (gpu.shape() != host.shape())
        return "shape " + shapeString(gpu.shape()) + ", want " + shapeString(host.shape());
      return test::bitDifference(gpu.toFloats(), host.toFloats());
    case GpuCompare::Tolerance: {
      if (gpu.shape() != host.shape())
        return "shape " + shapeString(gpu.shape()) + ", want " + shapeString(host.shape());
      const double error = relativeL2(gpu.toFloats(), host.toFloats());
      if (error <= c.tolerance) return {};
      std::ostringstream s;
      s << "relative L2 error " << error << " > tolerance " << c.tolerance;
      return s.str();
    }
  }
  return "unknown GpuCompare";
}

std::string outputName(const Case& c, std::size_t i, std::size_t count) {
  const std::string index = std::to_string(i) + " of " + std::to_string(count);
  return i < c.outputNames.size() ? c.outputNames[i] + " (output " + index + ")" : "output " + index;
}

namespace {
/// The first output that differs by `compare`, as "<output>: ...".
template <class Compare>
std::string outputsDifference(const Case& c, const Tensors& got, const Tensors& want, Compare compare) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " outputs, want " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::string why = compare(got[i], want[i]);
    if (!why.empty()) return outputName(c, i, got.size()) + ": " + why;
  }
  return {};
}
}  // namespace

std::string hostDifference(const Case& c, const Tensors& inputs, const Tensors& want) {
  return outputsDifference(c, c.run(inputs), want, exactDifference);
}

std::string gpuDifference(const Case& c, const Tensors& inputs, Device gpu) {
  const Tensors onGpu = c.run(onDevice(inputs, gpu));
  const Device where = c.hostOutputs ? Device::host() : gpu;
  for (std::size_t i = 0; i < onGpu.size(); ++i)
    if (onGpu[i].device() != where)
      return outputName(c, i, onGpu.size()) + " is on " + onGpu[i].device().name() + ", want " + where.name();
  return outputsDifference(c, onGpu, c.run(inputs),
                           [&](const Tensor& g, const Tensor& h) { return gpuOutputDifference(c, g, h); });
}

std::int64_t itemCount(const Case& c, const Tensors& inputs) {
  if (c.cut.empty()) return 0;
  const Cut& first = c.cut.inputs.front();
  return inputs.at(first.index).dim(0) / first.perItem;
}

Tensors itemOf(const std::vector<Cut>& cuts, const Tensors& tensors, std::int64_t item) {
  Tensors out = tensors;
  for (const Cut& cut : cuts)
    out.at(cut.index) = tensors.at(cut.index).rows(item * cut.perItem, (item + 1) * cut.perItem);
  return out;
}

std::vector<std::int64_t> itemsToTry(std::int64_t count) {
  std::vector<std::int64_t> items;
  for (std::int64_t i : {std::int64_t{0}, count / 2, count - 1})
    if (i >= 0 && (items.empty() || items.back() != i)) items.push_back(i);
  return items;
}

std::vector<float> valuesOf(const Tensor& t) { return t.toFloats(); }

std::vector<std::int64_t> labelsOf(const Tensor& t) { return t.to(Device::host()).toVector<std::int64_t>(); }

std::vector<float> roundedTo(std::vector<float> values, DType dtype) {
  for (float& v : values) v = dtype == DType::BF16 ? bf16ToFloat(floatToBF16(v)) : f16ToFloat(floatToF16(v));
  return values;
}

std::string dims(std::initializer_list<std::int64_t> extents) { return shapeString(Shape(extents)); }

}  // namespace gizml::registry
