// Where the tests' data files are: $GIZML_TEST_DATA, else data/ next to the running test program
// (the build copies tests/data there), so a build can be moved or run from another machine.
#pragma once

#include <string>

namespace gizml::test {

/// The path of data file `name`; throws std::runtime_error saying where it looked when the
/// folder or the file is missing.
std::string testDataFile(const std::string& name);

}  // namespace gizml::test
