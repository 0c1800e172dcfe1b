#include "gizml/key.hpp"

#include "exact/philox.hpp"

namespace gizml {

std::array<std::uint32_t, 4> Key::philox(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2,
                                         std::uint32_t c3) const {
  exact::Philox4 r = exact::philox4x32_10(k0, k1, c0, c1, c2, c3);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}

std::uint32_t Key::word(std::uint64_t i) const { return exact::drawGroup(k0, k1, i / 4).v[i % 4]; }

float Key::uniform(std::uint64_t i) const { return exact::uniformOfWord(word(i)); }

float Key::normal(std::uint64_t i) const {
  std::uint64_t pair = i / 2;
  float even, odd;
  exact::normalPair(word(2 * pair), word(2 * pair + 1), &even, &odd);
  return (i % 2 == 0) ? even : odd;
}

Key Key::split(std::uint32_t n) const {
  exact::Philox4 r = exact::philox4x32_10(k0, k1, n, 0u, 1u, 0u);
  return {r.v[0], r.v[1]};
}

}  // namespace gizml
