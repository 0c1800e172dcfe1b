// The op registry (ggml's test-backend-ops is the model): every op's cases are written once, here,
// and three checks run over all of them — host = the literal reference (tests/registry_test.cpp,
// at 1 and 2 host threads), a batch item alone = that item in its batch, and GPU = host — and
// gizml-check prints its table from the same list. A new op costs one entry in its family's file.
//
// "The same bits": every output element must match bit for bit, -0 and the infinities included,
// except NaN: a NaN result is a NaN on every device; its sign and payload are not part of the
// contract (x86 and CUDA make different NaN payloads), so any two NaNs compare equal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gizml/gizml.hpp"
#include "registry/shapes.hpp"

namespace gizml::registry {

using Tensors = std::vector<Tensor>;

/// How an op's GPU result is held against its host result.
enum class GpuCompare {
  Exact,              // bit for bit
  HostRoundedToBF16,  // the GPU's result equals the host's F32 result rounded once to BF16
  Tolerance,          // fast ops: ||gpu - host|| / ||host|| <= Case::tolerance (relative L2)
  ValuesAsFloats,     // the same shape and, read back with toFloats(), the same bits: for outputs
                      // whose dtype depends on the device (int8Rows' codes: I8 / I4 on a GPU, F32
                      // integers on the host)
};

/// One tensor cut along its leading axis: input or output `index`, `perItem` leading entries an
/// item (im2col's output has oh ow rows an image).
struct Cut {
  int index = 0;
  std::int64_t perItem = 1;
};
/// "A row alone = the row in its batch": the inputs and outputs indexed by the batch's leading
/// axis. Empty for ops with no batch (crossEntropyLoss's mean, a convolution of one image); inputs
/// and outputs not listed (weights, layerNormGrad's dweight and dbias) are the whole batch's.
struct BatchCut {
  std::vector<Cut> inputs, outputs;
  bool empty() const { return inputs.empty(); }
};

struct Case {
  std::string op;    // the public name: "layerNorm", "Tensor.argmax", ...
  std::string name;  // its parameters: "[37, 257]"
  /// The inputs, on the host, from fixed Keys (special values planted where they matter).
  std::function<Tensors()> inputs;
  /// The public op on the inputs, wherever they are: it runs on their device and takes its sizes
  /// from their shapes where a batch item must still work.
  std::function<Tensors(const Tensors&)> run;
  /// The literal reference (tests/reference/) on the host inputs' values: host tensors.
  std::function<Tensors(const Tensors&)> reference;
  /// What each output is, for messages ("y", "mean", ...); "output i" where empty.
  std::vector<std::string> outputNames;
  GpuCompare gpu = GpuCompare::Exact;
  double tolerance = 0;  // for GpuCompare::Tolerance
  BatchCut cut;
  /// The op returns host values wherever it runs (a loss as a double, argmax's indices, causalMask).
  bool hostOutputs = false;
  /// The larger, realistic case of its op: gizml-check times it, benchmarks may read its shape.
  bool typical = false;

  /// "<op> <name>" and, for a GoogleTest parameter, the same in [A-Za-z0-9_].
  std::string title() const { return op + " " + name; }
  std::string testName() const;
};

/// Every case, family by family (registration is explicit: static initialisers in a static
/// library would be dropped by the linker).
const std::vector<Case>& allCases();
std::vector<Case> rowsCases();
std::vector<Case> gemmCases();
std::vector<Case> convCases();
std::vector<Case> poolCases();
std::vector<Case> attentionCases();
std::vector<Case> normsCases();
std::vector<Case> quantCases();
std::vector<Case> stepCases();
std::vector<Case> gradCases();

// ---- the runner's helpers --------------------------------------------------------------------------

/// Copies of the tensors on `device`.
Tensors onDevice(const Tensors& tensors, Device device);
/// Empty when `got` equals `want` bit for bit (shape, dtype and values; F64 compared as doubles,
/// everything else through toFloats()); else what differs, the first index and both values' bits.
std::string exactDifference(const Tensor& got, const Tensor& want);
/// "y (output 0 of 3)", or "output 0 of 3" for an output without a name.
std::string outputName(const Case& c, std::size_t i, std::size_t count);
/// Empty when one GPU output holds against the host's by the case's GpuCompare.
std::string gpuOutputDifference(const Case& c, const Tensor& gpu, const Tensor& host);
/// Empty when the case's run on `inputs` (on the host) equals `want` (its reference) bit for bit;
/// else which output (its name, its index of n) and what differs.
std::string hostDifference(const Case& c, const Tensors& inputs, const Tensors& want);
/// Empty when the case's run on copies of `inputs` on `gpu` holds against its run on the host,
/// each output on the GPU (on the host for hostOutputs).
std::string gpuDifference(const Case& c, const Tensors& inputs, Device gpu);

/// The number of batch items in `inputs` (0 when the case has no cut).
std::int64_t itemCount(const Case& c, const Tensors& inputs);
/// Item `item` of the cut tensors (rows views), the others as they are.
Tensors itemOf(const std::vector<Cut>& cuts, const Tensors& tensors, std::int64_t item);
/// First, a middle and the last item (each once).
std::vector<std::int64_t> itemsToTry(std::int64_t count);

// ---- building cases (with support/inputs.hpp: host(values, shape), withSpecials, ...) -------------

/// A tensor's values on the host, as floats.
std::vector<float> valuesOf(const Tensor& t);
/// An I64 tensor of labels read back as int64 (from any device).
std::vector<std::int64_t> labelsOf(const Tensor& t);
/// Every value rounded to `dtype` (BF16 or F16) and back: the host's view of a rounded operand.
std::vector<float> roundedTo(std::vector<float> values, DType dtype);

}  // namespace gizml::registry
