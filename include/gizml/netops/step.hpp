// gizml::netops, a language model's step (SPEC §3 "A language model's step"): the raw-row entry
// points a decoder runs once per generated token. Each takes a Gpu and typed addresses in that
// device's memory — or host memory when given Gpu::host(), so a CPU program can call every one —
// and queues its work on the Gpu's stream. Every precondition that can be checked on the host
// (sizes, null or misaligned addresses) fails with gizml::Error before anything is touched.
#pragma once

#include <cstdint>

#include "gizml/gpu.hpp"
#include "gizml/key.hpp"

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

/// Output row r (r < rows) at y + r stride + offset, `width` F32 values: input row m of x [., width]
/// (m = map[r], F32 holding an integer in [0, xRows); m = r without a map), v = (v * rsqrt(dot16(v,
/// v) / width + F32(eps))) * w; with `rotate`, v = v * d, then the regular Hadamard transform of
/// each 256 values (width a multiple of 256). w and d [width] F32. Without a map x has `rows` rows
/// and xRows is unused; with one, xRows is x's row count (the seed's signature has no place for it:
/// it is this library's addition, so a bad entry can be an error). A bad entry fails on the host
/// before anything is written; on a GPU the kernel skips its row and sets the device error flag
/// ("map"). stride >= offset + width, offset >= 0.
void normRotateInto(const Gpu& g, std::int64_t rows, std::int64_t width, double eps, bool rotate, std::int64_t stride,
                    std::int64_t offset, float* y, const float* x, const float* w, const float* d,
                    const float* map = nullptr, std::int64_t xRows = 0);

/// p holds nUp parts [rows, 2 ffn] of the gate-and-up product, one after the other; per row,
/// gate = +0 + the parts' [0, ffn) in part order, up likewise over [ffn, 2 ffn); h = silu(gate) * up
/// (gizml's SiLU); with d ([ffn] F32; ffn a multiple of 256), h * d and then the regular Hadamard
/// transform of each 256 values; no rotation when d is null. y [rows, ffn] F32.
void siluMulRotatedInto(const Gpu& g, std::int64_t rows, std::int64_t ffn, std::int64_t nUp, float* y, const float* p,
                        const float* d);

/// A token drawn from one row's candidates, and whether the draw may differ from one over the
/// whole row.
struct Sampled {
  std::int64_t token;
  /// A worker kept TOP_EACH values above the threshold the draw used (the k-th largest kept value;
  /// with topK = 0, any worker that filled its slots): that worker's next token may have belonged
  /// to the distribution too, so the true top-k may have been cut.
  bool mayBeCut;
};

/// Draws a token from `cand` (one row of candidatesInto, CANDIDATE_ROW floats, in host memory):
/// 1. the filled candidates, larger value first, ties to the lower token (a row with none: token 0);
/// 2. temperature 0: the first (the row's argmax);
/// 3. else the first min(topK, count) (topK = 0: all), p_i = exp((v_i - v_0) / temperature) in
///    float64, normalised; top-p keeps the shortest prefix whose probabilities add (in order) to at
///    least topP (topP in (0, 1]; 1 keeps all);
/// 4. u = key.uniform(0) (word 0 of the key's draw): the first i whose running sum of the kept
///    probabilities exceeds u times their total.
/// Deterministic for a key; exact (the same distribution as over the whole row) when topK is in
/// [1, TOP_EACH], whatever the workers kept. temperature >= 0, topK >= 0, topP in (0, 1].
Sampled sampleCandidates(const float* cand, double temperature, std::int64_t topK, double topP, Key key);

}  // namespace gizml::netops
