// The literal reference of a language model's step (SPEC §3): scalar loops on host memory, as the
// SPEC writes them. Test-only (and gizml-check's "host = reference").
#pragma once

#include <cstdint>
#include <vector>

namespace gizml::reference {

/// Row r's token t: logits[r stride + t], or, indirect, blocks[t / stride][r stride + t % stride].
struct LogitSource {
  const float* logits;
  std::vector<const float*> blocks;
  std::int64_t vocab, stride;
  bool indirect;
  float at(std::int64_t r, std::int64_t t) const;
};

/// top[r] = argmaxRow of row r's vocab values, as F32.
void argmaxInto(const LogitSource& src, std::int64_t rows, float* top);
/// cand [rows, 2048]: worker t's tokens t, t + 256, ... without NaN, sorted by value, larger
/// first, equal values in token order (a stable sort); the first 4 as (value, token), then (-inf, -1).
void candidatesInto(const LogitSource& src, std::int64_t rows, float* cand);
/// y[i] = (add ? y[i] : +0) + p[0][i] + ... in part order.
void splitSumInto(float* y, const float* p, std::int64_t total, std::int64_t splits, bool add);

/// y row r (at r stride + offset) = (x[m] * rsqrt(dot16 / width + eps)) * w with m = map[r] (r
/// without a map); with rotate, times d, then hadamard256 of each 256 values.
void normRotateInto(const float* x, const float* w, const float* d, const float* map, double eps, bool rotate,
                    std::int64_t rows, std::int64_t width, std::int64_t stride, std::int64_t offset, float* y);
/// y [rows, ffn] = silu(gate) * up, gate and up the parts' halves added from +0 in part order;
/// with d, times d, then hadamard256 of each 256 values.
void siluMulRotatedInto(const float* p, const float* d, std::int64_t rows, std::int64_t ffn, std::int64_t parts,
                        float* y);

}  // namespace gizml::reference
