// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the draw of
// a Key (SPEC §1.5), shared by host and CUDA.
#pragma once

#include "exact/hd.hpp"
#include "exact/math.hpp"

namespace gizml::exact {

struct Philox4 {
  std::uint32_t v[4];
};

/// The ten rounds on lanes of counters (U is std::uint32_t, or u32x16 on the host: 16 counters at
/// once); the key is the same for every lane. mulHiLo(m, c, hi, lo) is the 32x32 -> 64-bit product.
template <class U>
GIZML_HD void philoxRounds(std::uint32_t k0, std::uint32_t k1, U& c0, U& c1, U& c2, U& c3) {
  for (int round = 0; round < 10; ++round) {
    U hi0, lo0, hi1, lo1;
    mulHiLo(0xD2511F53u, c0, hi0, lo0);
    mulHiLo(0xCD9E8D57u, c2, hi1, lo1);
    U n0 = hi1 ^ c1 ^ k0;
    U n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

GIZML_HD Philox4 philox4x32_10(std::uint32_t k0, std::uint32_t k1, std::uint32_t c0, std::uint32_t c1,
                              std::uint32_t c2, std::uint32_t c3) {
  philoxRounds(k0, k1, c0, c1, c2, c3);
  return {{c0, c1, c2, c3}};
}

/// The four words 4 g .. 4 g + 3 of a key's draw (counter g, a 128-bit integer, low word first).
GIZML_HD Philox4 drawGroup(std::uint32_t k0, std::uint32_t k1, std::uint64_t g) {
  return philox4x32_10(k0, k1, static_cast<std::uint32_t>(g), static_cast<std::uint32_t>(g >> 32), 0u, 0u);
}

/// uniform: (w >> 8) * 2^-24, in [0, 1) (on a word, or on u32x16 lanes of words on the host).
template <class U>
GIZML_HD auto uniformOfWord(U w) {
  return toFloat(w >> 8) * 5.9604644775390625e-8f;
}

/// Box-Muller on a pair of words: u1 = ((w0 >> 8) + 1) 2^-24 in (0, 1], u2 = uniform(w1);
/// r = sqrt(-2 log u1); returns r cos(2 pi u2) (even element) and r sin(2 pi u2) (odd element).
GIZML_HD void normalPair(std::uint32_t w0, std::uint32_t w1, float* even, float* odd) {
  float u1 = static_cast<float>((w0 >> 8) + 1u) * 5.9604644775390625e-8f;
  float r = sqrtf(-2.0f * log(u1));
  float s, c;
  sincos2pi(uniformOfWord(w1), &s, &c);
  *even = r * c;
  *odd = r * s;
}

/// Which of a key's draws a tensor is filled with.
enum class Draw { Uniform, Normal };

/// Elements 4 g .. 4 g + 3 (those below n) of a key's uniform or normal draw, into out: the one
/// fill that Tensor::uniform / Tensor::normal run on the host (a thread a counter) and on a GPU.
GIZML_HD void fillDrawGroup(Draw draw, std::uint32_t k0, std::uint32_t k1, std::uint64_t g, float* out, std::int64_t n) {
  const Philox4 w = drawGroup(k0, k1, g);
  float v[4];
  if (draw == Draw::Uniform) {
    for (int j = 0; j < 4; ++j) v[j] = uniformOfWord(w.v[j]);
  } else {
    normalPair(w.v[0], w.v[1], &v[0], &v[1]);
    normalPair(w.v[2], w.v[3], &v[2], &v[3]);
  }
  const std::int64_t first = static_cast<std::int64_t>(4 * g);
  for (int j = 0; j < 4 && first + j < n; ++j) out[first + j] = v[j];
}

}  // namespace gizml::exact
