// gizml._gizml: the C++ library seen from Python. Names are the C++ API's (the seed's), one
// spelling: gizml.Tensor.normal, gizml.lazyMatmul(...).bias(b).gelu().store(),
// gizml.netops.layerNorm. Every gizml::Error becomes gizml.Error with the C++ message.
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace gizml::python {
namespace {

using namespace nb::literals;

// Lazy's epilogue steps return the same Python object, so a chain reads as in C++.
template <class... A>
auto chained(Lazy& (Lazy::*step)(A...)) {
  return [step](nb::handle self, A... a) {
    (nb::cast<Lazy&>(self).*step)(a...);
    return nb::borrow<nb::object>(self);
  };
}

std::string tensorRepr(const Tensor& t) {
  if (!t.defined()) return "gizml.Tensor(undefined)";
  return "gizml.Tensor(shape=" + shapeString(t.shape()) + ", dtype=" + dtypeName(t.dtype()) + ", device=" +
         t.device().name() + ")";
}

}  // namespace

void bindCore(nb::module_& m) {
  nb::exception<Error>(m, "Error", PyExc_RuntimeError);

  nb::enum_<DType>(m, "DType", "Element types (SPEC §2); E4M3 is OCP E4M3FN, I4 two a byte (low nibble first).")
      .value("F32", DType::F32)
      .value("F64", DType::F64)
      .value("BF16", DType::BF16)
      .value("F16", DType::F16)
      .value("E4M3", DType::E4M3)
      .value("I8", DType::I8)
      .value("I4", DType::I4)
      .value("I32", DType::I32)
      .value("I64", DType::I64)
      .value("U8", DType::U8);
  m.def("dtypeName", &dtypeName, "d"_a);
  m.def("dtypeBits", &dtypeBits, "d"_a);
  m.def("dtypeBytes", &dtypeBytes, "d"_a, "count"_a);
  m.def("isFloating", &isFloating, "d"_a);
  m.def("floatToBF16", &floatToBF16, "x"_a);
  m.def("bf16ToFloat", &bf16ToFloat, "b"_a);
  m.def("floatToF16", &floatToF16, "x"_a);
  m.def("f16ToFloat", &f16ToFloat, "h"_a);
  m.def("floatToE4M3", &floatToE4M3, "x"_a);
  m.def("e4m3ToFloat", &e4m3ToFloat, "e"_a);
  m.def("floatToI8", &floatToI8, "x"_a);
  m.def("floatToI4", &floatToI4, "x"_a);

  nb::class_<Device>(m, "Device", "Where a tensor lives: Device.host() or Device.cuda(index).")
      .def_static("host", &Device::host)
      .def_static("cuda", &Device::cuda, "index"_a = 0)
      .def_prop_ro("index", [](const Device& d) { return d.index; })
      .def("isHost", &Device::isHost)
      .def("isCuda", &Device::isCuda)
      .def("name", &Device::name)
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return (d.isCuda() ? 1 : 0) + 2 * d.index; })
      .def("__repr__", [](const Device& d) { return "gizml.Device(" + d.name() + ")"; });
  m.def("gpuCount", &gpuCount);
  m.def("builtWithCuda", &builtWithCuda);
  m.def("builtForGpuSimulator", &builtForGpuSimulator);
  m.def("noGpuReason", &noGpuReason);
  m.def("setThreads", &setThreads, "n"_a);
  m.def("threads", &threads);
  m.def("cachedHostBytes", &cachedHostBytes);
  m.def("releaseCachedHostMemory", &releaseCachedHostMemory);

  nb::class_<Key>(m, "Key", "Two 32-bit words; its draw is Philox4x32-10 (SPEC §1.5).")
      .def(nb::init<>())
      .def("__init__", [](Key* k, std::uint32_t k0, std::uint32_t k1) { new (k) Key{k0, k1}; }, "k0"_a, "k1"_a)
      .def_rw("k0", &Key::k0)
      .def_rw("k1", &Key::k1)
      .def("philox", &Key::philox, "c0"_a, "c1"_a = 0, "c2"_a = 0, "c3"_a = 0)
      .def("word", &Key::word, "i"_a)
      .def("uniform", &Key::uniform, "i"_a)
      .def("normal", &Key::normal, "i"_a)
      .def("split", &Key::split, "n"_a)
      .def("__eq__", [](const Key& a, const Key& b) { return a == b; })
      .def("__repr__", [](const Key& k) {
        return "gizml.Key(" + std::to_string(k.k0) + ", " + std::to_string(k.k1) + ")";
      });

  nb::class_<Gpu>(m, "Gpu", "A device and its stream, for the raw-address entry points (Gpu.host(): host memory).")
      .def_static("host", &Gpu::host)
      .def_static("open", &Gpu::open, "index"_a = 0)
      .def_prop_ro("device", [](const Gpu& g) { return g.device; })
      .def_prop_ro("stream", [](const Gpu& g) { return reinterpret_cast<std::uintptr_t>(g.stream); })
      .def("synchronize", &Gpu::synchronize);

  auto tensor = nb::class_<Tensor>(m, "Tensor",
                     "Shape, dtype, device and contiguous row-major storage shared between views. "
                     "Zero-copy to and from NumPy and PyTorch through DLPack (gizml.from_dlpack, "
                     "torch.from_dlpack, numpy.from_dlpack).")
      .def(nb::init<>())
      .def_static("empty", &Tensor::empty, "shape"_a, "dtype"_a = DType::F32, "device"_a = Device::host())
      .def_static("zeros", &Tensor::zeros, "shape"_a, "dtype"_a = DType::F32, "device"_a = Device::host())
      .def_static("fromFloats", &Tensor::fromFloats, "values"_a, "shape"_a, "dtype"_a = DType::F32,
                  "device"_a = Device::host())
      .def_static("uniform", &Tensor::uniform, "key"_a, "shape"_a, "device"_a = Device::host())
      .def_static("normal", &Tensor::normal, "key"_a, "shape"_a, "device"_a = Device::host())
      .def("defined", &Tensor::defined)
      .def_prop_ro("shape", [](const Tensor& t) { return t.shape(); })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("device", &Tensor::device)
      .def("dim", &Tensor::dim, "axis"_a)
      .def("rank", &Tensor::rank)
      .def("numel", &Tensor::numel)
      .def("rowCount", &Tensor::rowCount)
      .def("rowLength", &Tensor::rowLength)
      .def("bytes", &Tensor::bytes)
      .def("rows", &Tensor::rows, "r0"_a, "r1"_a)
      .def("reshape", &Tensor::reshape, "shape"_a)
      .def("to", nb::overload_cast<Device>(&Tensor::to, nb::const_), "device"_a)
      .def("to", nb::overload_cast<DType>(&Tensor::to, nb::const_), "dtype"_a)
      .def("clone", &Tensor::clone)
      .def("copyFrom", &Tensor::copyFrom, "src"_a)
      .def("toFloats", &Tensor::toFloats)
      .def("argmax", &Tensor::argmax)
      .def("dropout", &Tensor::dropout, "key"_a, "p"_a)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.raw()); },
           "The address of element 0 on the tensor's device, for the raw-address ops (as torch's data_ptr).")
      .def("__repr__", &tensorRepr);
  bindDlpack(m, tensor);

  nb::class_<Lazy>(m, "Lazy",
                   "A product (lazyMatmul) or convolution (lazyConv, lazyConv3) and its epilogue, each step "
                   "in the order added, computed by store() or storeInto(out).")
      .def("bias", chained(&Lazy::bias), "b"_a)
      .def("scale", chained(&Lazy::scale), "s"_a)
      .def("silu", chained(&Lazy::silu))
      .def("gelu", chained(&Lazy::gelu))
      .def("relu", chained(&Lazy::relu))
      .def("residual", chained(&Lazy::residual), "r"_a)
      .def("dtype", chained(&Lazy::dtype), "d"_a)
      .def_prop_ro("shape", [](const Lazy& l) { return l.shape(); })
      .def("outputDType", &Lazy::outputDType)
      .def("device", &Lazy::device)
      .def("store", &Lazy::store)
      .def("storeInto", &Lazy::storeInto, "out"_a);
  m.def("lazyMatmul", &lazyMatmul, "a"_a, "w"_a, "compute"_a = DType::F32);
  m.def("lazyConv", &lazyConv, "w"_a, "x"_a, "kh"_a, "kw"_a, "pad"_a, "compute"_a = DType::F32);
  m.def("lazyConv3", &lazyConv3, "w"_a, "x"_a);
}

}  // namespace gizml::python

NB_MODULE(_gizml, m) {
  m.doc() = "gizml: exact neural-network ops, the same bits on the CPU and on an NVIDIA GPU";
  // Tensors held by PyTorch's autograd graph (saved for backward, through DLPack) may still be alive
  // when the interpreter exits; nanobind would report each as a leak. They are not.
  nanobind::set_leak_warnings(false);
  gizml::python::bindCore(m);
  gizml::python::bindNetops(m);
}
