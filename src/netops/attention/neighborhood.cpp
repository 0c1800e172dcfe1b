// neighborhood3d on the host: each query's box of keys (the product of its three windows, in
// (t, h, w) raster order) as a list of rows, then the tile of host_tile.hpp with that one query
// (packing the box's keys by blocks of 16 as it scores them, several blocks at once), so the
// steps are `attention`'s. OpenMP over (head, query). The windows are neighborhood_window.hpp's,
// which the GPU's fast path (BF16 flash attention over the box of keys each tile of 64 queries sees,
// flash_cuda.cu) shares.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "gizml/netops/attention.hpp"
#include "netops/attention/attention.hpp"
#include "netops/attention/flash.hpp"
#include "netops/attention/host_tile.hpp"
#include "netops/attention/neighborhood_window.hpp"

namespace gizml::netops {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

/// The fast GPU path (SPEC "neighborhood3d", BF16): q, k and v of qkv into BF16 panels (as
/// attentionRows'), then the flash kernel over each tile's box of keys, into a new F32 out.
Tensor fastGpuPath(const char* fn, const Tensor& qkv, const std::vector<std::int64_t>& grid,
                   const std::vector<std::int64_t>& kernel, std::int64_t heads, std::int64_t head, double scale) {
  if (head > attn::kFlashMaxHead)
    fail(fn, "heads",
         "the fast GPU path runs a head (qkv's width / (3 heads)) of at most " + str(attn::kFlashMaxHead) + ", got head " +
             str(head));
  const std::int64_t rows = qkv.dim(0);
  // The kernel keeps positions within a box in 32 bits.
  if (rows >= (std::int64_t{1} << 31))
    fail(fn, "qkv", "the fast GPU path runs grids of fewer than 2^31 cells, got " + str(rows));
  const std::int64_t dPad = attn::flashPaddedHead(head);
  const Tensor panels = Tensor::empty({detail::checkedMul(fn, "qkv", 3 * heads * dPad, rows)}, DType::BF16, qkv.device());
  Tensor out = Tensor::empty({rows, heads * head}, DType::F32, qkv.device());
  auto* p = static_cast<std::uint16_t*>(panels.raw());
  const std::int64_t part = heads * rows * dPad;  // one of q, k, v for all heads
  const attn::FlashPack pack{.src = qkv.raw(),
                             .srcBF16 = qkv.dtype() == DType::BF16,
                             .panels = p,
                             .rows = rows,
                             .units = 3 * heads,
                             .head = head,
                             .dPad = dPad,
                             .rowStride = 3 * heads * head};
  const attn::FlashParams run{.q = p,
                              .k = p + part,
                              .v = p + 2 * part,
                              .qHead = rows * dPad,
                              .kvHead = rows * dPad,
                              .out = out.raw(),
                              .outBF16 = false,
                              .heads = heads,
                              .head = head,
                              .dPad = dPad,
                              .queries = rows,
                              .qGroup = rows,
                              .kGroup = 0,
                              .grid = {{grid[0], grid[1], grid[2]}, {kernel[0], kernel[1], kernel[2]}},
                              .scale = static_cast<float>(scale)};
#if GIZML_HAS_CUDA
  attn::flashPack(detail::gpuOf(qkv), fn, pack);
  attn::flashRun(detail::gpuOf(qkv), fn, attn::FlashKeys::Neighborhood, run);
#else
  (void)pack;
  (void)run;
  detail::noCuda(fn);
#endif
  return out;
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
  if (!qkv.device().isHost()) return fastGpuPath(fn, qkv, grid, kernel, heads, head, scale);

  Tensor out = Tensor::empty({rows, heads * head});
  const std::int64_t T = grid[0], H = grid[1], W = grid[2];
  const attn::Grid3 g3{{T, H, W}, {kernel[0], kernel[1], kernel[2]}};
  const std::int64_t boxMost =
      attn::windowLength(T, kernel[0]) * attn::windowLength(H, kernel[1]) * attn::windowLength(W, kernel[2]);
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
      const attn::Box3 b = attn::queryBox(g3, r);
      const attn::Window wt = b.axis[0], wh = b.axis[1], ww = b.axis[2];
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
