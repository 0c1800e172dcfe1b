// One dispatch by device for every op. An op's kernel is a struct K with
//   K::Args                                   the argument struct shared by host, launcher and kernel
//   static constexpr const char* kName        the public function, for errors
//   static void host(const K::Args&)          the host path (host.cpp)
//   static void cuda(const Gpu&, const K::Args&)   the launcher (cuda.cu), on the Gpu's stream
// and an op's body, once its arguments are checked and its outputs made, calls run<K>(gpu, args).
// A kernel that serves two public functions (modulatedNorm and modulatedNormInto) and finds bad
// input on the device (a row map's entry) also has cuda(const Gpu&, const K::Args&, fn), called by
// run<K>(gpu, args, fn), so that the device's error names the function called.
#pragma once

#include "core/backend.hpp"
#include "gizml/gpu.hpp"
#include "gizml/tensor.hpp"

namespace gizml::detail {

/// The GPU handle of a tensor's device, on its default stream (the host for a host tensor).
inline Gpu gpuOf(const Tensor& t) { return Gpu{t.device(), nullptr}; }

template <class Kernel>
void run(const Gpu& gpu, const typename Kernel::Args& args) {
  if (gpu.device.isHost()) {
    Kernel::host(args);
  } else {
#if GIZML_HAS_CUDA
    Kernel::cuda(gpu, args);
#else
    noCuda(Kernel::kName);
#endif
  }
}

/// run, for a kernel whose launch names `fn`, the public function called, in the errors its kernel
/// finds on the device (the bad map entries of modulatedNorm and modulatedNormInto, say).
template <class Kernel>
void run(const Gpu& gpu, const typename Kernel::Args& args, const char* fn) {
  if (gpu.device.isHost()) {
    Kernel::host(args);
  } else {
#if GIZML_HAS_CUDA
    Kernel::cuda(gpu, args, fn);
#else
    noCuda(fn);
#endif
  }
}

}  // namespace gizml::detail
