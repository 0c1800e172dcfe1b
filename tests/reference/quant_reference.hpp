// The literal reference of the 8-bit rows (SPEC §3 "Diffusion norms and 8-bit rows"): scalar loops,
// each stage and step as the SPEC writes it. Test-only (and gizml-check's "host = reference").
#pragma once

#include <cstdint>

namespace gizml::reference {

/// The regular Hadamard transform of 256 values: four stages, strides 1, 4, 16, 64.
void hadamard256(const float* in, float* out);
/// hadamard256 of each 256 values of each row of x [rows, n].
void hadamardRows(const float* x, std::int64_t rows, std::int64_t n, float* y);
/// int8Rows with bits 8 or 4: q as F32 integers [rows, n], s [rows].
void int8Rows(const float* x, std::int64_t rows, std::int64_t n, int bits, float* q, float* s);
/// int8RowsProduct: qa [m, k] and qb [n, k] integer codes as F32, sa [m], sb [n], bias [n] or
/// nullptr → out [m, n].
void int8RowsProduct(const float* qa, const float* sa, const float* qb, const float* sb, const float* bias,
                     std::int64_t m, std::int64_t n, std::int64_t k, float* out);

}  // namespace gizml::reference
