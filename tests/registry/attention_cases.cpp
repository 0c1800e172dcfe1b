// The attention family's cases (SPEC §3 "Attention"): for now its causal mask, with tq < tk,
// tq > tk (queries that see no key) and empty sides.
#include "reference/attention_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;

std::string num(std::int64_t v) { return std::to_string(v); }

/// A host op wherever it is asked: no inputs, a host output.
Case causalMaskCase(std::int64_t tq, std::int64_t tk, bool typical) {
  Case c{.op = "causalMask", .name = num(tq) + " x " + num(tk)};
  c.typical = typical;
  c.hostOutputs = true;
  c.inputs = [] { return Tensors{}; };
  c.run = [tq, tk](const Tensors&) { return Tensors{netops::causalMask(tq, tk)}; };
  c.reference = [tq, tk](const Tensors&) {
    std::vector<float> out(tq * tk);
    ref::causalMask(tq, tk, out.data());
    return Tensors{host(out, {tq, tk})};
  };
  return c;
}

}  // namespace

std::vector<Case> attentionCases() {
  std::vector<Case> cases;
  for (auto [tq, tk] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {4, 4}, {3, 7}, {7, 3}, {0, 5}, {5, 0}, {16, 33}})
    cases.push_back(causalMaskCase(tq, tk, false));
  cases.push_back(causalMaskCase(100, 300, true));
  return cases;
}

}  // namespace gizml::registry
