// exp and log over all 2^32 float inputs (SPEC §1.2): within the stated ulp bound of float64's
// value, exact on the special values, and the host's 16-lane version equal to the scalar one (which
// CUDA compiles from the same source) on every input.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "exact/math.hpp"
#include "exact/row16.hpp"
#include "exact/vec16.hpp"
#include "support/compare.hpp"

namespace {

using gizml::exact::f32x16;
using gizml::exact::u32x16;

struct Sweep {
  double maxUlp = 0;
  std::uint32_t worstInput = 0;
  std::uint64_t vectorMismatches = 0;
  std::uint32_t firstMismatch = 0;
};

std::uint32_t bitsOf(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
float fromBits(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

/// Every float x, 16 at a time, with 2^28 chunks of 16 consecutive floats shared among the threads
/// in interleaved pieces of 2^16 inputs, not one half of the floats a thread: a function's cost
/// differs by sign (exp's negative half into the subnormals), and with halves one of 2 threads sat
/// idle most of the sweep (exp: 104 s, the threads' time 147 s). each(x, bits, mine) runs a chunk.
template <class Each>
Sweep sweepAllFloats(Each each) {
  std::vector<Sweep> perThread(static_cast<std::size_t>(omp_get_max_threads()));
  const std::int64_t chunks = std::int64_t{1} << 28;
#pragma omp parallel
  {
    Sweep& mine = perThread[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(static, 4096)
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      const u32x16 bits = gizml::exact::iota16(static_cast<std::uint32_t>(chunk * 16));
      alignas(64) std::uint32_t inputs[16];
      gizml::exact::storeAll16(reinterpret_cast<float*>(inputs), gizml::exact::fromBits(bits));
      each(gizml::exact::fromBits(bits), inputs, mine);
    }
  }
  Sweep all;
  for (const Sweep& t : perThread) {
    if (t.maxUlp > all.maxUlp) {
      all.maxUlp = t.maxUlp;
      all.worstInput = t.worstInput;
    }
    if (t.vectorMismatches && !all.vectorMismatches) all.firstMismatch = t.firstMismatch;
    all.vectorMismatches += t.vectorMismatches;
  }
  return all;
}

/// Every float x: scalar(x) against exact(x) in ulps (the formula's accuracy: scalar code, the same
/// bits on every build; CI's first step). The 16 scalar results first, apart from the checks'
/// branches and calls: 16 independent chains side by side, where one at a time waited out each
/// one's latency. With ulpError's own bit steps (compare.hpp), on a Xeon, 2 threads: exp's sweep 90
/// -> 29 s, log's 40 -> 24 (the lanes compared too, then).
template <class Scalar, class Exact>
Sweep sweepAccuracy(Scalar scalar, Exact exact) {
  return sweepAllFloats([&](f32x16, const std::uint32_t* inputs, Sweep& mine) {
    float scalars[16];
    for (int l = 0; l < 16; ++l) scalars[l] = scalar(fromBits(inputs[l]));
    for (int l = 0; l < 16; ++l) {
      const double err = gizml::test::ulpError(scalars[l], exact(static_cast<double>(fromBits(inputs[l]))));
      if (err > mine.maxUlp) {
        mine.maxUlp = err;
        mine.worstInput = inputs[l];
      }
    }
  });
}

/// Every float x: lanes(x) against scalar(x) bit for bit (NaN against NaN), for the build's own
/// lanes (AVX-512, AVX2's halves, their fast paths): CI runs it on every build (label "lanes").
template <class Lanes, class Scalar>
Sweep sweepLanes(Lanes lanes, Scalar scalar) {
  return sweepAllFloats([&](f32x16 x, const std::uint32_t* inputs, Sweep& mine) {
    alignas(64) float got[16];
    gizml::exact::storeAll16(got, lanes(x));
    float scalars[16];
    for (int l = 0; l < 16; ++l) scalars[l] = scalar(fromBits(inputs[l]));
    if (std::memcmp(got, scalars, sizeof got) == 0) return;
    for (int l = 0; l < 16; ++l) {
      const bool bothNan = std::isnan(scalars[l]) && std::isnan(got[l]);
      if (!bothNan && bitsOf(scalars[l]) != bitsOf(got[l]) && mine.vectorMismatches++ == 0)
        mine.firstMismatch = inputs[l];
    }
  });
}

}  // namespace

TEST(ExactMath, ExpOverAllFloats) {
  const Sweep s = sweepAccuracy([](float x) { return gizml::exact::exp(x); }, [](double x) { return std::exp(x); });
  std::printf("exp: max error %.4f ulp at x = %a (0x%08x)\n", s.maxUlp, fromBits(s.worstInput), s.worstInput);
  EXPECT_LE(s.maxUlp, gizml::exact::EXP_MAX_ULP) << "worst input 0x" << std::hex << s.worstInput;
}

TEST(ExactMath, LogOverAllFloats) {
  const Sweep s = sweepAccuracy([](float x) { return gizml::exact::log(x); }, [](double x) { return std::log(x); });
  std::printf("log: max error %.4f ulp at x = %a (0x%08x)\n", s.maxUlp, fromBits(s.worstInput), s.worstInput);
  EXPECT_LE(s.maxUlp, gizml::exact::LOG_MAX_ULP) << "worst input 0x" << std::hex << s.worstInput;
}

TEST(ExactMath, ExpLanesOverAllFloats) {
  const Sweep s = sweepLanes([](f32x16 x) { return gizml::exact::expLanes(x); },
                             [](float x) { return gizml::exact::exp(x); });
  EXPECT_EQ(s.vectorMismatches, 0u) << "16-lane exp differs from scalar exp, first at input 0x" << std::hex
                                    << s.firstMismatch;
}

TEST(ExactMath, LogLanesOverAllFloats) {
  const Sweep s = sweepLanes([](f32x16 x) { return gizml::exact::logLanes(x); },
                             [](float x) { return gizml::exact::log(x); });
  EXPECT_EQ(s.vectorMismatches, 0u) << "16-lane log differs from scalar log, first at input 0x" << std::hex
                                    << s.firstMismatch;
}

TEST(ExactMath, TwinLanesEqualOneVector) {
  // exp and SiLU on two vectors side by side (exact/twin.hpp, AVX-512's single-instruction steps
  // too) give each vector's own bits: a spread of 2^32 / 61 floats of every kind.
  using gizml::exact::f32x16x2;
  std::uint64_t mismatches = 0;
#pragma omp parallel for schedule(static) reduction(+ : mismatches)
  for (std::int64_t chunk = 0; chunk < (std::int64_t{1} << 32) / (16 * 61); ++chunk) {
    const u32x16 bits = gizml::exact::iota16(0) * 61u + static_cast<std::uint32_t>(chunk * 16 * 61);
    const f32x16 x = gizml::exact::fromBits(bits), y = gizml::exact::fromBits(bits ^ 0x80000000u);
    const f32x16x2 e = gizml::exact::expLanes(f32x16x2{x, y}), s = gizml::exact::siluLanes(f32x16x2{x, y});
    // The inputs again through memory the compiler must assume changed: else it would find the
    // same instructions on both sides and drop the comparison.
    float in[2][16];
    gizml::exact::storeAll16(in[0], x);
    gizml::exact::storeAll16(in[1], y);
    asm volatile("" : "+m"(in));
    const f32x16 x1 = gizml::exact::loadAll16(in[0]), y1 = gizml::exact::loadAll16(in[1]);
    const f32x16 want[4] = {gizml::exact::expLanes(x1), gizml::exact::expLanes(y1), gizml::exact::siluLanes(x1),
                            gizml::exact::siluLanes(y1)};
    const f32x16 got[4] = {e.a, e.b, s.a, s.b};
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 16; ++l) mismatches += bitsOf(got[k][l]) != bitsOf(want[k][l]);
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(ExactMath, SiluOfSmallOverAllFloats) {
  // siluLanesOfSmall (for lanes a caller has proven below 86 in magnitude: no test of the lanes on
  // AVX2, no clamp on AVX-512) against siluLanes, bit for bit, on every float with |x| < 86, one
  // vector and two side by side; each vector's lanes are consecutive floats of one sign.
  using gizml::exact::f32x16x2;
  const std::uint32_t end = bitsOf(86.0f);  // the magnitudes below 86: bits [0, end)
  std::uint64_t mismatches = 0, first = ~std::uint64_t{0};
#pragma omp parallel for schedule(static) reduction(+ : mismatches) reduction(min : first)
  for (std::int64_t chunk = 0; chunk < static_cast<std::int64_t>(end / 16); ++chunk) {
    const u32x16 bits = gizml::exact::iota16(static_cast<std::uint32_t>(chunk * 16));
    const f32x16 x = gizml::exact::fromBits(bits), y = gizml::exact::fromBits(bits | 0x80000000u);
    const f32x16x2 small = gizml::exact::siluLanesOfSmall(f32x16x2{x, y});
    const f32x16 want[2] = {gizml::exact::siluLanes(x), gizml::exact::siluLanes(y)};
    const f32x16 got[4] = {small.a, small.b, gizml::exact::siluLanesOfSmall(x), gizml::exact::siluLanesOfSmall(y)};
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 16; ++l)
        if (bitsOf(got[k][l]) != bitsOf(want[k % 2][l])) {
          ++mismatches;
          first = std::min<std::uint64_t>(first, bitsOf((k % 2 ? y : x)[l]));
        }
  }
  static_assert(0x42ac0000u % 16 == 0);
  EXPECT_EQ(end, 0x42ac0000u);
  EXPECT_EQ(mismatches, 0u) << "first at input 0x" << std::hex << first;
}

TEST(ExactMath, Bf16RoundingOverAllFloats) {
  // The host's 16-lane rounding to BF16 (roundToBF16Lanes, storeBF16x16, storeBF16x32 and
  // storeBF16x32ByParity) against the scalar floatToBF16, every float. With AVX512_BF16 that is
  // vcvtneps2bf16, which rounds the same but for subnormal inputs (it takes them for zero), and
  // the integer steps for a vector holding one (convert.hpp's bf16Bits16): this sweep sees both.
  // (Stop 21 measured it slower, on a bench whose rows had decayed to subnormals, which took the
  // integer steps as well; on stable rows a Zen 4 ran rowNormRope in 10.2-12.2 cycles a 16 values
  // against 13.8-14.6.)
  // Lane l of a chunk takes the floats whose top 4 bits are l, so a vector's lanes round to
  // different BF16 values (16 consecutive floats mostly round to one), and a store that put a lane
  // in another's place fails here.
  // Each vector's lanes go through an array once, and each result is compared with the words it
  // should hold as a whole (memcmp; lane by lane only where they differ, to count them): read lane by
  // lane, each read waited on the wide store before it (a Xeon, x86-64-v3, 2 threads: 27 -> 17 s).
  std::uint64_t mismatches = 0;
#pragma omp parallel for schedule(static) reduction(+ : mismatches)
  for (std::int64_t chunk = 0; chunk < (std::int64_t{1} << 28); ++chunk) {
    const f32x16 x =
        gizml::exact::fromBits((gizml::exact::iota16(0) << 28) | static_cast<std::uint32_t>(chunk));
    // Two steps' worth below: this chunk's floats, then those of the chunk whose top bit differs
    // (every float once in each half, and vectors holding a subnormal, chunks below 2^23, beside
    // ones that do not).
    const std::uint32_t other = static_cast<std::uint32_t>(chunk) ^ (1u << 27);
    const f32x16 y = gizml::exact::fromBits((gizml::exact::iota16(0) << 28) | other);
    float xs[16], ys[16];
    gizml::exact::storeAll16(xs, x);
    gizml::exact::storeAll16(ys, y);
    // What each result should hold: x's words (in order, and as F32 bits), x's and y's words one
    // after the other, and interleaved (x's the even elements).
    alignas(64) std::uint16_t wantX[16], wantXY[32], wantByParity[32];
    alignas(64) std::uint32_t wantXBits[16];
    bool anyNan = false, nanX[16];
    for (int l = 0; l < 16; ++l) {
      wantX[l] = wantXY[l] = wantByParity[2 * l] = gizml::exact::floatToBF16(xs[l]);
      wantXY[16 + l] = wantByParity[2 * l + 1] = gizml::exact::floatToBF16(ys[l]);
      wantXBits[l] = static_cast<std::uint32_t>(wantX[l]) << 16;
      nanX[l] = std::isnan(xs[l]);
      anyNan = anyNan || nanX[l] || std::isnan(ys[l]);
    }
    const auto check = [&](const std::uint16_t* got, const std::uint16_t* want, int words) {
      if (std::memcmp(got, want, 2 * static_cast<std::size_t>(words)) == 0) return;
      for (int w = 0; w < words; ++w) mismatches += got[w] != want[w];
    };
    alignas(64) std::uint32_t rounded[16], numbers[16];
    gizml::exact::storeAll16(reinterpret_cast<float*>(rounded), gizml::exact::roundToBF16Lanes(x));
    check(reinterpret_cast<const std::uint16_t*>(rounded), reinterpret_cast<const std::uint16_t*>(wantXBits), 32);
    alignas(64) std::uint16_t stored[16];
    gizml::exact::storeBF16x16(stored, x);
    check(stored, wantX, 16);
    // Without the NaN's test (for lanes known to hold numbers): the same bits for every other float.
    gizml::exact::storeAll16(reinterpret_cast<float*>(numbers),
                             gizml::exact::fromBits(gizml::exact::bf16RoundedBitsOfNumbers(x)));
    for (int l = 0; l < 16; ++l) mismatches += !nanX[l] && numbers[l] >> 16 != wantX[l];
    // A sixteenth of the chunks stream them, on 64 bytes and on 32.
    alignas(64) std::uint16_t pair[64];
    const bool stream = chunk % 16 == 0;
    std::uint16_t* at = pair + (chunk % 32 == 0 ? 16 : 0);
#if defined(__AVX512BF16__)
    // Rounded together (storeBF16x32: one vcvtne2ps2bf16).
    gizml::exact::storeBF16x32(at, x, y, stream);
    if (stream) _mm_sfence();
    check(at, wantXY, 32);
#endif
    // The same two vectors as the even and the odd elements of 32 (storeBF16x32ByParity), and where
    // neither holds a NaN, rounded as numbers (its kNumbers: the same bits without AVX512_BF16).
    gizml::exact::storeBF16x32ByParity(at, x, y, stream);
    if (stream) _mm_sfence();
    check(at, wantByParity, 32);
    if (!anyNan) {
      gizml::exact::storeBF16x32ByParity<true>(at, x, y, stream);
      if (stream) _mm_sfence();
      check(at, wantByParity, 32);
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(ExactMath, Bf16LoadByParityTakesEveryWordExactly) {
  // loadBF16x32ByParity over every BF16 word, each once at an even and once at an odd element: its
  // lanes are the words as F32 (the bits shifted up 16), even elements in `a`, odd ones in `b`.
  std::vector<std::uint16_t> words(2 * 65536);
  for (std::uint32_t w = 0; w < 65536; ++w) {
    words[2 * w] = static_cast<std::uint16_t>(w);
    words[2 * w + 1] = static_cast<std::uint16_t>(w ^ 0x8001u);  // another sign and low bit beside it
  }
  std::uint64_t mismatches = 0;
  for (std::size_t i = 0; i < words.size(); i += 32) {
    const gizml::exact::f32x16x2 v = gizml::exact::loadBF16x32ByParity(words.data() + i);
    for (int l = 0; l < 16; ++l)
      mismatches += (bitsOf(v.a[l]) != static_cast<std::uint32_t>(words[i + 2 * l]) << 16) +
                    (bitsOf(v.b[l]) != static_cast<std::uint32_t>(words[i + 2 * l + 1]) << 16);
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(ExactMath, ExpSpecialValues) {
  using gizml::exact::exp;
  using gizml::test::sameBits;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(sameBits(exp(inf), inf));
  EXPECT_TRUE(sameBits(exp(-inf), 0.0f));
  EXPECT_TRUE(std::isnan(exp(std::nanf(""))));
  EXPECT_TRUE(sameBits(exp(0.0f), 1.0f));
  EXPECT_TRUE(sameBits(exp(-0.0f), 1.0f));
  EXPECT_TRUE(sameBits(exp(89.0f), inf)) << "overflow";
  EXPECT_TRUE(sameBits(exp(1000.0f), inf));
  EXPECT_TRUE(std::isfinite(exp(88.72f)));
  EXPECT_TRUE(sameBits(exp(88.7228394f), inf)) << "just past log(FLT_MAX)";
  EXPECT_TRUE(sameBits(exp(-104.0f), 0.0f)) << "underflow";
  EXPECT_TRUE(sameBits(exp(-1000.0f), 0.0f));
  EXPECT_GT(exp(-103.0f), 0.0f) << "the subnormal range is kept";
  EXPECT_LT(exp(-103.0f), 0x1p-126f);
  EXPECT_TRUE(sameBits(exp(-103.27893f), 0x1p-149f)) << "the smallest subnormal";
  // A NaN of any sign and payload, quiet or signalling, runs through every step (its integer
  // steps see garbage bits) and comes out NaN, in the scalar and in every lane.
  for (std::uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0xffffffffu, 0x7f800001u, 0xff800001u}) {
    SCOPED_TRACE(bits);
    const float nan = fromBits(bits);
    EXPECT_TRUE(std::isnan(exp(nan)));
    const f32x16 lanes = gizml::exact::expLanes(gizml::exact::f32x16{} + nan);
    for (int l = 0; l < 16; ++l) EXPECT_TRUE(std::isnan(lanes[l]));
  }
}

TEST(ExactMath, LogSpecialValues) {
  using gizml::exact::log;
  using gizml::test::sameBits;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(sameBits(log(0.0f), -inf));
  EXPECT_TRUE(sameBits(log(-0.0f), -inf));
  EXPECT_TRUE(sameBits(log(inf), inf));
  EXPECT_TRUE(std::isnan(log(-inf)));
  EXPECT_TRUE(std::isnan(log(-1.0f)));
  EXPECT_TRUE(std::isnan(log(-0x1p-149f)));
  EXPECT_TRUE(std::isnan(log(std::nanf(""))));
  EXPECT_TRUE(sameBits(log(1.0f), 0.0f));
  EXPECT_TRUE(sameBits(log(0x1p-149f), static_cast<float>(std::log(0x1p-149))));
  EXPECT_TRUE(sameBits(log(std::numeric_limits<float>::max()),
                       static_cast<float>(std::log(static_cast<double>(std::numeric_limits<float>::max())))));
}

TEST(ExactMath, SiluAndSigmoidAccuracy) {
  // SiLU and sigmoid are one division past exp: within 3 ulp of float64 on a sweep of 2^24 inputs
  // spread over the float range above -88 (below it exp(-v) overflows and the SPEC's formula gives
  // 0 where the exact value is a tiny subnormal; checked separately).
  double worstSilu = 0, worstSigmoid = 0;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 257) {
    float x = fromBits(static_cast<std::uint32_t>(b));
    if (std::isnan(x) || x <= -88.0f) continue;
    double xd = x;
    double sig = 1.0 / (1.0 + std::exp(-xd));
    worstSigmoid = std::max(worstSigmoid, gizml::test::ulpError(gizml::exact::sigmoid(x), sig));
    if (std::isfinite(x)) worstSilu = std::max(worstSilu, gizml::test::ulpError(gizml::exact::silu(x), xd * sig));
  }
  std::printf("silu: max %.3f ulp, sigmoid: max %.3f ulp\n", worstSilu, worstSigmoid);
  EXPECT_LE(worstSilu, 3.0);
  EXPECT_LE(worstSigmoid, 3.0);
  EXPECT_EQ(gizml::exact::sigmoid(-100.0f), 0.0f);
  EXPECT_EQ(gizml::exact::sigmoid(100.0f), 1.0f);
  EXPECT_EQ(gizml::exact::silu(100.0f), 100.0f);
  EXPECT_TRUE(std::isnan(gizml::exact::silu(std::nanf(""))));
}

TEST(Vec16, RintOrPlusZeroOverAllSmallFloats) {
  // Every float of magnitude below 2^22 (both signs) and a spread of NaNs: the nearest integer,
  // ties to even, as std::nearbyint gives it, a zero always +0 and a NaN +0.
  const auto want = [](float v) {
    if (std::isnan(v)) return 0.0f;
    const float r = std::nearbyint(v);
    return r == 0.0f ? 0.0f : r;
  };
  std::uint64_t mismatches = 0;
  std::uint32_t first = 0;
  const std::uint32_t limit = bitsOf(0x1p22f);
#pragma omp parallel for schedule(static) reduction(+ : mismatches)
  for (std::int64_t chunk = 0; chunk < 2 * static_cast<std::int64_t>(limit / 16) + (1 << 12); ++chunk) {
    // Chunks [0, limit / 16): positive; the next as many: negative; the rest: NaNs, one in 127.
    const std::int64_t half = limit / 16;
    std::uint32_t base = chunk < half       ? static_cast<std::uint32_t>(chunk * 16)
                         : chunk < 2 * half ? 0x80000000u | static_cast<std::uint32_t>((chunk - half) * 16)
                                            : 0x7f800010u + static_cast<std::uint32_t>((chunk - 2 * half) * 16 * 127);
    if (chunk >= 2 * half && (chunk & 1)) base |= 0x80000000u;
    const f32x16 x = gizml::exact::fromBits(gizml::exact::iota16(base));
    const f32x16 r = gizml::exact::rintOrPlusZero(x);
    for (int l = 0; l < 16; ++l)
      if (bitsOf(r[l]) != bitsOf(want(x[l])) && mismatches++ == 0) {
#pragma omp critical
        first = bitsOf(x[l]);
      }
  }
  EXPECT_EQ(mismatches, 0u) << "first at input 0x" << std::hex << first;
}

#if !defined(__AVX512F__)
TEST(Vec16, AllMagnitudesBelow) {
  // The AVX2 exp's test of its fast path (allMagnitudesBelow, one vector or a twin's two): true only
  // where every lane is a number of magnitude below the bound. Each lane of both vectors in turn
  // holds a value at or past it, a NaN of either sign or an infinity; the others values just below
  // it of either sign, zeros of both signs and subnormals.
  using gizml::exact::allMagnitudesBelow;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float below = std::nextafter(86.0f, 0.0f);
  float lanes[32];
  for (int l = 0; l < 32; ++l) lanes[l] = l % 4 == 0 ? (l % 8 ? -0.0f : 0x1p-149f) : (l % 2 ? below : -below);
  const auto vectors = [&] {
    return gizml::exact::f32x16x2{gizml::exact::loadAll16(lanes), gizml::exact::loadAll16(lanes + 16)};
  };
  EXPECT_TRUE(allMagnitudesBelow(vectors().a, 86.0f));
  EXPECT_TRUE(allMagnitudesBelow(vectors().b, 86.0f));
  EXPECT_TRUE(allMagnitudesBelow(vectors(), 86.0f));
  for (const float outside : {86.0f, -86.0f, std::nextafter(86.0f, inf), nan, -nan, inf, -inf, 1e30f})
    for (int l = 0; l < 32; ++l) {
      const float kept = lanes[l];
      lanes[l] = outside;
      const auto v = vectors();
      EXPECT_FALSE(allMagnitudesBelow(l < 16 ? v.a : v.b, 86.0f)) << "lane " << l << " holding " << outside;
      EXPECT_TRUE(allMagnitudesBelow(l < 16 ? v.b : v.a, 86.0f)) << "lane " << l << " holding " << outside;
      EXPECT_FALSE(allMagnitudesBelow(v, 86.0f)) << "lane " << l << " of the twin holding " << outside;
      lanes[l] = kept;
    }
}
#endif

TEST(Vec16, MaxMagnitude) {
  // The larger magnitude, sign cleared; -0 and +0 give +0; a quiet NaN v leaves best.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float best[] = {0.0f, 0.0f, 1.0f, 1.0f, 2.0f, 0x1p-149f, 3.0f, 0.0f,
                        5.0f, 0.0f, inf,  7.0f, 0.5f, 0.0f,       1e30f, 4.0f};
  const float v[] = {-0.0f, 0.0f,      -2.0f, 0.5f,  -2.0f,  -0x1p-148f, nan,    -inf,
                     -5.0f, 0x1p-149f, 1.0f,  -7.5f, -0.25f, -1e-45f,    -1e31f, -nan};
  const f32x16 r = gizml::exact::maxMagnitude(gizml::exact::loadAll16(best), gizml::exact::loadAll16(v));
  for (int l = 0; l < 16; ++l)
    EXPECT_EQ(bitsOf(r[l]), bitsOf(std::isnan(v[l]) ? best[l] : std::max(best[l], std::fabs(v[l])))) << "lane " << l;
}

TEST(Vec16, TreeSumOfAVectorIsTheTreeOfItsLanes) {
  // row16.hpp's treeSum16 of a vector (its halves added in registers) against order.hpp's loop over
  // an array (the SPEC's lane[i] += lane[i + h], h = 8, 4, 2, 1), bit for bit: lanes of every
  // exponent and sign drawn from random bits (so the additions round, overflow, cancel and
  // underflow), then zeros of both signs, infinities and NaNs in some lanes.
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 32);
  };
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                            0x1p-149f, -0x1p-126f, 3.0e38f};
  for (int trial = 0; trial < 200000; ++trial) {
    float lanes[16];
    const int spread = trial % 4;  // exponents: all, within 2^±8, within 2^±2, equal magnitudes
    for (float& l : lanes) {
      std::uint32_t bits = next();
      if (spread == 1) bits = (bits & 0x807fffffu) | ((119u + (bits >> 23) % 16u) << 23);
      if (spread == 2) bits = (bits & 0x807fffffu) | ((125u + (bits >> 23) % 4u) << 23);
      if (spread == 3) bits = (bits & 0x80000000u) | 0x3fc00000u;
      std::memcpy(&l, &bits, sizeof l);
    }
    if (trial % 16 == 15) lanes[next() % 16] = specials[next() % 8];
    const f32x16 v = gizml::exact::loadAll16(lanes);
    const float want = gizml::exact::treeSum16(lanes), got = gizml::exact::treeSum16(v);
    if (!(std::isnan(want) && std::isnan(got)))
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << "trial " << trial;
    else
      ASSERT_TRUE(std::isnan(got)) << "trial " << trial;
  }
}
