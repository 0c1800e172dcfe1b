// The device error flag (SPEC §1.7). A kernel that reads an index it cannot trust (a row map, a
// token id held in device memory) checks it first; one that fails is recorded here, the read is
// skipped, and the next synchronising call on the host (Gpu::synchronize, or reading a result back)
// turns the record into gizml::Error naming the op and the argument. Nothing is read or written
// out of bounds.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace gizml::detail {

/// One device's record: the first failed check since the host last looked.
struct DeviceError {
  unsigned code = 0;    // 0: none; else 1 + the checked argument's position in its launch's names
  unsigned launch = 0;  // the launch (its function and argument names, registered on the host)
  long long value = 0;  // the index read
  long long bound = 0;  // the range it had to lie in: [0, bound)
};

/// A kernel's handle on its device's record, passed by value to each kernel that checks indices.
struct ErrorFlag {
  DeviceError* slot = nullptr;
  unsigned launch = 0;
#if defined(__CUDACC__)
  /// True when value lies in [0, bound). Else records it (the first failure wins; an integer
  /// atomic, so the record is one failure, never a mix) and returns false: the caller skips the read.
  __device__ bool inRange(unsigned argument, long long value, long long bound) const {
    if (value >= 0 && value < bound) return true;
    if (atomicCAS(&slot->code, 0u, argument + 1u) == 0u) {
      slot->launch = launch;
      slot->value = value;
      slot->bound = bound;
    }
    return false;
  }
#endif
};

/// The number naming a launch of `function` whose kernel checks the given arguments (in order:
/// inRange's `argument` is a position in this list). The same names give the same number.
unsigned registerLaunch(const std::string& function, std::initializer_list<const char*> checkedArguments);

/// Throws the gizml::Error a record stands for: "<function>: <argument>: expected an index in
/// [0, bound), got value (read by a GPU kernel; the op's output is unspecified)". Host code.
[[noreturn]] void throwDeviceError(const DeviceError& record);

}  // namespace gizml::detail
