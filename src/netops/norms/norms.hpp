// The diffusion norms (SPEC §3 "Diffusion norms and 8-bit rows"): their per-element formulas and
// row functions, written once on the shared row type (exact/row16.hpp) for the host (16 float
// lanes) and CUDA (a half-warp), and each op's kernel struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::norms {

// ---- row maps --------------------------------------------------------------------------------

/// A row map's entry (an integer held as F32, SPEC §1.4) as an index: the integer, or -1 when the
/// value is not an integer >= 0 (NaN, a fraction, a negative), so that any bound rejects it.
GIZML_HD long long mapIndex(float v) {
  if (!(v >= 0.0f && v < 9.2e18f)) return -1;
  const long long i = static_cast<long long>(v);
  return static_cast<float>(i) == v ? i : -1;
}

// ---- per-element formulas ----------------------------------------------------------------------

/// modulatedNorm's element: n = (x - mean) * rstd (mean = +0 for the RMS norm: x - 0 is x), then
/// fma(n * w, 1 + scale, shift), `1 + scale` being one F32 add.
template <class F>
GIZML_HD F modulatedValue(F x, float mean, float rstd, F w, F scale, F shift) {
  return exact::fmaLane(((x - mean) * rstd) * w, 1.0f + scale, shift);
}

/// gatedNormAddInto's element: fma((y * r) * w, gate, x).
template <class F>
GIZML_HD F gatedAddValue(F y, float r, F w, F gate, F x) {
  return exact::fmaLane((y * r) * w, gate, x);
}

// ---- the ops' kernels ----------------------------------------------------------------------------------

/// The row statistics of modulatedNorm: centered, layerNorm's (mean, rstd); else (0, rmsScale).
template <class Row>
GIZML_HD exact::MeanRstd modulatedStats(const Row& row, const float* x, float eps, bool centered) {
  if (centered) return exact::layerNormStats(row, x, eps);
  return {0.0f, exact::rmsScale(row, x, eps)};
}

/// modulatedNorm(Into): row r uses modulation m = map[r] (checked before: on the host by the op,
/// on a GPU by the kernel, which skips a row whose index is out of range).
struct ModulatedNorm {
  static constexpr const char* kName = "gizml::netops::modulatedNorm";
  struct Args {
    const float *x, *w, *shift, *scale, *map;
    float eps;
    bool centered;
    std::int64_t rows, n, mods;
    float* y;             // F32 output, or null
    std::uint16_t* yBF16;  // BF16 output, or null
  };
  GIZML_HD static long long mapped(const Args& a, std::int64_t r) { return mapIndex(a.map[r]); }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const float* x = a.x + r * a.n;
    const std::int64_t m = mapped(a, r);
    const float *shift = a.shift + m * a.n, *scale = a.scale + m * a.n;
    const exact::MeanRstd s = modulatedStats(row, x, a.eps, a.centered);
    row.forEach([&](const auto& at) {
      const auto v = modulatedValue(at.load(x), s.mean, s.rstd, at.load(a.w), at.load(scale), at.load(shift));
      if (a.yBF16) at.store(a.yBF16 + r * a.n, v);
      else at.store(a.y + r * a.n, v);
    });
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// gatedNormAddInto: x = fma((y * rsqrt(dot16(y, y) / n + eps)) * w, gate[map[r]], x), y BF16.
struct GatedNormAdd {
  static constexpr const char* kName = "gizml::netops::gatedNormAddInto";
  struct Args {
    float* x;
    const std::uint16_t* y;
    const float *w, *gate, *map;
    float eps;
    std::int64_t rows, n, mods;
  };
  GIZML_HD static long long mapped(const Args& a, std::int64_t r) { return mapIndex(a.map[r]); }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const std::uint16_t* y = a.y + r * a.n;
    float* x = a.x + r * a.n;
    const float* gate = a.gate + mapped(a, r) * a.n;
    const float scale = exact::rmsScale(row, y, a.eps);
    row.forEach([&](const auto& at) {
      at.store(x, gatedAddValue(at.load(y), scale, at.load(a.w), at.load(gate), at.load(x)));
    });
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::norms
