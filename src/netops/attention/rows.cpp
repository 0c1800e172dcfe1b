// Attention among a transformer's packed rows (qkv [rows, 3 heads head]): headPrepInPlace (host and
// GPU, the row function of attention.hpp), and attendedRows / attentionRows, exact on the host:
// the one host attention (host.cpp) over items (group, head) laid out in qkv, no copy of q, k or v
// (a copy of qkv only when a HeadPrep must change q and k). On a GPU those two are the fast
// matrix-core path (flash.hpp, flash_cuda.cu): prep on a copy, q, k, v packed into BF16 panels,
// flash attention on BF16 matrix cores; with `quantized`, where the GPU has FP8 matrix cores and the
// head is 64 or 128, SageAttention2's INT8 / E4M3 split instead (flash_quant.hpp, sage_quant.hpp).
// crossAttentionRows: exact on the host (the same host attention, keys and values from kv), on a
// GPU the same flash kernel with one group whose queries come from q and whose keys and values
// come from kv.
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "exact/row16.hpp"
#include "gizml/netops/attention.hpp"
#include "netops/attention/attention.hpp"
#include "netops/attention/flash.hpp"
#include "netops/attention/flash_quant.hpp"
#include "netops/attention/sage_quant.hpp"

namespace gizml::netops {

namespace attn {
void HeadPrepRows::host(const Args& a) { exact::hostRows<HeadPrepRows>(a); }
#if !GIZML_HAS_CUDA
// A build without CUDA has no FP8 kernel (flash_quant_cuda.cu defines this where there is one).
bool SageRows::available(const Gpu&) { return false; }
#endif
}  // namespace attn

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

/// heads, head >= 1 and qkv [rows, 3 heads head] of `dtype`s allowed; returns rows.
std::int64_t checkPacked(const char* fn, const Tensor& qkv, std::int64_t heads, std::int64_t head, bool bf16Allowed) {
  detail::requireDefined(fn, "qkv", qkv);
  if (qkv.dtype() != DType::F32 && !(bf16Allowed && qkv.dtype() == DType::BF16))
    fail(fn, "qkv", std::string("expected dtype F32") + (bf16Allowed ? " or BF16" : "") + ", got " + dtypeName(qkv.dtype()));
  detail::requireRank(fn, "qkv", qkv, 2);
  detail::requireAtLeast(fn, "heads", heads, 1);
  detail::requireAtLeast(fn, "head", head, 1);
  const std::int64_t width = detail::checkedMul(fn, "head", detail::checkedMul(fn, "heads", 3, heads), head);
  if (qkv.dim(1) != width)
    fail(fn, "head", "expected rows of 3 heads head = " + str(width) + " values (heads " + str(heads) + ", head " +
                         str(head) + "), got qkv of shape " + shapeString(qkv.shape()));
  return qkv.dim(0);
}

/// A HeadPrep for heads of `head` on `device`, whose cos / sin cover rows [0, rowsNeeded); returns half.
std::int64_t checkPrep(const char* fn, const HeadPrep& p, std::int64_t head, std::int64_t rowsNeeded, Device device) {
  detail::requireVector(fn, "prep.qw", p.qw, head);
  detail::requireVector(fn, "prep.kw", p.kw, head);
  for (auto [name, t] : {std::pair<const char*, const Tensor*>{"prep.qw", &p.qw}, {"prep.kw", &p.kw}})
    if (t->device() != device) fail(fn, name, "expected a tensor on " + device.name() + ", got " + t->device().name());
  detail::checkedEps(fn, p.eps);
  if (!p.cos.defined() && !p.sin.defined()) return 0;
  for (auto [name, t] : {std::pair<const char*, const Tensor*>{"prep.cos", &p.cos}, {"prep.sin", &p.sin}}) {
    detail::requireDType(fn, name, *t, DType::F32);
    detail::requireRank(fn, name, *t, 2);
    if (t->device() != device) fail(fn, name, "expected a tensor on " + device.name() + ", got " + t->device().name());
  }
  detail::requireShape(fn, "prep.sin", p.sin, p.cos.shape());
  const std::int64_t half = p.cos.dim(1);
  if (2 * half > head) fail(fn, "prep.cos", "expected [rows, half] with 2 half <= head = " + str(head) + ", got " + shapeString(p.cos.shape()));
  if (half > 0 && p.cos.dim(0) < rowsNeeded)
    fail(fn, "prep.cos", "expected at least " + str(rowsNeeded) + " rows, got " + shapeString(p.cos.shape()));
  return half;
}

attn::HeadPrepRows::Args prepArgs(const Tensor& qkv, std::int64_t n, std::int64_t heads, std::int64_t head,
                                  const HeadPrep& p, std::int64_t half, std::int64_t row0) {
  return {.qkv = qkv.raw(),
          .bf16 = qkv.dtype() == DType::BF16,
          .rows = n * 2 * heads,
          .n = head,
          .heads = heads,
          .stride = 3 * heads * head,
          .half = half,
          .row0 = row0,
          .qw = p.qw.data<float>(),
          .kw = p.kw.data<float>(),
          .cos = half > 0 ? p.cos.data<float>() : nullptr,
          .sin = half > 0 ? p.sin.data<float>() : nullptr,
          .eps = static_cast<float>(p.eps)};
}

/// The checked arguments of attendedRows / attentionRows: rows, the group size, the output rows.
struct PackedShape {
  std::int64_t rows, group, outRows;
};

PackedShape checkAttended(const char* fn, const Tensor& qkv, std::int64_t heads, std::int64_t head, std::int64_t group,
                          const std::vector<HeadPrep>& prep, std::int64_t queries) {
  // BF16 rows are the GPU's (its fast path reads BF16 anyway); the host's are F32.
  const std::int64_t rows = checkPacked(fn, qkv, heads, head, qkv.defined() && !qkv.device().isHost());
  detail::requireAtLeast(fn, "group", group, 0);
  const std::int64_t g = group == 0 ? rows : group;
  if (g > 0 && rows % g != 0)
    fail(fn, "group", "expected a group size that divides the rows (" + str(rows) + "), got " + str(group));
  detail::requireAtLeast(fn, "queries", queries, 0);
  if (queries > rows) fail(fn, "queries", "expected queries <= rows (" + str(rows) + "), got " + str(queries));
  if (prep.size() > 1) fail(fn, "prep", "expected at most one HeadPrep, got " + str(static_cast<std::int64_t>(prep.size())));
  if (!prep.empty()) checkPrep(fn, prep[0], head, rows, qkv.device());
  return {rows, g, queries > 0 ? queries : rows};
}

/// The quantized path (SPEC "attentionRows", quantized): src (prep applied) into out through
/// workspace buffers of INT8 / E4M3 codes and their scales (flash_quant.hpp), on qkv's GPU.
void quantizedGpuPath(const char* fn, const Tensor& src, std::int64_t heads, std::int64_t head, const PackedShape& s,
                      const Tensor& out) {
  attn::SageRows::Args a{.qkv = src.raw(),
                         .qkvBF16 = src.dtype() == DType::BF16,
                         .out = out.raw(),
                         .outBF16 = out.dtype() == DType::BF16,
                         .rows = s.rows,
                         .heads = heads,
                         .head = head,
                         .group = s.group,
                         .outRows = s.outRows,
                         .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head)))};
  const std::int64_t hg = heads * attn::SageRows::groups(a);
  const Device d = src.device();
  const Tensor qCodes = Tensor::empty({detail::checkedMul(fn, "qkv", heads * head, s.rows)}, DType::I8, d);
  const Tensor kCodes = Tensor::empty({detail::checkedMul(fn, "qkv", heads * head, s.rows)}, DType::I8, d);
  const Tensor vCodes = Tensor::empty({detail::checkedMul(fn, "qkv", hg * head, attn::SageRows::tkPad(a))}, DType::U8, d);
  const Tensor qScales = Tensor::empty({hg * attn::SageRows::qBlocks(a)}, DType::F32, d);
  const Tensor kScales = Tensor::empty({hg * attn::SageRows::kBlocks(a)}, DType::F32, d);
  const Tensor kBlockSums = Tensor::empty({hg * attn::SageRows::kBlocks(a) * head}, DType::F32, d);
  const Tensor vBlockMaxes = Tensor::empty({hg * attn::SageRows::kBlocks(a) * head}, DType::F32, d);
  const Tensor kMeans = Tensor::empty({hg * head}, DType::F32, d), vScales = Tensor::empty({hg * head}, DType::F32, d);
  a.qCodes = static_cast<std::int8_t*>(qCodes.raw());
  a.kCodes = static_cast<std::int8_t*>(kCodes.raw());
  a.vCodes = static_cast<std::uint8_t*>(vCodes.raw());
  a.qScales = qScales.data<float>();
  a.kScales = kScales.data<float>();
  a.kBlockSums = kBlockSums.data<float>();
  a.vBlockMaxes = vBlockMaxes.data<float>();
  a.kMeans = kMeans.data<float>();
  a.vScales = vScales.data<float>();
#if GIZML_HAS_CUDA
  attn::SageRows::run(detail::gpuOf(src), a);
#else
  detail::noCuda(fn);
#endif
}

/// Whether attentionRows takes the quantized path: asked for, a head of 64 or 128 (the SPEC's; other
/// heads run the BF16 path), and a GPU whose kernel has the FP8 matrix-core instruction (sm_89+;
/// otherwise BF16, as the SPEC says).
bool takesQuantizedPath(const Tensor& qkv, std::int64_t head, bool quantized) {
#if GIZML_HAS_CUDA
  return quantized && attn::sageHead(head) && attn::SageRows::available(detail::gpuOf(qkv));
#else
  (void)qkv, (void)head, (void)quantized;
  return false;
#endif
}

/// The fast GPU path (SPEC "attentionRows"): prep on a copy of qkv (on the GPU), then the quantized
/// path where takesQuantizedPath, else (BF16) q, k and v into BF16 panels and the flash kernel, into
/// out (F32 or BF16, on qkv's GPU).
void fastGpuPath(const char* fn, const Tensor& qkv, std::int64_t heads, std::int64_t head, bool quantized,
                 const PackedShape& s, const std::vector<HeadPrep>& prep, const Tensor& out) {
  if (head > attn::kFlashMaxHead)
    fail(fn, "head", "the fast GPU path runs heads of at most " + str(attn::kFlashMaxHead) + ", got " + str(head));
  if (s.outRows == 0) return;
  Tensor src = qkv;
  if (!prep.empty()) {
    src = qkv.clone();
    const std::int64_t half = prep[0].cos.defined() ? prep[0].cos.dim(1) : 0;
    detail::run<attn::HeadPrepRows>(detail::gpuOf(src), prepArgs(src, src.dim(0), heads, head, prep[0], half, 0));
  }
  if (takesQuantizedPath(qkv, head, quantized)) return quantizedGpuPath(fn, src, heads, head, s, out);
  const std::int64_t dPad = attn::flashPaddedHead(head);
  const Tensor panels = Tensor::empty({detail::checkedMul(fn, "qkv", 3 * heads * dPad, s.rows)}, DType::BF16,
                                      qkv.device());
  const attn::FlashRows::Args a{.qkv = src.raw(),
                                .qkvBF16 = src.dtype() == DType::BF16,
                                .panels = static_cast<std::uint16_t*>(panels.raw()),
                                .out = out.raw(),
                                .outBF16 = out.dtype() == DType::BF16,
                                .rows = s.rows,
                                .heads = heads,
                                .head = head,
                                .dPad = dPad,
                                .group = s.group,
                                .outRows = s.outRows,
                                .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head)))};
#if GIZML_HAS_CUDA
  attn::FlashRows::pack(detail::gpuOf(qkv), a);
  attn::FlashRows::run(detail::gpuOf(qkv), a);
#else
  (void)a;
  detail::noCuda(fn);
#endif
}

/// crossAttentionRows' fast GPU path (SPEC "crossAttentionRows", BF16): q and kv into BF16 panels,
/// then the flash kernel with one group (queries from q's panels, keys and values from kv's).
void crossFastGpuPath(const char* fn, const Tensor& q, const Tensor& kv, std::int64_t heads, std::int64_t head,
                      const Tensor& out) {
  if (head > attn::kFlashMaxHead)
    fail(fn, "head", "the fast GPU path runs heads of at most " + str(attn::kFlashMaxHead) + ", got " + str(head));
  const std::int64_t nq = q.dim(0), nk = kv.dim(0), width = heads * head;
  if (nq == 0) return;
  const std::int64_t dPad = attn::flashPaddedHead(head);
  const Tensor qPanels =
      Tensor::empty({detail::checkedMul(fn, "q", heads * dPad, nq)}, DType::BF16, q.device());  // [heads][nq][dPad]
  // [2][heads][nk][dPad]; at least one row, so that the kernel's zero-filling copies of keys past nk
  // (all of them when nk = 0: the outputs are +0s) get a real address even though they read nothing.
  const Tensor kvPanels = Tensor::empty({detail::checkedMul(fn, "kv", 2 * heads * dPad, nk > 0 ? nk : 1)},
                                        DType::BF16, q.device());
  auto* kvp = static_cast<std::uint16_t*>(kvPanels.raw());
  const attn::FlashPack packQ{.src = q.raw(),
                              .srcBF16 = q.dtype() == DType::BF16,
                              .panels = static_cast<std::uint16_t*>(qPanels.raw()),
                              .rows = nq,
                              .units = heads,
                              .head = head,
                              .dPad = dPad,
                              .rowStride = width};
  const attn::FlashPack packKV{.src = kv.raw(),
                               .srcBF16 = kv.dtype() == DType::BF16,
                               .panels = kvp,
                               .rows = nk,
                               .units = 2 * heads,
                               .head = head,
                               .dPad = dPad,
                               .rowStride = 2 * width};
  const attn::FlashParams run{.q = packQ.panels,
                              .k = kvp,
                              .v = kvp + heads * nk * dPad,
                              .qHead = nq * dPad,
                              .kvHead = nk * dPad,
                              .out = out.raw(),
                              .outBF16 = out.dtype() == DType::BF16,
                              .heads = heads,
                              .head = head,
                              .dPad = dPad,
                              .queries = nq,
                              .qGroup = nq,
                              .kGroup = nk,
                              .grid = {},
                              .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head)))};
#if GIZML_HAS_CUDA
  attn::flashPack(detail::gpuOf(q), fn, packQ);
  attn::flashPack(detail::gpuOf(q), fn, packKV);
  attn::flashRun(detail::gpuOf(q), fn, attn::FlashKeys::Groups, run);
#else
  (void)packKV;
  (void)run;
  detail::noCuda(fn);
#endif
}

/// The exact attention of every (group, head) of qkv (F32, host) into out [outRows, heads head] F32.
void attendPacked(const Tensor& qkv, std::int64_t heads, std::int64_t head, const PackedShape& s, float* out) {
  const std::int64_t stride = 3 * heads * head, width = heads * head;
  const float* base = qkv.data<float>();
  attn::Attention::Args a{.q = base,
                          .k = base + width,
                          .v = base + 2 * width,
                          .out = out,
                          .lq = {s.group * stride, head, stride},
                          .lk = {s.group * stride, head, stride},
                          .lv = {s.group * stride, head, stride},
                          .lout = {s.group * width, head, width},
                          .items = 0,
                          .inner = heads,
                          .tq = s.group,
                          .tk = s.group,
                          .d = head,
                          .e = head,
                          .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head))),
                          .causal = false,
                          .rate = 0.0f,
                          .keepScale = 1.0f,
                          .k0 = 0,
                          .k1 = 0};
  if (s.group == 0) return;
  // The groups whose rows are all queries, then the group that holds the last queries (its first
  // outRows % group rows are queries).
  const std::int64_t whole = s.outRows / s.group, rest = s.outRows % s.group;
  a.items = whole * heads;
  if (a.items > 0) attn::Attention::host(a);
  if (rest > 0) {
    a.q += whole * s.group * stride;
    a.k += whole * s.group * stride;
    a.v += whole * s.group * stride;
    a.out += whole * s.group * width;
    a.items = heads;
    a.tq = rest;
    attn::Attention::host(a);
  }
}

/// qkv, or a copy with prep applied to q and k of every row.
Tensor prepared(const Tensor& qkv, std::int64_t heads, std::int64_t head, const std::vector<HeadPrep>& prep) {
  if (prep.empty()) return qkv;
  Tensor copy = qkv.clone();
  const std::int64_t half = prep[0].cos.defined() ? prep[0].cos.dim(1) : 0;
  attn::HeadPrepRows::host(prepArgs(copy, copy.dim(0), heads, head, prep[0], half, 0));
  return copy;
}

}  // namespace

void headPrepInPlace(const Tensor& qkv, std::int64_t n, std::int64_t heads, std::int64_t head, const HeadPrep& p,
                     std::int64_t row0) {
  const char* fn = "gizml::netops::headPrepInPlace";
  const std::int64_t rows = checkPacked(fn, qkv, heads, head, true);
  detail::requireAtLeast(fn, "n", n, 0);
  if (n > rows) fail(fn, "n", "expected n <= rows (" + str(rows) + "), got " + str(n));
  detail::requireAtLeast(fn, "row0", row0, 0);
  const std::int64_t half = checkPrep(fn, p, head, detail::checkedAdd(fn, "row0", row0, n), qkv.device());
  if (n == 0) return;
  detail::run<attn::HeadPrepRows>(detail::gpuOf(qkv), prepArgs(qkv, n, heads, head, p, half, row0));
}

Tensor attendedRows(const Tensor& qkv, std::int64_t heads, std::int64_t head, bool quantized, std::int64_t group,
                    const std::vector<HeadPrep>& prep, std::int64_t queries) {
  const char* fn = "gizml::netops::attendedRows";
  const PackedShape s = checkAttended(fn, qkv, heads, head, group, prep, queries);
  if (!qkv.device().isHost()) {
    Tensor out = Tensor::empty({s.outRows, heads * head}, DType::F32, qkv.device());
    fastGpuPath(fn, qkv, heads, head, quantized, s, prep, out);
    return out;
  }
  Tensor out = Tensor::empty({s.outRows, heads * head});
  attendPacked(prepared(qkv, heads, head, prep), heads, head, s, out.data<float>());
  return out;
}

void attentionRows(const Tensor& qkv, std::int64_t heads, std::int64_t head, bool quantized, std::int64_t group,
                   const Tensor& out, const std::vector<HeadPrep>& prep, std::int64_t queries) {
  const char* fn = "gizml::netops::attentionRows";
  const PackedShape s = checkAttended(fn, qkv, heads, head, group, prep, queries);
  detail::requireDefined(fn, "out", out);
  if (out.dtype() != DType::F32 && out.dtype() != DType::BF16)
    fail(fn, "out", "expected dtype F32 or BF16, got " + dtypeName(out.dtype()));
  detail::requireShape(fn, "out", out, {s.outRows, heads * head});
  detail::requireSameDevice(fn, {{"qkv", &qkv}, {"out", &out}});
  if (!qkv.device().isHost()) return fastGpuPath(fn, qkv, heads, head, quantized, s, prep, out);
  if (out.dtype() == DType::F32) {
    attendPacked(prepared(qkv, heads, head, prep), heads, head, s, out.data<float>());
  } else {
    Tensor exact = Tensor::empty({s.outRows, heads * head});
    attendPacked(prepared(qkv, heads, head, prep), heads, head, s, exact.data<float>());
    const Tensor rounded = exact.to(DType::BF16);  // each value rounded once (SPEC §1.4)
    if (rounded.bytes() > 0) std::memcpy(out.raw(), rounded.raw(), rounded.bytes());  // empty: raw() may be null
  }
}

void crossAttentionRows(const Tensor& q, const Tensor& kv, std::int64_t heads, std::int64_t head, const Tensor& out) {
  const char* fn = "gizml::netops::crossAttentionRows";
  detail::requireAtLeast(fn, "heads", heads, 1);
  detail::requireAtLeast(fn, "head", head, 1);
  const std::int64_t width = detail::checkedMul(fn, "head", heads, head);
  // BF16 rows are the GPU's (its fast path reads BF16 anyway); the host's are F32.
  for (auto [name, t, w] : {std::tuple<const char*, const Tensor*, std::int64_t>{"q", &q, width}, {"kv", &kv, 2 * width}}) {
    detail::requireDefined(fn, name, *t);
    if (t->dtype() != DType::F32 && !(t->dtype() == DType::BF16 && !t->device().isHost()))
      fail(fn, name, "expected dtype F32 (BF16 on a GPU), got " + dtypeName(t->dtype()));
    detail::requireRank(fn, name, *t, 2);
    if (t->dim(1) != w)
      fail(fn, "head", std::string("expected ") + name + " rows of " + (w == width ? "" : "2 ") + "heads head = " +
                           str(w) + " values (heads " + str(heads) + ", head " + str(head) + "), got " + name +
                           " of shape " + shapeString(t->shape()));
  }
  detail::requireDefined(fn, "out", out);
  if (out.dtype() != DType::F32 && out.dtype() != DType::BF16)
    fail(fn, "out", "expected dtype F32 or BF16, got " + dtypeName(out.dtype()));
  detail::requireShape(fn, "out", out, {q.dim(0), width});
  detail::requireSameDevice(fn, {{"q", &q}, {"kv", &kv}, {"out", &out}});
  if (!q.device().isHost()) return crossFastGpuPath(fn, q, kv, heads, head, out);
  const std::int64_t nq = q.dim(0), nk = kv.dim(0);
  Tensor exact = out.dtype() == DType::F32 ? out : Tensor::empty({nq, width});
  // Items are the heads (inner = heads, one outer item); keys and values are kv's two halves.
  attn::Attention::Args a{.q = q.data<float>(),
                          .k = kv.data<float>(),
                          .v = kv.data<float>() + width,
                          .out = exact.data<float>(),
                          .lq = {0, head, width},
                          .lk = {0, head, 2 * width},
                          .lv = {0, head, 2 * width},
                          .lout = {0, head, width},
                          .items = heads,
                          .inner = heads,
                          .tq = nq,
                          .tk = nk,
                          .d = head,
                          .e = head,
                          .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head))),
                          .causal = false,
                          .rate = 0.0f,
                          .keepScale = 1.0f,
                          .k0 = 0,
                          .k1 = 0};
  attn::Attention::host(a);
  if (out.dtype() == DType::BF16) {
    const Tensor rounded = exact.to(DType::BF16);  // each value rounded once
    if (rounded.bytes() > 0) std::memcpy(out.raw(), rounded.raw(), rounded.bytes());  // empty: raw() may be null
  }
}

}  // namespace gizml::netops
