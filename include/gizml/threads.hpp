// Host thread count. Results never depend on it (SPEC §1); only the speed does.
#pragma once

namespace gizml {

/// Threads the host paths use from now on (>= 1). Default: OpenMP's default.
void setThreads(int n);
int threads();

}  // namespace gizml
