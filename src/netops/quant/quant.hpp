// The 8-bit rows (SPEC §3 "Diffusion norms and 8-bit rows"): the regular Hadamard transform of
// rows and int8Rows, their formulas and row functions written once for the host (16-lane vectors)
// and CUDA (a half-warp) on the shared row type and exact/hadamard.hpp, and each op's kernel
// struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hadamard.hpp"
#include "exact/hd.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"
#include "netops/norms/norms.hpp"

namespace gizml::netops::quant {

// ---- formulas ----------------------------------------------------------------------------------------

/// int8Rows' scale: s = max(m / maxCode, 1e-30) with m = max|y| (never NaN: the maximum ignores
/// NaN and starts from +0).
GIZML_HD float int8Scale(float maxAbs, float maxCode) {
  const float s = maxAbs / maxCode;
  return s > 1e-30f ? s : 1e-30f;
}

/// int8Rows' code as a float: clamp(rint(y / s), lo, hi), NaN giving +0, every zero +0. Clamping
/// before rounding gives the same integer (lo and hi are integers); then |v| <= 128 < 2^22, where
/// (v + 1.5 2^23) - 1.5 2^23 is rint (nearest even) and yields +0 for a zero.
template <class F>
GIZML_HD F int8Code(F y, float s, float lo, float hi) {
  const F v = y / s;
  const F lo16 = exact::broadcast<F>(lo), hi16 = exact::broadcast<F>(hi);
  const F c = exact::maxLane(lo16, exact::minLane(hi16, v));  // v > hi ? hi : v, then < lo ? lo : that; NaN passes
  const F r = (c + 12582912.0f) - 12582912.0f;
  return exact::select(exact::isNan(v), F{}, r);
}

// ---- the ops' kernels ----------------------------------------------------------------------------------

/// The input both ops transform: x [rows, n], F32 or BF16, n a multiple of 256.
struct BlockRows {
  const void* x;  // F32, or BF16 where xBF16
  bool xBF16;
  std::int64_t rows, n;
  /// v = the Hadamard transform of the 256-block at element `at` of x.
  template <class Row, class F>
  GIZML_HD void transformed(const Row& row, std::int64_t at, F (&v)[16]) const {
    exact::loadBlockOf(row, x, xBF16, at, v);
    exact::hadamard256(row, v);
  }
};

/// y = the regular Hadamard transform of each 256 values of each row of x. (The host runs the same
/// stages in its own loop: host.cpp's hadamardRowsHost, each block through a thread's buffer.)
struct HadamardRows {
  static constexpr const char* kName = "gizml::netops::hadamardRows";
  struct Args : BlockRows {
    float* y;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    for (std::int64_t b = r * a.n; b < (r + 1) * a.n; b += exact::kHadamardBlock) {
      typename Row::F v[16];
      a.transformed(row, b, v);
      exact::storeBlock(row, a.y + b, v);
    }
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// How int8Rows stores its codes: F32 integers (the host), I8 or I4 (two a byte, low nibble
/// first; a GPU).
enum class Codes { F32, I8, I4 };

/// Per row: y = the transform of each 256-block; s = int8Scale(max|y|); q = int8Code(y, s). The
/// codes need the row's maximum first, so the row is walked twice; a half-warp keeps no y and
/// transforms again on the second walk. The host gives the same bits in its own loop (host.cpp:
/// Int8Walker keeps the row's y in L1, as 2y, and transforms once, codeOfTwice codes it, and a
/// thread writes a row's codes during its next row's walk).
struct Int8Rows {
  static constexpr const char* kName = "gizml::netops::int8Rows";
  struct Args : BlockRows {
    float maxCode, lo, hi;  // 127, -128, 127 for 8 bits; 7, -8, 7 for 4
    Codes codes;
    void* q;
    float* s;
  };
  template <class Row, class F = typename Row::F>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const std::int64_t begin = r * a.n, end = begin + a.n;
    F best = F{};
    for (std::int64_t b = begin; b < end; b += exact::kHadamardBlock) {
      F v[16];
      a.transformed(row, b, v);
      for (int k = 0; k < 16; ++k) best = exact::maxIgnoringNaN(exact::absLane(v[k]), best);
    }
    const float s = int8Scale(exact::laneMax(row, best), a.maxCode);
    for (std::int64_t b = begin; b < end; b += exact::kHadamardBlock) {
      F v[16];
      a.transformed(row, b, v);
      for (int k = 0; k < 16; ++k) storeCodes(row, a, b + 16 * k, int8Code(v[k], s, a.lo, a.hi));
    }
    if (row.leader()) a.s[r] = s;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);

#if !defined(__CUDACC__)
  /// The host's codes are F32: 16 of them at element `at`, streamed past the caches when the
  /// host loop asked for it (nothing reads them back soon).
  static void storeCodes(const exact::HostRow& row, const Args& a, std::int64_t at, exact::f32x16 codes) {
    if (row.streamStores) exact::streamStore16(static_cast<float*>(a.q) + at, codes);
    else exact::storeAll16(static_cast<float*>(a.q) + at, codes);
  }
#else
  /// Lane l's code is element at + l. I4: an even lane packs its code and its neighbour's.
  GIZML_HD static void storeCodes(const exact::WarpRow& row, const Args& a, std::int64_t at, float code) {
    const std::int64_t i = at + row.lane;
    if (a.codes == Codes::F32) {
      static_cast<float*>(a.q)[i] = code;
    } else if (a.codes == Codes::I8) {
      static_cast<std::int8_t*>(a.q)[i] = static_cast<std::int8_t>(static_cast<int>(code));
    } else {
      const float next = exact::shuffleFrom(row, code, (row.lane + 1) & 15);
      const unsigned lo = static_cast<unsigned>(static_cast<int>(code)) & 15u;
      const unsigned hi = static_cast<unsigned>(static_cast<int>(next)) & 15u;
      if (row.lane % 2 == 0) static_cast<std::uint8_t*>(a.q)[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
#endif
};

/// modulatedInt8RowsInto: int8Rows of modulatedNorm's rows rounded to BF16, in one pass (SPEC
/// §1.6: the same bits as the two ops one after the other). Each 256-block of the modulated row is
/// computed in registers, rounded to BF16 (stored to y when asked), transformed; on a GPU twice,
/// as int8Rows transforms twice (once for the maximum, once for the codes); on the host once
/// (host.cpp).
struct ModulatedInt8Rows {
  static constexpr const char* kName = "gizml::netops::modulatedInt8RowsInto";
  struct Args {
    norms::ModulatedNorm::Args norm;  // x, w, shift, scale, map, eps, centered, rows, n, mods; yBF16 or null
    float maxCode, lo, hi;
    Codes codes;
    void* q;
    float* s;
    std::int64_t rows, n, mods;  // the norm's, where the row loops and the map check look for them
  };
  GIZML_HD static long long mapped(const Args& a, std::int64_t r) { return norms::ModulatedNorm::mapped(a.norm, r); }
  /// What the codes are written with: Int8Rows' arguments for the same rows.
  GIZML_HD static Int8Rows::Args codeArgs(const Args& a) {
    return {{nullptr, false, a.rows, a.n}, a.maxCode, a.lo, a.hi, a.codes, a.q, a.s};
  }
  /// The 256-block at element b of row r, whose x is read from `x` (x's row r, or a copy of it):
  /// modulatedNorm's values rounded to BF16 (stored to y on the first pass when asked), then the
  /// Hadamard transform.
  template <class Row, class F>
  GIZML_HD static void block(const Row& row, const Args& a, std::int64_t r, const exact::MeanRstd& st, std::int64_t b,
                             bool storeY, F (&v)[16], const float* x) {
    const norms::ModulatedNorm::Args& m = a.norm;
    const std::int64_t at0 = r * m.n;
    const float *shift = m.shift + mapped(a, r) * m.n, *scale = m.scale + mapped(a, r) * m.n;
    for (int k = 0; k < 16; ++k) {
      const auto at = row.stepAt(b + 16 * k);
      v[k] = exact::roundToBF16Lanes(
          norms::modulatedValue(at.load(x), st.mean, st.rstd, at.load(m.w), at.load(scale), at.load(shift)));
    }
    // y after all 16 steps' loads (a store between them would keep a GPU from issuing the loads
    // together); exact: v is a BF16 value already.
    if (storeY)
      for (int k = 0; k < 16; ++k) row.stepAt(b + 16 * k).store(m.yBF16 + at0, v[k]);
    exact::hadamard256(row, v);
  }
  /// The row's two walks, as Int8Rows::row (the host: host.cpp's ModulatedInt8RowsHost).
  template <class Row, class F = typename Row::F>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const float* x = a.norm.x + r * a.norm.n;
    const exact::MeanRstd st = norms::modulatedStats(row, x, a.norm.eps, a.norm.centered);
    F best = F{};
    for (std::int64_t b = 0; b < a.n; b += exact::kHadamardBlock) {
      F v[16];
      block(row, a, r, st, b, a.norm.yBF16 != nullptr, v, x);
      for (int k = 0; k < 16; ++k) best = exact::maxIgnoringNaN(exact::absLane(v[k]), best);
    }
    const float s = int8Scale(exact::laneMax(row, best), a.maxCode);
    const Int8Rows::Args codes = codeArgs(a);
    for (std::int64_t b = 0; b < a.n; b += exact::kHadamardBlock) {
      F v[16];
      block(row, a, r, st, b, false, v, x);
      for (int k = 0; k < 16; ++k) Int8Rows::storeCodes(row, codes, r * a.n + b + 16 * k, int8Code(v[k], s, a.lo, a.hi));
    }
    if (row.leader()) a.s[r] = s;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::quant
