// The row ops' plans on a GPU (src/core/row_plan.hpp): how a run's name and GIZML_CUDA_ROW_PLAN read,
// their errors, and which source wins. Host only: a plan is parsed on the host, whatever runs it.
#include "core/row_plan.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gizml/error.hpp"

namespace {

using gizml::detail::RowPlan;
using gizml::detail::rowPlanOfRun;
using gizml::detail::rowPlansOf;

RowPlan plan(bool blocks, bool byRows, bool prefetch, long rowsPerSm, long ahead, bool quads = false) {
  RowPlan p;
  p.blocks = blocks, p.byRows = byRows, p.prefetch = prefetch, p.rowsPerSm = rowsPerSm, p.ahead = ahead;
  p.quads = quads;
  return p;
}

/// The message of the gizml::Error that `run` throws ("" where it throws none).
template <class Run>
std::string errorOf(const Run& run) {
  try {
    run();
  } catch (const gizml::Error& e) {
    return e.what();
  }
  return "";
}

TEST(RowPlan, RunsReadAsTheSweepNamesThem) {
  EXPECT_EQ(rowPlanOfRun("0", "t"), RowPlan{});
  EXPECT_EQ(rowPlanOfRun("0", "t"), plan(false, true, false, 0, 0));  // the defaults, spelled out
  EXPECT_EQ(rowPlanOfRun("16", "t"), plan(false, true, false, 16, 0));
  EXPECT_EQ(rowPlanOfRun("b0", "t"), plan(true, true, false, 0, 0));
  EXPECT_EQ(rowPlanOfRun("b4", "t"), plan(true, true, false, 4, 0));
  EXPECT_EQ(rowPlanOfRun("p32", "t"), plan(false, true, true, 32, 0));
  EXPECT_EQ(rowPlanOfRun("p0", "t"), plan(false, true, true, 0, 0));
  EXPECT_EQ(rowPlanOfRun("q0", "t"), plan(false, true, false, 0, 0, true));
  EXPECT_EQ(rowPlanOfRun("q16", "t"), plan(false, true, false, 16, 0, true));
  EXPECT_EQ(rowPlanOfRun("bq0", "t"), plan(true, true, false, 0, 0, true));
  EXPECT_EQ(rowPlanOfRun("bq4", "t"), plan(true, true, false, 4, 0, true));
  EXPECT_EQ(rowPlanOfRun("s", "t"), plan(false, false, false, 0, 0));
  EXPECT_EQ(rowPlanOfRun("g8", "t"), plan(false, true, false, 0, 8));
  EXPECT_EQ(rowPlanOfRun("bg12", "t"), plan(true, true, false, 0, 12));
  EXPECT_EQ(rowPlanOfRun("1048576", "t"), plan(false, true, false, 1L << 20, 0));
  EXPECT_EQ(rowPlanOfRun("g1024", "t"), plan(false, true, false, 0, 1024));
}

TEST(RowPlan, AnythingElseIsAnErrorNamingWhereItWasWritten) {
  for (const char* bad : {"", "x", "b", "p", "q", "g", "bg", "s1", "ss", "b-1", "p+4", "1048577", "g1025", "bg1025",
                          "4b", "b 4", "pb4", "gb4", "qp4", "pq4", "qb4", "bq", "bqg4", "0x10", "99999999999"}) {
    const std::string e = errorOf([&] { (void)rowPlanOfRun(bad, "GIZML_CUDA_ROW_PLAN"); });
    EXPECT_NE(e.find("GIZML_CUDA_ROW_PLAN: expected a run named N, bN, pN, qN, bqN, s, gL or bgL"), std::string::npos)
        << "'" << bad << "': " << e;
    EXPECT_NE(e.find("got '" + std::string(bad) + "'"), std::string::npos) << e;
  }
}

TEST(RowPlan, APlanForEachOpNamed) {
  EXPECT_TRUE(rowPlansOf("", "t").empty());
  EXPECT_TRUE(rowPlansOf("  ", "t").empty());
  const auto plans = rowPlansOf("modulatedNorm=b0, int8Rows = p32 ,groupNorm=bg8", "t");
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_EQ(plans.at("modulatedNorm"), rowPlanOfRun("b0", "t"));
  EXPECT_EQ(plans.at("int8Rows"), rowPlanOfRun("p32", "t"));
  EXPECT_EQ(plans.at("groupNorm"), rowPlanOfRun("bg8", "t"));
  // Every planned op can be named, with every run.
  std::string all;
  for (const std::string_view op : gizml::detail::plannedRowOps())
    all += std::string(all.empty() ? "" : ",") + std::string(op) + "=s";
  const auto every = rowPlansOf(all, "t");
  EXPECT_EQ(every.size(), gizml::detail::plannedRowOps().size());
  for (const auto& [op, p] : every) EXPECT_FALSE(p.byRows) << op;
}

TEST(RowPlan, BadPlansAreErrorsNamingTheirSource) {
  const auto errorIn = [](const char* spec) { return errorOf([&] { (void)rowPlansOf(spec, "GIZML_CUDA_ROW_PLAN"); }); };
  EXPECT_NE(
      errorIn("modulatedNorm").find("GIZML_CUDA_ROW_PLAN: expected op=run items apart by commas, got 'modulatedNorm'"),
      std::string::npos);
  EXPECT_NE(errorIn("int8Rows=b0,").find("expected op=run items apart by commas, got ''"), std::string::npos);
  const std::string unknown = errorIn("int8Rows=b0,modulatedNormInto=b0");
  EXPECT_NE(unknown.find("GIZML_CUDA_ROW_PLAN: no row op is named 'modulatedNormInto' (the ops planned: layerNorm, "),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("modulatedInt8RowsInto"), std::string::npos) << unknown;
  EXPECT_NE(errorIn("int8Rows=b0, int8Rows=s").find("GIZML_CUDA_ROW_PLAN: the op 'int8Rows' is named twice"),
            std::string::npos);
  EXPECT_NE(errorIn("int8Rows=x4").find("GIZML_CUDA_ROW_PLAN: expected a run named"), std::string::npos);
  EXPECT_NE(errorIn("=b0").find("no row op is named ''"), std::string::npos);
}

TEST(RowPlan, AnOpIsFoundByItsLaunchName) {
  using gizml::detail::rowPlan;
  const auto& ops = gizml::detail::plannedRowOps();
  for (const std::string_view op : ops) EXPECT_EQ(&rowPlan(op), &rowPlan("gizml::netops::" + std::string(op))) << op;
  // An op with no plan of its own takes the defaults and the switches: one plan for all such ops.
  EXPECT_EQ(&rowPlan("gizml::netops::transpose (permute)"), &rowPlan("gizml::netops::dropout"));
  EXPECT_NE(&rowPlan("gizml::netops::transpose (permute)"), &rowPlan("gizml::netops::int8Rows"));
}

// tools/gpu-rows-sweep.sh names each benchmark's op as plans name it, for the winners' plan that it
// runs last and prints for kMeasuredRowPlans: every name it gives must be a planned op.
TEST(RowPlan, TheSweepNamesPlannedOps) {
  std::ifstream file(GIZML_SWEEP_SCRIPT);
  ASSERT_TRUE(file) << GIZML_SWEEP_SCRIPT;
  std::stringstream text;
  text << file.rdbuf();
  const std::string script = text.str();
  const std::regex named(R"re(return "([A-Za-z0-9]+)")re");
  std::string spec;
  int count = 0;
  for (auto it = std::sregex_iterator(script.begin(), script.end(), named); it != std::sregex_iterator(); ++it, ++count)
    spec += (spec.empty() ? "" : ",") + (*it)[1].str() + "=0";
  EXPECT_GE(count, 12);  // the ops of the sweep's row benchmarks
  EXPECT_EQ(gizml::detail::rowPlansOf(spec, "gpu-rows-sweep.sh").size(), static_cast<std::size_t>(count)) << spec;
}

// Run by ctest's RowPlan_switches_over_plans with GIZML_CUDA_ROW_PLAN and GIZML_CUDA_ROWS_PER_SM set
// (below); skipped elsewhere. The switch holds its field for every op, over the op's plan.
TEST(RowPlan, SwitchesOverPlans) {
  const char* asked = std::getenv("GIZML_CUDA_ROW_PLAN");
  const char* rows = std::getenv("GIZML_CUDA_ROWS_PER_SM");
  const char* quads = std::getenv("GIZML_CUDA_QUADS");
  if (!asked || std::string(asked) != "modulatedNorm=b4,groupNorm=bg3,int8Rows=s,layerNorm=q2" || !rows ||
      std::string(rows) != "8" || !quads || std::string(quads) != "0")
    GTEST_SKIP() << "for ctest's RowPlan_switches_over_plans";
  using gizml::detail::rowPlan;
  EXPECT_EQ(rowPlan("gizml::netops::modulatedNorm"), plan(true, true, false, 8, 0));
  EXPECT_EQ(rowPlan("gizml::netops::groupNorm"), plan(true, true, false, 8, 3));
  EXPECT_EQ(rowPlan("gizml::netops::int8Rows"), plan(false, false, false, 8, 0));
  EXPECT_EQ(rowPlan("gizml::netops::layerNorm"), plan(false, true, false, 8, 0));  // q2's quads switched off
  EXPECT_EQ(rowPlan("gizml::netops::rmsNorm"), plan(false, true, false, 8, 0));
  EXPECT_EQ(rowPlan("gizml::netops::dropout"), plan(false, true, false, 8, 0));
}

}  // namespace
