// The attention family (SPEC §3 "Attention"): the steps of the exact `attention` that the host and
// CUDA share, written once (GIZML_HD), and the kernel struct (core/dispatch.hpp).
//
// The exact order, for one query i of batch item b (SPEC):
//   n = the keys it sees: tk, or min(tk, i + tk - tq + 1) when causal (none: the output is +0s);
//   m = -inf, l = 0, a = 0; for each aligned block [16 j, 16 j + 16) holding a visible key:
//     s_j = chain(q_i, k_j) * scale                        (one fma chain over d, from +0)
//     m'  = max(m, the block's visible scores)              (NaN ignored: only a greater value enters)
//     c   = exp(m - m'), w_j = exp(s_j - m')
//     l   = l * c, then l + w_j in key order               (the undropped w_j)
//     a   = a * c, then a = fma(w'_j, v_j, a) in key order (a dropped key is skipped)
//     m   = m'
//   out = a / l.
// w'_j is w_j, or with rate > 0 w_j * F32(1 / (1 - rate)) where uniform(word (b tq + i) tk + j of
// the key's draw) >= F32(rate); else the key is dropped (Tensor::dropout's mask of those words).
//
// Which of two equal zeros m' is (+0 or -0) never changes a bit: s - m' and m - m' are then the
// same value or a zero, and exp(±0) = 1. So the host may take the block's maximum in any order.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "exact/philox.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"
#include "netops/norms/norms.hpp"
#include "netops/rows/rows.hpp"

namespace gizml::netops::attn {

/// The keys a block holds: 16 (SPEC "aligned blocks of 16").
constexpr std::int64_t kBlock = 16;

/// Where a batch item's rows start in a tensor: item = outer * inner + innerIndex (plain attention
/// has inner = 1; packed rows are items (group, head) over [rows, heads head] layouts), and the
/// distance between two rows of one item.
struct Layout {
  std::int64_t outer, inner, row;  // strides, in floats
};
GIZML_HD std::int64_t itemOffset(const Layout& t, std::int64_t item, std::int64_t inner) {
  return (item / inner) * t.outer + (item % inner) * t.inner;
}

/// The keys query i sees (a prefix of the keys): tk, or when causal those with j <= i + tk - tq.
GIZML_HD std::int64_t visibleKeys(std::int64_t i, std::int64_t tq, std::int64_t tk, bool causal) {
  if (!causal) return tk;
  const std::int64_t last = i + tk - tq;  // the last key seen
  return last < 0 ? 0 : last + 1 < tk ? last + 1 : tk;
}

/// The running maximum after one value: only a greater value enters (NaN never does).
GIZML_HD float runningMax(float m, float s) { return s > m ? s : m; }

/// The word of the key's draw that drops (item, i, j): (b tq + i) tk + j.
GIZML_HD std::uint64_t dropoutWord(std::int64_t item, std::int64_t i, std::int64_t j, std::int64_t tq, std::int64_t tk) {
  return static_cast<std::uint64_t>((item * tq + i) * tk + j);
}

/// Whether a weight with this word of the draw is kept: uniform(word) >= F32(rate) (Tensor::dropout).
template <class U>
GIZML_HD auto keepsWeight(U word, float rate) {
  return exact::uniformOfWord(word) >= rate;
}

/// One word of a key's draw (scalar; the host draws 16 counters at once).
GIZML_HD std::uint32_t drawWord(std::uint32_t k0, std::uint32_t k1, std::uint64_t w) {
  const exact::Philox4 p = exact::drawGroup(k0, k1, w / 4);
  return p.v[w % 4];
}

/// attention(q [b, tq, d], k [b, tk, d], v [b, tk, e]) -> out [b, tq, e], items = b (packed
/// rows: groups x heads, see Layout). Dropout when rate > 0.
struct Attention {
  static constexpr const char* kName = "gizml::netops::attention";
  struct Args {
    const float *q, *k, *v;
    float* out;
    Layout lq, lk, lv, lout;
    std::int64_t items, inner;  // batch items, and the inner extent of Layout's item index
    std::int64_t tq, tk, d, e;
    float scale;
    bool causal;
    float rate, keepScale;  // rate > 0: dropout, kept weights times keepScale = F32(1 / (1 - rate))
    std::uint32_t k0, k1;   // the dropout key
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// HeadPrep of one head of q or k (a unit): r = rsqrt(dot16(v, v) / head + eps) (exact::rmsScale,
/// the shared row reduction), v = (v * r) * w; then for e < half the pair (v[e], v[e + half])
/// turned by the row's cos[e], sin[e] (norms::normRotateHalves); values from 2 half on are only
/// normalised. Every value is read before its unit is written; T is float, or std::uint16_t for
/// BF16 rows (rounded once as they are stored).
template <class Row, class T>
GIZML_HD void prepUnit(const Row& row, T* v, const float* w, const float* cos, const float* sin, std::int64_t half,
                       float eps) {
  const float r = exact::rmsScale(row, v, eps);
  norms::normRotateHalves(row.ofLength(half), v, r, w, cos, sin);
  row.ofLength(row.n - 2 * half).forEach([&](const auto& at) GIZML_HD_LAMBDA {
    at.store(v + 2 * half, rows::rmsNormValue(at.load(v + 2 * half), r, at.load(w + 2 * half)));
  });
}

/// headPrepInPlace over qkv [rows, 3 heads head] (F32 or BF16): unit u = (r, which, h) is row r's
/// q (which 0) or k (which 1) of head h, u = (r 2 + which) heads + h; row r uses cos / sin row
/// row0 + r. A row of the shared row type is one unit (n = head).
struct HeadPrepRows {
  static constexpr const char* kName = "gizml::netops::headPrepInPlace";
  struct Args {
    void* qkv;
    bool bf16;
    std::int64_t rows, n;  // units (2 heads x the rows prepared), head
    std::int64_t heads, stride, half, row0;
    const float *qw, *kw, *cos, *sin;
    float eps;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t u) {
    const std::int64_t r = u / (2 * a.heads), which = (u / a.heads) % 2, h = u % a.heads;
    const std::int64_t at = r * a.stride + (which * a.heads + h) * a.n;
    const float* w = which == 0 ? a.qw : a.kw;
    const float *cos = a.cos + (a.row0 + r) * a.half, *sin = a.sin + (a.row0 + r) * a.half;
    if (a.bf16) prepUnit(row, static_cast<std::uint16_t*>(a.qkv) + at, w, cos, sin, a.half, a.eps);
    else prepUnit(row, static_cast<float*>(a.qkv) + at, w, cos, sin, a.half, a.eps);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::attn
