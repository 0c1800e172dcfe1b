// Where each element of a matrix-core operand lives in a warp: the lane <-> element maps of
// mma.sync, ldmatrix and cp.async, as plain integer GIZML_HD functions. Kernels index their
// registers and shared memory only through these, and tests/mma_layout_test.cpp checks them on the
// host (a software warp runs mma and ldmatrix from them against a plain product), so a wrong index
// is found without a GPU.
//
// Each map cites the table of the PTX ISA it encodes, by title and anchor in
// https://docs.nvidia.com/cuda/parallel-thread-execution/ (the section numbers move between PTX
// versions: "Matrix Fragments for mma.m16n8k16 with floating point type" is 9.7.13.4.8 in PTX 8.0,
// 9.7.14.5.8 in 8.5). The tables name, for lane %laneid:
//   groupID = %laneid >> 2, threadID_in_group = %laneid % 4,
// and list a register's elements "low to high": element 0 of a .b32 register is its low 16 bits
// (two halves) or its low byte (four 8-bit values).
//
// Not only for exact ops: the matrix-core products are fast ops (SPEC §1), but where each value goes
// is integer bookkeeping with one right answer, shared by the GEMM and attention families.
#pragma once

#include "exact/hd.hpp"

namespace gizml::exact::mma {

/// An element of a tile: row and column (for B operands: row = k, column = n).
struct RowCol {
  int row, col;
};
/// Where an element lives in a warp: lane, register, and the element within the register (the
/// half, or the byte; 0 for one value a register).
struct Slot {
  int lane, reg, elem;
};

GIZML_HD int groupId(int lane) { return lane >> 2; }
GIZML_HD int threadInGroup(int lane) { return lane & 3; }

// ---- mma.sync.aligned.m16n8k16.row.col, .f16 / .bf16 operands, .f32 accumulators -------------------
// PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type"
// (#warp-level-matrix-fragment-mma-16816-f16), figures "MMA .m16n8k16 fragment layout for matrix A
// with .f16/.bf16 type", "... for matrix B ...", "... for accumulator matrix C/D with .f32 type".

/// A (16 x 16, row): four .f16x2 registers, element a_i with i = 2 reg + half:
///   row = groupID (+8 for a2, a3, a6, a7), col = 2 threadID_in_group + (i & 1) (+8 for i >= 4).
GIZML_HD RowCol fragmentA16x16(int lane, int reg, int half) {
  return {groupId(lane) + 8 * (reg & 1), 2 * threadInGroup(lane) + half + 8 * (reg >> 1)};
}
GIZML_HD Slot slotA16x16(int row, int col) {
  return {4 * (row & 7) + ((col & 7) >> 1), (row >> 3) + 2 * (col >> 3), col & 1};
}

/// B (16 x 8, col; row = k, col = n): two .f16x2 registers, element b_i with i = 2 reg + half:
///   row = 2 threadID_in_group + (i & 1) (+8 for i >= 2), col = groupID.
GIZML_HD RowCol fragmentB16x8(int lane, int reg, int half) {
  return {2 * threadInGroup(lane) + half + 8 * reg, groupId(lane)};
}
GIZML_HD Slot slotB16x8(int k, int n) { return {4 * n + ((k & 7) >> 1), k >> 3, k & 1}; }

/// C and D (16 x 8, .f32; the same for the .s32 / .f32 accumulators of m16n8k32): four values c_i:
///   row = groupID (+8 for c2, c3), col = 2 threadID_in_group + (i & 1).
GIZML_HD RowCol fragmentC16x8(int lane, int i) {
  return {groupId(lane) + 8 * (i >> 1), 2 * threadInGroup(lane) + (i & 1)};
}
GIZML_HD Slot slotC16x8(int row, int col) { return {4 * (row & 7) + (col >> 1), 2 * (row >> 3) + (col & 1), 0}; }

/// The accumulators of two adjacent 16 x 8 tiles (columns 0-7: tile 0, 8-15: tile 1) are, lane by
/// lane, the A operand of a 16 x 16 m16n8k16 product (flash attention's P of S = Q Kᵀ, fed to P V
/// without shared memory): half `half` of A register `reg` is accumulator `i` of tile `tile`, in the
/// same lane. tests/mma_layout_test.cpp checks it against fragmentA16x16 and fragmentC16x8.
struct TileAccumulator {
  int tile, i;
};
GIZML_HD TileAccumulator accumulatorOfA16x16(int reg, int half) { return {reg >> 1, 2 * (reg & 1) + half}; }

// ---- mma.sync.aligned.m16n8k32.row.col, 8-bit operands (.s8 / .u8 / .e4m3 / .e5m2) ----------------
// PTX ISA "Matrix Fragments for mma.m16n8k32" (#warp-level-matrix-fragment-mma-16832), figures
// "MMA .m16n8k32 fragment layout for matrix A with .u8/.s8/.e4m3/.e5m2 type" and "... matrix B ...";
// the accumulators are laid out as fragmentC16x8.

/// A (16 x 32, row): four .b32 registers of four bytes, element a_i with i = 4 reg + byte:
///   row = groupID (+8 for a4..a7, a12..a15), col = 4 threadID_in_group + (i & 3) (+16 for i >= 8).
GIZML_HD RowCol fragmentA16x32(int lane, int reg, int byte) {
  return {groupId(lane) + 8 * (reg & 1), 4 * threadInGroup(lane) + byte + 16 * (reg >> 1)};
}
GIZML_HD Slot slotA16x32(int row, int col) {
  return {4 * (row & 7) + ((col & 15) >> 2), (row >> 3) + 2 * (col >> 4), col & 3};
}

/// B (32 x 8, col; row = k, col = n): two .b32 registers of four bytes, element b_i, i = 4 reg + byte:
///   row = 4 threadID_in_group + (i & 3) (+16 for i >= 4), col = groupID.
GIZML_HD RowCol fragmentB32x8(int lane, int reg, int byte) {
  return {4 * threadInGroup(lane) + byte + 16 * reg, groupId(lane)};
}
GIZML_HD Slot slotB32x8(int k, int n) { return {4 * n + ((k & 15) >> 2), k >> 4, k & 3}; }

/// The accumulators of four adjacent 16 x 8 tiles (32 columns) as, lane by lane, the A operand of
/// an 8-bit m16n8k32 product (quantized flash attention's P, converted to E4M3 in place): byte
/// `byte` of A register `reg` is accumulator `i` of tile `tile`, in the same lane. Unlike the
/// 16-bit case the columns do not line up: a lane's C holds columns 2 t, 2 t + 1 (+8) of each tile,
/// its A bytes columns 4 t .. 4 t + 3 (t = threadID_in_group). So A's column `col` holds the
/// accumulators' column accumulatorColumnOfA16x32(col): the product is right when B's row `col` is
/// the one of that column too (the kernel stores V's keys so permuted, within each 16).
GIZML_HD TileAccumulator accumulatorOfA16x32(int reg, int byte) {
  return {2 * (reg >> 1) + (byte >> 1), 2 * (reg & 1) + (byte & 1)};
}
GIZML_HD int accumulatorColumnOfA16x32(int col) {
  const int r = col & 15;  // within a 16: position 4 t + byte holds column 2 t + (byte & 1) + 8 (byte >> 1)
  return (col & 16) + 8 * ((r >> 1) & 1) + 2 * (r >> 2) + (r & 1);
}

// ---- ldmatrix.sync.aligned.m8n8{.x4}{.trans}.shared.b16 ---------------------------------------------
// PTX ISA "Warp-level matrix load instruction: ldmatrix" (#warp-level-matrix-instructions-ldmatrix):
// the table of which threads hold the row addresses (.x4: threads 8 j .. 8 j + 7 give rows 0..7 of
// matrix j, each row 16 contiguous bytes, 16-byte aligned), and the figure "ldmatrix fragment layout
// for one 8x8 Matrix with 16-bit elements" (#mma-ldmatrix-fragments): "a group of four threads loads
// an entire row", so lane l receives row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix j in
// its register j. With .trans each matrix is transposed on the way: lane l receives column l / 4,
// rows 2 (l % 4) and 2 (l % 4) + 1 (as stored).

/// The matrix, and its row, whose address lane gives to ldmatrix .x4.
struct MatrixRow {
  int matrix, row;
};
GIZML_HD MatrixRow ldmatrixAddressOf(int lane) { return {lane >> 3, lane & 7}; }

/// The element (row, col of the 8 x 8 matrix as stored) that lane receives in half `half` of the
/// register of that matrix.
GIZML_HD RowCol ldmatrixElement(int lane, int half) { return {lane >> 2, 2 * (lane & 3) + half}; }
GIZML_HD RowCol ldmatrixTransElement(int lane, int half) { return {2 * (lane & 3) + half, lane >> 2}; }

// How a kernel aims one ldmatrix.x4 so that its 4 registers are mma fragments. Each function gives
// the (row, col) of the stored 16-bit tile (col in 16-bit elements, a multiple of 8) whose 16 bytes
// lane addresses; tests/mma_layout_test.cpp checks that the registers then equal the fragment maps.

/// The A operand of m16n8k16 from A [16][16] row-major: matrices (rows 0-7, cols 0-7), (8-15, 0-7),
/// (0-7, 8-15), (8-15, 8-15) are registers a0..a3. Also the A operand of m16n8k32 from A [16][32]
/// bytes, read as 16-bit pairs (col counts pairs): the 4 bytes of each register are then k-adjacent.
GIZML_HD RowCol ldmatrixAddressA(int lane) { return {(lane & 7) + 8 * ((lane >> 3) & 1), 8 * (lane >> 4)}; }

/// Two B operands of m16n8k16 (n 0-7 and n 8-15) from B stored as Bᵀ [16 n][16 k] row-major
/// (k contiguous), no .trans: registers 0, 1 are b0, b1 of n 0-7, registers 2, 3 those of n 8-15.
/// As for A, also two m16n8k32 B operands from Bᵀ [16 n][32 k] bytes.
GIZML_HD RowCol ldmatrixAddressB(int lane) { return {(lane & 7) + 8 * (lane >> 4), 8 * ((lane >> 3) & 1)}; }

/// Two B operands of m16n8k16 (n 0-7 and n 8-15) from B stored as [16 k][16 n] row-major (n
/// contiguous, as V is in P V), with .trans: registers as ldmatrixAddressB's. Returns (k, n).
GIZML_HD RowCol ldmatrixTransAddressB(int lane) { return {(lane & 7) + 8 * ((lane >> 3) & 1), 8 * (lane >> 4)}; }

// ---- cp.async.cg.shared.global [dst], [src], 16 ---------------------------------------------------
// PTX ISA "Data Movement and Conversion Instructions: cp.async"
// (#data-movement-and-conversion-instructions-cp-async): a copy of cp-size 16 bytes, both addresses
// 16-byte aligned. The instruction fixes no thread <-> data map; these functions are ours: a tile of
// `rows` x `chunksPerRow` 16-byte chunks (a row of 8 16-bit or 16 8-bit values a chunk), row-major
// in global memory, is copied by `threads` threads, thread t taking chunks t, t + threads, ...
// (consecutive threads, consecutive 16 bytes: coalesced).

/// Which chunk (row, chunk within the row) thread `thread` copies at its step `step`.
struct Chunk {
  int row, chunk;
};
GIZML_HD Chunk copyChunkOf(int thread, int step, int threads, int chunksPerRow) {
  const int c = thread + step * threads;
  return {c / chunksPerRow, c % chunksPerRow};
}

/// The XOR swizzle of a tile in shared memory: chunk `chunk` of row `row` is stored at chunk
/// swizzledChunk(...) of that row (chunksPerRow a power of two). Shared memory has 32 banks of 4
/// bytes, so a 128-byte line holds 8 chunks; an ldmatrix phase reads one chunk of 8 consecutive
/// rows, and a plain row-major tile with rows of 128 bytes or more puts them all on the same 4
/// banks (8-way conflict). XOR-ing the chunk with the row's index among the lines (rows / line,
/// mod 8) spreads any 8 consecutive rows over the 8 chunk positions of a line; a copy's 8
/// consecutive chunks stay within one line, permuted, so the stores are conflict-free too.
/// Rows shorter than a line (4, 2 chunks) share a line: the XOR then takes the line's index.
GIZML_HD int swizzledChunk(int row, int chunk, int chunksPerRow) {
  const int rowsPerLine = chunksPerRow >= 8 ? 1 : 8 / chunksPerRow;
  const int span = chunksPerRow >= 8 ? 8 : chunksPerRow;  // the chunk bits the XOR may touch
  return chunk ^ ((row / rowsPerLine) & (span - 1));
}

/// Where element (row, col) of a tile of 16-bit values with `cols` columns (a multiple of 8) lies in
/// its swizzled shared-memory copy, in elements.
GIZML_HD int swizzledOffset(int row, int col, int cols) {
  const int chunks = cols / 8;
  return row * cols + 8 * swizzledChunk(row, col / 8, chunks) + col % 8;
}

}  // namespace gizml::exact::mma
