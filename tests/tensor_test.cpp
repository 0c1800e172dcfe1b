// The tensor layer (SPEC §2): Key and Philox, conversions, Tensor views and copies, and its errors.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "core/host_memory.hpp"
#include "exact/row16.hpp"
#include "support/preamble.hpp"

namespace {
float fromBits(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
std::uint32_t bitsOf(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

/// x rounded to nearest even to a float format with `mant` fraction bits, smallest normal
/// exponent `emin` (subnormals below), in float64: the test's independent rounding.
double roundToFormat(double x, int mant, int emin) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = std::max(std::ilogb(x), emin);
  double unit = std::ldexp(1.0, e - mant);
  return std::nearbyint(x / unit) * unit;
}
}  // namespace

// ---- Key ---------------------------------------------------------------------------------------------

TEST(Key, PhiloxKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  EXPECT_EQ((Key{0, 0}.philox(0, 0, 0, 0)), (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ((Key{0xffffffff, 0xffffffff}.philox(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff)),
            (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ((Key{0xa4093822, 0x299f31d0}.philox(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344)),
            (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Key, WordsAreCounterOutputs) {
  Key k{123, 456};
  for (std::uint64_t i : {0ull, 1ull, 3ull, 4ull, 7ull, 1000001ull, (1ull << 34) + 2}) {
    auto block = k.philox(static_cast<std::uint32_t>(i / 4), static_cast<std::uint32_t>((i / 4) >> 32));
    EXPECT_EQ(k.word(i), block[i % 4]) << "word " << i;
    EXPECT_EQ(k.uniform(i), static_cast<float>(block[i % 4] >> 8) * 0x1p-24f);
  }
}

TEST(Key, UniformAndNormalMoments) {
  const std::int64_t n = 1 << 20;
  Tensor u = Tensor::uniform(Key{1, 2}, {n});
  Tensor z = Tensor::normal(Key{1, 2}, {n});
  double su = 0, sz = 0, szz = 0;
  float lo = 1, hi = 0;
  for (float v : u.toVector<float>()) {
    su += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  for (float v : z.toVector<float>()) {
    sz += v;
    szz += double(v) * v;
  }
  EXPECT_GE(lo, 0.0f);
  EXPECT_LT(hi, 1.0f);
  EXPECT_NEAR(su / n, 0.5, 0.002);
  EXPECT_NEAR(sz / n, 0.0, 0.005);
  EXPECT_NEAR(szz / n, 1.0, 0.01);
  // Element i is key.uniform(i) / key.normal(i), whatever the thread count.
  gizml::test::forThreadCounts([&] {
    auto again = Tensor::normal(Key{1, 2}, {n}).toVector<float>();
    EXPECT_TRUE(sameBits(again, z.toVector<float>()));
  });
  EXPECT_TRUE(sameBits(Key{1, 2}.normal(12345), z.toVector<float>()[12345]));
  EXPECT_TRUE(sameBits(Key{1, 2}.uniform(777), u.toVector<float>()[777]));
  EXPECT_NE((Key{1, 2}.split(0)), (Key{1, 2}.split(1)));
}

// ---- Conversions -------------------------------------------------------------------------------------

TEST(Convert, F16MatchesHardwareOnEveryFloat) {
  // F16C's vcvtps2ph (round to nearest even) is an independent implementation of IEEE's rounding.
  std::uint64_t mismatches = 0;
  std::uint32_t first = 0;
#pragma omp parallel for reduction(+ : mismatches)
  for (std::int64_t b = 0; b < (std::int64_t{1} << 32); ++b) {
    float x = fromBits(static_cast<std::uint32_t>(b));
    std::uint16_t hw = _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
    std::uint16_t ours = gizml::floatToF16(x);
    bool ok = std::isnan(x) ? ((ours & 0x7c00) == 0x7c00 && (ours & 0x3ff) != 0 && (ours & 0x200)) : ours == hw;
    if (!ok && mismatches++ == 0) first = static_cast<std::uint32_t>(b);
  }
  EXPECT_EQ(mismatches, 0u) << "first at 0x" << std::hex << first;
  for (int h = 0; h < 65536; ++h) {
    float f = gizml::f16ToFloat(static_cast<std::uint16_t>(h));
    EXPECT_EQ(bitsOf(f), bitsOf(_cvtsh_ss(static_cast<std::uint16_t>(h)))) << "half 0x" << std::hex << h;
    if (!std::isnan(f)) EXPECT_EQ(gizml::floatToF16(f), h) << "round trip of half 0x" << std::hex << h;
  }
}

TEST(Convert, BF16RoundsToNearestEven) {
  std::uint64_t mismatches = 0;
#pragma omp parallel for reduction(+ : mismatches)
  for (std::int64_t b = 0; b < (std::int64_t{1} << 32); b += 7) {
    float x = fromBits(static_cast<std::uint32_t>(b));
    if (std::isnan(x)) continue;
    double want = roundToFormat(x, 7, -126);
    if (std::fabs(want) >= 0x1p128) want = std::copysign(INFINITY, x);  // rounds past the largest BF16
    if (static_cast<double>(gizml::bf16ToFloat(gizml::floatToBF16(x))) != want) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(gizml::floatToBF16(1.0f + 0x1p-8f), 0x3f80) << "a tie goes to even";
  EXPECT_EQ(gizml::floatToBF16(1.0f + 3 * 0x1p-8f), 0x3f82) << "a tie goes to even";
  std::uint16_t qnan = gizml::floatToBF16(fromBits(0x7f800001u));  // a signalling NaN
  EXPECT_TRUE(std::isnan(gizml::bf16ToFloat(qnan)));
  EXPECT_TRUE(qnan & 0x0040) << "NaN becomes quiet";
  EXPECT_EQ(gizml::floatToBF16(std::numeric_limits<float>::max()), 0x7f80) << "rounds up to inf";
}

TEST(Convert, E4M3SaturatesAndRoundsToNearestEven) {
  for (int v = 0; v < 256; ++v) {
    float f = gizml::e4m3ToFloat(static_cast<std::uint8_t>(v));
    if ((v & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    EXPECT_EQ(gizml::floatToE4M3(f), v) << "round trip of 0x" << std::hex << v;
  }
  EXPECT_EQ(gizml::e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(gizml::e4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(gizml::floatToE4M3(1000.0f), 0x7e);
  EXPECT_EQ(gizml::floatToE4M3(-1000.0f), 0xfe);
  EXPECT_EQ(gizml::floatToE4M3(INFINITY), 0x7e) << "saturates, E4M3FN has no inf";
  EXPECT_EQ(gizml::floatToE4M3(std::nanf("")) & 0x7f, 0x7f);
  std::uint64_t mismatches = 0;
#pragma omp parallel for reduction(+ : mismatches)
  for (std::int64_t b = 0; b < (std::int64_t{1} << 32); b += 13) {
    float x = fromBits(static_cast<std::uint32_t>(b));
    if (std::isnan(x)) continue;
    double want = std::clamp(roundToFormat(x, 3, -6), -448.0, 448.0);
    if (static_cast<double>(gizml::e4m3ToFloat(gizml::floatToE4M3(x))) != want) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(Convert, IntegersRoundToNearestEvenThenClamp) {
  EXPECT_EQ(gizml::floatToI8(2.5f), 2);
  EXPECT_EQ(gizml::floatToI8(3.5f), 4);
  EXPECT_EQ(gizml::floatToI8(-2.5f), -2);
  EXPECT_EQ(gizml::floatToI8(300.0f), 127);
  EXPECT_EQ(gizml::floatToI8(-300.0f), -128);
  EXPECT_EQ(gizml::floatToI8(std::nanf("")), 0);
  EXPECT_EQ(gizml::floatToI4(7.6f), 7);
  EXPECT_EQ(gizml::floatToI4(-8.4f), -8);
  EXPECT_EQ(gizml::floatToI4(-9.0f), -8);
  EXPECT_EQ(gizml::floatToI4(0.5f), 0);
}

// ---- Tensor ------------------------------------------------------------------------------------------

TEST(Tensor, CreationShapeAndViews) {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i) + 0.5f;
  Tensor t = Tensor::fromVector(v, {3, 4});
  EXPECT_EQ(t.shape(), (gizml::Shape{3, 4}));
  EXPECT_EQ(t.rowCount(), 3);
  EXPECT_EQ(t.rowLength(), 4);
  EXPECT_EQ(t.dim(-1), 4);
  Tensor mid = t.rows(1, 3);
  EXPECT_EQ(mid.shape(), (gizml::Shape{2, 4}));
  EXPECT_EQ(mid.toVector<float>(), std::vector<float>(v.begin() + 4, v.end()));
  mid.data<float>()[0] = -1.0f;  // views share storage
  EXPECT_EQ(t.toVector<float>()[4], -1.0f);
  EXPECT_EQ(t.reshape({12}).numel(), 12);
  Tensor c = t.clone();
  c.data<float>()[0] = 99.0f;
  EXPECT_EQ(t.toVector<float>()[0], 0.5f) << "clone copies";
}

TEST(Tensor, DTypeConversionRoundTrips) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -2.5f, 3.5f, 1000.0f, -7.25f, 0.1f, 100000.0f};
  Tensor t = Tensor::fromVector(v, {9});
  auto bf = t.to(DType::BF16).toFloats();
  auto h = t.to(DType::F16).toFloats();
  auto e = t.to(DType::E4M3).toFloats();
  auto i8 = t.to(DType::I8).toFloats();
  auto i4 = t.to(DType::I4).toFloats();
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(bf[i], gizml::bf16ToFloat(gizml::floatToBF16(v[i])));
    EXPECT_EQ(h[i], gizml::f16ToFloat(gizml::floatToF16(v[i])));
    EXPECT_EQ(e[i], gizml::e4m3ToFloat(gizml::floatToE4M3(v[i])));
    EXPECT_EQ(i8[i], gizml::floatToI8(v[i]));
    EXPECT_EQ(i4[i], gizml::floatToI4(v[i]));
  }
  EXPECT_EQ(t.to(DType::I4).bytes(), 5u) << "two I4 values a byte";
  EXPECT_EQ(t.to(DType::F64).to(DType::F32).toVector<float>(), v);
  std::vector<std::int32_t> ints = {1, -2, 3};
  EXPECT_EQ(Tensor::fromVector(ints, {3}).toFloats(), (std::vector<float>{1, -2, 3}));
}

TEST(Tensor, ErrorsNameFunctionAndArgument) {
  std::vector<float> v(6, 1.0f);
  try {
    Tensor::fromVector(v, {4, 2});
    FAIL() << "expected gizml::Error";
  } catch (const gizml::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fromVector"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("values"), std::string::npos) << e.what();
  }
  Tensor t = Tensor::fromVector(v, {3, 2});
  EXPECT_THROW(t.rows(2, 4), gizml::Error);
  EXPECT_THROW(t.rows(-1, 1), gizml::Error);
  EXPECT_THROW(t.reshape({4}), gizml::Error);
  EXPECT_THROW(t.data<double>(), gizml::Error);
  // dim's and data's checks are inline, their failures out of line: each still names itself.
  expectThrowsNaming([&] { t.data<std::int32_t>(); }, "gizml::Tensor::data", "T");
  expectThrowsNaming([&] { Tensor::empty({2}, DType::BF16).data<std::int16_t>(); }, "gizml::Tensor::data", "T");
  expectThrowsNaming([&] { t.dim(2); }, "gizml::Tensor::dim", "axis");
  expectThrowsNaming([&] { t.dim(-3); }, "gizml::Tensor::dim", "axis");
  EXPECT_EQ(t.dim(-1), 2);
  EXPECT_EQ(t.dim(-2), 3);
  EXPECT_EQ(t.numel(), 6);
  const Tensor halves = Tensor::empty({2}, DType::BF16);
  EXPECT_EQ(static_cast<void*>(halves.data<std::uint16_t>()), halves.raw()) << "BF16's element type";
  EXPECT_THROW(t.toVector<std::int32_t>(), gizml::Error);
  EXPECT_THROW(Tensor::empty({-1, 2}), gizml::Error);
  EXPECT_THROW(Tensor::empty({1ll << 40, 1ll << 40}), gizml::Error) << "an element count that overflows";
  EXPECT_THROW(Tensor().to(DType::BF16), gizml::Error);
  EXPECT_THROW(gizml::setThreads(0), gizml::Error);
}

/// A host loop takes a thread for each kWorkAThread of its work, at most one a row and at most
/// gizml::threads(): a decode step's one row runs on the calling thread, whatever the count; a
/// kernel that gives no cost a value takes every thread its rows can use.
TEST(Threads, HostLoopsTakeThreadsForTheirWork) {
  namespace exact = gizml::exact;
  struct Restore {
    int before = gizml::threads();
    ~Restore() {
      gizml::setThreads(before);
      exact::setHostWorkAThread(exact::kWorkAThread);
    }
  } restore;
  constexpr std::int64_t kW = exact::kWorkAThread;
  gizml::setThreads(8);
  EXPECT_EQ(exact::hostThreadsFor(1, INT64_MAX), 1) << "one row";
  EXPECT_EQ(exact::hostThreadsFor(0, 0), 1) << "no rows";
  EXPECT_EQ(exact::hostThreadsFor(100, kW), 1);
  EXPECT_EQ(exact::hostThreadsFor(100, kW + 1), 2);
  EXPECT_EQ(exact::hostThreadsFor(100, 3 * kW), 3);
  EXPECT_EQ(exact::hostThreadsFor(100, 100 * kW), 8) << "gizml::threads()";
  EXPECT_EQ(exact::hostThreadsFor(5, 100 * kW), 5) << "one a row";
  EXPECT_EQ(exact::hostThreadsFor(100, INT64_MAX), 8);
  gizml::setThreads(2);
  EXPECT_EQ(exact::hostThreadsFor(100, 100 * kW), 2);
  exact::setHostWorkAThread(1);  // as the tests' setThreadsForTest: every thread the rows allow
  EXPECT_EQ(exact::hostThreadsFor(3, 3), 2);
  EXPECT_EQ(exact::hostThreadsFor(1, 3), 1);
  exact::setHostWorkAThread(0);  // taken as 1
  EXPECT_EQ(exact::hostThreadsFor(3, 2), 2);

  struct RowsOf {
    std::int64_t rows, n;
  };
  struct Costed {
    using Args = RowsOf;
    static std::int64_t costAValue(const Args&) { return 3; }
  };
  struct Uncosted {
    using Args = RowsOf;
  };
  EXPECT_EQ(exact::hostWork<Costed>(RowsOf{4, 256}), 3 * 4 * 256);
  EXPECT_EQ(exact::hostWork<Uncosted>(RowsOf{4, 256}), INT64_MAX);
}

/// A host loop's per-thread scratch (the 8-bit rows' row buffers): 64-byte aligned, the thread's
/// own block again on its next use, another block while that one is lent (a nested use) or where
/// more is asked than a thread keeps, and a new block on another thread.
TEST(Threads, ThreadScratchIsKeptAThreadAndLentOnce) {
  using gizml::detail::ThreadScratch;
  const float* kept;
  {
    const ThreadScratch<float> a(1000);
    kept = a.data();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(kept) % 64, 0u);
    const ThreadScratch<float> nested(1000);
    EXPECT_TRUE(nested.data() + 1000 <= kept || kept + 1000 <= nested.data()) << "a block of its own";
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(nested.data()) % 64, 0u);
  }
  {
    const ThreadScratch<float> again(1000);
    EXPECT_EQ(again.data(), kept) << "the thread's kept block, given back";
    const ThreadScratch<float> nested(10);
    EXPECT_NE(nested.data(), kept);
  }
  {
    const ThreadScratch<float> fewer(10);
    EXPECT_EQ(fewer.data(), kept) << "a smaller ask takes the same block";
  }
  {
    const std::int64_t past = static_cast<std::int64_t>(gizml::detail::kThreadKeptBytes / sizeof(float)) + 1;
    const ThreadScratch<float> large(past);
    EXPECT_NE(large.data(), kept) << "past what a thread keeps";
    large.data()[past - 1] = 1.0f;  // all of it is there (AddressSanitizer builds would say)
  }
  const ThreadScratch<float> mine(1000);
  const float* other = nullptr;
  std::thread([&] {
    const ThreadScratch<float> theirs(1000);
    other = theirs.data();
  }).join();
  EXPECT_NE(other, mine.data()) << "another thread, another block";
}

TEST(Tensor, FromExternalSharesMemoryAndReleasesItsOwnerWithTheLastView) {
  // Memory gizml does not own (the DLPack path of the Python package): held by `owner` until the
  // last view goes, never copied, never freed by gizml.
  auto values = std::make_shared<std::vector<float>>(randomFloats(Key{3, 4}, 6 * 20));
  bool released = false;
  std::shared_ptr<void> owner(values.get(), [&released, values](void*) mutable {
    released = true;
    values.reset();
  });
  float* data = values->data();
  Tensor x = Tensor::fromExternal(data, {6, 20}, DType::F32, Device::host(), std::move(owner));
  values.reset();
  EXPECT_EQ(x.raw(), static_cast<void*>(data)) << "no copy";
  data[21] = 7.5f;
  EXPECT_EQ(x.toVector<float>()[21], 7.5f) << "a write through the owner's pointer is seen by the tensor";
  x.data<float>()[22] = -3.0f;
  EXPECT_EQ(data[22], -3.0f) << "and the other way";
  // An op over external memory gives the bits it gives over gizml's own.
  Tensor w = Tensor::fromVector(randomFloats(Key{5, 6}, 20), {20});
  Tensor b = Tensor::fromVector(randomFloats(Key{7, 8}, 20), {20});
  auto own = netops::layerNorm(x.clone(), w, b, 1e-5);
  auto ext = netops::layerNorm(x, w, b, 1e-5);
  EXPECT_EQ(ext.y.toVector<float>(), own.y.toVector<float>());
  Tensor view = x.rows(1, 3);
  x = Tensor();
  EXPECT_FALSE(released) << "a view keeps the owner";
  EXPECT_EQ(view.toVector<float>()[1], 7.5f);
  view = Tensor();
  EXPECT_TRUE(released) << "the last view releases it";
  // Bad arguments name the function and the argument.
  alignas(8) float one[2] = {1, 2};
  expectThrowsNaming([&] { Tensor::fromExternal(nullptr, {2}, DType::F32, Device::host(), nullptr); },
              "gizml::Tensor::fromExternal", "data");
  expectThrowsNaming([&] { Tensor::fromExternal(reinterpret_cast<char*>(one) + 1, {1}, DType::F32, Device::host(), nullptr); },
              "gizml::Tensor::fromExternal", "data");
  expectThrowsNaming([&] { Tensor::fromExternal(one, {-1}, DType::F32, Device::host(), nullptr); }, "gizml::Tensor::fromExternal", "shape");
  EXPECT_EQ(Tensor::fromExternal(nullptr, {0, 3}, DType::F32, Device::host(), nullptr).numel(), 0);
}

TEST(Tensor, FreedHostMemoryIsCachedAndCanBeReleased) {
  gizml::releaseCachedHostMemory();
  EXPECT_EQ(gizml::cachedHostBytes(), 0u);
  const void* first;
  {
    Tensor t = Tensor::empty({1 << 20});  // 4 MiB
    first = t.raw();
  }
  EXPECT_GE(gizml::cachedHostBytes(), 4u << 20);
  Tensor again = Tensor::empty({1 << 20});
  EXPECT_EQ(again.raw(), first) << "the same size reuses the cached block";
  EXPECT_EQ(gizml::cachedHostBytes(), 0u);
  again = Tensor();
  gizml::releaseCachedHostMemory();
  EXPECT_EQ(gizml::cachedHostBytes(), 0u);
}

TEST(Tensor, NoGpuMeansAClearError) {
  if (gizml::gpuCount() > 0) GTEST_SKIP() << "skipped: a GPU is present (this checks the no-GPU path)";
  try {
    Tensor::empty({4}, DType::F32, Device::cuda(0));
    FAIL() << "expected gizml::Error";
  } catch (const gizml::Error& e) {
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gizml::Gpu::open(0), gizml::Error);
}

// ---- GPU -----------------------------------------------------------------------------------------------

TEST(TensorCuda, CopiesAndDrawsEqualTheHost) {
  GIZML_NEED_GPU();
  auto host = randomFloats(Key{5, 6}, 1000);
  Tensor h = Tensor::fromVector(host, {10, 100});
  Tensor d = h.to(Device::cuda(0));
  EXPECT_EQ(d.device(), Device::cuda(0));
  EXPECT_TRUE(sameBits(d.toVector<float>(), host));
  EXPECT_TRUE(sameBits(d.rows(3, 5).toVector<float>(), h.rows(3, 5).toVector<float>()));
  EXPECT_TRUE(sameBits(d.to(DType::BF16).toFloats(), h.to(DType::BF16).toFloats()));
  for (std::int64_t n : {1, 3, 4, 5, 1001}) {
    EXPECT_TRUE(sameBits(Tensor::uniform(Key{9, 1}, {n}, Device::cuda(0)).toVector<float>(),
                         Tensor::uniform(Key{9, 1}, {n}).toVector<float>()));
    EXPECT_TRUE(sameBits(Tensor::normal(Key{9, 1}, {n}, Device::cuda(0)).toVector<float>(),
                         Tensor::normal(Key{9, 1}, {n}).toVector<float>()));
  }
  EXPECT_TRUE(sameBits(Tensor::zeros({7}, DType::F32, Device::cuda(0)).toVector<float>(), std::vector<float>(7, 0.0f)));
}
