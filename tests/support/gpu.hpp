// GPU tests: they run in full on a GPU machine and skip, saying why, where there is none. With
// GIZML_REQUIRE_GPU=1 in the environment (tools/gpu-check.sh sets it) a missing GPU is a failure.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace gizml::test {
/// Empty when a GPU can run the tests; else the reason it cannot.
std::string gpuUnavailableReason();
bool gpuRequired();
}  // namespace gizml::test

#define GIZML_NEED_GPU()                                                       \
  do {                                                                         \
    std::string why_ = ::gizml::test::gpuUnavailableReason();                  \
    if (!why_.empty()) {                                                       \
      if (::gizml::test::gpuRequired()) FAIL() << "GIZML_REQUIRE_GPU=1 but " << why_; \
      GTEST_SKIP() << "skipped: " << why_;                                     \
    }                                                                          \
  } while (0)
