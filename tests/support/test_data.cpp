#include "support/test_data.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace gizml::test {

std::string testDataFile(const std::string& name) {
  namespace fs = std::filesystem;
  const char* env = std::getenv("GIZML_TEST_DATA");
  fs::path folder;
  std::string how;
  if (env && *env) {
    folder = env;
    how = "GIZML_TEST_DATA=" + std::string(env);
  } else {
    std::error_code error;
    folder = fs::read_symlink("/proc/self/exe", error).parent_path() / "data";
    how = "data/ next to the test program, GIZML_TEST_DATA being unset";
  }
  if (!fs::is_directory(folder))
    throw std::runtime_error("no test data folder " + folder.string() + " (looked at " + how + ")");
  const fs::path file = folder / name;
  if (!fs::is_regular_file(file))
    throw std::runtime_error("no test data file " + file.string() + " (looked at " + how + ")");
  return file.string();
}

}  // namespace gizml::test
