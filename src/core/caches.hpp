// The data caches of the machine this runs on, read once at run time (sysconf; glibc reads them
// from CPUID), with modest defaults where the system does not say. Host paths size their blocks
// from them, so one build suits machines with other caches (a Zen 3's 512 KiB L2, a Zen 4's 1 MiB,
// a Xeon's 2 MiB).
#pragma once

#include <unistd.h>

#include <cstdint>

namespace gizml::detail {

struct Caches {
  std::int64_t l1, l2, l3;  // bytes of one core's L1 data and L2 caches, and of the L3
};
inline const Caches& caches() {
  static const Caches c = [] {
    auto read = [](int name, std::int64_t fallback) {
      const long v = sysconf(name);
      return v > 0 ? static_cast<std::int64_t>(v) : fallback;
    };
    return Caches{read(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), read(_SC_LEVEL2_CACHE_SIZE, 1 << 20),
                  read(_SC_LEVEL3_CACHE_SIZE, 8 << 20)};
  }();
  return c;
}

}  // namespace gizml::detail
