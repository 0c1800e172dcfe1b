// gizml::Error — every precondition of every op fails with one of these (SPEC §1.7).
#pragma once

#include <stdexcept>
#include <string>

namespace gizml {

/// The one exception gizml throws. Its message names the function, the argument and what was
/// expected, for example
///   "gizml::netops::layerNorm: weight: expected shape [17], got [16]".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Throws Error("<function>: <argument>: <what>"). `argument` may be empty for a whole-call failure.
[[noreturn]] void fail(const std::string& function, const std::string& argument, const std::string& what);

}  // namespace gizml
