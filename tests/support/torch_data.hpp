// Reads the values PyTorch computed (tests/data/*.txt, made by tests/data/make_torch_values.py):
// blocks of "case <op> <name> <ints...>" followed by "<field> <hex floats...>" lines.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gizml::test {

struct TorchCase {
  std::string op, name;
  std::vector<std::int64_t> ints;  // the case line's integers (shapes, labels count, ...)
  std::map<std::string, std::vector<double>> fields;
  const std::vector<double>& field(const std::string& f) const;
  std::vector<float> floats(const std::string& f) const;
};

/// Every case of the file; throws std::runtime_error when it cannot be read.
std::vector<TorchCase> readTorchCases(const std::string& path);

}  // namespace gizml::test
