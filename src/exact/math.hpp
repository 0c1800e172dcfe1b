// gizml's own transcendentals (SPEC §1.2): built only from + - * /, fma, sqrt and integer bit
// operations, so the host (scalar or 16-lane vectors) and CUDA compute the same bits. Each is a
// template on its lane type F: float (host scalar, CUDA) or f32x16 (host SIMD, vec16.hpp).
//
// Accuracy, over all 2^32 float inputs against float64 (tests/exact_math_test.cpp): expLanes is
// within EXP_MAX_ULP (measured worst 1.0103 ulp, at x = -0x1.782f42p+2) and logLanes within
// LOG_MAX_ULP (measured worst 0.8348 ulp, at x = 0x1.67cc32p+0) of the exact value.
#pragma once

#include "exact/hd.hpp"

namespace gizml::exact {

inline constexpr double EXP_MAX_ULP = 1.05;
inline constexpr double LOG_MAX_ULP = 0.9;

/// 1.5 2^23: for |v| < 2^22, v + kExpShift holds rint(v) in its low mantissa bits.
inline constexpr float kExpShift = 12582912.0f;

/// expLanes' reduction and polynomial, for xc in [-104, 89]: t = xc log2 e + kExpShift (its low
/// mantissa bits hold n = rint(xc log2 e)), fn = n as a float, and the result e^r, r = xc - n ln 2.
template <class F>
GIZML_HD F expOfReduced(F xc, F& t, F& fn) {
  // n = rint(x / ln 2) by the 1.5 * 2^23 trick: t's low mantissa bits hold n exactly.
  const F xlog2e = xc * 1.44269502f;
  t = xlog2e + kExpShift;
  fn = t - kExpShift;
#if !defined(__CUDACC__)
  // The host's vectors round to the nearest even integer in one instruction (vrndscaleps, vroundps)
  // where the trick takes two: the same n for |x log2 e| < 2^22, but -0 for a small negative (the
  // trick gives +0). n = -0 only scales by 2^0 below, and its two products with ln 2 are then zeros
  // whose sum with x is x, or +0 for x = -0 both ways (exact_math_test's sweep of all 2^32 floats
  // compares them). fn no longer waits on t: 3 cycles off the exp's chain of ~50. On AVX-512 t is
  // not needed past here; the AVX2 path builds 2^n from it beside the chain.
  if constexpr (kAvx512Lanes<F> || kAvx2Lanes<F>) fn = roundToEven(xlog2e);
#endif
  // r = x - n ln2 in two steps; n * LN2_HI is exact (n has 8 bits, LN2_HI 9), each fma rounds once.
  F r = fmaLane(fn, F{} - 0.693359375f, xc);
  r = fmaLane(fn, F{} + 2.12194440e-4f, r);
  // e^r on |r| <= 0.35: 1 + r + r^2 p(r).
  F p = F{} + 1.9875691500e-4f;
  p = fmaLane(p, r, F{} + 1.3981999507e-3f);
  p = fmaLane(p, r, F{} + 8.3334519073e-3f);
  p = fmaLane(p, r, F{} + 4.1665795894e-2f);
  p = fmaLane(p, r, F{} + 1.6666665459e-1f);
  p = fmaLane(p, r, F{} + 5.0000001201e-1f);
  return fmaLane(p, r * r, r) + 1.0f;
}

#if !defined(__CUDACC__)
/// expLanes for the host's lanes where every lane holds |x| < 86: the AVX2 expLanes' fast path
/// (its reasons there), and on AVX-512 a caller's that has proven it (siluLanesOfSmall). There the
/// clamp to [-104, 89] leaves every such x as it is (-0 too: min and max return it), so only the
/// clamp is dropped: the same bits by construction.
template <class F>
GIZML_HD F expOfSmall(F x) {
  F t, fn;
  const F y = expOfReduced(x, t, fn);
#if defined(__AVX512F__)
  return scaleByPowerOfTwo(y, fn);
#else
  // n << 23 is t's bits << 23: t's bits are kExpShift's plus n (two's complement), and
  // kExpShift's (0x4b400000) have nine low zero bits, which the shift leaves as 0 mod 2^32.
  return fromBits(toBits(y) + (toBits(t) << 23));
#endif
}
#endif

/// e^x. Overflows to +inf past ~88.72, underflows through the subnormals to +0 below ~-103.97;
/// exp(NaN) is a quiet NaN, exp(+inf) = +inf, exp(-inf) = +0.
template <class F>
GIZML_HD F expLanes(F x) {
  using U = typename LaneTypes<F>::U;
  using I = typename LaneTypes<F>::I;
  F t, fn;
#if !defined(__AVX512F__) && !defined(__CUDACC__)
  // The host's AVX2 vectors, where every lane has |x| < 86 (an activation's almost always): the
  // result is then a normal float for every lane (n in [-125, 125], e^r in [0.70, 1.42]), so y * 2^n
  // below is exact both ways, and adding n to y's exponent bits gives its bits, without the clamp
  // and the two factors (7 of the exp's ~23 vector steps on AVX2, where its latency chain bounds a
  // row's pace: SiLU over values in L1 on a Zen 2, 0.57 -> 0.53 ns a value). A NaN's magnitude bits
  // are above 86's, so it takes the general path. exact_math_test's sweep of all 2^32 floats
  // (consecutive inputs a vector, so vectors on both sides of the bound and across it) compares
  // them with the scalar exp. The lanes' test is one maximum of both halves' magnitude bits and one
  // comparison (allMagnitudesBelow), and n enters the exponent in two steps (below); with fn by
  // vroundps (expOfReduced), on the Zen 2, 1 thread, in L1: SiLU 0.60 -> 0.54 ns a value, two vectors
  // side by side (twin.hpp) 0.545 -> 0.457; gizml_bench, 2 threads, groupNorm + SiLU [512, 48 x
  // 1024] 11.2 -> 10.3 - 10.4 ms, pixelNorm + SiLU [8, 384, 8192] 10.3 - 10.7 -> 9.8 - 10.0 ms.
  if constexpr (kAvx2Lanes<F>) {
    if (allMagnitudesBelow(x, 86.0f)) return expOfSmall(x);
  }
#endif
  // Past these the result is inf or 0 anyway; clamping keeps the integer steps in range. The
  // clamp is x > 89 ? 89 : x, then < -104 ? -104 : that, each one min/max instruction. NaN passes
  // both and every step after: each float result below is then that NaN, quieted (x + x on the
  // host; the canonical NaN on a GPU), whatever the integer steps make of its bits, since the
  // scale factors they build are never NaN.
  const F xc = maxLane(F{} - 104.0f, minLane(F{} + 89.0f, x));
  const F y = expOfReduced(xc, t, fn);
#if defined(__AVX512F__) && !defined(__CUDACC__)
  // AVX-512 has y * 2^n as one instruction (vscalefps: y * 2^floor(fn) rounded once; a NaN y comes
  // back quieted, as from a product). The two products below are exact and then rounded once, so
  // it gives their bits, with a sixth of the exp's instructions fewer (exact_math_test's sweep of
  // all 2^32 floats compares them).
  if constexpr (kAvx512Lanes<F>) return scaleByPowerOfTwo(y, fn);
#endif
  // y * 2^n as y * 2^n1 * 2^n2 with n1 = n >> 1 (floor) and n2 = n - n1: both factors are normal
  // floats for n in [-150, 129], the first product is exact, and the second rounds once (into the
  // subnormals or to inf when it must). Their biased exponents come from m = n + 254, read off t's
  // bits in one subtraction: m >> 1 = n1 + 127 and m - (m >> 1) = n2 + 127.
  const I m = (I)(toBits(t) - (toBits(F{} + kExpShift) - 254u));
  const I half = m >> 1;
  F s1 = fromBits((U)half << 23);
  F s2 = fromBits((U)(m - half) << 23);
  return (y * s1) * s2;
}

/// Natural logarithm. log(+0) = log(-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, log(NaN) = NaN.
template <class F>
GIZML_HD F logLanes(F x) {
  using U = typename LaneTypes<F>::U;
  using I = typename LaneTypes<F>::I;
  // Subnormals: scale into the normals first (exact) and take 23 off the exponent.
  auto tiny = x < 1.17549435e-38f;  // 2^-126
  F xs = select(tiny, x * 8388608.0f, x);
  I kBias = (I)select(tiny, (U)(I{} + 23), (U)(I{} + 0));
  // x = 2^k m with m in [sqrt(2)/2, sqrt(2)): shift the mantissa's boundary to sqrt(2)/2.
  U ix = toBits(xs) + (0x3f800000u - 0x3f3504f3u);
  I k = (I)(ix >> 23) - 127 - kBias;
  F m = fromBits((ix & 0x007fffffu) + 0x3f3504f3u);
  // log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f), R a minimax fit on s^2.
  F f = m - 1.0f;
  F s = f / (f + 2.0f);
  F z = s * s;
  F w = z * z;
  F t1 = w * (w * 0.24279078841f + 0.40000972152f);
  F t2 = z * (w * 0.28498786688f + 0.66666662693f);
  F R = t2 + t1;
  F hfsq = (f * 0.5f) * f;
  F dk = toFloat(k);
  // k ln2 in two parts: k * LN2_HI is exact (LN2_HI has 16 bits, |k| <= 149).
  F result = (((s * (hfsq + R) + dk * 9.0580006145e-06f) - hfsq) + f) + dk * 6.9313812256e-01f;
  result = select(x == 0.0f, F{} - INFINITY, result);
  result = select(x == INFINITY, F{} + INFINITY, result);
  result = select(x < 0.0f, F{} + NAN, result);
  return select(isNan(x), x + x, result);
}

/// SiLU: v / (1 + exp(-v)). Within 3 ulp of float64 for v > -88; below, exp(-v) overflows and
/// the SPEC's formula gives -0 where the true value is a tiny subnormal.
template <class F>
GIZML_HD F siluLanes(F v) {
  return v / (expLanes(-v) + 1.0f);
}

/// siluLanes for lanes that all hold |v| < 86, which the caller has proven (pixelNorm's blocks:
/// norms/host.cpp): the same value, without the AVX2 exp's test of the lanes or the AVX-512 exp's
/// clamp (expOfSmall; exact_math_test's SiluOfSmallOverAllFloats compares every such float); on
/// other lane types siluLanes itself.
template <class F>
GIZML_HD F siluLanesOfSmall(F v) {
#if !defined(__CUDACC__)
  if constexpr (kAvx2Lanes<F> || kAvx512Lanes<F>) return v / (expOfSmall(-v) + 1.0f);
#endif
  return siluLanes(v);
}

/// Sigmoid: 1 / (1 + exp(-v)). Within 3 ulp of float64 for v > -88 (as SiLU).
template <class F>
GIZML_HD F sigmoidLanes(F v) {
  return (F{} + 1.0f) / (expLanes(-v) + 1.0f);
}

/// GELU, tanh form: v / (1 + exp(-2u)), 2u = ((v * v * v) * 0.044715 + v) * 1.5957691
/// (= 2 sqrt(2 / pi)); equal to 0.5 v (1 + tanh(u)) and well conditioned for every v.
template <class F>
GIZML_HD F geluTanhLanes(F v) {
  F c = v * v;
  c = c * v;
  c = c * 0.044715f;
  c = c + v;
  F twoU = c * 1.59576912f;
  return v / (expLanes(-twoU) + 1.0f);
}

/// ReLU: v > 0 ? v : +0; NaN stays NaN.
template <class F>
GIZML_HD F reluLanes(F v) {
  return select(v > 0.0f, v, select(isNan(v), v, F{}));
}

// Scalar names, for code that reads like the SPEC.
GIZML_HD float exp(float x) { return expLanes<float>(x); }
GIZML_HD float log(float x) { return logLanes<float>(x); }
GIZML_HD float silu(float v) { return siluLanes<float>(v); }
GIZML_HD float sigmoid(float v) { return sigmoidLanes<float>(v); }
GIZML_HD float geluTanh(float v) { return geluTanhLanes<float>(v); }

/// sin and cos of 2 pi u for u in [0, 1) a multiple of 2^-24 (the uniform draw): the reduction to
/// an eighth of a turn is exact, then Taylor polynomials to the 9th / 8th power (error < 2^-24
/// relative on |theta| <= pi/4). Used by the normal draw only.
GIZML_HD void sincos2pi(float u, float* sinOut, float* cosOut) {
  float q = rintf(u * 4.0f);  // quarter turns, exact
  float f = u - q * 0.25f;    // in [-1/8, 1/8], exact
  float th = f * 6.28318548f;
  float t2 = th * th;
  float sp = fmaf(fmaf(fmaf(fmaf(t2, 2.75573192e-6f, -1.98412698e-4f), t2, 8.33333333e-3f), t2,
                       -1.66666667e-1f), t2 * th, th);
  float cp = fmaf(fmaf(fmaf(fmaf(t2, 2.48015873e-5f, -1.38888889e-3f), t2, 4.16666667e-2f), t2,
                       -0.5f), t2, 1.0f);
  int quadrant = static_cast<int>(q) & 3;
  float s = quadrant == 0 ? sp : quadrant == 1 ? cp : quadrant == 2 ? -sp : -cp;
  float c = quadrant == 0 ? cp : quadrant == 1 ? -sp : quadrant == 2 ? -cp : sp;
  *sinOut = s;
  *cosOut = c;
}

}  // namespace gizml::exact
