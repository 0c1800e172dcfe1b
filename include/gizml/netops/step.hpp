// gizml::netops, a language model's step (SPEC §3 "A language model's step"): the raw-row entry
// points a decoder runs once per generated token. Each takes a Gpu and typed addresses in that
// device's memory — or host memory when given Gpu::host(), so a CPU program can call every one —
// and queues its work on the Gpu's stream. Every precondition that can be checked on the host
// (sizes, null or misaligned addresses) fails with gizml::Error before anything is touched.
#pragma once

#include <cstdint>

#include "gizml/gpu.hpp"

namespace gizml::netops {

/// Candidates a worker keeps, and floats a row of candidates takes (256 workers, TOP_EACH
/// (value, token) pairs each).
inline constexpr int TOP_EACH = 4;
inline constexpr int CANDIDATE_ROW = 2048;
/// Workers a row of candidates: worker t reads tokens t, t + 256, ...
inline constexpr int CANDIDATE_WORKERS = CANDIDATE_ROW / (2 * TOP_EACH);

/// Where each row's logits are. Direct: row r's vocab values at logits + r stride (vocab <= stride).
/// Indirect (`indirect` true): the vocabulary cut into blocks of `stride` tokens, blocks[b] the
/// address of block b, a [rows, stride] matrix — row r's token t is blocks[t / stride][r stride +
/// t % stride]; the last block may be partial: its columns past the vocabulary are never read.
/// `logits` is unused then (may be null) and `blocks` (ceil(vocab / stride) addresses) lives in the
/// Gpu's memory. Token ids are written as F32, so vocab <= 2^24 (every id exact).

/// top[r] = the argmax of row r (the lowest token of its largest non-NaN value, 0 for a row of NaN)
/// as an F32 token id, for r < rows.
void argmaxInto(const Gpu& g, std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect, float* top,
                const float* logits, const float* const* blocks = nullptr);

/// Row r's candidates, CANDIDATE_ROW floats at cand + CANDIDATE_ROW r: worker t (of 256) keeps the
/// TOP_EACH best of tokens t, t + 256, ... (larger value first, ties to the lower token, NaN never
/// kept), in that order; pair t TOP_EACH + slot is (value, token as F32), (-inf, -1) for a slot it
/// could not fill.
void candidatesInto(const Gpu& g, std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect,
                    float* cand, const float* logits, const float* const* blocks = nullptr);

/// y[i] = (add ? y[i] : +0) + p[0][i] + ... + p[splits - 1][i], i < total, the parts [splits, total]
/// at p added in part order, each one F32 add.
void splitSumInto(const Gpu& g, float* y, const float* p, std::int64_t total, std::int64_t splits, bool add);

}  // namespace gizml::netops
