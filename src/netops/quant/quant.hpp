// The 8-bit rows (SPEC §3 "Diffusion norms and 8-bit rows"): the regular Hadamard transform of
// rows and int8Rows, their formulas and row functions written once for the host (16-lane vectors)
// and CUDA (a half-warp) on the shared row type and exact/hadamard.hpp, and each op's kernel
// struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hadamard.hpp"
#include "exact/hd.hpp"
#include "exact/row16.hpp"
#include "gizml/dtype.hpp"
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

/// 1.5 2^23: an integer c of magnitude < 2^22 as the float c + kCodeBias, the code "biased", holds
/// c's two's complement in the low bits of its own (0x4b400000 + c): an I8 or I4 code is those
/// bits, with no conversion; and (v + kCodeBias) - kCodeBias is rint(v) there, +0 for a zero.
constexpr float kCodeBias = 12582912.0f;

/// int8Rows' code as a float: clamp(rint(y / s), lo, hi), NaN giving +0, every zero +0. Clamping
/// before rounding gives the same integer (lo and hi are integers); then |v| <= 128 < 2^22, where
/// (v + kCodeBias) - kCodeBias is rint (nearest even) and yields +0 for a zero.
template <class F>
GIZML_HD F int8Code(F y, float s, float lo, float hi) {
  const F v = y / s;
  const F lo16 = exact::broadcast<F>(lo), hi16 = exact::broadcast<F>(hi);
  const F c = exact::maxLane(lo16, exact::minLane(hi16, v));  // v > hi ? hi : v, then < lo ? lo : that; NaN passes
  const F r = (c + kCodeBias) - kCodeBias;
  return exact::select(exact::isNan(v), F{}, r);
}

/// The furthest q = y * (1 / s) may lie from an integer for its code to be y / s's
/// (int8CodeByReciprocal's proof; the host's codeOfHeldByReciprocal too).
constexpr float kReciprocalCodeGap = 0.5f - 0x1p-14f;

/// int8Code(y, s, lo, hi) of one value from q = y * reciprocal (reciprocal = 1 / s rounded once),
/// where q cannot give another code than y / s rounded: returns whether it could, with `biased` the
/// code plus kCodeBias where it could. A GPU's division is some ten instructions (a reciprocal, its
/// Newton steps and a range check), and with the clamp, rint, NaN check and conversion some twenty
/// a value; this is nine. Why q will do: 1 / s, y / s and y * reciprocal each round once (relative
/// error <= 2^-24; 1e-30 <= s <= FLT_MAX / 7 or s = inf, so 1 / s is a normal float or 0), so
/// |q - rounded(y / s)| <= 3.0001 2^-24 |q| (or 2^-149 where y * reciprocal is subnormal), under
/// 2^-14 for |q| < 256 (s = inf: q is +-0 where y / s is, NaN where y / s is NaN). Where q is
/// further than 2^-14 from every half-integer, no half-integer lies between q and the rounded
/// quotient, so rint, and the clamp to the integers lo and hi, give both the same integer; where
/// |q| >= 256 both clamp to the same bound whatever the distance. n = (|q| + kCodeBias) - kCodeBias
/// is rint(|q|) for |q| < 2^22 and |q| - n is exact (Sterbenz), so |q| - n within 0.5 - 2^-14 of 0
/// is that distance. It declines a q near a half, of |q| >= 2^22 (n may be off there: the test may
/// fail, never pass wrongly, as n and |q| are both integers then), infinite or NaN (the comparison
/// is false). q is then no NaN, so the clamp may use fminf and fmaxf (the bounds are integers of
/// magnitude >= 7: no zero's sign to keep). The tests (quant_test.cpp, Int8CodeByReciprocal)
/// compare it with int8Code at every distance of up to 40 ulps from the half-integers of many
/// scales, and count how often it declines.
GIZML_HD bool int8CodeByReciprocal(float y, float reciprocal, float lo, float hi, float& biased) {
  const float q = y * reciprocal;
  const float a = fabsf(q), gap = a - ((a + kCodeBias) - kCodeBias);
  biased = fmaxf(lo, fminf(hi, q)) + kCodeBias;
  return fabsf(gap) < kReciprocalCodeGap;  // false for NaN
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
  /// Its host loop's work a value (exact::hostWork): the transform's, about twice a row norm's.
  static std::int64_t costAValue(const Args&) { return 2; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// How int8Rows stores its codes: F32 integers (the host), I8 or I4 (two a byte, low nibble
/// first; a GPU).
enum class Codes { F32, I8, I4 };
/// The Codes of a tensor of codes of dtype d (F32, I8 or I4; the ops check which they take).
inline Codes codesOf(DType d) { return d == DType::F32 ? Codes::F32 : d == DType::I8 ? Codes::I8 : Codes::I4; }

/// Per row: y = the transform of each 256-block; s = int8Scale(max|y|); q = int8Code(y, s). The
/// codes need the row's maximum first, so the row is walked twice; a half-warp keeps no y and
/// transforms again on the second walk. The host gives the same bits in its own loop (host.cpp:
/// Int8Walker keeps the row's y in L1, as 2y or 16y, and transforms once, codeOfHeld codes it, and
/// a thread writes a row's codes during its next row's walk).
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
    rowWith(row, a, r, [&](std::int64_t at, bool, F(&v)[16]) { a.transformed(row, at, v); });
  }
  /// The row's two walks, block(at, first, v) putting the transform of the 256-block at element `at`
  /// of the row's input in v (a.transformed; modulatedInt8Rows' values first, storing y on the first
  /// walk; a GPU's by rows: quant/cuda.cu). Each walk starts at the end of the row where the read
  /// before it finished (the first from the end where `firstFromEnd`: modulatedInt8Rows', after
  /// its statistics), so that a GPU finds first what its L2 still holds of the row (as
  /// WarpRow::forEachWideFrom). The order changes no bit: the maximum is order-free and each
  /// block's codes are its own.
  template <class Row, class Block, class F = typename Row::F>
  GIZML_HD static void rowWith(const Row& row, const Args& a, std::int64_t r, Block block, bool firstFromEnd = false) {
    const std::int64_t blocks = a.n / exact::kHadamardBlock;
    const auto blockAt = [&](std::int64_t k, bool fromEnd) {
      return r * a.n + exact::kHadamardBlock * (fromEnd ? blocks - 1 - k : k);
    };
    F best = F{};
    for (std::int64_t k = 0; k < blocks; ++k) {
      F v[16];
      block(blockAt(k, firstFromEnd), true, v);
      for (int j = 0; j < 16; ++j) best = exact::maxMagnitude(best, v[j]);
    }
    const float s = int8Scale(exact::laneMax(row, best), a.maxCode);
    for (std::int64_t k = 0; k < blocks; ++k) {
      const std::int64_t b = blockAt(k, !firstFromEnd);
      F v[16];
      block(b, false, v);
      storeBlockCodes(row, a, s, b, v);
    }
    if (row.leader()) a.s[r] = s;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);

#if !defined(__CUDACC__)
  /// (The host writes its F32 codes in its own loop, host.cpp, and runs no row function: declared
  /// for their host form, never defined.)
  static void storeBlockCodes(const exact::HostRow& row, const Args& a, float s, std::int64_t at, const exact::f32x16 (&v)[16]);
#else
  /// The codes of a 256-block of y held as v (code k of lane l is element at + 16 k + l; `at` a
  /// multiple of 256) by the row's scale s: int8Code's bits, by int8CodeByReciprocal, and where it
  /// declines any of the half-warp's 256 values (some 3 blocks in 100), all of them again by the
  /// division (whole, so that I4's lanes pack their neighbours' final codes). Each code is stored
  /// as it is found: 16 codes found before any is stored would hold 16 more registers, and a branch
  /// a value cost instructions of its own.
  GIZML_HD static void storeBlockCodes(const exact::WarpRow& row, const Args& a, float s, std::int64_t at, const float (&v)[16]) {
    const float reciprocal = 1.0f / s;
    bool all = true;
    storeCodes(row, a, at, [&](int k) {
      float biased;
      all &= int8CodeByReciprocal(v[k], reciprocal, a.lo, a.hi, biased);
      return biased;
    });
#if defined(__CUDA_ARCH__)
    const bool again = __any_sync(row.mask, !all);
#else
    const bool again = !all;  // (nvcc's host pass; never run)
#endif
    if (again) [[unlikely]]
      storeCodes(row, a, at, [&](int k) { return int8Code(v[k], s, a.lo, a.hi) + kCodeBias; });
  }
  /// Stores the codes biased(k) - kCodeBias, k = 0 ... 15, as storeBlockCodes says, their kind's
  /// branch taken once for the 16: F32 as they are, I8 and I4 their low bits. I4: an even lane packs
  /// its code and its neighbour's. (Plain stores: as streaming ones, st.global.cs, the block a
  /// row's kernel spilled 12 bytes, and the codes are a quarter of x's bytes or less.)
  template <class Biased>
  GIZML_HD static void storeCodes(const exact::WarpRow& row, const Args& a, std::int64_t at, Biased biased) {
    if (a.codes == Codes::F32) {
      float* q = static_cast<float*>(a.q) + at + row.lane;
      for (int k = 0; k < 16; ++k) q[16 * k] = biased(k) - kCodeBias;
    } else if (a.codes == Codes::I8) {
      std::int8_t* q = static_cast<std::int8_t*>(a.q) + at + row.lane;
      for (int k = 0; k < 16; ++k) q[16 * k] = static_cast<std::int8_t>(exact::toBits(biased(k)));
    } else {
      std::uint8_t* q = static_cast<std::uint8_t*>(a.q) + at / 2 + row.lane / 2;
      for (int k = 0; k < 16; ++k) {
        const float mine = biased(k), next = exact::shuffleFrom(row, mine, (row.lane + 1) & 15);
        const std::uint32_t lo = exact::toBits(mine) & 15u, hi = exact::toBits(next) & 15u;
        if (row.lane % 2 == 0) q[8 * k] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
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
    // together); v is a BF16 value already, stored as it is.
    if (storeY)
      for (int k = 0; k < 16; ++k) row.stepAt(b + 16 * k).streamBF16Value(m.yBF16 + at0, v[k]);
    exact::hadamard256(row, v);
  }
  /// The row's statistics, then Int8Rows::rowWith's two walks, the first from the row's end (where
  /// the statistics' read ended), with blockAt(st, b, storeY, v) putting the block at element b of
  /// the row in v (block's work; a GPU's by rows: quant/cuda.cu). The host runs its own loop
  /// (host.cpp's ModulatedInt8RowsHost).
  template <class Row, class BlockAt, class F = typename Row::F>
  GIZML_HD static void rowWith(const Row& row, const Args& a, std::int64_t r, BlockAt blockAt) {
    const exact::MeanRstd st = norms::modulatedStats(row, a.norm.x + r * a.n, a.norm.eps, a.norm.centered);
    Int8Rows::rowWith(
        row, codeArgs(a), r,
        [&](std::int64_t at, bool first, F(&v)[16]) {
          blockAt(st, at - r * a.n, first && a.norm.yBF16 != nullptr, v);
        },
        true);
  }
  template <class Row, class F = typename Row::F>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    rowWith(row, a, r, [&](const exact::MeanRstd& st, std::int64_t b, bool storeY, F(&v)[16]) {
      block(row, a, r, st, b, storeY, v, a.norm.x + r * a.n);
    });
  }
  static void host(const Args& a);
  /// Its launches name `fn` (modulatedInt8Rows or modulatedInt8RowsInto) in a bad map entry's error.
  static void cuda(const Gpu& g, const Args& a, const char* fn = kName);
};

}  // namespace gizml::netops::quant
