// gizml::netops, attention (SPEC §3 "Attention"): the exact scaled dot-product attention and its
// causal mask. Each op runs where its tensors are.
#pragma once

#include <cstdint>
#include <vector>

#include "gizml/key.hpp"
#include "gizml/tensor.hpp"

namespace gizml::netops {

/// A host F32 [tq, tk] mask: +0 where j <= i + tk - tq, else -inf (tq, tk >= 0).
Tensor causalMask(std::int64_t tq, std::int64_t tk);

/// softmax(q kᵀ scale) v without the [tq, tk] scores: q [b, tq, d], k [b, tk, d], v [b, tk, e]
/// (F32, one device) give [b, tq, e]. Exact, the same bits on the host (any thread count) and a
/// GPU, in the SPEC's order: keys in aligned blocks of 16, each score chain(q_i, k_j) * F32(scale),
/// a running maximum m, c = exp(m - m'), w_j = exp(s_j - m'), l = l c + w_j and a = fma(w'_j, v_j,
/// a c) in key order, out = a / l. With `causal` query i sees the keys j <= i + tk - tq (a
/// decoder's mask; tq < tk with a KV cache); a query that sees no key (tq > tk, or tk = 0) gives
/// +0s. With rate in (0, 1), the weight (i, j) of item b is dropped where key.uniform((b tq + i) tk
/// + j) < F32(rate) (Tensor::dropout's mask of those words) and the kept ones are times
/// F32(1 / (1 - rate)); l adds the undropped weights.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal = false,
                 double rate = 0.0, Key key = Key{});

// ---- a transformer's packed rows: qkv [rows, 3 heads head], each row its q, k and v of every head ----

/// A transformer's QK norm and rotary, applied to each head of q and k of a row: r = rsqrt(dot16(v,
/// v) / head + F32(eps)), v = (v * r) * w (w = qw for q, kw for k); then for e < half the pair
/// (p, q) = (v[e], v[e + half]) becomes (fma(p, cos, -(q sin)), fma(q, cos, p sin)) with the row's
/// cos[e], sin[e] (split halves; values from 2 half on are only normalised).
struct HeadPrep {
  Tensor qw, kw;    ///< [head] F32
  Tensor cos, sin;  ///< [rows, half] F32, 2 half <= head; both undefined (or half = 0): no rotation
  double eps = 1e-6;
};

/// p on q and k of the first n rows of qkv [rows, 3 heads head] (F32, or BF16, rounded once as
/// each value is stored) in place, wherever qkv is; row r uses cos / sin row row0 + r.
void headPrepInPlace(const Tensor& qkv, std::int64_t n, std::int64_t heads, std::int64_t head, const HeadPrep& p,
                     std::int64_t row0);

/// Attention among packed rows: prep (at most one HeadPrep, on a copy: qkv is not changed; row r
/// uses cos / sin row r), then per head and per group of `group` consecutive rows (0: one group of
/// all rows) the exact `attention` of the group's queries over the group's keys with scale
/// F32(1 / sqrt(head)), not causal, no dropout. With queries > 0 only rows [0, queries) are
/// queries (each over the keys of its own group) and the result has `queries` rows.
/// -> [rows or queries, heads head] F32. Exact on the host (`quantized` has no effect there); on a
/// GPU this is attentionRows' fast matrix-core path (see there), into a new F32 tensor.
Tensor attendedRows(const Tensor& qkv, std::int64_t heads, std::int64_t head, bool quantized, std::int64_t group,
                    const std::vector<HeadPrep>& prep = {}, std::int64_t queries = 0);

/// attendedRows into out [rows or queries, heads head], F32 or BF16 (the exact result rounded
/// once). On the host exact, prep on a copy (qkv is not changed). On a GPU (qkv F32 or BF16) the
/// fast path: prep on a copy on the GPU, q, k and v rounded to BF16, flash attention on BF16 matrix
/// cores (mma.sync m16n8k16, F32 accumulators; the online softmax in F32, P rounded to BF16 for
/// P V), scores never stored; heads up to 128 (padded to 64 or 128 inside; wider: a gizml::Error
/// naming `head`). Not exact: its tolerance (SPEC) is ‖out − exact‖ / ‖exact‖ ≤ 1e-2 over the
/// output, exact being this op's host result; typical errors are far below it (each element within
/// 2^-6 (1 + max_j |v_j|) in the tests). The result is deterministic (no atomics) but not the host's
/// bits. `quantized` = true on a GPU, a head of 64 or 128, and a GPU whose code has FP8 matrix
/// cores (sm_89+; this build's sm_90a): SageAttention2's split instead (K less its per-channel mean
/// over the group's keys, Q and K to INT8 with a scale per 16 query rows / 64 keys, Q Kᵀ on INT8
/// matrix cores, P times 448 and V with a scale a channel to E4M3, P V on E4M3 matrix cores summed
/// 64 keys at a time into fresh F32 accumulators); its tolerance (SPEC) is cosine similarity ≥ 0.995
/// and relative L1 ≤ 0.05 against exact, also deterministic. Other heads, or a GPU without FP8
/// matrix cores, take the BF16 path (`quantized` is then a request, not an error).
void attentionRows(const Tensor& qkv, std::int64_t heads, std::int64_t head, bool quantized, std::int64_t group,
                   const Tensor& out, const std::vector<HeadPrep>& prep = {}, std::int64_t queries = 0);

/// Cross attention: each row of q [nq, heads head] over all the keys and values of kv [nk, 2 heads
/// head] (each row its k of every head, then its v), per head, scale F32(1 / sqrt(head)), into out
/// [nq, heads head] F32 or BF16 (the exact result rounded once). Exact on the host. On a GPU (q and
/// kv F32 or BF16) the fast path: attentionRows' BF16 flash attention with q's rows as the queries
/// and kv's as the keys and values, heads up to 128 (longer: a gizml::Error naming `head`), within
/// ‖out − exact‖ / ‖exact‖ ≤ 1e-2 of the host result; no keys (nk = 0) gives +0s.
void crossAttentionRows(const Tensor& q, const Tensor& kv, std::int64_t heads, std::int64_t head, const Tensor& out);

/// 3D neighborhood attention (NATTEN's na3d, dilation 1, not causal) of qkv [T H W, 3 heads head]
/// (F32 on the host; rows in (t, h, w) order, each its q, k and v of every head; head = the row /
/// (3 heads)): along an axis of length L with odd kernel k, k' = min(k, L) and query i's window is
/// [s, s + k') with s = clamp(i - k' / 2, 0, L - k') (shifted inward at the edges); a query attends
/// the box of keys that is the product of its three windows, in (t, h, w) raster order, by the
/// exact `attention` steps (blocks of 16 of that sequence) with F32(scale).
/// -> [T H W, heads head] F32. Exact on the host. On a GPU (qkv F32 or BF16) the fast path: BF16
/// flash attention over the box of keys each tile of 64 consecutive queries sees, each (query, key)
/// masked to the query's window; heads up to 128 (longer: a gizml::Error naming `heads`, which sets
/// the head), within ‖out − exact‖ / ‖exact‖ ≤ 1e-2 of the host result.
Tensor neighborhood3d(const Tensor& qkv, const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& kernel,
                      std::int64_t heads, double scale);

}  // namespace gizml::netops
