#include "support/bits.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>

namespace gizml::test {

namespace {
template <class T>
auto bitsOf(T v) {
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  U u;
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
template <class T>
std::string difference(const std::vector<T>& got, const std::vector<T>& want) {
  std::ostringstream s;
  if (got.size() != want.size()) {
    s << "sizes differ: got " << got.size() << ", want " << want.size();
    return s.str();
  }
  std::size_t first = got.size(), count = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], want[i])) {
      if (first == got.size()) first = i;
      ++count;
    }
  if (count == 0) return {};
  s << count << " of " << got.size() << " elements differ; first at index " << first << ": got " << describe(got[first])
    << ", want " << describe(want[first]);
  return s.str();
}
}  // namespace

std::string bitDifference(const std::vector<float>& got, const std::vector<float>& want) {
  return difference(got, want);
}
std::string bitDifference(const std::vector<double>& got, const std::vector<double>& want) {
  return difference(got, want);
}

}  // namespace gizml::test
