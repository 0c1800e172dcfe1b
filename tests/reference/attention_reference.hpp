// The literal reference of the attention family (SPEC §3 "Attention"): scalar loops, as the SPEC
// writes them. Test-only (and gizml-check's "host = reference").
#pragma once

#include <cstdint>

#include "gizml/key.hpp"

namespace gizml::reference {

/// [tq, tk]: 0 where j <= i + tk - tq, else -inf.
void causalMask(std::int64_t tq, std::int64_t tk, float* out);

/// attention: q [b, tq, d], k [b, tk, d], v [b, tk, e] -> out [b, tq, e], one query at a time,
/// keys in aligned blocks of 16, each step as the SPEC writes it.
void attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t tq, std::int64_t tk,
               std::int64_t d, std::int64_t e, double scale, bool causal, double rate, Key key, float* out);

/// HeadPrep on q and k of the first n rows of qkv [rows, 3 heads head] (F32 values) in place: per
/// head, r = 1 / sqrt(dot16(v, v) / head + F32(eps)), v = (v * r) * w, then the pairs
/// (v[e], v[e + half]) for e < half turned by cos / sin row row0 + r. With bf16, each stored value
/// is rounded to BF16 (a BF16 qkv's values).
void headPrep(float* qkv, std::int64_t n, std::int64_t heads, std::int64_t head, const float* qw, const float* kw,
              const float* cos, const float* sin, std::int64_t half, double eps, std::int64_t row0, bool bf16);

/// attendedRows: qkv [rows, 3 heads head] (prep applied first on a copy when qw is not null, row r
/// using cos / sin row r), then per group of `group` rows (0: all) and head the reference
/// attention of the group's queries (rows < queries when queries > 0) over its keys, scale
/// 1 / sqrt(head), into out [rows or queries, heads head].
void attendedRows(const float* qkv, std::int64_t rows, std::int64_t heads, std::int64_t head, std::int64_t group,
                  const float* qw, const float* kw, const float* cos, const float* sin, std::int64_t half, double eps,
                  std::int64_t queries, float* out);

/// crossAttentionRows: per head, reference attention of q [nq, heads head] over kv [nk, 2 heads
/// head] (k, then v, of every head), scale 1 / sqrt(head), into out [nq, heads head].
void crossAttentionRows(const float* q, const float* kv, std::int64_t nq, std::int64_t nk, std::int64_t heads,
                        std::int64_t head, float* out);

/// neighborhood3d: per head and query, the box of keys (windows clamp(i - k'/2, 0, L - k') of
/// k' = min(k, L) along each axis) in (t, h, w) order gathered, then reference attention of the
/// one query over them with `scale`.
void neighborhood3d(const float* qkv, std::int64_t T, std::int64_t H, std::int64_t W, std::int64_t kt,
                    std::int64_t kh, std::int64_t kw, std::int64_t heads, std::int64_t head, double scale, float* out);

}  // namespace gizml::reference
