// Two lane vectors side by side (host only): Twin<F> is a lane type whose every operation is done
// on `a`, then on `b`. The math of exact/math.hpp instantiated with it (expLanes<Twin<f32x16>>)
// computes each lane exactly as with F, so the bits are F's; what changes is the order of the
// instructions. A long dependent chain (exp: ~25 steps, then SiLU's division) of one vector keeps
// the out-of-order core waiting on latencies, and its scheduler fills with steps that cannot issue;
// two independent chains written step by step interleaved give it twice the independent work in
// the same window. Rows take it through HostRow::forEachWide (exact/row16.hpp).
#pragma once

#if defined(__CUDACC__)
#error "twin.hpp is host-only"
#endif

#include <utility>

#include "exact/vec16.hpp"

namespace gizml::exact {

#define GIZML_TWIN inline __attribute__((always_inline))

template <class T>
struct Twin {
  T a, b;
  GIZML_TWIN Twin() : a{}, b{} {}
  GIZML_TWIN Twin(T a_, T b_) : a(a_), b(b_) {}
  /// A lane-type conversion ((I) of a U, (U) of an I), each half as T's own.
  template <class S>
  GIZML_TWIN explicit Twin(const Twin<S>& o) : a((T)(o.a)), b((T)(o.b)) {}
};

// Element-wise operators on both halves, a first (a scalar on either side is broadcast).
#define GIZML_TWIN_OP(op)                                                                                \
  template <class T>                                                                                      \
  GIZML_TWIN auto operator op(const Twin<T>& x, const Twin<T>& y) {                                       \
    using R = decltype(x.a op y.a);                                                                       \
    return Twin<R>(x.a op y.a, x.b op y.b);                                                               \
  }                                                                                                       \
  template <class T, class S, class = decltype(std::declval<T>() op std::declval<S>())>                   \
  GIZML_TWIN auto operator op(const Twin<T>& x, S s) {                                                    \
    using R = decltype(x.a op s);                                                                         \
    return Twin<R>(x.a op s, x.b op s);                                                                   \
  }                                                                                                       \
  template <class S, class T, class = decltype(std::declval<S>() op std::declval<T>())>                   \
  GIZML_TWIN auto operator op(S s, const Twin<T>& y) {                                                    \
    using R = decltype(s op y.a);                                                                         \
    return Twin<R>(s op y.a, s op y.b);                                                                   \
  }
GIZML_TWIN_OP(+)
GIZML_TWIN_OP(-)
GIZML_TWIN_OP(*)
GIZML_TWIN_OP(/)
GIZML_TWIN_OP(==)
GIZML_TWIN_OP(!=)
GIZML_TWIN_OP(<)
GIZML_TWIN_OP(<=)
GIZML_TWIN_OP(>)
GIZML_TWIN_OP(>=)
GIZML_TWIN_OP(&)
GIZML_TWIN_OP(|)
GIZML_TWIN_OP(^)
#undef GIZML_TWIN_OP

template <class T>
GIZML_TWIN Twin<T> operator-(const Twin<T>& x) {
  return Twin<T>(-x.a, -x.b);
}
template <class T>
GIZML_TWIN Twin<T> operator~(const Twin<T>& x) {
  return Twin<T>(~x.a, ~x.b);
}
template <class T>
GIZML_TWIN Twin<T> operator>>(const Twin<T>& x, int s) {
  return Twin<T>(x.a >> s, x.b >> s);
}
template <class T>
GIZML_TWIN Twin<T> operator<<(const Twin<T>& x, int s) {
  return Twin<T>(x.a << s, x.b << s);
}

using f32x16x2 = Twin<f32x16>;
using u32x16x2 = Twin<u32x16>;
using i32x16x2 = Twin<i32x16>;

GIZML_TWIN u32x16x2 toBits(const f32x16x2& x) { return {toBits(x.a), toBits(x.b)}; }
GIZML_TWIN f32x16x2 fromBits(const u32x16x2& u) { return {fromBits(u.a), fromBits(u.b)}; }
GIZML_TWIN f32x16x2 toFloat(const i32x16x2& i) { return {toFloat(i.a), toFloat(i.b)}; }
GIZML_TWIN f32x16x2 toFloat(const u32x16x2& u) { return {toFloat(u.a), toFloat(u.b)}; }
GIZML_TWIN f32x16x2 select(const i32x16x2& m, const f32x16x2& x, const f32x16x2& y) {
  return {select(m.a, x.a, y.a), select(m.b, x.b, y.b)};
}
GIZML_TWIN u32x16x2 select(const i32x16x2& m, const u32x16x2& x, const u32x16x2& y) {
  return {select(m.a, x.a, y.a), select(m.b, x.b, y.b)};
}
GIZML_TWIN i32x16x2 select(const i32x16x2& m, const i32x16x2& x, const i32x16x2& y) {
  return {select(m.a, x.a, y.a), select(m.b, x.b, y.b)};
}
GIZML_TWIN f32x16x2 fmaLane(const f32x16x2& x, const f32x16x2& y, const f32x16x2& z) {
  return {fmaLane(x.a, y.a, z.a), fmaLane(x.b, y.b, z.b)};
}
GIZML_TWIN i32x16x2 isNan(const f32x16x2& x) { return {isNan(x.a), isNan(x.b)}; }
GIZML_TWIN f32x16x2 minLane(const f32x16x2& x, const f32x16x2& y) { return {minLane(x.a, y.a), minLane(x.b, y.b)}; }
GIZML_TWIN f32x16x2 maxLane(const f32x16x2& x, const f32x16x2& y) { return {maxLane(x.a, y.a), maxLane(x.b, y.b)}; }

#if defined(__AVX512F__)
GIZML_TWIN f32x16x2 scaleByPowerOfTwo(const f32x16x2& y, const f32x16x2& n) {
  return {scaleByPowerOfTwo(y.a, n.a), scaleByPowerOfTwo(y.b, n.b)};
}
GIZML_TWIN f32x16x2 roundToEven(const f32x16x2& v) { return {roundToEven(v.a), roundToEven(v.b)}; }
template <>
inline constexpr bool kAvx512Lanes<f32x16x2> = true;
#else
GIZML_TWIN bool allLanes(const i32x16x2& m) { return allLanes(m.a & m.b); }
GIZML_TWIN bool allMagnitudesBelow(const f32x16x2& v, float bound) {
  return magnitudeBitsBelow(
      (i32x8)_mm256_max_epi32((__m256i)largestMagnitudeBits(v.a), (__m256i)largestMagnitudeBits(v.b)), bound);
}
GIZML_TWIN f32x16x2 roundToEven(const f32x16x2& v) { return {roundToEven(v.a), roundToEven(v.b)}; }
template <>
inline constexpr bool kAvx2Lanes<f32x16x2> = true;
#endif

template <>
GIZML_TWIN f32x16x2 broadcast<f32x16x2>(float v) {
  return {splat(v), splat(v)};
}
template <>
struct LaneTypes<f32x16x2> {
  using U = u32x16x2;
  using I = i32x16x2;
};

#undef GIZML_TWIN

}  // namespace gizml::exact
