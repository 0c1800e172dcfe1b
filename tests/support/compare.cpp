#include "support/compare.hpp"

#include <cstdint>

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
