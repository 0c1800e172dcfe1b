// The memory behind tensors: one allocation on one device, shared by its views.
#pragma once

#include <cstddef>
#include <memory>

#include "gizml/device.hpp"

namespace gizml::detail {

struct Storage {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  Device device;

  /// Memory another owner holds (Tensor::fromExternal): never freed here; `owner` is released
  /// with the storage, after the last view of it is gone.
  std::shared_ptr<void> owner;
  bool external = false;

  Storage(std::size_t bytes, Device device);
  Storage(void* external, std::size_t bytes, Device device, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

}  // namespace gizml::detail
