// The attention family on the host: causalMask, and `attention` (its checks, output, dispatch by
// device, and the host path: keys packed by blocks of 16, then OpenMP over (batch item, tile of
// queries), each tile by host_tile.hpp). It equals tests/reference/attention_reference.cpp bit for
// bit, for any thread count and batch.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "gizml/netops/attention.hpp"
#include "netops/attention/attention.hpp"
#include "netops/attention/host_tile.hpp"

namespace gizml::netops {

namespace attn {

namespace {

/// Query tiles of items x tq queries: tile t is queries [kTile (t % perItem), ...) of item t / perItem.
/// packed: the keys packed by blocks, or null when each item is one tile (it packs its own).
template <bool Dropout>
void attendAll(const Attention::Args& a, const float* packed, std::int64_t blocks) {
  const std::int64_t perItem = (a.tq + kTile - 1) / kTile, tiles = a.items * perItem;
  const std::int64_t blockFloats = a.d * kBlock;
#pragma omp parallel
  {
    const std::int64_t ePad = paddedChannels(a.e);
    std::vector<float> acc(static_cast<std::size_t>(kTile * ePad)), qT(static_cast<std::size_t>(kTile * a.d + 1));
    std::vector<float> keys(packed ? 1 : static_cast<std::size_t>(kTile * blockFloats + 1), 0.0f);
    auto scratch = std::make_unique<TileScratch>();
    scratch->ePad = ePad;
    scratch->acc = acc.data();
    scratch->qT = qT.data();
    scratch->keys = keys.data();
    // Causal tiles differ in work: hand them out as threads free up (no bit depends on who runs one).
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t tile = 0; tile < tiles; ++tile) {
      const std::int64_t item = tile / perItem, i0 = (tile % perItem) * kTile;
      const float* kBase = a.k + itemOffset(a.lk, item, a.inner);
      const float* vBase = a.v + itemOffset(a.lv, item, a.inner);
      const std::int64_t kStride = a.lk.row, vStride = a.lv.row;
      auto kRow = [kBase, kStride](std::int64_t j) { return kBase + j * kStride; };
      auto vRow = [vBase, vStride](std::int64_t j) { return vBase + j * vStride; };
      Tile<decltype(kRow), decltype(vRow)> t{.q = {},
                                             .out = {},
                                             .visible = {},
                                             .nq = static_cast<int>(std::min<std::int64_t>(kTile, a.tq - i0)),
                                             .keys = packed ? packed + item * blocks * blockFloats : nullptr,
                                             .kRow = kRow,
                                             .vRow = vRow,
                                             .d = a.d,
                                             .e = a.e,
                                             .scale = a.scale,
                                             .rate = a.rate,
                                             .keepScale = a.keepScale,
                                             .k0 = a.k0,
                                             .k1 = a.k1,
                                             .item = item,
                                             .i0 = i0,
                                             .tq = a.tq,
                                             .tk = a.tk};
      const float* qBase = a.q + itemOffset(a.lq, item, a.inner);
      float* outBase = a.out + itemOffset(a.lout, item, a.inner);
      for (int qi = 0; qi < kTile; ++qi) {
        const std::int64_t i = i0 + std::min<std::int64_t>(qi, t.nq - 1);  // past nq: a real row, unused
        t.q[qi] = qBase + i * a.lq.row;
        t.out[qi] = outBase + i * a.lout.row;
        t.visible[qi] = qi < t.nq ? visibleKeys(i, a.tq, a.tk, a.causal) : 0;
      }
      attendTile<Dropout>(t, *scratch);
    }
  }
}

}  // namespace

void Attention::host(const Args& a) {
  if (a.items == 0 || a.tq == 0) return;
  const std::int64_t blocks = (a.tk + kBlock - 1) / kBlock, blockFloats = a.d * kBlock;
  if (a.tq <= kTile) {
    // One tile an item (a decoder's step): it packs its keys as it reads them.
    if (a.rate > 0.0f) attendAll<true>(a, nullptr, blocks);
    else attendAll<false>(a, nullptr, blocks);
    return;
  }
  // Keys transposed by blocks of 16, once for all the tiles of an item, with kTile blocks of
  // slack (zeros) after the last: a tile scores up to kTile blocks at once.
  const std::int64_t used = a.items * blocks * blockFloats;
  Tensor packed = Tensor::empty({used + kTile * blockFloats + 1});
  float* kp = packed.data<float>();
  std::memset(kp + used, 0, sizeof(float) * static_cast<std::size_t>(kTile * blockFloats + 1));
#pragma omp parallel for schedule(static)
  for (std::int64_t ib = 0; ib < a.items * blocks; ++ib) {
    const float* kBase = a.k + itemOffset(a.lk, ib / blocks, a.inner);
    const std::int64_t stride = a.lk.row;
    packKeyBlock([kBase, stride](std::int64_t j) { return kBase + j * stride; }, ib % blocks, a.tk, a.d,
                 kp + ib * blockFloats);
  }
  if (a.rate > 0.0f) attendAll<true>(a, kp, blocks);
  else attendAll<false>(a, kp, blocks);
}

}  // namespace attn

// ---- the ops ---------------------------------------------------------------------------------------------

Tensor causalMask(std::int64_t tq, std::int64_t tk) {
  const char* fn = "gizml::netops::causalMask";
  detail::requireAtLeast(fn, "tq", tq, 0);
  detail::requireAtLeast(fn, "tk", tk, 0);
  detail::checkedMul(fn, "tk", tq, tk);
  Tensor mask = Tensor::empty({tq, tk}, DType::F32, Device::host());
  float* m = mask.data<float>();
  const float negInf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j) m[i * tk + j] = j <= i + tk - tq ? 0.0f : negInf;
  return mask;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal, double rate, Key key) {
  const char* fn = "gizml::netops::attention";
  for (auto [name, t] : {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v}}) {
    detail::requireDType(fn, name, *t, DType::F32);
    detail::requireRank(fn, name, *t, 3);
  }
  detail::requireSameDevice(fn, {{"q", &q}, {"k", &k}, {"v", &v}});
  const std::int64_t b = q.dim(0), tq = q.dim(1), d = q.dim(2), tk = k.dim(1), e = v.dim(2);
  detail::requireShape(fn, "k", k, {b, tk, d});
  detail::requireShape(fn, "v", v, {b, tk, e});
  if (!(rate >= 0.0 && rate < 1.0)) fail(fn, "rate", "expected rate in [0, 1), got " + std::to_string(rate));
  Tensor out = Tensor::empty({b, tq, e}, DType::F32, q.device());
  attn::Attention::Args a{.q = q.data<float>(),
                               .k = k.data<float>(),
                               .v = v.data<float>(),
                               .out = out.data<float>(),
                               .lq = {tq * d, 0, d},
                               .lk = {tk * d, 0, d},
                               .lv = {tk * e, 0, e},
                               .lout = {tq * e, 0, e},
                               .items = b,
                               .inner = 1,
                               .tq = tq,
                               .tk = tk,
                               .d = d,
                               .e = e,
                               .scale = static_cast<float>(scale),
                               .causal = causal,
                               .rate = static_cast<float>(rate),
                               .keepScale = static_cast<float>(1.0 / (1.0 - rate)),
                               .k0 = key.k0,
                               .k1 = key.k1};
  if (out.numel() > 0) detail::run<attn::Attention>(detail::gpuOf(q), a);
  return out;
}

}  // namespace gizml::netops
