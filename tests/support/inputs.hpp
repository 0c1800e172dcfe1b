// Test inputs on the host, without GoogleTest (the op registry and gizml-check use them too):
// random values from a Key (never all zeros), the special values planted where they matter.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "gizml/key.hpp"
#include "gizml/tensor.hpp"

namespace gizml::test {

inline const float kInf = std::numeric_limits<float>::infinity();
inline const float kNaN = std::numeric_limits<float>::quiet_NaN();

/// `count` values (key's normal draw) * scale + offset: never all zeros.
std::vector<float> randomFloats(Key key, std::int64_t count, float scale = 1.0f, float offset = 0.0f);
/// randomFloats(key, count, 2, 0.25) with, when count >= 8, NaN at count / 3, +inf at count / 2,
/// -inf at 2 count / 3 and -0 at count - 1.
std::vector<float> withSpecials(Key key, std::int64_t count);
/// withSpecials over `planes` planes of h x w, with a -0 before a +0 (they tie), two equal values
/// side by side, and the last plane's first size x size window all NaN: pooling's special cases.
std::vector<float> poolSpecials(Key key, std::int64_t planes, std::int64_t h, std::int64_t w, std::int64_t size);
/// Labels in [0, classes), from the key's words.
std::vector<std::int64_t> randomLabels(Key key, std::int64_t rows, std::int64_t classes);

/// A host F32 tensor of these values.
inline Tensor host(const std::vector<float>& values, const Shape& shape) { return Tensor::fromVector(values, shape); }

}  // namespace gizml::test
