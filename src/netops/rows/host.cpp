// The row ops: argument checks, the outputs, dispatch by device (core/dispatch.hpp), and the host
// paths: the row functions of rows.hpp over 16 float lanes, OpenMP over rows. They equal
// tests/reference/rows_reference.cpp bit for bit.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/backend.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "exact/philox.hpp"
#include "exact/row16.hpp"
#include "exact/vec16.hpp"
#include "gizml/netops/rows.hpp"
#include "netops/rows/rows.hpp"

namespace gizml::netops {

using exact::f32x16;
using exact::load16;
using exact::store16;

using exact::streamable;

// ---- host paths ---------------------------------------------------------------------------------------

namespace rows {

void LayerNorm::host(const Args& a) { exact::hostRows<LayerNorm>(a, streamable(a.y, a.rows * a.n, a.n)); }

void RmsNorm::host(const Args& a) { exact::hostRows<RmsNorm>(a, streamable(a.y, a.rows * a.n, a.n)); }

void CrossEntropy::host(const Args& a) { exact::hostRows<CrossEntropy>(a); }

void Argmax::host(const Args& a) { exact::hostRows<Argmax>(a); }

void LayerNormGrad::host(const Args& a) {
  exact::hostRows<LayerNormGrad>(a);
  // dweight and dbias: each column's chain runs over the rows in order. Threads split the columns
  // into spans of up to 2048, each span's chains kept in L1 (16 KiB of accumulators) while the
  // rows pass: a row gives each span 8 KiB of dy and 8 KiB of x in one run. (Blocks of 128
  // columns read 512 bytes of each row, a new page each: on an AMD EPYC that column pass took
  // several times the row pass.)
  constexpr std::int64_t kSpan = 2048, kVectors = kSpan / 16;
  const std::int64_t n = a.n, rows = a.rows, threads = omp_get_max_threads();
  const std::int64_t span = std::min(kSpan, std::max<std::int64_t>(16, (n + threads - 1) / threads + 15) / 16 * 16);
  const std::int64_t items = (n + span - 1) / span;
  const float *dy = a.dy, *x = a.x, *mean = a.mean, *rstd = a.rstd;
#pragma omp parallel for schedule(static)
  for (std::int64_t item = 0; item < items; ++item) {
    const std::int64_t j0 = item * span, width = std::min(span, n - j0), vectors = (width + 15) / 16;
    alignas(64) f32x16 accW[kVectors], accB[kVectors];
    for (std::int64_t v = 0; v < vectors; ++v) accW[v] = accB[v] = f32x16{};
    const std::int64_t whole = width / 16;  // vectors with no lane past the span
    for (std::int64_t r = 0; r < rows; ++r) {
      const float mu = mean[r], rs = rstd[r];
      const float *dyr = dy + r * n + j0, *xr = x + r * n + j0;
      for (std::int64_t v = 0; v < whole; ++v)
        columnStep(load16(dyr + 16 * v, 16), layerNormXhat(load16(xr + 16 * v, 16), mu, rs), accW[v], accB[v]);
      if (whole < vectors)
        columnStep(load16(dyr + 16 * whole, width - 16 * whole), layerNormXhat(load16(xr + 16 * whole, width - 16 * whole), mu, rs),
                   accW[whole], accB[whole]);
    }
    for (std::int64_t v = 0; v < vectors; ++v) {
      store16(a.dweight + j0 + 16 * v, accW[v], width - 16 * v);
      store16(a.dbias + j0 + 16 * v, accB[v], width - 16 * v);
    }
  }
}

void Dropout::host(const Args& a) {
  // 64 elements a step: the 16 Philox counters g0 .. g0 + 15 drawn at once on u32x16 lanes.
  const std::int64_t count = a.count, steps = (count + 63) / 64;
  const bool stream = streamable(a.y, count);
#pragma omp parallel for schedule(static)
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::uint64_t g0 = static_cast<std::uint64_t>(step) * 16;
    exact::u32x16 c0 = exact::iota16(static_cast<std::uint32_t>(g0));
    exact::u32x16 c1 = exact::u32x16{} + static_cast<std::uint32_t>(g0 >> 32);
    exact::u32x16 c2{}, c3{};
    exact::philoxRounds(a.k0, a.k1, c0, c1, c2, c3);
    // Element 4 g + j takes word j of counter g: vector q holds elements 16 q .. 16 q + 15.
    const exact::u32x16 byWord[4] = {c0, c1, c2, c3};
    exact::u32x16 words[4];
    exact::interleaveWords(byWord, words);
    const std::int64_t base = step * 64;
    for (int q = 0; q < 4 && base + 16 * q < count; ++q) {
      const std::int64_t i = base + 16 * q;
      f32x16 v = dropoutValue(load16(a.x + i, count - i), exact::uniformOfWord(words[q]), a.p, a.factor);
      if (stream && count - i >= 16) exact::streamStore16(a.y + i, v);
      else store16(a.y + i, v, count - i);
    }
  }
}

}  // namespace rows

// ---- argument checks ------------------------------------------------------------------------------------

namespace {

/// x [..., n] F32 with n >= 1 (its rows are the leading extents' product).
void checkRows(const char* fn, const Tensor& x) {
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRankAtLeast(fn, "x", x, 1);
  if (x.rowLength() < 1) fail(fn, "x", "expected rows of at least one value, got shape " + shapeString(x.shape()));
}

/// The three cross-entropy entry points' arguments.
void checkLogits(const char* fn, const Tensor& logits, const std::vector<std::int64_t>& labels) {
  detail::requireDType(fn, "logits", logits, DType::F32);
  detail::requireRank(fn, "logits", logits, 2);
  if (logits.dim(0) < 1) fail(fn, "logits", "expected rows >= 1, got shape " + shapeString(logits.shape()));
  if (logits.dim(1) < 1) fail(fn, "logits", "expected classes >= 1, got shape " + shapeString(logits.shape()));
  detail::requireLabels(fn, labels, logits.dim(0), logits.dim(1));
}

/// The cross-entropy pass where the logits are. On a GPU the labels are queued for the device and
/// their temporary freed in stream order: nothing waits for the GPU.
void crossEntropyRun(const Tensor& logits, const std::vector<std::int64_t>& labels, float* losses, float* grad,
                     float scale) {
  rows::CrossEntropy::Args a{logits.data<float>(), labels.data(), logits.dim(0), logits.dim(1), losses, grad, scale};
  const Gpu gpu = detail::gpuOf(logits);
  Tensor deviceLabels;
  if (gpu.device.isCuda()) {
    deviceLabels = Tensor::empty({a.rows}, DType::I64, gpu.device);
    GIZML_IF_CUDA(detail::cudaUploadAsync(gpu, deviceLabels.raw(), labels.data(), labels.size() * sizeof(std::int64_t)));
    a.labels = deviceLabels.data<std::int64_t>();
  }
  detail::run<rows::CrossEntropy>(gpu, a);
}

}  // namespace

// ---- the ops ---------------------------------------------------------------------------------------------

LayerNormResult layerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const char* fn = "gizml::netops::layerNorm";
  checkRows(fn, x);
  const std::int64_t n = x.rowLength(), rowCount = x.rowCount();
  detail::requireVector(fn, "weight", weight, n);
  detail::requireVector(fn, "bias", bias, n);
  detail::requireSameDevice(fn, {{"x", &x}, {"weight", &weight}, {"bias", &bias}});
  const float eps32 = detail::checkedEps(fn, eps);

  LayerNormResult out{Tensor::empty(x.shape(), DType::F32, x.device()),
                      Tensor::empty({rowCount}, DType::F32, x.device()),
                      Tensor::empty({rowCount}, DType::F32, x.device())};
  detail::run<rows::LayerNorm>(detail::gpuOf(x), {x.data<float>(), weight.data<float>(), bias.data<float>(), eps32,
                                                  rowCount, n, out.y.data<float>(), out.mean.data<float>(),
                                                  out.rstd.data<float>()});
  return out;
}

LayerNormGradResult layerNormGrad(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                  const Tensor& rstd) {
  const char* fn = "gizml::netops::layerNormGrad";
  checkRows(fn, x);
  const std::int64_t n = x.rowLength(), rowCount = x.rowCount();
  detail::requireDType(fn, "dy", dy, DType::F32);
  detail::requireShape(fn, "dy", dy, x.shape());
  detail::requireVector(fn, "weight", weight, n);
  detail::requireVector(fn, "mean", mean, rowCount);
  detail::requireVector(fn, "rstd", rstd, rowCount);
  detail::requireSameDevice(fn, {{"x", &x}, {"dy", &dy}, {"weight", &weight}, {"mean", &mean}, {"rstd", &rstd}});

  LayerNormGradResult out{Tensor::empty(x.shape(), DType::F32, x.device()), Tensor::zeros({n}, DType::F32, x.device()),
                          Tensor::zeros({n}, DType::F32, x.device())};
  if (rowCount == 0) return out;  // no rows: the column chains are empty, +0
  detail::run<rows::LayerNormGrad>(detail::gpuOf(x), {dy.data<float>(), x.data<float>(), weight.data<float>(),
                                                      mean.data<float>(), rstd.data<float>(), rowCount, n,
                                                      out.dx.data<float>(), out.dweight.data<float>(),
                                                      out.dbias.data<float>()});
  return out;
}

RmsNormResult rmsNorm(const Tensor& x, const Tensor& weight, double eps) {
  const char* fn = "gizml::netops::rmsNorm";
  checkRows(fn, x);
  const std::int64_t n = x.rowLength(), rowCount = x.rowCount();
  detail::requireVector(fn, "weight", weight, n);
  detail::requireSameDevice(fn, {{"x", &x}, {"weight", &weight}});
  const float eps32 = detail::checkedEps(fn, eps);
  RmsNormResult out{Tensor::empty(x.shape(), DType::F32, x.device()), Tensor::empty({rowCount}, DType::F32, x.device())};
  detail::run<rows::RmsNorm>(detail::gpuOf(x), {x.data<float>(), weight.data<float>(), eps32, rowCount, n,
                                                out.y.data<float>(), out.rstd.data<float>()});
  return out;
}

Tensor crossEntropyRows(const Tensor& logits, const std::vector<std::int64_t>& labels) {
  checkLogits("gizml::netops::crossEntropyRows", logits, labels);
  Tensor losses = Tensor::empty({logits.dim(0)}, DType::F32, logits.device());
  crossEntropyRun(logits, labels, losses.data<float>(), nullptr, 1.0f);
  return losses;
}

double crossEntropyLoss(const Tensor& logits, const std::vector<std::int64_t>& labels) {
  checkLogits("gizml::netops::crossEntropyLoss", logits, labels);
  Tensor losses = Tensor::empty({logits.dim(0)}, DType::F32, logits.device());
  crossEntropyRun(logits, labels, losses.data<float>(), nullptr, 1.0f);
  std::vector<float> perRow = losses.toVector<float>();
  double total = 0.0;
  for (float l : perRow) total += static_cast<double>(l);  // f64, row order (SPEC §1.3)
  return total / static_cast<double>(perRow.size());
}

Tensor crossEntropyGrad(const Tensor& logits, const std::vector<std::int64_t>& labels, double scale) {
  checkLogits("gizml::netops::crossEntropyGrad", logits, labels);
  Tensor grad = Tensor::empty(logits.shape(), DType::F32, logits.device());
  crossEntropyRun(logits, labels, nullptr, grad.data<float>(), static_cast<float>(scale));
  return grad;
}

std::vector<std::int64_t> argmax(const Tensor& x) {
  checkRows("gizml::netops::argmax", x);
  Tensor result = Tensor::empty({x.rowCount()}, DType::I64, x.device());
  detail::run<rows::Argmax>(detail::gpuOf(x), {x.data<float>(), x.rowCount(), x.rowLength(), result.data<std::int64_t>()});
  return result.toVector<std::int64_t>();
}

Tensor dropout(const Tensor& x, Key key, double p) {
  const char* fn = "gizml::netops::dropout";
  detail::requireDType(fn, "x", x, DType::F32);
  if (!(p >= 0.0 && p <= 1.0)) fail(fn, "p", "expected p in [0, 1], got " + std::to_string(p));
  const float p32 = static_cast<float>(p);
  const float factor = static_cast<float>(1.0 / (1.0 - p));  // +inf at p = 1, never applied there
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.numel() == 0) return y;
  detail::run<rows::Dropout>(detail::gpuOf(x), {x.data<float>(), x.numel(), key.k0, key.k1, p32, factor, y.data<float>()});
  return y;
}

}  // namespace gizml::netops

namespace gizml {
std::vector<std::int64_t> Tensor::argmax() const { return netops::argmax(*this); }
Tensor Tensor::dropout(Key key, double p) const { return netops::dropout(*this, key, p); }
}  // namespace gizml
