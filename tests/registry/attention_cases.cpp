// The attention family's cases (SPEC §3 "Attention"): the causal mask with tq < tk, tq > tk
// (queries that see no key) and empty sides; `attention` over d, e and tk of 1, 15, 16, 17, 33
// (around a block of 16 keys and a lane vector of 16 channels), causal with tq < tk and tq > tk,
// tiles of queries cut short, no keys, NaN and ±inf in q, k or v, and dropout; headPrepInPlace;
// attentionRows, crossAttentionRows and neighborhood3d (on a GPU their fast paths, within the SPEC's
// tolerance).
#include <cmath>

#include "reference/attention_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;

std::string num(std::int64_t v) { return std::to_string(v); }

/// A host op wherever it is asked: no inputs, a host output.
Case causalMaskCase(std::int64_t tq, std::int64_t tk, bool typical) {
  Case c{.op = "causalMask", .name = num(tq) + " x " + num(tk)};
  c.typical = typical;
  c.hostOutputs = true;
  c.inputs = [] { return Tensors{}; };
  c.run = [tq, tk](const Tensors&) { return Tensors{netops::causalMask(tq, tk)}; };
  c.reference = [tq, tk](const Tensors&) {
    std::vector<float> out(tq * tk);
    ref::causalMask(tq, tk, out.data());
    return Tensors{host(out, {tq, tk})};
  };
  return c;
}

/// Which input holds NaN, +inf, -inf and -0 (test::withSpecials).
enum class Specials { None, Q, K, V };

struct AttentionShape {
  std::int64_t b, tq, tk, d, e;
  bool causal = false;
  double rate = 0.0;
  Specials specials = Specials::None;
  bool typical = false;
  std::string name() const {
    static const char* kSpecials[] = {"", " specials q", " specials k", " specials v"};
    return dims({b, tq, tk}) + " d " + num(d) + " e " + num(e) + (causal ? " causal" : "") +
           (rate > 0 ? " rate " + std::to_string(rate).substr(0, 4) : "") + kSpecials[static_cast<int>(specials)];
  }
  std::uint32_t seed() const { return static_cast<std::uint32_t>(((b * 131 + tq) * 131 + tk) * 131 + d * 7 + e); }
};

Tensor attentionInput(Key key, Shape shape, bool specials) {
  std::int64_t count = 1;
  for (std::int64_t s : shape) count *= s;
  return host(specials ? test::withSpecials(key, count) : test::randomFloats(key, count), shape);
}

Case attentionCase(const AttentionShape& s) {
  Case c{.op = "attention", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    return Tensors{attentionInput(Key{90, s.seed()}, {s.b, s.tq, s.d}, s.specials == Specials::Q),
                   attentionInput(Key{91, s.seed()}, {s.b, s.tk, s.d}, s.specials == Specials::K),
                   attentionInput(Key{92, s.seed()}, {s.b, s.tk, s.e}, s.specials == Specials::V)};
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  const Key key{93, s.seed()};
  c.run = [s, scale, key](const Tensors& in) {
    return Tensors{netops::attention(in[0], in[1], in[2], scale, s.causal, s.rate, key)};
  };
  c.reference = [s, scale, key](const Tensors& in) {
    const std::int64_t b = in[0].dim(0);
    std::vector<float> out(b * s.tq * s.e);
    ref::attention(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(), b, s.tq, s.tk, s.d, s.e,
                   scale, s.causal, s.rate, key, out.data());
    return Tensors{host(out, {b, s.tq, s.e})};
  };
  c.outputNames = {"out"};
  // Dropout's words depend on the item's index b: an item alone is item 0, so no cut there.
  if (s.rate == 0.0) c.cut = {{{0, 1}, {1, 1}, {2, 1}}, {{0, 1}}};
  return c;
}

/// headPrepInPlace on qkv [rows, 3 heads head]: q and k of rows [0, n), cos / sin rows from row0.
struct PrepShape {
  std::int64_t rows, heads, head, half, n, row0;
  bool bf16 = false, typical = false;
  std::string name() const {
    return dims({rows, 3 * heads * head}) + " heads " + num(heads) + " head " + num(head) + " half " + num(half) +
           " n " + num(n) + " row0 " + num(row0) + (bf16 ? " BF16" : "");
  }
  std::uint32_t seed() const { return static_cast<std::uint32_t>(((rows * 31 + heads) * 131 + head) * 67 + half); }
};

/// Inputs {qkv, qw, kw, cos, sin}; cos / sin [row0 + n + 1, half] (a row past the last used).
Case headPrepCase(const PrepShape& s) {
  Case c{.op = "headPrepInPlace", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    const std::int64_t width = 3 * s.heads * s.head, cosRows = s.row0 + s.n + 1;
    Tensor qkv = host(test::withSpecials(Key{94, s.seed()}, s.rows * width), {s.rows, width});
    if (s.bf16) qkv = qkv.to(DType::BF16);
    std::vector<float> angle = test::randomFloats(Key{97, s.seed()}, cosRows * s.half, 2.0f), cos, sin;
    for (float t : angle) {
      cos.push_back(static_cast<float>(std::cos(t)));
      sin.push_back(static_cast<float>(std::sin(t)));
    }
    return Tensors{qkv, host(test::randomFloats(Key{95, 0}, s.head, 0.5f, 1.0f), {s.head}),
                   host(test::randomFloats(Key{96, 0}, s.head, 0.5f, 1.0f), {s.head}), host(cos, {cosRows, s.half}),
                   host(sin, {cosRows, s.half})};
  };
  c.run = [s](const Tensors& in) {
    Tensor qkv = in[0].clone();
    netops::headPrepInPlace(qkv, s.n, s.heads, s.head, netops::HeadPrep{in[1], in[2], in[3], in[4], 1e-6}, s.row0);
    return Tensors{qkv};
  };
  c.reference = [s](const Tensors& in) {
    std::vector<float> qkv = valuesOf(in[0]);
    ref::headPrep(qkv.data(), s.n, s.heads, s.head, valuesOf(in[1]).data(), valuesOf(in[2]).data(),
                  valuesOf(in[3]).data(), valuesOf(in[4]).data(), s.half, 1e-6, s.row0, s.bf16);
    Tensor out = host(qkv, in[0].shape());
    return Tensors{s.bf16 ? out.to(DType::BF16) : out};
  };
  c.outputNames = {"qkv"};
  return c;
}

/// attentionRows into an F32 out on qkv's device: exact on the host, the fast BF16 flash path on a
/// GPU, held to the SPEC's ‖gpu − host‖ / ‖host‖ ≤ 1e-2. No prep (the tests cover it); no cut
/// (a group is the item, and the rows of one are not independent).
struct RowsShape {
  std::int64_t rows, heads, head, group, queries;
  bool typical = false;
  std::string name() const {
    return dims({rows, 3 * heads * head}) + " heads " + num(heads) + " head " + num(head) + " group " + num(group) +
           " queries " + num(queries);
  }
  std::uint32_t seed() const { return static_cast<std::uint32_t>(((rows * 31 + heads) * 131 + head) * 67 + group); }
};

Case attentionRowsCase(const RowsShape& s) {
  Case c{.op = "attentionRows", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    const std::int64_t width = 3 * s.heads * s.head;
    return Tensors{host(test::randomFloats(Key{98, s.seed()}, s.rows * width), {s.rows, width})};
  };
  const std::int64_t outRows = s.queries > 0 ? s.queries : s.rows;
  c.run = [s, outRows](const Tensors& in) {
    Tensor out = Tensor::empty({outRows, s.heads * s.head}, DType::F32, in[0].device());
    netops::attentionRows(in[0], s.heads, s.head, false, s.group, out, {}, s.queries);
    return Tensors{out};
  };
  c.reference = [s, outRows](const Tensors& in) {
    std::vector<float> out(outRows * s.heads * s.head);
    ref::attendedRows(valuesOf(in[0]).data(), s.rows, s.heads, s.head, s.group, nullptr, nullptr, nullptr, nullptr, 0,
                      1e-6, s.queries, out.data());
    return Tensors{host(out, {outRows, s.heads * s.head})};
  };
  c.outputNames = {"out"};
  c.gpu = GpuCompare::Tolerance;
  c.tolerance = 1e-2;
  return c;
}

/// crossAttentionRows into an F32 out on q's device: exact on the host, the fast BF16 flash path on a
/// GPU (one group: q's rows over kv's), held to the SPEC's tolerance. No cut: on a GPU the op is not
/// exact, so a row alone is not compared with the batch.
struct CrossShape {
  std::int64_t nq, nk, heads, head;
  bool typical = false;
  std::string name() const {
    return "q " + dims({nq, heads * head}) + " kv " + dims({nk, 2 * heads * head}) + " heads " + num(heads) + " head " +
           num(head);
  }
  std::uint32_t seed() const { return static_cast<std::uint32_t>(((nq * 31 + nk) * 131 + heads) * 67 + head); }
};

Case crossAttentionRowsCase(const CrossShape& s) {
  Case c{.op = "crossAttentionRows", .name = s.name()};
  c.typical = s.typical;
  const std::int64_t width = s.heads * s.head;
  c.inputs = [s, width] {
    return Tensors{host(test::randomFloats(Key{99, s.seed()}, s.nq * width), {s.nq, width}),
                   host(test::randomFloats(Key{100, s.seed()}, s.nk * 2 * width), {s.nk, 2 * width})};
  };
  c.run = [s, width](const Tensors& in) {
    Tensor out = Tensor::empty({s.nq, width}, DType::F32, in[0].device());
    netops::crossAttentionRows(in[0], in[1], s.heads, s.head, out);
    return Tensors{out};
  };
  c.reference = [s, width](const Tensors& in) {
    std::vector<float> out(s.nq * width);
    ref::crossAttentionRows(valuesOf(in[0]).data(), valuesOf(in[1]).data(), s.nq, s.nk, s.heads, s.head, out.data());
    return Tensors{host(out, {s.nq, width})};
  };
  c.outputNames = {"out"};
  c.gpu = GpuCompare::Tolerance;
  c.tolerance = 1e-2;
  return c;
}

/// neighborhood3d on qkv's device: exact on the host, the fast BF16 flash path over each tile's box
/// of keys on a GPU, held to the SPEC's tolerance.
struct NeighborhoodShape {
  std::int64_t T, H, W, kt, kh, kw, heads, head;
  bool typical = false;
  std::string name() const {
    return "grid " + dims({T, H, W}) + " kernel " + dims({kt, kh, kw}) + " heads " + num(heads) + " head " + num(head);
  }
  std::uint32_t seed() const {
    return static_cast<std::uint32_t>((((T * 31 + H) * 31 + W) * 131 + kt * 49 + kh * 7 + kw) * 67 + head);
  }
};

Case neighborhood3dCase(const NeighborhoodShape& s) {
  Case c{.op = "neighborhood3d", .name = s.name()};
  c.typical = s.typical;
  const std::int64_t rows = s.T * s.H * s.W, width = 3 * s.heads * s.head;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head));
  c.inputs = [s, rows, width] {
    return Tensors{host(test::randomFloats(Key{101, s.seed()}, rows * width), {rows, width})};
  };
  c.run = [s, scale](const Tensors& in) {
    return Tensors{netops::neighborhood3d(in[0], {s.T, s.H, s.W}, {s.kt, s.kh, s.kw}, s.heads, scale)};
  };
  c.reference = [s, rows, scale](const Tensors& in) {
    std::vector<float> out(rows * s.heads * s.head);
    ref::neighborhood3d(valuesOf(in[0]).data(), s.T, s.H, s.W, s.kt, s.kh, s.kw, s.heads, s.head, scale, out.data());
    return Tensors{host(out, {rows, s.heads * s.head})};
  };
  c.outputNames = {"out"};
  c.gpu = GpuCompare::Tolerance;
  c.tolerance = 1e-2;
  return c;
}

}  // namespace

std::vector<Case> attentionCases() {
  std::vector<Case> cases;
  for (auto [tq, tk] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {4, 4}, {3, 7}, {7, 3}, {0, 5}, {5, 0}, {16, 33}})
    cases.push_back(causalMaskCase(tq, tk, false));
  cases.push_back(causalMaskCase(100, 300, true));

  std::vector<AttentionShape> shapes;
  for (std::int64_t n : {1, 15, 16, 17, 33}) {
    shapes.push_back({2, 5, 20, n, 16});                // d
    shapes.push_back({2, 5, 20, 16, n, true});          // e
    shapes.push_back({2, 9, n, 16, 16});                // tk
    shapes.push_back({2, 9, n, 16, 16, true});          // tk, causal: tq > tk for 1 and 9 > tk - tq ...
  }
  shapes.push_back({3, 5, 40, 64, 64, true});           // a KV cache: tq < tk
  shapes.push_back({2, 40, 7, 16, 16, true});           // tq > tk: the first 33 queries see no key
  shapes.push_back({2, 37, 37, 64, 128, true});         // tiles of 8 cut short, 128 channels
  shapes.push_back({1, 64, 100, 64, 64});               // whole blocks for whole tiles
  shapes.push_back({1, 12, 70, 128, 80});               // 64 channels and a rest of 16
  shapes.push_back({2, 3, 0, 8, 8});                    // no keys: +0s
  shapes.push_back({2, 0, 5, 8, 8});                    // no queries
  for (Specials sp : {Specials::Q, Specials::K, Specials::V}) {
    shapes.push_back({2, 6, 33, 17, 17, false, 0.0, sp});
    shapes.push_back({2, 9, 33, 64, 64, true, 0.0, sp});
  }
  shapes.push_back({2, 9, 40, 16, 17, true, 0.3});       // dropout
  shapes.push_back({1, 20, 70, 64, 64, false, 0.5});
  shapes.push_back({2, 9, 300, 8, 8, false, 0.2});       // words drawn past one chunk of 256 keys
  shapes.push_back({8, 256, 256, 64, 64, true, 0.0, Specials::None, true});
  for (const AttentionShape& s : shapes) cases.push_back(attentionCase(s));

  const PrepShape preps[] = {
      {5, 2, 16, 8, 5, 0},        {7, 3, 17, 4, 5, 2},         // partial rotary, rows left alone
      {3, 1, 64, 32, 3, 1},       {4, 2, 128, 0, 4, 0},        // no rotation
      {9, 4, 33, 16, 9, 0},       {3, 2, 1, 0, 3, 0},          // one value a head
      {6, 2, 64, 32, 6, 3, true}, {5, 3, 17, 8, 4, 0, true},   // BF16 rows
      {256, 8, 128, 64, 256, 0, false, true}};
  for (const PrepShape& s : preps) cases.push_back(headPrepCase(s));

  // The fast GPU path's two head widths, a padded head, ragged groups and tiles, queries mid-group.
  const RowsShape rowsShapes[] = {{200, 2, 64, 0, 0}, {300, 2, 128, 150, 0}, {130, 3, 128, 65, 100},
                                  {96, 2, 40, 32, 50},  {512, 4, 128, 256, 0, true}};
  for (const RowsShape& s : rowsShapes) cases.push_back(attentionRowsCase(s));

  // The same kernel with queries and keys from two tensors: ragged both ways, nq < nk and nq > nk.
  const CrossShape crossShapes[] = {{200, 77, 2, 64}, {130, 300, 3, 128}, {65, 1, 1, 40}, {1, 129, 2, 80},
                                    {1024, 256, 4, 128, true}};
  for (const CrossShape& s : crossShapes) cases.push_back(crossAttentionRowsCase(s));

  // Tiles of 64 queries within a line, across lines and frames; kernels longer than their axes.
  const NeighborhoodShape naShapes[] = {{3, 4, 5, 3, 3, 3, 2, 64},  {2, 5, 70, 1, 3, 9, 1, 128},
                                        {4, 9, 9, 3, 5, 7, 2, 40},  {2, 3, 3, 9, 9, 9, 1, 17},
                                        {4, 16, 16, 3, 7, 7, 2, 128, true}};
  for (const NeighborhoodShape& s : naShapes) cases.push_back(neighborhood3dCase(s));
  return cases;
}

}  // namespace gizml::registry
