// A probe the build-flags test calls: compiled with the library's flags, so if -ffp-contract=off
// were lost, this a * b + c would become one fma and the test would see it.
#include "core/backend.hpp"

namespace gizml::detail {
float hostMultiplyAdd(float a, float b, float c) { return a * b + c; }
std::vector<std::int64_t> hostInitializerList() { return {2048, 2048, 2048, 0}; }
}  // namespace gizml::detail
