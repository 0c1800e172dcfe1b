#include "gizml/threads.hpp"

#include <omp.h>

#include "gizml/error.hpp"

namespace gizml {

void setThreads(int n) {
  if (n < 1) fail("gizml::setThreads", "n", "expected >= 1, got " + std::to_string(n));
  omp_set_num_threads(n);
}

int threads() { return omp_get_max_threads(); }

}  // namespace gizml
