#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace hwperf {

// A problem in what the user asked for (config file, flags, event names, CPU lists). The process
// exits with status 2 on it. what() holds every problem found, one per line, each naming where.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

}  // namespace hwperf
