// The row ops' plans on a GPU (row_plan.hpp): their names, their parsing and where they come from.
#include "core/row_plan.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include "gizml/error.hpp"

namespace gizml::detail {

namespace {

/// What GPU sessions found fastest, op by op, in GIZML_CUDA_ROW_PLAN's form; the ops not named take
/// RowPlan's defaults. None yet: the first GPU session measured only the defaults, and every other
/// form was written since without a GPU (README "Row plans").
constexpr std::string_view kMeasuredRowPlans = "";

constexpr std::string_view kRunNames = "N, bN, pN, qN, bqN, s, gL or bgL (N, L whole numbers)";

[[noreturn]] void badPlan(std::string_view source, const std::string& what) {
  throw Error("gizml: " + std::string(source) + ": " + what);
}

/// The digits of `text` as a number from 0 to `most`; else nothing.
std::optional<long> wholeNumber(std::string_view text, long most) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  long n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = 10 * n + (c - '0');
  }
  if (n > most) return std::nullopt;
  return n;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

/// An environment switch, 0 or 1: nothing where it is unset or empty.
std::optional<bool> switchOf(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  const std::string_view s = v;
  if (s == "0" || s == "1") return s == "1";
  throw Error(std::string("gizml: ") + name + ": expected 0 or 1, got '" + v + "'");
}

/// An environment number from 0 to `most`: nothing where it is unset or empty.
std::optional<long> numberOf(const char* name, long most) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  if (const std::optional<long> n = wholeNumber(v, most)) return n;
  throw Error(std::string("gizml: ") + name + ": expected a whole number from 0 to " + std::to_string(most) +
              ", got '" + v + "'");
}

/// Step 4: each field's switch, where it is set, over `p`.
RowPlan withSwitches(RowPlan p) {
  if (const auto v = switchOf("GIZML_CUDA_ROW_BLOCKS")) p.blocks = *v;
  if (const auto v = switchOf("GIZML_CUDA_BY_ROWS")) p.byRows = *v;
  if (const auto v = switchOf("GIZML_CUDA_L2_PREFETCH")) p.prefetch = *v;
  if (const auto v = switchOf("GIZML_CUDA_QUADS")) p.quads = *v;
  if (const auto v = numberOf("GIZML_CUDA_ROWS_PER_SM", kMostRowsPerSm)) p.rowsPerSm = *v;
  if (const auto v = numberOf("GIZML_CUDA_GROUP_NORM_AHEAD", kMostGroupsAhead)) p.ahead = *v;
  return p;
}

/// Every planned op's plan (steps 1 - 4), and the plan of the ops that are not (steps 1 and 4).
struct Plans {
  std::map<std::string, RowPlan, std::less<>> byOp;
  RowPlan others;
};

Plans plansNow() {
  Plans plans;
  const auto measured = rowPlansOf(kMeasuredRowPlans, "kMeasuredRowPlans (core/row_plan.cpp)");
  const char* asked = std::getenv("GIZML_CUDA_ROW_PLAN");
  const auto named = rowPlansOf(asked ? asked : "", "GIZML_CUDA_ROW_PLAN");
  for (const std::string_view op : plannedRowOps()) {
    RowPlan p;
    if (const auto it = measured.find(op); it != measured.end()) p = it->second;
    if (const auto it = named.find(op); it != named.end()) p = it->second;
    plans.byOp.emplace(op, withSwitches(p));
  }
  plans.others = withSwitches(RowPlan{});
  return plans;
}

}  // namespace

RowPlan rowPlanOfRun(std::string_view run, std::string_view source) {
  RowPlan p;
  std::string_view rest = run;
  long* number = &p.rowsPerSm;
  long most = kMostRowsPerSm;
  if (run == "s") {
    p.byRows = false;
    return p;
  }
  if (rest.starts_with("bg")) {
    p.blocks = true, rest.remove_prefix(2), number = &p.ahead, most = kMostGroupsAhead;
  } else if (rest.starts_with("bq")) {
    p.blocks = true, p.quads = true, rest.remove_prefix(2);
  } else if (rest.starts_with("g")) {
    rest.remove_prefix(1), number = &p.ahead, most = kMostGroupsAhead;
  } else if (rest.starts_with("b")) {
    p.blocks = true, rest.remove_prefix(1);
  } else if (rest.starts_with("p")) {
    p.prefetch = true, rest.remove_prefix(1);
  } else if (rest.starts_with("q")) {
    p.quads = true, rest.remove_prefix(1);
  }
  const std::optional<long> n = wholeNumber(rest, most);
  if (!n)
    badPlan(source, "expected a run named " + std::string(kRunNames) + ", N at most " + std::to_string(kMostRowsPerSm) +
                        " and L at most " + std::to_string(kMostGroupsAhead) + "; got '" + std::string(run) + "'");
  *number = *n;
  return p;
}

const std::vector<std::string_view>& plannedRowOps() {
  // Every op whose launches go through the row launches (core/cuda_rows.cuh, cuda_row_blocks.cuh)
  // or read a plan of their own (pixelNorm's tiles, groupNorm's passes).
  static const std::vector<std::string_view> ops = {
      "layerNorm",      "rmsNorm",           "layerNormGrad",         "crossEntropy",    "argmax",
      "modulatedNorm",  "gatedNormAddInto",  "rowNormRopeInto",       "pixelNormInto",   "groupNorm",
      "hadamardRows",   "int8Rows",          "modulatedInt8RowsInto", "headPrepInPlace", "argmaxInto",
      "normRotateInto", "siluMulRotatedInto"};
  return ops;
}

std::map<std::string, RowPlan, std::less<>> rowPlansOf(std::string_view spec, std::string_view source) {
  std::map<std::string, RowPlan, std::less<>> plans;
  if (trimmed(spec).empty()) return plans;
  while (true) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos)
      badPlan(source, "expected op=run items apart by commas, got '" + std::string(item) + "'");
    const std::string_view op = trimmed(item.substr(0, equals));
    bool known = false;
    std::string names;
    for (const std::string_view o : plannedRowOps()) {
      known = known || o == op;
      names += (names.empty() ? "" : ", ") + std::string(o);
    }
    if (!known) badPlan(source, "no row op is named '" + std::string(op) + "' (the ops planned: " + names + ")");
    if (!plans.emplace(op, rowPlanOfRun(trimmed(item.substr(equals + 1)), source)).second)
      badPlan(source, "the op '" + std::string(op) + "' is named twice");
    if (comma == std::string_view::npos) return plans;
    spec.remove_prefix(comma + 1);
  }
}

const RowPlan& rowPlan(std::string_view function) {
  static const Plans plans = plansNow();
  constexpr std::string_view kPrefix = "gizml::netops::";
  if (function.starts_with(kPrefix)) function.remove_prefix(kPrefix.size());
  const auto it = plans.byOp.find(function);
  return it != plans.byOp.end() ? it->second : plans.others;
}

}  // namespace gizml::detail
