#include "support/inputs.hpp"

#include <cstdlib>

namespace gizml::test {

// Every test program runs with Tensor::empty's bytes set to 0xFF (unless GIZML_POISON_EMPTY is set
// already, to 0 say): recycled host memory would otherwise hold an earlier, correct result, and an
// op that leaves part of its output unwritten would pass. (Set before main; the library reads it
// at the first Tensor::empty.)
const bool kPoisonEmpty = setenv("GIZML_POISON_EMPTY", "1", 0) == 0;

std::vector<float> randomFloats(Key key, std::int64_t count, float scale, float offset) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[i] = key.normal(static_cast<std::uint64_t>(i)) * scale + offset;
  return v;
}

std::vector<float> withSpecials(Key key, std::int64_t count) {
  auto v = randomFloats(key, count, 2.0f, 0.25f);
  if (count >= 8) {
    v[count / 3] = kNaN;
    v[count / 2] = kInf;
    v[(2 * count) / 3] = -kInf;
    v[count - 1] = -0.0f;
  }
  return v;
}

std::vector<float> poolSpecials(Key key, std::int64_t planes, std::int64_t h, std::int64_t w, std::int64_t size) {
  const std::int64_t count = planes * h * w;
  auto v = withSpecials(key, count);
  if (count >= 16) {
    v[count - 2] = -0.0f;
    v[count - 1] = 0.0f;
    v[count / 5] = v[count / 5 + 1] = 1.5f;
  }
  if (planes >= 2) {
    float* last = v.data() + (planes - 1) * h * w;
    for (std::int64_t i = 0; i < size; ++i)
      for (std::int64_t j = 0; j < size; ++j) last[i * w + j] = kNaN;
  }
  return v;
}

std::vector<std::int64_t> randomLabels(Key key, std::int64_t rows, std::int64_t classes) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    v[r] = static_cast<std::int64_t>(key.word(static_cast<std::uint64_t>(r)) % classes);
  return v;
}

}  // namespace gizml::test
