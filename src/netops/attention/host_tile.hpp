// The host's exact attention of a tile of queries over a sequence of keys (attention.hpp's order),
// shared by `attention`, the packed rows (attendedRows, crossAttentionRows) and neighborhood3d.
// Host only.
//
// How the 16 lanes are used:
//   scores   a block's 16 keys in the 16 lanes: lane l runs key 16 j + l's fma chain over d, for
//            kTile queries at once (kTile accumulators), so each step loads one 16-key column of
//            the packed keys (keys transposed by blocks: [block][d][16]) and broadcasts q[p].
//   softmax  per query: the block's maximum, c and the 16 weights (expLanes, the same bits as the
//            scalar exp), then l in key order (scalar, as the SPEC adds it).
//   values   a = fma(w_j, v_j, a) across the output channels, 16 channels a lane vector, for 4
//            queries and 64 channels at once (16 accumulators), keys in order; v_j is loaded once
//            for the 4 queries.
// Nothing here depends on the thread count or on which queries share a tile: each query's steps
// are the SPEC's, in its order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "exact/math.hpp"
#include "exact/philox.hpp"
#include "exact/vec16.hpp"
#include "netops/attention/attention.hpp"

namespace gizml::netops::attn {

using exact::f32x16;

/// Queries a tile.
constexpr int kTile = 8;
/// Dropout words are drawn for this many keys of a query at once (16 blocks).
constexpr std::int64_t kWordChunk = 256;

/// Holds v in a register from here on: the compiler would otherwise fold v's load into each of the
/// 4 fmas that use it, loading it 4 times (the loads, not the fmas, then bound the loop).
inline __attribute__((always_inline)) void inRegister(f32x16& v) {
#if defined(__AVX512F__)
  asm("" : "+v"(v));
#else
  asm("" : "+x"(v.h[0]), "+x"(v.h[1]));
#endif
}

/// The channels of `e` rounded up to whole lane vectors (the accumulators' row).
inline std::int64_t paddedChannels(std::int64_t e) { return (e + 15) / 16 * 16; }

/// Words [w0, w0 + count) of the key's draw into out: 16 Philox counters a step, from a counter
/// that is a multiple of 16 (so the low counter word never carries within a step).
inline void drawWords(std::uint32_t k0, std::uint32_t k1, std::uint64_t w0, std::int64_t count, std::uint32_t* out) {
  std::uint64_t g = (w0 / 4) & ~std::uint64_t{15};
  const std::uint64_t end = w0 + static_cast<std::uint64_t>(count);
  for (; 4 * g < end; g += 16) {
    exact::u32x16 c0 = exact::iota16(static_cast<std::uint32_t>(g));
    exact::u32x16 c1 = exact::u32x16{} + static_cast<std::uint32_t>(g >> 32);
    exact::u32x16 c2{}, c3{};
    exact::philoxRounds(k0, k1, c0, c1, c2, c3);
    const exact::u32x16 byWord[4] = {c0, c1, c2, c3};
    exact::u32x16 words[4];
    exact::interleaveWords(byWord, words);
    if (4 * g >= w0 && 4 * g + 64 <= end) {  // the step's 64 words all wanted: stored whole
      std::memcpy(out + (4 * g - w0), words, sizeof words);
      continue;
    }
    std::uint32_t flat[64];
    std::memcpy(flat, words, sizeof flat);
    for (int t = 0; t < 64; ++t) {
      const std::uint64_t w = 4 * g + static_cast<std::uint64_t>(t);
      if (w >= w0 && w < end) out[w - w0] = flat[t];
    }
  }
}

#if defined(__AVX512F__)
/// The 16 x 16 floats rows[i][0 .. 16) transposed into out[c * 16 + i] (unpack, then 128-bit
/// lane shuffles: data movement only).
inline void transpose16x16(const float* const* rows, float* out) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(rows[i]);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4 g + k] holds column k + 4 m (m = the 128-bit lane) of rows 4 g .. 4 g + 3, lane m.
  for (int g = 0; g < 4; g += 2)
    for (int k = 0; k < 4; ++k) {
      t[4 * g + k] = _mm512_shuffle_f32x4(r[4 * g + k], r[4 * g + 4 + k], 0x88);
      t[4 * g + 4 + k] = _mm512_shuffle_f32x4(r[4 * g + k], r[4 * g + 4 + k], 0xdd);
    }
  for (int k = 0; k < 4; ++k) {
    const __m512 a0 = t[k], a1 = t[4 + k], b0 = t[8 + k], b1 = t[12 + k];
    _mm512_storeu_ps(out + (k + 0) * 16, _mm512_shuffle_f32x4(a0, b0, 0x88));
    _mm512_storeu_ps(out + (k + 8) * 16, _mm512_shuffle_f32x4(a0, b0, 0xdd));
    _mm512_storeu_ps(out + (k + 4) * 16, _mm512_shuffle_f32x4(a1, b1, 0x88));
    _mm512_storeu_ps(out + (k + 12) * 16, _mm512_shuffle_f32x4(a1, b1, 0xdd));
  }
}
#endif

/// Keys transposed by blocks of 16: block jb holds, for p < d, the 16 lanes k[16 jb + l][p] (+0
/// past the last key). keyRow(j) is key j's d values.
template <class KeyRow>
inline void packKeyBlock(KeyRow keyRow, std::int64_t jb, std::int64_t n, std::int64_t d, float* block) {
  const std::int64_t j0 = jb * kBlock;
  std::int64_t done = 0;  // values p < done are packed
#if defined(__AVX512F__)
  if (j0 + kBlock <= n) {
    const float* rows[kBlock];
    for (int l = 0; l < kBlock; ++l) rows[l] = keyRow(j0 + l);
    for (; done + 16 <= d; done += 16) {
      const float* at[kBlock];
      for (int l = 0; l < kBlock; ++l) at[l] = rows[l] + done;
      transpose16x16(at, block + done * kBlock);
    }
  }
#endif
  for (int l = 0; l < kBlock; ++l) {
    if (j0 + l < n) {
      const float* k = keyRow(j0 + l);
      for (std::int64_t p = done; p < d; ++p) block[p * kBlock + l] = k[p];
    } else {
      for (std::int64_t p = done; p < d; ++p) block[p * kBlock + l] = 0.0f;
    }
  }
}

/// One thread's buffers for tiles over keys whose values have e channels.
struct TileScratch {
  std::int64_t ePad;
  float* acc;                          // kTile x ePad running a
  float w[kTile][kBlock];              // this block's w'_j (w_j times keepScale with dropout)
  bool keep[kTile][kBlock];            // with dropout: key j of this block is kept
  std::uint32_t words[kTile][kWordChunk];
  float* qT;                           // d x kTile: the tile's q values by p, one a score slot
  float* keys;                         // kTile packed blocks, for tiles that pack their own keys
};

/// What a tile reads: kTile query rows (the first nq real), their visible key counts, the keys
/// (packed by the caller, or packed by the tile from kRow(j) as it goes: a tile that is its item's
/// only one, such as a decoder's step, reads each key once that way), the value rows (vRow(j)),
/// the output rows, and the dropout words' coordinates.
template <class KeyRow, class ValueRow>
struct Tile {
  const float* q[kTile];
  float* out[kTile];
  std::int64_t visible[kTile];
  int nq;
  const float* keys;  // packed: block jb at keys + jb d 16, kTile blocks of slack after the last; or null
  KeyRow kRow;        // where keys is null
  ValueRow vRow;
  std::int64_t d, e;
  float scale;
  // Dropout (rate > 0): word dropoutWord(item, i0 + qi, j, tq, tk).
  float rate, keepScale;
  std::uint32_t k0, k1;
  std::int64_t item, i0, tq, tk;
};

/// The 16-lane maximum of the lanes below count that are not NaN (-inf when none), by a tree of
/// lane swaps: order-free, since no NaN takes part.
inline float blockMax(f32x16 s, std::int64_t count) {
  f32x16 m = exact::select((exact::laneIndex() < static_cast<std::int32_t>(count)) & (s == s), s,
                           exact::splat(-std::numeric_limits<float>::infinity()));
  for (int h = 8; h >= 1; h /= 2) {
    const f32x16 other = exact::permuteLanes(m, exact::laneIndex() ^ h);
    m = exact::maxLane(other, m);  // other > m ? other : m
  }
  return m[0];
}

/// a = a * c, then a = fma(w'_j, v_j, a) over the block's kept keys, for one query and the
/// channels [c0, e): the general step (partial blocks, dropout, the channels past the last 64).
template <bool Dropout, class KeyRow, class ValueRow>
inline void accumulateOne(const Tile<KeyRow, ValueRow>& t, TileScratch& s, int qi, std::int64_t j0, std::int64_t count,
                          float c, std::int64_t c0) {
  float* acc = s.acc + qi * s.ePad;
  std::int64_t cb = c0;
  for (; cb + 64 <= t.e; cb += 64) {
    // 64 channels in 4 registers.
    f32x16 a0 = exact::load16(acc + cb, 16), a1 = exact::load16(acc + cb + 16, 16),
           a2 = exact::load16(acc + cb + 32, 16), a3 = exact::load16(acc + cb + 48, 16);
    if (c != 1.0f) {  // a * 1 is a: the same bits
      a0 = a0 * c;
      a1 = a1 * c;
      a2 = a2 * c;
      a3 = a3 * c;
    }
    for (std::int64_t j = 0; j < count; ++j) {
      if (Dropout && !s.keep[qi][j]) continue;
      const f32x16 w = exact::splat(s.w[qi][j]);
      const float* v = t.vRow(j0 + j) + cb;
      a0 = exact::fmaLane(w, exact::load16(v, 16), a0);
      a1 = exact::fmaLane(w, exact::load16(v + 16, 16), a1);
      a2 = exact::fmaLane(w, exact::load16(v + 32, 16), a2);
      a3 = exact::fmaLane(w, exact::load16(v + 48, 16), a3);
    }
    exact::store16(acc + cb, a0, 16);
    exact::store16(acc + cb + 16, a1, 16);
    exact::store16(acc + cb + 32, a2, 16);
    exact::store16(acc + cb + 48, a3, 16);
  }
  for (; cb < t.e; cb += 64) {
    const int nv = static_cast<int>(std::min<std::int64_t>(4, (t.e - cb + 15) / 16));
    f32x16 a[4];
    for (int u = 0; u < nv; ++u) {
      a[u] = exact::load16(acc + cb + 16 * u, 16);
      if (c != 1.0f) a[u] = a[u] * c;  // a * 1 is a: the same bits
    }
    for (std::int64_t j = 0; j < count; ++j) {
      if (Dropout && !s.keep[qi][j]) continue;
      const f32x16 w = exact::splat(s.w[qi][j]);
      const float* v = t.vRow(j0 + j) + cb;
      for (int u = 0; u < nv; ++u) a[u] = exact::fmaLane(w, exact::load16(v + 16 * u, t.e - cb - 16 * u), a[u]);
    }
    for (int u = 0; u < nv; ++u) exact::store16(acc + cb + 16 * u, a[u], 16);
  }
}

/// The same for 4 queries qg .. qg + 3 that all see the whole block, no dropout, on the channels
/// [0, 64 floor(e / 64)): v_j loaded once for the 4 queries, 16 accumulators.
template <class KeyRow, class ValueRow>
inline void accumulateFour(const Tile<KeyRow, ValueRow>& t, TileScratch& s, int qg, std::int64_t j0, const float* c) {
  const std::int64_t full = t.e / 64 * 64;
  const bool rescale = c[0] != 1.0f || c[1] != 1.0f || c[2] != 1.0f || c[3] != 1.0f;
  for (std::int64_t cb = 0; cb < full; cb += 64) {
    f32x16 a[4][4];
    for (int qq = 0; qq < 4; ++qq) {
      const float* acc = s.acc + (qg + qq) * s.ePad + cb;
      for (int u = 0; u < 4; ++u) {
        a[qq][u] = exact::load16(acc + 16 * u, 16);
        if (rescale) a[qq][u] = a[qq][u] * c[qq];
      }
    }
    for (std::int64_t j = 0; j < kBlock; ++j) {
      const float* v = t.vRow(j0 + j) + cb;
      f32x16 v0 = exact::load16(v, 16), v1 = exact::load16(v + 16, 16), v2 = exact::load16(v + 32, 16),
             v3 = exact::load16(v + 48, 16);
      inRegister(v0);
      inRegister(v1);
      inRegister(v2);
      inRegister(v3);
      for (int qq = 0; qq < 4; ++qq) {
        const f32x16 w = exact::splat(s.w[qg + qq][j]);
        a[qq][0] = exact::fmaLane(w, v0, a[qq][0]);
        a[qq][1] = exact::fmaLane(w, v1, a[qq][1]);
        a[qq][2] = exact::fmaLane(w, v2, a[qq][2]);
        a[qq][3] = exact::fmaLane(w, v3, a[qq][3]);
      }
    }
    for (int qq = 0; qq < 4; ++qq)
      for (int u = 0; u < 4; ++u) exact::store16(s.acc + (qg + qq) * s.ePad + cb + 16 * u, a[qq][u], 16);
  }
}

/// The scores of `Blocks` consecutive packed blocks (keys + b d 16) for kTile / Blocks queries:
/// acc[b (kTile / Blocks) + qi] = the 16 chains of block b and query qi, p in order. The packed
/// keys have kTile blocks of slack after the last, so the blocks past it (unused) can be read.
template <int Blocks>
inline void scoreBlocks(const float* keys, const float* qT, std::int64_t d, f32x16* out) {
  constexpr int kQueries = kTile / Blocks;
  // Local accumulators, loops unrolled: all kTile stay in registers over the p loop.
  f32x16 acc[kTile];
#pragma GCC unroll 8
  for (int slot = 0; slot < kTile; ++slot) acc[slot] = f32x16{};
  const std::int64_t blockFloats = d * kBlock;
  for (std::int64_t p = 0; p < d; ++p) {
    const float* q = qT + p * kTile;
#pragma GCC unroll 8
    for (int b = 0; b < Blocks; ++b) {
      const f32x16 kp = exact::load16(keys + b * blockFloats + p * kBlock, 16);
#pragma GCC unroll 8
      for (int qi = 0; qi < kQueries; ++qi)
        acc[b * kQueries + qi] = exact::fmaLane(exact::splat(q[b * kQueries + qi]), kp, acc[b * kQueries + qi]);
    }
  }
#pragma GCC unroll 8
  for (int slot = 0; slot < kTile; ++slot) out[slot] = acc[slot];
}

/// One block's softmax steps for the tile's queries (scores sc[qi], count[qi] visible keys, 0 for
/// a query that has none in the block): m, l and c[qi], and the weights w'_j into s.w (and the
/// dropout flags into s.keep).
template <bool Dropout, class KeyRow, class ValueRow>
inline void blockSoftmax(const Tile<KeyRow, ValueRow>& t, TileScratch& s, const f32x16* sc, const std::int64_t* count,
                         std::int64_t j0, float* m, float* l, float* c) {
  float mNew[16], mOld[16], wLocal[Dropout ? kTile : 1][kBlock];
  float(*w)[kBlock] = Dropout ? wLocal : s.w;  // the undropped weights
  for (int qi = 0; qi < 16; ++qi) mNew[qi] = mOld[qi] = qi < kTile ? m[qi] : 0.0f;
  for (int qi = 0; qi < kTile; ++qi)
    if (count[qi] > 0) mNew[qi] = runningMax(m[qi], blockMax(sc[qi], count[qi]));
  // c = exp(m - m') for the tile's queries in one 16-lane exp (the same bits as one by one).
  float cs[16];
  exact::store16(cs, exact::expLanes(exact::load16(mOld, 16) - exact::load16(mNew, 16)), 16);
  float sum[kTile];
  for (int qi = 0; qi < kTile; ++qi) {
    c[qi] = count[qi] > 0 ? cs[qi] : 1.0f;
    // The lanes past the visible keys (and a query with none) hold +0, which the sums below add:
    // l is never -0 (+0, products and sums of values >= +0, or NaN), so l + (+0) is l, bit for bit.
    const f32x16 wq = count[qi] > 0 ? exact::keepFirst(exact::expLanes(sc[qi] - mNew[qi]), count[qi]) : f32x16{};
    exact::store16(w[qi], wq, 16);
    if (count[qi] > 0) {
      m[qi] = mNew[qi];
      l[qi] = l[qi] * c[qi];
    }
    sum[qi] = l[qi];
  }
  // l + w_j in key order, each query its own chain (the queries interleaved).
  for (int j = 0; j < kBlock; ++j)
    for (int qi = 0; qi < kTile; ++qi) sum[qi] = sum[qi] + w[qi][j];
  for (int qi = 0; qi < kTile; ++qi) l[qi] = sum[qi];
  if (Dropout)
    for (int qi = 0; qi < kTile; ++qi) {
      const std::uint32_t* words = s.words[qi] + (j0 % kWordChunk);
      for (std::int64_t j = 0; j < count[qi]; ++j) {
        s.keep[qi][j] = keepsWeight(words[j], t.rate);
        s.w[qi][j] = w[qi][j] * t.keepScale;
      }
    }
}

/// The tile's queries over their visible keys, into their output rows.
template <bool Dropout, class KeyRow, class ValueRow>
void attendTile(const Tile<KeyRow, ValueRow>& t, TileScratch& s) {
  const float negInf = -std::numeric_limits<float>::infinity();
  float m[kTile], l[kTile], c[kTile];
  std::int64_t most = 0;
  for (int qi = 0; qi < kTile; ++qi) {
    m[qi] = negInf;
    l[qi] = 0.0f;
    most = std::max(most, qi < t.nq ? t.visible[qi] : 0);
    std::memset(s.acc + qi * s.ePad, 0, sizeof(float) * static_cast<std::size_t>(s.ePad));
    for (int j = 0; j < kBlock; ++j) s.w[qi][j] = 0.0f;
  }
  const std::int64_t d = t.d, blocks = (most + kBlock - 1) / kBlock;
  // The kTile accumulators hold (block, query) pairs: `slots` queries a block, kTile / slots
  // blocks scored at once, so a tile of one query (a decoder's step) still runs kTile chains.
  const int slots = t.nq > 4 ? 8 : t.nq > 2 ? 4 : t.nq > 1 ? 2 : 1, together = kTile / slots;
  for (std::int64_t p = 0; p < d; ++p)
    for (int slot = 0; slot < kTile; ++slot) s.qT[p * kTile + slot] = t.q[slot % slots][p];
  for (std::int64_t jb0 = 0; jb0 < blocks; jb0 += together) {
    // Scores: lane l of acc[bb slots + qi] is chain(q_qi, k_{16 (jb0 + bb) + l}).
    const float* keys = t.keys ? t.keys + jb0 * d * kBlock : s.keys;
    if (!t.keys) {
      for (int bb = 0; bb < together && jb0 + bb < blocks; ++bb)
        packKeyBlock(t.kRow, jb0 + bb, most, d, s.keys + bb * d * kBlock);
      // (the blocks past the last: stale or zero, unused)
    }
    f32x16 acc[kTile];
    switch (together) {
      case 1: scoreBlocks<1>(keys, s.qT, d, acc); break;
      case 2: scoreBlocks<2>(keys, s.qT, d, acc); break;
      case 4: scoreBlocks<4>(keys, s.qT, d, acc); break;
      default: scoreBlocks<8>(keys, s.qT, d, acc); break;
    }
    for (int bb = 0; bb < together && jb0 + bb < blocks; ++bb) {
      const std::int64_t jb = jb0 + bb, j0 = jb * kBlock;
      if (Dropout && j0 % kWordChunk == 0)
        for (int qi = 0; qi < t.nq; ++qi) {
          const std::int64_t n = std::min(kWordChunk, t.visible[qi] - j0);
          if (n > 0) drawWords(t.k0, t.k1, dropoutWord(t.item, t.i0 + qi, j0, t.tq, t.tk), n, s.words[qi]);
        }
      f32x16 sc[kTile];
      std::int64_t count[kTile];
      for (int qi = 0; qi < kTile; ++qi) {
        count[qi] = qi < t.nq ? std::clamp<std::int64_t>(t.visible[qi] - j0, 0, kBlock) : 0;
        sc[qi] = qi < slots ? acc[bb * slots + qi] * t.scale : f32x16{};
      }
      blockSoftmax<Dropout>(t, s, sc, count, j0, m, l, c);
      // The values: 4 queries at once where all 4 see the whole block, else one by one.
      for (int qg = 0; qg < kTile; qg += 4) {
        const bool four = !Dropout && count[qg] == kBlock && count[qg + 1] == kBlock && count[qg + 2] == kBlock &&
                          count[qg + 3] == kBlock;
        if (four) accumulateFour(t, s, qg, j0, c + qg);
        for (int qi = qg; qi < qg + 4; ++qi)
          if (count[qi] > 0) accumulateOne<Dropout>(t, s, qi, j0, count[qi], c[qi], four ? t.e / 64 * 64 : 0);
      }
    }
  }
  // out = a / l; a query that sees no key gives +0s.
  for (int qi = 0; qi < t.nq; ++qi) {
    const float* acc = s.acc + qi * s.ePad;
    for (std::int64_t cb = 0; cb < t.e; cb += 16) {
      const f32x16 o = t.visible[qi] == 0 ? f32x16{} : exact::load16(acc + cb, 16) / l[qi];
      exact::store16(t.out[qi] + cb, o, t.e - cb);
    }
  }
}

}  // namespace gizml::netops::attn
