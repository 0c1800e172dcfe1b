// The tensor layer netops needs (SPEC §2): shape, dtype, device, contiguous row-major storage
// shared between views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gizml/device.hpp"
#include "gizml/dtype.hpp"
#include "gizml/key.hpp"

namespace gizml {

using Shape = std::vector<std::int64_t>;

/// Host memory freed by tensors is kept (up to 2 GiB) and reused for the next tensor of the same
/// size, so ops run in a loop do not page-fault. These report and return it.
std::size_t cachedHostBytes();
void releaseCachedHostMemory();
std::string shapeString(const Shape& s);  // "[2, 3]"

namespace detail {
struct Storage;
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::F32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::F64; };
template <> struct DTypeOf<std::int8_t> { static constexpr DType value = DType::I8; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::I32; };
template <> struct DTypeOf<std::int64_t> { static constexpr DType value = DType::I64; };
template <> struct DTypeOf<std::uint8_t> { static constexpr DType value = DType::U8; };
}  // namespace detail

class Tensor {
 public:
  /// An empty tensor: no storage, shape [0]. `defined()` is false.
  Tensor();

  /// Storage whose values are unspecified until written (host memory may be reused). With
  /// GIZML_POISON_EMPTY=1 in the environment every byte is 0xFF (NaN as F32 and BF16), host and
  /// GPU: the tests run so, and an op that leaves part of its output unwritten shows it.
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::host());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::host());
  /// From host values of an exact dtype (float → F32, double → F64, int8/int32/int64/uint8).
  template <class T>
  static Tensor fromVector(const std::vector<T>& values, const Shape& shape,
                           Device device = Device::host()) {
    return fromHostBytes(values.data(), values.size(), detail::DTypeOf<T>::value, shape, device);
  }
  /// From float values converted to `dtype` (SPEC §1.4 rounding), on `device`.
  static Tensor fromFloats(const std::vector<float>& values, const Shape& shape,
                           DType dtype = DType::F32, Device device = Device::host());
  /// A tensor over memory gizml does not allocate (another library's: NumPy's, PyTorch's, through
  /// DLPack): `data` on `device` holds the contiguous row-major elements of `shape` and `dtype`
  /// (aligned to one element; null only when there are none). gizml never frees `data`: `owner`
  /// (which may be null when the caller keeps the memory alive longer than every view) is held
  /// by the shared storage and released — its deleter run — when the last view is gone. Writes
  /// through either side are seen by the other: nothing is copied.
  static Tensor fromExternal(void* data, const Shape& shape, DType dtype, Device device,
                             std::shared_ptr<void> owner);
  /// Uniform [0, 1) F32 values: element i is key.uniform(i), on any device, the same bits.
  static Tensor uniform(Key key, const Shape& shape, Device device = Device::host());
  /// Standard normal F32 values: element i is key.normal(i), on any device, the same bits.
  static Tensor normal(Key key, const Shape& shape, Device device = Device::host());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  /// Extent of `axis` (negative counts from the end). Inline, as numel and data's check, with
  /// their failures out of line: every op's checks ask, and a decode step's small calls are mostly
  /// their checks.
  std::int64_t dim(int axis) const {
    const int r = rank(), a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r) failDim(axis);
    return shape_[static_cast<std::size_t>(a)];
  }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t e : shape_) n *= e;
    return n;
  }
  /// Product of all extents but the last (1 for rank 0 or 1): the "rows" of the row ops.
  std::int64_t rowCount() const;
  /// The last extent (1 for rank 0).
  std::int64_t rowLength() const;
  DType dtype() const { return dtype_; }
  Device device() const;
  std::size_t bytes() const { return dtypeBytes(dtype_, numel()); }

  /// A view of rows [r0, r1) of the leading axis, sharing storage.
  Tensor rows(std::int64_t r0, std::int64_t r1) const;
  /// The same storage seen with another shape of the same element count.
  Tensor reshape(const Shape& shape) const;
  /// A copy on `device` (the same bits).
  Tensor to(Device device) const;
  /// A copy converted to `dtype` (SPEC §1.4), on the same device.
  Tensor to(DType dtype) const;
  Tensor clone() const;
  /// Copies `src` (same shape and dtype, any device) into this tensor's storage.
  void copyFrom(const Tensor& src);

  /// Values read back to the host; T must be the tensor's dtype.
  template <class T>
  std::vector<T> toVector() const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    toHostBytes(out.data(), detail::DTypeOf<T>::value, "Tensor::toVector");
    return out;
  }
  /// Values read back to the host as float, whatever the dtype (F64 and I64 are rounded).
  std::vector<float> toFloats() const;

  /// Pointer to element 0 on the tensor's device. T must match the dtype (std::uint16_t for BF16
  /// and F16, std::uint8_t for E4M3, I4 and U8, std::int8_t for I8).
  template <class T>
  T* data() const {
    checkElement(sizeof(T), std::is_integral_v<T>, std::is_signed_v<T>);
    return static_cast<T*>(raw());
  }
  void* raw() const;

  // The seed's Tensor methods (netops).
  /// Per row, the lowest index of the largest non-NaN value; a row of NaN gives 0.
  std::vector<std::int64_t> argmax() const;
  /// x * F32(1 / (1 - p)) where key.uniform(i) >= F32(p), else 0.
  Tensor dropout(Key key, double p) const;

 private:
  static Tensor fromHostBytes(const void* src, std::size_t count, DType dtype, const Shape& shape,
                              Device device);
  void toHostBytes(void* dst, DType want, const char* function) const;
  /// Whether T is an element type of dtype_ (data<T>'s check, its constants folded inline).
  void checkElement(std::size_t size, bool integral, bool isSigned) const {
    bool ok = false;
    switch (dtype_) {
      case DType::F32: ok = size == 4 && !integral; break;
      case DType::F64: ok = size == 8 && !integral; break;
      case DType::BF16: case DType::F16: ok = size == 2 && integral && !isSigned; break;
      case DType::E4M3: case DType::I4: case DType::U8: ok = size == 1 && integral && !isSigned; break;
      case DType::I8: ok = size == 1 && integral && isSigned; break;
      case DType::I32: ok = size == 4 && integral && isSigned; break;
      case DType::I64: ok = size == 8 && integral && isSigned; break;
    }
    if (!ok) failElement();
  }
  [[noreturn]] void failElement() const;
  [[noreturn]] void failDim(int axis) const;

  std::shared_ptr<detail::Storage> storage_;
  std::size_t offset_ = 0;  // bytes from the storage's start
  Shape shape_{0};
  DType dtype_ = DType::F32;
};

}  // namespace gizml
