// GIZML_HD marks a function that host code and CUDA kernels share: one source for a formula
// (DESIGN "The three implementations of an op"). Under nvcc it is __host__ __device__.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GIZML_HD __host__ __device__ __forceinline__
#define GIZML_HD_LAMBDA
#else
// Always inlined: the host's 16-lane values stay in registers only inside one function.
#define GIZML_HD inline __attribute__((always_inline))
// The same for a lambda that a row function hands to its row's loop (`[&](const auto& at)
// GIZML_HD_LAMBDA { ... }`): GCC may keep a large body out of line, a call every 16 values.
#define GIZML_HD_LAMBDA __attribute__((always_inline))
#endif

/// GIZML_UNROLL(n) before a loop: nvcc unrolls it n times (nothing elsewhere, the GPU simulator's
/// builds included).
#if defined(__CUDA_ARCH__) && !defined(GIZML_CUDA_SIM)
#define GIZML_UNROLL(n) _Pragma(GIZML_UNROLL_TEXT(unroll n))
#define GIZML_UNROLL_TEXT(x) #x
#else
#define GIZML_UNROLL(n)
#endif

namespace gizml::exact {

// Scalar lane operations. Host code also has 16-float vector lanes (vec16.hpp) with overloads of
// the same names, so a formula templated on its lane type runs on either.
GIZML_HD std::uint32_t toBits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
GIZML_HD float fromBits(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
GIZML_HD float fmaLane(float a, float b, float c) { return fmaf(a, b, c); }
GIZML_HD float select(bool m, float a, float b) { return m ? a : b; }
GIZML_HD std::uint32_t select(bool m, std::uint32_t a, std::uint32_t b) { return m ? a : b; }
GIZML_HD std::int32_t select(bool m, std::int32_t a, std::int32_t b) { return m ? a : b; }
GIZML_HD float toFloat(std::int32_t i) { return static_cast<float>(i); }
GIZML_HD float toFloat(std::uint32_t u) { return static_cast<float>(u); }
GIZML_HD bool isNan(float x) { return x != x; }
/// a < b ? a : b and a > b ? a : b, exactly so (b where either is NaN, and b for +0 against -0):
/// x86's vminps and vmaxps, one instruction where a compare and a blend would be two.
GIZML_HD float minLane(float a, float b) { return a < b ? a : b; }
GIZML_HD float maxLane(float a, float b) { return a > b ? a : b; }
/// A running maximum of magnitudes, maxLane(|v|, best) for best >= +0 (never -0, never NaN), as the
/// vectors' maxMagnitude (vec16.hpp): fmaxf gives the other operand where one is NaN, and the two
/// agree wherever neither is (no -0 to tell apart): one instruction on a GPU (the absolute value a
/// modifier of it), where a clear, a compare and a select were three.
GIZML_HD float maxMagnitude(float best, float v) { return fmaxf(best, fabsf(v)); }
/// A float as the lane type F (itself for float; all 16 lanes for the host's vectors), bits kept.
template <class F>
GIZML_HD F broadcast(float v) {
  return v;
}

GIZML_HD void mulHiLo(std::uint32_t m, std::uint32_t c, std::uint32_t& hi, std::uint32_t& lo) {
  std::uint64_t p = static_cast<std::uint64_t>(m) * c;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

template <class F> struct LaneTypes;
template <> struct LaneTypes<float> {
  using U = std::uint32_t;
  using I = std::int32_t;
};
/// Whether lane type F is the host's AVX-512 vectors (f32x16, or two side by side): formulas may
/// take a single-instruction form of one of their steps there (vec16.hpp, twin.hpp).
template <class F>
inline constexpr bool kAvx512Lanes = false;
/// Whether lane type F is the host's vectors without AVX-512 (two AVX2 halves, or two such side by
/// side): formulas may branch there on allLanes(mask), a test of the whole vector (vec16.hpp).
template <class F>
inline constexpr bool kAvx2Lanes = false;

}  // namespace gizml::exact

// The host's vector lanes, declared before any formula templated on its lane type, so that those
// templates find the vector overloads (built-in vector types have no namespace for ADL to search).
#if !defined(__CUDACC__)
#include "exact/vec16.hpp"
#endif
