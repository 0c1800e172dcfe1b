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

/// A software prefetch of a line that a loop reads soon (a row or two ahead): into L1 where one
/// core's L1 holds 48 KiB or more (a Zen 5's, a recent Xeon's), else into L2 (prefetcht1), where
/// a smaller L1 (a Zen 4's 32 KiB) would lose the lines it holds for the work under way. On a
/// Zen 5, prefetcht1 helped less (modulatedInt8Rows: 4.6 - 6.8 ms against 4.3 - 6.0 with
/// prefetcht0; a Zen 4 or 5 may drop a prefetcht1). pixelNorm's pipeline with SiLU asks for its next
/// block into L1 on any machine (a Zen 4 measured it faster: norms/host.cpp).
/// (Inlined always: GCC takes a function whose only work is a prefetch for one without effects,
/// and drops calls to it.)
struct LinePrefetch {
  bool intoL1 = caches().l1 >= (48 << 10);
  inline __attribute__((always_inline)) void operator()(const void* p) const {
    if (intoL1) __builtin_prefetch(p, 0, 3);
    else __builtin_prefetch(p, 0, 2);
  }
};

}  // namespace gizml::detail
