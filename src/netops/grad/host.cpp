// The backward pass and the optimizer: argument checks, the host paths (OpenMP over elements,
// columns or channels; each output element one thread's, in the order of grad.hpp) and the
// convolution gradients composed from the layouts, im2col / col2im and the exact GEMM, dispatched by
// device. The host paths equal tests/reference/grad_reference.cpp bit for bit.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "core/sizes.hpp"
#include "gizml/netops/grad.hpp"
#include "netops/conv/conv.hpp"
#include "netops/gemm/batch.hpp"
#include "netops/gemm/gemm.hpp"
#include "netops/grad/grad.hpp"

namespace gizml::netops {

namespace grad {

// Below this many elements one thread does an elementwise op: waking the others (passive OpenMP
// threads sleep) costs more than the work. Elementwise: the split never changes a bit.
constexpr std::int64_t kParallelFrom = 1 << 15;

void ElementwiseOp::host(const Args& a) {
  // One loop an op, so that each vectorises; the formula is elementwiseValue's.
  auto each = [&](auto f) {
#pragma omp parallel for schedule(static) if (a.count >= kParallelFrom)
    for (std::int64_t e = 0; e < a.count; ++e) a.out[e] = f(e);
  };
  const float* x = a.a;
  const float* y = a.b;
  const float s = a.s;
  switch (a.op) {
    case Elementwise::Add: each([=](std::int64_t e) { return elementwiseValue(Elementwise::Add, x[e], y[e], s); }); break;
    case Elementwise::Mul: each([=](std::int64_t e) { return elementwiseValue(Elementwise::Mul, x[e], y[e], s); }); break;
    case Elementwise::Scale: each([=](std::int64_t e) { return elementwiseValue(Elementwise::Scale, x[e], 0.0f, s); }); break;
    case Elementwise::Axpy: each([=](std::int64_t e) { return elementwiseValue(Elementwise::Axpy, x[e], y[e], s); }); break;
    case Elementwise::Relu: each([=](std::int64_t e) { return elementwiseValue(Elementwise::Relu, x[e], 0.0f, s); }); break;
    case Elementwise::ReluGrad:
      each([=](std::int64_t e) { return elementwiseValue(Elementwise::ReluGrad, x[e], y[e], s); });
      break;
  }
}

/// Threads split blocks of 64 columns; each block walks the rows in order (every column its own
/// chain of adds, 64 side by side).
void SumRows::host(const Args& a) {
  const std::int64_t blocks = (a.cols + 63) / 64;
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * 64, width = std::min<std::int64_t>(64, a.cols - j0);
    float acc[64];
    for (std::int64_t j = 0; j < width; ++j) acc[j] = 0.0f;
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const float* row = a.x + r * a.cols + j0;
      for (std::int64_t j = 0; j < width; ++j) acc[j] = acc[j] + row[j];
    }
    std::copy(acc, acc + width, a.out + j0);
  }
}

/// Each channel's sum is one chain of adds (element's order), bound by the add's latency: a
/// thread runs 8 channels' chains side by side, so 8 adds are in flight instead of one.
void SumChannels::host(const Args& a) {
  constexpr std::int64_t kChains = 8;
  const std::int64_t groups = (a.c + kChains - 1) / kChains;
#pragma omp parallel for schedule(static)
  for (std::int64_t grp = 0; grp < groups; ++grp) {
    const std::int64_t c0 = grp * kChains;
    if (c0 + kChains > a.c) {  // the last few channels, one chain each
      for (std::int64_t ch = c0; ch < a.c; ++ch) a.out[ch] = element(a, ch);
      continue;
    }
    float acc[kChains] = {};
    for (std::int64_t b = 0; b < a.n; ++b) {
      const float* p = a.x + (b * a.c + c0) * a.inner;
      for (std::int64_t i = 0; i < a.inner; ++i)
        for (std::int64_t k = 0; k < kChains; ++k) acc[k] = acc[k] + p[k * a.inner + i];
    }
    for (std::int64_t k = 0; k < kChains; ++k) a.out[c0 + k] = acc[k];
  }
}

void AdamW::host(const Args& a) {
#pragma omp parallel for schedule(static) if (a.count >= kParallelFrom)
  for (std::int64_t e = 0; e < a.count; ++e) adamWElement(a.s, a.p[e], a.g[e], a.m[e], a.v[e]);
}

}  // namespace grad

namespace {

namespace gm = gemm;
using grad::Elementwise;
using grad::ElementwiseOp;

std::string str(std::int64_t v) { return std::to_string(v); }

void requireSameShape(const char* fn, const char* arg, const Tensor& t, const char* firstArg, const Tensor& first) {
  if (t.shape() != first.shape())
    fail(fn, arg, "expected the shape of " + std::string(firstArg) + " " + shapeString(first.shape()) + ", got " +
                      shapeString(t.shape()));
}

Tensor binary(const char* fn, Elementwise op, const char* an, const Tensor& a, const char* bn, const Tensor& b, float s) {
  detail::requireDType(fn, an, a, DType::F32);
  detail::requireDType(fn, bn, b, DType::F32);
  requireSameShape(fn, bn, b, an, a);
  detail::requireSameDevice(fn, {{an, &a}, {bn, &b}});
  Tensor out = Tensor::empty(a.shape(), DType::F32, a.device());
  if (out.numel() > 0)
    detail::run<ElementwiseOp>(detail::gpuOf(a), {op, a.data<float>(), b.data<float>(), s, a.numel(), out.data<float>()});
  return out;
}

Tensor unary(const char* fn, Elementwise op, const Tensor& x, float s) {
  detail::requireDType(fn, "x", x, DType::F32);
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  if (out.numel() > 0)
    detail::run<ElementwiseOp>(detail::gpuOf(x), {op, x.data<float>(), nullptr, s, x.numel(), out.data<float>()});
  return out;
}

/// A finite scalar argument, rounded once to F32 (and finite there).
float finiteScalar(const char* fn, const char* arg, double v) {
  if (!std::isfinite(v) || !std::isfinite(static_cast<float>(v)))
    fail(fn, arg, "expected a finite value (in F32 too), got " + std::to_string(v));
  return static_cast<float>(v);
}

/// The exact GEMM, on the host with one thread when its output is a single column tile's worth
/// (a first layer's weight gradient: a few hundred chains, each over every pixel of the batch).
/// Threads split only the output's columns, so one thread gives the same bits; it saves a barrier
/// at each of the product's k blocks (hundreds), where sleeping threads are slow to wake.
void runGemm(const Gpu& gpu, const gm::Gemm::Args& args) {
  if (gpu.device.isHost() && args.n <= 64 && args.m * args.n <= 4096) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    gm::Gemm::host(args);
    omp_set_num_threads(saved);
    return;
  }
  detail::run<gm::Gemm>(gpu, args);
}

/// The convolution gradients' geometry: dy [n, o, oh ow] or [n, o, oh, ow] against an input of
/// n x c x h x wd. Returns the geometry; checks every extent.
conv::Geometry2d convGradGeometry(const char* fn, const Tensor& dy, std::int64_t c, std::int64_t h, std::int64_t wd,
                                  std::int64_t kh, std::int64_t kw, std::int64_t stride, std::int64_t pad,
                                  std::int64_t o) {
  detail::requireAtLeast(fn, "kh", kh, 1);
  detail::requireAtLeast(fn, "kw", kw, 1);
  detail::requireAtLeast(fn, "stride", stride, 1);
  detail::requireAtLeast(fn, "pad", pad, 0);
  detail::requireAtLeast(fn, "h", h, 1);
  detail::requireAtLeast(fn, "w", wd, 1);
  const std::int64_t oh = detail::windowCount(fn, "kh", h, kh, stride, pad, 1);
  const std::int64_t ow = detail::windowCount(fn, "kw", wd, kw, stride, pad, 1);
  detail::requireDType(fn, "dy", dy, DType::F32);
  if (dy.rank() != 3 && dy.rank() != 4) fail(fn, "dy", "expected [n, o, oh ow] or [n, o, oh, ow], got " + shapeString(dy.shape()));
  const std::int64_t n = dy.dim(0);
  const Shape want3{n, o, oh * ow}, want4{n, o, oh, ow};
  if (dy.shape() != want3 && dy.shape() != want4)
    fail(fn, "dy", "expected " + shapeString(want3) + " or " + shapeString(want4) + ", got " + shapeString(dy.shape()));
  detail::checkedMul(fn, "dy", detail::checkedMul(fn, "dy", n * oh * ow, c), kh * kw);
  return {n, c, h, wd, kh, kw, stride, pad, oh, ow};
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary("gizml::netops::add", Elementwise::Add, "a", a, "b", b, 0.0f); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("gizml::netops::mul", Elementwise::Mul, "a", a, "b", b, 0.0f); }
Tensor scale(const Tensor& x, double s) {
  const char* fn = "gizml::netops::scale";
  return unary(fn, Elementwise::Scale, x, finiteScalar(fn, "s", s));
}
Tensor axpy(double alpha, const Tensor& x, const Tensor& y) {
  const char* fn = "gizml::netops::axpy";
  const float a = finiteScalar(fn, "alpha", alpha);
  return binary(fn, Elementwise::Axpy, "x", x, "y", y, a);
}
Tensor relu(const Tensor& x) { return unary("gizml::netops::relu", Elementwise::Relu, x, 0.0f); }
Tensor reluGrad(const Tensor& dy, const Tensor& x) {
  return binary("gizml::netops::reluGrad", Elementwise::ReluGrad, "dy", dy, "x", x, 0.0f);
}

Tensor sumRows(const Tensor& x) {
  const char* fn = "gizml::netops::sumRows";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 2);
  Tensor out = Tensor::empty({x.dim(1)}, DType::F32, x.device());
  if (out.numel() > 0) detail::run<grad::SumRows>(detail::gpuOf(x), {x.data<float>(), x.dim(0), x.dim(1), out.data<float>()});
  return out;
}

Tensor sumChannels(const Tensor& x) {
  const char* fn = "gizml::netops::sumChannels";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRankAtLeast(fn, "x", x, 2);
  const std::int64_t n = x.dim(0), c = x.dim(1);
  const std::int64_t inner = (n == 0 || c == 0) ? 0 : x.numel() / (n * c);
  Tensor out = Tensor::empty({c}, DType::F32, x.device());
  if (out.numel() > 0) detail::run<grad::SumChannels>(detail::gpuOf(x), {x.data<float>(), n, c, inner, out.data<float>()});
  return out;
}

Tensor transpose(const Tensor& x) {
  const char* fn = "gizml::netops::transpose";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 2);
  Tensor out = Tensor::empty({x.dim(1), x.dim(0)}, DType::F32, x.device());
  if (out.numel() > 0)
    detail::run<gm::Permute3>(detail::gpuOf(x), {x.data<float>(), {1, x.dim(0), x.dim(1)}, {0, 2, 1}, out.data<float>()});
  return out;
}

Tensor convWeightGrad(const Tensor& dy, const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t stride,
                      std::int64_t pad) {
  const char* fn = "gizml::netops::convWeightGrad";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 4);
  detail::requireDefined(fn, "dy", dy);
  if (x.dim(1) < 1) fail(fn, "x", "expected at least one channel, got " + shapeString(x.shape()));
  if (dy.rank() < 2) fail(fn, "dy", "expected [n, o, oh ow] or [n, o, oh, ow], got " + shapeString(dy.shape()));
  const std::int64_t o = dy.dim(1), c = x.dim(1);
  if (o < 1) fail(fn, "dy", "expected at least one output channel, got " + shapeString(dy.shape()));
  const conv::Geometry2d g = convGradGeometry(fn, dy, c, x.dim(2), x.dim(3), kh, kw, stride, pad, o);
  if (dy.dim(0) != x.dim(0)) fail(fn, "dy", "expected " + str(x.dim(0)) + " images (x's), got " + shapeString(dy.shape()));
  detail::requireSameDevice(fn, {{"dy", &dy}, {"x", &x}});
  const std::int64_t q = g.rowWidth(), rows = g.n * g.oh * g.ow, pixels = g.oh * g.ow;
  Tensor dw = Tensor::empty({o, q}, DType::F32, x.device());
  const Gpu gpu = detail::gpuOf(x);
  if (q >= 64) {
    // Long patch rows: dwᵀ [q, o] = patches [q, n pixels] (A, read in place) times dy as
    // [n pixels, o], then transposed. The same chains over t (fma is symmetric in its factors).
    // The patches are runs copied from the images where im2col's rows are q scattered values:
    // measured on an AMD EPYC (AVX2, 2 threads) for a batch of 128, 32 -> 64 channels, 3 x 3 on
    // 14 x 14, 14.3 ms against 22.4 ms for the [o, q] product over im2col; for 1 -> 32 channels
    // on 28 x 28 (q = 9) the im2col product below was the faster, 5.8 ms against 7.5 ms.
    Tensor patches = Tensor::empty({q, rows}, DType::F32, x.device());
    Tensor dyT = Tensor::empty({rows, o}, DType::F32, x.device());
    Tensor dwT = Tensor::empty({q, o}, DType::F32, x.device());
    if (rows > 0) {
      detail::run<gm::ConvPatches>(gpu, {x.data<float>(), g, patches.data<float>()});
      detail::run<gm::Permute3>(gpu, {dy.data<float>(), {g.n, o, pixels}, {0, 2, 1}, dyT.data<float>()});
    }
    runGemm(gpu, {DType::F32, q, o, rows, patches.data<float>(), rows, dyT.data<float>(), 1, o,
                  dwT.data<float>(), o});
    detail::run<gm::Permute3>(gpu, {dwT.data<float>(), {1, q, o}, {0, 2, 1}, dw.data<float>()});
    return dw;
  }
  // dy as [o, n pixels] and x's im2col [n pixels, q] (copies): dw [o, q] = the chain over the
  // n pixels positions t in order.
  Tensor dyT = Tensor::empty({o, rows}, DType::F32, x.device());
  Tensor cols = Tensor::empty({rows, q}, DType::F32, x.device());
  if (rows > 0) {
    detail::run<gm::Permute3>(gpu, {dy.data<float>(), {g.n, o, pixels}, {1, 0, 2}, dyT.data<float>()});
    detail::run<conv::Im2col>(gpu, {x.data<float>(), g, cols.data<float>()});
  }
  runGemm(gpu, {DType::F32, o, q, rows, dyT.data<float>(), rows, cols.data<float>(), 1, q, dw.data<float>(), q});
  return dw;
}

Tensor convInputGrad(const Tensor& dy, const Tensor& w, std::int64_t h, std::int64_t wd, std::int64_t kh,
                     std::int64_t kw, std::int64_t stride, std::int64_t pad) {
  const char* fn = "gizml::netops::convInputGrad";
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 2);
  detail::requireAtLeast(fn, "kh", kh, 1);
  detail::requireAtLeast(fn, "kw", kw, 1);
  const std::int64_t o = w.dim(0);
  if (o < 1 || w.dim(1) < 1 || w.dim(1) % detail::checkedMul(fn, "kh", kh, kw) != 0)
    fail(fn, "w", "expected [o, c kh kw] with o, c >= 1 and kh kw = " + str(kh * kw) + ", got " + shapeString(w.shape()));
  const std::int64_t c = w.dim(1) / (kh * kw);
  detail::requireDefined(fn, "dy", dy);
  const conv::Geometry2d g = convGradGeometry(fn, dy, c, h, wd, kh, kw, stride, pad, o);
  detail::requireSameDevice(fn, {{"dy", &dy}, {"w", &w}});
  detail::checkedMul(fn, "h", detail::checkedMul(fn, "h", g.n * c, h), wd);
  const std::int64_t q = g.rowWidth(), rows = g.n * g.oh * g.ow, pixels = g.oh * g.ow;
  Tensor dx = Tensor::empty({g.n, c, h, wd}, DType::F32, w.device());
  if (dx.numel() == 0) return dx;
  const Gpu gpu = detail::gpuOf(w);
  if (w.device().isHost()) {
    // dcolsᵀ [q, n pixels] = wᵀ [q, o] times dy as [o, n pixels] (copies of runs), then col2im
    // from that layout, whose window offsets' values for an output row are runs: the chains of
    // the product below (fma is symmetric in its factors) and col2im's sums, so the same bits.
    // Measured on an AMD EPYC (AVX2, 2 threads), a batch of 128, 64 -> 32 channels, 3 x 3 on
    // 14 x 14: col2im from strided columns took about a third of the gradient.
    Tensor wT = Tensor::empty({q, o}, DType::F32, w.device());
    Tensor dyO = Tensor::empty({o, rows}, DType::F32, w.device());
    Tensor dcolsT = Tensor::empty({q, rows}, DType::F32, w.device());
    detail::run<gm::Permute3>(gpu, {w.data<float>(), {1, o, q}, {0, 2, 1}, wT.data<float>()});
    detail::run<gm::Permute3>(gpu, {dy.data<float>(), {g.n, o, pixels}, {1, 0, 2}, dyO.data<float>()});
    detail::run<gm::Gemm>(gpu, {DType::F32, q, rows, o, wT.data<float>(), o, dyO.data<float>(), 1, rows,
                                dcolsT.data<float>(), rows});
    conv::col2imRowsHost(dcolsT.data<float>(), g, dx.data<float>());
    return dx;
  }
  // dy as [n pixels, o] (a copy); dcols [n pixels, q] = the chain over o; then col2im.
  Tensor dyT = Tensor::empty({rows, o}, DType::F32, w.device());
  Tensor dcols = Tensor::empty({rows, q}, DType::F32, w.device());
  detail::run<gm::Permute3>(gpu, {dy.data<float>(), {g.n, o, pixels}, {0, 2, 1}, dyT.data<float>()});
  detail::run<gm::Gemm>(gpu, {DType::F32, rows, q, o, dyT.data<float>(), o, w.data<float>(), 1, q, dcols.data<float>(), q});
  detail::run<conv::Col2im>(gpu, {dcols.data<float>(), g, dx.data<float>()});
  return dx;
}

void adamW(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamWConfig& config,
           std::int64_t step) {
  const char* fn = "gizml::netops::adamW";
  detail::requireDType(fn, "param", param, DType::F32);
  detail::requireDType(fn, "grad", grad, DType::F32);
  detail::requireDType(fn, "m", m, DType::F32);
  detail::requireDType(fn, "v", v, DType::F32);
  requireSameShape(fn, "grad", grad, "param", param);
  requireSameShape(fn, "m", m, "param", param);
  requireSameShape(fn, "v", v, "param", param);
  detail::requireSameDevice(fn, {{"param", &param}, {"grad", &grad}, {"m", &m}, {"v", &v}});
  if (param.raw() == m.raw() || param.raw() == v.raw() || m.raw() == v.raw() || grad.raw() == param.raw() ||
      grad.raw() == m.raw() || grad.raw() == v.raw())
    if (param.numel() > 0) fail(fn, "m, v", "expected param, grad, m and v in four separate tensors");
  const AdamWConfig& c = config;
  if (!(c.lr >= 0.0) || !std::isfinite(c.lr)) fail(fn, "config.lr", "expected a finite lr >= 0, got " + std::to_string(c.lr));
  if (!(c.beta1 >= 0.0 && c.beta1 < 1.0)) fail(fn, "config.beta1", "expected beta1 in [0, 1), got " + std::to_string(c.beta1));
  if (!(c.beta2 >= 0.0 && c.beta2 < 1.0)) fail(fn, "config.beta2", "expected beta2 in [0, 1), got " + std::to_string(c.beta2));
  if (!(c.eps > 0.0) || !std::isfinite(c.eps)) fail(fn, "config.eps", "expected a finite eps > 0, got " + std::to_string(c.eps));
  if (!(c.weightDecay >= 0.0) || !std::isfinite(c.weightDecay))
    fail(fn, "config.weightDecay", "expected a finite weightDecay >= 0, got " + std::to_string(c.weightDecay));
  if (step < 1) fail(fn, "step", "expected step >= 1 (the count including this step), got " + std::to_string(step));
  // beta^t by square-and-multiply in f64: only IEEE products, so the scalars are the same bits on
  // every machine (a libm's pow may differ in its last bit).
  auto power = [](double b, std::int64_t e) {
    double r = 1.0;
    while (e > 0) {
      if (e & 1) r = r * b;
      b = b * b;
      e >>= 1;
    }
    return r;
  };
  const grad::AdamWScalars s{static_cast<float>(1.0 - c.lr * c.weightDecay),
                             static_cast<float>(1.0 - c.beta1),
                             static_cast<float>(c.beta2),
                             static_cast<float>(1.0 - c.beta2),
                             static_cast<float>(std::sqrt(1.0 - power(c.beta2, step))),
                             static_cast<float>(c.eps),
                             static_cast<float>(-(c.lr / (1.0 - power(c.beta1, step))))};
  if (param.numel() == 0) return;
  detail::run<grad::AdamW>(detail::gpuOf(param), {s, param.data<float>(), grad.data<float>(), m.data<float>(),
                                                  v.data<float>(), param.numel()});
}

}  // namespace gizml::netops
