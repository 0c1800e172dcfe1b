// The device error flag (SPEC §1.7): a kernel that reads an untrusted index records it, and the
// next synchronising call or read-back turns it into gizml::Error naming the op and the argument.
// The record's message is checked on the host; the path from a kernel runs on a GPU, through the
// test-only gather kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/device_error.hpp"
#include "gizml/gizml.hpp"
#include "support/compare.hpp"
#include "support/gpu.hpp"

using gizml::Device;
using gizml::Gpu;
using gizml::Tensor;

namespace {

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const gizml::Error& e) {
    return e.what();
  }
  return "(no gizml::Error)";
}

}  // namespace

TEST(DeviceError, RecordBecomesAnErrorNamingTheOpAndArgument) {
  const unsigned launch = gizml::detail::registerLaunch("gizml::netops::normRotateInto", {"x", "map"});
  EXPECT_EQ(gizml::detail::registerLaunch("gizml::netops::normRotateInto", {"x", "map"}), launch) << "names are interned";
  EXPECT_NE(gizml::detail::registerLaunch("gizml::netops::normRotateInto", {"map"}), launch);
  gizml::detail::DeviceError record{2, launch, 12, 10};  // argument 1 ("map"), index 12 of [0, 10)
  EXPECT_EQ(messageOf([&] { gizml::detail::throwDeviceError(record); }),
            "gizml::netops::normRotateInto: map: expected an index in [0, 10), got 12 (read by a GPU kernel; the op's "
            "output is unspecified)");
}

TEST(DeviceErrorCuda, FlagBecomesAnErrorAtSynchronizeAndReadBack) {
  GIZML_NEED_GPU();
  const Gpu gpu = Gpu::open(0);
  Tensor src = Tensor::fromVector(std::vector<float>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, {10}, gpu.device);
  // Launches the gather into `out` (allocated first, so it exists even when the launch throws).
  auto gatherInto = [&](const std::vector<float>& index, Tensor& out) {
    out = Tensor::zeros({static_cast<std::int64_t>(index.size())}, gizml::DType::F32, gpu.device);
    Tensor in = Tensor::fromVector(index, {static_cast<std::int64_t>(index.size())}, gpu.device);
    gizml::detail::cudaGatherForTest(gpu, src.data<float>(), 10, in.data<float>(), in.numel(), out.data<float>());
  };
  const std::string expected = "gizml::detail::gatherForTest: index: expected an index in [0, 10), got ";
  // With GIZML_CUDA_SYNC=1 (gpu-check's diagnostic rerun) every launch synchronises and checks the
  // flag, so a bad index throws from the launch, not from the later call: each bad launch is inside
  // messageOf with the call that reports it by default, and the message is the same either way.

  // Good indices: no error, the values gathered.
  Tensor good;
  gatherInto({3, 0, 9}, good);
  gpu.synchronize();
  EXPECT_TRUE(gizml::test::sameBits(good.toVector<float>(), std::vector<float>{13, 10, 19}));

  // A bad one: the next synchronize throws, naming the op and the argument; the bad read is skipped.
  Tensor bad;
  EXPECT_EQ(messageOf([&] {
              gatherInto({1, 12, 3}, bad);
              gpu.synchronize();
            }).rfind(expected + "12", 0),
            0u);
  // The record is cleared once reported.
  gpu.synchronize();
  EXPECT_TRUE(gizml::test::sameBits(bad.toVector<float>(), std::vector<float>{11, 0, 13}));

  // A read-back is a synchronising call too; NaN and negative indices are out of range.
  Tensor nan;
  EXPECT_EQ(messageOf([&] {
              gatherInto({std::nanf(""), 2}, nan);
              nan.toVector<float>();
            }).rfind(expected + "-1", 0),
            0u);
  Tensor negative;
  EXPECT_EQ(messageOf([&] {
              gatherInto({-3}, negative);
              negative.toVector<float>();
            }).rfind(expected + "-1", 0),
            0u);
}
