// The diffusion norms (SPEC §3 "Diffusion norms and 8-bit rows") beyond the registry's checks
// (tests/registry/norms_cases.cpp): accuracy against float64, how they compose with the row ops,
// PyTorch's values (tests/data/make_torch_norms_values.py: pixel norm with eps 1e-8, group_norm
// with SiLU, AdaLN over rms_norm and layer_norm), bad input (outputs untouched) and bad row maps on
// a GPU.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

#include "exact/math.hpp"
#include "reference/norms_reference.hpp"
#include "support/preamble.hpp"

namespace {

struct NormCase {
  std::int64_t rows, n;
  std::string name() const { return "[" + std::to_string(rows) + ", " + std::to_string(n) + "]"; }
};
const NormCase kCases[] = {{1, 1}, {3, 2}, {2, 15}, {3, 16}, {4, 17}, {3, 255}, {5, 257}, {2, 4097}};
constexpr std::int64_t kMods = 3;

std::vector<float> mapOf(Key key, std::int64_t rows) {
  std::vector<float> map;
  for (std::int64_t m : randomLabels(key, rows, kMods)) map.push_back(static_cast<float>(m));
  return map;
}

/// A row's norm in float64: x * rsqrt(mean((x - mu)^2) + eps), mu = mean(x) when centered, else 0.
std::vector<double> normalized64(const float* x, std::int64_t n, double eps, bool centered) {
  double mu = 0, ss = 0;
  if (centered) {
    for (std::int64_t i = 0; i < n; ++i) mu += x[i];
    mu /= n;
  }
  for (std::int64_t i = 0; i < n; ++i) ss += (x[i] - mu) * (x[i] - mu);
  const double r = 1.0 / std::sqrt(ss / n + eps);
  std::vector<double> out(n);
  for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] - mu) * r;
  return out;
}

std::vector<float> roundedToBF16(std::vector<float> v) {
  for (float& f : v) f = gizml::bf16ToFloat(gizml::floatToBF16(f));
  return v;
}

/// Every value of a tensor equal to `sentinel` (an output an op must not have touched).
bool allEqual(const Tensor& t, float sentinel) {
  const auto v = t.toFloats();
  return std::all_of(v.begin(), v.end(), [&](float f) { return f == sentinel; });
}

}  // namespace

// ---- modulatedNorm --------------------------------------------------------------------------------------

TEST(ModulatedNorm, AccuracyAgainstFloat64) {
  // AdaLN's norm(x) * (1 + scale) + shift in float64. Bound: 1e-5 (|n w (1 + scale)| + |n w| + |shift|)
  // + 1e-6 (dot16 in 16 lanes, the centered mean's cancellation, then four roundings); measured
  // worst 0.044 of it.
  for (bool centered : {false, true})
    for (const auto& c : kCases) {
      SCOPED_TRACE(c.name() + (centered ? " centered" : " rms"));
      auto x = randomFloats(Key{90, static_cast<std::uint32_t>(c.n)}, c.rows * c.n, 2.0f, 0.5f);
      auto w = randomFloats(Key{91, 0}, c.n), shift = randomFloats(Key{92, 0}, kMods * c.n, 0.5f);
      auto scale = randomFloats(Key{93, 0}, kMods * c.n, 0.5f);
      auto map = mapOf(Key{94, 0}, c.rows);
      auto y = netops::modulatedNorm(host(x, {c.rows, c.n}), host(w, {c.n}), host(shift, {kMods, c.n}),
                                     host(scale, {kMods, c.n}), host(map, {c.rows}), 1e-6, centered)
                   .toVector<float>();
      double worst = 0;
      for (std::int64_t r = 0; r < c.rows; ++r) {
        const auto n64 = normalized64(x.data() + r * c.n, c.n, static_cast<double>(1e-6f), centered);
        const std::int64_t m = static_cast<std::int64_t>(map[r]);
        for (std::int64_t i = 0; i < c.n; ++i) {
          const double nw = n64[i] * w[i], s = scale[m * c.n + i], b = shift[m * c.n + i];
          const double want = nw * (1.0 + s) + b;
          const double bound = 1e-5 * (std::fabs(nw * (1.0 + s)) + std::fabs(nw) + std::fabs(b)) + 1e-6;
          worst = std::max(worst, std::fabs(y[r * c.n + i] - want) / bound);
        }
      }
      EXPECT_LE(worst, 1.0) << "worst error / bound";
    }
}

TEST(ModulatedNorm, IsTheRowNormThenOneFma) {
  // RMS: rmsNorm's y is (x * s) * w, the SPEC's n * w; centered with w = 1: layerNorm's y with
  // weight 1 and bias +0 is fma(d * rstd, 1, +0) = n (no -0 here). Then fma(., F32(1 + scale), shift).
  const std::int64_t rows = 5, n = 257;
  auto x = randomFloats(Key{95, 0}, rows * n, 2.0f, 0.5f), w = randomFloats(Key{96, 0}, n);
  auto shift = randomFloats(Key{97, 0}, kMods * n), scale = randomFloats(Key{98, 0}, kMods * n);
  auto map = mapOf(Key{99, 0}, rows);
  const std::vector<float> ones(n, 1.0f), zeros(n, 0.0f);
  for (bool centered : {false, true}) {
    SCOPED_TRACE(centered ? "centered" : "rms");
    const auto& weight = centered ? ones : w;
    auto y = netops::modulatedNorm(host(x, {rows, n}), host(weight, {n}), host(shift, {kMods, n}),
                                   host(scale, {kMods, n}), host(map, {rows}), 1e-6, centered)
                 .toVector<float>();
    auto nw = centered ? netops::layerNorm(host(x, {rows, n}), host(ones, {n}), host(zeros, {n}), 1e-6).y.toVector<float>()
                       : netops::rmsNorm(host(x, {rows, n}), host(w, {n}), 1e-6).y.toVector<float>();
    std::vector<float> want(rows * n);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t m = static_cast<std::int64_t>(map[r]);
        const float onePlusScale = 1.0f + scale[m * n + i];
        want[r * n + i] = std::fma(nw[r * n + i], onePlusScale, shift[m * n + i]);
      }
    EXPECT_TRUE(sameBits(y, want));
  }
}

TEST(ModulatedNorm, OnePlusScaleIsOneF32Add) {
  // scale = 3 2^-25 makes F32's 1 + scale round up to 1 + 2^-23, so y = fma(n w, 1 + 2^-23, +0).
  // n w (1 + 3 2^-25) rounded once (the factor kept exact, or n w + n w scale) differs from it in
  // the lanes where n w's significand is 1.5 or more: the test can tell the two apart.
  const std::int64_t n = 64;
  auto x = randomFloats(Key{100, 0}, n);
  const float scaleValue = 3.0f * std::ldexp(1.0f, -25);
  const std::vector<float> w = randomFloats(Key{100, 1}, n), shift(n, 0.0f), scale(n, scaleValue);
  auto y = netops::modulatedNorm(host(x, {1, n}), host(w, {n}), host(shift, {1, n}), host(scale, {1, n}),
                                 host({0}, {1}), 1e-6, false)
               .toVector<float>();
  auto nw = netops::rmsNorm(host(x, {1, n}), host(w, {n}), 1e-6).y.toVector<float>();
  ASSERT_EQ(1.0f + scaleValue, 1.0f + std::ldexp(1.0f, -23));
  std::vector<float> want(n);
  int exactFactorDiffers = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    want[i] = std::fma(nw[i], 1.0f + scaleValue, 0.0f);
    const float exactFactor = static_cast<float>(static_cast<double>(nw[i]) * (1.0 + static_cast<double>(scaleValue)));
    exactFactorDiffers += exactFactor != want[i];
  }
  EXPECT_TRUE(sameBits(y, want));
  EXPECT_GT(exactFactorDiffers, 0) << "the case must tell F32's 1 + scale from the exact factor";
}

TEST(ModulatedNorm, IntoBF16IsTheF32ResultRounded) {
  const std::int64_t rows = 4, n = 33;
  Tensor x = host(withSpecials(Key{101, 0}, rows * n), {rows, n}), w = host(randomFloats(Key{102, 0}, n), {n});
  Tensor shift = host(randomFloats(Key{103, 0}, 2 * n), {2, n}), scale = host(randomFloats(Key{104, 0}, 2 * n), {2, n});
  Tensor map = host({1, 0, 1, 1}, {rows});
  Tensor y = Tensor::empty({rows, n}, DType::BF16);
  netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, true, y);
  EXPECT_TRUE(sameBits(y.toFloats(), netops::modulatedNorm(x, w, shift, scale, map, 1e-6, true).to(DType::BF16).toFloats()));
}

// An F32 y of 32 MiB or more (a video model's size) is written with streaming stores on the host:
// the same bits as each row computed alone (an output small enough for plain stores).
TEST(ModulatedNorm, StreamedOutputEqualsRowsAlone) {
  const std::int64_t rows = 2752, n = 3072;  // 33.8 MB of y
  Tensor x = Tensor::normal(Key{105, 0}, {rows, n}), w = host(randomFloats(Key{106, 0}, n), {n});
  Tensor shift = host(randomFloats(Key{107, 0}, kMods * n), {kMods, n});
  Tensor scale = host(randomFloats(Key{108, 0}, kMods * n), {kMods, n});
  const std::vector<float> mapValues = mapOf(Key{109, 0}, rows), xs = x.toFloats();
  const Tensor map = host(mapValues, {rows});
  for (bool centered : {false, true}) {
    SCOPED_TRACE(centered);
    const std::vector<float> all = netops::modulatedNorm(x, w, shift, scale, map, 1e-6, centered).toFloats();
    for (std::int64_t r : {std::int64_t{0}, std::int64_t{1}, rows / 2 + 1, rows - 1}) {
      SCOPED_TRACE(r);
      const Tensor one = host(std::vector<float>(xs.begin() + r * n, xs.begin() + (r + 1) * n), {1, n});
      const Tensor oneMap = host({mapValues[static_cast<std::size_t>(r)]}, {1});
      const std::vector<float> alone = netops::modulatedNorm(one, w, shift, scale, oneMap, 1e-6, centered).toFloats();
      EXPECT_TRUE(sameBits(alone, std::vector<float>(all.begin() + r * n, all.begin() + (r + 1) * n)));
    }
  }
}

/// Past 32 MiB of x the host runs its rows pipelined (a row's values inside the next row's sums,
/// exact::hostRowsBeside, with prefetches); below, one row at a time (hostRows). Every row of a
/// large x equals the same rows taken in four chunks below the threshold: F32 and BF16 y, RMS and
/// centered, rows of 3072 (F32 y streamed) and 3080 (a last step of 8, y not streamed).
TEST(ModulatedNorm, PipelinedRowsEqualRowsInChunks) {
  const std::int64_t rows = 2752;
  for (std::int64_t n : {std::int64_t{3072}, std::int64_t{3080}}) {
    SCOPED_TRACE(n);
    const Tensor x = Tensor::normal(Key{115, 0}, {rows, n}), w = host(randomFloats(Key{116, 0}, n), {n});
    const Tensor shift = host(randomFloats(Key{117, 0}, kMods * n), {kMods, n});
    const Tensor scale = host(randomFloats(Key{118, 0}, kMods * n), {kMods, n});
    const Tensor map = host(mapOf(Key{119, 0}, rows), {rows});
    ASSERT_GE(x.bytes(), std::size_t{32} << 20);
    for (bool centered : {false, true}) {
      SCOPED_TRACE(centered);
      const Tensor all = netops::modulatedNorm(x, w, shift, scale, map, 1e-6, centered);
      const Tensor allBF16 = Tensor::empty({rows, n}, DType::BF16);
      netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, centered, allBF16);
      for (std::int64_t k = 0; k < 4; ++k) {
        const std::int64_t r0 = k * rows / 4, r1 = (k + 1) * rows / 4;
        SCOPED_TRACE(r0);
        const Tensor part = netops::modulatedNorm(x.rows(r0, r1), w, shift, scale, map.rows(r0, r1), 1e-6, centered);
        EXPECT_TRUE(sameBits(part.toFloats(), all.rows(r0, r1).toFloats()));
        const Tensor partBF16 = Tensor::empty({r1 - r0, n}, DType::BF16);
        netops::modulatedNormInto(x.rows(r0, r1), w, shift, scale, map.rows(r0, r1), 1e-6, centered, partBF16);
        EXPECT_TRUE(sameBits(partBF16.toFloats(), allBF16.rows(r0, r1).toFloats()));
      }
    }
  }
}

/// A BF16 y past 32 MiB is streamed past the caches too (with AVX-512): every row equals the
/// same rows in four chunks below that size, RMS and centered.
TEST(ModulatedNorm, StreamedBF16YEqualsRowsInChunks) {
  const std::int64_t rows = 5504, n = 3072;
  const Tensor x = Tensor::normal(Key{125, 0}, {rows, n}), w = host(randomFloats(Key{126, 0}, n), {n});
  const Tensor shift = host(randomFloats(Key{127, 0}, kMods * n), {kMods, n});
  const Tensor scale = host(randomFloats(Key{128, 0}, kMods * n), {kMods, n});
  const Tensor map = host(mapOf(Key{129, 0}, rows), {rows});
  const Tensor all = Tensor::empty({rows, n}, DType::BF16);
  ASSERT_GE(all.bytes(), std::size_t{32} << 20);
  for (bool centered : {false, true}) {
    SCOPED_TRACE(centered);
    netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, centered, all);
    for (std::int64_t k = 0; k < 4; ++k) {
      const std::int64_t r0 = k * rows / 4, r1 = (k + 1) * rows / 4;
      const Tensor part = Tensor::empty({r1 - r0, n}, DType::BF16);
      netops::modulatedNormInto(x.rows(r0, r1), w, shift, scale, map.rows(r0, r1), 1e-6, centered, part);
      EXPECT_TRUE(sameBits(part.toFloats(), all.rows(r0, r1).toFloats())) << "rows from " << r0;
    }
  }
}

TEST(ModulatedNorm, BadInput) {
  const char* fn = "gizml::netops::modulatedNorm";
  const char* into = "gizml::netops::modulatedNormInto";
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}), w = host(randomFloats(Key{2, 2}, 4), {4});
  Tensor shift = host(randomFloats(Key{3, 3}, 8), {2, 4}), scale = host(randomFloats(Key{4, 4}, 8), {2, 4});
  Tensor map = host({0, 1, 1}, {3});
  auto call = [&](const Tensor& xx, const Tensor& ww, const Tensor& sh, const Tensor& sc, const Tensor& mm, double eps) {
    return [=] { netops::modulatedNorm(xx, ww, sh, sc, mm, eps, false); };
  };
  expectThrowsNaming(call(Tensor(), w, shift, scale, map, 1e-6), fn, "x");
  expectThrowsNaming(call(x.to(DType::BF16), w, shift, scale, map, 1e-6), fn, "x");
  expectThrowsNaming(call(host(randomFloats(Key{1, 1}, 12), {12}), w, shift, scale, map, 1e-6), fn, "x");
  expectThrowsNaming(call(Tensor::empty({3, 0}), host({}, {0}), Tensor::empty({2, 0}), Tensor::empty({2, 0}), map, 1e-6), fn, "x");
  expectThrowsNaming(call(x, host({1, 2, 3}, {3}), shift, scale, map, 1e-6), fn, "w");
  expectThrowsNaming(call(x, w.to(DType::BF16), shift, scale, map, 1e-6), fn, "w");
  expectThrowsNaming(call(x, w, shift.to(DType::BF16), scale, map, 1e-6), fn, "shift");
  expectThrowsNaming(call(x, w, host(randomFloats(Key{5, 5}, 6), {2, 3}), scale, map, 1e-6), fn, "shift");
  expectThrowsNaming(call(x, w, Tensor::empty({0, 4}), Tensor::empty({0, 4}), map, 1e-6), fn, "shift");
  expectThrowsNaming(call(x, w, shift, host(randomFloats(Key{5, 5}, 12), {3, 4}), map, 1e-6), fn, "scale");
  expectThrowsNaming(call(x, w, shift, scale.to(DType::BF16), map, 1e-6), fn, "scale");
  expectThrowsNaming(call(x, w, shift, scale, host({0, 1}, {2}), 1e-6), fn, "map");
  expectThrowsNaming(call(x, w, shift, scale, Tensor(), 1e-6), fn, "map");
  // The map's indexes are F32 (SPEC): integer or BF16 indexes are an error, not a cast.
  expectThrowsNaming(call(x, w, shift, scale, map.to(DType::I32), 1e-6), fn, "map");
  expectThrowsNaming(call(x, w, shift, scale, map.to(DType::BF16), 1e-6), fn, "map");
  expectThrowsNaming(call(x, w, shift, scale, map, -1.0), fn, "eps");
  expectThrowsNaming(call(x, w, shift, scale, map, std::nan("")), fn, "eps");
  // Bad map entries (2 is past mods = 2; a fraction; a negative; NaN), and bad outputs: y untouched.
  for (float bad : {2.0f, 0.5f, -1.0f, kNaN}) {
    SCOPED_TRACE("map entry " + std::to_string(bad));
    Tensor y = host(std::vector<float>(12, 7.0f), {3, 4});
    expectThrowsNaming([&] { netops::modulatedNormInto(x, w, shift, scale, host({0, bad, 1}, {3}), 1e-6, true, y); },
                       into, "map");
    EXPECT_TRUE(allEqual(y, 7.0f));
    expectThrowsNaming(call(x, w, shift, scale, host({0, 1, bad}, {3}), 1e-6), fn, "map");
  }
  Tensor wrongShape = host(std::vector<float>(8, 7.0f), {2, 4});
  expectThrowsNaming([&] { netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, false, wrongShape); }, into, "y");
  EXPECT_TRUE(allEqual(wrongShape, 7.0f));
  Tensor f16 = host(std::vector<float>(12, 7.0f), {3, 4}).to(DType::F16);
  expectThrowsNaming([&] { netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, false, f16); }, into, "y");
  EXPECT_TRUE(allEqual(f16, 7.0f));
  expectThrowsNaming([&] { netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, false, Tensor()); }, into, "y");
}

TEST(ModulatedNormCuda, BadMapSetsTheDeviceErrorFlag) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}).to(gpu), w = host(randomFloats(Key{2, 2}, 4), {4}).to(gpu);
  Tensor shift = host(randomFloats(Key{3, 3}, 8), {2, 4}).to(gpu), scale = host(randomFloats(Key{4, 4}, 8), {2, 4}).to(gpu);
  Tensor y = Tensor::zeros({3, 4}, DType::BF16, gpu);
  for (float bad : {2.0f, 0.5f, -1.0f, kNaN}) {
    SCOPED_TRACE("map entry " + std::to_string(bad));
    Tensor map = host({0, bad, 1}, {3}).to(gpu);
    expectThrowsNaming([&] { netops::modulatedNorm(x, w, shift, scale, map, 1e-6, false).toFloats(); },
                       "gizml::netops::modulatedNorm", "map");
    // The device's error names the function called, as the host's does.
    expectThrowsNaming([&] {
      netops::modulatedNormInto(x, w, shift, scale, map, 1e-6, true, y);
      y.toFloats();
    }, "gizml::netops::modulatedNormInto", "map");
  }
  // The flag is cleared once reported: a good map runs.
  EXPECT_NO_THROW(netops::modulatedNorm(x, w, shift, scale, host({0, 1, 1}, {3}).to(gpu), 1e-6, false).toFloats());
}

// Rows of 32 and 48 KiB, whose two staged copies (GIZML_CUDA_ROW_BLOCKS=1: RowBlocksCuda_norms_test)
// are more shared memory than a block may take without asking, in an order that asks for more,
// then for less than already allowed (core/cuda.cu keeps what CUDA allowed); rows of 64 KiB are a
// half-warp's. The GPU's values are the host's rounded to BF16 (SPEC).
TEST(ModulatedNormCuda, WideRowsAskForTheirSharedMemory) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  for (std::int64_t n : {8192, 12288, 8192, 16384}) {
    SCOPED_TRACE("width " + std::to_string(n));
    const std::uint32_t seed = static_cast<std::uint32_t>(n);
    Tensor x = host(randomFloats(Key{120, seed}, 3 * n), {3, n}), w = host(randomFloats(Key{121, seed}, n), {n});
    Tensor shift = host(randomFloats(Key{122, seed}, 2 * n), {2, n}), scale = host(randomFloats(Key{123, seed}, 2 * n), {2, n});
    Tensor map = host({1, 0, 1}, {3});
    const Tensor onGpu = netops::modulatedNorm(x.to(gpu), w.to(gpu), shift.to(gpu), scale.to(gpu), map.to(gpu), 1e-6, true);
    EXPECT_TRUE(sameBits(onGpu.toFloats(), netops::modulatedNorm(x, w, shift, scale, map, 1e-6, true).to(DType::BF16).toFloats()));
  }
}

TEST(NormsCuda, MixedDevicesAreAnError) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}), w = host(randomFloats(Key{2, 2}, 4), {4});
  Tensor shift = host(randomFloats(Key{3, 3}, 8), {2, 4}), scale = host(randomFloats(Key{4, 4}, 8), {2, 4});
  Tensor map = host({0, 1, 1}, {3});
  expectThrowsNaming([&] { netops::modulatedNorm(x.to(gpu), w.to(gpu), shift, scale.to(gpu), map.to(gpu), 1e-6, false); },
                     "gizml::netops::modulatedNorm", "shift");
  expectThrowsNaming([&] { netops::modulatedNorm(x.to(gpu), w.to(gpu), shift.to(gpu), scale.to(gpu), map, 1e-6, false); },
                     "gizml::netops::modulatedNorm", "map");
  expectThrowsNaming([&] {
    netops::modulatedNormInto(x.to(gpu), w.to(gpu), shift.to(gpu), scale.to(gpu), map.to(gpu), 1e-6, false,
                              Tensor::zeros({3, 4}, DType::BF16));
  }, "gizml::netops::modulatedNormInto", "y");
  // On a GPU y is BF16 (an F32 y is the host's alone): an error, y untouched.
  Tensor f32 = host(std::vector<float>(12, 7.0f), {3, 4}).to(gpu);
  expectThrowsNaming([&] {
    netops::modulatedNormInto(x.to(gpu), w.to(gpu), shift.to(gpu), scale.to(gpu), map.to(gpu), 1e-6, false, f32);
  }, "gizml::netops::modulatedNormInto", "y");
  EXPECT_TRUE(allEqual(f32, 7.0f));
  expectThrowsNaming([&] {
    netops::gatedNormAddInto(x.to(gpu), x.to(DType::BF16).to(gpu), w, shift.to(gpu), map.to(gpu), 1e-6);
  }, "gizml::netops::gatedNormAddInto", "w");
  const Tensor pixels = host(randomFloats(Key{5, 5}, 24), {2, 3, 4});
  expectThrowsNaming([&] { netops::pixelNormInto(pixels.to(gpu), 1e-8, false, pixels); }, "gizml::netops::pixelNormInto",
                     "out");
  const Tensor channels = host(randomFloats(Key{6, 6}, 24), {4, 6});
  expectThrowsNaming([&] { netops::groupNorm(channels.to(gpu), 2, w.to(gpu), w, 1e-5, false, DType::BF16); },
                     "gizml::netops::groupNorm", "b");
  expectThrowsNaming([&] {
    netops::groupNormInto(channels.to(gpu), 2, w.to(gpu), w.to(gpu), 1e-5, false, Tensor::zeros({4, 6}, DType::BF16));
  }, "gizml::netops::groupNormInto", "out");
}

TEST(GroupNormCuda, IntoEqualsGroupNormAndRunsInPlace) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  // [4, 6]: the kernels that take any shape; [16, 64]: whole 16-byte pieces, which the one launch of
  // GIZML_CUDA_GROUP_NORM_AHEAD takes where it is set (tests/CMakeLists.txt, tools/gpu-check.sh).
  for (const gizml::Shape& shape : {gizml::Shape{4, 6}, gizml::Shape{16, 64}}) {
    SCOPED_TRACE(gizml::shapeString(shape));
    const std::int64_t c = shape[0];
    const Tensor xg = host(randomFloats(Key{6, 6}, c * shape[1]), shape).to(gpu);
    const Tensor wg = host(randomFloats(Key{2, 2}, c), {c}).to(gpu);
    for (DType dtype : {DType::F32, DType::BF16}) {
      Tensor out = Tensor::zeros(shape, dtype, gpu);
      netops::groupNormInto(xg, 2, wg, wg, 1e-5, true, out);
      EXPECT_TRUE(sameBits(out.toFloats(), netops::groupNorm(xg, 2, wg, wg, 1e-5, true, dtype).toFloats()));
    }
    Tensor inPlace = xg.clone();
    netops::groupNormInto(inPlace, 2, wg, wg, 1e-5, true, inPlace);
    const Tensor wh = wg.to(Device::host());
    const Tensor onHost = netops::groupNorm(xg.to(Device::host()), 2, wh, wh, 1e-5, true, DType::F32);
    EXPECT_TRUE(sameBits(inPlace.toFloats(), onHost.toFloats()));
  }
}

TEST(GroupNormCuda, ManyGroupsEqualTheHost) {
  // A VAE's [512, 48 x 1024] in 32 groups on a GPU (its many blocks at once: with
  // GIZML_CUDA_GROUP_NORM_AHEAD, warps of many multiprocessors waiting for each other's counters);
  // [64, 4096] in 16 groups on the simulator, which runs a block at a time. F32 and BF16 y, and in
  // place: the host's bits.
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const gizml::Shape shape = gizml::builtForGpuSimulator() ? gizml::Shape{64, 4096} : gizml::Shape{512, 48 * 1024};
  const std::int64_t c = shape[0], groups = gizml::builtForGpuSimulator() ? 16 : 32;
  const Tensor x = host(randomFloats(Key{7, 7}, c * shape[1], 2.0f, 0.5f), shape);
  const Tensor w = host(randomFloats(Key{8, 8}, c), {c}), b = host(randomFloats(Key{9, 9}, c), {c});
  const Tensor xg = x.to(gpu), wg = w.to(gpu), bg = b.to(gpu);
  for (DType dtype : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtypeName(dtype));
    EXPECT_TRUE(sameBits(netops::groupNorm(xg, groups, wg, bg, 1e-6, true, dtype).toFloats(),
                         netops::groupNorm(x, groups, w, b, 1e-6, true, dtype).toFloats()));
  }
  Tensor inPlace = xg.clone();
  netops::groupNormInto(inPlace, groups, wg, bg, 1e-6, false, inPlace);
  EXPECT_TRUE(sameBits(inPlace.toFloats(), netops::groupNorm(x, groups, w, b, 1e-6, false, DType::F32).toFloats()));
}

TEST(GroupNormCuda, WholePieceShapesEqualTheHost) {
  // Shapes whose slices and channels are whole 16-byte pieces (the one launch of
  // GIZML_CUDA_GROUP_NORM_AHEAD takes them, where it is set): one group; groups of one channel;
  // channels of 4 values; 3 groups; channels of two chunks of 4096, the second of 64 values.
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const std::tuple<gizml::Shape, std::int64_t> cases[] = {
      {{1, 64}, 1}, {{16, 4}, 1}, {{4, 4096}, 4}, {{3, 64, 64}, 3}, {{8, 4160}, 2}};
  for (const auto& [shape, groups] : cases) {
    SCOPED_TRACE(gizml::shapeString(shape) + " in " + std::to_string(groups));
    const std::int64_t c = shape[0];
    const Tensor x = host(randomFloats(Key{10, static_cast<std::uint32_t>(c)}, Tensor::empty(shape).numel()), shape);
    const Tensor w = host(randomFloats(Key{11, 11}, c), {c}), b = host(randomFloats(Key{12, 12}, c), {c});
    for (DType dtype : {DType::F32, DType::BF16})
      EXPECT_TRUE(sameBits(netops::groupNorm(x.to(gpu), groups, w.to(gpu), b.to(gpu), 1e-5, true, dtype).toFloats(),
                           netops::groupNorm(x, groups, w, b, 1e-5, true, dtype).toFloats()));
  }
}

// ---- gatedNormAddInto ------------------------------------------------------------------------------------

TEST(GatedNormAdd, AccuracyAgainstFloat64) {
  // x + y rsqrt(mean(y^2) + eps) w gate in float64; bound 1e-5 (|y r w gate| + |x|) + 1e-7,
  // measured worst 0.025 of it.
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name());
    auto x = randomFloats(Key{110, static_cast<std::uint32_t>(c.n)}, c.rows * c.n);
    auto y = roundedToBF16(randomFloats(Key{111, static_cast<std::uint32_t>(c.n)}, c.rows * c.n, 2.0f, 0.5f));
    auto w = randomFloats(Key{112, 0}, c.n), gate = randomFloats(Key{113, 0}, kMods * c.n);
    auto map = mapOf(Key{114, 0}, c.rows);
    Tensor out = host(x, {c.rows, c.n});
    netops::gatedNormAddInto(out, host(y, {c.rows, c.n}).to(DType::BF16), host(w, {c.n}), host(gate, {kMods, c.n}),
                             host(map, {c.rows}), 1e-6);
    const auto got = out.toVector<float>();
    double worst = 0;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const auto n64 = normalized64(y.data() + r * c.n, c.n, static_cast<double>(1e-6f), false);
      const std::int64_t m = static_cast<std::int64_t>(map[r]);
      for (std::int64_t i = 0; i < c.n; ++i) {
        const double add = n64[i] * w[i] * gate[m * c.n + i], want = x[r * c.n + i] + add;
        const double bound = 1e-5 * (std::fabs(add) + std::fabs(x[r * c.n + i])) + 1e-7;
        worst = std::max(worst, std::fabs(got[r * c.n + i] - want) / bound);
      }
    }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

/// gatedNormAdd past 32 MiB of x and y (the host's pipeline, as modulatedNorm's) equals the same
/// rows in four chunks below it, every row; rows of 3072 and 3080 (a last step of 8).
TEST(GatedNormAdd, PipelinedRowsEqualRowsInChunks) {
  const std::int64_t rows = 2752;
  for (std::int64_t n : {std::int64_t{3072}, std::int64_t{3080}}) {
    SCOPED_TRACE(n);
    const Tensor x = Tensor::normal(Key{120, 0}, {rows, n});
    const Tensor y = Tensor::normal(Key{121, 0}, {rows, n}).to(DType::BF16);
    const Tensor w = host(randomFloats(Key{122, 0}, n), {n}), gate = host(randomFloats(Key{123, 0}, kMods * n), {kMods, n});
    const Tensor map = host(mapOf(Key{124, 0}, rows), {rows});
    ASSERT_GE(x.bytes() + y.bytes(), std::size_t{32} << 20);
    const Tensor all = x.clone();
    netops::gatedNormAddInto(all, y, w, gate, map, 1e-6);
    for (std::int64_t k = 0; k < 4; ++k) {
      const std::int64_t r0 = k * rows / 4, r1 = (k + 1) * rows / 4;
      SCOPED_TRACE(r0);
      const Tensor part = x.rows(r0, r1).clone();
      netops::gatedNormAddInto(part, y.rows(r0, r1), w, gate, map.rows(r0, r1), 1e-6);
      EXPECT_TRUE(sameBits(part.toFloats(), all.rows(r0, r1).toFloats()));
    }
  }
}

TEST(GatedNormAdd, BadInput) {
  const char* fn = "gizml::netops::gatedNormAddInto";
  Tensor x = host(std::vector<float>(12, 7.0f), {3, 4});
  Tensor y = host(randomFloats(Key{1, 1}, 12), {3, 4}).to(DType::BF16), w = host(randomFloats(Key{2, 2}, 4), {4});
  Tensor gate = host(randomFloats(Key{3, 3}, 8), {2, 4}), map = host({0, 1, 1}, {3});
  expectThrowsNaming([&] { netops::gatedNormAddInto(Tensor(), y, w, gate, map, 1e-6); }, fn, "x");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x.to(DType::BF16), y, w, gate, map, 1e-6); }, fn, "x");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y.to(DType::F32), w, gate, map, 1e-6); }, fn, "y");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, host(randomFloats(Key{1, 1}, 8), {2, 4}).to(DType::BF16), w, gate, map, 1e-6); }, fn, "y");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, host({1, 2}, {2}), gate, map, 1e-6); }, fn, "w");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w.to(DType::BF16), gate, map, 1e-6); }, fn, "w");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, host({1, 2, 3, 4}, {1, 4}).to(DType::BF16), map, 1e-6); }, fn, "gate");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, host({1, 2, 3}, {1, 3}), map, 1e-6); }, fn, "gate");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, gate, host({0, 1}, {2}), 1e-6); }, fn, "map");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, gate, map.to(DType::I32), 1e-6); }, fn, "map");
  expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, gate, map, -1.0); }, fn, "eps");
  for (float bad : {2.0f, 0.5f, -1.0f, kNaN})
    expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, gate, host({0, 1, bad}, {3}), 1e-6); }, fn, "map");
  EXPECT_TRUE(allEqual(x, 7.0f)) << "x must be untouched";
}

TEST(GatedNormAddCuda, BadMapSetsTheDeviceErrorFlag) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  Tensor x = host(randomFloats(Key{1, 1}, 12), {3, 4}).to(gpu);
  Tensor y = host(randomFloats(Key{1, 2}, 12), {3, 4}).to(DType::BF16).to(gpu), w = host(randomFloats(Key{2, 2}, 4), {4}).to(gpu);
  Tensor gate = host(randomFloats(Key{3, 3}, 8), {2, 4}).to(gpu);
  for (float bad : {7.0f, 2.0f, 0.5f, -1.0f, kNaN}) {
    SCOPED_TRACE("map entry " + std::to_string(bad));
    expectThrowsNaming([&] { netops::gatedNormAddInto(x, y, w, gate, host({0, bad, 1}, {3}).to(gpu), 1e-6); x.toFloats(); },
                       "gizml::netops::gatedNormAddInto", "map");
  }
  // The flag is cleared once reported: a good map runs.
  EXPECT_NO_THROW({
    netops::gatedNormAddInto(x, y, w, gate, host({0, 1, 1}, {3}).to(gpu), 1e-6);
    x.toFloats();
  });
}

// ---- pixelNormInto -----------------------------------------------------------------------------------------

TEST(PixelNorm, AccuracyAgainstFloat64) {
  // PyTorch's pixel norm, x * rsqrt(mean over channels of x^2 + 1e-8), then SiLU, in float64.
  // Bound 1e-5 |y64| + 1e-7 (a chain of positive terms, four roundings, SiLU within a few ulp);
  // measured worst 0.054 of it.
  struct Shape {
    std::int64_t frames, c, pixels;
  };
  for (const Shape& s : {Shape{1, 1, 3}, Shape{2, 3, 17}, Shape{1, 16, 33}, Shape{3, 77, 40}, Shape{1, 512, 20}})
    for (bool act : {false, true}) {
      SCOPED_TRACE("[" + std::to_string(s.frames) + ", " + std::to_string(s.c) + ", " + std::to_string(s.pixels) + "]" +
                   (act ? " silu" : ""));
      const std::int64_t count = s.frames * s.c * s.pixels;
      auto x = randomFloats(Key{130, static_cast<std::uint32_t>(count)}, count, 2.0f, 0.25f);
      Tensor out = Tensor::empty({s.frames, s.c, s.pixels});
      netops::pixelNormInto(host(x, {s.frames, s.c, s.pixels}), 1e-8, act, out);
      const auto y = out.toVector<float>();
      double worst = 0;
      for (std::int64_t f = 0; f < s.frames; ++f)
        for (std::int64_t p = 0; p < s.pixels; ++p) {
          double ss = 0;
          for (std::int64_t ch = 0; ch < s.c; ++ch) ss += std::pow(static_cast<double>(x[(f * s.c + ch) * s.pixels + p]), 2);
          const double r = 1.0 / std::sqrt(ss / s.c + static_cast<double>(1e-8f));
          for (std::int64_t ch = 0; ch < s.c; ++ch) {
            const std::int64_t i = (f * s.c + ch) * s.pixels + p;
            double want = x[i] * r;
            if (act) want = want / (1.0 + std::exp(-want));
            worst = std::max(worst, std::fabs(y[i] - want) / (1e-5 * std::fabs(want) + 1e-7));
          }
        }
      EXPECT_LE(worst, 1.0) << "worst error / bound";
    }
}

TEST(PixelNorm, SiluAfterTheNormAndInPlace) {
  // 4100 pixels: the host's runs of 2048 pixels, two long ones and a short one a frame.
  const std::int64_t frames = 2, c = 5, pixels = 4100, count = frames * c * pixels;
  const auto x = withSpecials(Key{131, 0}, count);
  Tensor plain = Tensor::empty({frames, c, pixels}), activated = Tensor::empty({frames, c, pixels});
  netops::pixelNormInto(host(x, {frames, c, pixels}), 1e-8, false, plain);
  netops::pixelNormInto(host(x, {frames, c, pixels}), 1e-8, true, activated);
  auto want = plain.toVector<float>();
  for (float& v : want) v = gizml::exact::silu(v);
  EXPECT_TRUE(sameBits(activated.toVector<float>(), want));
  for (DType dtype : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(gizml::dtypeName(dtype));
    // SiLU runs on the F32 value; BF16 rounds once, as it is stored. out = x gives the same.
    Tensor in = host(x, {frames, c, pixels}).to(dtype), out = Tensor::empty(in.shape(), dtype);
    netops::pixelNormInto(in, 1e-8, true, out);
    Tensor f32 = Tensor::empty(in.shape());
    netops::pixelNormInto(in.to(DType::F32), 1e-8, true, f32);
    EXPECT_TRUE(sameBits(out.toFloats(), f32.to(dtype).toFloats()));
    // In place, with and without SiLU (with AVX-512 the host takes another loop in place without
    // SiLU than out of place: PixelNorm::host), the same bits as out of place.
    for (bool act : {false, true}) {
      Tensor apart = Tensor::empty(in.shape(), dtype), same = in.clone();
      netops::pixelNormInto(in, 1e-8, act, apart);
      netops::pixelNormInto(same, 1e-8, act, same);
      EXPECT_TRUE(sameBits(same.toFloats(), apart.toFloats())) << "out = x, " << (act ? "SiLU" : "no SiLU");
    }
  }
}

TEST(PixelNorm, SiluOfLargeValuesEqualsTheReference) {
  // Without AVX-512 the host's blocks of pixels whose values are provably below 86 in magnitude take
  // SiLU without the exp's test of the lanes (norms/host.cpp, pixelValuesSmall); |y| <= sqrt(c)
  // about, so with c = 3000 channels they do, with c = 8192 they must not: a pixel whose channels
  // are all zero but one has y = +-sqrt(c) there (+-90.5, where exp(-y) is a subnormal or past the
  // fast path), beside pixels of random values and of several spikes, F32 and BF16, in place.
  for (const std::int64_t c : {std::int64_t{3000}, std::int64_t{8192}}) {
    const std::int64_t pixels = 256, count = c * pixels;
    auto x = randomFloats(Key{137, static_cast<std::uint32_t>(c)}, count);
    for (std::int64_t p = 0; p < 128; ++p) {
      for (std::int64_t ch = 0; ch < c; ++ch) x[ch * pixels + p] = 0.0f;
      const std::int64_t spikes = 1 + p % 4;  // |y| = sqrt(c / spikes)
      for (std::int64_t k = 0; k < spikes; ++k) x[((p * 7 + k * 131) % c) * pixels + p] = p % 2 ? 3.0f : -3.0f;
    }
    std::vector<float> want(count);
    gizml::reference::pixelNorm(x.data(), 1, c, pixels, 1e-8, true, want.data());
    for (DType dtype : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::string(gizml::dtypeName(dtype)) + ", c " + std::to_string(c));
      Tensor in = host(x, {1, c, pixels}).to(dtype);
      std::vector<float> wantOf = want;
      if (dtype == DType::BF16) {
        // The reference on the BF16 values, rounded as stored.
        const auto rounded = in.toFloats();
        gizml::reference::pixelNorm(rounded.data(), 1, c, pixels, 1e-8, true, wantOf.data());
        wantOf = host(wantOf, {1, c, pixels}).to(DType::BF16).toFloats();
      }
      netops::pixelNormInto(in, 1e-8, true, in);
      EXPECT_TRUE(sameBits(in.toFloats(), wantOf));
    }
  }
}

/// The host's blocks of pixels (128 with AVX-512, 64 without) take shortcuts where their sums
/// prove every value small (norms/host.cpp, pixelValuesSmall: SiLU's exp without its test or
/// clamp, BF16 rounded without the NaN's test); blocks that hold special values must not, or must
/// give the same bits. Blocks holding a NaN, an infinity, a value whose square overflows, a pixel
/// of zeros, or nothing special, with and without SiLU, F32 and BF16, in place and out, each equal
/// to the reference. (Values past 86 with SiLU: SiluOfLargeValuesEqualsTheReference.)
TEST(PixelNorm, SpecialValuesEqualTheReference) {
  const std::int64_t c = 16, pixels = 1024, count = c * pixels;
  auto x = randomFloats(Key{139, 1}, count);
  const auto set = [&](std::int64_t pixel, std::int64_t ch, float v) { x[ch * pixels + pixel] = v; };
  set(5, 3, NAN);           // block 0 either way
  set(200, 0, INFINITY);    // AVX-512's block 1, AVX2's block 3
  set(330, 15, -INFINITY);  // block 2 / 5
  set(460, 7, 3e30f);       // block 3 / 7: its square overflows, the sum is inf
  for (std::int64_t ch = 0; ch < c; ++ch) set(700, ch, 0.0f);  // block 5 / 10: r = 1 / sqrt(eps)
  set(900, 2, 1e-30f);      // block 7 / 14: a tiny sum beside the pixel's others
  for (bool act : {false, true})
    for (DType dtype : {DType::F32, DType::BF16})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(std::string(gizml::dtypeName(dtype)) + (act ? ", SiLU" : "") + (inPlace ? ", in place" : ""));
        Tensor in = host(x, {1, c, pixels}).to(dtype);
        const auto rounded = in.toFloats();
        std::vector<float> want(count);
        gizml::reference::pixelNorm(rounded.data(), 1, c, pixels, 1e-8, act, want.data());
        if (dtype == DType::BF16) want = host(want, {1, c, pixels}).to(DType::BF16).toFloats();
        Tensor out = inPlace ? in : Tensor::empty(in.shape(), dtype);
        netops::pixelNormInto(in, 1e-8, act, out);
        EXPECT_TRUE(sameBits(out.toFloats(), want));
      }
}

/// An out past 32 MiB, apart from x, is streamed past the caches (F32 and BF16); in place
/// it is not. Both, and each frame taken alone (below 32 MiB), give the same bits, F32 and BF16,
/// with and without SiLU; 4128 pixels a channel (a multiple of 32: streamable) end each
/// frame in a short run and partial blocks.
TEST(PixelNorm, StreamedOutEqualsInPlaceAndFramesAlone) {
  const std::int64_t c = 384, pixels = 4128;
  for (DType dtype : {DType::F32, DType::BF16}) {
  SCOPED_TRACE(dtypeName(dtype));
  const std::int64_t frames = dtype == DType::F32 ? 6 : 12;
  const Tensor x = Tensor::normal(Key{132, 0}, {frames, c, pixels}).to(dtype);
  ASSERT_GE(x.bytes(), std::size_t{32} << 20);
  for (bool act : {false, true}) {
    SCOPED_TRACE(act ? "SiLU" : "no SiLU");
    const Tensor out = Tensor::empty(x.shape(), dtype);
    netops::pixelNormInto(x, 1e-8, act, out);
    Tensor same = x.clone();
    netops::pixelNormInto(same, 1e-8, act, same);
    EXPECT_TRUE(sameBits(same.toFloats(), out.toFloats())) << "out = x";
    for (std::int64_t f = 0; f < frames; ++f) {
      const Tensor alone = Tensor::empty({1, c, pixels}, dtype);
      netops::pixelNormInto(x.rows(f, f + 1), 1e-8, act, alone);
      EXPECT_TRUE(sameBits(alone.toFloats(), out.rows(f, f + 1).toFloats())) << "frame " << f;
    }
  }
  }
}

TEST(PixelNorm, BadInput) {
  const char* fn = "gizml::netops::pixelNormInto";
  Tensor x = host(randomFloats(Key{1, 1}, 24), {2, 3, 4});
  Tensor out = host(std::vector<float>(24, 7.0f), {2, 3, 4});
  expectThrowsNaming([&] { netops::pixelNormInto(Tensor(), 1e-8, false, out); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNormInto(x.to(DType::F16), 1e-8, false, out); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNormInto(host(randomFloats(Key{1, 1}, 24), {6, 4}), 1e-8, false, out); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNormInto(Tensor::empty({2, 0, 4}), 1e-8, false, Tensor::empty({2, 0, 4})); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNormInto(x, 1e-8, false, Tensor()); }, fn, "out");
  expectThrowsNaming([&] { netops::pixelNormInto(x.to(DType::BF16), 1e-8, false, out); }, fn, "out");
  expectThrowsNaming([&] { netops::pixelNormInto(x, 1e-8, false, host(std::vector<float>(24, 7.0f), {2, 4, 3})); }, fn, "out");
  expectThrowsNaming([&] { netops::pixelNormInto(x, -1.0, false, out); }, fn, "eps");
  expectThrowsNaming([&] { netops::pixelNormInto(x, std::nan(""), true, out); }, fn, "eps");
  EXPECT_TRUE(allEqual(out, 7.0f)) << "out must be untouched";
}

TEST(PixelNorm, ReturningFormEqualsInto) {
  // pixelNorm(x, eps, act): a new tensor of x's shape and dtype holding pixelNormInto's bits.
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool act : {false, true}) {
      SCOPED_TRACE(dtypeName(dtype) + (act ? " SiLU" : ""));
      const Tensor x = Tensor::normal(Key{133, 0}, {2, 5, 37}).to(dtype);
      const Tensor y = netops::pixelNorm(x, 1e-8, act);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), x.shape());
      const Tensor out = Tensor::empty(x.shape(), dtype);
      netops::pixelNormInto(x, 1e-8, act, out);
      EXPECT_TRUE(sameBits(y.toFloats(), out.toFloats()));
    }
  EXPECT_EQ(netops::pixelNorm(Tensor::empty({2, 3, 0}), 1e-8, true).shape(), (std::vector<std::int64_t>{2, 3, 0}));
  const char* fn = "gizml::netops::pixelNorm";
  const Tensor x = host(randomFloats(Key{1, 1}, 24), {2, 3, 4});
  expectThrowsNaming([&] { netops::pixelNorm(Tensor(), 1e-8, false); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNorm(x.to(DType::F16), 1e-8, false); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNorm(host(randomFloats(Key{1, 1}, 24), {6, 4}), 1e-8, false); }, fn, "x");
  expectThrowsNaming([&] { netops::pixelNorm(x, -1.0, false); }, fn, "eps");
}

// ---- groupNorm -------------------------------------------------------------------------------------------

TEST(GroupNorm, AccuracyAgainstFloat64) {
  // F.group_norm(x, groups, w, b, eps) then SiLU, in float64 (two-pass mean and variance).
  // Bound 1e-5 (|xhat w| + |b|) + 1e-6 on F32 outputs; measured worst 0.023 of it.
  struct Shape {
    std::int64_t c, spatial, groups;
  };
  for (const Shape& s : {Shape{4, 5, 2}, Shape{32, 17, 32}, Shape{64, 81, 32}, Shape{16, 1000, 4}, Shape{12, 1, 3}})
    for (bool act : {false, true}) {
      SCOPED_TRACE("c " + std::to_string(s.c) + " S " + std::to_string(s.spatial) + " groups " + std::to_string(s.groups) +
                   (act ? " silu" : ""));
      const std::int64_t count = s.c * s.spatial, length = count / s.groups;
      auto x = randomFloats(Key{150, static_cast<std::uint32_t>(count)}, count, 2.0f, 0.5f);
      auto w = randomFloats(Key{151, 0}, s.c), b = randomFloats(Key{152, 0}, s.c);
      auto y = netops::groupNorm(host(x, {s.c, s.spatial}), s.groups, host(w, {s.c}), host(b, {s.c}), 1e-5, act, DType::F32)
                   .toVector<float>();
      double worst = 0;
      for (std::int64_t g = 0; g < s.groups; ++g) {
        double mean = 0, var = 0;
        for (std::int64_t i = 0; i < length; ++i) mean += x[g * length + i];
        mean /= length;
        for (std::int64_t i = 0; i < length; ++i) var += std::pow(x[g * length + i] - mean, 2);
        var /= length;
        for (std::int64_t i = 0; i < length; ++i) {
          const std::int64_t ch = (g * length + i) / s.spatial;
          const double xhat = (x[g * length + i] - mean) / std::sqrt(var + static_cast<double>(1e-5f));
          double want = xhat * w[ch] + b[ch];
          const double bound = 1e-5 * (std::fabs(xhat * w[ch]) + std::fabs(b[ch])) + 1e-6;
          if (act) want = want / (1.0 + std::exp(-want));
          worst = std::max(worst, std::fabs(y[g * length + i] - want) / bound);
        }
      }
      EXPECT_LE(worst, 1.0) << "worst error / bound";
    }
}

TEST(GroupNorm, BF16IsTheF32ResultRounded) {
  auto x = randomFloats(Key{153, 0}, 8 * 37);
  auto w = randomFloats(Key{154, 0}, 8), b = randomFloats(Key{155, 0}, 8);
  auto f32 = netops::groupNorm(host(x, {8, 37}), 4, host(w, {8}), host(b, {8}), 1e-5, true, DType::F32);
  auto bf16 = netops::groupNorm(host(x, {8, 37}), 4, host(w, {8}), host(b, {8}), 1e-5, true, DType::BF16);
  EXPECT_EQ(bf16.dtype(), DType::BF16);
  EXPECT_TRUE(sameBits(bf16.toFloats(), f32.to(DType::BF16).toFloats()));
}

TEST(GroupNorm, BadInput) {
  const char* fn = "gizml::netops::groupNorm";
  Tensor x = host(randomFloats(Key{1, 1}, 24), {4, 6});
  Tensor w = host(randomFloats(Key{2, 2}, 4), {4}), b = host(randomFloats(Key{3, 3}, 4), {4});
  expectThrowsNaming([&] { netops::groupNorm(Tensor(), 2, w, b, 1e-5, false, DType::F32); }, fn, "x");
  expectThrowsNaming([&] { netops::groupNorm(x.to(DType::BF16), 2, w, b, 1e-5, false, DType::F32); }, fn, "x");
  expectThrowsNaming([&] { netops::groupNorm(x, 0, w, b, 1e-5, false, DType::F32); }, fn, "groups");
  expectThrowsNaming([&] { netops::groupNorm(x, 3, w, b, 1e-5, false, DType::F32); }, fn, "groups");
  expectThrowsNaming([&] { netops::groupNorm(x, -2, w, b, 1e-5, false, DType::F32); }, fn, "groups");
  expectThrowsNaming([&] { netops::groupNorm(x, 2, host({1, 2}, {2}), b, 1e-5, false, DType::F32); }, fn, "w");
  expectThrowsNaming([&] { netops::groupNorm(x, 2, w.to(DType::BF16), b, 1e-5, false, DType::F32); }, fn, "w");
  expectThrowsNaming([&] { netops::groupNorm(x, 2, w, b.to(DType::BF16), 1e-5, false, DType::F32); }, fn, "b");
  expectThrowsNaming([&] { netops::groupNorm(x, 2, w, host({1, 2}, {2}), 1e-5, false, DType::F32); }, fn, "b");
  expectThrowsNaming([&] { netops::groupNorm(x, 2, w, b, -1.0, false, DType::F32); }, fn, "eps");
  expectThrowsNaming([&] { netops::groupNorm(x, 2, w, b, 1e-5, false, DType::F16); }, fn, "dtype");
}

TEST(GroupNorm, IntoEqualsGroupNormAndRunsInPlace) {
  // Into out of either dtype: groupNorm's bits. In place (out = x, F32): the same bits too, on the
  // host's fused path (a thread takes a group: 64 groups) and its two passes (2 groups).
  for (std::int64_t groups : {2, 64})
    for (bool act : {false, true}) {
      SCOPED_TRACE("groups " + std::to_string(groups) + (act ? " SiLU" : ""));
      const std::int64_t c = 128, spatial = 40;
      const Tensor x = host(randomFloats(Key{180, static_cast<std::uint32_t>(groups)}, c * spatial, 2.0f), {c, 4, 10});
      const Tensor w = host(randomFloats(Key{181, 0}, c), {c}), b = host(randomFloats(Key{182, 0}, c), {c});
      for (DType dtype : {DType::F32, DType::BF16}) {
        Tensor out = Tensor::zeros({c, 4, 10}, dtype);
        netops::groupNormInto(x, groups, w, b, 1e-5, act, out);
        EXPECT_TRUE(sameBits(out.toFloats(), netops::groupNorm(x, groups, w, b, 1e-5, act, dtype).toFloats()));
      }
      Tensor inPlace = x.clone();
      netops::groupNormInto(inPlace, groups, w, b, 1e-5, act, inPlace);
      EXPECT_TRUE(sameBits(inPlace.toFloats(), netops::groupNorm(x, groups, w, b, 1e-5, act, DType::F32).toFloats()));
    }
}

/// An F32 y past 32 MiB is streamed past the caches (where every channel starts 64-byte aligned).
/// Every value of a large x equals the same channels taken in four chunks below that size (each its
/// own groups, w and b): F32 and BF16, with and without SiLU, in place too. Channels of 37 x 901
/// values (slices and channels end in partial steps; y not streamed) and of 32 x 1040 (streamed).
TEST(GroupNorm, LargeGroupsEqualGroupsInChunks) {
  const std::int64_t c = 256, groups = 32;
  const Tensor w = host(randomFloats(Key{184, 0}, c), {c}), b = host(randomFloats(Key{185, 0}, c), {c});
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{c, 37, 901}, std::vector<std::int64_t>{c, 32, 1040}}) {
    SCOPED_TRACE(shape[2]);
    const Tensor x = Tensor::normal(Key{183, 0}, shape);
    ASSERT_GE(x.bytes(), std::size_t{32} << 20);
    for (bool act : {false, true}) {
      SCOPED_TRACE(act ? "SiLU" : "no SiLU");
      for (DType dtype : {DType::F32, DType::BF16}) {
        SCOPED_TRACE(dtypeName(dtype));
        const Tensor all = netops::groupNorm(x, groups, w, b, 1e-5, act, dtype);
        for (std::int64_t k = 0; k < 4; ++k) {
          const std::int64_t c0 = k * c / 4, c1 = (k + 1) * c / 4;
          SCOPED_TRACE(c0);
          const Tensor part =
              netops::groupNorm(x.rows(c0, c1), groups / 4, w.rows(c0, c1), b.rows(c0, c1), 1e-5, act, dtype);
          EXPECT_TRUE(sameBits(part.toFloats(), all.rows(c0, c1).toFloats()));
        }
      }
      Tensor inPlace = x.clone();
      netops::groupNormInto(inPlace, groups, w, b, 1e-5, act, inPlace);
      EXPECT_TRUE(sameBits(inPlace.toFloats(), netops::groupNorm(x, groups, w, b, 1e-5, act, DType::F32).toFloats()));
    }
  }
}

/// A BF16 y past 32 MiB is streamed past the caches too (with AVX-512): every value equals the
/// same channels in four chunks below that size, with SiLU.
TEST(GroupNorm, StreamedBF16EqualsGroupsInChunks) {
  const std::int64_t c = 512, groups = 32;
  const Tensor x = Tensor::normal(Key{186, 0}, {c, 32, 1040});
  const Tensor w = host(randomFloats(Key{187, 0}, c), {c}), b = host(randomFloats(Key{188, 0}, c), {c});
  const Tensor all = netops::groupNorm(x, groups, w, b, 1e-5, true, DType::BF16);
  ASSERT_GE(all.bytes(), std::size_t{32} << 20);
  for (std::int64_t k = 0; k < 4; ++k) {
    const std::int64_t c0 = k * c / 4, c1 = (k + 1) * c / 4;
    const Tensor part = netops::groupNorm(x.rows(c0, c1), groups / 4, w.rows(c0, c1), b.rows(c0, c1), 1e-5, true,
                                          DType::BF16);
    EXPECT_TRUE(sameBits(part.toFloats(), all.rows(c0, c1).toFloats())) << "channels from " << c0;
  }
}

/// The host's pipelines (a thread runs its next group's sums inside a group's values, its next
/// block's first pass inside a block's second, its next row's prefetch inside a row's sums) depend
/// on how the threads split the work: 1, 2, 3 and 5 threads give the same bits. groupNorm with
/// groups of partial steps, empty slices and more groups than a thread takes; pixelNorm with SiLU
/// over runs of whole blocks and short rests (128-pixel blocks), F32 and BF16, in place and not;
/// rowNormRope on rows of several heads.
TEST(DiffusionNorms, ThreadCountsChangeNoBit) {
  struct Threads {
    ~Threads() { restoreThreadsForTest(); }
  } restore;
  struct Run {
    std::string name;
    std::function<std::vector<float>()> values;
  };
  std::vector<Run> runs;
  for (const auto& [c, spatial, groups] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{64, 81, 32}, {32, 561, 8}, {64, 3, 16}, {128, 1024, 32}})
    for (bool act : {false, true}) {
      const Tensor x = host(randomFloats(Key{190, static_cast<std::uint32_t>(c * spatial)}, c * spatial, 2.0f), {c, spatial});
      const Tensor w = host(randomFloats(Key{191, 0}, c), {c}), b = host(randomFloats(Key{192, 0}, c), {c});
      for (DType dtype : {DType::F32, DType::BF16})
        runs.push_back({"groupNorm [" + std::to_string(c) + ", " + std::to_string(spatial) + "] / " +
                            std::to_string(groups) + (act ? " SiLU " : " ") + dtypeName(dtype),
                        [=] { return netops::groupNorm(x, groups, w, b, 1e-5, act, dtype).toFloats(); }});
    }
  for (const auto& [frames, c, pixels] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{3, 7, 1100}, {2, 1000, 300}, {5, 16, 384}, {3, 3, 2100}})
    for (DType dtype : {DType::F32, DType::BF16}) {
      const Tensor x = host(randomFloats(Key{193, static_cast<std::uint32_t>(pixels)}, frames * c * pixels, 2.0f),
                            {frames, c, pixels})
                           .to(dtype);
      const std::string name = "pixelNorm SiLU [" + std::to_string(frames) + ", " + std::to_string(c) + ", " +
                               std::to_string(pixels) + "] " + dtypeName(dtype);
      runs.push_back({name, [=] {
                        const Tensor out = Tensor::empty(x.shape(), dtype);
                        netops::pixelNormInto(x, 1e-8, true, out);
                        return out.toFloats();
                      }});
      runs.push_back({name + " in place", [=] {
                        Tensor same = x.clone();
                        netops::pixelNormInto(same, 1e-8, true, same);
                        return same.toFloats();
                      }});
    }
  const std::int64_t rows = 37, width = 512, head = 128;
  std::vector<std::uint16_t> v;
  for (float f : randomFloats(Key{194, 0}, rows * width, 2.0f)) v.push_back(gizml::floatToBF16(f));
  const std::vector<float> w = randomFloats(Key{195, 0}, width), cos = randomFloats(Key{196, 0}, rows * width / 2),
                           sin = randomFloats(Key{197, 0}, rows * width / 2);
  runs.push_back({"rowNormRope", [=] {
                    std::vector<std::uint16_t> bits = v;
                    netops::rowNormRopeInto(gizml::Gpu::host(), bits.data(), width, rows, width, head, w.data(), 1e-6,
                                            cos.data(), sin.data());
                    std::vector<float> out;
                    for (std::uint16_t u : bits) out.push_back(gizml::bf16ToFloat(u));
                    return out;
                  }});
  for (const Run& run : runs) {
    SCOPED_TRACE(run.name);
    setThreadsForTest(1);
    const std::vector<float> one = run.values();
    for (int n : {2, 3, 5}) {
      setThreadsForTest(n);
      EXPECT_TRUE(sameBits(run.values(), one)) << n << " threads";
    }
  }
}

/// gizml called from the caller's own threads (an active OpenMP region of 4, each thread its own
/// item): every op gives the bits it gives alone. A loop of one thread (a decode step's row) runs
/// without a region of its own only outside the caller's: inside it, its `omp for` would bind to
/// the caller's team and each thread would take a share of its own call's rows. Shapes of one
/// thread's work and of more (which a region of its own then runs on one thread).
TEST(DiffusionNorms, CalledFromTheCallersThreadsChangeNoBit) {
  constexpr int kItems = 4;
  const auto ops = [](int item) {
    const std::uint32_t k = static_cast<std::uint32_t>(item);
    std::vector<std::vector<float>> out;
    const std::int64_t width = 512, mods = 2;
    const Tensor w = host(randomFloats(Key{200, k}, width), {width});
    const Tensor shift = host(randomFloats(Key{201, k}, mods * width), {mods, width});
    const Tensor scale = host(randomFloats(Key{202, k}, mods * width), {mods, width});
    for (std::int64_t rows : {1, 40}) {
      const Tensor x = host(randomFloats(Key{203, k}, rows * width, 2.0f), {rows, width});
      std::vector<float> m(static_cast<std::size_t>(rows));
      for (std::int64_t r = 0; r < rows; ++r) m[static_cast<std::size_t>(r)] = static_cast<float>(r % mods);
      const Tensor map = host(m, {rows});
      out.push_back(netops::modulatedNorm(x, w, shift, scale, map, 1e-6, true).toFloats());
      const auto codes = netops::modulatedInt8Rows(x, w, shift, scale, map, 1e-6);
      out.push_back(codes.q.toFloats());
      out.push_back(codes.s.toFloats());
      out.push_back(netops::int8Rows(x).q.toFloats());
      out.push_back(netops::hadamardRows(x).toFloats());
    }
    for (std::int64_t pixels : {16, 3000}) {
      const Tensor x = host(randomFloats(Key{204, k}, 2 * 8 * pixels, 2.0f), {2, 8, pixels});
      out.push_back(netops::pixelNorm(x, 1e-8, true).toFloats());
    }
    for (std::int64_t spatial : {3, 2000}) {
      const Tensor x = host(randomFloats(Key{205, k}, 64 * spatial, 2.0f), {64, spatial});
      const Tensor gw = host(randomFloats(Key{206, k}, 64), {64}), gb = host(randomFloats(Key{207, k}, 64), {64});
      out.push_back(netops::groupNorm(x, 32, gw, gb, 1e-5, true, DType::F32).toFloats());
    }
    return out;
  };
  std::vector<std::vector<std::vector<float>>> alone, inside(kItems);
  for (int item = 0; item < kItems; ++item) alone.push_back(ops(item));
  int team = 0;
#pragma omp parallel num_threads(kItems)
  {
#pragma omp single
    team = omp_get_num_threads();
    const int item = omp_get_thread_num();
    inside[static_cast<std::size_t>(item)] = ops(item);
  }
  ASSERT_EQ(team, kItems) << "the caller's region has its 4 threads";
  for (int item = 0; item < kItems; ++item)
    for (std::size_t op = 0; op < alone[0].size(); ++op)
      EXPECT_TRUE(sameBits(inside[static_cast<std::size_t>(item)][op], alone[static_cast<std::size_t>(item)][op]))
          << "item " << item << ", result " << op;
}

TEST(GroupNorm, IntoBadInput) {
  const char* fn = "gizml::netops::groupNormInto";
  Tensor x = host(randomFloats(Key{1, 1}, 24), {4, 6});
  Tensor w = host(randomFloats(Key{2, 2}, 4), {4}), b = host(randomFloats(Key{3, 3}, 4), {4});
  Tensor out = host(std::vector<float>(24, 7.0f), {4, 6});
  expectThrowsNaming([&] { netops::groupNormInto(Tensor(), 2, w, b, 1e-5, false, out); }, fn, "x");
  expectThrowsNaming([&] { netops::groupNormInto(x.to(DType::BF16), 2, w, b, 1e-5, false, out); }, fn, "x");
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, w.to(DType::BF16), b, 1e-5, false, out); }, fn, "w");
  expectThrowsNaming([&] { netops::groupNormInto(x, 3, w, b, 1e-5, false, out); }, fn, "groups");
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, host({1, 2}, {2}), b, 1e-5, false, out); }, fn, "w");
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, w, host({1, 2}, {2}), 1e-5, false, out); }, fn, "b");
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, w, b, -1.0, false, out); }, fn, "eps");
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, w, b, 1e-5, false, Tensor()); }, fn, "out");
  Tensor f16 = host(std::vector<float>(24, 7.0f), {4, 6}).to(DType::F16);
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, w, b, 1e-5, false, f16); }, fn, "out");
  Tensor wrongShape = host(std::vector<float>(24, 7.0f), {6, 4});
  expectThrowsNaming([&] { netops::groupNormInto(x, 2, w, b, 1e-5, false, wrongShape); }, fn, "out");
  EXPECT_TRUE(allEqual(out, 7.0f) && allEqual(f16, 7.0f) && allEqual(wrongShape, 7.0f)) << "outputs untouched";
}

TEST(DiffusionNorms, OutputsOverlappingTheirInputsAreAnError) {
  // Views into one buffer: an output sharing a byte with an input, other than x itself where the
  // op runs in place, is an error naming the output, and nothing is written.
  Tensor buf = host(randomFloats(Key{9, 1}, 5 * 4), {5, 4});
  const std::vector<float> before = buf.toVector<float>();
  const Tensor w = host(randomFloats(Key{9, 2}, 4), {4}), shift = host(randomFloats(Key{9, 3}, 8), {2, 4});
  const Tensor scale = host(randomFloats(Key{9, 4}, 8), {2, 4}), map = host({0, 1, 1}, {3});
  const char* modulated = "gizml::netops::modulatedNormInto";
  const auto modulatedInto = [&](const Tensor& x, const Tensor& sh, const Tensor& y) {
    return [=] { netops::modulatedNormInto(x, w, sh, scale, map, 1e-6, false, y); };
  };
  expectThrowsNaming(modulatedInto(buf.rows(0, 3), shift, buf.rows(2, 5)), modulated, "y", "apart from x");
  expectThrowsNaming(modulatedInto(buf.rows(0, 3), shift, buf.rows(0, 3)), modulated, "y", "apart from x");
  expectThrowsNaming(modulatedInto(buf.rows(2, 5), buf.rows(0, 2), buf.rows(1, 4)), modulated, "y", "apart from x");
  const Tensor other = host(randomFloats(Key{9, 5}, 12), {3, 4});
  expectThrowsNaming(modulatedInto(other, buf.rows(0, 2), buf.rows(1, 4)), modulated, "y", "apart from shift");
  // gatedNormAddInto writes x: apart from its gate.
  const Tensor y = host(randomFloats(Key{9, 6}, 12), {3, 4}).to(DType::BF16);
  expectThrowsNaming([&] { netops::gatedNormAddInto(buf.rows(0, 3), y, w, buf.rows(2, 4), map, 1e-6); },
                     "gizml::netops::gatedNormAddInto", "x", "apart from gate");
  // pixelNormInto and groupNormInto: out may be x itself, not a part of it or w or b.
  const Tensor frames = buf.reshape({5, 2, 2});
  expectThrowsNaming([&] { netops::pixelNormInto(frames.rows(0, 3), 1e-8, false, frames.rows(1, 4)); },
                     "gizml::netops::pixelNormInto", "out", "x itself");
  const char* group = "gizml::netops::groupNormInto";
  expectThrowsNaming([&] { netops::groupNormInto(buf.rows(0, 4), 2, w, w, 1e-5, false, buf.rows(1, 5)); }, group, "out",
                     "x itself");
  const Tensor x42 = other.rows(0, 2).reshape({4, 2}), inW = buf.rows(0, 1).reshape({4});
  expectThrowsNaming([&] { netops::groupNormInto(x42, 2, inW, w, 1e-5, false, buf.rows(0, 2).reshape({4, 2})); }, group,
                     "out", "apart from w");
  EXPECT_TRUE(sameBits(buf.toVector<float>(), before)) << "nothing written";
  // In place, x itself, runs.
  netops::groupNormInto(buf.rows(0, 4), 2, w, w, 1e-5, false, buf.rows(0, 4));
  netops::pixelNormInto(frames.rows(0, 3), 1e-8, false, frames.rows(0, 3));
}

// ---- rowNormRopeInto -----------------------------------------------------------------------------------

namespace {
struct RopeInputs {
  std::int64_t rows, width, head, stride;
  std::vector<std::uint16_t> v;  // BF16 bits [rows, stride]
  std::vector<float> w, cos, sin;
  RopeInputs(std::int64_t rows_, std::int64_t width_, std::int64_t head_, std::int64_t stride_, std::uint32_t seed)
      : rows(rows_), width(width_), head(head_), stride(stride_) {
    for (float f : randomFloats(Key{170, seed}, rows * stride, 2.0f, 0.25f)) v.push_back(gizml::floatToBF16(f));
    w = randomFloats(Key{171, seed}, width);
    // cos / sin of real angles, as a rotary table holds them.
    for (float a : randomFloats(Key{172, seed}, rows * width / 2, 3.0f)) {
      cos.push_back(static_cast<float>(std::cos(a)));
      sin.push_back(static_cast<float>(std::sin(a)));
    }
  }
  void run(std::vector<std::uint16_t>& rowsBits) const {
    netops::rowNormRopeInto(gizml::Gpu::host(), rowsBits.data(), stride, rows, width, head, w.data(), 1e-6, cos.data(),
                            sin.data());
  }
};
}  // namespace

TEST(RowNormRope, AccuracyAgainstFloat64) {
  // The float64 norm and rotation, then BF16's one rounding: bound 2^-8 |y64| (half a BF16 ulp,
  // the most it can be relative to the value: 8 significant bits) + 1e-5 (the four products' sizes)
  // + 1e-6 for the F32 steps. BF16's rounding fills it: measured worst 0.96.
  for (auto [rows, width, head] : {std::tuple{3, 8, 4}, std::tuple{2, 24, 6}, std::tuple{4, 256, 128}, std::tuple{2, 34, 34}}) {
    SCOPED_TRACE("width " + std::to_string(width) + " head " + std::to_string(head));
    const RopeInputs in(rows, width, head, width + 3, static_cast<std::uint32_t>(width));
    auto v = in.v;
    in.run(v);
    double worst = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<double> x(width);
      double ss = 0;
      for (std::int64_t i = 0; i < width; ++i) ss += std::pow(x[i] = gizml::bf16ToFloat(in.v[r * in.stride + i]), 2);
      const double scale = 1.0 / std::sqrt(ss / width + static_cast<double>(1e-6f));
      const std::int64_t half = head / 2;
      for (std::int64_t h = 0; h < width / head; ++h)
        for (std::int64_t e = 0; e < half; ++e) {
          const std::int64_t a = h * head + e, j = r * (width / 2) + h * half + e;
          const double p = x[a] * scale * in.w[a], q = x[a + half] * scale * in.w[a + half];
          const double slack = 1e-5 * (std::fabs(p * in.cos[j]) + std::fabs(q * in.sin[j]) + std::fabs(q * in.cos[j]) +
                                       std::fabs(p * in.sin[j])) + 1e-6;
          for (auto [at, want] : {std::pair{a, p * in.cos[j] - q * in.sin[j]}, std::pair{a + half, q * in.cos[j] + p * in.sin[j]}}) {
            const double got = gizml::bf16ToFloat(v[r * in.stride + at]);
            worst = std::max(worst, std::fabs(got - want) / (std::ldexp(std::fabs(want), -8) + slack));
          }
        }
      for (std::int64_t i = width; i < in.stride; ++i) EXPECT_EQ(v[r * in.stride + i], in.v[r * in.stride + i]) << "past width";
    }
    EXPECT_LE(worst, 1.0) << "worst error / bound";
  }
}

TEST(RowNormRope, NormIsRmsNorm) {
  // With cos = 1 and sin = +0 the rotation keeps each value (fma(p, 1, -(q * 0)) = p for p != 0):
  // the result is rmsNorm's y over the whole row, rounded to BF16.
  RopeInputs in(3, 64, 16, 64, 7);
  std::fill(in.cos.begin(), in.cos.end(), 1.0f);
  std::fill(in.sin.begin(), in.sin.end(), 0.0f);
  auto v = in.v;
  in.run(v);
  std::vector<float> x;
  for (std::uint16_t b : in.v) x.push_back(gizml::bf16ToFloat(b));
  std::vector<float> got;
  for (std::uint16_t b : v) got.push_back(gizml::bf16ToFloat(b));
  EXPECT_TRUE(sameBits(got, netops::rmsNorm(host(x, {3, 64}), host(in.w, {64}), 1e-6).y.to(DType::BF16).toFloats()));
}

TEST(RowNormRope, BadInput) {
  const char* fn = "gizml::netops::rowNormRopeInto";
  RopeInputs in(2, 8, 4, 10, 1);
  auto v = in.v;
  const auto g = gizml::Gpu::host();
  auto call = [&](std::uint16_t* at, std::int64_t stride, std::int64_t rows, std::int64_t width, std::int64_t head,
                  const float* w, double eps, const float* cos, const float* sin) {
    return [=] { netops::rowNormRopeInto(g, at, stride, rows, width, head, w, eps, cos, sin); };
  };
  const float *w = in.w.data(), *c = in.cos.data(), *s = in.sin.data();
  expectThrowsNaming(call(nullptr, 10, 2, 8, 4, w, 1e-6, c, s), fn, "at");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 4, nullptr, 1e-6, c, s), fn, "w");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 4, w, 1e-6, nullptr, s), fn, "cos");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 4, w, 1e-6, c, nullptr), fn, "sin");
  expectThrowsNaming(call(v.data(), 7, 2, 8, 4, w, 1e-6, c, s), fn, "stride");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 3, w, 1e-6, c, s), fn, "head");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 0, w, 1e-6, c, s), fn, "head");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 6, w, 1e-6, c, s), fn, "width");
  expectThrowsNaming(call(v.data(), 10, -1, 8, 4, w, 1e-6, c, s), fn, "rows");
  expectThrowsNaming(call(v.data(), 10, 2, 8, 4, w, -1.0, c, s), fn, "eps");
  // Tables inside the rows (written in place): w in the last row's values, cos from the first's.
  std::vector<std::uint16_t> big(64);
  const auto* inRows = reinterpret_cast<const float*>(big.data());
  expectThrowsNaming(call(big.data(), 10, 2, 8, 4, inRows + 8, 1e-6, c, s), fn, "w", "apart from the rows");
  expectThrowsNaming(call(big.data(), 10, 2, 8, 4, w, 1e-6, inRows + 1, s), fn, "cos");
  expectThrowsNaming(call(big.data() + 16, 10, 2, 8, 4, w, 1e-6, c, inRows + 1), fn, "sin");
  EXPECT_EQ(big, std::vector<std::uint16_t>(64)) << "the rows must be untouched";
  netops::rowNormRopeInto(g, big.data() + 32, 10, 1, 8, 4, w, 1e-6, inRows, inRows + 4);  // tables before the row
  EXPECT_EQ(v, in.v) << "the rows must be untouched";
}

// ---- against PyTorch (tests/data/torch_norms.txt) ----------------------------------------------------

namespace {
/// |got - want| <= tolerance (1 + |want|) for every element.
void expectNear(const std::vector<float>& got, const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance * (1.0 + std::fabs(want[i]))) << "element " << i;
}
}  // namespace

TEST(PixelNorm, MatchesPyTorch) {
  const auto cases = gizml::test::torchCases("torch_norms.txt", "pixelNorm");
  ASSERT_GE(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto& v = c.ints;  // frames, c, pixels, act
    Tensor x = host(c.floats("x"), {v[0], v[1], v[2]}), out = Tensor::zeros(x.shape());
    netops::pixelNormInto(x, 1e-8, v[3] != 0, out);
    expectNear(out.toVector<float>(), c.field("y"), 2e-6);
  }
}

TEST(GroupNorm, MatchesPyTorch) {
  const auto cases = gizml::test::torchCases("torch_norms.txt", "groupNorm");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const gizml::Shape shape(c.ints.begin() + 2, c.ints.end());  // after groups and act
    const std::int64_t channels = shape[0];
    Tensor y = netops::groupNorm(host(c.floats("x"), shape), c.ints[0], host(c.floats("weight"), {channels}),
                                 host(c.floats("bias"), {channels}), c.field("eps").at(0), c.ints[1] != 0, DType::F32);
    expectNear(y.toVector<float>(), c.field("y"), 1e-5);
  }
}

TEST(ModulatedNorm, MatchesPyTorchAdaLN) {
  const auto cases = gizml::test::torchCases("torch_norms.txt", "adaLN");
  ASSERT_GE(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::int64_t rows = c.ints[0], n = c.ints[1], mods = c.ints[2];
    Tensor y = netops::modulatedNorm(host(c.floats("x"), {rows, n}), host(c.floats("weight"), {n}),
                                     host(c.floats("shift"), {mods, n}), host(c.floats("scale"), {mods, n}),
                                     host(c.floats("map"), {rows}), c.field("eps").at(0), c.ints[3] != 0);
    expectNear(y.toVector<float>(), c.field("y"), 1e-5);
  }
}
