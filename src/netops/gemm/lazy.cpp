// Lazy products, affine and patchRows: building the epilogue, argument checks, and the product,
// its epilogue and the patches dispatched by device (core/dispatch.hpp) to the kernels of gemm.hpp.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "core/backend.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "gizml/lazy.hpp"
#include "gizml/netops/gemm.hpp"
#include "netops/gemm/batch.hpp"
#include "netops/gemm/gemm.hpp"

namespace gizml {

namespace gm = netops::gemm;

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

bool isComputeType(DType d) { return d == DType::F32 || d == DType::BF16 || d == DType::F16; }

void requireCompute(const char* fn, DType compute) {
  if (!isComputeType(compute))
    fail(fn, "compute", "expected F32, BF16 or F16, got " + dtypeName(compute));
}

void checkConvGeometry(const char* fn, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh,
                       std::int64_t kw, std::int64_t pad) {
  if (kh < 1 || kw < 1) fail(fn, "kh, kw", "expected a kernel of at least 1 x 1, got " + str(kh) + " x " + str(kw));
  if (pad < 0) fail(fn, "pad", "expected pad >= 0, got " + str(pad));
  if (c < 1) fail(fn, "x", "expected at least one channel");
  if (kh > h + 2 * pad || kw > w + 2 * pad)
    fail(fn, "kh, kw",
         "expected a kernel no larger than the padded input " + str(h + 2 * pad) + " x " + str(w + 2 * pad) + ", got " +
             str(kh) + " x " + str(kw));
}

}  // namespace

// ---- building a Lazy -------------------------------------------------------------------------------

Lazy lazyMatmul(const Tensor& a, const Tensor& w, DType compute) {
  const char* fn = "gizml::lazyMatmul";
  detail::requireDType(fn, "a", a, DType::F32);
  detail::requireRank(fn, "a", a, 2);
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 2);
  if (w.dim(1) != a.dim(1))
    fail(fn, "w", "expected [n, " + str(a.dim(1)) + "] (k of a), got " + shapeString(w.shape()));
  detail::requireSameDevice(fn, {{"a", &a}, {"w", &w}});
  requireCompute(fn, compute);
  Lazy l;
  l.kind_ = Lazy::Kind::Matmul;
  l.a_ = a;
  l.b_ = w;
  l.compute_ = compute;
  l.shape_ = {a.dim(0), w.dim(0)};
  return l;
}

Lazy lazyConv(const Tensor& w, const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t pad, DType compute) {
  const char* fn = "gizml::lazyConv";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 3);
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 2);
  const std::int64_t c = x.dim(0), h = x.dim(1), wd = x.dim(2);
  checkConvGeometry(fn, c, h, wd, kh, kw, pad);
  if (w.dim(1) != c * kh * kw)
    fail(fn, "w", "expected [o, c kh kw] = [o, " + str(c * kh * kw) + "], got " + shapeString(w.shape()));
  detail::requireSameDevice(fn, {{"w", &w}, {"x", &x}});
  requireCompute(fn, compute);
  Lazy l;
  l.kind_ = Lazy::Kind::Conv;
  l.a_ = w;
  l.b_ = x;
  l.compute_ = compute;
  l.kh_ = kh;
  l.kw_ = kw;
  l.pad_ = pad;
  l.shape_ = {w.dim(0), (h + 2 * pad - kh + 1) * (wd + 2 * pad - kw + 1)};
  return l;
}

Lazy lazyMatmulNN(const Tensor& a, const Tensor& b, DType compute) {
  const char* fn = "gizml::lazyMatmulNN";
  detail::requireDType(fn, "a", a, DType::F32);
  detail::requireRank(fn, "a", a, 2);
  detail::requireDType(fn, "b", b, DType::F32);
  detail::requireRank(fn, "b", b, 2);
  if (b.dim(0) != a.dim(1))
    fail(fn, "b", "expected [" + str(a.dim(1)) + ", n] (k of a first), got " + shapeString(b.shape()));
  detail::requireSameDevice(fn, {{"a", &a}, {"b", &b}});
  requireCompute(fn, compute);
  Lazy l;
  l.kind_ = Lazy::Kind::MatmulNN;
  l.a_ = a;
  l.b_ = b;
  l.compute_ = compute;
  l.shape_ = {a.dim(0), b.dim(1)};
  return l;
}

Lazy lazyMatmulTN(const Tensor& a, const Tensor& b, DType compute) {
  const char* fn = "gizml::lazyMatmulTN";
  detail::requireDType(fn, "a", a, DType::F32);
  detail::requireRank(fn, "a", a, 2);
  detail::requireDType(fn, "b", b, DType::F32);
  detail::requireRank(fn, "b", b, 2);
  if (b.dim(0) != a.dim(0))
    fail(fn, "b", "expected [" + str(a.dim(0)) + ", n] (k of a first), got " + shapeString(b.shape()));
  detail::requireSameDevice(fn, {{"a", &a}, {"b", &b}});
  requireCompute(fn, compute);
  Lazy l;
  l.kind_ = Lazy::Kind::MatmulTN;
  l.a_ = a;
  l.b_ = b;
  l.compute_ = compute;
  l.shape_ = {a.dim(1), b.dim(1)};
  return l;
}

Lazy lazyConvBatch(const Tensor& w, const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t stride,
                   std::int64_t pad, DType compute) {
  const char* fn = "gizml::lazyConvBatch";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 4);
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 2);
  if (stride < 1) fail(fn, "stride", "expected stride >= 1, got " + str(stride));
  const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  checkConvGeometry(fn, c, h, wd, kh, kw, pad);
  if (w.dim(1) != c * kh * kw)
    fail(fn, "w", "expected [o, c kh kw] = [o, " + str(c * kh * kw) + "], got " + shapeString(w.shape()));
  detail::requireSameDevice(fn, {{"w", &w}, {"x", &x}});
  requireCompute(fn, compute);
  Lazy l;
  l.kind_ = Lazy::Kind::ConvBatch;
  l.a_ = w;
  l.b_ = x;
  l.compute_ = compute;
  l.kh_ = kh;
  l.kw_ = kw;
  l.pad_ = pad;
  l.stride_ = stride;
  const std::int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (wd + 2 * pad - kw) / stride + 1;
  l.shape_ = {n, w.dim(0), oh * ow};
  return l;
}

Lazy lazyConv3(const Tensor& w, const Tensor& x) {
  const char* fn = "gizml::lazyConv3";
  detail::requireRank(fn, "x", x, 4);
  if (x.dtype() != DType::BF16 && !(x.dtype() == DType::F32 && x.device().isHost()))
    fail(fn, "x", "expected BF16 values (F32 holding BF16 values on the host), got " + dtypeName(x.dtype()));
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 2);
  const std::int64_t frames = x.dim(0) - 2, c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  if (frames < 1) fail(fn, "x", "expected [n + 2, c, h, w] with n >= 1, got " + shapeString(x.shape()));
  checkConvGeometry(fn, c, h, wd, 3, 3, 1);
  if (w.dim(1) != 27 * c) fail(fn, "w", "expected [o, 27 c] = [o, " + str(27 * c) + "], got " + shapeString(w.shape()));
  detail::requireSameDevice(fn, {{"w", &w}, {"x", &x}});
  Lazy l;
  l.kind_ = Lazy::Kind::Conv3;
  l.a_ = w;
  l.b_ = x;
  l.compute_ = x.device().isHost() ? DType::F32 : DType::BF16;
  l.kh_ = l.kw_ = 3;
  l.pad_ = 1;
  l.shape_ = {frames, w.dim(0), h * wd};
  return l;
}

Lazy& Lazy::bias(const Tensor& b) {
  const char* fn = "gizml::Lazy::bias";
  detail::requireDType(fn, "b", b, DType::F32);
  const std::int64_t want = kind_ == Kind::Matmul ? shape_[1] : kind_ == Kind::Conv ? shape_[0] : shape_[1];
  detail::requireShape(fn, "b", b, {want});
  if (b.device() != device()) fail(fn, "b", "expected the product's device (" + device().name() + "), got " + b.device().name());
  if (steps_.size() >= static_cast<std::size_t>(gm::kMaxSteps)) fail(fn, "", "at most " + str(gm::kMaxSteps) + " epilogue steps");
  steps_.push_back({Op::Bias, 0.0f, b});
  return *this;
}

Lazy& Lazy::residual(const Tensor& r) {
  const char* fn = "gizml::Lazy::residual";
  detail::requireDType(fn, "r", r, DType::F32);
  detail::requireShape(fn, "r", r, shape_);
  if (r.device() != device()) fail(fn, "r", "expected the product's device (" + device().name() + "), got " + r.device().name());
  if (steps_.size() >= static_cast<std::size_t>(gm::kMaxSteps)) fail(fn, "", "at most " + str(gm::kMaxSteps) + " epilogue steps");
  steps_.push_back({Op::Residual, 0.0f, r});
  return *this;
}

namespace {
void addSimpleStep(std::vector<Lazy::Step>& steps, Lazy::Op op, float value, const char* fn) {
  if (steps.size() >= static_cast<std::size_t>(gm::kMaxSteps)) fail(fn, "", "at most " + str(gm::kMaxSteps) + " epilogue steps");
  steps.push_back({op, value, Tensor()});
}
}  // namespace

Lazy& Lazy::scale(double s) {
  addSimpleStep(steps_, Op::Scale, static_cast<float>(s), "gizml::Lazy::scale");
  return *this;
}
Lazy& Lazy::silu() {
  addSimpleStep(steps_, Op::Silu, 0.0f, "gizml::Lazy::silu");
  return *this;
}
Lazy& Lazy::gelu() {
  addSimpleStep(steps_, Op::Gelu, 0.0f, "gizml::Lazy::gelu");
  return *this;
}
Lazy& Lazy::relu() {
  addSimpleStep(steps_, Op::Relu, 0.0f, "gizml::Lazy::relu");
  return *this;
}

Lazy& Lazy::dtype(DType d) {
  if (d != DType::F32 && d != DType::BF16 && d != DType::F16)
    fail("gizml::Lazy::dtype", "d", "expected F32, BF16 or F16, got " + dtypeName(d));
  out_ = d;
  return *this;
}

Device Lazy::device() const { return a_.device(); }

Tensor Lazy::store() const {
  Tensor out = Tensor::empty(shape_, out_, device());
  storeInto(out);
  return out;
}

// ---- computing it ------------------------------------------------------------------------------------

void Lazy::storeInto(const Tensor& out) const {
  const char* fn = "gizml::Lazy::storeInto";
  detail::requireDType(fn, "out", out, out_);
  detail::requireShape(fn, "out", out, shape_);
  if (out.device() != device()) fail(fn, "out", "expected the product's device (" + device().name() + "), got " + out.device().name());

  // The epilogue, as data.
  gm::Epilogue e;
  e.biasPerRow = kind_ == Kind::Conv || kind_ == Kind::Conv3;  // the products' bias is per column
  for (const Step& s : steps_) e.steps[e.count++] = {s.op, s.value, s.tensor.defined() ? s.tensor.data<float>() : nullptr};

  // On the host the epilogue is applied as each tile of the product leaves the registers
  // (gemmStoreHost), unless out overlaps an input: then the product is computed first, below.
  auto overlapsOut = [&](const Tensor& t) { return detail::overlaps(out, t); };
  bool apart = !overlapsOut(a_) && !overlapsOut(b_);  // out can be written as the chains finish
  for (const Step& s : steps_) apart = apart && !overlapsOut(s.tensor);
  const bool fused = device().isHost() && apart;
  if (fused && kind_ == Kind::Matmul) {
    const std::int64_t m = a_.dim(0), k = a_.dim(1), n = b_.dim(0);
    gm::gemmStoreHost({compute_, m, n, k, a_.data<float>(), k, b_.data<float>(), k, 1, e, out.raw(), out_, n});
    return;
  }
  if (fused && kind_ == Kind::MatmulNN) {  // b [k, n] read as it is (its columns contiguous)
    const std::int64_t m = a_.dim(0), k = a_.dim(1), n = b_.dim(1);
    gm::gemmStoreHost({compute_, m, n, k, a_.data<float>(), k, b_.data<float>(), 1, n, e, out.raw(), out_, n});
    return;
  }
  if (fused && kind_ == Kind::MatmulTN) {  // a [k, m] transposed into a temporary [m, k] (a copy)
    const std::int64_t k = a_.dim(0), m = a_.dim(1), n = b_.dim(1);
    Tensor at = Tensor::empty({m, k}, DType::F32, device());
    if (at.numel() > 0) detail::run<gm::Permute3>(detail::gpuOf(a_), {a_.data<float>(), {1, k, m}, {0, 2, 1}, at.data<float>()});
    gm::gemmStoreHost({compute_, m, n, k, at.data<float>(), k, b_.data<float>(), 1, n, e, out.raw(), out_, n});
    return;
  }
  if (fused && (kind_ == Kind::Conv || kind_ == Kind::Conv3)) {
    // A convolution: per frame (one for lazyConv), w [o, c kh kw] times the frame's patches, each
    // frame with its own residual frame; lazyConv3's frames t .. t + 2 are contiguous: one image
    // of 3 c channels.
    const bool conv3 = kind_ == Kind::Conv3;
    const std::int64_t ch = conv3 ? 3 * b_.dim(1) : b_.dim(0), o = a_.dim(0), cols = shape_.back();
    const std::size_t frameBytes = dtypeBytes(b_.dtype(), (conv3 ? b_.dim(1) : ch) * b_.dim(-2) * b_.dim(-1));
    for (std::int64_t t = 0; t < (conv3 ? shape_[0] : 1); ++t) {
      gm::Epilogue ef = e;
      for (int s = 0; s < ef.count; ++s)
        if (ef.steps[s].op == Op::Residual) ef.steps[s].data += t * o * cols;
      gm::convStoreHost({compute_, a_.data<float>(), static_cast<const char*>(b_.raw()) + t * frameBytes,
                         b_.dtype() == DType::BF16, o, ch, b_.dim(-2), b_.dim(-1), kh_, kw_, pad_, nullptr},
                        ef, static_cast<char*>(out.raw()) + dtypeBytes(out_, t * o * cols), out_);
    }
    return;
  }

  if (fused && kind_ == Kind::ConvBatch && stride_ == 1) {
    // All images in one product, the patches packed from the images into the B panels, each tile
    // through the epilogue into out [b] (its residual from the residual's image b).
    gm::convBatchStoreHost(compute_, a_.data<float>(), b_.data<float>(), b_.dim(0), a_.dim(0), b_.dim(1), b_.dim(2),
                           b_.dim(3), kh_, kw_, pad_, e, out.raw(), out_);
    return;
  }

  if (apart && (kind_ == Kind::Matmul || kind_ == Kind::MatmulNN || kind_ == Kind::MatmulTN || kind_ == Kind::Conv)) {
    // On a GPU: the epilogue in the product's store (each chain through it as it leaves the
    // registers, straight into out), as the host's above.
    const Gpu gpu = detail::gpuOf(a_);
    const gm::EpilogueTarget store{e, out.raw(), out_};
    if (kind_ == Kind::Conv) {
      detail::run<gm::ConvProduct>(gpu, {compute_, a_.data<float>(), b_.raw(), b_.dtype() == DType::BF16, a_.dim(0),
                                         b_.dim(0), b_.dim(1), b_.dim(2), kh_, kw_, pad_, nullptr, store});
      return;
    }
    const bool tn = kind_ == Kind::MatmulTN, nn = kind_ == Kind::MatmulNN;
    const std::int64_t m = tn ? a_.dim(1) : a_.dim(0), k = tn ? a_.dim(0) : a_.dim(1), n = shape_[1];
    Tensor at;  // TN: a [k, m] transposed into a temporary [m, k] (a copy), then the NN product
    if (tn) {
      at = Tensor::empty({m, k}, DType::F32, device());
      if (at.numel() > 0) detail::run<gm::Permute3>(gpu, {a_.data<float>(), {1, k, m}, {0, 2, 1}, at.data<float>()});
    }
    const float* a = tn ? at.data<float>() : a_.data<float>();
    const std::int64_t bsN = tn || nn ? 1 : k, bsK = tn || nn ? n : 1;
    detail::run<gm::Gemm>(gpu, {compute_, m, n, k, a, k, b_.data<float>(), bsN, bsK, nullptr, n, store});
    return;
  }

  // The product in F32, as [rows, cols] (conv3: one [o, h w] frame after another).
  const std::int64_t cols = shape_.back();
  const std::int64_t rows = out.numel() / std::max<std::int64_t>(cols, 1);
  Tensor product = Tensor::empty({rows, cols}, DType::F32, device());
  float* c = product.data<float>();
  const Gpu gpu = detail::gpuOf(a_);

  if (kind_ == Kind::Matmul) {
    const std::int64_t m = a_.dim(0), k = a_.dim(1), n = b_.dim(0);
    detail::run<gm::Gemm>(gpu, {compute_, m, n, k, a_.data<float>(), k, b_.data<float>(), k, 1, c, n});
  } else if (kind_ == Kind::MatmulNN) {
    const std::int64_t m = a_.dim(0), k = a_.dim(1), n = b_.dim(1);
    detail::run<gm::Gemm>(gpu, {compute_, m, n, k, a_.data<float>(), k, b_.data<float>(), 1, n, c, n});
  } else if (kind_ == Kind::MatmulTN) {
    // a [k, m] transposed into a temporary [m, k] (a copy), then the NN product.
    const std::int64_t k = a_.dim(0), m = a_.dim(1), n = b_.dim(1);
    Tensor at = Tensor::empty({m, k}, DType::F32, device());
    if (at.numel() > 0) detail::run<gm::Permute3>(gpu, {a_.data<float>(), {1, k, m}, {0, 2, 1}, at.data<float>()});
    detail::run<gm::Gemm>(gpu, {compute_, m, n, k, at.data<float>(), k, b_.data<float>(), 1, n, c, n});
  } else if (kind_ == Kind::ConvBatch) {
    // The patches of the whole batch [c kh kw, n oh ow], one product [o, n oh ow], then the store
    // lays it out as [n, o, oh ow] through the epilogue.
    const std::int64_t n = b_.dim(0), ch = b_.dim(1), h = b_.dim(2), wd = b_.dim(3), o = a_.dim(0);
    const std::int64_t oh = (h + 2 * pad_ - kh_) / stride_ + 1, ow = (wd + 2 * pad_ - kw_) / stride_ + 1;
    const netops::conv::Geometry2d g{n, ch, h, wd, kh_, kw_, stride_, pad_, oh, ow};
    const std::int64_t q = g.rowWidth(), cols = n * oh * ow;
    Tensor patches = Tensor::empty({q, cols}, DType::F32, device());
    if (patches.numel() > 0) detail::run<gm::ConvPatches>(gpu, {b_.data<float>(), g, patches.data<float>()});
    detail::run<gm::Gemm>(gpu, {compute_, o, cols, q, a_.data<float>(), q, patches.data<float>(), 1, cols, c, cols});
    if (out.numel() > 0) detail::run<gm::ConvBatchStore>(gpu, {c, n, o, oh * ow, e, out.raw(), out_});
    return;
  } else {
    // A convolution: per frame (one for lazyConv), w [o, c kh kw] times the frame's patches;
    // lazyConv3's frames t .. t + 2 are contiguous: one image of 3 c channels.
    const bool conv3 = kind_ == Kind::Conv3;
    const std::int64_t frames = conv3 ? shape_[0] : 1;
    const std::int64_t ch = conv3 ? 3 * b_.dim(1) : b_.dim(0);
    const std::int64_t h = b_.dim(-2), wd = b_.dim(-1), o = a_.dim(0);
    const std::int64_t pixels = (h + 2 * pad_ - kh_ + 1) * (wd + 2 * pad_ - kw_ + 1);
    const bool bf16 = b_.dtype() == DType::BF16;
    const std::size_t frameBytes = dtypeBytes(b_.dtype(), (conv3 ? b_.dim(1) : ch) * h * wd);
    for (std::int64_t t = 0; t < frames; ++t)
      detail::run<gm::ConvProduct>(gpu, {compute_, a_.data<float>(), static_cast<const char*>(b_.raw()) + t * frameBytes,
                                         bf16, o, ch, h, wd, kh_, kw_, pad_, c + t * o * pixels});
  }

  if (kind_ != Kind::Conv3 || e.count == 0) {
    detail::run<gm::EpilogueStore>(gpu, {c, rows, cols, e, out.raw(), out_});
    return;
  }
  // Conv3: rows of the product are (frame, channel), the bias is per channel: a frame at a time,
  // each with its own residual frame.
  const std::int64_t o = shape_[1];
  for (std::int64_t t = 0; t < shape_[0]; ++t) {
    gm::Epilogue ef = e;
    for (int s = 0; s < ef.count; ++s)
      if (ef.steps[s].op == Op::Residual) ef.steps[s].data += t * o * cols;
    void* dst = static_cast<char*>(out.raw()) + dtypeBytes(out_, t * o * cols);
    detail::run<gm::EpilogueStore>(gpu, {c + t * o * cols, o, cols, ef, dst, out_});
  }
}

namespace netops {

Tensor affine(const Tensor& x, const Tensor& w, const Tensor& b, DType compute) {
  const char* fn = "gizml::netops::affine";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 2);
  detail::requireDType(fn, "w", w, DType::F32);
  detail::requireRank(fn, "w", w, 2);
  if (w.dim(1) != x.dim(1)) fail(fn, "w", "expected [out, " + str(x.dim(1)) + "] (in of x), got " + shapeString(w.shape()));
  detail::requireDType(fn, "b", b, DType::F32);
  detail::requireShape(fn, "b", b, {w.dim(0)});
  detail::requireSameDevice(fn, {{"x", &x}, {"w", &w}, {"b", &b}});
  requireCompute(fn, compute);
  return lazyMatmul(x, w, compute).bias(b).store();
}

Tensor patchRows(const Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t pad, std::int64_t r0, std::int64_t r1,
                 DType dtype) {
  const char* fn = "gizml::netops::patchRows";
  detail::requireDType(fn, "x", x, DType::F32);
  detail::requireRank(fn, "x", x, 3);
  const std::int64_t c = x.dim(0), h = x.dim(1), w = x.dim(2);
  checkConvGeometry(fn, c, h, w, kh, kw, pad);
  const std::int64_t oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kw + 1;
  if (r0 < 0 || r0 > r1 || r1 > oh)
    fail(fn, "r0, r1", "expected 0 <= r0 <= r1 <= " + str(oh) + " (output rows), got " + str(r0) + ", " + str(r1));
  if (dtype != DType::F32 && dtype != DType::BF16) fail(fn, "dtype", "expected F32 or BF16, got " + dtypeName(dtype));
  Tensor out = Tensor::empty({c * kh * kw, (r1 - r0) * ow}, dtype, x.device());
  if (out.numel() > 0)
    detail::run<gm::PatchRows>(detail::gpuOf(x), {x.data<float>(), c, h, w, kh, kw, pad, r0, r1, out.raw(), dtype});
  return out;
}

}  // namespace netops
}  // namespace gizml
