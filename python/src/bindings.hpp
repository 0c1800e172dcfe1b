// The Python module gizml._gizml (nanobind): what the binding files share.
#pragma once

#include <nanobind/nanobind.h>

#include "gizml/gizml.hpp"

namespace gizml::python {

namespace nb = nanobind;

void bindCore(nb::module_& m);     // Error, DType, Device, Key, Gpu, Tensor, Lazy and the free functions
void bindDlpack(nb::module_& m, nb::class_<Tensor>& tensor); // from_dlpack, Tensor.__dlpack__ / __dlpack_device__
void bindNetops(nb::module_& m);   // the submodule gizml.netops

}  // namespace gizml::python
