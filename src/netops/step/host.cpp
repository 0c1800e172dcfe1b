// A language model's step: the raw-row entry points' checks, dispatch by device, and the host
// paths (argmax by the row type over 16 lanes; candidates a worker at a time; the split sum over
// 16 lanes), OpenMP over rows or elements. They equal tests/reference/step_reference.cpp bit for bit.
#include <cstdint>
#include <string>

#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "exact/row16.hpp"
#include "exact/vec16.hpp"
#include "gizml/error.hpp"
#include "netops/norms/norms.hpp"
#include "netops/step/step.hpp"

namespace gizml::netops {

// ---- host paths ---------------------------------------------------------------------------------------

namespace step {

void ArgmaxInto::host(const Args& a) { exact::hostRows<ArgmaxInto>(a); }

/// 16 workers a vector (lanes 16 g .. 16 g + 15), all 16 vectors of a row at once, so the row is
/// read once, in order: its 256 tokens from `base` are one load a vector (direct rows). OpenMP over
/// rows.
void CandidatesInto::host(const Args& a) {
  using exact::f32x16;
  using exact::i32x16;
  constexpr int kGroups = CANDIDATE_WORKERS / 16;
  const std::int64_t vocab = a.src.vocab;
  const f32x16 nan = exact::splat(NAN);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < a.rows; ++r) {
    Kept<f32x16, i32x16> k[kGroups];
    for (auto& group : k)
      for (int j = 0; j < TOP_EACH; ++j) group.value[j] = exact::splat(-INFINITY), group.token[j] = i32x16{} + group.kEmpty;
    for (std::int64_t chunk = 0; chunk < vocab; chunk += CANDIDATE_WORKERS)
      for (int g = 0; g < kGroups && chunk + 16 * g < vocab; ++g) {
        const std::int64_t base = chunk + 16 * g, count = vocab - base < 16 ? vocab - base : 16;
        f32x16 x;
        if (!a.src.indirect) {
          x = exact::load16(a.src.logits + r * a.src.stride + base, count);
        } else {
          float v[16];
          for (std::int64_t l = 0; l < count; ++l) v[l] = a.src.at(r, base + l);
          x = exact::load16(v, count);
        }
        const i32x16 lane = exact::laneIndex(), id = lane + static_cast<std::int32_t>(base);
        x = exact::select(lane < static_cast<std::int32_t>(count), x, nan);  // past the vocabulary: never kept
        // Most tokens beat no worker's fourth: offering them would change nothing.
        if (exact::anyLane(betterLanes(x, id, k[g].value[TOP_EACH - 1], k[g].token[TOP_EACH - 1]))) offer(k[g], x, id);
      }
    for (int t = 0; t < CANDIDATE_WORKERS; ++t) {
      const Kept<f32x16, i32x16>& group = k[t / 16];
      float* out = a.cand + r * CANDIDATE_ROW + 2 * TOP_EACH * t;
      for (int slot = 0; slot < TOP_EACH; ++slot) {
        const bool kept = group.token[slot][t % 16] != group.kEmpty;
        out[2 * slot] = kept ? group.value[slot][t % 16] : -INFINITY;
        out[2 * slot + 1] = kept ? static_cast<float>(group.token[slot][t % 16]) : -1.0f;
      }
    }
  }
}

void NormRotateInto::host(const Args& a) { exact::hostRows<NormRotateInto>(a); }

void SiluMulRotatedInto::host(const Args& a) { exact::hostRows<SiluMulRotatedInto>(a); }

void SplitSumInto::host(const Args& a) {
  const std::int64_t steps = (a.total + 15) / 16;
#pragma omp parallel for schedule(static)
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::int64_t i = 16 * step, count = a.total - i;
    const exact::f32x16 start = a.add ? exact::load16(a.y + i, count) : exact::f32x16{};
    exact::store16(a.y + i,
                   splitSumValue(start, a.splits, [&](std::int64_t s) { return exact::load16(a.p + s * a.total + i, count); }),
                   count);
  }
}

}  // namespace step

// ---- argument checks -------------------------------------------------------------------------------------

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

/// A typed address: not null (where anything is to be read or written) and aligned to its type.
template <class T>
void checkAddress(const char* fn, const char* arg, const T* p, bool needed) {
  if (!needed) return;
  if (!p) fail(fn, arg, "expected an address, got null");
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0)
    fail(fn, arg, "expected an address aligned to " + str(alignof(T)) + " bytes");
}

void checkGpu(const char* fn, const Gpu& g) {
  if (g.device.isHost()) return;
  if (!builtWithCuda()) fail(fn, "g", "expected the host: gizml was built without CUDA");
  if (g.device.index < 0 || g.device.index >= gpuCount())
    fail(fn, "g", "expected a present GPU, got " + g.device.name() + " (" + str(gpuCount()) + " GPUs found)");
}

/// The rows of logits argmaxInto and candidatesInto read.
step::LogitRows checkLogitRows(const char* fn, std::int64_t rows, std::int64_t vocab, std::int64_t stride,
                               bool indirect, const float* logits, const float* const* blocks) {
  detail::requireAtLeast(fn, "rows", rows, 0);
  detail::requireAtLeast(fn, "vocab", vocab, 1);
  if (vocab > (std::int64_t{1} << 24))
    fail(fn, "vocab", "expected at most 2^24 tokens (token ids are written as exact F32), got " + str(vocab));
  detail::requireAtLeast(fn, "stride", stride, 1);
  if (!indirect && stride < vocab)
    fail(fn, "stride", "expected a row stride of at least vocab (" + str(vocab) + "), got " + str(stride));
  detail::checkedMul(fn, "stride", rows, stride);
  checkAddress(fn, "logits", logits, !indirect && rows > 0);
  checkAddress(fn, "blocks", blocks, indirect && rows > 0);
  return step::LogitRows{logits, blocks, vocab, stride, indirect};
}

}  // namespace

// ---- the ops ---------------------------------------------------------------------------------------------

void argmaxInto(const Gpu& g, std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect, float* top,
                const float* logits, const float* const* blocks) {
  const char* fn = "gizml::netops::argmaxInto";
  checkGpu(fn, g);
  const step::LogitRows src = checkLogitRows(fn, rows, vocab, stride, indirect, logits, blocks);
  checkAddress(fn, "top", top, rows > 0);
  if (rows == 0) return;
  detail::run<step::ArgmaxInto>(g, {src, rows, vocab, top});
}

void candidatesInto(const Gpu& g, std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect,
                    float* cand, const float* logits, const float* const* blocks) {
  const char* fn = "gizml::netops::candidatesInto";
  checkGpu(fn, g);
  const step::LogitRows src = checkLogitRows(fn, rows, vocab, stride, indirect, logits, blocks);
  detail::checkedMul(fn, "rows", rows, CANDIDATE_ROW);
  checkAddress(fn, "cand", cand, rows > 0);
  if (rows == 0) return;
  detail::run<step::CandidatesInto>(g, {src, rows, cand});
}

void splitSumInto(const Gpu& g, float* y, const float* p, std::int64_t total, std::int64_t splits, bool add) {
  const char* fn = "gizml::netops::splitSumInto";
  checkGpu(fn, g);
  detail::requireAtLeast(fn, "total", total, 0);
  detail::requireAtLeast(fn, "splits", splits, 1);
  detail::checkedMul(fn, "splits", splits, total);
  checkAddress(fn, "y", y, total > 0);
  checkAddress(fn, "p", p, total > 0);
  if (total == 0) return;
  detail::run<step::SplitSumInto>(g, {y, p, total, splits, add});
}

void normRotateInto(const Gpu& g, std::int64_t rows, std::int64_t width, double eps, bool rotate, std::int64_t stride,
                    std::int64_t offset, float* y, const float* x, const float* w, const float* d, const float* map,
                    std::int64_t xRows) {
  const char* fn = "gizml::netops::normRotateInto";
  checkGpu(fn, g);
  detail::requireAtLeast(fn, "rows", rows, 0);
  detail::requireAtLeast(fn, "width", width, 1);
  if (!(eps >= 0.0)) fail(fn, "eps", "expected eps >= 0, got " + std::to_string(eps));
  if (rotate && width % exact::kHadamardBlock != 0)
    fail(fn, "width", "expected a multiple of 256 to rotate, got " + str(width));
  detail::requireAtLeast(fn, "offset", offset, 0);
  if (stride < detail::checkedAdd(fn, "offset", offset, width))
    fail(fn, "stride", "expected at least offset + width = " + str(offset + width) + ", got " + str(stride));
  detail::checkedMul(fn, "stride", rows, stride);
  const bool work = rows > 0;
  checkAddress(fn, "y", y, work);
  checkAddress(fn, "x", x, work);
  checkAddress(fn, "w", w, work);
  checkAddress(fn, "d", d, work && rotate);
  if (map) {
    checkAddress(fn, "map", map, work);
    detail::requireAtLeast(fn, "xRows", xRows, 1);
    if (g.device.isHost())
      for (std::int64_t r = 0; r < rows; ++r) {
        const long long m = norms::mapIndex(map[r]);
        if (m < 0 || m >= xRows)
          fail(fn, "map", "expected integers in [0, " + str(xRows) + "), got " + std::to_string(map[r]) + " at row " + str(r));
      }
  }
  if (!work) return;
  detail::run<step::NormRotateInto>(g, {x, w, rotate ? d : nullptr, map, static_cast<float>(eps), rotate, rows, width,
                                        map ? xRows : rows, stride, offset, y});
}

void siluMulRotatedInto(const Gpu& g, std::int64_t rows, std::int64_t ffn, std::int64_t nUp, float* y, const float* p,
                        const float* d) {
  const char* fn = "gizml::netops::siluMulRotatedInto";
  checkGpu(fn, g);
  detail::requireAtLeast(fn, "rows", rows, 0);
  detail::requireAtLeast(fn, "ffn", ffn, 1);
  detail::requireAtLeast(fn, "nUp", nUp, 1);
  if (d && ffn % exact::kHadamardBlock != 0) fail(fn, "ffn", "expected a multiple of 256 to rotate, got " + str(ffn));
  detail::checkedMul(fn, "nUp", detail::checkedMul(fn, "nUp", nUp, rows), 2 * ffn);
  const bool work = rows > 0;
  checkAddress(fn, "y", y, work);
  checkAddress(fn, "p", p, work);
  checkAddress(fn, "d", d, work && d);
  if (!work) return;
  detail::run<step::SiluMulRotatedInto>(g, {p, d, rows, ffn, nUp, y});
}

}  // namespace gizml::netops
