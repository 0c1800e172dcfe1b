// Every case of the op registry (tests/registry/): host = the literal reference bit for bit at 1
// and 2 host threads, a batch item alone = the item in its batch, and the GPU = the host by the
// case's comparison. One test a case, named after it.
#include "registry/registry.hpp"
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
  forThreadCounts([&] { EXPECT_TRUE(same(c, registry::outputsDifference(c.run(inputs), want, registry::exactDifference))); });
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
      EXPECT_TRUE(same(c, registry::exactDifference(alone.at(cut.index),
                                                    registry::itemOf({cut}, batch, item).at(cut.index))))
          << "item " << item << " of " << count << ", output " << cut.index;
  }
}

TEST_P(Op, GpuEqualsHost) {
  GIZML_NEED_GPU();
  const Case& c = *GetParam();
  const Tensors inputs = c.inputs();
  const Tensors onHost = c.run(inputs);
  const Device gpu = Device::cuda(0);
  const Tensors onGpu = c.run(registry::onDevice(inputs, gpu));
  for (std::size_t i = 0; i < onGpu.size(); ++i)
    EXPECT_EQ(onGpu[i].device().name(), (c.hostOutputs ? Device::host() : gpu).name()) << c.title() << ": output " << i;
  EXPECT_TRUE(same(c, registry::outputsDifference(onGpu, onHost, [&](const Tensor& g, const Tensor& h) {
                     return registry::gpuDifference(c, g, h);
                   })));
}

INSTANTIATE_TEST_SUITE_P(Registry, Op, ::testing::ValuesIn(casesWhere([](const Case&) { return true; })), paramName);
INSTANTIATE_TEST_SUITE_P(Registry, BatchOp, ::testing::ValuesIn(casesWhere([](const Case& c) { return !c.cut.empty(); })),
                         paramName);
