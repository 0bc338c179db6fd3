#include "config/config.h"

#include "config/errors.h"

namespace hwperf {
namespace {
std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<std::string> problems)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems)) {}

std::string telemetry_path_problem(const std::string& path) {
  if (path.empty() || path.front() != '/') return "expected a path starting with /";
  if (path == "/" || path == kHealthPath) {
    return "\"" + path + "\" is where the exporter serves its " +
           (path == "/" ? "landing page" : "liveness answer") +
           ", so the metrics could not be reached; choose another path such as /metrics";
  }
  return "";
}

std::string TopologyConfig::to_string() const {
  switch (kind) {
    case Kind::system: return "system";
    case Kind::xml: return "xml:" + argument;
    case Kind::synthetic: return "synthetic:" + argument;
  }
  return "system";
}

}  // namespace hwperf
