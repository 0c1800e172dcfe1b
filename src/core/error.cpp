#include "gizml/error.hpp"

namespace gizml {

void fail(const std::string& function, const std::string& argument, const std::string& what) {
  std::string message = function + ": ";
  if (!argument.empty()) message += argument + ": ";
  throw Error(message + what);
}

}  // namespace gizml
