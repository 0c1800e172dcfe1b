// Bad-input checks: an op must throw gizml::Error whose message names the function and the
// argument (SPEC §1.7).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gizml/error.hpp"

namespace gizml::test {

/// f() must throw gizml::Error naming `function` and `argument`, and, where given, saying `saying`
/// (the bad element's place or value, say).
template <class F>
void expectThrowsNaming(F f, const std::string& function, const std::string& argument, const std::string& saying = "") {
  try {
    f();
    ADD_FAILURE() << "expected gizml::Error from " << function << " naming " << argument;
  } catch (const gizml::Error& e) {
    std::string m = e.what();
    // gizml::fail writes "<function>: <argument>: <what>".
    EXPECT_NE(m.find(function + ": " + argument + ": "), std::string::npos)
        << "expected \"" << function << ": " << argument << ": ...\", got: " << m;
    EXPECT_NE(m.find(saying), std::string::npos) << "expected the message to say \"" << saying << "\", got: " << m;
  }
}

}  // namespace gizml::test
