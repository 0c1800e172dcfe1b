// Zero-copy exchange with NumPy, PyTorch and any DLPack producer or consumer.
//
// gizml.from_dlpack(obj) wraps obj's memory in a gizml.Tensor (Tensor::fromExternal) that holds
// obj's DLPack capsule until its last view is gone; Tensor.__dlpack__ hands gizml's memory out the
// same way, the capsule holding the Python Tensor (and so its storage). Nothing is copied: a
// write through one side is read through the other. gizml's tensors are contiguous row-major, so
// a strided input (a transpose, a slice with a step) is an error naming its strides, never a
// silent copy; call .contiguous() (torch) or np.ascontiguousarray first.
//
// DLPack types: F32/F64/F16 kDLFloat, BF16 kDLBfloat, E4M3 kDLFloat8_e4m3fn, I8/I32/I64 kDLInt,
// U8 kDLUInt. I4 (two a byte) has no DLPack type and is an error. Devices: kDLCPU (and
// kDLCUDAHost, pinned host memory) is the host; kDLCUDA n is Device::cuda(n).
// CUDA: gizml's kernels run on each device's legacy default stream. __dlpack__ waits for it before
// handing memory out (whatever stream the consumer names: correct, at the cost of a wait each
// export). from_dlpack asks the producer with no stream (DLPack's stream=None), so PyTorch does
// not synchronise: its work on the default stream comes first by that stream's order; work on
// another stream must be synchronised before the tensor is passed.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bindings.hpp"

namespace gizml::python {
namespace {

using namespace nb::literals;
namespace dl = nb::dlpack;

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3;

dl::dtype dlpackType(DType d) {
  auto t = [](dl::dtype_code c, int bits) { return dl::dtype{static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(bits), 1}; };
  switch (d) {
    case DType::F32: return t(dl::dtype_code::Float, 32);
    case DType::F64: return t(dl::dtype_code::Float, 64);
    case DType::BF16: return t(dl::dtype_code::Bfloat, 16);
    case DType::F16: return t(dl::dtype_code::Float, 16);
    case DType::E4M3: return t(dl::dtype_code::Float8_E4M3FN, 8);
    case DType::I8: return t(dl::dtype_code::Int, 8);
    case DType::I32: return t(dl::dtype_code::Int, 32);
    case DType::I64: return t(dl::dtype_code::Int, 64);
    case DType::U8: return t(dl::dtype_code::UInt, 8);
    case DType::I4: break;
  }
  fail("gizml.Tensor.__dlpack__", "dtype", "I4 (two values a byte) has no DLPack type; convert it with .to(DType.I8)");
}

DType gizmlType(const dl::dtype& t) {
  const auto code = static_cast<dl::dtype_code>(t.code);
  if (t.lanes == 1) {
    if (code == dl::dtype_code::Float && t.bits == 32) return DType::F32;
    if (code == dl::dtype_code::Float && t.bits == 64) return DType::F64;
    if (code == dl::dtype_code::Float && t.bits == 16) return DType::F16;
    if (code == dl::dtype_code::Bfloat && t.bits == 16) return DType::BF16;
    if (code == dl::dtype_code::Float8_E4M3FN && t.bits == 8) return DType::E4M3;
    if (code == dl::dtype_code::Int && t.bits == 8) return DType::I8;
    if (code == dl::dtype_code::Int && t.bits == 32) return DType::I32;
    if (code == dl::dtype_code::Int && t.bits == 64) return DType::I64;
    if (code == dl::dtype_code::UInt && t.bits == 8) return DType::U8;
  }
  fail("gizml.from_dlpack", "dtype",
       "expected float32, float64, float16, bfloat16, float8_e4m3fn, int8, int32, int64 or uint8, got DLPack code " +
           std::to_string(t.code) + " with " + std::to_string(t.bits) + " bits and " + std::to_string(t.lanes) +
           " lanes");
}

/// The DLPack capsule behind an imported tensor, released with the GIL held (NumPy's deleter drops
/// a Python reference); after the interpreter is gone it is left alone.
std::shared_ptr<void> holdArray(nb::ndarray<> a) {
  return std::shared_ptr<void>(new nb::ndarray<>(std::move(a)), [](void* p) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::ndarray<>*>(p);
  });
}

Tensor fromDlpack(nb::ndarray<> a) {
  const char* fn = "gizml.from_dlpack";
  const DType dtype = gizmlType(a.dtype());
  Device device;
  if (a.device_type() == kDLCPU || a.device_type() == kDLCUDAHost) device = Device::host();
  else if (a.device_type() == kDLCUDA) device = Device::cuda(a.device_id());
  else
    fail(fn, "device", "expected CPU or CUDA memory, got DLPack device type " + std::to_string(a.device_type()));
  Shape shape(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<std::int64_t>(a.shape(i));
  // Row-major contiguity; an extent of 1 may carry any stride, and an empty tensor any strides.
  bool empty = false;
  for (std::int64_t e : shape) empty |= e == 0;
  std::int64_t expected = 1;
  for (std::size_t i = a.ndim(); !empty && i-- > 0;) {
    if (shape[i] != 1 && a.stride(i) != expected) {
      std::string strides = "[";
      for (std::size_t j = 0; j < a.ndim(); ++j) strides += (j ? ", " : "") + std::to_string(a.stride(j));
      fail(fn, "tensor",
           "expected a contiguous row-major tensor, got shape " + shapeString(shape) + " with strides " + strides +
               "] (in elements); gizml does not copy: call .contiguous() (torch) or numpy.ascontiguousarray first");
    }
    expected *= shape[i];
  }
  void* data = const_cast<void*>(a.data());
  return Tensor::fromExternal(data, shape, dtype, device, holdArray(std::move(a)));
}

nb::object exportDlpack(nb::handle self, nb::kwargs kwargs) {
  const Tensor& t = nb::cast<const Tensor&>(self);
  const char* fn = "gizml.Tensor.__dlpack__";
  if (!t.defined()) fail(fn, "self", "expected a defined tensor");
  const dl::dtype type = dlpackType(t.dtype());
  if (t.device().isCuda()) Gpu{t.device(), nullptr}.synchronize();  // ready on every stream
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  const int deviceType = t.device().isCuda() ? kDLCUDA : kDLCPU;
  // The owner is the Python Tensor: the capsule keeps it, and so the storage, alive.
  nb::ndarray<nb::array_api> view(t.raw(), shape.size(), shape.data(), self, nullptr, type, deviceType,
                                  t.device().index);
  nb::object array = nb::cast(view, nb::rv_policy::reference);
  return array.attr("__dlpack__")(**kwargs);
}

nb::tuple dlpackDevice(const Tensor& t) {
  return t.device().isCuda() ? nb::make_tuple(kDLCUDA, t.device().index) : nb::make_tuple(kDLCPU, 0);
}

}  // namespace

void bindDlpack(nb::module_& m, nb::class_<Tensor>& tensor) {
  m.def("from_dlpack", &fromDlpack, "tensor"_a,
        "A gizml.Tensor over the memory of a DLPack tensor (torch.Tensor, numpy.ndarray, ...), no copy: "
        "contiguous row-major, on the host or a CUDA device, of a dtype gizml has. The source is kept "
        "alive until the last view of the result goes.");
  tensor
      .def("__dlpack__", &exportDlpack,
           "DLPack export (torch.from_dlpack, numpy.from_dlpack): the same memory, no copy. Keywords as the "
           "DLPack protocol (stream, max_version, dl_device, copy=False).")
      .def("__dlpack_device__", &dlpackDevice);
}

}  // namespace gizml::python
