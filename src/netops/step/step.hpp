// A language model's step (SPEC §3): where a row's logits are, the candidates' insertion and the
// split sum, written once for the host and CUDA, and each op's kernel struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/order.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"
#include "gizml/netops/step.hpp"

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

/// candidatesInto: worker t of row r keeps the TOP_EACH best of its tokens by insertion.
struct CandidatesInto {
  static constexpr const char* kName = "gizml::netops::candidatesInto";
  struct Args {
    LogitRows src;
    std::int64_t rows;
    float* cand;
  };
  /// Worker t's 2 TOP_EACH floats of row r, written to out.
  GIZML_HD static void worker(const Args& a, std::int64_t r, int t, float* out) {
    float value[TOP_EACH];
    long long token[TOP_EACH];
    int kept = 0;
    for (std::int64_t id = t; id < a.src.vocab; id += CANDIDATE_WORKERS) {
      const float x = a.src.at(r, id);
      if (x != x) continue;  // NaN is never kept
      if (kept == TOP_EACH && !exact::argmaxBetter(x, id, value[TOP_EACH - 1], token[TOP_EACH - 1])) continue;
      if (kept < TOP_EACH) ++kept;
      int p = kept - 1;  // the slot freed (or the fourth, dropped), then up while x is better
      for (; p > 0 && exact::argmaxBetter(x, id, value[p - 1], token[p - 1]); --p) {
        value[p] = value[p - 1];
        token[p] = token[p - 1];
      }
      value[p] = x;
      token[p] = id;
    }
    for (int slot = 0; slot < TOP_EACH; ++slot) {
      out[2 * slot] = slot < kept ? value[slot] : -INFINITY;
      out[2 * slot + 1] = slot < kept ? static_cast<float>(token[slot]) : -1.0f;
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

}  // namespace gizml::netops::step
