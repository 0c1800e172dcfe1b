#include "gizml/threads.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>

#include "exact/row16.hpp"
#include "gizml/error.hpp"

namespace gizml {

void setThreads(int n) {
  if (n < 1) fail("gizml::setThreads", "n", "expected >= 1, got " + std::to_string(n));
  omp_set_num_threads(n);
}

int threads() { return omp_get_max_threads(); }

namespace exact {
namespace {
std::atomic<std::int64_t> workAThread{kWorkAThread};
}
int hostThreadsFor(std::int64_t items, std::int64_t work) {
  const std::int64_t each = workAThread.load(std::memory_order_relaxed);
  const std::int64_t byWork = work / each + (work % each != 0);
  return static_cast<int>(std::max<std::int64_t>(1, std::min({std::int64_t{omp_get_max_threads()}, items, byWork})));
}
void setHostWorkAThread(std::int64_t work) { workAThread = std::max<std::int64_t>(1, work); }
bool hostInParallel() { return omp_in_parallel() != 0; }
}  // namespace exact

}  // namespace gizml
