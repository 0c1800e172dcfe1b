// The tile loop logic of a flash attention kernel (src/netops/attention/flash_step.hpp), run on the
// host: tile masks against element-by-element visibility; a tiled flash computation (tiles of 64
// queries x 64 keys, float) built from the step functions over ragged shapes, causal and not,
// against float64 softmax attention; and, with blocks of 16 keys, the same steps equal the exact
// `attention` bit for bit.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "netops/attention/flash_step.hpp"
#include "support/preamble.hpp"

namespace {

namespace attn = gizml::netops::attn;

struct Shape {
  std::int64_t tq, tk;
  bool causal;
};
// Ragged in both directions (not multiples of 64 or 16), tq < tk, tq = tk and tq > tk (causal: the
// first tq - tk queries see no key), single queries and single keys.
const Shape kShapes[] = {{1, 1, false},    {1, 1, true},     {1, 100, true},   {17, 64, false}, {64, 65, true},
                         {65, 64, true},   {100, 130, true}, {130, 100, true}, {200, 63, false}, {200, 63, true},
                         {3, 200, true},   {65, 1, true},    {128, 128, true}, {129, 257, false}};

std::string describe(const Shape& s) {
  std::ostringstream o;
  o << "tq " << s.tq << " tk " << s.tk << (s.causal ? " causal" : "");
  return o.str();
}

TEST(FlashStep, TileMaskAgreesWithEachElement) {
  for (const Shape& s : kShapes)
    for (std::int64_t block : {16, 64}) {
      SCOPED_TRACE(describe(s) + " block " + std::to_string(block));
      for (std::int64_t i0 = 0; i0 < s.tq; i0 += 64)
        for (std::int64_t j0 = 0; j0 < s.tk; j0 += block) {
          const std::int64_t rows = std::min<std::int64_t>(64, s.tq - i0);
          std::int64_t seen = 0;
          for (std::int64_t i = i0; i < i0 + rows; ++i) {
            const std::int64_t n = attn::visibleInBlock(i, j0, block, s.tq, s.tk, s.causal);
            for (std::int64_t j = j0; j < j0 + block; ++j)  // the visible keys are a prefix of the block
              EXPECT_EQ(attn::keyVisible(i, j, s.tq, s.tk, s.causal), j - j0 < n) << "query " << i << " key " << j;
            seen += n;
          }
          const attn::TileMask mask = attn::tileMask(i0, rows, j0, block, s.tq, s.tk, s.causal);
          const std::int64_t all = rows * block;
          EXPECT_EQ(mask == attn::TileMask::Empty, seen == 0) << "tile (" << i0 << ", " << j0 << ")";
          EXPECT_EQ(mask == attn::TileMask::Full, seen == all) << "tile (" << i0 << ", " << j0 << ")";
        }
    }
}

/// A tiled flash attention of one item, from the step functions: tiles of 64 queries x `block`
/// keys; an Empty tile is skipped, a Full one read unmasked, a Partial one masked element by element
/// (keys past tk and above the causal diagonal). Scores chain(q_i, k_j) * scale; a = a * c, then
/// a = fma(p_j, v_j, a) over the block's visible keys in order (a kernel does this product on
/// matrix cores).
std::vector<float> flashAttention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                  const Shape& s, std::int64_t d, std::int64_t e, float scale, std::int64_t block) {
  std::vector<float> out(static_cast<std::size_t>(s.tq * e));
  std::vector<float> score(block), p(block);
  for (std::int64_t i0 = 0; i0 < s.tq; i0 += 64) {
    const std::int64_t rows = std::min<std::int64_t>(64, s.tq - i0);
    std::vector<attn::OnlineRow> state(rows);
    std::vector<float> acc(static_cast<std::size_t>(rows * e), 0.0f);
    for (std::int64_t j0 = 0; j0 < s.tk; j0 += block) {
      const attn::TileMask mask = attn::tileMask(i0, rows, j0, block, s.tq, s.tk, s.causal);
      if (mask == attn::TileMask::Empty) continue;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t i = i0 + r;
        for (std::int64_t jj = 0; jj < block; ++jj) {
          const std::int64_t j = j0 + jj;
          const bool visible = mask == attn::TileMask::Full || attn::keyVisible(i, j, s.tq, s.tk, s.causal);
          float dot = 0.0f;
          if (j < s.tk)  // past tk a kernel's tile holds zeros, masked either way
            for (std::int64_t c = 0; c < d; ++c) dot = std::fma(q[i * d + c], k[j * d + c], dot);
          score[jj] = attn::maskedScore(dot * scale, visible);
        }
        const float c = attn::blockStep(state[r], score.data(), p.data(), static_cast<int>(block));
        const std::int64_t n = attn::visibleInBlock(i, j0, block, s.tq, s.tk, s.causal);
        float* a = acc.data() + r * e;
        for (std::int64_t ch = 0; ch < e; ++ch) {
          float x = a[ch] * c;
          for (std::int64_t jj = 0; jj < n; ++jj) x = std::fma(p[jj], v[(j0 + jj) * e + ch], x);
          a[ch] = x;
        }
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const bool seesAny = attn::visibleKeys(i0 + r, s.tq, s.tk, s.causal) > 0;
      for (std::int64_t ch = 0; ch < e; ++ch)
        out[(i0 + r) * e + ch] = attn::finishOutput(acc[r * e + ch], state[r].l, seesAny);
    }
  }
  return out;
}

/// softmax(q kᵀ scale) v of one item in float64 over each query's visible keys (none: 0), and per
/// element sum_j p_j |v_jc|, the scale of its rounding errors.
void attentionF64(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                  const Shape& s, std::int64_t d, std::int64_t e, double scale, std::vector<double>& out,
                  std::vector<double>& magnitude) {
  out.assign(s.tq * e, 0.0);
  magnitude.assign(s.tq * e, 0.0);
  for (std::int64_t i = 0; i < s.tq; ++i) {
    const std::int64_t n = attn::visibleKeys(i, s.tq, s.tk, s.causal);
    std::vector<double> sc(n);
    double m = -INFINITY, l = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (std::int64_t c = 0; c < d; ++c) dot += double(q[i * d + c]) * k[j * d + c];
      sc[j] = dot * scale;
      m = std::max(m, sc[j]);
    }
    for (std::int64_t j = 0; j < n; ++j) l += std::exp(sc[j] - m);
    for (std::int64_t j = 0; j < n; ++j) {
      const double p = std::exp(sc[j] - m) / l;
      for (std::int64_t c = 0; c < e; ++c) {
        out[i * e + c] += p * v[j * e + c];
        magnitude[i * e + c] += p * std::fabs(v[j * e + c]);
      }
    }
  }
}

// Tolerance: |out - exact| <= 2e-6 (1 + sum_j p_j |v_jc|) per element, exact being float64 softmax
// attention of the same F32 inputs (normal values, d = 64, scale 1 / sqrt(d)). Why that size: a
// score carries the rounding of a 64-step fma chain (a few ulps of |q| |k| scale, about 1e-7 here),
// which moves p_j by that much relatively; exp adds ~2 ulps; l and a are sums of up to 257 positive
// (l) or p-weighted terms, each step off by half an ulp of the running value, so ~1e-7 relatively
// on average (random-signed errors grow like sqrt(n)); the bound is the exact op's own (its test,
// attention_test.cpp, uses 2e-6 on the same kind of data), 5x the worst measured here (3.9e-7).
TEST(FlashStep, TiledFlashWithinBoundOfFloat64) {
  const std::int64_t d = 64, e = 24;
  const float scale = 1.0f / std::sqrt(float(d));
  double worstAll = 0.0;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    const auto q = randomFloats(Key{12, 1}, s.tq * d), k = randomFloats(Key{12, 2}, s.tk * d),
               v = randomFloats(Key{12, 3}, s.tk * e);
    const auto got = flashAttention(q, k, v, s, d, e, scale, 64);
    std::vector<double> want, magnitude;
    attentionF64(q, k, v, s, d, e, double(scale), want, magnitude);
    for (std::int64_t i = 0; i < s.tq; ++i)
      for (std::int64_t ch = 0; ch < e; ++ch) {
        const std::size_t at = static_cast<std::size_t>(i * e + ch);
        if (attn::visibleKeys(i, s.tq, s.tk, s.causal) == 0) {
          EXPECT_TRUE(got[at] == 0.0f && !std::signbit(got[at])) << "query " << i << " sees no key: +0";
          continue;
        }
        const double err = std::fabs(got[at] - want[at]) / (1.0 + magnitude[at]);
        worstAll = std::max(worstAll, err);
        ASSERT_LE(err, 2e-6) << "query " << i << " channel " << ch << ": got " << got[at] << ", exact " << want[at];
      }
  }
  std::ostringstream text;
  text << worstAll;
  RecordProperty("worst", text.str());
}

// With blocks of 16 keys the steps are the exact op's (SPEC "attention"): the same bits as
// netops::attention on the host, for finite inputs.
TEST(FlashStep, BlocksOf16AreTheExactAttention) {
  const std::int64_t d = 24, e = 20;
  const float scale = 0.3f;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    const auto q = randomFloats(Key{13, 1}, s.tq * d), k = randomFloats(Key{13, 2}, s.tk * d),
               v = randomFloats(Key{13, 3}, s.tk * e);
    const auto got = flashAttention(q, k, v, s, d, e, scale, attn::kBlock);
    const auto exact = netops::attention(host(q, {1, s.tq, d}), host(k, {1, s.tk, d}), host(v, {1, s.tk, e}),
                                         double(scale), s.causal)
                           .toVector<float>();
    EXPECT_TRUE(sameBits(got, exact));
  }
}

}  // namespace
