// The attention family (SPEC §3 "Attention") beyond the registry's checks
// (tests/registry/attention_cases.cpp: host = reference at 1 and 2 threads, an item alone = in its
// batch, GPU = host): accuracy against float64 softmax attention, PyTorch's
// scaled_dot_product_attention, dropout's mask and scale, and bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "netops/attention/flash_quant.hpp"
#include "netops/attention/sage_quant.hpp"
#include "reference/attention_reference.hpp"
#include "support/sage_emulation.hpp"
#include "support/preamble.hpp"

namespace {

Tensor ones(const gizml::Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t s : shape) n *= s;
  return host(std::vector<float>(n, 1.0f), shape);
}

/// softmax(q kᵀ scale) v in float64, causal as the SPEC's mask; a query that sees no key gives 0.
/// Also, per output element, sum_j p_j |v_jc| (the scale of the element's rounding errors).
void attentionF64(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                  std::int64_t b, std::int64_t tq, std::int64_t tk, std::int64_t d, std::int64_t e, double scale,
                  bool causal, std::vector<double>& out, std::vector<double>& magnitude) {
  out.assign(b * tq * e, 0.0);
  magnitude.assign(b * tq * e, 0.0);
  std::vector<double> s(tk);
  for (std::int64_t item = 0; item < b; ++item)
    for (std::int64_t i = 0; i < tq; ++i) {
      const std::int64_t n = causal ? std::clamp<std::int64_t>(i + tk - tq + 1, 0, tk) : tk;
      if (n == 0) continue;
      double m = -INFINITY, l = 0.0;
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::int64_t p = 0; p < d; ++p) acc += double(q[(item * tq + i) * d + p]) * k[(item * tk + j) * d + p];
        s[j] = acc * scale;
        m = std::max(m, s[j]);
      }
      for (std::int64_t j = 0; j < n; ++j) l += std::exp(s[j] - m);
      for (std::int64_t j = 0; j < n; ++j) {
        const double p = std::exp(s[j] - m) / l;
        for (std::int64_t c = 0; c < e; ++c) {
          out[(item * tq + i) * e + c] += p * v[(item * tk + j) * e + c];
          magnitude[(item * tq + i) * e + c] += p * std::fabs(v[(item * tk + j) * e + c]);
        }
      }
    }
}

void expectNear(const std::vector<float>& got, const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance * (1.0 + std::fabs(want[i]))) << "element " << i;
}

}  // namespace

// ---- the causal mask ------------------------------------------------------------------------------------

TEST(CausalMask, LastQuerySeesEveryKey) {
  // tq < tk: the last query sees every key, the first sees tk - tq + 1.
  auto m = netops::causalMask(2, 4).toVector<float>();
  EXPECT_EQ(m, (std::vector<float>{0, 0, 0, -kInf, 0, 0, 0, 0}));
  EXPECT_FALSE(std::signbit(m[0]));  // +0
}

TEST(CausalMask, BadInput) {
  const char* fn = "gizml::netops::causalMask";
  expectThrowsNaming([&] { netops::causalMask(-1, 3); }, fn, "tq");
  expectThrowsNaming([&] { netops::causalMask(3, -1); }, fn, "tk");
  expectThrowsNaming([&] { netops::causalMask(std::int64_t{1} << 40, std::int64_t{1} << 40); }, fn, "tk");
}

// ---- attention ------------------------------------------------------------------------------------------

// Accuracy: |out - exact| <= 2e-6 (1 + sum_j p_j |v_j|) per element, exact being float64 softmax
// attention of the same F32 inputs (normal values, scale 1 / sqrt(d)). Measured worst on these
// shapes: 2.3e-7 of that scale.
TEST(Attention, WithinBoundOfFloat64) {
  struct S {
    std::int64_t b, tq, tk, d, e;
    bool causal;
  };
  for (S s : {S{2, 7, 33, 16, 17, false}, S{1, 64, 200, 64, 64, true}, S{2, 9, 300, 128, 128, false},
              S{1, 40, 17, 32, 8, true}, S{1, 5, 1000, 64, 64, false}}) {
    SCOPED_TRACE(::testing::Message() << "b " << s.b << " tq " << s.tq << " tk " << s.tk << " d " << s.d << " e "
                                      << s.e << (s.causal ? " causal" : ""));
    const auto q = randomFloats(Key{1, 1}, s.b * s.tq * s.d), k = randomFloats(Key{1, 2}, s.b * s.tk * s.d),
               v = randomFloats(Key{1, 3}, s.b * s.tk * s.e);
    const double scale = 1.0 / std::sqrt(double(s.d));
    const auto got = netops::attention(host(q, {s.b, s.tq, s.d}), host(k, {s.b, s.tk, s.d}),
                                       host(v, {s.b, s.tk, s.e}), scale, s.causal)
                         .toVector<float>();
    std::vector<double> want, magnitude;
    // The exact value of the F32 scale the op uses.
    attentionF64(q, k, v, s.b, s.tq, s.tk, s.d, s.e, double(float(scale)), s.causal, want, magnitude);
    double worst = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double err = std::fabs(got[i] - want[i]) / (1.0 + magnitude[i]);
      worst = std::max(worst, err);
      ASSERT_LE(err, 2e-6) << "element " << i << ": got " << got[i] << ", exact " << want[i];
    }
    std::ostringstream text;
    text << worst;
    RecordProperty("worst_" + std::to_string(s.tk), text.str());
  }
}

TEST(Attention, QueriesThatSeeNoKeyGiveZeros) {
  // Causal with tq > tk: query i sees keys j <= i + tk - tq, so the first tq - tk see none.
  const std::int64_t tq = 6, tk = 2, d = 3, e = 4;
  auto out = netops::attention(host(randomFloats(Key{2, 1}, tq * d), {1, tq, d}),
                               host(randomFloats(Key{2, 2}, tk * d), {1, tk, d}),
                               host(randomFloats(Key{2, 3}, tk * e), {1, tk, e}), 0.5, true)
                 .toVector<float>();
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t c = 0; c < e; ++c) {
      const float o = out[i * e + c];
      if (i < tq - tk) EXPECT_TRUE(o == 0.0f && !std::signbit(o)) << "query " << i;
      else EXPECT_NE(o, 0.0f) << "query " << i;
    }
  // No keys at all: +0s.
  auto none = netops::attention(ones({2, 3, 4}), Tensor::zeros({2, 0, 4}), Tensor::zeros({2, 0, 5}), 1.0);
  EXPECT_EQ(none.shape(), (gizml::Shape{2, 3, 5}));
  EXPECT_TRUE(sameBits(none.toVector<float>(), std::vector<float>(30, 0.0f)));
}

TEST(Attention, MatchesPyTorch) {
  const auto cases = torchCases("torch_attention.txt", "attention");
  ASSERT_GE(cases.size(), 6u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto& n = c.ints;  // b, tq, tk, d, e, causal
    Tensor out = netops::attention(host(c.floats("q"), {n[0], n[1], n[3]}), host(c.floats("k"), {n[0], n[2], n[3]}),
                                   host(c.floats("v"), {n[0], n[2], n[4]}), c.field("scale").at(0), n[5] != 0);
    expectNear(out.toVector<float>(), c.field("out"), 2e-6);
  }
}

TEST(Attention, DropoutMaskIsTensorDropoutsDraw) {
  // q = 0: every score is 0, so every visible weight is 1 and l = tk; v = the identity: out[i][j]
  // is w'_j / tk, which is F32(1 / (1 - rate)) / tk where key j is kept, else +0.
  const std::int64_t b = 2, tq = 48, tk = 160;
  std::vector<float> eye(tk * tk, 0.0f);
  for (std::int64_t j = 0; j < tk; ++j) eye[j * tk + j] = 1.0f;
  Tensor v = Tensor::zeros({b, tk, tk});
  for (std::int64_t item = 0; item < b; ++item) v.rows(item, item + 1).copyFrom(host(eye, {1, tk, tk}));
  for (double rate : {0.1, 0.5, 0.9}) {
    SCOPED_TRACE("rate " + std::to_string(rate));
    const Key key{5, 77};
    auto out = netops::attention(Tensor::zeros({b, tq, 8}), host(randomFloats(Key{3, 1}, b * tk * 8), {b, tk, 8}), v,
                                 0.125, false, rate, key)
                   .toVector<float>();
    // Tensor::dropout of ones over the same words: F32(1 / (1 - rate)) where kept, else 0.
    auto mask = ones({b * tq * tk}).dropout(key, rate).toVector<float>();
    const float keepScale = static_cast<float>(1.0 / (1.0 - rate));
    std::int64_t kept = 0;
    for (std::size_t w = 0; w < mask.size(); ++w) {
      ASSERT_TRUE(mask[w] == 0.0f || mask[w] == keepScale);
      ASSERT_EQ(out[w], mask[w] / static_cast<float>(tk)) << "word " << w;
      kept += mask[w] != 0.0f;
    }
    const double fraction = double(kept) / double(mask.size());
    EXPECT_NEAR(fraction, 1.0 - rate, 0.01) << "kept fraction";  // 15360 words: sigma <= 0.004
  }
}

TEST(Attention, DropoutKeepsTheUndroppedSum) {
  // l adds every visible weight, dropped or not: a dropped key lowers the output, the others'
  // weights are not renormalised among the kept ones.
  const std::int64_t tk = 64;
  Tensor q = Tensor::zeros({1, 1, 4}), k = host(randomFloats(Key{4, 1}, tk * 4), {1, tk, 4});
  Tensor v = ones({1, tk, 1});
  const double rate = 0.25;
  const float out = netops::attention(q, k, v, 1.0, false, rate, Key{9, 9}).toVector<float>()[0];
  const auto mask = ones({tk}).dropout(Key{9, 9}, rate).toVector<float>();
  double kept = 0;
  for (float m : mask) kept += m != 0.0f;
  EXPECT_NEAR(out, kept / tk / (1.0 - rate), 1e-6);
  // rate 0 is no dropout, whatever the key.
  EXPECT_TRUE(sameBits(netops::attention(q, k, v, 1.0, false, 0.0, Key{9, 9}).toVector<float>(),
                       netops::attention(q, k, v, 1.0).toVector<float>()));
}

TEST(Attention, BadInput) {
  const char* fn = "gizml::netops::attention";
  Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 6});
  expectThrowsNaming([&] { netops::attention(q.to(DType::BF16), k, v, 1.0); }, fn, "q");
  expectThrowsNaming([&] { netops::attention(q, k.to(DType::F64), v, 1.0); }, fn, "k");
  expectThrowsNaming([&] { netops::attention(q, k, v.to(DType::BF16), 1.0); }, fn, "v");
  expectThrowsNaming([&] { netops::attention(q.reshape({6, 4}), k, v, 1.0); }, fn, "q");
  expectThrowsNaming([&] { netops::attention(q, k.reshape({2, 20}), v, 1.0); }, fn, "k");
  expectThrowsNaming([&] { netops::attention(q, ones({2, 5, 3}), v, 1.0); }, fn, "k");   // d differs
  expectThrowsNaming([&] { netops::attention(q, ones({1, 5, 4}), v, 1.0); }, fn, "k");   // b differs
  expectThrowsNaming([&] { netops::attention(q, k, ones({2, 4, 6}), 1.0); }, fn, "v");   // tk differs
  expectThrowsNaming([&] { netops::attention(q, k, ones({3, 5, 6}), 1.0); }, fn, "v");   // b differs
  expectThrowsNaming([&] { netops::attention(Tensor(), k, v, 1.0); }, fn, "q");
  for (double rate : {-0.1, 1.0, 1.5, std::nan("")})
    expectThrowsNaming([&] { netops::attention(q, k, v, 1.0, false, rate, Key{}); }, fn, "rate");
}

TEST(Attention, CudaMixedDevicesFail) {
  GIZML_NEED_GPU();
  const char* fn = "gizml::netops::attention";
  Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 6});
  expectThrowsNaming([&] { netops::attention(q, k.to(Device::cuda(0)), v, 1.0); }, fn, "k");
}

// ---- packed rows: headPrepInPlace, attendedRows, attentionRows ----------------------------------------------
// (headPrepInPlace is in the registry too: host = reference, GPU = host.)

namespace {

/// A HeadPrep for heads of `head`, cos / sin [rows, half] from random angles.
netops::HeadPrep randomPrep(std::int64_t head, std::int64_t rows, std::int64_t half, std::uint32_t seed) {
  std::vector<float> cos, sin;
  for (float t : randomFloats(Key{30, seed}, rows * half, 2.0f)) {
    cos.push_back(std::cos(t));
    sin.push_back(std::sin(t));
  }
  return {host(randomFloats(Key{31, seed}, head, 0.5f, 1.0f), {head}),
          host(randomFloats(Key{32, seed}, head, 0.5f, 1.0f), {head}), host(cos, {rows, half}), host(sin, {rows, half}),
          1e-6};
}

/// A GPU case's HeadPreps: none, or one random one (with no rotation when half = 0).
std::vector<netops::HeadPrep> casePrep(bool use, std::int64_t head, std::int64_t rows, std::int64_t half,
                                       std::uint32_t seed) {
  if (!use) return {};
  netops::HeadPrep p = randomPrep(head, rows, half, seed);
  if (half == 0) p.cos = p.sin = Tensor();
  return {p};
}

/// The same HeadPreps with their tensors on device d.
std::vector<netops::HeadPrep> prepOn(const std::vector<netops::HeadPrep>& prep, Device d) {
  std::vector<netops::HeadPrep> moved;
  for (const netops::HeadPrep& q : prep)
    moved.push_back({q.qw.to(d), q.kw.to(d), q.cos.defined() ? q.cos.to(d) : Tensor(),
                     q.sin.defined() ? q.sin.to(d) : Tensor(), q.eps});
  return moved;
}

struct PackedCase {
  std::int64_t rows, heads, head, group, queries, half;
  bool prep;
};
const PackedCase kPacked[] = {
    {12, 2, 16, 0, 0, 8, true},  {12, 2, 16, 4, 0, 0, false}, {12, 3, 17, 6, 7, 4, true},  // queries end mid-group
    {20, 1, 64, 5, 3, 32, true}, {33, 2, 33, 0, 33, 0, false}, {40, 2, 128, 20, 21, 64, true},
    {9, 4, 1, 3, 0, 0, false},   {64, 2, 64, 32, 0, 32, true}};

std::vector<float> packedReference(const PackedCase& c, const Tensor& qkv, const netops::HeadPrep& p) {
  std::vector<float> out((c.queries > 0 ? c.queries : c.rows) * c.heads * c.head);
  const auto x = qkv.toVector<float>(), qw = p.qw.toVector<float>(), kw = p.kw.toVector<float>(),
             cos = p.cos.toVector<float>(), sin = p.sin.toVector<float>();
  ref::attendedRows(x.data(), c.rows, c.heads, c.head, c.group, c.prep ? qw.data() : nullptr, kw.data(), cos.data(),
                    sin.data(), c.half, p.eps, c.queries, out.data());
  return out;
}

}  // namespace

TEST(AttendedRows, HostEqualsReference) {
  for (const PackedCase& c : kPacked) {
    SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " heads " << c.heads << " head " << c.head << " group "
                                      << c.group << " queries " << c.queries << " half " << c.half
                                      << (c.prep ? " prep" : ""));
    const std::int64_t width = 3 * c.heads * c.head;
    const Tensor qkv = host(withSpecials(Key{33, static_cast<std::uint32_t>(c.rows * c.head)}, c.rows * width),
                            {c.rows, width});
    const netops::HeadPrep p = randomPrep(c.head, c.rows, c.half, static_cast<std::uint32_t>(c.head));
    const std::vector<netops::HeadPrep> prep = c.prep ? std::vector<netops::HeadPrep>{p} : std::vector<netops::HeadPrep>{};
    const auto want = packedReference(c, qkv, p);
    const auto before = qkv.toVector<float>();
    forThreadCounts([&] {
      EXPECT_TRUE(sameBits(netops::attendedRows(qkv, c.heads, c.head, false, c.group, prep, c.queries).toVector<float>(), want));
      EXPECT_TRUE(sameBits(netops::attendedRows(qkv, c.heads, c.head, true, c.group, prep, c.queries).toVector<float>(), want))
          << "quantized has no effect on the host";
      Tensor out = Tensor::zeros({static_cast<std::int64_t>(want.size()) / (c.heads * c.head), c.heads * c.head});
      netops::attentionRows(qkv, c.heads, c.head, false, c.group, out, prep, c.queries);
      EXPECT_TRUE(sameBits(out.toVector<float>(), want)) << "attentionRows F32";
      Tensor outBF16 = Tensor::zeros(out.shape(), DType::BF16);
      netops::attentionRows(qkv, c.heads, c.head, false, c.group, outBF16, prep, c.queries);
      EXPECT_TRUE(sameBits(outBF16.toFloats(), host(want, out.shape()).to(DType::BF16).toFloats()))
          << "attentionRows BF16: the exact result rounded once";
    });
    EXPECT_TRUE(sameBits(qkv.toVector<float>(), before)) << "prep runs on a copy";
  }
}

TEST(AttendedRows, IsAttentionOfEachGroupAndHead) {
  // Without prep: the rows of group g, head h are attention(q, k, v) of that group's slices.
  const std::int64_t rows = 12, heads = 2, head = 8, group = 4, width = 3 * heads * head;
  const auto x = randomFloats(Key{34, 1}, rows * width);
  const auto got = netops::attendedRows(host(x, {rows, width}), heads, head, false, group).toVector<float>();
  for (std::int64_t g = 0; g < rows / group; ++g)
    for (std::int64_t h = 0; h < heads; ++h) {
      std::vector<float> q, k, v;
      for (std::int64_t r = g * group; r < (g + 1) * group; ++r)
        for (std::int64_t c = 0; c < head; ++c) {
          q.push_back(x[r * width + h * head + c]);
          k.push_back(x[r * width + (heads + h) * head + c]);
          v.push_back(x[r * width + (2 * heads + h) * head + c]);
        }
      const auto want = netops::attention(host(q, {1, group, head}), host(k, {1, group, head}),
                                          host(v, {1, group, head}), 1.0 / std::sqrt(double(head)))
                            .toVector<float>();
      for (std::int64_t r = 0; r < group; ++r)
        for (std::int64_t c = 0; c < head; ++c)
          ASSERT_EQ(got[(g * group + r) * heads * head + h * head + c], want[r * head + c]) << "group " << g << " head " << h;
    }
}

TEST(HeadPrep, NormalisesThenTurnsEachHead) {
  // One head of 4, half 2: r = rsqrt(mean(v^2) + eps), then (v0, v2) and (v1, v3) turned by the
  // row's angles; k gets kw, v is left alone. Compared with float64.
  const std::int64_t heads = 1, head = 4;
  std::vector<float> row = {1, 2, 3, 4, -1, 0.5f, 2, -3, 7, 8, 9, 10};
  Tensor qkv = host(row, {1, 12});
  const float a0 = 0.3f, a1 = -1.1f;
  netops::HeadPrep p{host({1, 2, 0.5f, 1}, {4}), host({2, 1, 1, 0.5f}, {4}),
                     host({0, 0, std::cos(a0), std::cos(a1)}, {2, 2}), host({0, 0, std::sin(a0), std::sin(a1)}, {2, 2}), 0.0};
  netops::headPrepInPlace(qkv, 1, heads, head, p, 1);
  const auto got = qkv.toVector<float>();
  for (int which = 0; which < 2; ++which) {
    const float* v = row.data() + 4 * which;
    const auto w = (which == 0 ? p.qw : p.kw).toVector<float>();
    double ss = 0;
    for (int i = 0; i < 4; ++i) ss += double(v[i]) * v[i];
    const double r = 1.0 / std::sqrt(ss / 4);
    double y[4];
    for (int i = 0; i < 4; ++i) y[i] = v[i] * r * w[i];
    const double angle[2] = {a0, a1};
    for (int e = 0; e < 2; ++e) {
      const double c = std::cos(angle[e]), s = std::sin(angle[e]);
      EXPECT_NEAR(got[4 * which + e], y[e] * c - y[e + 2] * s, 1e-6);
      EXPECT_NEAR(got[4 * which + e + 2], y[e + 2] * c + y[e] * s, 1e-6);
    }
  }
  for (int i = 8; i < 12; ++i) EXPECT_EQ(got[i], row[i]) << "v is not prepared";
}

TEST(AttendedRows, BadInput) {
  const std::int64_t rows = 6, heads = 2, head = 4, width = 3 * heads * head;
  Tensor qkv = host(randomFloats(Key{35, 1}, rows * width), {rows, width});
  const netops::HeadPrep p = randomPrep(head, rows, 2, 1);
  for (const char* fn : {"gizml::netops::attendedRows", "gizml::netops::attentionRows"}) {
    SCOPED_TRACE(fn);
    const bool into = std::string(fn) == "gizml::netops::attentionRows";
    auto call = [&](const Tensor& x, std::int64_t hs, std::int64_t hd, std::int64_t group, std::vector<netops::HeadPrep> prep,
                    std::int64_t queries) {
      if (!into) return (void)netops::attendedRows(x, hs, hd, false, group, prep, queries);
      Tensor out = Tensor::zeros({queries > 0 ? queries : x.dim(0), hs * hd});
      netops::attentionRows(x, hs, hd, false, group, out, prep, queries);
    };
    expectThrowsNaming([&] { call(qkv, heads, 5, 0, {}, 0); }, fn, "head");            // 3 heads head != the row
    expectThrowsNaming([&] { call(qkv, 5, head, 0, {}, 0); }, fn, "head");
    expectThrowsNaming([&] { call(qkv, 0, head, 0, {}, 0); }, fn, "heads");
    expectThrowsNaming([&] { call(qkv, heads, 0, 0, {}, 0); }, fn, "head");
    expectThrowsNaming([&] { call(qkv, heads, head, 4, {}, 0); }, fn, "group");       // 4 does not divide 6
    expectThrowsNaming([&] { call(qkv, heads, head, -1, {}, 0); }, fn, "group");
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {}, 7); }, fn, "queries");     // queries > rows
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {}, -1); }, fn, "queries");
    expectThrowsNaming([&] { call(qkv.to(DType::BF16), heads, head, 0, {}, 0); }, fn, "qkv");
    expectThrowsNaming([&] { call(qkv.to(DType::F64), heads, head, 0, {}, 0); }, fn, "qkv");
    expectThrowsNaming([&] { call(qkv.reshape({rows * width}), heads, head, 0, {}, 0); }, fn, "qkv");
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {p, p}, 0); }, fn, "prep");
    netops::HeadPrep bad = p;
    bad.qw = Tensor::zeros({head + 1});
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {bad}, 0); }, fn, "prep.qw");
    bad = p;
    bad.kw = Tensor::zeros({head}, DType::BF16);
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {bad}, 0); }, fn, "prep.kw");
    bad = randomPrep(head, rows - 1, 2, 1);  // a row short
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {bad}, 0); }, fn, "prep.cos");
    bad = randomPrep(head, rows, 3, 1);  // 2 half > head
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {bad}, 0); }, fn, "prep.cos");
    bad = p;
    bad.sin = Tensor::zeros({rows, 1});
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {bad}, 0); }, fn, "prep.sin");
    bad = p;
    bad.eps = -1;
    expectThrowsNaming([&] { call(qkv, heads, head, 0, {bad}, 0); }, fn, "eps");
  }
  const char* fn = "gizml::netops::attentionRows";
  expectThrowsNaming([&] { netops::attentionRows(qkv, heads, head, false, 0, Tensor::zeros({rows, 7})); }, fn, "out");
  expectThrowsNaming([&] { netops::attentionRows(qkv, heads, head, false, 0, Tensor::zeros({rows, 8}, DType::F64)); }, fn, "out");
  expectThrowsNaming([&] { netops::attentionRows(qkv, heads, head, false, 0, Tensor::zeros({rows, 8}), {}, 3); }, fn, "out");
  // Nothing was written where a check failed.
  Tensor out = Tensor::zeros({rows, 8});
  expectThrowsNaming([&] { netops::attentionRows(qkv, heads, head, false, 4, out); }, fn, "group");
  EXPECT_TRUE(sameBits(out.toVector<float>(), std::vector<float>(rows * 8, 0.0f)));
}

TEST(HeadPrepInPlace, BadInput) {
  const char* fn = "gizml::netops::headPrepInPlace";
  const std::int64_t rows = 6, heads = 2, head = 4, width = 3 * heads * head;
  Tensor qkv = host(randomFloats(Key{36, 1}, rows * width), {rows, width});
  const auto before = qkv.toVector<float>();
  const netops::HeadPrep p = randomPrep(head, rows, 2, 2);
  expectThrowsNaming([&] { netops::headPrepInPlace(qkv, 7, heads, head, p, 0); }, fn, "n");
  expectThrowsNaming([&] { netops::headPrepInPlace(qkv, -1, heads, head, p, 0); }, fn, "n");
  expectThrowsNaming([&] { netops::headPrepInPlace(qkv, 6, heads, head, p, 1); }, fn, "prep.cos");  // rows 1 .. 6
  expectThrowsNaming([&] { netops::headPrepInPlace(qkv, 6, heads, head, p, -1); }, fn, "row0");
  expectThrowsNaming([&] { netops::headPrepInPlace(qkv, 6, heads, 3, p, 0); }, fn, "head");
  expectThrowsNaming([&] { netops::headPrepInPlace(qkv.to(DType::F64), 6, heads, head, p, 0); }, fn, "qkv");
  EXPECT_TRUE(sameBits(qkv.toVector<float>(), before)) << "nothing touched";
}

// attentionRows' fast GPU path (BF16 flash attention on matrix cores) against the host's exact
// result, within the SPEC's tolerance ‖gpu − exact‖ / ‖exact‖ ≤ 1e-2 over the whole output, and
// per element |gpu − exact| ≤ 2^-6 (1 + max_j |v_jc|) (max over the group's values of that head
// and channel, a bound of sum_j p_j |v_jc|), so that one wrong row or column cannot hide in the
// norm. Heads of 64 and 128 (the kernel's two widths) and others padded to them (17, 40, 96);
// ragged groups and tiles of 64 (rows not multiples of 64), queries ending mid-group, one query,
// prep, F32 and BF16 qkv and out.
namespace {
struct FastCase {
  std::int64_t rows, heads, head, group, queries, half;
  bool prep, bf16In, bf16Out;
};
const FastCase kFast[] = {
    {200, 2, 64, 0, 0, 32, true, false, false},   {130, 3, 128, 65, 100, 0, false, true, true},
    {256, 2, 64, 128, 0, 0, false, false, true},  {300, 2, 128, 150, 0, 64, true, false, false},
    {96, 1, 40, 32, 50, 8, true, true, false},    {70, 2, 128, 0, 1, 0, false, false, false},
    {33, 1, 17, 11, 0, 0, false, false, false},   {192, 4, 96, 64, 130, 48, true, false, false},
    {1, 1, 64, 0, 0, 0, false, false, false},     {129, 1, 64, 129, 0, 0, false, true, false}};
}  // namespace

TEST(AttendedRows, CudaFastPathWithinToleranceOfExact) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  double worstNorm = 0.0, worstElement = 0.0;
  for (const FastCase& c : kFast) {
    SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " heads " << c.heads << " head " << c.head << " group "
                                      << c.group << " queries " << c.queries << " half " << c.half
                                      << (c.prep ? " prep" : "") << (c.bf16In ? " qkv BF16" : "")
                                      << (c.bf16Out ? " out BF16" : ""));
    const std::int64_t width = 3 * c.heads * c.head, outRows = c.queries > 0 ? c.queries : c.rows;
    Tensor qkv = host(randomFloats(Key{37, static_cast<std::uint32_t>(c.rows * c.head)}, c.rows * width), {c.rows, width});
    if (c.bf16In) qkv = qkv.to(DType::BF16).to(DType::F32);  // the host sees the values the GPU reads
    const std::vector<netops::HeadPrep> prep =
        casePrep(c.prep, c.head, c.rows, c.half, static_cast<std::uint32_t>(c.head + 1));
    const auto want = netops::attendedRows(qkv, c.heads, c.head, false, c.group, prep, c.queries).toVector<float>();

    const Tensor qkvGpu = (c.bf16In ? qkv.to(DType::BF16) : qkv).to(gpu);
    const std::vector<netops::HeadPrep> prepGpu = prepOn(prep, gpu);
    Tensor out = Tensor::zeros({outRows, c.heads * c.head}, c.bf16Out ? DType::BF16 : DType::F32, gpu);
    netops::attentionRows(qkvGpu, c.heads, c.head, false, c.group, out, prepGpu, c.queries);
    const auto got = out.to(Device::host()).toFloats();
    ASSERT_EQ(got.size(), want.size());
    const auto fromAttended = netops::attendedRows(qkvGpu, c.heads, c.head, false, c.group, prepGpu, c.queries)
                                  .to(Device::host())
                                  .toVector<float>();

    // max_j |v_jc| over each (group, head, channel)'s keys.
    const auto x = qkv.toVector<float>();
    const std::int64_t g = c.group == 0 ? c.rows : c.group;
    double diff2 = 0.0, want2 = 0.0;
    for (std::int64_t r = 0; r < outRows; ++r)
      for (std::int64_t h = 0; h < c.heads; ++h)
        for (std::int64_t ch = 0; ch < c.head; ++ch) {
          double vmax = 0.0;
          for (std::int64_t j = (r / g) * g; j < (r / g + 1) * g; ++j)
            vmax = std::max(vmax, std::fabs(double(x[j * width + (2 * c.heads + h) * c.head + ch])));
          const std::size_t at = static_cast<std::size_t>(r * c.heads * c.head + h * c.head + ch);
          const double err = std::fabs(double(got[at]) - want[at]);
          diff2 += err * err;
          want2 += double(want[at]) * want[at];
          worstElement = std::max(worstElement, err / (1.0 + vmax));
          ASSERT_LE(err, std::ldexp(1.0, -6) * (1.0 + vmax))
              << "row " << r << " head " << h << " channel " << ch << ": gpu " << got[at] << ", exact " << want[at];
          if (!c.bf16Out)
            ASSERT_EQ(got[at], fromAttended[at]) << "attendedRows on a GPU is attentionRows: row " << r;
        }
    const double rel = std::sqrt(diff2) / std::sqrt(want2);
    worstNorm = std::max(worstNorm, rel);
    EXPECT_LE(rel, 1e-2) << "SPEC: ‖gpu − exact‖ / ‖exact‖ ≤ 1e-2";
  }
  RecordProperty("worst_norm", std::to_string(worstNorm));
  RecordProperty("worst_element", std::to_string(worstElement));
  std::printf("attentionRows fast path: worst relative norm %.3g, worst element error / (1 + max|v|) %.3g\n",
              worstNorm, worstElement);
}

TEST(AttendedRows, CudaFastPathErrors) {
  GIZML_NEED_GPU();
  const std::int64_t rows = 4, heads = 1;
  const char* fn = "gizml::netops::attentionRows";
  Tensor qkv = Tensor::zeros({rows, 3 * 16}, DType::BF16, Device::cuda(0));
  Tensor out = Tensor::zeros({rows, 16}, DType::BF16, Device::cuda(0));
  // quantized with a head the quantized path does not take (16): the BF16 path, no error.
  netops::attentionRows(qkv, heads, 16, true, 0, out);
  EXPECT_EQ(netops::attendedRows(qkv, heads, 16, true, 0).dim(0), rows);
  Tensor wide = Tensor::zeros({rows, 3 * 130}, DType::BF16, Device::cuda(0));
  Tensor wideOut = Tensor::zeros({rows, 130}, DType::BF16, Device::cuda(0));
  expectThrowsNaming([&] { netops::attentionRows(wide, heads, 130, false, 0, wideOut); }, fn, "head");
}

// attentionRows' quantized path (SageAttention2's split: flash_quant_cuda.cu, sage_quant.hpp) on a
// GPU against the host's exact result, within the SPEC's tolerance (cosine similarity >= 0.995,
// relative L1 <= 0.05 over the output), and, where the GPU runs the FP8 kernel, against the host
// emulation of the same algorithm (tests/support/sage_emulation.hpp): the codes, scales and
// softmax weights are the same bits there, only the FP8 instruction's internal accumulation and
// the order of l's partial sums differ, so the two agree to ~1e-4 (bound: relative L1 <= 2e-3).
// Heads 64 and 128 (and 40, which takes the BF16 path: SPEC's 1e-2 norm then); ragged groups and
// tiles, queries ending mid-group, prep, F32 and BF16 qkv and out, keys with large per-channel
// offsets; the result is the same bits run twice, and attendedRows' is attentionRows'.
namespace {
struct QuantCase {
  std::int64_t rows, heads, head, group, queries, half;
  bool prep, bf16In, bf16Out;
  float keyOffset;
};
const QuantCase kQuant[] = {
    {256, 2, 64, 0, 0, 0, false, false, false, 0.0f},    {300, 2, 128, 150, 0, 64, true, false, false, 0.0f},
    {130, 3, 128, 65, 100, 0, false, true, true, 0.0f},   {192, 2, 64, 64, 130, 16, true, false, true, 0.0f},
    {320, 2, 128, 160, 250, 0, false, false, false, 30.0f}, {129, 1, 64, 129, 0, 0, false, true, false, 20.0f},
    {70, 2, 128, 0, 1, 0, false, false, false, 0.0f},     {96, 1, 40, 32, 50, 0, false, false, false, 0.0f}};
}  // namespace

TEST(AttendedRows, CudaQuantizedWithinSpecToleranceOfExact) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  const bool fp8 = gizml::netops::attn::SageRows::available(gizml::Gpu{gpu, nullptr});
  std::printf("attentionRows quantized: this GPU %s the FP8 kernel\n", fp8 ? "runs" : "does not run (BF16 path)");
  for (const QuantCase& c : kQuant) {
    SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " heads " << c.heads << " head " << c.head << " group "
                                      << c.group << " queries " << c.queries << " half " << c.half
                                      << (c.prep ? " prep" : "") << (c.bf16In ? " qkv BF16" : "")
                                      << (c.bf16Out ? " out BF16" : "") << " key offset " << c.keyOffset);
    const std::int64_t width = 3 * c.heads * c.head, outRows = c.queries > 0 ? c.queries : c.rows;
    std::vector<float> x = randomFloats(Key{63, static_cast<std::uint32_t>(c.rows * c.head)}, c.rows * width);
    for (std::int64_t r = 0; r < c.rows; ++r)
      for (std::int64_t ch = 0; ch < c.heads * c.head; ++ch)
        x[r * width + c.heads * c.head + ch] += c.keyOffset * static_cast<float>(1 + ch % 5) * (ch % 2 ? -1.0f : 1.0f);
    Tensor qkv = host(x, {c.rows, width});
    if (c.bf16In) qkv = qkv.to(DType::BF16).to(DType::F32);  // the host sees the values the GPU reads
    const std::vector<netops::HeadPrep> prep =
        casePrep(c.prep, c.head, c.rows, c.half, static_cast<std::uint32_t>(c.head + 3));
    const auto want = netops::attendedRows(qkv, c.heads, c.head, false, c.group, prep, c.queries).toVector<float>();

    const Tensor qkvGpu = (c.bf16In ? qkv.to(DType::BF16) : qkv).to(gpu);
    const std::vector<netops::HeadPrep> prepGpu = prepOn(prep, gpu);
    Tensor out = Tensor::zeros({outRows, c.heads * c.head}, c.bf16Out ? DType::BF16 : DType::F32, gpu);
    netops::attentionRows(qkvGpu, c.heads, c.head, true, c.group, out, prepGpu, c.queries);
    const auto got = out.to(Device::host()).toFloats();
    ASSERT_EQ(got.size(), want.size());
    Tensor again = Tensor::zeros(out.shape(), out.dtype(), gpu);
    netops::attentionRows(qkvGpu, c.heads, c.head, true, c.group, again, prepGpu, c.queries);
    EXPECT_TRUE(sameBits(again.to(Device::host()).toFloats(), got)) << "deterministic";
    if (!c.bf16Out) {
      const auto attended = netops::attendedRows(qkvGpu, c.heads, c.head, true, c.group, prepGpu, c.queries)
                                .to(Device::host())
                                .toVector<float>();
      EXPECT_TRUE(sameBits(attended, got)) << "attendedRows on a GPU is attentionRows";
    }

    const gizml::test::SageError e = gizml::test::sageError(got, want);
    std::printf("quantized head %lld rows %lld group %lld: cosine %.6f rel L1 %.5f against exact\n", (long long)c.head,
                (long long)c.rows, (long long)c.group, e.cosine, e.relL1);
    EXPECT_GE(e.cosine, 0.995) << "SPEC: cosine similarity >= 0.995";
    EXPECT_LE(e.relL1, 0.05) << "SPEC: relative L1 <= 0.05";
    const bool quantizedRan = fp8 && gizml::netops::attn::sageHead(c.head);
    if (!quantizedRan) {
      double diff2 = 0, want2 = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        diff2 += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        want2 += double(want[i]) * want[i];
      }
      EXPECT_LE(std::sqrt(diff2 / want2), 1e-2) << "the BF16 path's tolerance";
    } else if (!c.bf16Out && !(c.prep && c.bf16In)) {
      // The emulation from the values the GPU quantized: qkv with prep applied (F32, as the GPU's copy).
      Tensor prepped = qkv.clone();
      if (c.prep) netops::headPrepInPlace(prepped, c.rows, c.heads, c.head, prep[0], 0);
      const auto emu = gizml::test::sageEmulate(prepped.toVector<float>(), c.rows, c.heads, c.head, c.group,
                                                c.queries, {});
      const gizml::test::SageError toEmu = gizml::test::sageError(got, emu);
      std::printf("  against the host emulation: cosine %.8f rel L1 %.3g\n", toEmu.cosine, toEmu.relL1);
      EXPECT_LE(toEmu.relL1, 2e-3) << "the kernel is the emulated algorithm";
    }
  }
}

// ---- crossAttentionRows ----------------------------------------------------------------------------------

TEST(CrossAttentionRows, HostEqualsReference) {
  struct S {
    std::int64_t nq, nk, heads, head;
  };
  for (S s : {S{1, 1, 1, 1}, S{5, 17, 2, 16}, S{9, 33, 3, 17}, S{20, 77, 2, 64}, S{3, 0, 2, 8}, S{0, 4, 1, 8}}) {
    SCOPED_TRACE(::testing::Message() << "nq " << s.nq << " nk " << s.nk << " heads " << s.heads << " head " << s.head);
    const std::int64_t width = s.heads * s.head;
    const Tensor q = host(withSpecials(Key{40, std::uint32_t(s.nq)}, s.nq * width), {s.nq, width});
    const Tensor kv = host(withSpecials(Key{41, std::uint32_t(s.nk)}, s.nk * 2 * width), {s.nk, 2 * width});
    std::vector<float> want(s.nq * width);
    ref::crossAttentionRows(q.toVector<float>().data(), kv.toVector<float>().data(), s.nq, s.nk, s.heads, s.head,
                            want.data());
    forThreadCounts([&] {
      Tensor out = Tensor::zeros({s.nq, width});
      netops::crossAttentionRows(q, kv, s.heads, s.head, out);
      EXPECT_TRUE(sameBits(out.toVector<float>(), want));
      Tensor outBF16 = Tensor::zeros({s.nq, width}, DType::BF16);
      netops::crossAttentionRows(q, kv, s.heads, s.head, outBF16);
      EXPECT_TRUE(sameBits(outBF16.toFloats(), host(want, {s.nq, width}).to(DType::BF16).toFloats()));
    });
  }
}

TEST(CrossAttentionRows, BadInput) {
  const char* fn = "gizml::netops::crossAttentionRows";
  const std::int64_t heads = 2, head = 4;
  Tensor q = Tensor::zeros({3, 8}), kv = Tensor::zeros({5, 16}), out = Tensor::zeros({3, 8});
  expectThrowsNaming([&] { netops::crossAttentionRows(q, kv, heads, 3, out); }, fn, "head");  // 6 != 8
  expectThrowsNaming([&] { netops::crossAttentionRows(q, Tensor::zeros({5, 8}), heads, head, out); }, fn, "head");
  expectThrowsNaming([&] { netops::crossAttentionRows(q, kv, 0, head, out); }, fn, "heads");
  expectThrowsNaming([&] { netops::crossAttentionRows(q.to(DType::BF16), kv, heads, head, out); }, fn, "q");
  expectThrowsNaming([&] { netops::crossAttentionRows(q, kv.to(DType::F64), heads, head, out); }, fn, "kv");
  expectThrowsNaming([&] { netops::crossAttentionRows(q, kv, heads, head, Tensor::zeros({4, 8})); }, fn, "out");
  expectThrowsNaming([&] { netops::crossAttentionRows(q, kv, heads, head, Tensor::zeros({3, 8}, DType::I8)); }, fn, "out");
  expectThrowsNaming([&] { netops::crossAttentionRows(q.reshape({24}), kv, heads, head, out); }, fn, "q");
}

// ---- neighborhood3d --------------------------------------------------------------------------------------

namespace {

/// NATTEN's window start for dilation 1, not causal (natten/src/natten/cuda/na/na_utils:
/// get_window_start): the kernel centred on i, shifted inward at the edges. NATTEN requires
/// k <= L; gizml clamps a longer kernel to the axis first.
std::int64_t nattenWindowStart(std::int64_t i, std::int64_t length, std::int64_t k) {
  const std::int64_t radius = k / 2;
  if (i < radius) return 0;
  if (i + radius >= length) return length - k;
  return i - radius;
}

/// na3d in float64: softmax over the box of q · k scale, times v; and per element sum p |v|.
void na3dF64(const std::vector<float>& x, std::int64_t T, std::int64_t H, std::int64_t W, const std::int64_t* kernel,
             std::int64_t heads, std::int64_t head, double scale, std::vector<double>& out, std::vector<double>& mag) {
  const std::int64_t stride = 3 * heads * head, dims[3] = {T, H, W};
  out.assign(T * H * W * heads * head, 0.0);
  mag.assign(out.size(), 0.0);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t r = 0; r < T * H * W; ++r) {
      const std::int64_t pos[3] = {r / (H * W), r / W % H, r % W};
      std::int64_t start[3], size[3];
      for (int a = 0; a < 3; ++a) {
        size[a] = std::min(kernel[a], dims[a]);
        start[a] = nattenWindowStart(pos[a], dims[a], size[a]);
      }
      std::vector<std::int64_t> keys;
      for (std::int64_t t = start[0]; t < start[0] + size[0]; ++t)
        for (std::int64_t y = start[1]; y < start[1] + size[1]; ++y)
          for (std::int64_t z = start[2]; z < start[2] + size[2]; ++z) keys.push_back((t * H + y) * W + z);
      std::vector<double> s;
      double m = -INFINITY, l = 0;
      for (std::int64_t key : keys) {
        double dot = 0;
        for (std::int64_t c = 0; c < head; ++c)
          dot += double(x[r * stride + h * head + c]) * x[key * stride + (heads + h) * head + c];
        s.push_back(dot * scale);
        m = std::max(m, s.back());
      }
      for (double v : s) l += std::exp(v - m);
      for (std::size_t j = 0; j < keys.size(); ++j)
        for (std::int64_t c = 0; c < head; ++c) {
          const double p = std::exp(s[j] - m) / l, v = x[keys[j] * stride + (2 * heads + h) * head + c];
          out[r * heads * head + h * head + c] += p * v;
          mag[r * heads * head + h * head + c] += p * std::fabs(v);
        }
    }
}

struct NaCase {
  std::int64_t T, H, W, kt, kh, kw, heads, head;
};
const NaCase kNa[] = {{1, 1, 1, 1, 1, 1, 1, 4},  {3, 4, 5, 3, 3, 3, 2, 8},  {2, 5, 6, 3, 5, 1, 1, 17},
                      {4, 4, 4, 5, 3, 7, 2, 16}, {3, 7, 9, 1, 7, 5, 1, 64}, {2, 3, 3, 9, 9, 9, 2, 4}};  // kernels > axes

}  // namespace

TEST(Neighborhood3d, HostEqualsReference) {
  for (const NaCase& c : kNa) {
    SCOPED_TRACE(::testing::Message() << "grid " << c.T << "x" << c.H << "x" << c.W << " kernel " << c.kt << "x" << c.kh
                                      << "x" << c.kw << " heads " << c.heads << " head " << c.head);
    const std::int64_t rows = c.T * c.H * c.W, width = 3 * c.heads * c.head;
    const Tensor qkv = host(withSpecials(Key{42, std::uint32_t(rows)}, rows * width), {rows, width});
    const double scale = 0.7 / std::sqrt(double(c.head));
    std::vector<float> want(rows * c.heads * c.head);
    ref::neighborhood3d(qkv.toVector<float>().data(), c.T, c.H, c.W, c.kt, c.kh, c.kw, c.heads, c.head, scale,
                        want.data());
    forThreadCounts([&] {
      EXPECT_TRUE(sameBits(
          netops::neighborhood3d(qkv, {c.T, c.H, c.W}, {c.kt, c.kh, c.kw}, c.heads, scale).toVector<float>(), want));
    });
  }
}

// Against NATTEN's na3d definition in float64: |out - exact| <= 2e-6 (1 + sum p |v|), as attention.
TEST(Neighborhood3d, MatchesNattenDefinitionInFloat64) {
  for (const NaCase& c : kNa) {
    SCOPED_TRACE(::testing::Message() << "grid " << c.T << "x" << c.H << "x" << c.W << " kernel " << c.kt << "x" << c.kh
                                      << "x" << c.kw);
    const std::int64_t rows = c.T * c.H * c.W, width = 3 * c.heads * c.head;
    const auto x = randomFloats(Key{43, std::uint32_t(rows)}, rows * width);
    const double scale = 1.0 / std::sqrt(double(c.head));
    const auto got = netops::neighborhood3d(host(x, {rows, width}), {c.T, c.H, c.W}, {c.kt, c.kh, c.kw}, c.heads, scale)
                         .toVector<float>();
    std::vector<double> want, mag;
    const std::int64_t kernel[3] = {c.kt, c.kh, c.kw};
    na3dF64(x, c.T, c.H, c.W, kernel, c.heads, c.head, double(float(scale)), want, mag);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - want[i]), 2e-6 * (1.0 + mag[i])) << "element " << i;
  }
}

TEST(Neighborhood3d, WindowsShiftInwardAtTheEdges) {
  // One axis of 5, kernel 3: query 0 sees keys 0..2 (not -1..1), query 4 sees 2..4. With v = the
  // one-hot of the key and q = 0, the output is 1/3 on exactly the keys of the window.
  const std::int64_t L = 5;
  std::vector<float> x(L * 3 * L, 0.0f);  // heads 1, head L: q, k = 0; v = one-hot
  for (std::int64_t r = 0; r < L; ++r) x[r * 3 * L + 2 * L + r] = 1.0f;
  const auto out = netops::neighborhood3d(host(x, {L, 3 * L}), {1, 1, L}, {1, 1, 3}, 1, 1.0).toVector<float>();
  const std::int64_t first[L] = {0, 0, 1, 2, 2};
  for (std::int64_t i = 0; i < L; ++i)
    for (std::int64_t j = 0; j < L; ++j)
      EXPECT_EQ(out[i * L + j], (j >= first[i] && j < first[i] + 3) ? 1.0f / 3.0f : 0.0f) << "query " << i << " key " << j;
}

TEST(Neighborhood3d, BadInput) {
  const char* fn = "gizml::netops::neighborhood3d";
  const Tensor qkv = Tensor::zeros({24, 12});  // grid 2 x 3 x 4, heads 2, head 2
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {1, 2, 3}, 2, 1.0); }, fn, "kernel");  // even
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {0, 1, 3}, 2, 1.0); }, fn, "kernel");  // zero
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {1, 3}, 2, 1.0); }, fn, "kernel");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 5}, {1, 1, 3}, 2, 1.0); }, fn, "grid");  // 30 != 24
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {6, 4}, {1, 1, 3}, 2, 1.0); }, fn, "grid");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {0, 3, 4}, {1, 1, 3}, 2, 1.0); }, fn, "grid");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {1, 1, 3}, 5, 1.0); }, fn, "heads");  // 12 % 15
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {1, 1, 3}, 0, 1.0); }, fn, "heads");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv.to(DType::BF16), {2, 3, 4}, {1, 1, 3}, 2, 1.0); }, fn, "qkv");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv.reshape({288}), {2, 3, 4}, {1, 1, 3}, 2, 1.0); }, fn, "qkv");
}

// ---- the fast GPU paths of crossAttentionRows and neighborhood3d -------------------------------------

namespace {

/// ‖gpu − exact‖ / ‖exact‖ over the whole output (0 when both are all zeros), and per element
/// |gpu − exact| <= 2^-6 (1 + vmax(i)) with vmax(i) a bound of sum_j p_j |v_jc| for element i, as
/// attentionRows' GPU test holds it; returns the relative norm, the worst element's error / (1 +
/// vmax) into worstElement.
template <class VMax>
double checkFast(const std::vector<float>& got, const std::vector<float>& want, VMax vmax, double& worstElement) {
  EXPECT_EQ(got.size(), want.size());
  double diff2 = 0.0, want2 = 0.0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]), bound = 1.0 + vmax(i);
    diff2 += err * err;
    want2 += double(want[i]) * want[i];
    worstElement = std::max(worstElement, err / bound);
    if (!(err <= std::ldexp(1.0, -6) * bound)) {
      ADD_FAILURE() << "element " << i << ": gpu " << got[i] << ", exact " << want[i];
      return INFINITY;
    }
  }
  const double rel = want2 == 0.0 ? std::sqrt(diff2) : std::sqrt(diff2) / std::sqrt(want2);
  EXPECT_LE(rel, 1e-2) << "SPEC: ‖gpu − exact‖ / ‖exact‖ ≤ 1e-2";
  return rel;
}

struct CrossCase {
  std::int64_t nq, nk, heads, head;
  bool bf16Q, bf16KV, bf16Out;
};
// Heads of 64 and 128 and others padded to them (17, 40, 80, 96); nq and nk ragged (not multiples of
// 64), nq > nk and nq < nk, one query, one key, no keys (+0s).
const CrossCase kCross[] = {{200, 77, 2, 64, false, false, false}, {130, 300, 3, 128, true, true, true},
                            {1, 1, 1, 40, false, false, false},    {65, 64, 2, 80, false, true, true},
                            {300, 1, 1, 17, true, false, false},   {64, 129, 2, 96, false, false, true},
                            {129, 513, 1, 128, true, true, false}, {5, 0, 1, 64, false, false, false}};

}  // namespace

TEST(CrossAttentionRows, CudaFastPathWithinToleranceOfExact) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  double worstNorm = 0.0, worstElement = 0.0;
  for (const CrossCase& c : kCross) {
    SCOPED_TRACE(::testing::Message() << "nq " << c.nq << " nk " << c.nk << " heads " << c.heads << " head " << c.head
                                      << (c.bf16Q ? " q BF16" : "") << (c.bf16KV ? " kv BF16" : "")
                                      << (c.bf16Out ? " out BF16" : ""));
    const std::int64_t width = c.heads * c.head;
    Tensor q = host(randomFloats(Key{44, static_cast<std::uint32_t>(c.nq * c.head)}, c.nq * width), {c.nq, width});
    Tensor kv = host(randomFloats(Key{45, static_cast<std::uint32_t>(c.nk * c.head)}, c.nk * 2 * width), {c.nk, 2 * width});
    if (c.bf16Q) q = q.to(DType::BF16).to(DType::F32);  // the host sees the values the GPU reads
    if (c.bf16KV) kv = kv.to(DType::BF16).to(DType::F32);
    Tensor exact = Tensor::zeros({c.nq, width});
    netops::crossAttentionRows(q, kv, c.heads, c.head, exact);
    const auto want = exact.toVector<float>();

    Tensor out = Tensor::zeros({c.nq, width}, c.bf16Out ? DType::BF16 : DType::F32, gpu);
    netops::crossAttentionRows((c.bf16Q ? q.to(DType::BF16) : q).to(gpu), (c.bf16KV ? kv.to(DType::BF16) : kv).to(gpu),
                               c.heads, c.head, out);
    const auto got = out.to(Device::host()).toFloats();

    // max_j |v_jc| over the keys, per (head, channel).
    const auto x = kv.toVector<float>();
    std::vector<double> vmax(width, 0.0);
    for (std::int64_t j = 0; j < c.nk; ++j)
      for (std::int64_t hc = 0; hc < width; ++hc) vmax[hc] = std::max(vmax[hc], std::fabs(double(x[j * 2 * width + width + hc])));
    worstNorm = std::max(worstNorm, checkFast(got, want, [&](std::size_t i) { return vmax[i % width]; }, worstElement));
  }
  RecordProperty("worst_norm", std::to_string(worstNorm));
  RecordProperty("worst_element", std::to_string(worstElement));
  std::printf("crossAttentionRows fast path: worst relative norm %.3g, worst element error / (1 + max|v|) %.3g\n",
              worstNorm, worstElement);
}

TEST(CrossAttentionRows, CudaFastPathErrors) {
  GIZML_NEED_GPU();
  const char* fn = "gizml::netops::crossAttentionRows";
  const Device gpu = Device::cuda(0);
  const Tensor q = Tensor::zeros({3, 130}, DType::BF16, gpu), kv = Tensor::zeros({5, 260}, DType::BF16, gpu);
  Tensor out = Tensor::zeros({3, 130}, DType::F32, gpu);
  expectThrowsNaming([&] { netops::crossAttentionRows(q, kv, 1, 130, out); }, fn, "head");
  EXPECT_TRUE(sameBits(out.to(Device::host()).toVector<float>(), std::vector<float>(3 * 130, 0.0f))) << "out untouched";
}

namespace {
struct NaFast {
  std::int64_t T, H, W, kt, kh, kw, heads, head;
  bool bf16In;
};
// Tiles of 64 queries inside one line, crossing lines (W < 64) and frames (H W < 64 or not a multiple
// of it), ragged last tiles, kernels longer than their axes, one-cell axes; heads 64, 128 and padded.
const NaFast kNaFast[] = {{3, 4, 5, 3, 3, 3, 2, 64, false},   {2, 5, 70, 1, 3, 9, 1, 128, true},
                          {4, 9, 9, 3, 5, 7, 2, 40, false},   {2, 3, 3, 9, 9, 9, 2, 80, true},
                          {1, 1, 100, 1, 1, 7, 1, 64, false}, {3, 7, 30, 3, 7, 7, 3, 128, false},
                          {6, 11, 4, 5, 9, 3, 1, 17, true},   {8, 16, 16, 3, 7, 7, 2, 128, true}};
}  // namespace

TEST(Neighborhood3d, CudaFastPathWithinToleranceOfExact) {
  GIZML_NEED_GPU();
  const Device gpu = Device::cuda(0);
  double worstNorm = 0.0, worstElement = 0.0;
  for (const NaFast& c : kNaFast) {
    SCOPED_TRACE(::testing::Message() << "grid " << c.T << "x" << c.H << "x" << c.W << " kernel " << c.kt << "x" << c.kh
                                      << "x" << c.kw << " heads " << c.heads << " head " << c.head
                                      << (c.bf16In ? " qkv BF16" : ""));
    const std::int64_t rows = c.T * c.H * c.W, width = 3 * c.heads * c.head;
    Tensor qkv = host(randomFloats(Key{46, static_cast<std::uint32_t>(rows * c.head)}, rows * width), {rows, width});
    if (c.bf16In) qkv = qkv.to(DType::BF16).to(DType::F32);
    const double scale = 1.0 / std::sqrt(double(c.head));
    const auto want = netops::neighborhood3d(qkv, {c.T, c.H, c.W}, {c.kt, c.kh, c.kw}, c.heads, scale).toVector<float>();
    const Tensor out = netops::neighborhood3d((c.bf16In ? qkv.to(DType::BF16) : qkv).to(gpu), {c.T, c.H, c.W},
                                              {c.kt, c.kh, c.kw}, c.heads, scale);
    EXPECT_EQ(out.dtype(), DType::F32);
    const auto got = out.to(Device::host()).toVector<float>();

    const auto x = qkv.toVector<float>();
    const std::int64_t outWidth = c.heads * c.head;
    std::vector<double> vmax(outWidth, 0.0);  // max |v| over all keys, per (head, channel)
    for (std::int64_t j = 0; j < rows; ++j)
      for (std::int64_t hc = 0; hc < outWidth; ++hc)
        vmax[hc] = std::max(vmax[hc], std::fabs(double(x[j * width + 2 * outWidth + hc])));
    worstNorm = std::max(worstNorm, checkFast(got, want, [&](std::size_t i) { return vmax[i % outWidth]; }, worstElement));
  }
  RecordProperty("worst_norm", std::to_string(worstNorm));
  RecordProperty("worst_element", std::to_string(worstElement));
  std::printf("neighborhood3d fast path: worst relative norm %.3g, worst element error / (1 + max|v|) %.3g\n",
              worstNorm, worstElement);
}

TEST(Neighborhood3d, CudaFastPathErrors) {
  GIZML_NEED_GPU();
  const char* fn = "gizml::netops::neighborhood3d";
  const Device gpu = Device::cuda(0);
  // head = 390 / (3 heads) = 130 > 128: named by `heads`, the argument that sets the head.
  const Tensor wide = Tensor::zeros({24, 390}, DType::BF16, gpu);
  expectThrowsNaming([&] { netops::neighborhood3d(wide, {2, 3, 4}, {1, 1, 3}, 1, 1.0); }, fn, "heads");
  // The argument checks come first on a GPU too.
  const Tensor qkv = Tensor::zeros({24, 12}, DType::BF16, gpu);
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {1, 2, 3}, 2, 1.0); }, fn, "kernel");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 5}, {1, 1, 3}, 2, 1.0); }, fn, "grid");
  expectThrowsNaming([&] { netops::neighborhood3d(qkv, {2, 3, 4}, {1, 1, 3}, 5, 1.0); }, fn, "heads");
}
