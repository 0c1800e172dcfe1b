// The row ops: argument checks, dispatch by device, and the host path (16 float lanes a vector,
// OpenMP over rows). The host path equals tests/reference/rows_reference.cpp bit for bit.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/backend.hpp"
#include "core/check.hpp"
#include "exact/math.hpp"
#include "exact/order.hpp"
#include "exact/philox.hpp"
#include "exact/vec16.hpp"
#include "gizml/netops.hpp"
#include "netops/rows/rows.hpp"

namespace gizml::netops {

using exact::f32x16;
using exact::keepFirst;
using exact::load16;
using exact::splat;
using exact::store16;

namespace {

/// sum16's (and dot16's) final tree over the 16 lanes of an accumulator.
float laneTree(f32x16 acc) {
  float lanes[16];
  std::memcpy(lanes, &acc, sizeof lanes);
  return exact::treeSum16(lanes);
}

/// Outputs this large (past any cache) are written with streaming stores when every row starts
/// on a 64-byte boundary. (The streaming stores are ordered before other threads read the output
/// by OpenMP's closing barrier, whose locked instructions drain the write-combining buffers.)
bool streamable(const float* out, std::int64_t count, std::int64_t rowLength = 16) {
  return count * 4 >= (std::int64_t{32} << 20) && exact::aligned64(out) && rowLength % 16 == 0;
}

/// sum16 of a row.
float sum16(const float* v, std::int64_t n) {
  f32x16 acc{};
  for (std::int64_t i = 0; i < n; i += 16) acc += load16(v + i, n - i);
  return laneTree(acc);
}

/// The lowest index of the row's largest non-NaN value; 0 for a row of NaN (SPEC §1.3).
std::int64_t argmaxRow(const float* v, std::int64_t n) {
  const f32x16 negInf = splat(-INFINITY);
  f32x16 best = negInf;
  for (std::int64_t i = 0; i < n; i += 16) {
    f32x16 x = load16(v + i, n - i);
    if (n - i < 16) x = exact::select(exact::laneIndex() < static_cast<std::int32_t>(n - i), x, negInf);
    best = exact::select(x > best, x, best);  // NaN is never greater: it never enters
  }
  float m = -INFINITY;
  for (int l = 0; l < 16; ++l) m = best[l] > m ? best[l] : m;
  // The first element equal to the maximum (+0 and -0 are equal, so ties between them take the
  // lower index as well). None equal only when every value is NaN.
  for (std::int64_t i = 0; i < n; i += 16) {
    f32x16 x = load16(v + i, n - i);
    exact::i32x16 hit = x == m;
    for (std::int64_t l = 0; l < 16 && i + l < n; ++l)
      if (hit[l]) return i + l;
  }
  return 0;
}

/// The row's maximum m (SPEC §1.3: NaN ignored; among equal values the lowest index's, which
/// only matters for the sign of a zero) and s = sum16(exp(x - m)); writes exp(x - m) to `e` when
/// it is not null.
void softmaxStats(const float* x, std::int64_t n, float* e, float& m, float& s) {
  const f32x16 negInf = splat(-INFINITY);
  f32x16 best = negInf;
  for (std::int64_t i = 0; i < n; i += 16) {
    f32x16 v = load16(x + i, n - i);
    if (n - i < 16) v = exact::select(exact::laneIndex() < static_cast<std::int32_t>(n - i), v, negInf);
    best = exact::select(v > best, v, best);
  }
  m = -INFINITY;
  for (int l = 0; l < 16; ++l) m = best[l] > m ? best[l] : m;
  // A zero maximum takes the sign of the first zero; -inf may mean "every value is NaN": both
  // rare, both settled by the index.
  if (m == 0.0f || m == -INFINITY) m = x[argmaxRow(x, n)];
  f32x16 acc{};
  for (std::int64_t i = 0; i < n; i += 16) {
    f32x16 ex = keepFirst(exact::expLanes(load16(x + i, n - i) - m), n - i);
    if (e) store16(e + i, ex, n - i);
    acc += ex;
  }
  s = laneTree(acc);
}

void layerNormHost(const float* x, const float* w, const float* b, float eps, std::int64_t nrows, std::int64_t n,
                   float* y, float* mean, float* rstd) {
  const float nf = static_cast<float>(n);
  const bool stream = streamable(y, nrows * n, n);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < nrows; ++r) {
    const float* xr = x + r * n;
    float mu = sum16(xr, n) / nf;
    f32x16 acc{};
    for (std::int64_t i = 0; i < n; i += 16) {
      f32x16 d = keepFirst(load16(xr + i, n - i) - mu, n - i);
      acc = exact::fmaLane(d, d, acc);
    }
    float var = laneTree(acc) / nf;
    float rs = 1.0f / std::sqrt(var + eps);
    float* yr = y + r * n;
    for (std::int64_t i = 0; i < n; i += 16) {
      f32x16 v = rows::layerNormValue(load16(xr + i, n - i), mu, rs, load16(w + i, n - i), load16(b + i, n - i));
      if (stream && n - i >= 16) exact::streamStore16(yr + i, v);
      else store16(yr + i, v, n - i);
    }
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layerNormGradHost(const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
                       std::int64_t nrows, std::int64_t n, float* dx, float* dweight, float* dbias) {
  const float nf = static_cast<float>(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < nrows; ++r) {
    const float *dyr = dy + r * n, *xr = x + r * n;
    const float mu = mean[r], rs = rstd[r];
    f32x16 accG{}, accGX{};
    for (std::int64_t i = 0; i < n; i += 16) {
      f32x16 g = keepFirst(load16(dyr + i, n - i) * load16(w + i, n - i), n - i);
      f32x16 xh = keepFirst(rows::layerNormXhat(load16(xr + i, n - i), mu, rs), n - i);
      accG += g;
      accGX = exact::fmaLane(g, xh, accGX);
    }
    float a = laneTree(accG) / nf;
    float c = laneTree(accGX) / nf;
    float* dxr = dx + r * n;
    for (std::int64_t i = 0; i < n; i += 16) {
      f32x16 g = load16(dyr + i, n - i) * load16(w + i, n - i);
      f32x16 xh = rows::layerNormXhat(load16(xr + i, n - i), mu, rs);
      store16(dxr + i, rows::layerNormGradDx(g, xh, a, c, rs), n - i);
    }
  }
  // dweight and dbias: each column's chain runs over the rows in order; threads split the columns
  // in blocks of 8 vectors, so each row contributes 512 contiguous bytes of dy and x at a time.
  constexpr std::int64_t kVectors = 8, kBlock = 16 * kVectors;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t jb = 0; jb < blocks; ++jb) {
    const std::int64_t j0 = jb * kBlock;
    f32x16 accW[kVectors] = {}, accB[kVectors] = {};
    for (std::int64_t r = 0; r < nrows; ++r) {
      const float mu = mean[r], rs = rstd[r];
      for (std::int64_t v = 0; v < kVectors; ++v) {
        const std::int64_t j = j0 + 16 * v;
        if (j >= n) break;
        f32x16 d = load16(dy + r * n + j, n - j);
        f32x16 xh = rows::layerNormXhat(load16(x + r * n + j, n - j), mu, rs);
        accW[v] = exact::fmaLane(d, xh, accW[v]);
        accB[v] += d;
      }
    }
    for (std::int64_t v = 0; v < kVectors && j0 + 16 * v < n; ++v) {
      store16(dweight + j0 + 16 * v, accW[v], n - j0 - 16 * v);
      store16(dbias + j0 + 16 * v, accB[v], n - j0 - 16 * v);
    }
  }
}

void crossEntropyHost(const float* logits, const std::int64_t* labels, std::int64_t nrows, std::int64_t classes,
                      float* losses, float* grad, float scale) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < nrows; ++r) {
    const float* xr = logits + r * classes;
    float* gr = grad ? grad + r * classes : nullptr;
    float m, s;
    softmaxStats(xr, classes, gr, m, s);
    const std::int64_t label = labels[r];
    if (losses) losses[r] = (m + exact::log(s)) - xr[label];
    if (gr) {
      const float inv = 1.0f / s;
      const float eLabel = gr[label];
      for (std::int64_t i = 0; i < classes; i += 16)
        store16(gr + i, rows::crossEntropyGradValue(load16(gr + i, classes - i), inv, f32x16{}, scale), classes - i);
      gr[label] = rows::crossEntropyGradValue(eLabel, inv, 1.0f, scale);
    }
  }
}

void dropoutHost(const float* x, std::int64_t count, Key key, float p, float factor, float* y) {
  // 64 elements a step: the 16 Philox counters g0 .. g0 + 15 drawn at once on u32x16 lanes.
  const std::int64_t steps = (count + 63) / 64;
  const bool stream = streamable(y, count);
#pragma omp parallel for schedule(static)
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::uint64_t g0 = static_cast<std::uint64_t>(step) * 16;
    exact::u32x16 c0 = exact::iota16(static_cast<std::uint32_t>(g0));
    exact::u32x16 c1 = exact::u32x16{} + static_cast<std::uint32_t>(g0 >> 32);
    exact::u32x16 c2{}, c3{};
    exact::philoxRounds(key.k0, key.k1, c0, c1, c2, c3);
    // Element 4 g + j takes word j of counter g: vector q holds elements 16 q .. 16 q + 15.
    const exact::u32x16 byWord[4] = {c0, c1, c2, c3};
    exact::u32x16 words[4];
    exact::interleaveWords(byWord, words);
    const std::int64_t base = step * 64;
    for (int q = 0; q < 4 && base + 16 * q < count; ++q) {
      const std::int64_t i = base + 16 * q;
      f32x16 v = rows::dropoutValue(load16(x + i, count - i), exact::uniformOfWord(words[q]), p, factor);
      if (stream && count - i >= 16) exact::streamStore16(y + i, v);
      else store16(y + i, v, count - i);
    }
  }
}

// ---- argument checks shared by the three cross-entropy entry points ------------------------------
void checkLogits(const char* fn, const Tensor& logits, const std::vector<std::int64_t>& labels) {
  detail::requireDType(fn, "logits", logits, DType::F32);
  detail::requireRank(fn, "logits", logits, 2);
  if (logits.dim(0) < 1) fail(fn, "logits", "expected rows >= 1, got shape " + shapeString(logits.shape()));
  if (logits.dim(1) < 1) fail(fn, "logits", "expected classes >= 1, got shape " + shapeString(logits.shape()));
  detail::requireLabels(fn, labels, logits.dim(0), logits.dim(1));
}

/// Runs the cross-entropy pass where the logits are; labels go to the device for a GPU.
void crossEntropyRun(const Tensor& logits, const std::vector<std::int64_t>& labels, float* losses, float* grad,
                     float scale) {
  const std::int64_t nrows = logits.dim(0), classes = logits.dim(1);
  if (logits.device().isHost()) {
    crossEntropyHost(logits.data<float>(), labels.data(), nrows, classes, losses, grad, scale);
    return;
  }
  Tensor deviceLabels = Tensor::fromVector(labels, {nrows}, logits.device());
  GIZML_IF_CUDA(rows::cuda::crossEntropy(logits.device().index, logits.data<float>(), deviceLabels.data<std::int64_t>(), nrows, classes,
                                         losses, grad, scale));
  // The launch is queued on the default stream; deviceLabels is freed by cudaFree, which waits
  // for the stream's queued work first.
}

}  // namespace

// ---- the ops ---------------------------------------------------------------------------------------

LayerNormResult layerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const char* fn = "gizml::netops::layerNorm";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRankAtLeast(fn, "x", x, 1);
  const std::int64_t n = x.rowLength(), rowCount = x.rowCount();
  if (n < 1) fail(fn, "x", "expected rows of at least one value, got shape " + shapeString(x.shape()));
  detail::requireDType(fn, "weight", weight, DType::F32);
  detail::requireShape(fn, "weight", weight, {n});
  detail::requireDType(fn, "bias", bias, DType::F32);
  detail::requireShape(fn, "bias", bias, {n});
  detail::requireSameDevice(fn, {{"x", &x}, {"weight", &weight}, {"bias", &bias}});
  if (!(eps >= 0.0)) fail(fn, "eps", "expected eps >= 0, got " + std::to_string(eps));
  const float eps32 = static_cast<float>(eps);

  LayerNormResult out{Tensor::empty(x.shape(), DType::F32, x.device()),
                      Tensor::empty({rowCount}, DType::F32, x.device()),
                      Tensor::empty({rowCount}, DType::F32, x.device())};
  if (rowCount == 0) return out;
  if (x.device().isHost())
    layerNormHost(x.data<float>(), weight.data<float>(), bias.data<float>(), eps32, rowCount, n,
                  out.y.data<float>(), out.mean.data<float>(), out.rstd.data<float>());
  else
    GIZML_IF_CUDA(rows::cuda::layerNorm(x.device().index, x.data<float>(), weight.data<float>(), bias.data<float>(), eps32, rowCount, n,
                                        out.y.data<float>(), out.mean.data<float>(), out.rstd.data<float>()));
  return out;
}

LayerNormGradResult layerNormGrad(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                  const Tensor& rstd) {
  const char* fn = "gizml::netops::layerNormGrad";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRankAtLeast(fn, "x", x, 1);
  const std::int64_t n = x.rowLength(), rowCount = x.rowCount();
  if (n < 1) fail(fn, "x", "expected rows of at least one value, got shape " + shapeString(x.shape()));
  detail::requireDType(fn, "dy", dy, DType::F32);
  detail::requireShape(fn, "dy", dy, x.shape());
  detail::requireDType(fn, "weight", weight, DType::F32);
  detail::requireShape(fn, "weight", weight, {n});
  detail::requireDType(fn, "mean", mean, DType::F32);
  detail::requireShape(fn, "mean", mean, {rowCount});
  detail::requireDType(fn, "rstd", rstd, DType::F32);
  detail::requireShape(fn, "rstd", rstd, {rowCount});
  detail::requireSameDevice(fn, {{"x", &x}, {"dy", &dy}, {"weight", &weight}, {"mean", &mean}, {"rstd", &rstd}});

  LayerNormGradResult out{Tensor::empty(x.shape(), DType::F32, x.device()), Tensor::zeros({n}, DType::F32, x.device()),
                          Tensor::zeros({n}, DType::F32, x.device())};
  if (rowCount == 0) return out;
  if (x.device().isHost())
    layerNormGradHost(dy.data<float>(), x.data<float>(), weight.data<float>(), mean.data<float>(), rstd.data<float>(),
                      rowCount, n, out.dx.data<float>(), out.dweight.data<float>(), out.dbias.data<float>());
  else
    GIZML_IF_CUDA(rows::cuda::layerNormGrad(x.device().index, dy.data<float>(), x.data<float>(), weight.data<float>(),
                                            mean.data<float>(), rstd.data<float>(), rowCount, n, out.dx.data<float>(),
                                            out.dweight.data<float>(), out.dbias.data<float>()));
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
  const char* fn = "gizml::netops::argmax";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRankAtLeast(fn, "x", x, 1);
  const std::int64_t n = x.rowLength(), rowCount = x.rowCount();
  if (n < 1) fail(fn, "x", "expected rows of at least one value, got shape " + shapeString(x.shape()));
  std::vector<std::int64_t> out(static_cast<std::size_t>(rowCount));
  if (rowCount == 0) return out;
  if (x.device().isHost()) {
    const float* p = x.data<float>();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rowCount; ++r) out[static_cast<std::size_t>(r)] = argmaxRow(p + r * n, n);
    return out;
  }
  Tensor result = Tensor::empty({rowCount}, DType::I64, x.device());
  GIZML_IF_CUDA(rows::cuda::argmax(x.device().index, x.data<float>(), rowCount, n, result.data<std::int64_t>()));
  return result.toVector<std::int64_t>();
}

Tensor dropout(const Tensor& x, Key key, double p) {
  const char* fn = "gizml::netops::dropout";
  detail::requireDType(fn, "x", x, DType::F32);
  if (!(p >= 0.0 && p <= 1.0)) fail(fn, "p", "expected p in [0, 1], got " + std::to_string(p));
  const float p32 = static_cast<float>(p);
  const float factor = static_cast<float>(1.0 / (1.0 - p));  // +inf at p = 1, never applied there
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  const std::int64_t count = x.numel();
  if (count == 0) return y;
  if (x.device().isHost()) dropoutHost(x.data<float>(), count, key, p32, factor, y.data<float>());
  else GIZML_IF_CUDA(rows::cuda::dropout(x.device().index, x.data<float>(), count, key, p32, factor, y.data<float>()));
  return y;
}

}  // namespace gizml::netops

namespace gizml {
std::vector<std::int64_t> Tensor::argmax() const { return netops::argmax(*this); }
Tensor Tensor::dropout(Key key, double p) const { return netops::dropout(*this, key, p); }
}  // namespace gizml
