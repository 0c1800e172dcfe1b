// A language model's step (SPEC §3) beyond the registry's checks (tests/registry/step_cases.cpp):
// what the candidates promise (the row's best tokens are among them), and bad input — every
// precondition a gizml::Error naming the argument, before anything is written.
#include <algorithm>
#include <cmath>

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
