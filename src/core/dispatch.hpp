// One dispatch by device for every op. An op's kernel is a struct K with
//   K::Args                                   the argument struct shared by host, launcher and kernel
//   static constexpr const char* kName        the public function, for errors
//   static void host(const K::Args&)          the host path (host.cpp)
//   static void cuda(const Gpu&, const K::Args&)   the launcher (cuda.cu), on the Gpu's stream
// and an op's body, once its arguments are checked and its outputs made, calls run<K>(gpu, args).
// A kernel that serves two public functions (modulatedNorm and modulatedNormInto) and finds bad
// input on the device (a row map's entry) takes cuda(const Gpu&, const K::Args&, fn), which
// run<K>(gpu, args, fn) calls, so that the device's error names the function called.
#pragma once

#include "core/backend.hpp"
#include "gizml/gpu.hpp"
#include "gizml/tensor.hpp"

namespace gizml::detail {

/// The GPU handle of a tensor's device, on its default stream (the host for a host tensor).
inline Gpu gpuOf(const Tensor& t) { return Gpu{t.device(), nullptr}; }

/// Kernel's host path, or its launcher on gpu's device. `fn` names the public function called (the
/// kernel's kName unless told): in the errors of a launcher that takes it (cuda(gpu, args, fn)), and
/// where this build has no CUDA.
template <class Kernel>
void run(const Gpu& gpu, const typename Kernel::Args& args, const char* fn = Kernel::kName) {
  if (gpu.device.isHost()) {
    Kernel::host(args);
  } else {
#if GIZML_HAS_CUDA
    if constexpr (requires { Kernel::cuda(gpu, args, fn); }) Kernel::cuda(gpu, args, fn);
    else Kernel::cuda(gpu, args);
#else
    noCuda(fn);
#endif
  }
}

}  // namespace gizml::detail
