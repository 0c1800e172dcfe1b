// One dispatch by device for every op. An op's kernel is a struct K with
//   K::Args                                   the argument struct shared by host, launcher and kernel
//   static constexpr const char* kName        the public function, for errors
//   static void host(const K::Args&)          the host path (host.cpp)
//   static void cuda(const Gpu&, const K::Args&)   the launcher (cuda.cu), on the Gpu's stream
// and an op's body, once its arguments are checked and its outputs made, calls run<K>(gpu, args).
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

}  // namespace gizml::detail
