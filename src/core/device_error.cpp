#include "core/device_error.hpp"

#include <map>
#include <mutex>
#include <vector>

#include "gizml/error.hpp"

namespace gizml::detail {

namespace {
struct LaunchName {
  std::string function;
  std::vector<std::string> arguments;
};
struct LaunchNames {
  std::mutex lock;
  std::vector<LaunchName> names;
  std::map<std::string, unsigned> index;  // function + arguments -> position in names
};
LaunchNames& launchNames() {
  static LaunchNames* n = new LaunchNames;  // never destroyed: kernels may be checked at exit
  return *n;
}
}  // namespace

unsigned registerLaunch(const std::string& function, std::initializer_list<const char*> checkedArguments) {
  std::string key = function;
  for (const char* a : checkedArguments) key += std::string("\n") + a;
  LaunchNames& n = launchNames();
  std::lock_guard<std::mutex> g(n.lock);
  auto it = n.index.find(key);
  if (it != n.index.end()) return it->second;
  const unsigned id = static_cast<unsigned>(n.names.size());
  n.names.push_back({function, std::vector<std::string>(checkedArguments.begin(), checkedArguments.end())});
  n.index.emplace(key, id);
  return id;
}

void throwDeviceError(const DeviceError& record) {
  std::string function = "gizml (an unregistered GPU launch)", argument = "index";
  {
    LaunchNames& n = launchNames();
    std::lock_guard<std::mutex> g(n.lock);
    if (record.launch < n.names.size()) {
      const LaunchName& name = n.names[record.launch];
      function = name.function;
      if (record.code >= 1 && record.code - 1 < name.arguments.size()) argument = name.arguments[record.code - 1];
    }
  }
  fail(function, argument,
       "expected an index in [0, " + std::to_string(record.bound) + "), got " + std::to_string(record.value) +
           " (read by a GPU kernel; the op's output is unspecified)");
}

}  // namespace gizml::detail
