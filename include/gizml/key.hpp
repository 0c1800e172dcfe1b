// Counter-based randomness (SPEC §1.5): a Key is two 32-bit words; its draw is Philox4x32-10.
#pragma once

#include <array>
#include <cstdint>

namespace gizml {

struct Key {
  std::uint32_t k0 = 0;
  std::uint32_t k1 = 0;

  /// Philox4x32-10 of the 128-bit counter (c0 low word first) under this key.
  std::array<std::uint32_t, 4> philox(std::uint32_t c0, std::uint32_t c1 = 0, std::uint32_t c2 = 0,
                                      std::uint32_t c3 = 0) const;
  /// Word i of the draw: output i % 4 of Philox applied to the counter i / 4.
  std::uint32_t word(std::uint64_t i) const;
  /// (word(i) >> 8) * 2^-24, in [0, 1).
  float uniform(std::uint64_t i) const;
  /// A standard normal value: Box-Muller on the words 2p and 2p + 1 (p = i / 2), see Tensor::normal.
  float normal(std::uint64_t i) const;
  /// A new key derived from this one and `n` (words 0 and 1 of Philox of the counter (n, 0, 1, 0), which no draw of
  /// this key reaches), for
  /// giving each use its own stream.
  Key split(std::uint32_t n) const;
  bool operator==(const Key&) const = default;
};

}  // namespace gizml
