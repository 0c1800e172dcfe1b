// The tile loop logic of a flash (matrix-core) attention kernel, written once as GIZML_HD code so
// that tests/flash_step_test.cpp runs it on the host: which tiles of (queries x keys) to skip, to
// run unmasked or to mask element by element (the causal diagonal and the ragged last block of
// keys), and the online-softmax step of one query row over one block of keys.
//
// The step is attention.hpp's, with the block size a parameter (the exact op's blocks are 16 keys;
// a flash kernel's are 64):
//   m' = max(m, the block's visible scores)   (masked scores are -inf, which never enters)
//   c  = exp(m - m'),  p_j = exp(s_j - m')    (p_j = +0 for a masked key: exp(-inf) = +0)
//   l  = l * c, then l + p_j in key order;     a = a * c, then a + p_j v_j (the caller's product)
//   out = a / l, or +0 for a query that sees no key.
// One difference from the exact op: while m' is still -inf (no visible score above -inf yet), c is
// 1 and every p_j is +0 instead of exp(-inf - -inf) = NaN, so a row whose first blocks are wholly
// masked (a Partial tile's rows above the causal diagonal) starts clean. Over finite scores the
// steps are the exact op's, bit for bit (the test checks this with blocks of 16).
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "netops/attention/attention.hpp"

namespace gizml::netops::attn {

/// How a tile of queries [i0, i0 + rows) and keys [j0, j0 + cols) is masked: no query sees any of
/// its keys (skip it), every query sees every key (no mask), or some do (mask each element).
enum class TileMask { Empty, Full, Partial };

/// The tile's mask. `rows` counts only real queries (1 <= rows, i0 + rows <= tq); `cols` is the block's size,
/// keys past tk included: a ragged last block is never Full. A query's visible keys are a prefix
/// (visibleKeys) that never shrinks as i grows, so the tile's first and last rows bound all others.
GIZML_HD TileMask tileMask(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, std::int64_t tq,
                           std::int64_t tk, bool causal) {
  const std::int64_t fewest = visibleKeys(i0, tq, tk, causal), most = visibleKeys(i0 + rows - 1, tq, tk, causal);
  if (most <= j0) return TileMask::Empty;
  if (fewest >= j0 + cols) return TileMask::Full;
  return TileMask::Partial;
}

/// Whether query i sees key j (j < tk, and j <= i + tk - tq when causal).
GIZML_HD bool keyVisible(std::int64_t i, std::int64_t j, std::int64_t tq, std::int64_t tk, bool causal) {
  return j < visibleKeys(i, tq, tk, causal);
}

/// How many keys of the block [j0, j0 + cols) query i sees: a prefix of the block, 0 to cols.
GIZML_HD std::int64_t visibleInBlock(std::int64_t i, std::int64_t j0, std::int64_t cols, std::int64_t tq,
                                     std::int64_t tk, bool causal) {
  const std::int64_t n = visibleKeys(i, tq, tk, causal) - j0;
  return n < 0 ? 0 : n < cols ? n : cols;
}

/// A score as the step reads it: -inf where the key is masked.
GIZML_HD float maskedScore(float s, bool visible) { return visible ? s : -INFINITY; }

/// The factor of the old accumulator and sum, c = exp(m - m'); 1 while m' is -inf.
GIZML_HD float rescaleFactor(float m, float mNew) { return mNew == -INFINITY ? 1.0f : exact::exp(m - mNew); }

/// A key's weight p = exp(s - m'); +0 while m' is -inf.
GIZML_HD float blockWeight(float s, float mNew) { return mNew == -INFINITY ? 0.0f : exact::exp(s - mNew); }

/// One query row's running maximum and sum of weights.
struct OnlineRow {
  float m = -INFINITY, l = 0.0f;
};

/// The step of one query row over one block of keys: scores s[0, cols) (masked ones -inf, by
/// maskedScore), the weights into p[0, cols), the row's m and l updated; returns c, which the caller
/// applies to its accumulator (a = a * c) before adding the block's p_j v_j in key order.
GIZML_HD float blockStep(OnlineRow& row, const float* s, float* p, int cols) {
  float mNew = row.m;
  for (int j = 0; j < cols; ++j) mNew = runningMax(mNew, s[j]);
  const float c = rescaleFactor(row.m, mNew);
  float l = row.l * c;
  for (int j = 0; j < cols; ++j) {
    p[j] = blockWeight(s[j], mNew);
    l = l + p[j];
  }
  row.m = mNew;
  row.l = l;
  return c;
}

/// The output element: a / l, or +0 for a query that sees no key (l is then 0 too).
GIZML_HD float finishOutput(float a, float l, bool seesAnyKey) { return seesAnyKey ? a / l : 0.0f; }

}  // namespace gizml::netops::attn
