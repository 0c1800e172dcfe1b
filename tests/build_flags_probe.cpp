// In a file of its own so the compiler cannot fold the test's constants into the probe.
float probeMultiplyAdd(float a, float b, float c) { return a * b + c; }

// The initializer list GCC 12 builds wrong under AVX-512 with SLP vectorization (cmake/ExactFP.cmake).
#include <cstdint>
#include <vector>
std::vector<std::int64_t> probeInitializerList() { return {2048, 2048, 2048, 0}; }
