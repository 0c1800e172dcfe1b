// A language model's step (SPEC §3): where a row's logits are, the candidates' insertion and the
// split sum, written once for the host and CUDA, and each op's kernel struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hadamard.hpp"
#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "exact/order.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"
#include "gizml/netops/step.hpp"
#include "netops/norms/norms.hpp"
#include "netops/rows/rows.hpp"

namespace gizml::netops::step {

/// Where row r's token t is (include/gizml/netops/step.hpp): one segment of vocab values, or one
/// segment a block.
struct LogitRows {
  const float* logits;
  const float* const* blocks;
  std::int64_t vocab, stride;
  bool indirect;

  GIZML_HD std::int64_t segments() const { return indirect ? (vocab + stride - 1) / stride : 1; }
  /// Segment s of row r: its values (contiguous), its first token and its length.
  GIZML_HD const float* segment(std::int64_t r, std::int64_t s, std::int64_t& first, std::int64_t& length) const {
    if (!indirect) {
      first = 0;
      length = vocab;
      return logits + r * stride;
    }
    first = s * stride;
    length = vocab - first < stride ? vocab - first : stride;
    return blocks[s] + r * stride;
  }
  GIZML_HD float at(std::int64_t r, std::int64_t t) const {
    return indirect ? blocks[t / stride][r * stride + t % stride] : logits[r * stride + t];
  }
};

/// argmaxInto: the SPEC's argmax over the row's segments (each by the row type, then combined;
/// argmaxBetter is order-free, so this is the argmax of the whole row).
struct ArgmaxInto {
  static constexpr const char* kName = "gizml::netops::argmaxInto";
  struct Args {
    LogitRows src;
    std::int64_t rows, n;  // n: the vocabulary (the row type's length; segments set their own)
    float* top;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    float best = 0.0f;
    long long at = -1;  // none yet
    for (std::int64_t s = 0; s < a.src.segments(); ++s) {
      std::int64_t first, length;
      const float* x = a.src.segment(r, s, first, length);
      const std::int64_t i = row.ofLength(length).argmax(x);
      const float v = x[i];
      if (at < 0 ? v == v : exact::argmaxBetter(v, first + i, best, at)) {
        best = v;
        at = first + i;
      }
    }
    if (row.leader()) a.top[r] = static_cast<float>(at < 0 ? 0 : at);
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// A worker's kept candidates, on lanes: F / I are float / int32 for one worker (a GPU thread) or
/// the host's 16 lanes for 16 workers. An empty slot is (-inf, kEmpty), worse than any token.
template <class F, class I>
struct Kept {
  static constexpr std::int32_t kEmpty = 0x7fffffff;
  F value[TOP_EACH];
  I token[TOP_EACH];
};

/// argmaxBetter on lanes: is (a, ia) a better maximum than (b, ib)? NaN never; a larger value; on
/// equal values the lower token.
template <class F, class I>
GIZML_HD auto betterLanes(F a, I ia, F b, I ib) {
  return (a == a) & ((b != b) | (a > b) | ((a == b) & (ia < ib)));
}

/// Offers (x, id) to the kept list: it bubbles down while it is better than the slot's (swapping
/// them), which keeps the list sorted, larger first, and drops the worst; NaN is never kept. The
/// same as inserting it where it belongs, since the list's order is a strict total order.
template <class F, class I>
GIZML_HD void offer(Kept<F, I>& k, F x, I id) {
  for (int j = 0; j < TOP_EACH; ++j) {
    const auto take = betterLanes(x, id, k.value[j], k.token[j]);
    const F v = k.value[j];
    const I t = k.token[j];
    k.value[j] = exact::select(take, x, v);
    k.token[j] = exact::select(take, id, t);
    x = exact::select(take, v, x);
    id = exact::select(take, t, id);
  }
}

/// candidatesInto: worker t of row r offers its tokens t, t + 256, ... in order.
struct CandidatesInto {
  static constexpr const char* kName = "gizml::netops::candidatesInto";
  struct Args {
    LogitRows src;
    std::int64_t rows;
    float* cand;
  };
  /// One worker (a GPU thread): its 2 TOP_EACH floats of row r, written to out.
  GIZML_HD static void worker(const Args& a, std::int64_t r, int t, float* out) {
    Kept<float, std::int32_t> k;
    for (int j = 0; j < TOP_EACH; ++j) k.value[j] = -INFINITY, k.token[j] = k.kEmpty;
    for (std::int64_t id = t; id < a.src.vocab; id += CANDIDATE_WORKERS)
      offer(k, a.src.at(r, id), static_cast<std::int32_t>(id));
    for (int slot = 0; slot < TOP_EACH; ++slot) {
      const bool kept = k.token[slot] != k.kEmpty;
      out[2 * slot] = kept ? k.value[slot] : -INFINITY;
      out[2 * slot + 1] = kept ? static_cast<float>(k.token[slot]) : -1.0f;
    }
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// splitSumInto's element (or 16 lanes of them): start, then each part's value in part order;
/// part(s) loads part s's value(s).
template <class F, class Part>
GIZML_HD F splitSumValue(F start, std::int64_t splits, const Part& part) {
  F acc = start;
  for (std::int64_t s = 0; s < splits; ++s) acc = acc + part(s);
  return acc;
}

struct SplitSumInto {
  static constexpr const char* kName = "gizml::netops::splitSumInto";
  struct Args {
    float* y;
    const float* p;
    std::int64_t total, splits;
    bool add;
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// normRotateInto: output row r is input row map[r] (r without a map) RMS-normed, times w; with
/// `rotate`, times d, then the regular Hadamard transform of each 256 values.
struct NormRotateInto {
  static constexpr const char* kName = "gizml::netops::normRotateInto";
  struct Args {
    const float *x, *w, *d, *map;  // d: only with rotate; map: null for the identity
    float eps;
    bool rotate;
    std::int64_t rows, n, mods;  // n: the width; mods: x's rows (the map's range)
    std::int64_t stride, offset;
    float* y;
  };
  GIZML_HD static long long mapped(const Args& a, std::int64_t r) { return a.map ? norms::mapIndex(a.map[r]) : r; }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const float* x = a.x + mapped(a, r) * a.n;
    float* y = a.y + r * a.stride + a.offset;
    const float scale = exact::rmsScale(row, x, a.eps);
    if (!a.rotate) {
      row.forEach([&](const auto& at) { at.store(y, rows::rmsNormValue(at.load(x), scale, at.load(a.w))); });
      return;
    }
    for (std::int64_t b = 0; b < a.n; b += exact::kHadamardBlock) {
      typename Row::F v[16];
      for (int k = 0; k < 16; ++k) {
        const auto at = row.stepAt(b + 16 * k);
        v[k] = rows::rmsNormValue(at.load(x), scale, at.load(a.w)) * at.load(a.d);
      }
      exact::hadamard256(row, v);
      exact::storeBlock(row, y + b, v);
    }
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// siluMulRotatedInto: gate and up added over the parts in part order (from +0), h = silu(gate)
/// * up; with d, h * d, then the regular Hadamard transform of each 256 values.
struct SiluMulRotatedInto {
  static constexpr const char* kName = "gizml::netops::siluMulRotatedInto";
  struct Args {
    const float *p, *d;  // p: parts [parts, rows, 2 n]; d: null for no rotation
    std::int64_t rows, n, parts;  // n: ffn
    float* y;                     // [rows, n]
  };
  /// h at a step's lanes of row r.
  template <class At>
  GIZML_HD static auto value(const Args& a, std::int64_t r, const At& at) {
    const std::int64_t part = a.rows * 2 * a.n;
    const float* src = a.p + r * 2 * a.n;
    using F = decltype(at.load(src));
    const F gate = splitSumValue(F{}, a.parts, [&](std::int64_t s) { return at.load(src + s * part); });
    const F up = splitSumValue(F{}, a.parts, [&](std::int64_t s) { return at.load(src + s * part + a.n); });
    return exact::siluLanes(gate) * up;
  }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    float* y = a.y + r * a.n;
    if (!a.d) {
      // SiLU's long chain: two at once (its loads in a loop over the parts: by element on a GPU)
      row.forEachWideByElement([&](const auto& at) GIZML_HD_LAMBDA { at.store(y, value(a, r, at)); });
      return;
    }
    for (std::int64_t b = 0; b < a.n; b += exact::kHadamardBlock) {
      typename Row::F v[16];
      for (int k = 0; k < 16; ++k) {
        const auto at = row.stepAt(b + 16 * k);
        v[k] = value(a, r, at) * at.load(a.d);
      }
      exact::hadamard256(row, v);
      exact::storeBlock(row, y + b, v);
    }
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::step
