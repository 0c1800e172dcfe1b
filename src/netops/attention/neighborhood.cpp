// neighborhood3d on the host: each query's box of keys (the product of its three windows, in
// (t, h, w) raster order) as a list of rows, then the tile of host_tile.hpp with that one query
// (packing the box's keys by blocks of 16 as it scores them, several blocks at once), so the
// steps are `attention`'s. OpenMP over (head, query). On a GPU this is the fast BF16 path, not built yet (a gizml::Error).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/sizes.hpp"
#include "gizml/netops/attention.hpp"
#include "netops/attention/attention.hpp"
#include "netops/attention/host_tile.hpp"

namespace gizml::netops {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

/// Along an axis of length L with kernel k: k' = min(k, L), the window [s, s + k') of position i.
struct Window {
  std::int64_t start, length;
};
Window windowOf(std::int64_t i, std::int64_t axis, std::int64_t kernel) {
  const std::int64_t k = std::min(kernel, axis);
  return {std::clamp<std::int64_t>(i - k / 2, 0, axis - k), k};
}

}  // namespace

Tensor neighborhood3d(const Tensor& qkv, const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& kernel,
                      std::int64_t heads, double scale) {
  const char* fn = "gizml::netops::neighborhood3d";
  detail::requireDefined(fn, "qkv", qkv);
  if (qkv.dtype() != DType::F32 && !(qkv.dtype() == DType::BF16 && !qkv.device().isHost()))
    fail(fn, "qkv", "expected dtype F32 (BF16 on a GPU), got " + dtypeName(qkv.dtype()));
  detail::requireRank(fn, "qkv", qkv, 2);
  detail::requireAtLeast(fn, "heads", heads, 1);
  const std::int64_t rows = qkv.dim(0), width = qkv.dim(1);
  if (width % (3 * heads) != 0 || width == 0)
    fail(fn, "heads", "expected rows of 3 heads head values, heads " + str(heads) + " dividing them; got qkv of shape " +
                          shapeString(qkv.shape()));
  const std::int64_t head = width / (3 * heads);
  if (grid.size() != 3) fail(fn, "grid", "expected 3 extents [T, H, W], got " + str(static_cast<std::int64_t>(grid.size())));
  std::int64_t cells = 1;
  for (std::int64_t g : grid) {
    detail::requireAtLeast(fn, "grid", g, 1);
    cells = detail::checkedMul(fn, "grid", cells, g);
  }
  if (cells != rows)
    fail(fn, "grid", "expected T H W = the rows of qkv (" + str(rows) + "), got " + str(cells));
  if (kernel.size() != 3)
    fail(fn, "kernel", "expected 3 extents [kt, kh, kw], got " + str(static_cast<std::int64_t>(kernel.size())));
  for (std::int64_t k : kernel)
    if (k < 1 || k % 2 == 0) fail(fn, "kernel", "expected odd extents >= 1, got " + str(k));
  if (!qkv.device().isHost())
    fail(fn, "qkv",
         "the fast GPU path (BF16 flash attention over each tile's box of keys) is not built yet; run this on host "
         "tensors");

  Tensor out = Tensor::empty({rows, heads * head});
  const std::int64_t T = grid[0], H = grid[1], W = grid[2];
  const std::int64_t boxMost = std::min(kernel[0], T) * std::min(kernel[1], H) * std::min(kernel[2], W);
  const std::int64_t stride = 3 * heads * head;
  const float* x = qkv.data<float>();
  float* o = out.data<float>();
  const float scale32 = static_cast<float>(scale);
#pragma omp parallel
  {
    std::vector<std::int64_t> box(static_cast<std::size_t>(boxMost));
    std::vector<float> keys(static_cast<std::size_t>(attn::kTile * head * attn::kBlock), 0.0f);
    std::vector<float> acc(static_cast<std::size_t>(attn::kTile * attn::paddedChannels(head)));
    std::vector<float> qT(static_cast<std::size_t>(attn::kTile * head));
    auto scratch = std::make_unique<attn::TileScratch>();
    scratch->ePad = attn::paddedChannels(head);
    scratch->acc = acc.data();
    scratch->qT = qT.data();
    scratch->keys = keys.data();
#pragma omp for schedule(static)
    for (std::int64_t item = 0; item < heads * rows; ++item) {
      const std::int64_t h = item / rows, r = item % rows;
      const Window wt = windowOf(r / (H * W), T, kernel[0]), wh = windowOf(r / W % H, H, kernel[1]),
                   ww = windowOf(r % W, W, kernel[2]);
      std::int64_t n = 0;
      for (std::int64_t t = wt.start; t < wt.start + wt.length; ++t)
        for (std::int64_t y = wh.start; y < wh.start + wh.length; ++y)
          for (std::int64_t z = ww.start; z < ww.start + ww.length; ++z) box[n++] = (t * H + y) * W + z;
      // The tile packs the box's keys by blocks as it scores them.
      const float* kBase = x + heads * head + h * head;
      const float* vBase = x + 2 * heads * head + h * head;
      const std::int64_t* keyRows = box.data();
      auto kRow = [=](std::int64_t j) { return kBase + keyRows[j] * stride; };
      auto vRow = [=](std::int64_t j) { return vBase + keyRows[j] * stride; };
      attn::Tile<decltype(kRow), decltype(vRow)> tile{.q = {},
                                                      .out = {},
                                                      .visible = {},
                                                      .nq = 1,
                                                      .keys = nullptr,
                                                      .kRow = kRow,
                                                      .vRow = vRow,
                                                      .d = head,
                                                      .e = head,
                                                      .scale = scale32,
                                                      .rate = 0.0f,
                                                      .keepScale = 1.0f,
                                                      .k0 = 0,
                                                      .k1 = 0,
                                                      .item = 0,
                                                      .i0 = 0,
                                                      .tq = 1,
                                                      .tk = n};
      for (int qi = 0; qi < attn::kTile; ++qi) {
        tile.q[qi] = x + r * stride + h * head;
        tile.out[qi] = o + r * heads * head + h * head;
        tile.visible[qi] = qi == 0 ? n : 0;
      }
      attn::attendTile<false>(tile, *scratch);
    }
  }
  return out;
}

}  // namespace gizml::netops
