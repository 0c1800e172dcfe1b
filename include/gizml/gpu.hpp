// The seed's GPU handle for the raw-address entry points (SPEC §2): a device and its stream.
#pragma once

#include "gizml/device.hpp"

namespace gizml {

struct Gpu {
  Device device = Device::host();
  void* stream = nullptr;  // a cudaStream_t; nullptr is the device's default stream

  /// The host as a "GPU": every ...Into entry point also runs on host memory (SPEC §2).
  static Gpu host() { return {}; }
  /// GPU `index` on its default stream. Throws gizml::Error when there is no such GPU.
  static Gpu open(int index = 0);
  /// Waits for the stream; a kernel's device error flag becomes gizml::Error here.
  void synchronize() const;
};

}  // namespace gizml
