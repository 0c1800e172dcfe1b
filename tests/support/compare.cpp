#include "support/compare.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "gizml/threads.hpp"

namespace gizml::test {

namespace {
std::uint32_t bitsOf(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
std::uint64_t bitsOf(double v) {
  std::uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <class T>
bool same(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b);
}
template <class T>
std::string describe(T v) {
  std::ostringstream s;
  s.precision(std::numeric_limits<T>::max_digits10);
  s << v << " (0x" << std::hex << bitsOf(v) << ")";
  return s.str();
}
int savedThreads = 0;
}  // namespace

::testing::AssertionResult sameBits(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: got " << got.size() << ", want " << want.size();
  std::size_t first = got.size(), count = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], want[i])) {
      if (first == got.size()) first = i;
      ++count;
    }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << count << " of " << got.size() << " elements differ; first at index "
                                       << first << ": got " << describe(got[first]) << ", want "
                                       << describe(want[first]);
}

::testing::AssertionResult sameBits(float got, float want) {
  if (same(got, want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << describe(got) << ", want " << describe(want);
}

::testing::AssertionResult sameBits(double got, double want) {
  if (same(got, want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << describe(got) << ", want " << describe(want);
}

double ulpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  // Past the largest float the correctly rounded result is inf: then only inf is right.
  float rounded = static_cast<float>(want);
  if (std::isinf(got) || std::isinf(rounded)) return got == rounded ? 0.0 : INFINITY;
  double a = std::fabs(want);
  int e = a > 0 ? std::ilogb(a) : -126;
  if (e < -126) e = -126;  // the subnormals' spacing, 2^-149
  double ulp = std::ldexp(1.0, e - 23);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

std::vector<float> randomFloats(Key key, std::int64_t count, float scale, float offset) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[i] = key.normal(static_cast<std::uint64_t>(i)) * scale + offset;
  return v;
}

std::vector<std::int64_t> randomLabels(Key key, std::int64_t rows, std::int64_t classes) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) v[r] = static_cast<std::int64_t>(key.word(static_cast<std::uint64_t>(r)) % classes);
  return v;
}

void setThreadsForTest(int n) {
  if (savedThreads == 0) savedThreads = threads();
  setThreads(n);
}
void restoreThreadsForTest() {
  if (savedThreads > 0) setThreads(savedThreads);
}

}  // namespace gizml::test
