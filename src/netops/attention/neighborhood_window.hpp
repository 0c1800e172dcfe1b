// neighborhood3d's windows (SPEC §3 "Attention"), written once (GIZML_HD) for the host op
// (neighborhood.cpp), the GPU's flash kernel (flash_cuda.cu) and the host emulation of that kernel's
// tile loop (tests/flash_step_test.cpp).
//
// Along an axis of length L with odd kernel k: k' = min(k, L), and position i sees the window
// [s, s + k') with s = clamp(i - k' / 2, 0, L - k'). A query (t, h, w) sees the box that is the
// product of its three windows, in (t, h, w) raster order.
//
// The flash kernel takes 64 consecutive queries (raster order) a tile and runs over one box of keys
// for all of them: the smallest box holding every query's window. Because s never decreases as i
// grows (and the window's length k' is the same for every i), the windows of a set of positions are
// covered by [s(lowest), s(highest) + k'), and no smaller range covers the two extreme windows. So
// the tile's box is, per axis, that range over the lowest and highest position the tile's queries
// take on the axis: along t the first and last query's frames; along h the first and last query's
// rows when they share a frame, else all of 0 .. H - 1 (the first frame holds row H - 1, the last
// row 0); along w likewise with (frame, row) lines. Each query's own keys are then a sub-box of the
// tile's box, met in the same relative (raster) order, so masking the others leaves its SPEC order.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"

namespace gizml::netops::attn {

/// A range of positions along one axis: [start, start + length).
struct Window {
  std::int64_t start, length;
};

/// The length of every window along an axis of length `axis` with kernel `kernel`: k' = min(k, L).
GIZML_HD std::int64_t windowLength(std::int64_t axis, std::int64_t kernel) { return kernel < axis ? kernel : axis; }

/// The window of position i along an axis of length `axis` with odd kernel `kernel` (SPEC).
GIZML_HD Window windowOf(std::int64_t i, std::int64_t axis, std::int64_t kernel) {
  const std::int64_t k = windowLength(axis, kernel);
  const std::int64_t s = i - k / 2, last = axis - k;
  return {s < 0 ? 0 : s > last ? last : s, k};
}

GIZML_HD bool inWindow(const Window& w, std::int64_t j) { return j >= w.start && j < w.start + w.length; }

/// A grid's extents [T, H, W] and a kernel's [kt, kh, kw].
struct Grid3 {
  std::int64_t extent[3], kernel[3];
};

/// A position (t, h, w) of the grid, from its raster index.
struct Pos3 {
  std::int64_t at[3];
};
GIZML_HD Pos3 positionOf(const Grid3& g, std::int64_t row) {
  return {{row / (g.extent[1] * g.extent[2]), row / g.extent[2] % g.extent[1], row % g.extent[2]}};
}

/// A box of keys: per axis a range (a query's three windows, or a tile's box).
struct Box3 {
  Window axis[3];
};

/// The box a query (by raster row) sees.
GIZML_HD Box3 queryBox(const Grid3& g, std::int64_t row) {
  const Pos3 p = positionOf(g, row);
  return {{windowOf(p.at[0], g.extent[0], g.kernel[0]), windowOf(p.at[1], g.extent[1], g.kernel[1]),
           windowOf(p.at[2], g.extent[2], g.kernel[2])}};
}

/// Whether a key at position p lies in the box.
GIZML_HD bool inBox(const Box3& b, const Pos3& p) {
  return inWindow(b.axis[0], p.at[0]) && inWindow(b.axis[1], p.at[1]) && inWindow(b.axis[2], p.at[2]);
}

/// The number of keys of a box.
GIZML_HD std::int64_t boxSize(const Box3& b) { return b.axis[0].length * b.axis[1].length * b.axis[2].length; }

/// The smallest box holding the windows of the queries [first, first + count) (count >= 1), see the
/// top of this file.
GIZML_HD Box3 tileBox(const Grid3& g, std::int64_t first, std::int64_t count) {
  const std::int64_t last = first + count - 1;
  const Pos3 a = positionOf(g, first), z = positionOf(g, last);
  std::int64_t lo[3] = {a.at[0], a.at[1], a.at[2]}, hi[3] = {z.at[0], z.at[1], z.at[2]};
  const std::int64_t hw = g.extent[1] * g.extent[2];
  if (first / hw != last / hw) {  // more than one frame: rows 0 .. H - 1 are all taken
    lo[1] = 0;
    hi[1] = g.extent[1] - 1;
  }
  if (first / g.extent[2] != last / g.extent[2]) {  // more than one line: columns 0 .. W - 1
    lo[2] = 0;
    hi[2] = g.extent[2] - 1;
  }
  Box3 b{};
  for (int d = 0; d < 3; ++d) {
    const Window low = windowOf(lo[d], g.extent[d], g.kernel[d]), high = windowOf(hi[d], g.extent[d], g.kernel[d]);
    b.axis[d] = {low.start, high.start + high.length - low.start};
  }
  return b;
}

/// Key j (0 <= j < boxSize) of a box whose lines hold `line` keys and frames `lines` lines, keys in
/// raster order: its offsets from the box's start, per axis. Templated on the integer type: the
/// kernel passes 32 bits (its caller checks the grid's rows below 2^31), which divide faster.
template <class I>
GIZML_HD void boxOffsets(I j, I line, I lines, I (&at)[3]) {
  const I inFrame = j % (line * lines);
  at[0] = j / (line * lines);
  at[1] = inFrame / line;
  at[2] = inFrame % line;
}

/// The position of key j of a box.
GIZML_HD Pos3 boxKey(const Box3& b, std::int64_t j) {
  std::int64_t at[3];
  boxOffsets(j, b.axis[2].length, b.axis[1].length, at);
  return {{b.axis[0].start + at[0], b.axis[1].start + at[1], b.axis[2].start + at[2]}};
}

/// Whether a key `offset` from the box's start along an axis lies in a window that starts `start`
/// from the box's start and holds `length` positions (offsets as the kernel keeps them, 32 bits).
GIZML_HD bool windowHoldsOffset(int start, int length, int offset) {
  return static_cast<unsigned>(offset) - static_cast<unsigned>(start) < static_cast<unsigned>(length);  // wraps below start
}

/// A query's window starts as offsets from the box's start (32 bits), for windowsHoldOffsets. A
/// query row past the tile's queries (`real` false) gets, along w, the box's extent, which no key
/// offset reaches, so it sees no key.
GIZML_HD void windowOffsets(const Grid3& g, const Box3& box, std::int64_t query, bool real, int (&start)[3]) {
  const Box3 own = queryBox(g, query);
  for (int d = 0; d < 3; ++d) start[d] = static_cast<int>(own.axis[d].start - box.axis[d].start);
  if (!real) start[2] = static_cast<int>(box.axis[2].length);
}

/// Whether the key at offsets `at` (boxOffsets) lies in the query's windows (windowOffsets): the
/// kernel's mask of a key of the box that is not past its end.
GIZML_HD bool windowsHoldOffsets(const Grid3& g, const int (&start)[3], const unsigned (&at)[3]) {
  bool held = true;
  for (int d = 0; d < 3; ++d)
    held = held && windowHoldsOffset(start[d], static_cast<int>(windowLength(g.extent[d], g.kernel[d])),
                                     static_cast<int>(at[d]));
  return held;
}

/// The raster row of a position.
GIZML_HD std::int64_t rowOf(const Grid3& g, const Pos3& p) {
  return (p.at[0] * g.extent[1] + p.at[1]) * g.extent[2] + p.at[2];
}

}  // namespace gizml::netops::attn
