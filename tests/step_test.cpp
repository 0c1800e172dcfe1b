// A language model's step (SPEC §3) beyond the registry's checks (tests/registry/step_cases.cpp):
// what the candidates promise (the row's best tokens are among them), and bad input — every
// precondition a gizml::Error naming the argument, before anything is written.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "support/preamble.hpp"

using gizml::Gpu;

TEST(CandidatesInto, HoldTheRowsBestTokens) {
  // Each worker keeps its 4 best, so the row's 4 best tokens are always among the candidates, and
  // the best of all the candidates is the row's argmax.
  const std::int64_t rows = 3, vocab = 5000;
  auto x = randomFloats(Key{80, 1}, rows * vocab);
  std::vector<float> cand(rows * netops::CANDIDATE_ROW), top(rows);
  netops::candidatesInto(Gpu::host(), rows, vocab, vocab, false, cand.data(), x.data());
  netops::argmaxInto(Gpu::host(), rows, vocab, vocab, false, top.data(), x.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<std::int64_t> order(vocab);
    for (std::int64_t t = 0; t < vocab; ++t) order[t] = t;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return x[r * vocab + a] > x[r * vocab + b]; });
    std::vector<float> tokens;
    float best = -INFINITY, bestToken = -1;
    for (int i = 0; i < netops::CANDIDATE_ROW; i += 2) {
      const float v = cand[r * netops::CANDIDATE_ROW + i], t = cand[r * netops::CANDIDATE_ROW + i + 1];
      tokens.push_back(t);
      if (v > best) best = v, bestToken = t;
    }
    for (int k = 0; k < netops::TOP_EACH; ++k)
      EXPECT_NE(std::find(tokens.begin(), tokens.end(), static_cast<float>(order[k])), tokens.end()) << "rank " << k;
    EXPECT_EQ(bestToken, top[r]);
    EXPECT_EQ(top[r], static_cast<float>(order[0]));
  }
}

TEST(CandidatesInto, EmptySlotsAreMinusInfAndMinusOne) {
  // 5 tokens: workers 0 .. 4 keep one each, the others none.
  std::vector<float> x = {3, kNaN, 1, 2, 0};
  std::vector<float> cand(netops::CANDIDATE_ROW, 7.0f);
  netops::candidatesInto(Gpu::host(), 1, 5, 5, false, cand.data(), x.data());
  EXPECT_EQ(cand[0], 3.0f);
  EXPECT_EQ(cand[1], 0.0f);
  EXPECT_EQ(cand[2], -INFINITY) << "worker 0 has one token";
  EXPECT_EQ(cand[3], -1.0f);
  EXPECT_EQ(cand[8], -INFINITY) << "worker 1's only token is NaN: never kept";
  EXPECT_EQ(cand[9], -1.0f);
  EXPECT_EQ(cand[16], 1.0f);
  EXPECT_EQ(cand[17], 2.0f);
  EXPECT_EQ(cand[netops::CANDIDATE_ROW - 2], -INFINITY);
  EXPECT_EQ(cand[netops::CANDIDATE_ROW - 1], -1.0f);
}

TEST(StepOps, BadInput) {
  std::vector<float> x(64, 1.0f), out(2 * netops::CANDIDATE_ROW, 5.0f);
  const float* blocks[1] = {x.data()};
  for (const char* fn : {"gizml::netops::argmaxInto", "gizml::netops::candidatesInto"}) {
    const bool argmax = std::string(fn).ends_with("argmaxInto");
    auto call = [&](std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect, float* o,
                    const float* logits, const float* const* b, const Gpu& g = Gpu::host()) {
      if (argmax) netops::argmaxInto(g, rows, vocab, stride, indirect, o, logits, b);
      else netops::candidatesInto(g, rows, vocab, stride, indirect, o, logits, b);
    };
    const float* misaligned = reinterpret_cast<const float*>(reinterpret_cast<const char*>(x.data()) + 1);
    expectThrowsNaming([&] { call(-1, 8, 8, false, out.data(), x.data(), nullptr); }, fn, "rows");
    expectThrowsNaming([&] { call(2, 0, 8, false, out.data(), x.data(), nullptr); }, fn, "vocab");
    expectThrowsNaming([&] { call(1, (1 << 24) + 1, (1 << 24) + 1, false, out.data(), x.data(), nullptr); }, fn, "vocab");
    expectThrowsNaming([&] { call(2, 8, 0, true, out.data(), nullptr, blocks); }, fn, "stride");
    expectThrowsNaming([&] { call(2, 8, 7, false, out.data(), x.data(), nullptr); }, fn, "stride");
    expectThrowsNaming([&] { call(2, 8, 8, false, out.data(), nullptr, nullptr); }, fn, "logits");
    expectThrowsNaming([&] { call(2, 8, 8, false, out.data(), misaligned, nullptr); }, fn, "logits");
    expectThrowsNaming([&] { call(2, 8, 8, true, out.data(), nullptr, nullptr); }, fn, "blocks");
    expectThrowsNaming([&] { call(2, 8, 8, false, nullptr, x.data(), nullptr); }, fn, argmax ? "top" : "cand");
    if (gizml::gpuCount() == 0)
      expectThrowsNaming([&] { call(2, 8, 8, false, out.data(), x.data(), nullptr, Gpu{Device::cuda(0), nullptr}); },
                         fn, "g");
  }
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 5.0f; })) << "a failed call writes nothing";
  const char* fn = "gizml::netops::splitSumInto";
  std::vector<float> y(8, 5.0f);
  expectThrowsNaming([&] { netops::splitSumInto(Gpu::host(), y.data(), x.data(), -1, 2, false); }, fn, "total");
  expectThrowsNaming([&] { netops::splitSumInto(Gpu::host(), y.data(), x.data(), 8, 0, false); }, fn, "splits");
  expectThrowsNaming([&] { netops::splitSumInto(Gpu::host(), nullptr, x.data(), 8, 2, false); }, fn, "y");
  expectThrowsNaming([&] { netops::splitSumInto(Gpu::host(), y.data(), nullptr, 8, 2, false); }, fn, "p");
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 5.0f; })) << "a failed call writes nothing";
}

// ---- sampleCandidates -----------------------------------------------------------------------------------

namespace {

/// The float64 sampler over a whole row: the tokens by value (ties to the lower token), the first
/// topK, softmax at `temperature`, the top-p prefix; each kept token's probability.
std::vector<std::pair<std::int64_t, double>> rowDistribution(const std::vector<float>& row, double temperature,
                                                             std::int64_t topK, double topP) {
  std::vector<std::int64_t> order(row.size());
  for (std::size_t t = 0; t < row.size(); ++t) order[t] = static_cast<std::int64_t>(t);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return row[a] > row[b]; });
  order.resize(static_cast<std::size_t>(topK));
  std::vector<double> p;
  double total = 0;
  for (auto t : order) total += std::exp((static_cast<double>(row[t]) - row[order[0]]) / temperature);
  std::vector<std::pair<std::int64_t, double>> out;
  double running = 0, kept = 0;
  for (auto t : order) {
    const double q = std::exp((static_cast<double>(row[t]) - row[order[0]]) / temperature) / total;
    out.push_back({t, q});
    kept += q;
    running += q;
    if (running >= topP) break;
  }
  for (auto& [t, q] : out) q /= kept;
  return out;
}

std::vector<float> candidatesOf(const std::vector<float>& row) {
  std::vector<float> cand(netops::CANDIDATE_ROW);
  netops::candidatesInto(Gpu::host(), 1, static_cast<std::int64_t>(row.size()), static_cast<std::int64_t>(row.size()),
                         false, cand.data(), row.data());
  return cand;
}

}  // namespace

TEST(SampleCandidates, MatchesAFloat64SamplerOverTheWholeRow) {
  // topK <= TOP_EACH: the candidates hold the row's top-k, so the draws follow the whole row's
  // distribution. Chi-square over 20000 keys, at the 0.1% level (df = kept tokens - 1).
  const double critical[] = {0, 10.83, 13.82, 16.27};
  auto row = randomFloats(Key{81, 1}, 600, 1.5f);
  const auto cand = candidatesOf(row);
  struct Setting {
    double temperature;
    std::int64_t topK;
    double topP;
  };
  for (const Setting& s : {Setting{1.0, 4, 1.0}, Setting{0.7, 3, 1.0}, Setting{2.0, 4, 0.6}, Setting{1.0, 2, 1.0}}) {
    SCOPED_TRACE("temperature " + std::to_string(s.temperature) + " topK " + std::to_string(s.topK) + " topP " +
                 std::to_string(s.topP));
    const auto want = rowDistribution(row, s.temperature, s.topK, s.topP);
    std::map<std::int64_t, int> count;
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) {
      const auto got = netops::sampleCandidates(cand.data(), s.temperature, s.topK, s.topP, Key{1000u + i, 7});
      EXPECT_FALSE(got.mayBeCut);
      ++count[got.token];
    }
    double chi2 = 0;
    int seen = 0;
    for (auto [token, q] : want) {
      const double expected = q * draws;
      chi2 += (count[token] - expected) * (count[token] - expected) / expected;
      seen += count[token];
    }
    EXPECT_EQ(seen, draws) << "every draw is one of the kept tokens";
    if (want.size() > 1) EXPECT_LE(chi2, critical[want.size() - 1]) << "chi-square";
  }
}

TEST(SampleCandidates, TemperatureZeroIsTheArgmaxAndAKeyIsDeterministic) {
  auto row = randomFloats(Key{82, 1}, 3000);
  const auto cand = candidatesOf(row);
  float top = 0;
  netops::argmaxInto(Gpu::host(), 1, 3000, 3000, false, &top, row.data());
  EXPECT_EQ(netops::sampleCandidates(cand.data(), 0.0, 0, 1.0, Key{1, 1}).token, static_cast<std::int64_t>(top));
  EXPECT_EQ(netops::sampleCandidates(cand.data(), 1.0, 4, 1.0, Key{5, 6}).token,
            netops::sampleCandidates(cand.data(), 1.0, 4, 1.0, Key{5, 6}).token);
  // A tiny topP keeps the best token alone.
  EXPECT_EQ(netops::sampleCandidates(cand.data(), 1.0, 4, 1e-9, Key{5, 6}).token, static_cast<std::int64_t>(top));
}

TEST(SampleCandidates, SaysWhenTheTopKMayHaveBeenCut) {
  // Worker 0 holds the 6 largest tokens (0, 256, ..., 1280) but keeps 4: with topK = 5 the
  // threshold (the 5th candidate) is below its fourth value, and its fifth token is missing.
  auto row = randomFloats(Key{83, 1}, 2000);
  for (int j = 0; j < 6; ++j) row[256 * j] = 100.0f - j;
  const auto cand = candidatesOf(row);
  EXPECT_TRUE(netops::sampleCandidates(cand.data(), 1.0, 5, 1.0, Key{1, 2}).mayBeCut);
  EXPECT_FALSE(netops::sampleCandidates(cand.data(), 1.0, 4, 1.0, Key{1, 2}).mayBeCut);
  EXPECT_TRUE(netops::sampleCandidates(cand.data(), 1.0, 0, 1.0, Key{1, 2}).mayBeCut) << "topK 0: the whole row";
}

TEST(SampleCandidates, BadInput) {
  const char* fn = "gizml::netops::sampleCandidates";
  std::vector<float> cand(netops::CANDIDATE_ROW, -1.0f);
  expectThrowsNaming([&] { netops::sampleCandidates(nullptr, 1.0, 4, 1.0, Key{}); }, fn, "cand");
  expectThrowsNaming([&] { netops::sampleCandidates(cand.data(), -1.0, 4, 1.0, Key{}); }, fn, "temperature");
  expectThrowsNaming([&] { netops::sampleCandidates(cand.data(), 1.0, -1, 1.0, Key{}); }, fn, "topK");
  expectThrowsNaming([&] { netops::sampleCandidates(cand.data(), 1.0, 4, 0.0, Key{}); }, fn, "topP");
  expectThrowsNaming([&] { netops::sampleCandidates(cand.data(), 1.0, 4, 1.5, Key{}); }, fn, "topP");
  EXPECT_EQ(netops::sampleCandidates(cand.data(), 1.0, 4, 1.0, Key{}).token, 0) << "no candidates: token 0";
}

// ---- normRotateInto, siluMulRotatedInto ------------------------------------------------------------------

TEST(NormRotateInto, BadInput) {
  const char* fn = "gizml::netops::normRotateInto";
  std::vector<float> x(4 * 256, 1.0f), w(256, 1.0f), d(256, 1.0f), y(4 * 300, 5.0f), map = {0, 3, 1, 7};
  const Gpu h = Gpu::host();
  auto call = [&](std::int64_t rows, std::int64_t width, bool rotate, std::int64_t stride, std::int64_t offset,
                  const float* dd, const float* m, std::int64_t xRows) {
    netops::normRotateInto(h, rows, width, 1e-6, rotate, stride, offset, y.data(), x.data(), w.data(), dd, m, xRows);
  };
  expectThrowsNaming([&] { call(-1, 256, false, 256, 0, nullptr, nullptr, 0); }, fn, "rows");
  expectThrowsNaming([&] { call(2, 0, false, 256, 0, nullptr, nullptr, 0); }, fn, "width");
  expectThrowsNaming([&] { call(2, 100, true, 256, 0, d.data(), nullptr, 0); }, fn, "width");
  expectThrowsNaming([&] { call(2, 256, false, 256, 10, nullptr, nullptr, 0); }, fn, "stride");
  expectThrowsNaming([&] { call(2, 256, false, 300, -1, nullptr, nullptr, 0); }, fn, "offset");
  expectThrowsNaming([&] { call(2, 256, true, 300, 0, nullptr, nullptr, 0); }, fn, "d");
  expectThrowsNaming([&] { call(4, 256, false, 300, 0, nullptr, map.data(), 0); }, fn, "xRows");
  expectThrowsNaming([&] { call(4, 256, false, 300, 0, nullptr, map.data(), 4); }, fn, "map");  // 7 >= 4
  expectThrowsNaming([&] { netops::normRotateInto(h, 2, 256, -1.0, false, 256, 0, y.data(), x.data(), w.data(), nullptr); },
                     fn, "eps");
  expectThrowsNaming([&] { netops::normRotateInto(h, 2, 256, 1e-6, false, 256, 0, nullptr, x.data(), w.data(), nullptr); },
                     fn, "y");
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 5.0f; })) << "a failed call writes nothing";
}

TEST(SiluMulRotatedInto, BadInput) {
  const char* fn = "gizml::netops::siluMulRotatedInto";
  std::vector<float> p(2 * 2 * 512, 1.0f), d(256, 1.0f), y(2 * 256, 5.0f);
  const Gpu h = Gpu::host();
  expectThrowsNaming([&] { netops::siluMulRotatedInto(h, -1, 256, 1, y.data(), p.data(), nullptr); }, fn, "rows");
  expectThrowsNaming([&] { netops::siluMulRotatedInto(h, 2, 0, 1, y.data(), p.data(), nullptr); }, fn, "ffn");
  expectThrowsNaming([&] { netops::siluMulRotatedInto(h, 2, 100, 1, y.data(), p.data(), d.data()); }, fn, "ffn");
  expectThrowsNaming([&] { netops::siluMulRotatedInto(h, 2, 256, 0, y.data(), p.data(), nullptr); }, fn, "nUp");
  expectThrowsNaming([&] { netops::siluMulRotatedInto(h, 2, 256, 1, y.data(), nullptr, nullptr); }, fn, "p");
  expectThrowsNaming([&] { netops::siluMulRotatedInto(h, 2, 256, 1, nullptr, p.data(), nullptr); }, fn, "y");
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 5.0f; })) << "a failed call writes nothing";
}
