// What every tests/*_test.cpp starts with: GoogleTest, the library, the comparisons, the bad-input
// and GPU helpers, the inputs (host(), kNaN, kInf, randomFloats, withSpecials) and PyTorch's values.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gizml/gizml.hpp"
#include "support/compare.hpp"
#include "support/errors.hpp"
#include "support/gpu.hpp"
#include "support/inputs.hpp"
#include "support/test_data.hpp"
#include "support/torch_data.hpp"

using gizml::Device;
using gizml::DType;
using gizml::Key;
using gizml::Lazy;
using gizml::Tensor;
using gizml::test::expectThrowsNaming;
using gizml::test::forThreadCounts;
using gizml::test::host;
using gizml::test::kInf;
using gizml::test::kNaN;
using gizml::test::randomFloats;
using gizml::test::randomLabels;
using gizml::test::restoreThreadsForTest;
using gizml::test::sameBits;
using gizml::test::setThreadsForTest;
using gizml::test::withSpecials;
namespace gizml::reference {}
namespace netops = gizml::netops;
namespace ref = gizml::reference;

namespace gizml::test {
/// The cases of `op` in data file `file` (tests/data/<file>, found by testDataFile).
inline std::vector<TorchCase> torchCases(const std::string& file, const std::string& op) {
  std::vector<TorchCase> out;
  for (auto& c : readTorchCases(testDataFile(file)))
    if (c.op == op) out.push_back(c);
  return out;
}
}  // namespace gizml::test
using gizml::test::torchCases;
