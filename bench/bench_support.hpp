// What every benchmark file shares: the device to run on and waiting for it.
#pragma once

#include <cstdlib>
#include <string>

#include "gizml/gizml.hpp"

namespace gizml::bench {

/// GPU 0 when GIZML_BENCH_DEVICE=cuda, else the host.
inline Device benchDevice() {
  const char* d = std::getenv("GIZML_BENCH_DEVICE");
  return d && std::string(d) == "cuda" ? Device::cuda(0) : Device::host();
}

/// Waits for the device's queued work (a no-op on the host), so a timing covers the op.
inline void finish(const Device& d) {
  if (d.isCuda()) Gpu::open(d.index).synchronize();
}

}  // namespace gizml::bench
