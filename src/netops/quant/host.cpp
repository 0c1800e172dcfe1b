// The 8-bit rows: argument checks, the outputs, dispatch by device (core/dispatch.hpp), and the
// host paths (the row functions of quant.hpp on 16-lane vectors, OpenMP over rows). They equal
// tests/reference/quant_reference.cpp bit for bit.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/caches.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/host_memory.hpp"
#include "exact/row16.hpp"
#include "gizml/netops/quant.hpp"
#include "netops/quant/quant.hpp"

namespace gizml::netops {

namespace quant {
namespace {

using exact::f32x16;

#define GIZML_INLINE inline __attribute__((always_inline))
#define GIZML_INLINE_LAMBDA __attribute__((always_inline))  // a lambda's operator() inlined too

/// A row whose first walk is done and whose codes are still to write: its kept values (n floats,
/// int8Walk: z = 2 y, or u = 16 y), the divisor that makes them y / s (2 s or 16 s), its index
/// (r < 0: none).
struct Pending {
  const float* held = nullptr;
  float divisor = 0.0f;
  std::int64_t r = -1;
};

/// int8Code(y, s, lo, hi) of the row's y from its kept value h = k y (the walk's: k = 2 for z, y =
/// 0.5 z rounded; k = 16 for u, y = u / 16 exactly) and divisor = k s: rint(h / divisor), a NaN or
/// zero giving +0. The same code:
/// - Where h / k is exact (always for u), y / s and h / (k s) are the same real number, so the same
///   float (k s is exact). Where it is not (z, |z| < 2^-125), both quotients are below 2^-26 (s >=
///   1e-30), so both codes are +0.
/// - The clamp to [lo, hi] never binds: s = max(m / maxCode, 1e-30) with m = max |y| >= |y| (a NaN
///   aside), so |y / s| <= maxCode (1 + 2^-23) < maxCode + 0.5: rint(y / s) lies in [-maxCode,
///   maxCode], inside [lo, hi] = [-maxCode - 1, maxCode].
/// - An infinite y makes s infinite: inf / inf is NaN and a finite y over inf is a zero, both +0.
GIZML_INLINE f32x16 codeOfHeld(f32x16 h, float divisor) { return exact::rintOrPlusZero(h / divisor); }

/// codeOfHeld of 16 values from q = h * reciprocal (reciprocal = 1 / divisor rounded once) where
/// every lane's q is further than 2^-14 from every half-integer, else by the division: the same
/// codes. Why q will do is int8CodeByReciprocal's proof (quant.hpp), for z / (2 s) in place of y /
/// s; for u = 8 z and 16 s, 1 / (16 s) rounded is 1 / (2 s) rounded over 8 (both normal: u is
/// finite, so s < 2^122), and q is the same float. 1 / (2 s) is normal unless s > 2^125, which only
/// 4 bits reach (s <= FLT_MAX / 7): there it is off by at most 2^-23.8 relative, and |q| <= 7.0001
/// (codeOfHeld's bound for 4 bits) keeps q within 2^-19 of the rounded quotient, against the 2^-14
/// the proof needs. q - rint(q) is exact
/// (Sterbenz; |q| < 2^22), and its magnitude is int8CodeByReciprocal's gap; a NaN q (a NaN z, or
/// inf z by a zero reciprocal) fails the test and takes the division. AVX-512 only: there a
/// division of 16 lanes holds the divider 10 cycles (a Xeon), and a decode step's int8Rows of one
/// row waited on them. For a thread's last row only (pendingCodes' kAlone): the codes of the rows
/// before run inside the next row's transform, whose fmas keep the ports busy while the divider
/// works beside them, and there the reciprocal's steps cost more than they save (a Xeon, int8Rows
/// [32, 3072], 1 thread, 29.8 -> 32.8 us; [8192, 3072], 2 threads, 4.49 -> 4.83 ms), where one row
/// gained 1.27 -> 1.08 us.
#if defined(__AVX512F__)
GIZML_INLINE f32x16 codeOfHeldByReciprocal(f32x16 h, float reciprocal, float divisor) {
  const f32x16 q = h * reciprocal, r = exact::roundToEven(q);
  if (exact::allLanes(exact::absLane(q - r) < kReciprocalCodeGap)) [[likely]]
    return r + 0.0f;  // r is an integer already: only its -0 made +0, as rintOrPlusZero(q) does
  return codeOfHeld(h, divisor);
}
#endif

/// Walk 2 of Int8Rows::row for elements [from, to) of the pending row: the codes of its kept values.
/// Everything the loop reads besides the kept values is copied into locals first: the codes' stores might alias
/// a and p for all the compiler knows, and it reloaded them (and tested the streaming flag) for
/// every vector. kAlone: no other work runs beside them (a thread's last row):
/// codeOfHeldByReciprocal's case.
template <bool kAlone = false>
GIZML_INLINE void pendingCodes(const exact::HostRow& row, const Int8Rows::Args& a, const Pending& p, std::int64_t from,
                               std::int64_t to) {
  if (p.r < 0) return;
  const float* const held = p.held;
  float* const q = static_cast<float*>(a.q) + p.r * a.n;
  const float divisor = p.divisor;
  const float reciprocal = kAlone ? 1.0f / divisor : 0.0f;  // codeOfHeldByReciprocal's only
  const auto codes = [&](std::int64_t i) {
#if defined(__AVX512F__)
    if constexpr (kAlone) return codeOfHeldByReciprocal(exact::loadAll16(held + i), reciprocal, divisor);
#endif
    (void)reciprocal;
    return codeOfHeld(exact::loadAll16(held + i), divisor);
  };
  if (row.streamStores)
    for (std::int64_t i = from; i < to; i += 16) exact::streamStore16(q + i, codes(i));
  else
    for (std::int64_t i = from; i < to; i += 16) exact::storeAll16(q + i, codes(i));
}

/// The Hadamard transform of the 256-block at element b of a row on the host, through `h` (256
/// floats in L1) rather than in 16 vectors, which AVX2's two-register f32x16 would spill as 8-byte
/// pieces, in two kinds of piece. hadamardGroupsHeld(g): group(at, u) gives the 4 input vectors at
/// element `at` (the block's vectors 4 g .. 4 g + 3), for kGroupsAtOnce groups from g; they take
/// strides 1, 4 and 16 side by side (hadamardGroups) and are kept in h. hadamardLastHeld(j), after
/// the four groups: stride 64 across the kept vectors j, j + 4, j + 8, j + 12 (hadamardLast),
/// handed to done(j, u) final (unhalved where !HalveLast). The same formulas and order as
/// hadamard256, so the same bits.
///
/// Two groups at once: a group alone is 8 chains of ~13 dependent steps (fmas of 5 cycles on a Zen
/// 2), too few for the out-of-order core to fill its pipes. On a Zen 2 (AVX2), 1 thread, blocks in
/// L1 through this buffer (all four stages): 0.51 -> 0.43 ns a value, 0.40 with AVX2's stage of
/// stride 4 (exact/hadamard.hpp) too; with both, 2 threads, int8Rows of BF16 rows [32, 3072] 39 ->
/// 34 us, [8192, 3072] 9.6 -> 8.1 ms, modulatedInt8Rows 14.0 -> 12.0 ms.
/// (Unhalved where !Halve: Int8Walker's kUnhalved.)
constexpr int kGroupsAtOnce = 2;
template <bool Halve = true, class Group>
GIZML_INLINE void hadamardGroupsHeld(const exact::HostRow& row, float* h, std::int64_t b, int g, Group& group) {
  f32x16 u[kGroupsAtOnce][4];
  for (int i = 0; i < kGroupsAtOnce; ++i) group(b + 64 * (g + i), u[i]);
  exact::hadamardGroups<Halve>(row, u);
  for (int i = 0; i < kGroupsAtOnce; ++i)
    for (int k = 0; k < 4; ++k) exact::storeAll16(h + 64 * (g + i) + 16 * k, u[i][k]);
}
template <bool HalveLast, class Done>
GIZML_INLINE void hadamardLastHeld(const float* h, int j, Done& done) {
  f32x16 u[4];
  for (int m = 0; m < 4; ++m) u[m] = exact::loadAll16(h + 16 * (j + 4 * m));
  exact::hadamardLast<HalveLast>(u[0], u[1], u[2], u[3]);
  done(j, u);
}
/// The whole block: its four groups, then its last stage.
template <bool HalveLast, class Group, class Done>
GIZML_INLINE void hadamardBlockHeld(const exact::HostRow& row, float* h, std::int64_t b, Group group, Done done) {
  for (int g = 0; g < 4; g += kGroupsAtOnce) hadamardGroupsHeld(row, h, b, g, group);
  for (int j = 0; j < 4; ++j) hadamardLastHeld<HalveLast>(h, j, done);
}

/// group(at, u) for hadamardBlockHeld: x's 4 vectors at element at (F32 or BF16, widened).
template <class X>
GIZML_INLINE auto loadGroupOf(const X* x) {
  return [x](std::int64_t at, f32x16(&u)[4]) {
    for (int k = 0; k < 4; ++k) {
      if constexpr (sizeof(X) == 2) u[k] = exact::loadBF16x16(x + at + 16 * k);
      else u[k] = exact::loadAll16(x + at + 16 * k);
    }
  };
}

// ---- whole blocks in registers (AVX-512BW) -------------------------------------------------------
// With AVX-512 a block's 16 vectors fit in registers, and the host transforms whole blocks there,
// each group staged (exact/hadamard.hpp): the transposes replace most of hadamardLanes' permutes,
// and the four groups' chains run side by side. On a Zen 4, in the caches, 1 thread, 32 x 3072:
// int8Rows 36 -> 31 us (F32 rows), 39 -> 30 us (BF16, loaded staged at no cost);
// modulatedInt8RowsInto 60 -> 53 us. Without AVX-512 (two-register vectors) a block would spill,
// so the host goes a group at a time through a buffer (hadamardBlockHeld, Int8Walker::stepGroup).

#if defined(__AVX512BW__)
constexpr bool kStagedBlocks = true;
#else
constexpr bool kStagedBlocks = false;
#endif

/// A row's blocks for the whole-block paths: block(b, v) puts the block at element b in v, each
/// group staged.
template <class Load>
struct StagedBlocks {
  Load block;
};

#if defined(__AVX512BW__)
/// StagedBlocks of groups that stagedGroup(at, u) puts staged in u[0 .. 4) (the group at element
/// at of the row).
template <class StagedGroup>
GIZML_INLINE auto blocksOfStagedGroups(StagedGroup stagedGroup) {
  auto block = [stagedGroup](std::int64_t b, f32x16(&v)[16]) GIZML_INLINE_LAMBDA {
    // Unrolled: GCC's loop put each staged group on the stack, and the transform took 234 of its
    // operands back from there (44 unrolled). modulatedInt8Rows on a Zen 5, pairs of runs: [32,
    // 3072] on 1 thread faster in 6 of 8 (medians 27.2 -> 26.7 us), [8192, 3072] on 2 in 7 of 8
    // (4.28 -> 4.09 ms); int8Rows of F32 rows and hadamardRows the same in the caches.
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) stagedGroup(b + 64 * g, v + 4 * g);
  };
  return StagedBlocks<decltype(block)>{block};
}
/// StagedBlocks of natural groups (group(at, u), as hadamardGroupsHeld's), each staged.
template <class Group>
GIZML_INLINE auto stagedBlocksOfGroups(Group group) {
  return blocksOfStagedGroups([group](std::int64_t at, f32x16* staged) GIZML_INLINE_LAMBDA {
    f32x16 u[4];
    group(at, u);
    exact::stageGroup(u[0], u[1], u[2], u[3]);
    for (int k = 0; k < 4; ++k) staged[k] = u[k];
  });
}
/// StagedBlocks of a BF16 row at x, loaded staged.
GIZML_INLINE auto stagedBlocksOf(const std::uint16_t* x) {
  auto block = [x](std::int64_t b, f32x16(&v)[16]) GIZML_INLINE_LAMBDA { exact::loadBF16BlockStaged(x + b, v); };
  return StagedBlocks<decltype(block)>{block};
}

/// The block at element b of `blocks` in v, natural, all four stages done (the last unhalved
/// where !HalveLast, the first three where !HalveFirst); side(phase) after each of the first three.
template <bool HalveLast, bool HalveFirst = true, class Load, class Side>
GIZML_INLINE void stagedBlock(const StagedBlocks<Load>& blocks, std::int64_t b, f32x16 (&v)[16], Side&& side) {
  blocks.block(b, v);
  exact::hadamardBlockStaged<HalveFirst>(v, side);
  for (int j = 0; j < 4; ++j) exact::hadamardLast<HalveLast>(v[j], v[j + 4], v[j + 8], v[j + 12]);
}
#endif

#if defined(__AVX512BF16__)
/// StagedBlocks of groups made as BF16 words (groupWords(at, lo, hi): the group's 64 values
/// rounded, its first 32 words in lo), each staged as it is widened (exact::stageBF16Group).
template <class GroupWords>
GIZML_INLINE auto stagedBlocksOfBF16Groups(GroupWords groupWords) {
  return blocksOfStagedGroups([groupWords](std::int64_t at, f32x16* staged) GIZML_INLINE_LAMBDA {
    __m512i lo, hi;
    groupWords(at, lo, hi);
    exact::stageBF16Group(lo, hi, staged);
  });
}
#endif

/// What an Int8Walker walks for a row of natural groups (group(at, u)): with AVX-512BW its staged
/// blocks (Int8Walker::stepBlock), else the groups themselves (stepGroup).
template <class Group>
GIZML_INLINE auto walkerBlocks(Group group) {
#if defined(__AVX512BW__)
  return stagedBlocksOfGroups(group);
#else
  return group;
#endif
}
/// The same for a BF16 row at x: with AVX-512BW its blocks loaded staged.
GIZML_INLINE auto walkerBlocksOfBF16(const std::uint16_t* x) {
#if defined(__AVX512BW__)
  return stagedBlocksOf(x);
#else
  return loadGroupOf(x);
#endif
}

/// hadamardRows on the host: each row's blocks in registers (stagedBlock), or through a thread's
/// 1 KiB (hadamardBlockHeld); y of 32 MiB or more streamed past the caches (exact::streamable:
/// no cache keeps it for its reader), as int8Rows' codes (streamsCodes, which says why not less:
/// here [1, 256] took 0.38 us streamed, 0.19 not). OpenMP splits the rows, never a row. Each block
/// asks for the next row's same block (into L2), as int8Rows does: the hardware's prefetcher alone
/// ran behind.
/// On a Zen 5 (2 threads, [8192, 3072] F32, interleaved runs) 5.2 - 7.5 -> 2.5 - 4.0 ms; on one
/// thread 7.6 - 10.3 -> 4.1 - 5.5 ms.
template <class X>
void hadamardRowsHost(const HadamardRows::Args& a, const X* x) {
  const bool stream = exact::streamable(a.y, a.rows * a.n, a.n);
  exact::hostParallel(exact::hostThreadsFor(a.rows, exact::hostWork<HadamardRows>(a)), [&] {
#if !defined(__AVX512BW__)
    alignas(64) float held[exact::kHadamardBlock];
    const exact::HostRow row{a.n, stream};
#endif
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const X* next = r + 1 < a.rows ? x + a.n : nullptr;
      for (std::int64_t b = r * a.n; b < (r + 1) * a.n; b += exact::kHadamardBlock) {
        if (next)
          for (std::size_t line = 0; line < exact::kHadamardBlock * sizeof(X) / 64; ++line)
            __builtin_prefetch(reinterpret_cast<const char*>(next + b) + 64 * line, 0, 2);
        const auto store = [&](float* out, f32x16 u) {
          if (stream) exact::streamStore16(out, u);
          else exact::storeAll16(out, u);
        };
#if defined(__AVX512BW__)
        f32x16 v[16];
        if constexpr (sizeof(X) == 2) stagedBlock<true>(stagedBlocksOf(x), b, v, [](int) {});
        else stagedBlock<true>(stagedBlocksOfGroups(loadGroupOf(x)), b, v, [](int) {});
        for (int k = 0; k < 16; ++k) store(a.y + b + 16 * k, v[k]);
#else
        hadamardBlockHeld<true>(row, held, b, loadGroupOf(x), [&](int j, const f32x16(&u)[4]) {
          for (int m = 0; m < 4; ++m) store(a.y + b + 16 * (j + 4 * m), u[m]);
        });
#endif
      }
    }
    if (stream) exact::streamFence();
  });
}

/// The largest of m's lanes (Int8Walker's maximum of |u|'s bits, once a row).
GIZML_INLINE std::uint32_t laneMaxBits(const exact::u32x16& m) {
  std::uint32_t lanes[16];
  std::memcpy(lanes, &m, sizeof lanes);
  std::uint32_t best = lanes[0];
  for (int l = 1; l < 16; ++l) best = lanes[l] > best ? lanes[l] : best;
  return best;
}

/// A row's first walk done: its scale s, and the divisor of its kept values that makes them y / s
/// (Pending::divisor).
struct Walked {
  float s, divisor;
};

/// Walk 1 of Int8Rows::row on the host for a row of n values (a multiple of 256), in steps of a
/// block (Group a StagedBlocks: stepBlock) or of one group (stepGroup), so that another loop can
/// drive it (ModulatedInt8RowsHost). The transformed row goes to `held` (the row's n floats, a
/// thread's buffer in L1), where it stays for the codes' walk: kept as z, the last stage's sums
/// unhalved (y = 0.5 z rounded; codeOfHeld), whose |z| go into the maximum, halved once at the
/// end (max |y| = 0.5 max |z| rounded: rounding is monotone). Every 64 values, 64 codes of the
/// `codes` row (the thread's previous one): their divisions run beside this row's additions. The
/// same formulas and order as the row function, so the same bits.
///
/// kUnhalved: no stage halves, and the row is kept as u, the four stages' sums alone, for a row
/// whose values are BF16 (int8Rows of BF16 rows; modulatedInt8Rows, which rounds its values to
/// BF16 first); heldExact() then says whether u = 16 y exactly, every value (else the row must be
/// walked again with kUnhalved false). Why: let a stage's values in
/// the SPEC's order be v (halved after each stage) and in u's be 2^k v after k stages. Each
/// addition of the next stage rounds an exact sum t of v's, or 2^k t of u's: the same rounding
/// scaled (t in the normal range: the same relative grid; t below 2^-126 is a multiple of 2^-149
/// there, its operands being so, hence exact both ways), unless u's overflows to an infinity. A
/// halving is exact where its operand is a multiple of 2^-148: every finite BF16 value is a
/// multiple of 2^-133, sums and their roundings keep a value a multiple of 2^-j (j <= 149; a sum
/// that rounds has an ulp above 2^-j), and each halving costs one power, so v after k <= 3 stages
/// is a multiple of 2^-136. So u = 16 y wherever no sum of u overflows, and none did if every u
/// kept is finite: an infinity, once made, leaves every sum it enters infinite or NaN, and each
/// value of a stage enters the next (a BF16 infinity or NaN in x shows the same way). The check is
/// the maximum of |u| taken on its bits (a NaN's above an infinity's, where vrangeps' maximum
/// leaves NaN out): a vpand and a vpmaxud a vector where vrangeps took one, against the 12
/// halvings a block no longer makes. y's maximum is then max |u| / 16 (exact), its codes
/// rint(u / (16 s)) (codeOfHeld). F32 rows keep their halvings: a value below 2^-122 may not be a
/// multiple of 2^-145, and a test of every value would cost what the halvings do. On a Xeon (stop
/// 60), 1 thread, [32, 3072] in the caches, best of 5 rounds by turns, AVX-512: modulatedInt8Rows
/// 0.555 -> 0.520 ns a value, int8Rows of BF16 rows 0.363 -> 0.334; x86-64-v3: 0.906 -> 0.849 and
/// 0.549 -> 0.513. 2 threads, [8192, 3072]: modulatedInt8Rows (AVX-512) 10.8 - 11.2 -> 10.0 - 10.3
/// ms, int8Rows of BF16 rows (x86-64-v3) 7.06 - 7.21 -> 6.56 ms.
template <class Group, bool kUnhalved = false>
struct Int8Walker {
  const exact::HostRow& row;
  const Int8Rows::Args& a;
  float* held;
  const Pending& codes;
  Group group;
  f32x16 best0{}, best1{};  // the maximum is order-free (a NaN z, always quiet, is left out)
  exact::u32x16 bestBits{};  // kUnhalved: the maximum of |u|'s bits (a NaN's the largest)
  std::int64_t b = 0;        // the block under way
  int g = 0;                 // its next group

  GIZML_INLINE bool finished() const { return b >= a.n; }
  GIZML_INLINE void step() {
    if constexpr (requires { group.block; }) this->stepBlock();
    else stepGroup();
  }
#if defined(__AVX512BW__)
  /// The block under way in registers (stagedBlock), 64 codes after each of its first three stages
  /// (their divisions fill the stages' latency) and 64 after the last.
  GIZML_INLINE void stepBlock() {
    f32x16 v[16];
    stagedBlock<false, !kUnhalved>(group, b, v, [&](int phase) GIZML_INLINE_LAMBDA {
      pendingCodes(row, a, codes, b + 64 * phase, b + 64 * (phase + 1));
    });
    if constexpr (kUnhalved) {
      for (int k = 0; k < 16; ++k) bestBits = exact::maxMagnitudeBits(bestBits, v[k]);
    } else {
      for (int j = 0; j < 4; ++j) {
        best0 = exact::maxMagnitude(best0, v[j]);
        best1 = exact::maxMagnitude(best1, v[j + 4]);
        best0 = exact::maxMagnitude(best0, v[j + 8]);
        best1 = exact::maxMagnitude(best1, v[j + 12]);
      }
    }
    for (int k = 0; k < 16; ++k) exact::storeAll16(held + b + 16 * k, v[k]);
    pendingCodes(row, a, codes, b + 192, b + exact::kHadamardBlock);
    b += exact::kHadamardBlock;
  }
#endif
  /// kGroupsAtOnce groups of the block under way (hadamardGroupsHeld, held as its h); after its
  /// fourth, the block's last stage (hadamardLastHeld).
  GIZML_INLINE void stepGroup() {
    hadamardGroupsHeld<!kUnhalved>(row, held + b, b, g, group);
    pendingCodes(row, a, codes, b + 64 * g, b + 64 * (g + kGroupsAtOnce));
    if ((g += kGroupsAtOnce) < 4) return;
    auto done = [&](int j, const f32x16(&u)[4]) {
      if constexpr (kUnhalved) {
        for (int m = 0; m < 4; ++m) bestBits = exact::maxMagnitudeBits(bestBits, u[m]);
      } else {
        best0 = exact::maxMagnitude(best0, u[0]);
        best1 = exact::maxMagnitude(best1, u[1]);
        best0 = exact::maxMagnitude(best0, u[2]);
        best1 = exact::maxMagnitude(best1, u[3]);
      }
      for (int m = 0; m < 4; ++m) exact::storeAll16(held + b + 16 * (j + 4 * m), u[m]);
    };
    for (int j = 0; j < 4; ++j) hadamardLastHeld<false>(held + b, j, done);
    b += exact::kHadamardBlock;
    g = 0;
  }
  /// Once finished(): whether the kept values are exact (kUnhalved: every u finite, so u = 16 y).
  GIZML_INLINE bool heldExact() const {
    if constexpr (kUnhalved) return laneMaxBits(bestBits) <= 0x7f7fffffu;  // FLT_MAX's bits
    else return true;
  }
  /// The row's scale and its kept values' divisor, once finished() (and heldExact()).
  GIZML_INLINE Walked walked() const {
    if constexpr (kUnhalved) {
      const float s = int8Scale(0.0625f * std::bit_cast<float>(laneMaxBits(bestBits)), a.maxCode);
      return {s, 16.0f * s};
    }
    const float s = int8Scale(0.5f * exact::laneMax(row, exact::maxMagnitude(best0, best1)), a.maxCode);
    return {s, 2.0f * s};
  }
};

/// Walk 1 of a row at once (Int8Walker): unhalved where kUnhalved, walked again halved where that
/// was not exact.
template <bool kUnhalved = false, class Group>
GIZML_INLINE Walked int8Walk(const exact::HostRow& row, const Int8Rows::Args& a, float* held, const Pending& codes,
                             Group group) {
  Int8Walker<Group, kUnhalved> walker{row, a, held, codes, group};
  while (!walker.finished()) walker.step();
  if constexpr (kUnhalved)
    if (!walker.heldExact()) return int8Walk<false>(row, a, held, codes, group);
  return walker.walked();
}

/// The host's row loop for the 8-bit rows: OpenMP splits the rows (static), and each thread
/// pipelines its own: Kernel::walk(row, a, r, held, pending, state) does row r's first walk and
/// writes the previous row's codes (`pending`) on the way; the last row's codes follow the loop.
/// Two buffers of n floats a thread, used in turn; `state`, what a kernel keeps across a thread's
/// rows (Kernel::ThreadState). Each row's values are the row function's.
template <class Kernel>
void hostRowsPipelined(const typename Kernel::Args& a, bool streamStores) {
  exact::hostParallel(exact::hostThreadsFor(a.rows, exact::hostWork<Kernel>(a)), [&] {
    // The second buffer starts 256 bytes past the first's end: the codes read one at the offsets
    // where the walk writes the other, and with n a multiple of 1024 their addresses would differ by
    // a multiple of 4 KiB, which the core takes for a store to the same place (a load waits).
    // The thread's kept block (ThreadScratch: no allocation, no zeroing, in a decode step's calls).
    const detail::ThreadScratch<float> buffers(2 * a.n + 64);
    float* held[2] = {buffers.data(), buffers.data() + a.n + 64};
    const exact::HostRow row{a.n, streamStores};
    Pending pending;
    typename Kernel::ThreadState state;
    int next = 0;
#pragma omp for schedule(static) nowait
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const Walked w = Kernel::walk(row, a, r, held[next], pending, state);
      a.s[r] = w.s;
      pending = {held[next], w.divisor, r};
      next ^= 1;
    }
    pendingCodes<true>(row, Kernel::codes(a), pending, 0, a.n);
    if (streamStores) exact::streamFence();
  });
}

struct Int8RowsHost {
  using Args = Int8Rows::Args;
  /// Work a value (exact::hostWork): the transform, the maximum and the codes, about three times a
  /// row norm's (one row of 3072 on one thread, a Zen 2: 2.5 us against modulatedNorm's 1.1).
  static std::int64_t costAValue(const Args&) { return 3; }
  struct ThreadState {};
  static const Args& codes(const Args& a) { return a; }
  /// group(at, u) of an F32 row r that also asks for the next row's same 256 bytes (into L2): the
  /// hardware's prefetcher alone ran behind. On a Zen 4, 2 threads, four interleaved rounds:
  /// int8Rows of F32 rows 8.3-9.9 -> 7.2-8.5 ms. (BF16 rows: bf16BlocksAhead.)
  static auto loadGroupAhead(const float* x, const Args& a, std::int64_t r) {
    const float* next = r + 1 < a.rows ? x + (r + 1) * a.n : nullptr;
    return [load = loadGroupOf(x + r * a.n), next](std::int64_t at, f32x16(&u)[4]) {
      if (next)
        for (int k = 0; k < 4; ++k) __builtin_prefetch(next + at + 16 * k, 0, 2);
      load(at, u);
    };
  }
  /// walkerBlocksOfBF16 of a BF16 row r; with AVX-512BW asking for the next row's same 512 bytes as
  /// it goes. On a Zen 4, 2 threads, three interleaved rounds: int8Rows of BF16 rows [8192, 3072]
  /// 5.1-5.9 -> 4.1-4.6 ms (a run of an earlier day had found no gain). The AVX2 build, its
  /// arithmetic slower, gained nothing from it (6.3-6.8 ms either way): not asked there.
  static auto bf16BlocksAhead(const std::uint16_t* x, const Args& a, std::int64_t r) {
#if defined(__AVX512BW__)
    const std::uint16_t* next = r + 1 < a.rows ? x + (r + 1) * a.n : nullptr;
    auto block = [x = x + r * a.n, next](std::int64_t b, f32x16(&v)[16]) GIZML_INLINE_LAMBDA {
      if (next)
        for (int line = 0; line < 8; ++line) __builtin_prefetch(next + b + 32 * line, 0, 2);
      exact::loadBF16BlockStaged(x + b, v);
    };
    return StagedBlocks<decltype(block)>{block};
#else
    return walkerBlocksOfBF16(x + r * a.n);
#endif
  }
  /// BF16 rows unhalved (Int8Walker's kUnhalved); F32 values may be smaller than BF16's (not
  /// multiples of 2^-133), and stay halved.
  static Walked walk(const exact::HostRow& row, const Args& a, std::int64_t r, float* held, const Pending& pending,
                     ThreadState&) {
    if (a.xBF16)
      return int8Walk<true>(row, a, held, pending, bf16BlocksAhead(static_cast<const std::uint16_t*>(a.x), a, r));
    return int8Walk(row, a, held, pending, walkerBlocks(loadGroupAhead(static_cast<const float*>(a.x), a, r)));
  }
};

/// Whether every value of p[0, n) (n a multiple of 16) is a number of magnitude below `bound` (a
/// NaN is not; nor ±inf, for bound = inf).
inline bool allNumbersBelow(const float* p, std::int64_t n, float bound) {
  exact::i32x16 below = exact::absLane(exact::loadAll16(p)) < bound;
  for (std::int64_t i = 16; i < n; i += 16) below = below & (exact::absLane(exact::loadAll16(p + i)) < bound);
  return exact::allLanes(below);
}

/// modulatedInt8RowsInto's row: modulatedNorm's values rounded to BF16 (stored to y when asked) as
/// the blocks' input (ModulatedInt8Rows::block's steps) of an Int8Walker, which writes the previous
/// row's codes on the way. The statistics of the thread's next row are found meanwhile: their
/// sums are chains of dependent fmas (dot16: each waits for the last), so they drive, and the walk
/// takes one step every few of theirs (ThreadState). Each row's values are the row function's: the
/// statistics are modulatedStats', whoever calls them.
///
/// Where the modulations serve many rows each (a batch item's shift and scale for all its tokens)
/// of a large call, the call makes each one's 1 + scale once (Args::factor, for
/// modulatedValueOfFactor), and a row proven to hold no NaN (numbers) is rounded to BF16 without the
/// NaN's test and select (exact::roundToBF16OfNumbers): the same bits either way, and 4 of some 45
/// vector instructions a value's 8 lanes fewer. On a Zen 2 (AVX2), [8192, 3072], 2 threads, best of
/// 7, three rounds of pairs: 10.5 - 10.9 -> 10.0 - 10.2 ms (the copy: 6.2 - 6.4 ms), 4 modulations
/// taken in turn a row or 2 in halves alike; [512, 3072] and [2048, 3072] about 5 % faster too.
struct ModulatedInt8RowsHost {
  /// The op's arguments and what the call makes of the modulations: factor[mod n + i] = 1 +
  /// scale[mod][i] (one F32 add, as modulatedValue's) and finite[mod], whether mod's scale and shift
  /// are all finite; wBelow: every |w| < 2^60, NaN not. Both null where the call has fewer than
  /// kRowsAModulation rows a modulation or fewer than kPreparedRows rows: there making them (a
  /// parallel region of its own and a pass over the modulations) cost what they save or more (Zen 2,
  /// 2 threads, [64, 3072] of 4 modulations 87 -> 95 us; [512, 3072] 0.79 - 0.84 -> 0.73 - 0.75 ms).
  struct Args : ModulatedInt8Rows::Args {
    const float* factor = nullptr;
    const std::uint8_t* finite = nullptr;
    bool wBelow = false;
  };
  static constexpr std::int64_t kRowsAModulation = 16, kPreparedRows = 512;
  /// Work a value (exact::hostWork): int8Rows' and the norm's, about four times a row norm's (one
  /// row of 3072 on one thread, a Zen 2: 3.9 us against modulatedNorm's 1.1).
  static std::int64_t costAValue(const Args&) { return 4; }
  /// What a thread keeps across its rows: the statistics of row `next` (found during the row before
  /// it; -1: none yet).
  struct ThreadState {
    std::int64_t next = -1;
    exact::MeanRstd nextStats{};
  };
  /// Whether row r's values (statistics st, modulation mod) are all numbers, none NaN. With st.mean
  /// finite and st.rstd finite and positive, every d = x (RMS) or x - mean (centered) is finite (else
  /// a sum of theirs would not be), and |d rstd| < 2^66: where d^2 is normal, it is below 3 times the
  /// row's sum of squares (rounded n / 16 + 4 times, each term non-negative; their subnormal losses
  /// below n 2^-150 <= 2^-128), so |d rstd| < 2 sqrt(n) < 2^12 for n < 2^22; where it is not,
  /// |d| < 2^-63 and rstd < 2^128. With |w| < 2^60 the product by w is then finite (below 2^126), and
  /// fma(finite, 1 + scale, shift) of finite factors is finite or ±inf, never NaN.
  static bool numbers(const Args& a, long long mod, const exact::MeanRstd& st) {
    return a.factor && a.wBelow && a.finite[mod] && a.n < (std::int64_t{1} << 22) && std::isfinite(st.mean) &&
           std::isfinite(st.rstd) && st.rstd > 0.0f;
  }
  /// Args with the modulations' factors made into `factor` and `finite` (resized here) where they
  /// serve enough rows.
  static Args prepare(const ModulatedInt8Rows::Args& op, std::vector<float>& factor,
                      std::vector<std::uint8_t>& finite) {
    Args a;
    static_cast<ModulatedInt8Rows::Args&>(a) = op;
    const norms::ModulatedNorm::Args& m = op.norm;
    if (op.mods * kRowsAModulation > op.rows || op.rows < kPreparedRows) return a;
    factor.resize(static_cast<std::size_t>(op.mods * op.n));
    finite.resize(static_cast<std::size_t>(op.mods));
#pragma omp parallel for schedule(static)
    for (std::int64_t mod = 0; mod < op.mods; ++mod) {
      const float *scale = m.scale + mod * op.n, *shift = m.shift + mod * op.n;
      float* f = factor.data() + mod * op.n;
      for (std::int64_t i = 0; i < op.n; i += 16) exact::storeAll16(f + i, 1.0f + exact::loadAll16(scale + i));
      finite[static_cast<std::size_t>(mod)] =
          allNumbersBelow(scale, op.n, INFINITY) && allNumbersBelow(shift, op.n, INFINITY);
    }
    a.factor = factor.data();
    a.finite = finite.data();
    a.wBelow = allNumbersBelow(m.w, op.n, 0x1p60f);
    return a;
  }
  static Int8Rows::Args codes(const Args& a) { return ModulatedInt8Rows::codeArgs(a); }
  static Walked walk(const exact::HostRow& row, const Args& a, std::int64_t r, float* held, const Pending& pending,
                    ThreadState& state) {
    const norms::ModulatedNorm::Args& m = a.norm;
    const std::int64_t mod = ModulatedInt8Rows::mapped(a, r);
    const exact::MeanRstd st =
        state.next == r ? state.nextStats : norms::modulatedStats(row, m.x + r * m.n, m.eps, m.centered);
    if (numbers(a, mod, st)) return walkOf<true>(row, a, r, mod, st, held, pending, state);
    return walkOf<false>(row, a, r, mod, st, held, pending, state);
  }
  /// Row r's walk (statistics st, modulation mod); kNumbers: its values are all numbers (and
  /// a.factor holds mod's 1 + scale).
  template <bool kNumbers>
  static Walked walkOf(const exact::HostRow& row, const Args& a, std::int64_t r, std::int64_t mod,
                      const exact::MeanRstd& st, float* held, const Pending& pending, ThreadState& state) {
    const norms::ModulatedNorm::Args& m = a.norm;
    const Int8Rows::Args c = codes(a);
    const std::int64_t at0 = r * m.n;
    const float *x = m.x + at0, *shift = m.shift + mod * m.n, *scale = m.scale + mod * m.n;
    const float* factor = kNumbers ? a.factor + mod * m.n : nullptr;
    std::uint16_t* y = m.yBF16 ? m.yBF16 + at0 : nullptr;
    // The x after the next, asked for now: the next row's statistics, which run beside this walk,
    // read theirs at the pace of their chains. Into L1 where it holds 48 KiB or more (LinePrefetch):
    // on a Zen 5, 2 threads, ten interleaved rounds, 4.6 - 6.8 ms with prefetcht1 (into L2) ->
    // 4.3 - 6.0 with prefetcht0, faster in 9 of the 10. Into L2 on a smaller L1 (a Zen 4's 32 KiB,
    // where the gain of the prefetch was measured): there two rows ahead (24 KiB) would push out
    // this row's x and its buffers.
    const float* later = r + 2 < a.rows ? x + 2 * m.n : nullptr;
    const detail::LinePrefetch prefetch;
    // The values of elements [i, i + 16), not yet rounded to BF16.
    auto values = [&](std::int64_t i) GIZML_INLINE_LAMBDA {
      if constexpr (kNumbers)
        return norms::modulatedValueOfFactor(exact::loadAll16(x + i), st.mean, st.rstd, exact::loadAll16(m.w + i),
                                             exact::loadAll16(factor + i), exact::loadAll16(shift + i));
      else
        return norms::modulatedValue(exact::loadAll16(x + i), st.mean, st.rstd, exact::loadAll16(m.w + i),
                                     exact::loadAll16(scale + i), exact::loadAll16(shift + i));
    };
#if defined(__AVX512BF16__)
    // With AVX512_BF16 a group's values are rounded two vectors at a time into their BF16 words
    // (exact::bf16Bits32), stored as they are to y, and staged as they are widened back
    // (stagedBlocksOfBF16Groups): no stageGroup, nor rounding, widening and narrowing each vector
    // alone. On a Xeon (stop 55), 1 thread, [32, 3072] in the caches: 0.59 -> 0.575 ns a value, with
    // y 0.65 -> 0.57.
    auto groupWords = [&](std::int64_t at, __m512i& lo, __m512i& hi) GIZML_INLINE_LAMBDA {
      if (later)
        for (int k = 0; k < 4; ++k) prefetch(later + at + 16 * k);
      const f32x16 u0 = values(at), u1 = values(at + 16), u2 = values(at + 32), u3 = values(at + 48);
      lo = exact::bf16Bits32(u0, u1);
      hi = exact::bf16Bits32(u2, u3);
      if (y) {
        _mm512_storeu_si512(y + at, lo);
        _mm512_storeu_si512(y + at + 32, hi);
      }
    };
    auto blocks = stagedBlocksOfBF16Groups(groupWords);
#else
    auto group = [&](std::int64_t at, f32x16(&u)[4]) {
      if (later)
        for (int k = 0; k < 4; ++k) prefetch(later + at + 16 * k);
      for (int k = 0; k < 4; ++k) {
        const std::int64_t i = at + 16 * k;
        if constexpr (kNumbers) u[k] = exact::roundToBF16OfNumbers(values(i));
        else u[k] = exact::roundToBF16Lanes(values(i));
        if (y) exact::storeHigh16(y + i, exact::toBits(u[k]));  // u is a BF16 value already: its top half
      }
    };
    auto blocks = walkerBlocks(group);
#endif
    // Its values are BF16 values: unhalved (Int8Walker's kUnhalved).
    Int8Walker<decltype(blocks), true> walker{row, c, held, pending, blocks};
    if (r + 1 < a.rows) {
      // n / 16 steps of sums (twice that when centered: the mean's, then the variance's) against
      // n / 256 blocks or n / (64 kGroupsAtOnce) steps of groups (the walker's steps): one every 16
      // (32) steps, or 4 kGroupsAtOnce (8 kGroupsAtOnce). The steps between two walker steps keep
      // their sums in registers (SideRow's every): a walker step inlined into each step's loop had
      // them carried through memory, each step's fma waiting on a store and a load beside its own
      // 5 cycles (Zen 2, [32, 3072] in the caches, 2 threads: 51 - 59 -> 50 us in four rounds of
      // pairs).
      const int every = (m.centered ? 2 : 1) * (kStagedBlocks ? 16 : 4 * kGroupsAtOnce);
      auto side = [&](std::int64_t) GIZML_INLINE_LAMBDA {
        if (!walker.finished()) walker.step();
      };
      const exact::SideRow<decltype(side)> sums{{}, a.n, row, side, every};
      state.next = r + 1;
      state.nextStats = norms::modulatedStats(sums, x + m.n, m.eps, m.centered);
    }
    while (!walker.finished()) walker.step();
    if (!walker.heldExact()) return int8Walk<false>(row, c, held, pending, blocks);  // y stored again, the same
    return walker.walked();
  }
};

#undef GIZML_INLINE
#undef GIZML_INLINE_LAMBDA

}  // namespace

void HadamardRows::host(const Args& a) {
  if (a.xBF16) hadamardRowsHost(a, static_cast<const std::uint16_t*>(a.x));
  else hadamardRowsHost(a, static_cast<const float*>(a.x));
}
/// Whether the F32 codes go past the caches (exact::streamable: 32 MiB or more, as every row op's
/// outputs): streamed there, where no cache would keep them for the op that reads them next.
/// Streamed whatever their size until stop 48, a decode step's codes went to memory, the call
/// waited for them at its fence, and the next op read them from there: one thread, a Zen 2,
/// int8Rows [1, 256] 0.46 -> 0.29 us a call, [1, 3072] 1.94 -> 1.69; 2 threads, [512, 3072] and a
/// read of every line of the codes after (each thread its own rows, as a row op's loop), 0.60 ->
/// 0.47 ms; [2048, 3072] (25 MB, past this Zen 2's 16 MiB L3) 2.38 -> 2.30 ms with that read,
/// though the call alone took 1.65 -> 1.77.
template <class Args>
bool streamsCodes(const Args& a) {
  return a.codes == Codes::F32 && exact::streamable(static_cast<const float*>(a.q), a.rows * a.n, a.n);
}

// The host keeps each row's transformed values for the codes' walk (hostRowsPipelined), and streams
// F32 codes past the caches.
void Int8Rows::host(const Args& a) {
  hostRowsPipelined<Int8RowsHost>(a, streamsCodes(a));
}
void ModulatedInt8Rows::host(const Args& op) {
  std::vector<float> factor;
  std::vector<std::uint8_t> finite;
  const ModulatedInt8RowsHost::Args a = ModulatedInt8RowsHost::prepare(op, factor, finite);
  hostRowsPipelined<ModulatedInt8RowsHost>(a, streamsCodes(a));
}
}  // namespace quant

namespace {

/// x F32 or BF16 with rows of a positive multiple of 256 values, rank >= 1 (rank 2 when `matrix`).
void checkBlockRows(const char* fn, const char* arg, const Tensor& x, bool matrix) {
  detail::requireDefined(fn, arg, x);
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16)
    fail(fn, arg, "expected dtype F32 or BF16, got " + dtypeName(x.dtype()));
  if (matrix) detail::requireRank(fn, arg, x, 2);
  else detail::requireRankAtLeast(fn, arg, x, 1);
  const std::int64_t n = x.rowLength();
  if (n < 1 || n % exact::kHadamardBlock != 0)
    fail(fn, arg, "expected rows of a positive multiple of 256 values, got shape " + shapeString(x.shape()));
}

quant::BlockRows blockRowsOf(const Tensor& x) {
  return {x.raw(), x.dtype() == DType::BF16, x.rowCount(), x.rowLength()};
}

Tensor hadamardRowsOf(const char* fn, const char* arg, const Tensor& x) {
  checkBlockRows(fn, arg, x, false);
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  detail::run<quant::HadamardRows>(detail::gpuOf(x), {blockRowsOf(x), y.data<float>()});
  return y;
}

/// The codes' dtype where x is: F32 on the host; I8 (8 bits) or I4 (4 bits) on a GPU.
DType codesDType(const Tensor& x, int bits) {
  if (x.device().isHost()) return DType::F32;
  return bits == 8 ? DType::I8 : DType::I4;
}

void checkBits(const char* fn, int bits) {
  if (bits != 8 && bits != 4) fail(fn, "bits", "expected 8 or 4, got " + std::to_string(bits));
}

void int8RowsRun(const Tensor& x, const Tensor& q, const Tensor& s, int bits) {
  const float maxCode = bits == 8 ? 127.0f : 7.0f;
  detail::run<quant::Int8Rows>(detail::gpuOf(x), {blockRowsOf(x), maxCode, -(maxCode + 1.0f), maxCode,
                                                  quant::codesOf(q.dtype()), q.raw(), s.data<float>()});
}

}  // namespace

Tensor hadamardRows(const Tensor& x) { return hadamardRowsOf("gizml::netops::hadamardRows", "x", x); }

void hadamardRowsInto(const Tensor& x, const Tensor& y) {
  const char* fn = "gizml::netops::hadamardRowsInto";
  checkBlockRows(fn, "x", x, false);
  detail::requireDefined(fn, "y", y);
  detail::requireDType(fn, "y", y, DType::F32);
  detail::requireShape(fn, "y", y, x.shape());
  detail::requireSameDevice(fn, {{"x", &x}, {"y", &y}});
  detail::requireApart(fn, "y", y, {{"x", &x}}, &x);
  // In place is safe: the host and the GPU read a whole 256-block before writing any of it.
  detail::run<quant::HadamardRows>(detail::gpuOf(x), {blockRowsOf(x), y.data<float>()});
}

Tensor rotateWeightRows(const Tensor& w) { return hadamardRowsOf("gizml::netops::rotateWeightRows", "w", w); }

Int8RowsResult int8Rows(const Tensor& x, int bits) {
  const char* fn = "gizml::netops::int8Rows";
  checkBits(fn, bits);
  checkBlockRows(fn, "x", x, true);
  Int8RowsResult out{Tensor::empty(x.shape(), codesDType(x, bits), x.device()),
                     Tensor::empty({x.dim(0), 1}, DType::F32, x.device())};
  int8RowsRun(x, out.q, out.s, bits);
  return out;
}

namespace {
/// int8RowsInto's outputs for rows like x's: q (codes) and s ([rows, 1] F32) on x's device.
void checkCodes(const char* fn, const Tensor& x, const Tensor& q, const Tensor& s, int bits) {
  detail::requireDefined(fn, "q", q);
  detail::requireDefined(fn, "s", s);
  detail::requireSameDevice(fn, {{"x", &x}, {"q", &q}, {"s", &s}});
  detail::requireDType(fn, "q", q, codesDType(x, bits));
  detail::requireShape(fn, "q", q, x.shape());
  detail::requireDType(fn, "s", s, DType::F32);
  detail::requireShape(fn, "s", s, {x.dim(0), 1});
  detail::requireApart(fn, "q", q, {{"x", &x}});
  detail::requireApart(fn, "s", s, {{"x", &x}, {"q", &q}});
}
}  // namespace

void int8RowsInto(const Tensor& x, const Tensor& q, const Tensor& s, int bits) {
  const char* fn = "gizml::netops::int8RowsInto";
  checkBits(fn, bits);
  checkBlockRows(fn, "x", x, true);
  checkCodes(fn, x, q, s, bits);
  int8RowsRun(x, q, s, bits);
}

namespace {
/// modulatedInt8Rows(Into)'s checks, naming `fn`, then the run.
void modulatedInt8RowsRun(const char* fn, const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale,
                          const Tensor& map, double eps, const Tensor& y, const Tensor& q, const Tensor& s,
                          bool centered, int bits) {
  checkBits(fn, bits);
  norms::ModulatedNorm::Args norm = norms::checkModulated(fn, x, w, shift, scale, map, eps, centered);
  checkBlockRows(fn, "x", x, true);
  checkCodes(fn, x, q, s, bits);
  for (const auto& [name, out] : {std::pair<const char*, const Tensor*>{"q", &q}, {"s", &s}})
    detail::requireApart(fn, name, *out, {{"w", &w}, {"shift", &shift}, {"scale", &scale}, {"map", &map}});
  if (y.defined()) {
    detail::requireDType(fn, "y", y, DType::BF16);
    detail::requireShape(fn, "y", y, x.shape());
    detail::requireSameDevice(fn, {{"x", &x}, {"y", &y}});
    detail::requireApart(
        fn, "y", y, {{"x", &x}, {"w", &w}, {"shift", &shift}, {"scale", &scale}, {"map", &map}, {"q", &q}, {"s", &s}});
    norm.yBF16 = y.data<std::uint16_t>();
  }
  const float maxCode = bits == 8 ? 127.0f : 7.0f;
  detail::run<quant::ModulatedInt8Rows>(detail::gpuOf(x), {norm, maxCode, -(maxCode + 1.0f), maxCode,
                                                          quant::codesOf(q.dtype()), q.raw(),
                                                          s.data<float>(), norm.rows, norm.n, norm.mods},
                                        fn);  // a bad map found on a GPU names fn too
}
}  // namespace

void modulatedInt8RowsInto(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale, const Tensor& map,
                           double eps, const Tensor& y, const Tensor& q, const Tensor& s, bool centered, int bits) {
  modulatedInt8RowsRun("gizml::netops::modulatedInt8RowsInto", x, w, shift, scale, map, eps, y, q, s, centered, bits);
}

Int8RowsResult modulatedInt8Rows(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale,
                                 const Tensor& map, double eps, bool centered, int bits) {
  const char* fn = "gizml::netops::modulatedInt8Rows";
  checkBits(fn, bits);
  checkBlockRows(fn, "x", x, true);  // before x's shape makes the outputs
  Int8RowsResult out{Tensor::empty(x.shape(), codesDType(x, bits), x.device()),
                     Tensor::empty({x.dim(0), 1}, DType::F32, x.device())};
  modulatedInt8RowsRun(fn, x, w, shift, scale, map, eps, Tensor(), out.q, out.s, centered, bits);
  return out;
}

}  // namespace gizml::netops
