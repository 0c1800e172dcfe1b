// attentionRows' quantized path (src/netops/attention/sage_quant.hpp), checked on the host:
//   1. F32 <-> E4M3 (exact/convert.hpp, the conversion the quantized path uses for P and V) against
//      a float64 definition: all 256 codes decode to their value; F32 -> E4M3 is the nearest value,
//      ties to the even code, saturating to ±448 (±inf too), NaN to NaN, at every midpoint between
//      neighbouring codes and one F32 ulp either side, and on a stride through all 2^32 floats;
//   2. INT8 codes: ties to even, saturation at ±127, zero scale;
//   3. a host emulation of the whole quantized algorithm (the kernel's blocks: Q scales a 16-row
//      block, K' scales and the two-level accumulation a 64-key block; integer dots exact in int32,
//      E4M3 products exact in F32) meets the SPEC's tolerance (cosine similarity >= 0.995, relative
//      L1 <= 0.05) against the exact host attendedRows: random inputs, keys with large per-channel
//      offsets, heads 64 and 128, ragged groups, queries < rows; and without the K-mean subtraction
//      the offset keys fail it (what the subtraction is for).
// The emulation does not reproduce the GPU's bits (the FP8 instruction's internal accumulation and
// the order of l's partial sums differ); tests/attention_test.cpp's GPU test compares the kernel
// with it within a small tolerance.
//
// Break check (done once, by hand): with pCode's factor 448 replaced by 1 (P's codes then small,
// while sageOutput still divides by 448), every emulation case failed on relative L1 (0.998, the
// output 448 times too small; the cosine stayed 0.999, blind to a scale) and pCode(1) != 0x7e;
// restored, all pass.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "exact/convert.hpp"
#include "netops/attention/flash_step.hpp"
#include "netops/attention/sage_quant.hpp"
#include "support/sage_emulation.hpp"
#include "support/preamble.hpp"

namespace {

namespace attn = gizml::netops::attn;
namespace exact = gizml::exact;

// ---- E4M3 -------------------------------------------------------------------------------------

/// The value of an E4M3 code by the OCP definition (bias 7, 3 mantissa bits, subnormals at e = 0,
/// S.1111.111 NaN, no inf), in float64.
double e4m3Value(int code) {
  const int sign = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return sign ? -mag : mag;
}

/// F32 -> E4M3 by the definition, in float64: NaN -> NaN (0x7f, sign kept); |x| >= 448 -> ±448
/// (satfinite); else the nearest of the 127 finite magnitudes, a tie to the one whose code is even.
int e4m3Of(float x) {
  const int sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | 0x7f;
  const double a = std::fabs(double(x));
  if (a >= 448.0) return sign | 0x7e;
  int best = 0;
  double bestErr = a;
  for (int code = 1; code <= 0x7e; ++code) {
    const double err = std::fabs(e4m3Value(code) - a);
    if (err < bestErr || (err == bestErr && (code & 1) == 0 && (best & 1) == 1)) best = code, bestErr = err;
  }
  return sign | best;
}

float nextUp(float x) { return std::nextafter(x, INFINITY); }
float nextDown(float x) { return std::nextafter(x, -INFINITY); }

TEST(SageE4M3, AllCodesDecodeToTheirValue) {
  for (int code = 0; code < 256; ++code) {
    const float got = exact::e4m3ToFloat(static_cast<std::uint8_t>(code));
    const double want = e4m3Value(code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << code;
    } else {
      EXPECT_EQ(double(got), want) << "code " << code;
      EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << "code " << code << ": the sign of zero too";
      EXPECT_EQ(exact::floatToE4M3(got), code) << "code " << code << " round-trips";
    }
  }
}

TEST(SageE4M3, EncodeIsNearestEvenSaturatingAtMidpointsAndSpecials) {
  std::vector<float> xs = {0.0f, -0.0f, 448.0f, 464.0f, nextDown(464.0f), nextUp(464.0f), 480.0f, 1e30f,
                           INFINITY, -INFINITY, -448.0f, -464.0f, -1e30f, std::ldexp(1.0f, -10), std::ldexp(1.0f, -9),
                           std::ldexp(3.0f, -11), std::ldexp(1.0f, -149), std::numeric_limits<float>::quiet_NaN(),
                           -std::numeric_limits<float>::quiet_NaN()};
  // Every midpoint between neighbouring magnitudes (and half the smallest subnormal), and one F32
  // ulp either side of it; the midpoints are exact in F32 (4 mantissa bits).
  for (int code = 0; code < 0x7e; ++code) {
    const float mid = static_cast<float>((e4m3Value(code) + e4m3Value(code + 1)) / 2);
    ASSERT_EQ(double(mid), (e4m3Value(code) + e4m3Value(code + 1)) / 2);
    for (float x : {mid, nextUp(mid), nextDown(mid), static_cast<float>(e4m3Value(code + 1))}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  for (float x : xs) {
    const int got = exact::floatToE4M3(x), want = e4m3Of(x);
    if (std::isnan(x)) {
      EXPECT_EQ(got & 0x7f, 0x7f) << "NaN stays NaN";
    } else {
      EXPECT_EQ(got, want) << "x " << x << " (bits " << std::hex << exact::toBits(x) << std::dec << ")";
    }
  }
}

TEST(SageE4M3, EncodeEqualsDefinitionOnAStrideThroughAllFloats) {
  // 2^32 / 65521 ~ 65,500 floats (a prime stride: every exponent, mantissas well spread).
  int checked = 0;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 65521) {
    const float x = exact::fromBits(static_cast<std::uint32_t>(b));
    if (std::isnan(x)) continue;
    ASSERT_EQ(exact::floatToE4M3(x), e4m3Of(x)) << "x " << x << " bits " << std::hex << b;
    ++checked;
  }
  EXPECT_GT(checked, 60000);
}

// ---- INT8 ---------------------------------------------------------------------------------------

TEST(SageInt8, CodesRoundToNearestEvenAndSaturate) {
  EXPECT_EQ(attn::int8Code(2.5f, 1.0f), 2);
  EXPECT_EQ(attn::int8Code(3.5f, 1.0f), 4);
  EXPECT_EQ(attn::int8Code(-2.5f, 1.0f), -2);
  EXPECT_EQ(attn::int8Code(126.5f, 1.0f), 126);
  EXPECT_EQ(attn::int8Code(127.5f, 1.0f), 127);
  EXPECT_EQ(attn::int8Code(-1000.0f, 1.0f), -127) << "never -128";
  EXPECT_EQ(attn::int8Code(5.0f, 0.0f), 0) << "an all-zero block";
  EXPECT_EQ(attn::int8Code(NAN, 1.0f), 0);
  // The block's largest magnitude is exactly ±127.
  for (float m : {1.0f, 3.7f, 1e-20f, 1e20f, 0.1f}) {
    const float s = attn::int8Scale(m);
    EXPECT_EQ(attn::int8Code(m, s), 127) << m;
    EXPECT_EQ(attn::int8Code(-m, s), -127) << m;
  }
  EXPECT_EQ(attn::pCode(1.0f), 0x7e) << "p = 1 is E4M3's largest value";
  EXPECT_EQ(attn::pCode(0.0f), 0);
}

// ---- the emulation ----------------------------------------------------------------------------------

struct Case {
  std::int64_t rows, heads, head, group, queries;
  float scale, offset;  // qkv values: normal * scale; K's channels plus offset * (channel-dependent)
};

/// qkv [rows, 3 heads head]: normal values times scale; K's channel c of head h also gets
/// offset * (1 + (c * 7 + h) % 5) * (c even ? 1 : -1), a large per-channel offset.
std::vector<float> makeQkv(const Case& c, std::uint32_t seed) {
  const std::int64_t width = 3 * c.heads * c.head;
  std::vector<float> x = randomFloats(Key{61, seed}, c.rows * width, c.scale);
  if (c.offset != 0.0f)
    for (std::int64_t r = 0; r < c.rows; ++r)
      for (std::int64_t h = 0; h < c.heads; ++h)
        for (std::int64_t ch = 0; ch < c.head; ++ch)
          x[r * width + (c.heads + h) * c.head + ch] +=
              c.offset * static_cast<float>(1 + (ch * 7 + h) % 5) * (ch % 2 == 0 ? 1.0f : -1.0f);
  return x;
}

const Case kCases[] = {
    {256, 2, 64, 0, 0, 1.0f, 0.0f},     {300, 2, 128, 150, 0, 1.0f, 0.0f},  {130, 3, 128, 65, 100, 1.0f, 0.0f},
    {192, 2, 64, 64, 130, 2.0f, 0.0f},  {200, 1, 64, 0, 0, 1.0f, 20.0f},    {320, 2, 128, 160, 250, 1.0f, 30.0f},
    {129, 1, 64, 129, 0, 1.0f, 0.0f},   {70, 2, 128, 0, 1, 1.0f, 0.0f},     {512, 1, 128, 0, 0, 3.0f, 0.0f},
    {2048, 1, 64, 0, 0, 1.0f, 5.0f},    {1, 1, 64, 0, 0, 1.0f, 0.0f}};

TEST(SageEmulation, MeetsSpecTolerance) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " heads " << c.heads << " head " << c.head << " group "
                                      << c.group << " queries " << c.queries << " scale " << c.scale << " offset "
                                      << c.offset);
    const auto x = makeQkv(c, static_cast<std::uint32_t>(c.rows + c.head));
    const std::int64_t width = 3 * c.heads * c.head;
    const auto want = netops::attendedRows(host(x, {c.rows, width}), c.heads, c.head, false, c.group, {}, c.queries)
                          .toVector<float>();
    const auto got = gizml::test::sageEmulate(x, c.rows, c.heads, c.head, c.group, c.queries, {});
    const gizml::test::SageError e = gizml::test::sageError(got, want);
    std::printf("sage emulation: rows %lld heads %lld head %lld group %lld queries %lld scale %g offset %g: cosine %.6f "
                "rel L1 %.5f\n",
                (long long)c.rows, (long long)c.heads, (long long)c.head, (long long)c.group, (long long)c.queries,
                double(c.scale), double(c.offset), e.cosine, e.relL1);
    EXPECT_GE(e.cosine, 0.995) << "SPEC: cosine similarity >= 0.995";
    EXPECT_LE(e.relL1, 0.05) << "SPEC: relative L1 <= 0.05";
  }
}

TEST(SageEmulation, WithoutKeyMeanSubtractionOffsetKeysFail) {
  // K with per-channel offsets 50 times its spread: the offsets take INT8's range and the keys'
  // differences (what softmax sees) are lost; with the mean subtracted they are kept.
  const Case c{256, 1, 64, 0, 0, 1.0f, 50.0f};
  const auto x = makeQkv(c, 5);
  const auto want =
      netops::attendedRows(host(x, {c.rows, 3 * c.head}), c.heads, c.head, false, 0, {}, 0).toVector<float>();
  const auto good = gizml::test::sageError(gizml::test::sageEmulate(x, c.rows, c.heads, c.head, 0, 0, {}), want);
  const auto bad = gizml::test::sageError(
      gizml::test::sageEmulate(x, c.rows, c.heads, c.head, 0, 0, {.subtractKeyMean = false}), want);
  std::printf("offset 50: with the K mean: cosine %.6f rel L1 %.5f; without: cosine %.6f rel L1 %.5f\n", good.cosine,
              good.relL1, bad.cosine, bad.relL1);
  EXPECT_GE(good.cosine, 0.995);
  EXPECT_LE(good.relL1, 0.05);
  EXPECT_TRUE(bad.cosine < 0.995 || bad.relL1 > 0.05) << "the subtraction is what keeps offset keys within tolerance";
}

TEST(SageEmulation, ErrorBudget) {
  // Where the error comes from: each quantized step alone (the others in F32), on the same input.
  // Measured (head 128, 512 keys, K offsets 10): relative L1 0.012 from Q K' in INT8, 0.023 from P in
  // E4M3, 0.026 from V in E4M3, 0.037 all together (independent errors: about the root of the sum
  // of squares), 1e-5 with every step in F32 (the emulation's own order of operations).
  const Case c{512, 2, 128, 0, 0, 1.0f, 10.0f};
  const auto x = makeQkv(c, 9);
  const auto want =
      netops::attendedRows(host(x, {c.rows, 3 * c.heads * c.head}), c.heads, c.head, false, 0, {}, 0).toVector<float>();
  struct Variant {
    const char* name;
    gizml::test::SageOptions opt;
  };
  const Variant variants[] = {{"all steps", {}},
                              {"Q K' INT8 only", {.quantizeP = false, .quantizeV = false}},
                              {"P E4M3 only", {.quantizeQK = false, .quantizeV = false}},
                              {"V E4M3 only", {.quantizeQK = false, .quantizeP = false}},
                              {"none (F32 throughout)", {.quantizeQK = false, .quantizeP = false, .quantizeV = false}}};
  for (const Variant& v : variants) {
    const auto e = gizml::test::sageError(gizml::test::sageEmulate(x, c.rows, c.heads, c.head, 0, 0, v.opt), want);
    std::printf("error budget, %s: cosine %.6f rel L1 %.5f\n", v.name, e.cosine, e.relL1);
    EXPECT_GE(e.cosine, 0.995) << v.name;
    EXPECT_LE(e.relL1, 0.05) << v.name;
  }
}

TEST(SageEmulation, AllZeroAndConstantInputs) {
  // Zero Q and K: every score 0, uniform weights, the output the mean of V; zero V: zero output.
  const std::int64_t rows = 80, head = 64, width = 3 * head;
  std::vector<float> x = randomFloats(Key{62, 1}, rows * width);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t ch = 0; ch < 2 * head; ++ch) x[r * width + ch] = 0.0f;
  const auto want = netops::attendedRows(host(x, {rows, width}), 1, head, false, 0, {}, 0).toVector<float>();
  const auto e = gizml::test::sageError(gizml::test::sageEmulate(x, rows, 1, head, 0, 0, {}), want);
  EXPECT_GE(e.cosine, 0.995);
  EXPECT_LE(e.relL1, 0.05);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t ch = 2 * head; ch < 3 * head; ++ch) x[r * width + ch] = 0.0f;
  for (float v : gizml::test::sageEmulate(x, rows, 1, head, 0, 0, {})) ASSERT_EQ(v, 0.0f);
}

}  // namespace
