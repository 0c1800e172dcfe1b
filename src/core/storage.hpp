// The memory behind tensors: one allocation on one device, shared by its views.
#pragma once

#include <cstddef>

#include "gizml/device.hpp"

namespace gizml::detail {

struct Storage {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  Device device;

  Storage(std::size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

}  // namespace gizml::detail
