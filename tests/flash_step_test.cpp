// The tile loop logic of a flash attention kernel (src/netops/attention/flash_step.hpp), run on the
// host: tile masks against element-by-element visibility; a tiled flash computation (tiles of 64
// queries x 64 keys, float) built from the step functions over ragged shapes, causal and not,
// against float64 softmax attention; and, with blocks of 16 keys, the same steps equal the exact
// `attention` bit for bit. Then neighborhood3d's kernel (src/netops/attention/neighborhood_window.hpp):
// the box of keys of a tile of queries is the smallest box holding each query's window, and the
// kernel's tile loop over that box, masked to each query's window, gives the exact neighborhood3d
// (bit for bit with tiles of one query and blocks of 16 keys, where the SPEC's blocks are the loop's).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "netops/attention/flash_step.hpp"
#include "netops/attention/neighborhood_window.hpp"
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

// ---- neighborhood3d: the box of a tile of queries, and the tile loop over it ------------------------

struct NaGrid {
  std::int64_t T, H, W, kt, kh, kw;
};
// Kernels shorter than, equal to and longer than their axes; one-cell axes; lines and frames shorter
// than a tile of 64 (tiles crossing lines and frames) and longer; ragged last tiles.
const NaGrid kNaGrids[] = {{1, 1, 1, 1, 1, 1},   {1, 1, 100, 1, 1, 7}, {3, 4, 5, 3, 3, 3},  {2, 5, 70, 1, 3, 9},
                           {4, 9, 9, 3, 5, 7},   {2, 3, 3, 9, 9, 9},   {5, 1, 13, 5, 1, 13}, {3, 7, 30, 3, 7, 7},
                           {6, 11, 4, 5, 9, 3},  {2, 64, 1, 1, 5, 1},  {9, 2, 2, 7, 3, 3}};

std::string describe(const NaGrid& g) {
  std::ostringstream o;
  o << "grid " << g.T << "x" << g.H << "x" << g.W << " kernel " << g.kt << "x" << g.kh << "x" << g.kw;
  return o.str();
}
attn::Grid3 grid3(const NaGrid& g) { return {{g.T, g.H, g.W}, {g.kt, g.kh, g.kw}}; }

TEST(NeighborhoodWindow, WindowIsTheSpecs) {
  for (std::int64_t L : {1, 2, 5, 9, 30})
    for (std::int64_t k : {1, 3, 5, 7, 9, 31})
      for (std::int64_t i = 0; i < L; ++i) {
        const std::int64_t kk = std::min(k, L), s = std::clamp(i - kk / 2, std::int64_t{0}, L - kk);
        const attn::Window w = attn::windowOf(i, L, k);
        EXPECT_EQ(w.start, s) << "L " << L << " k " << k << " i " << i;
        EXPECT_EQ(w.length, kk);
        EXPECT_TRUE(attn::inWindow(w, i)) << "a position sees itself";
      }
}

// For every tile of `tile` consecutive queries (the ragged last one too): per axis, the box's range
// is the union of the tile's windows along it (it covers each one, and a range ending anywhere
// nearer would miss the window that sets that end), and the box's keys in raster order are its
// cells, rows increasing.
TEST(NeighborhoodWindow, TileBoxIsTheSmallestBoxHoldingEveryWindow) {
  for (const NaGrid& g : kNaGrids)
    for (std::int64_t tile : {1, 7, 16, 64}) {
      SCOPED_TRACE(describe(g) + " tile " + std::to_string(tile));
      const attn::Grid3 g3 = grid3(g);
      const std::int64_t rows = g.T * g.H * g.W;
      for (std::int64_t first = 0; first < rows; first += tile) {
        const std::int64_t count = std::min(tile, rows - first);
        std::int64_t lo[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, hi[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
        for (std::int64_t r = first; r < first + count; ++r) {
          const attn::Box3 own = attn::queryBox(g3, r);
          for (int d = 0; d < 3; ++d) {
            lo[d] = std::min(lo[d], own.axis[d].start);
            hi[d] = std::max(hi[d], own.axis[d].start + own.axis[d].length);
          }
        }
        const attn::Box3 box = attn::tileBox(g3, first, count);
        for (int d = 0; d < 3; ++d) {
          ASSERT_EQ(box.axis[d].start, lo[d]) << "tile at " << first << " axis " << d;
          ASSERT_EQ(box.axis[d].start + box.axis[d].length, hi[d]) << "tile at " << first << " axis " << d;
        }
        std::int64_t previous = -1;
        for (std::int64_t j = 0; j < attn::boxSize(box); ++j) {
          const attn::Pos3 p = attn::boxKey(box, j);
          ASSERT_TRUE(attn::inBox(box, p)) << "key " << j;
          const std::int64_t row = attn::rowOf(g3, p);
          ASSERT_GT(row, previous) << "raster order, key " << j;
          previous = row;
          unsigned at[3];
          attn::boxOffsets(static_cast<unsigned>(j), static_cast<unsigned>(box.axis[2].length),
                           static_cast<unsigned>(box.axis[1].length), at);
          for (int d = 0; d < 3; ++d) ASSERT_EQ(box.axis[d].start + std::int64_t(at[d]), p.at[d]) << "32-bit offsets";
        }
      }
    }
}

// The kernel's mask (32-bit offsets from the box's start) is the SPEC's: key j of the tile's box
// counts for a query exactly when it lies in the query's box of windows; a row past the tile's
// queries sees none of the box.
TEST(NeighborhoodWindow, MaskIsEachQuerysWindow) {
  for (const NaGrid& g : kNaGrids) {
    SCOPED_TRACE(describe(g));
    const attn::Grid3 g3 = grid3(g);
    const std::int64_t rows = g.T * g.H * g.W;
    for (std::int64_t first = 0; first < rows; first += 64) {
      const std::int64_t count = std::min<std::int64_t>(64, rows - first);
      const attn::Box3 box = attn::tileBox(g3, first, count);
      for (std::int64_t r = first; r < first + count; ++r) {
        int start[3], none[3];
        attn::windowOffsets(g3, box, r, true, start);
        attn::windowOffsets(g3, box, r, false, none);
        const attn::Box3 own = attn::queryBox(g3, r);
        std::int64_t seen = 0;
        for (std::int64_t j = 0; j < attn::boxSize(box); ++j) {
          unsigned at[3];
          attn::boxOffsets(static_cast<unsigned>(j), static_cast<unsigned>(box.axis[2].length),
                           static_cast<unsigned>(box.axis[1].length), at);
          const bool held = attn::windowsHoldOffsets(g3, start, at);
          ASSERT_EQ(held, attn::inBox(own, attn::boxKey(box, j))) << "query " << r << " key " << j;
          ASSERT_FALSE(attn::windowsHoldOffsets(g3, none, at)) << "a row past the queries, key " << j;
          seen += held;
        }
        ASSERT_EQ(seen, attn::boxSize(own)) << "query " << r << " sees its whole box";
      }
    }
  }
}

/// The flash kernel's tile loop for neighborhood3d on the host, from the same functions: per head,
/// tiles of `tileQ` consecutive queries; the tile's box of keys in blocks of `block`; a key counts
/// for a query where it lies in the query's window (by the 32-bit offsets the kernel uses) and
/// before the box's end. Scores chain(q, k) * scale; a = a * c, then a = fma(p_j, v_j, a) over the
/// query's visible keys of the block in order.
std::vector<float> neighborhoodFlash(const std::vector<float>& x, const NaGrid& g, std::int64_t heads, std::int64_t head,
                                     float scale, std::int64_t tileQ, std::int64_t block) {
  const attn::Grid3 g3 = grid3(g);
  const std::int64_t rows = g.T * g.H * g.W, stride = 3 * heads * head;
  std::vector<float> out(static_cast<std::size_t>(rows * heads * head));
  std::vector<float> score(block), p(block);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i0 = 0; i0 < rows; i0 += tileQ) {
      const std::int64_t count = std::min(tileQ, rows - i0);
      const attn::Box3 box = attn::tileBox(g3, i0, count);
      const std::int64_t tk = attn::boxSize(box);
      std::vector<attn::OnlineRow> state(count);
      std::vector<float> acc(static_cast<std::size_t>(count * head), 0.0f);
      for (std::int64_t j0 = 0; j0 < tk; j0 += block)
        for (std::int64_t r = 0; r < count; ++r) {
          int start[3];
          attn::windowOffsets(g3, box, i0 + r, true, start);
          std::vector<bool> seen(block);
          for (std::int64_t jj = 0; jj < block; ++jj) {
            const std::int64_t j = j0 + jj;
            unsigned at[3];
            attn::boxOffsets(static_cast<unsigned>(j), static_cast<unsigned>(box.axis[2].length),
                             static_cast<unsigned>(box.axis[1].length), at);
            const bool visible = j < tk && attn::windowsHoldOffsets(g3, start, at);
            seen[jj] = visible;
            float dot = 0.0f;
            if (j < tk) {  // past the box a kernel's tile holds zeros, masked either way
              const std::int64_t key = attn::rowOf(g3, attn::boxKey(box, j));
              for (std::int64_t c = 0; c < head; ++c)
                dot = std::fma(x[(i0 + r) * stride + h * head + c], x[key * stride + (heads + h) * head + c], dot);
            }
            score[jj] = attn::maskedScore(dot * scale, visible);
          }
          const float c = attn::blockStep(state[r], score.data(), p.data(), static_cast<int>(block));
          float* a = acc.data() + r * head;
          for (std::int64_t ch = 0; ch < head; ++ch) {
            float y = a[ch] * c;
            for (std::int64_t jj = 0; jj < block; ++jj)
              if (seen[jj]) {
                const std::int64_t key = attn::rowOf(g3, attn::boxKey(box, j0 + jj));
                y = std::fma(p[jj], x[key * stride + (2 * heads + h) * head + ch], y);
              }
            a[ch] = y;
          }
        }
      for (std::int64_t r = 0; r < count; ++r)
        for (std::int64_t ch = 0; ch < head; ++ch)
          out[(i0 + r) * heads * head + h * head + ch] = attn::finishOutput(acc[r * head + ch], state[r].l, true);
    }
  return out;
}

// Tiles of one query and blocks of 16 keys: the box is the query's own and its blocks are the SPEC's,
// so the loop is the exact neighborhood3d, bit for bit.
TEST(FlashStep, NeighborhoodTilesOfOneQueryAreTheExactOp) {
  const std::int64_t heads = 2, head = 12;
  for (const NaGrid& g : kNaGrids) {
    SCOPED_TRACE(describe(g));
    const std::int64_t rows = g.T * g.H * g.W;
    const auto x = randomFloats(Key{14, static_cast<std::uint32_t>(rows)}, rows * 3 * heads * head);
    const float scale = 0.4f;
    const auto got = neighborhoodFlash(x, g, heads, head, scale, 1, attn::kBlock);
    const auto exact =
        netops::neighborhood3d(host(x, {rows, 3 * heads * head}), {g.T, g.H, g.W}, {g.kt, g.kh, g.kw}, heads, scale)
            .toVector<float>();
    EXPECT_TRUE(sameBits(got, exact));
  }
}

// The kernel's shape: tiles of 64 queries over their box, blocks of 16 or 64 keys, each query masked
// to its window. Against the exact neighborhood3d (standard normal inputs, head 32): |got - exact|
// <= 2e-6 per element. Why that size: both are within about 2e-6 (1 + sum p |v|) of float64
// softmax attention (the exact op's bound, FlashStep.TiledFlashWithinBoundOfFloat64's); the two
// differ only in where the running maximum is refreshed (other blocks), so their difference is a
// few ulps of outputs of size ~1; 2e-6 is 7x the worst measured here (2.7e-7).
TEST(FlashStep, NeighborhoodTileLoopOverTheBoxIsTheExactOpWithinBound) {
  const std::int64_t heads = 2, head = 32;
  double worst = 0.0;
  for (const NaGrid& g : kNaGrids)
    for (std::int64_t block : {16, 64}) {
      SCOPED_TRACE(describe(g) + " block " + std::to_string(block));
      const std::int64_t rows = g.T * g.H * g.W;
      const auto x = randomFloats(Key{15, static_cast<std::uint32_t>(rows)}, rows * 3 * heads * head);
      const float scale = 1.0f / std::sqrt(float(head));
      const auto got = neighborhoodFlash(x, g, heads, head, scale, 64, block);
      const auto exact =
          netops::neighborhood3d(host(x, {rows, 3 * heads * head}), {g.T, g.H, g.W}, {g.kt, g.kh, g.kw}, heads, scale)
              .toVector<float>();
      ASSERT_EQ(got.size(), exact.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - exact[i]);
        worst = std::max(worst, err);
        ASSERT_LE(err, 2e-6) << "element " << i << ": flash " << got[i] << ", exact " << exact[i];
      }
    }
  std::ostringstream text;
  text << worst;
  RecordProperty("worst", text.str());
  std::printf("neighborhood tile loop: worst |flash - exact| %.3g\n", worst);
}

}  // namespace
