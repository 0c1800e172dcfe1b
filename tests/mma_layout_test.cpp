// The matrix-core maps of src/exact/mma_layout.hpp, checked on the host (no GPU needed):
//   1. each lane <-> element map is a bijection onto its tile, its inverse is its inverse, and it is
//      the PTX ISA's table as the ISA prints it (element index i, groupID, threadID_in_group);
//   2. a software warp (32 lanes' registers) loads the A and B fragments by the maps, runs
//      mma m16n8k16 (.bf16, .f16) and m16n8k32 (.s8, .e4m3) by gathering each output element's
//      inputs through the maps, and equals a plain product exactly (small integers: every product
//      and sum is exact in F32; .s8 in int32);
//   3. ldmatrix.x4 (and .trans) emulated from a swizzled shared-memory tile filled by the cp.async
//      chunk map gives exactly the registers the mma fragment maps require, so ldmatrix then mma
//      computes the right product; and the swizzle keeps every ldmatrix phase and every copy phase
//      free of bank conflicts;
//   4. on a GPU (skipped without one), the real instructions with registers filled and D stored by
//      the maps (core/mma_for_test.cu) equal the plain product: the maps are the hardware's.
//
// Break check (done once, by hand): with fragmentB16x8's row changed to `2 * threadInGroup(lane) +
// half + 4 * reg` (a wrong k for b2, b3), the four tests that use that map failed (bijection:
// "fragmentB16x8 lane 2 reg 0 elem 0 -> (4, 0) hit twice"; PTX table; the m16n8k16 product; ldmatrix
// then mma); restored, all pass.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "exact/convert.hpp"
#include "exact/mma_layout.hpp"
#include "gizml/gpu.hpp"
#include "gizml/key.hpp"
#include "support/gpu.hpp"

namespace {

namespace mma = gizml::exact::mma;
using gizml::Key;
using mma::RowCol;
using mma::Slot;

/// Small integers in [lo, hi] from words of a key's draw.
std::vector<int> randomInts(Key key, int count, int lo, int hi) {
  std::vector<int> v(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) v[i] = lo + static_cast<int>(key.word(static_cast<std::uint64_t>(i)) % (hi - lo + 1));
  return v;
}

std::uint32_t halfOf(std::uint32_t reg, int half) { return (reg >> (16 * half)) & 0xffffu; }
std::uint32_t byteOf(std::uint32_t reg, int byte) { return (reg >> (8 * byte)) & 0xffu; }

/// Checks that f(lane, reg, elem) over lanes x regs x elems hits each (row, col) of a rows x cols
/// tile exactly once and that inverse(row, col) gives the slot back.
template <class Map, class Inverse>
void expectBijection(const char* name, int regs, int elems, int rows, int cols, Map f, Inverse inverse) {
  ASSERT_EQ(32 * regs * elems, rows * cols) << name;
  std::vector<int> hits(static_cast<std::size_t>(rows * cols), 0);
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < regs; ++reg)
      for (int e = 0; e < elems; ++e) {
        const RowCol at = f(lane, reg, e);
        const std::string where = std::string(name) + " lane " + std::to_string(lane) + " reg " + std::to_string(reg) +
                                  " elem " + std::to_string(e) + " -> (" + std::to_string(at.row) + ", " +
                                  std::to_string(at.col) + ")";
        ASSERT_TRUE(at.row >= 0 && at.row < rows && at.col >= 0 && at.col < cols) << where << " outside the tile";
        EXPECT_EQ(++hits[at.row * cols + at.col], 1) << where << " hit twice";
        const Slot back = inverse(at.row, at.col);
        EXPECT_TRUE(back.lane == lane && back.reg == reg && back.elem == e)
            << where << ", inverse gives lane " << back.lane << " reg " << back.reg << " elem " << back.elem;
      }
}

TEST(MmaLayout, FragmentMapsAreBijectionsWithTheirInverses) {
  expectBijection("fragmentA16x16", 4, 2, 16, 16, mma::fragmentA16x16, mma::slotA16x16);
  expectBijection("fragmentB16x8", 2, 2, 16, 8, mma::fragmentB16x8, mma::slotB16x8);
  expectBijection("fragmentC16x8", 4, 1, 16, 8, [](int lane, int i, int) { return mma::fragmentC16x8(lane, i); },
                  mma::slotC16x8);
  expectBijection("fragmentA16x32", 4, 4, 16, 32, mma::fragmentA16x32, mma::slotA16x32);
  expectBijection("fragmentB32x8", 2, 4, 32, 8, mma::fragmentB32x8, mma::slotB32x8);
}

// The PTX ISA's tables, transcribed a second time in the ISA's own form (element index i of the
// fragment, "for ai where ..."), against the header's (register, element) form.
TEST(MmaLayout, FragmentMapsAreThePtxTables) {
  for (int lane = 0; lane < 32; ++lane) {
    const int groupID = lane >> 2, tig = lane % 4;
    for (int i = 0; i < 8; ++i) {  // m16n8k16 .f16/.bf16 A: a0..a7
      const int row = (i < 2 || (i >= 4 && i < 6)) ? groupID : groupID + 8;
      const int col = i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
      const RowCol got = mma::fragmentA16x16(lane, i / 2, i % 2);
      EXPECT_TRUE(got.row == row && got.col == col) << "A16x16 lane " << lane << " a" << i;
    }
    for (int i = 0; i < 4; ++i) {  // B: b0..b3
      const int row = i < 2 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
      const RowCol got = mma::fragmentB16x8(lane, i / 2, i % 2);
      EXPECT_TRUE(got.row == row && got.col == groupID) << "B16x8 lane " << lane << " b" << i;
    }
    for (int i = 0; i < 4; ++i) {  // C/D: c0..c3
      const int row = i < 2 ? groupID : groupID + 8;
      const RowCol got = mma::fragmentC16x8(lane, i);
      EXPECT_TRUE(got.row == row && got.col == tig * 2 + (i & 1)) << "C16x8 lane " << lane << " c" << i;
    }
    for (int i = 0; i < 16; ++i) {  // m16n8k32 8-bit A: a0..a15
      const int row = (i < 4 || (i >= 8 && i < 12)) ? groupID : groupID + 8;
      const int col = i < 8 ? tig * 4 + (i & 3) : tig * 4 + (i & 3) + 16;
      const RowCol got = mma::fragmentA16x32(lane, i / 4, i % 4);
      EXPECT_TRUE(got.row == row && got.col == col) << "A16x32 lane " << lane << " a" << i;
    }
    for (int i = 0; i < 8; ++i) {  // B: b0..b7
      const int row = i < 4 ? tig * 4 + (i & 3) : tig * 4 + (i & 3) + 16;
      const RowCol got = mma::fragmentB32x8(lane, i / 4, i % 4);
      EXPECT_TRUE(got.row == row && got.col == groupID) << "B32x8 lane " << lane << " b" << i;
    }
  }
}

// A register's elements are k-adjacent (A: along a row; B: down a column), element 0 first: what
// lets a kernel (gemm/cuda.cu's mmaBlock) fill a register with one 32-bit load at its element 0 from
// A row-major or Bᵀ row-major.
TEST(MmaLayout, RegisterElementsAreAdjacentAlongK) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const RowCol a0 = mma::fragmentA16x16(lane, reg, 0), a1 = mma::fragmentA16x16(lane, reg, 1);
      EXPECT_TRUE(a1.row == a0.row && a1.col == a0.col + 1) << "A16x16 lane " << lane << " reg " << reg;
      for (int e = 1; e < 4; ++e) {
        const RowCol b0 = mma::fragmentA16x32(lane, reg, 0), be = mma::fragmentA16x32(lane, reg, e);
        EXPECT_TRUE(be.row == b0.row && be.col == b0.col + e) << "A16x32 lane " << lane << " reg " << reg;
      }
    }
    for (int reg = 0; reg < 2; ++reg) {
      const RowCol b0 = mma::fragmentB16x8(lane, reg, 0), b1 = mma::fragmentB16x8(lane, reg, 1);
      EXPECT_TRUE(b1.row == b0.row + 1 && b1.col == b0.col) << "B16x8 lane " << lane << " reg " << reg;
      EXPECT_EQ(b0.row % 2, 0) << "B16x8 lane " << lane << ": a 32-bit load needs an even k";
      for (int e = 1; e < 4; ++e) {
        const RowCol c0 = mma::fragmentB32x8(lane, reg, 0), ce = mma::fragmentB32x8(lane, reg, e);
        EXPECT_TRUE(ce.row == c0.row + e && ce.col == c0.col) << "B32x8 lane " << lane << " reg " << reg;
      }
    }
    for (int reg = 0; reg < 4; ++reg)
      EXPECT_EQ(mma::fragmentA16x16(lane, reg, 0).col % 2, 0) << "A16x16 lane " << lane << ": even k";
  }
}

// Flash attention feeds the accumulators of S = Q Kᵀ (two 16 x 8 tiles) to P V as its A operand,
// register by register in the same lane: accumulatorOfA16x16 must name, for each A element, the
// accumulator holding the same (row, column) of the 16 x 16 pair of tiles.
TEST(MmaLayout, AccumulatorsOfTwoTilesAreAnAOperand) {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const RowCol a = mma::fragmentA16x16(lane, reg, half);
        const mma::TileAccumulator t = mma::accumulatorOfA16x16(reg, half);
        ASSERT_TRUE(t.tile == 0 || t.tile == 1);
        ASSERT_TRUE(t.i >= 0 && t.i < 4);
        const RowCol c = mma::fragmentC16x8(lane, t.i);
        EXPECT_EQ(a.row, c.row) << "lane " << lane << " reg " << reg << " half " << half;
        EXPECT_EQ(a.col, 8 * t.tile + c.col) << "lane " << lane << " reg " << reg << " half " << half;
      }
}

TEST(MmaLayout, AccumulatorsOfFourTilesAreAPermutedS8AOperand) {
  // accumulatorColumnOfA16x32 is a permutation of 0..31 that keeps each half of 16.
  std::vector<int> seen(32, 0);
  for (int col = 0; col < 32; ++col) {
    const int c = mma::accumulatorColumnOfA16x32(col);
    ASSERT_TRUE(c >= 0 && c < 32 && (c & 16) == (col & 16)) << col;
    ++seen[c];
  }
  for (int c = 0; c < 32; ++c) EXPECT_EQ(seen[c], 1) << "column " << c;
  // Byte `byte` of A register `reg` is, in the same lane, the accumulator of the A element's row and
  // of the permuted column.
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int byte = 0; byte < 4; ++byte) {
        const RowCol a = mma::fragmentA16x32(lane, reg, byte);
        const mma::TileAccumulator t = mma::accumulatorOfA16x32(reg, byte);
        ASSERT_TRUE(t.tile >= 0 && t.tile < 4 && t.i >= 0 && t.i < 4);
        const RowCol c = mma::fragmentC16x8(lane, t.i);
        EXPECT_EQ(a.row, c.row) << "lane " << lane << " reg " << reg << " byte " << byte;
        EXPECT_EQ(mma::accumulatorColumnOfA16x32(a.col), 8 * t.tile + c.col)
            << "lane " << lane << " reg " << reg << " byte " << byte;
      }
}

TEST(MmaLayout, LdmatrixMapsAreBijections) {
  std::vector<int> rows(32, 0), elems(64, 0), trans(64, 0);
  for (int lane = 0; lane < 32; ++lane) {
    const mma::MatrixRow r = mma::ldmatrixAddressOf(lane);
    ASSERT_TRUE(r.matrix >= 0 && r.matrix < 4 && r.row >= 0 && r.row < 8);
    EXPECT_EQ(++rows[8 * r.matrix + r.row], 1) << "lane " << lane;
    for (int h = 0; h < 2; ++h) {
      const RowCol e = mma::ldmatrixElement(lane, h), t = mma::ldmatrixTransElement(lane, h);
      EXPECT_EQ(++elems[8 * e.row + e.col], 1) << "lane " << lane;
      EXPECT_EQ(++trans[8 * t.row + t.col], 1) << "lane " << lane;
      EXPECT_TRUE(t.row == e.col && t.col == e.row) << "lane " << lane;  // .trans: the transpose
    }
  }
}

// ---- the software warp ---------------------------------------------------------------------------

/// One warp's registers for one mma: A (4 a lane), B (2 a lane), C / D (4 a lane).
struct Warp {
  std::uint32_t a[32][4] = {}, b[32][2] = {};
  float c[32][4] = {};
  std::int32_t ci[32][4] = {};
};

/// The registers of each lane from a 16-bit tile by a fragment map (elements low to high).
template <int Regs, class Map>
void loadHalves(std::uint32_t (&regs)[32][Regs], const std::vector<std::uint16_t>& tile, int cols, Map f) {
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < Regs; ++r) {
      regs[lane][r] = 0;
      for (int h = 0; h < 2; ++h) {
        const RowCol at = f(lane, r, h);
        regs[lane][r] |= static_cast<std::uint32_t>(tile[at.row * cols + at.col]) << (16 * h);
      }
    }
}
template <int Regs, class Map>
void loadBytes(std::uint32_t (&regs)[32][Regs], const std::vector<std::uint8_t>& tile, int cols, Map f) {
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < Regs; ++r) {
      regs[lane][r] = 0;
      for (int e = 0; e < 4; ++e) {
        const RowCol at = f(lane, r, e);
        regs[lane][r] |= static_cast<std::uint32_t>(tile[at.row * cols + at.col]) << (8 * e);
      }
    }
}

/// mma.m16n8k16 with 16-bit operands decoded by `value`: D = A B + C, each output element (found by
/// the C map) gathering A's row and B's column through the A and B maps' inverses.
template <class Value>
void mma16816(Warp& w, Value value) {
  float d[32][4];
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const RowCol out = mma::fragmentC16x8(lane, i);
      float acc = w.c[lane][i];
      for (int k = 0; k < 16; ++k) {
        const Slot sa = mma::slotA16x16(out.row, k), sb = mma::slotB16x8(k, out.col);
        acc += value(halfOf(w.a[sa.lane][sa.reg], sa.elem)) * value(halfOf(w.b[sb.lane][sb.reg], sb.elem));
      }
      d[lane][i] = acc;
    }
  std::memcpy(w.c, d, sizeof d);
}

/// mma.m16n8k32 with .s8 operands, .s32 accumulators.
void mma16832s8(Warp& w) {
  std::int32_t d[32][4];
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const RowCol out = mma::fragmentC16x8(lane, i);
      std::int32_t acc = w.ci[lane][i];
      for (int k = 0; k < 32; ++k) {
        const Slot sa = mma::slotA16x32(out.row, k), sb = mma::slotB32x8(k, out.col);
        acc += static_cast<std::int8_t>(byteOf(w.a[sa.lane][sa.reg], sa.elem)) *
               static_cast<std::int8_t>(byteOf(w.b[sb.lane][sb.reg], sb.elem));
      }
      d[lane][i] = acc;
    }
  std::memcpy(w.ci, d, sizeof d);
}

/// mma.m16n8k32 with .e4m3 operands, .f32 accumulators.
void mma16832e4m3(Warp& w) {
  float d[32][4];
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const RowCol out = mma::fragmentC16x8(lane, i);
      float acc = w.c[lane][i];
      for (int k = 0; k < 32; ++k) {
        const Slot sa = mma::slotA16x32(out.row, k), sb = mma::slotB32x8(k, out.col);
        acc += gizml::exact::e4m3ToFloat(static_cast<std::uint8_t>(byteOf(w.a[sa.lane][sa.reg], sa.elem))) *
               gizml::exact::e4m3ToFloat(static_cast<std::uint8_t>(byteOf(w.b[sb.lane][sb.reg], sb.elem)));
      }
      d[lane][i] = acc;
    }
  std::memcpy(w.c, d, sizeof d);
}

/// The plain product A [m][kk] B [kk][n] + C, in int64 (exact for the small inputs used).
std::vector<std::int64_t> plainProduct(const std::vector<int>& a, const std::vector<int>& b, const std::vector<int>& c,
                                       int m, int n, int kk) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(m * n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      std::int64_t acc = c[i * n + j];
      for (int p = 0; p < kk; ++p) acc += static_cast<std::int64_t>(a[i * kk + p]) * b[p * n + j];
      out[i * n + j] = acc;
    }
  return out;
}

/// Compares the warp's D (by the C map) with the plain product.
template <class Acc>
void expectProduct(const char* name, const Acc (&d)[32][4], const std::vector<std::int64_t>& want) {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const RowCol at = mma::fragmentC16x8(lane, i);
      EXPECT_EQ(static_cast<std::int64_t>(d[lane][i]), want[at.row * 8 + at.col])
          << name << ": D(" << at.row << ", " << at.col << ") in lane " << lane << " c" << i;
    }
}

/// C's registers from a 16 x 8 tile of integers, by the C map.
void loadC(Warp& w, const std::vector<int>& c) {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const RowCol at = mma::fragmentC16x8(lane, i);
      w.c[lane][i] = static_cast<float>(c[at.row * 8 + at.col]);
      w.ci[lane][i] = c[at.row * 8 + at.col];
    }
}

template <class Encode>
std::vector<std::uint16_t> encodeAll(const std::vector<int>& v, Encode encode) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = encode(static_cast<float>(v[i]));
  return out;
}

TEST(MmaLayout, WarpMma16816EqualsPlainProduct) {
  // |values| <= 8: products <= 64, sums of 16 plus C <= 1024 + 100: every step exact in F32.
  const auto a = randomInts(Key{8, 1}, 16 * 16, -8, 8), b = randomInts(Key{8, 2}, 16 * 8, -8, 8),
             c = randomInts(Key{8, 3}, 16 * 8, -100, 100);
  const auto want = plainProduct(a, b, c, 16, 8, 16);
  for (bool bf16 : {true, false}) {
    auto encode = [bf16](float v) { return bf16 ? gizml::exact::floatToBF16(v) : gizml::exact::floatToF16(v); };
    auto value = [bf16](std::uint32_t h) {
      const auto bits = static_cast<std::uint16_t>(h);
      return bf16 ? gizml::exact::bf16ToFloat(bits) : gizml::exact::f16ToFloat(bits);
    };
    Warp w;
    loadHalves(w.a, encodeAll(a, encode), 16, mma::fragmentA16x16);
    loadHalves(w.b, encodeAll(b, encode), 8, mma::fragmentB16x8);
    loadC(w, c);
    mma16816(w, value);
    expectProduct(bf16 ? "m16n8k16 bf16" : "m16n8k16 f16", w.c, want);
  }
}

TEST(MmaLayout, WarpMma16832S8EqualsPlainProductInInt32) {
  const auto a = randomInts(Key{8, 4}, 16 * 32, -128, 127), b = randomInts(Key{8, 5}, 32 * 8, -128, 127),
             c = randomInts(Key{8, 6}, 16 * 8, -100000, 100000);
  std::vector<std::uint8_t> a8(a.size()), b8(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) a8[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(a[i]));
  for (std::size_t i = 0; i < b.size(); ++i) b8[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(b[i]));
  Warp w;
  loadBytes(w.a, a8, 32, mma::fragmentA16x32);
  loadBytes(w.b, b8, 8, mma::fragmentB32x8);
  loadC(w, c);
  mma16832s8(w);
  expectProduct("m16n8k32 s8", w.ci, plainProduct(a, b, c, 16, 8, 32));
}

TEST(MmaLayout, WarpMma16832E4M3EqualsPlainProduct) {
  // Integers in [-8, 8] are exact in E4M3 (3 mantissa bits); sums of 32 products stay exact in F32.
  const auto a = randomInts(Key{8, 7}, 16 * 32, -8, 8), b = randomInts(Key{8, 8}, 32 * 8, -8, 8),
             c = randomInts(Key{8, 9}, 16 * 8, -100, 100);
  std::vector<std::uint8_t> a8(a.size()), b8(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) a8[i] = gizml::exact::floatToE4M3(static_cast<float>(a[i]));
  for (std::size_t i = 0; i < b.size(); ++i) b8[i] = gizml::exact::floatToE4M3(static_cast<float>(b[i]));
  Warp w;
  loadBytes(w.a, a8, 32, mma::fragmentA16x32);
  loadBytes(w.b, b8, 8, mma::fragmentB32x8);
  loadC(w, c);
  mma16832e4m3(w);
  expectProduct("m16n8k32 e4m3", w.c, plainProduct(a, b, c, 16, 8, 32));
}

// ---- cp.async into a swizzled tile, then ldmatrix ------------------------------------------------

/// A rows x cols tile of 16-bit values copied from global memory (row-major) into shared memory by
/// the cp.async chunk map (threads threads), each chunk stored at its swizzled place.
std::vector<std::uint16_t> copyToShared(const std::vector<std::uint16_t>& global, int rows, int cols, int threads) {
  const int chunksPerRow = cols / 8, chunks = rows * chunksPerRow;
  std::vector<std::uint16_t> shared(global.size(), 0xdeadu);
  std::vector<int> written(static_cast<std::size_t>(chunks), 0);
  for (int step = 0; step * threads < chunks; ++step)
    for (int t = 0; t < threads; ++t) {
      const mma::Chunk c = mma::copyChunkOf(t, step, threads, chunksPerRow);
      if (c.row >= rows) continue;
      ++written[c.row * chunksPerRow + c.chunk];
      const int to = mma::swizzledOffset(c.row, 8 * c.chunk, cols);
      for (int e = 0; e < 8; ++e) shared[to + e] = global[c.row * cols + 8 * c.chunk + e];
    }
  for (int i = 0; i < chunks; ++i) EXPECT_EQ(written[i], 1) << "chunk " << i << " of a " << rows << " x " << cols << " tile";
  return shared;
}

/// ldmatrix.x4 (or .x4.trans): each lane gives the shared-memory element offset of its row (by
/// ldmatrixAddressOf: matrix lane / 8, row lane % 8); lane l receives in register j the elements
/// ldmatrixElement (or ldmatrixTransElement) of matrix j.
void ldmatrixX4(const std::vector<std::uint16_t>& shared, const int (&address)[32], bool trans, std::uint32_t (&regs)[32][4]) {
  std::uint16_t matrix[4][8][8];
  for (int lane = 0; lane < 32; ++lane) {
    const mma::MatrixRow r = mma::ldmatrixAddressOf(lane);
    ASSERT_EQ(address[lane] % 8, 0) << "lane " << lane << ": a row address must be 16-byte aligned";
    for (int e = 0; e < 8; ++e) matrix[r.matrix][r.row][e] = shared[address[lane] + e];
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j) {
      regs[lane][j] = 0;
      for (int h = 0; h < 2; ++h) {
        const RowCol at = trans ? mma::ldmatrixTransElement(lane, h) : mma::ldmatrixElement(lane, h);
        regs[lane][j] |= static_cast<std::uint32_t>(matrix[j][at.row][at.col]) << (16 * h);
      }
    }
}

/// Each 8 lanes of an ldmatrix (one phase: 8 rows of 16 bytes) read 8 different 16-byte bank
/// groups of the 32 4-byte banks: no conflict.
void expectConflictFree(const char* name, const int (&address)[32]) {
  for (int phase = 0; phase < 4; ++phase) {
    int used = 0;
    for (int l = 8 * phase; l < 8 * phase + 8; ++l) {
      const int group = (address[l] * 2 / 16) % 8;  // 16-bit elements -> bytes -> 16-byte bank group
      EXPECT_EQ(used & (1 << group), 0) << name << ": lane " << l << " conflicts in phase " << phase;
      used |= 1 << group;
    }
  }
}

std::vector<std::uint16_t> bf16Tile(Key key, int count, std::vector<int>& ints) {
  ints = randomInts(key, count, -8, 8);
  return encodeAll(ints, gizml::exact::floatToBF16);
}

/// The sub-tile [r0, r0 + rows) x [c0, c0 + cols) of a tile with `stride` columns.
std::vector<int> subTile(const std::vector<int>& v, int stride, int r0, int c0, int rows, int cols) {
  std::vector<int> out;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out.push_back(v[(r0 + r) * stride + c0 + c]);
  return out;
}

TEST(MmaLayout, LdmatrixFromSwizzledTileGivesTheMmaFragments) {
  auto bf16 = [](std::uint32_t h) { return gizml::exact::bf16ToFloat(static_cast<std::uint16_t>(h)); };
  // Tiles of 64 (8 chunks a row) and 32 (4 chunks, as the GEMM's k step) columns.
  for (int cols : {64, 32}) {
    // A [32 m][cols k] and Bᵀ [16 n][cols k] (k contiguous); V [cols k][64 n] (n contiguous).
    std::vector<int> a, bt, v;
    const auto sa = copyToShared(bf16Tile(Key{9, 1}, 32 * cols, a), 32, cols, 128);
    const auto sbt = copyToShared(bf16Tile(Key{9, 2}, 16 * cols, bt), 16, cols, 128);
    const auto sv = copyToShared(bf16Tile(Key{9, 3}, cols * 64, v), cols, 64, 128);
    for (int m0 : {0, 16})
      for (int k0 = 0; k0 < cols; k0 += 16) {
        const std::string where = std::to_string(cols) + " columns, m0 " + std::to_string(m0) + ", k0 " + std::to_string(k0);
        Warp w;
        int address[32];
        for (int lane = 0; lane < 32; ++lane) {
          const RowCol at = mma::ldmatrixAddressA(lane);
          address[lane] = mma::swizzledOffset(m0 + at.row, k0 + at.col, cols);
        }
        expectConflictFree(("A " + where).c_str(), address);
        ldmatrixX4(sa, address, false, w.a);
        const auto aTile = subTile(a, cols, m0, k0, 16, 16);
        std::uint32_t want[32][4];
        loadHalves(want, encodeAll(aTile, gizml::exact::floatToBF16), 16, mma::fragmentA16x16);
        for (int lane = 0; lane < 32; ++lane)
          for (int r = 0; r < 4; ++r) EXPECT_EQ(w.a[lane][r], want[lane][r]) << "A " << where << " lane " << lane << " a" << r;

        // Bᵀ without .trans and V with .trans: registers 0, 1 are the B fragment of n 0-7, 2, 3 of n 8-15.
        std::uint32_t bRegs[32][4], vRegs[32][4];
        int bAddress[32], vAddress[32];
        for (int lane = 0; lane < 32; ++lane) {
          const RowCol nb = mma::ldmatrixAddressB(lane);
          bAddress[lane] = mma::swizzledOffset(nb.row, k0 + nb.col, cols);
          const RowCol kv = mma::ldmatrixTransAddressB(lane);
          vAddress[lane] = mma::swizzledOffset(k0 + kv.row, 16 + kv.col, 64);  // channels 16..31
        }
        expectConflictFree(("B " + where).c_str(), bAddress);
        expectConflictFree(("V " + where).c_str(), vAddress);
        ldmatrixX4(sbt, bAddress, false, bRegs);
        ldmatrixX4(sv, vAddress, true, vRegs);
        for (int half = 0; half < 2; ++half) {
          // B [16 k][8 n] of this n half, from Bᵀ; and from V.
          std::vector<int> bTile(16 * 8), vTile(16 * 8);
          for (int k = 0; k < 16; ++k)
            for (int n = 0; n < 8; ++n) {
              bTile[k * 8 + n] = bt[(8 * half + n) * cols + k0 + k];
              vTile[k * 8 + n] = v[(k0 + k) * 64 + 16 + 8 * half + n];
            }
          std::uint32_t wantB[32][2], wantV[32][2];
          loadHalves(wantB, encodeAll(bTile, gizml::exact::floatToBF16), 8, mma::fragmentB16x8);
          loadHalves(wantV, encodeAll(vTile, gizml::exact::floatToBF16), 8, mma::fragmentB16x8);
          for (int lane = 0; lane < 32; ++lane)
            for (int r = 0; r < 2; ++r) {
              EXPECT_EQ(bRegs[lane][2 * half + r], wantB[lane][r]) << "B " << where << " n half " << half << " lane " << lane;
              EXPECT_EQ(vRegs[lane][2 * half + r], wantV[lane][r]) << "V " << where << " n half " << half << " lane " << lane;
            }
          // ldmatrix then mma: the product of the loaded registers is the plain product.
          const std::vector<int> zero(16 * 8, 0);
          for (int useV = 0; useV < 2; ++useV) {
            Warp p = w;
            for (int lane = 0; lane < 32; ++lane)
              for (int r = 0; r < 2; ++r) p.b[lane][r] = (useV ? vRegs : bRegs)[lane][2 * half + r];
            loadC(p, zero);
            mma16816(p, bf16);
            expectProduct(useV ? "ldmatrix.trans then mma" : "ldmatrix then mma", p.c,
                          plainProduct(aTile, useV ? vTile : bTile, zero, 16, 8, 16));
          }
        }
      }
  }
}

TEST(MmaLayout, LdmatrixOfBytePairsGivesTheS8Fragments) {
  // A [16][64 bytes] and Bᵀ [16 n][64 bytes] as 16-bit pairs (32 columns, 4 chunks a row).
  const auto a = randomInts(Key{9, 4}, 16 * 64, -128, 127), bt = randomInts(Key{9, 5}, 16 * 64, -128, 127);
  auto pairs = [](const std::vector<int>& v) {
    std::vector<std::uint16_t> out(v.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<std::uint16_t>(static_cast<std::uint8_t>(v[2 * i]) | (static_cast<std::uint8_t>(v[2 * i + 1]) << 8));
    return out;
  };
  const auto sa = copyToShared(pairs(a), 16, 32, 64), sbt = copyToShared(pairs(bt), 16, 32, 64);
  for (int k0 = 0; k0 < 64; k0 += 32) {
    Warp w;
    int aAddress[32], bAddress[32];
    for (int lane = 0; lane < 32; ++lane) {
      const RowCol at = mma::ldmatrixAddressA(lane), nb = mma::ldmatrixAddressB(lane);
      aAddress[lane] = mma::swizzledOffset(at.row, k0 / 2 + at.col, 32);
      bAddress[lane] = mma::swizzledOffset(nb.row, k0 / 2 + nb.col, 32);
    }
    expectConflictFree("s8 A", aAddress);
    expectConflictFree("s8 B", bAddress);
    std::uint32_t bRegs[32][4];
    ldmatrixX4(sa, aAddress, false, w.a);
    ldmatrixX4(sbt, bAddress, false, bRegs);
    const auto aTile = subTile(a, 64, 0, k0, 16, 32);
    for (int half = 0; half < 2; ++half) {
      std::vector<int> bTile(32 * 8);
      for (int k = 0; k < 32; ++k)
        for (int n = 0; n < 8; ++n) bTile[k * 8 + n] = bt[(8 * half + n) * 64 + k0 + k];
      Warp p = w;
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < 2; ++r) p.b[lane][r] = bRegs[lane][2 * half + r];
      const std::vector<int> zero(16 * 8, 0);
      loadC(p, zero);
      mma16832s8(p);
      expectProduct("s8 ldmatrix then mma", p.ci, plainProduct(aTile, bTile, zero, 16, 8, 32));
    }
  }
}

TEST(MmaLayout, QuantizedPVFromAccumulatorsAndPermutedVTile) {
  // flash_quant_cuda.cu's P V: P [16][64 keys] as the S accumulators of 8 tiles of 16 x 8, turned
  // into two m16n8k32 A operands in place (accumulatorOfA16x32); V stored transposed, [16 channels]
  // [64 positions] E4M3 bytes, position pos holding key (pos's 32) + accumulatorColumnOfA16x32(pos %
  // 32) (as its codes kernel writes it), copied by the chunk map into a swizzled tile of 16-bit
  // pairs and read by ldmatrix at ldmatrixAddressB; two .e4m3 mma steps give P V exactly (integers
  // in [-8, 8] are exact in E4M3, the sums in F32). Break check (done once, by hand): V stored with
  // its keys in plain order (position pos holding key pos), 256 of the 256 output elements differ.
  const auto p = randomInts(Key{9, 11}, 16 * 64, -8, 8), v = randomInts(Key{9, 12}, 64 * 16, -8, 8);
  auto e4m3 = [](int x) { return gizml::exact::floatToE4M3(static_cast<float>(x)); };
  std::vector<std::uint16_t> vt(16 * 32);  // [channel][position pair]
  for (int ch = 0; ch < 16; ++ch)
    for (int pos = 0; pos < 64; ++pos) {
      const int key = (pos & ~31) + mma::accumulatorColumnOfA16x32(pos & 31);
      vt[ch * 32 + pos / 2] |= static_cast<std::uint16_t>(e4m3(v[key * 16 + ch]) << (8 * (pos % 2)));
    }
  const auto shared = copyToShared(vt, 16, 32, 128);
  Warp w[2];  // channels 0-7, 8-15
  for (int ks = 0; ks < 2; ++ks) {
    std::uint32_t a[32][4] = {};
    for (int lane = 0; lane < 32; ++lane)
      for (int reg = 0; reg < 4; ++reg)
        for (int byte = 0; byte < 4; ++byte) {
          const mma::TileAccumulator t = mma::accumulatorOfA16x32(reg, byte);
          const RowCol c = mma::fragmentC16x8(lane, t.i);  // the accumulator this lane holds
          a[lane][reg] |= static_cast<std::uint32_t>(e4m3(p[c.row * 64 + 32 * ks + 8 * t.tile + c.col])) << (8 * byte);
        }
    int address[32];
    for (int lane = 0; lane < 32; ++lane) {
      const RowCol at = mma::ldmatrixAddressB(lane);
      address[lane] = mma::swizzledOffset(at.row, 16 * ks + at.col, 32);
    }
    expectConflictFree("V tile", address);
    std::uint32_t regs[32][4];
    ldmatrixX4(shared, address, false, regs);
    for (int half = 0; half < 2; ++half) {
      std::memcpy(w[half].a, a, sizeof a);
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < 2; ++r) w[half].b[lane][r] = regs[lane][2 * half + r];
      mma16832e4m3(w[half]);
    }
  }
  for (int half = 0; half < 2; ++half)
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        const RowCol at = mma::fragmentC16x8(lane, i);
        std::int64_t want = 0;
        for (int key = 0; key < 64; ++key) want += p[at.row * 64 + key] * v[key * 16 + 8 * half + at.col];
        EXPECT_EQ(static_cast<std::int64_t>(w[half].c[lane][i]), want) << "row " << at.row << " channel " << 8 * half + at.col;
      }
}

TEST(MmaLayout, SwizzleIsAPermutationAndCopiesAreConflictFree) {
  for (int chunksPerRow : {1, 2, 4, 8, 16}) {
    const int cols = 8 * chunksPerRow, rows = 32;
    std::vector<int> hits(static_cast<std::size_t>(rows * cols), 0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const int at = mma::swizzledOffset(r, c, cols);
        ASSERT_TRUE(at >= r * cols && at < (r + 1) * cols) << "the swizzle stays within its row";
        EXPECT_EQ(++hits[at], 1) << chunksPerRow << " chunks a row: (" << r << ", " << c << ")";
      }
    // A copy's phase: 8 consecutive threads store 8 consecutive chunks, 128 bytes: one each bank group.
    for (int first = 0; first < rows * chunksPerRow; first += 8) {
      int used = 0;
      for (int t = first; t < first + 8; ++t) {
        const mma::Chunk c = mma::copyChunkOf(t, 0, 1 << 20, chunksPerRow);
        const int group = (mma::swizzledOffset(c.row, 8 * c.chunk, cols) / 8) % 8;
        EXPECT_EQ(used & (1 << group), 0) << chunksPerRow << " chunks a row: thread " << t << " conflicts";
        used |= 1 << group;
      }
    }
    // Reading one chunk column of 8 consecutive rows (an ldmatrix phase) is conflict-free too, for
    // rows of 2 chunks or more (1 chunk: 8 rows are one line, always conflict-free).
    for (int r0 = 0; r0 < rows; r0 += 8)
      for (int c = 0; c < chunksPerRow; ++c) {
        int used = 0;
        for (int r = r0; r < r0 + 8; ++r) {
          const int group = (mma::swizzledOffset(r, 8 * c, cols) / 8) % 8;
          EXPECT_EQ(used & (1 << group), 0) << chunksPerRow << " chunks a row: row " << r << " chunk " << c;
          used |= 1 << group;
        }
      }
  }
}

// ---- the same on the hardware ---------------------------------------------------------------------

/// Runs cudaMmaForTest on GPU 0 with host tiles a and b (bytes), returning D's 16 x 8 values as T;
/// false where the build has no such instruction for this GPU.
template <class T>
bool runOnGpu(gizml::detail::MmaForTest kind, const void* a, std::size_t aBytes, const void* b, std::size_t bBytes,
              std::vector<T>& d) {
  namespace detail = gizml::detail;
  const gizml::Gpu gpu = gizml::Gpu::open(0);
  const int dev = gpu.device.index;
  void* da = detail::cudaAllocate(dev, aBytes);
  void* db = detail::cudaAllocate(dev, bBytes);
  void* dd = detail::cudaAllocate(dev, 16 * 8 * sizeof(T));
  bool ran = false;
  try {
    detail::cudaCopy(da, gpu.device, a, gizml::Device::host(), aBytes);
    detail::cudaCopy(db, gpu.device, b, gizml::Device::host(), bBytes);
    ran = detail::cudaMmaForTest(gpu, kind, da, db, dd);
    d.assign(16 * 8, T{});
    if (ran) detail::cudaCopy(d.data(), gizml::Device::host(), dd, gpu.device, 16 * 8 * sizeof(T));
  } catch (...) {
    detail::cudaRelease(dev, da);
    detail::cudaRelease(dev, db);
    detail::cudaRelease(dev, dd);
    throw;
  }
  detail::cudaRelease(dev, da);
  detail::cudaRelease(dev, db);
  detail::cudaRelease(dev, dd);
  return ran;
}

template <class T>
void expectRowMajor(const char* name, const std::vector<T>& d, const std::vector<std::int64_t>& want) {
  for (int i = 0; i < 16 * 8; ++i)
    EXPECT_EQ(static_cast<std::int64_t>(d[i]), want[i]) << name << ": D(" << i / 8 << ", " << i % 8 << ")";
}

TEST(MmaLayoutCuda, RealInstructionsByTheMapsEqualThePlainProduct) {
  GIZML_NEED_GPU();
  using gizml::detail::MmaForTest;
  const std::vector<int> zero(16 * 8, 0);
  {
    const auto a = randomInts(Key{10, 1}, 16 * 16, -8, 8), b = randomInts(Key{10, 2}, 16 * 8, -8, 8);
    const auto a16 = encodeAll(a, gizml::exact::floatToBF16), b16 = encodeAll(b, gizml::exact::floatToBF16);
    const auto want = plainProduct(a, b, zero, 16, 8, 16);
    for (auto [kind, name] : {std::pair{MmaForTest::Bf16, "m16n8k16 bf16"},
                              std::pair{MmaForTest::Bf16Ldmatrix, "cp.async, ldmatrix.x4, m16n8k16"},
                              std::pair{MmaForTest::Bf16LdmatrixTrans, "cp.async, ldmatrix.x4.trans, m16n8k16"}}) {
      std::vector<float> d;
      ASSERT_TRUE(runOnGpu(kind, a16.data(), a16.size() * 2, b16.data(), b16.size() * 2, d)) << name;
      expectRowMajor(name, d, want);
    }
  }
  {
    const auto a = randomInts(Key{10, 3}, 16 * 32, -128, 127), b = randomInts(Key{10, 4}, 32 * 8, -128, 127);
    std::vector<std::uint8_t> a8(a.size()), b8(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) a8[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(a[i]));
    for (std::size_t i = 0; i < b.size(); ++i) b8[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(b[i]));
    std::vector<std::int32_t> d;
    ASSERT_TRUE(runOnGpu(MmaForTest::S8, a8.data(), a8.size(), b8.data(), b8.size(), d));
    expectRowMajor("m16n8k32 s8", d, plainProduct(a, b, zero, 16, 8, 32));
  }
  {
    const auto a = randomInts(Key{10, 5}, 16 * 32, -8, 8), b = randomInts(Key{10, 6}, 32 * 8, -8, 8);
    std::vector<std::uint8_t> a8(a.size()), b8(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) a8[i] = gizml::exact::floatToE4M3(static_cast<float>(a[i]));
    for (std::size_t i = 0; i < b.size(); ++i) b8[i] = gizml::exact::floatToE4M3(static_cast<float>(b[i]));
    std::vector<float> d;
    if (runOnGpu(MmaForTest::E4M3, a8.data(), a8.size(), b8.data(), b8.size(), d))
      expectRowMajor("m16n8k32 e4m3", d, plainProduct(a, b, zero, 16, 8, 32));
    else
      RecordProperty("e4m3", "not built for this GPU (needs sm_89 or later code)");
  }
}

}  // namespace
