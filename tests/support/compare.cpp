#include "support/compare.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "exact/row16.hpp"
#include "gizml/threads.hpp"
#include "support/bits.hpp"

namespace gizml::test {

namespace {
int savedThreads = 0;

template <class T>
::testing::AssertionResult verdict(const std::vector<T>& got, const std::vector<T>& want) {
  std::string why = bitDifference(got, want);
  if (why.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}
}  // namespace

::testing::AssertionResult sameBits(const std::vector<float>& got, const std::vector<float>& want) {
  return verdict(got, want);
}
::testing::AssertionResult sameBits(float got, float want) { return verdict(std::vector{got}, std::vector{want}); }
::testing::AssertionResult sameBits(double got, double want) { return verdict(std::vector{got}, std::vector{want}); }

double ulpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  // Past the largest float the correctly rounded result is inf: then only inf is right.
  float rounded = static_cast<float>(want);
  if (std::isinf(got) || std::isinf(rounded)) return got == rounded ? 0.0 : INFINITY;
  // want is a finite double here, and every double within a float's range is normal (or 0): its
  // exponent field gives ilogb(|want|), and 2^(e - 23) >= 2^-149 is a normal double built from its
  // bits. (ilogb and ldexp, library calls, took a quarter of the exhaustive sweeps' time.)
  std::uint64_t bits;
  std::memcpy(&bits, &want, sizeof bits);
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  int e = field > 0 ? field - 1023 : -126;
  if (e < -126) e = -126;  // the subnormals' spacing, 2^-149
  const std::uint64_t ulpBits = static_cast<std::uint64_t>(e - 23 + 1023) << 52;
  double ulp;
  std::memcpy(&ulp, &ulpBits, sizeof ulp);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

void setThreadsForTest(int n) {
  if (savedThreads == 0) savedThreads = threads();
  setThreads(n);
  exact::setHostWorkAThread(1);  // the tests' small shapes on every thread they can use
}
void restoreThreadsForTest() {
  if (savedThreads > 0) setThreads(savedThreads);
  exact::setHostWorkAThread(exact::kWorkAThread);
}

}  // namespace gizml::test
