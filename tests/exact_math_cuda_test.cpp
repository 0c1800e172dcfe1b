// The device's transcendentals over all 2^32 float inputs: exp, log, silu, sigmoid and GELU (tanh
// form) computed on the GPU equal the host's bits on every input (the host's accuracy against
// float64 is exact_math_test's sweep). Seconds on a GPU; skipped without one; a sample of every
// exponent on the GPU simulator.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "exact/math.hpp"
#include "gizml/gizml.hpp"
#include "support/gpu.hpp"

using gizml::detail::MathForTest;

namespace {

float hostValue(MathForTest f, float x) {
  switch (f) {
    case MathForTest::Exp: return gizml::exact::exp(x);
    case MathForTest::Log: return gizml::exact::log(x);
    case MathForTest::Silu: return gizml::exact::silu(x);
    case MathForTest::Sigmoid: return gizml::exact::sigmoid(x);
    case MathForTest::GeluTanh: return gizml::exact::geluTanh(x);
  }
  return 0;
}

/// Inputs whose device result differs from the host's (NaN = NaN, payloads aside); the first one.
struct Mismatches {
  std::uint64_t count = 0;
  std::uint32_t first = 0;
  float host = 0, device = 0;
};

/// Every input, 2^26 at a time; on the GPU simulator (about 10^7 values a second) the first 2^13
/// mantissas of every exponent of both signs (2^23 apart), 4 Mi values.
Mismatches sweep(MathForTest f) {
  const gizml::Gpu gpu = gizml::Gpu::open(0);
  const bool sampled = gizml::builtForGpuSimulator();
  const std::int64_t stride = std::int64_t{1} << (sampled ? 23 : 26);
  const std::int64_t chunk = sampled ? std::int64_t{1} << 13 : stride;
  gizml::Tensor out = gizml::Tensor::empty({chunk}, gizml::DType::F32, gpu.device);
  std::vector<float> device(static_cast<std::size_t>(chunk));
  Mismatches m;
  for (std::int64_t first = 0; first < (std::int64_t{1} << 32); first += stride) {
    gizml::detail::cudaMathForTest(gpu, f, static_cast<std::uint32_t>(first), chunk, out.data<float>());
    gizml::detail::cudaCopy(device.data(), gizml::Device::host(), out.data<float>(), gpu.device, chunk * sizeof(float));
    std::uint64_t bad = 0;
    std::int64_t firstBad = chunk;
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(min : firstBad)
    for (std::int64_t i = 0; i < chunk; ++i) {
      std::uint32_t bits = static_cast<std::uint32_t>(first + i);
      float x;
      std::memcpy(&x, &bits, sizeof x);
      const float h = hostValue(f, x), d = device[i];
      if (!(std::isnan(h) && std::isnan(d)) && std::memcmp(&h, &d, sizeof h) != 0) {
        ++bad;
        firstBad = std::min(firstBad, i);
      }
    }
    if (bad && !m.count) {
      m.first = static_cast<std::uint32_t>(first + firstBad);
      float x;
      std::memcpy(&x, &m.first, sizeof x);
      m.host = hostValue(f, x);
      m.device = device[firstBad];
    }
    m.count += bad;
  }
  return m;
}

}  // namespace

class ExactMathCuda : public ::testing::TestWithParam<MathForTest> {};

TEST_P(ExactMathCuda, EveryFloatEqualsTheHost) {
  GIZML_NEED_GPU();
  const Mismatches m = sweep(GetParam());
  EXPECT_EQ(m.count, 0u) << "first at input bits 0x" << std::hex << m.first << ": host " << m.host << ", GPU " << m.device;
}

std::string functionName(const ::testing::TestParamInfo<MathForTest>& info) {
  static const char* const names[] = {"exp", "log", "silu", "sigmoid", "geluTanh"};
  return names[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(AllFunctions, ExactMathCuda,
                         ::testing::Values(MathForTest::Exp, MathForTest::Log, MathForTest::Silu, MathForTest::Sigmoid,
                                           MathForTest::GeluTanh),
                         functionName);
