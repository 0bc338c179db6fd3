// Startup and shutdown: main() only turns argv into run_exporter().
#pragma once

#include <string>
#include <vector>

namespace hwperf {

// The process exit codes, each with one meaning (docs/deployment.md, "Command line and
// configuration").
enum class ExitCode : int {
  ok = 0,
  runtime_failure = 1,  // what the machine could not do (port in use, hwloc, PAPI unusable)
  config_error = 2,     // what the user asked for (flags, config file, event names)
};

// The whole process: parse flags, load config, build, then serve until SIGTERM/SIGINT (or print
// once, or check the configuration).
int run_exporter(const std::vector<std::string>& args);

}  // namespace hwperf
