#include "gizml/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "core/backend.hpp"
#include "core/host_memory.hpp"
#include "core/storage.hpp"
#include "exact/convert.hpp"
#include "exact/philox.hpp"
#include "gizml/error.hpp"
#include "gizml/gpu.hpp"

namespace gizml {

std::string shapeString(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

namespace detail {

Storage::Storage(std::size_t n, Device d) : bytes(n), device(d) {
  if (n == 0) return;
  if (d.isHost()) {
    try {
      ptr = hostAllocate(n);
    } catch (const std::bad_alloc&) {
      throw Error("gizml::Tensor: out of host memory allocating " + std::to_string(n) + " bytes");
    }
  } else {
    GIZML_IF_CUDA(ptr = cudaAllocate(d.index, n));
  }
}

Storage::Storage(void* p, std::size_t n, Device d, std::shared_ptr<void> o)
    : ptr(p), bytes(n), device(d), owner(std::move(o)), external(true) {}

Storage::~Storage() {
  if (!ptr || external) return;  // external memory: `owner` (released after this body) frees it
  if (device.isHost()) hostRelease(ptr, bytes);
  else GIZML_IF_CUDA(cudaRelease(device.index, ptr));
}

}  // namespace detail

namespace {

std::int64_t checkedCount(const char* fn, const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    if (e < 0) fail(fn, "shape", "expected extents >= 0, got " + shapeString(shape));
    if (e != 0 && n > std::numeric_limits<std::int64_t>::max() / 16 / e)
      fail(fn, "shape", "the element count of " + shapeString(shape) + " overflows");
    n *= e;
  }
  return n;
}

void checkDevice(const char* fn, Device d) {
  if (d.isHost()) return;
  if (!builtWithCuda()) fail(fn, "device", "expected the host: gizml was built without CUDA");
  if (d.index < 0 || d.index >= gpuCount())
    fail(fn, "device",
         "expected a present GPU, got " + d.name() + " (" + std::to_string(gpuCount()) + " GPUs found)");
}

// Element access for dtype conversion on the host: every dtype through double, which holds each
// exactly (I64 beyond 2^53 aside).
double loadAsDouble(const void* base, DType d, std::int64_t i) {
  const auto* b = static_cast<const unsigned char*>(base);
  switch (d) {
    case DType::F32: return reinterpret_cast<const float*>(b)[i];
    case DType::F64: return reinterpret_cast<const double*>(b)[i];
    case DType::BF16: return exact::bf16ToFloat(reinterpret_cast<const std::uint16_t*>(b)[i]);
    case DType::F16: return exact::f16ToFloat(reinterpret_cast<const std::uint16_t*>(b)[i]);
    case DType::E4M3: return exact::e4m3ToFloat(b[i]);
    case DType::I8: return reinterpret_cast<const std::int8_t*>(b)[i];
    case DType::I4: return exact::i4Value(b[i / 2] >> ((i % 2) * 4));
    case DType::I32: return reinterpret_cast<const std::int32_t*>(b)[i];
    case DType::I64: return static_cast<double>(reinterpret_cast<const std::int64_t*>(b)[i]);
    case DType::U8: return b[i];
  }
  return 0;
}

template <class T>
T roundClampWide(double v) {
  if (v != v) return 0;
  double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

// Floats narrower than F32 round from the F32 value (so F64 -> BF16 rounds twice, documented in
// Tensor::to); integers round to nearest even and clamp; NaN becomes 0.
void storeFromDouble(void* base, DType d, std::int64_t i, double v) {
  auto* b = static_cast<unsigned char*>(base);
  float f = static_cast<float>(v);
  switch (d) {
    case DType::F32: reinterpret_cast<float*>(b)[i] = f; break;
    case DType::F64: reinterpret_cast<double*>(b)[i] = v; break;
    case DType::BF16: reinterpret_cast<std::uint16_t*>(b)[i] = exact::floatToBF16(f); break;
    case DType::F16: reinterpret_cast<std::uint16_t*>(b)[i] = exact::floatToF16(f); break;
    case DType::E4M3: b[i] = exact::floatToE4M3(f); break;
    case DType::I8: reinterpret_cast<std::int8_t*>(b)[i] = static_cast<std::int8_t>(exact::roundClamp(f, -128, 127)); break;
    case DType::I4: {
      unsigned nibble = static_cast<unsigned>(exact::roundClamp(f, -8, 7)) & 0xfu;
      int shift = (i % 2) * 4;
      b[i / 2] = static_cast<unsigned char>((b[i / 2] & ~(0xfu << shift)) | (nibble << shift));
      break;
    }
    case DType::I32: reinterpret_cast<std::int32_t*>(b)[i] = roundClampWide<std::int32_t>(v); break;
    case DType::I64: reinterpret_cast<std::int64_t*>(b)[i] = roundClampWide<std::int64_t>(v); break;
    case DType::U8: b[i] = static_cast<unsigned char>(exact::roundClamp(f, 0, 255)); break;
  }
}

}  // namespace

Tensor::Tensor() = default;

namespace {
/// GIZML_POISON_EMPTY set (and not "0"): Tensor::empty fills its bytes with 0xFF.
bool poisonEmpty() {
  static const bool on = [] {
    const char* v = std::getenv("GIZML_POISON_EMPTY");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  const char* fn = "gizml::Tensor::empty";
  std::int64_t n = checkedCount(fn, shape);
  checkDevice(fn, device);
  Tensor t;
  t.storage_ = std::make_shared<detail::Storage>(dtypeBytes(dtype, n), device);
  t.shape_ = shape;
  t.dtype_ = dtype;
  if (poisonEmpty() && t.bytes() > 0) {
    if (device.isHost()) std::memset(t.raw(), 0xFF, t.bytes());
    else GIZML_IF_CUDA(detail::cudaFillBytes(device.index, t.raw(), t.bytes(), 0xFF));
  }
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (t.bytes() == 0) return t;
  if (device.isHost()) std::memset(t.raw(), 0, t.bytes());
  else GIZML_IF_CUDA(detail::cudaZero(device.index, t.raw(), t.bytes()));
  return t;
}

Tensor Tensor::fromHostBytes(const void* src, std::size_t count, DType dtype, const Shape& shape, Device device) {
  const char* fn = "gizml::Tensor::fromVector";
  std::int64_t n = checkedCount(fn, shape);
  if (static_cast<std::int64_t>(count) != n)
    fail(fn, "values", "expected " + std::to_string(n) + " values for shape " + shapeString(shape) + ", got " +
                           std::to_string(count));
  checkDevice(fn, device);
  Tensor t = empty(shape, dtype, device);
  if (t.bytes() == 0) return t;
  if (device.isHost()) std::memcpy(t.raw(), src, t.bytes());
  else GIZML_IF_CUDA(detail::cudaCopy(t.raw(), device, src, Device::host(), t.bytes()));
  return t;
}

Tensor Tensor::fromExternal(void* data, const Shape& shape, DType dtype, Device device,
                            std::shared_ptr<void> owner) {
  const char* fn = "gizml::Tensor::fromExternal";
  std::int64_t n = checkedCount(fn, shape);
  checkDevice(fn, device);
  const std::size_t bytes = dtypeBytes(dtype, n);
  if (data == nullptr && bytes != 0) fail(fn, "data", "expected an address, got null for " + shapeString(shape));
  const std::size_t align = static_cast<std::size_t>(std::max(1, dtypeBits(dtype) / 8));
  if (reinterpret_cast<std::uintptr_t>(data) % align != 0)
    fail(fn, "data", "expected an address aligned to " + std::to_string(align) + " bytes (one " + dtypeName(dtype) +
                         " element)");
  Tensor t;
  t.storage_ = std::make_shared<detail::Storage>(data, bytes, device, std::move(owner));
  t.shape_ = shape;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::fromFloats(const std::vector<float>& values, const Shape& shape, DType dtype, Device device) {
  Tensor f32 = fromHostBytes(values.data(), values.size(), DType::F32, shape, Device::host());
  Tensor converted = dtype == DType::F32 ? f32 : f32.to(dtype);
  return device.isHost() ? converted : converted.to(device);
}

namespace {
/// Tensor::uniform and Tensor::normal: one thread a Philox counter, on the host or a GPU.
Tensor filled(Key key, const Shape& shape, Device device, exact::Draw draw) {
  Tensor t = Tensor::empty(shape, DType::F32, device);
  const std::int64_t n = t.numel();
  float* out = t.data<float>();
  if (device.isCuda()) {
    const Gpu g{device, nullptr};
    if (draw == exact::Draw::Uniform) GIZML_IF_CUDA(detail::cudaFillUniform(g, out, n, key));
    else GIZML_IF_CUDA(detail::cudaFillNormal(g, out, n, key));
    return t;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t g = 0; g < (n + 3) / 4; ++g)
    exact::fillDrawGroup(draw, key.k0, key.k1, static_cast<std::uint64_t>(g), out, n);
  return t;
}
}  // namespace

Tensor Tensor::uniform(Key key, const Shape& shape, Device device) {
  return filled(key, shape, device, exact::Draw::Uniform);
}

Tensor Tensor::normal(Key key, const Shape& shape, Device device) {
  return filled(key, shape, device, exact::Draw::Normal);
}

void Tensor::failDim(int axis) const {
  const int r = rank();
  fail("gizml::Tensor::dim", "axis", "expected in [-" + std::to_string(r) + ", " + std::to_string(r) + "), got " +
                                         std::to_string(axis));
}

std::int64_t Tensor::rowLength() const { return shape_.empty() ? 1 : shape_.back(); }

std::int64_t Tensor::rowCount() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i + 1 < shape_.size(); ++i) n *= shape_[i];
  return n;
}

Device Tensor::device() const { return storage_ ? storage_->device : Device::host(); }

void* Tensor::raw() const {
  return storage_ && storage_->ptr ? static_cast<unsigned char*>(storage_->ptr) + offset_ : nullptr;
}

void Tensor::failElement() const {
  fail("gizml::Tensor::data", "T", "the element type does not match dtype " + dtypeName(dtype_));
}

Tensor Tensor::rows(std::int64_t r0, std::int64_t r1) const {
  const char* fn = "gizml::Tensor::rows";
  if (rank() < 1) fail(fn, "", "expected a tensor of rank >= 1, got " + shapeString(shape_));
  if (r0 < 0 || r0 > r1 || r1 > shape_[0])
    fail(fn, "r0, r1", "expected 0 <= r0 <= r1 <= " + std::to_string(shape_[0]) + ", got " + std::to_string(r0) +
                           ", " + std::to_string(r1));
  std::int64_t inner = shape_[0] == 0 ? 0 : numel() / shape_[0];
  if (dtype_ == DType::I4 && (r0 * inner) % 2 != 0)
    fail(fn, "r0", "an I4 view must start on a whole byte (r0 * row size even)");
  Tensor v = *this;
  v.offset_ = offset_ + dtypeBytes(dtype_, r0 * inner);
  v.shape_[0] = r1 - r0;
  return v;
}

Tensor Tensor::reshape(const Shape& shape) const {
  const char* fn = "gizml::Tensor::reshape";
  if (checkedCount(fn, shape) != numel())
    fail(fn, "shape", "expected " + std::to_string(numel()) + " elements (from " + shapeString(shape_) + "), got " +
                          shapeString(shape));
  Tensor v = *this;
  v.shape_ = shape;
  return v;
}

Tensor Tensor::to(Device device) const {
  const char* fn = "gizml::Tensor::to";
  if (!defined()) fail(fn, "self", "expected a tensor, got an empty Tensor()");
  checkDevice(fn, device);
  Tensor out = empty(shape_, dtype_, device);
  if (bytes() == 0) return out;
  if (device.isHost() && this->device().isHost()) std::memcpy(out.raw(), raw(), bytes());
  else GIZML_IF_CUDA(detail::cudaCopy(out.raw(), device, raw(), this->device(), bytes()));
  return out;
}

Tensor Tensor::clone() const { return to(device()); }

void Tensor::copyFrom(const Tensor& src) {
  const char* fn = "gizml::Tensor::copyFrom";
  if (!defined()) fail(fn, "self", "expected a tensor, got an empty Tensor()");
  if (!src.defined()) fail(fn, "src", "expected a tensor, got an empty Tensor()");
  if (src.shape_ != shape_) fail(fn, "src", "expected shape " + shapeString(shape_) + ", got " + shapeString(src.shape_));
  if (src.dtype_ != dtype_) fail(fn, "src", "expected dtype " + dtypeName(dtype_) + ", got " + dtypeName(src.dtype_));
  if (bytes() == 0) return;
  if (device().isHost() && src.device().isHost()) std::memmove(raw(), src.raw(), bytes());
  else GIZML_IF_CUDA(detail::cudaCopy(raw(), device(), src.raw(), src.device(), bytes()));
}

// Conversion runs on the host; a GPU tensor goes there and back (the same bits as converting on
// the host, by construction).
Tensor Tensor::to(DType dtype) const {
  const char* fn = "gizml::Tensor::to";
  if (!defined()) fail(fn, "self", "expected a tensor, got an empty Tensor()");
  if (dtype == dtype_) return clone();
  if (device().isCuda()) return to(Device::host()).to(dtype).to(device());
  // I4 fills bytes a nibble at a time: start from zeros so an odd count's spare nibble is 0.
  Tensor out = dtype == DType::I4 ? zeros(shape_, dtype, Device::host()) : empty(shape_, dtype, Device::host());
  std::int64_t n = numel();
  const void* src = raw();
  void* dst = out.raw();
  if (dtype == DType::I4) {  // nibbles share bytes: one thread a byte
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < (n + 1) / 2; ++b)
      for (std::int64_t i = 2 * b; i < std::min(n, 2 * b + 2); ++i) storeFromDouble(dst, dtype, i, loadAsDouble(src, dtype_, i));
  } else {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) storeFromDouble(dst, dtype, i, loadAsDouble(src, dtype_, i));
  }
  return out;
}

void Tensor::toHostBytes(void* dst, DType want, const char* function) const {
  if (!defined()) fail(function, "self", "expected a tensor, got an empty Tensor()");
  if (want != dtype_) fail(function, "T", "expected the element type of dtype " + dtypeName(dtype_));
  if (bytes() == 0) return;
  if (device().isHost()) std::memcpy(dst, raw(), bytes());
  else GIZML_IF_CUDA(detail::cudaCopy(dst, Device::host(), raw(), device(), bytes()));
}

std::vector<float> Tensor::toFloats() const {
  if (!defined()) fail("gizml::Tensor::toFloats", "self", "expected a tensor, got an empty Tensor()");
  return (dtype_ == DType::F32 ? *this : to(DType::F32)).toVector<float>();
}

}  // namespace gizml
