// Every case of the op registry (tests/registry/): host = the literal reference bit for bit at 1
// and 2 host threads, a batch item alone = the item in its batch, and the GPU = the host by the
// case's comparison. One test a case, named after it.
#include "registry/registry.hpp"

#include <map>

#include "support/preamble.hpp"

namespace {

using gizml::registry::Case;
using gizml::registry::Tensors;
namespace registry = gizml::registry;

std::vector<const Case*> casesWhere(bool (*keep)(const Case&)) {
  std::vector<const Case*> out;
  for (const Case& c : registry::allCases())
    if (keep(c)) out.push_back(&c);
  return out;
}
std::string paramName(const ::testing::TestParamInfo<const Case*>& info) { return info.param->testName(); }

/// A failure that says the case before what differs.
::testing::AssertionResult same(const Case& c, const std::string& difference) {
  if (difference.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.title() << ": " << difference;
}

class Op : public ::testing::TestWithParam<const Case*> {};
class BatchOp : public ::testing::TestWithParam<const Case*> {};

}  // namespace

TEST_P(Op, HostEqualsReference) {
  const Case& c = *GetParam();
  const Tensors inputs = c.inputs();
  const Tensors want = c.reference(inputs);
  forThreadCounts([&] { EXPECT_TRUE(same(c, registry::hostDifference(c, inputs, want))); });
}

TEST_P(BatchOp, RowAloneEqualsRowInBatch) {
  const Case& c = *GetParam();
  const Tensors inputs = c.inputs();
  const Tensors batch = c.run(inputs);
  const std::int64_t count = registry::itemCount(c, inputs);
  ASSERT_GE(count, 1) << c.title() << ": no batch items";
  for (std::int64_t item : registry::itemsToTry(count)) {
    const Tensors alone = c.run(registry::itemOf(c.cut.inputs, inputs, item));
    for (const registry::Cut& cut : c.cut.outputs)
      EXPECT_TRUE(
          same(c, registry::exactDifference(alone.at(cut.index), registry::itemOf({cut}, batch, item).at(cut.index))))
          << "item " << item << " of " << count << ", " << registry::outputName(c, cut.index, batch.size());
  }
}

TEST_P(Op, GpuEqualsHost) {
  GIZML_NEED_GPU();
  const Case& c = *GetParam();
  EXPECT_TRUE(same(c, registry::gpuDifference(c, c.inputs(), Device::cuda(0))));
}

INSTANTIATE_TEST_SUITE_P(Registry, Op, ::testing::ValuesIn(casesWhere([](const Case&) { return true; })), paramName);
INSTANTIATE_TEST_SUITE_P(Registry, BatchOp,
                         ::testing::ValuesIn(casesWhere([](const Case& c) { return !c.cut.empty(); })), paramName);

// ---- the registry itself ------------------------------------------------------------------------------

TEST(Registry, EachOpHasOneTypicalCase) {
  std::map<std::string, int> typical;
  for (const Case& c : registry::allCases()) typical[c.op] += c.typical ? 1 : 0;
  for (const auto& [op, count] : typical) EXPECT_EQ(count, 1) << op;
}

TEST(Registry, GpuComparisonsSayWhatDiffers) {
  // On host tensors: what the GPU test does with a GPU's results.
  Case exact, bf16, tolerance;
  bf16.gpu = registry::GpuCompare::HostRoundedToBF16;
  tolerance.gpu = registry::GpuCompare::Tolerance;
  tolerance.tolerance = 1e-3;
  const Tensor h = host({1.0f, 1.00390625f + 0x1p-20f, kNaN, -0.0f}, {4});
  EXPECT_EQ(registry::gpuOutputDifference(exact, host({1.0f, 1.00390625f + 0x1p-20f, -kNaN, -0.0f}, {4}), h), "")
      << "any NaN equals any NaN";
  EXPECT_NE(registry::gpuOutputDifference(exact, host({1.0f, 1.00390625f + 0x1p-20f, kNaN, 0.0f}, {4}), h), "")
      << "-0 is not +0";
  EXPECT_EQ(registry::gpuOutputDifference(bf16, h.to(DType::BF16), h), "");
  EXPECT_NE(registry::gpuOutputDifference(bf16, h, h), "") << "the GPU's result must be BF16";
  const Tensor near = host({1.0f, 2.0f, 3.0f, 4.0f}, {4});
  EXPECT_EQ(registry::gpuOutputDifference(tolerance, host({1.0f, 2.0f, 3.0f, 4.001f}, {4}), near), "");
  EXPECT_NE(registry::gpuOutputDifference(tolerance, host({1.0f, 2.0f, 3.0f, 4.1f}, {4}), near), "");
  // int8Rows' codes: I8 / I4 on a GPU against the host's F32 integers.
  Case asFloats;
  asFloats.gpu = registry::GpuCompare::ValuesAsFloats;
  const Tensor codes = host({-8.0f, 7.0f, 0.0f, 3.0f}, {4});
  EXPECT_EQ(registry::gpuOutputDifference(asFloats, codes.to(DType::I8), codes), "");
  EXPECT_EQ(registry::gpuOutputDifference(asFloats, codes.to(DType::I4), codes), "");
  EXPECT_NE(registry::gpuOutputDifference(asFloats, host({-8.0f, 7.0f, 0.0f, 2.0f}, {4}).to(DType::I8), codes), "");
  EXPECT_NE(registry::gpuOutputDifference(asFloats, codes.reshape({2, 2}).to(DType::I8), codes), "") << "shape";
}
