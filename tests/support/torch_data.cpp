#include "support/torch_data.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gizml::test {

const std::vector<double>& TorchCase::field(const std::string& f) const {
  auto it = fields.find(f);
  if (it == fields.end()) throw std::runtime_error("torch case " + name + " has no field " + f);
  return it->second;
}

std::vector<float> TorchCase::floats(const std::string& f) const {
  const auto& d = field(f);
  return std::vector<float>(d.begin(), d.end());
}

std::vector<TorchCase> readTorchCases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<TorchCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string head;
    s >> head;
    if (head == "case") {
      TorchCase c;
      s >> c.op >> c.name;
      std::int64_t v;
      while (s >> v) c.ints.push_back(v);
      cases.push_back(std::move(c));
    } else {
      if (cases.empty()) throw std::runtime_error(path + ": a field before the first case");
      std::vector<double> values;
      std::string tok;
      while (s >> tok) values.push_back(std::strtod(tok.c_str(), nullptr));  // hex floats, inf, nan
      cases.back().fields[head] = std::move(values);
    }
  }
  return cases;
}

}  // namespace gizml::test
