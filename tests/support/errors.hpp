// Bad-input checks: an op must throw gizml::Error whose message names the function and the
// argument (SPEC §1.7).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gizml/error.hpp"

namespace gizml::test {

template <class F>
void expectThrowsNaming(F f, const std::string& function, const std::string& argument) {
  try {
    f();
    ADD_FAILURE() << "expected gizml::Error from " << function << " naming " << argument;
  } catch (const gizml::Error& e) {
    std::string m = e.what();
    // gizml::fail writes "<function>: <argument>: <what>".
    EXPECT_NE(m.find(function + ": " + argument + ": "), std::string::npos)
        << "expected \"" << function << ": " << argument << ": ...\", got: " << m;
  }
}

}  // namespace gizml::test
