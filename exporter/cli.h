// Command-line flags (node_exporter's names where one exists). Flags override the config file,
// which overrides the defaults.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace hwperf {

struct CliOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> listen_address;
  std::optional<std::string> telemetry_path;
  std::optional<std::string> sysfs;
  std::optional<std::string> procfs;
  std::optional<std::string> devfs;
  std::optional<LogLevel> log_level;
  std::optional<std::string> web_config_file;  // TLS and basic auth (exporter-toolkit format)
  std::optional<std::string> runtime_user;     // drop to this user once every counter is open
  std::optional<unsigned> max_requests;        // scrapes collected at once, 503 beyond; 0: no limit
  bool check_config = false;
  bool once = false;
  bool version = false;
  bool help = false;
};

// Throws ConfigError naming the flag and what it expects.
CliOptions parse_cli(const std::vector<std::string>& args);
void apply_cli(const CliOptions& options, Config& config);
std::string usage_text();

}  // namespace hwperf
