// Command-line flags (node_exporter's names where one exists). Flags override the config file,
// which overrides the defaults.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "exporter/experiment/experiment_options.h"

namespace hwperf {

// Every flag; experiment mode's own are in ExperimentOptions (exporter/experiment/).
struct CliOptions : ExperimentOptions {
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
  std::optional<unsigned> max_connections;     // connections served at once (HTTP workers)
  std::optional<unsigned> request_timeout_ms;  // request head (and TLS handshake) deadline
  std::optional<unsigned> keep_alive_timeout_ms;
  bool check_config = false;
  bool once = false;
  bool version = false;
  bool help = false;
  bool print_rules = false;      // the event groups' recording rules (events/rules.h)
  bool print_reference = false;  // hidden: docs/reference.md, generated
};

// One flag as --help and docs/reference.md show it; the one table parse_cli reads too.
struct CliFlag {
  const char* name;
  const char* value_name;     // nullptr for boolean flags
  std::string help;           // what it does
  std::string default_value;  // "" for none
  bool hidden = false;        // left out of --help and the reference
};
const std::vector<CliFlag>& cli_flags();

// Bounds of the HTTP flags: enough for hundreds of scrapers, and no value that would make a worker
// thread per connection or a deadline absurd.
inline constexpr unsigned kMaxConnectionsCeiling = 1024;
inline constexpr unsigned kMinTimeoutMs = 100;
inline constexpr unsigned kMaxTimeoutMs = 60 * 1000;
// The window of --print-rules' rates: four scrapes at the default 15 s interval (rate() needs at
// least two samples in its window, and four ride out a missed scrape).
inline constexpr const char* kRuleWindow = "1m";
// --repeat: enough runs for a spread; each run's counters are open from the start.
inline constexpr unsigned kMaxRepeat = 100;
// --linger: up to an hour, for the slowest scrape interval anyone uses.
inline constexpr unsigned kMaxLingerMs = 60 * 60 * 1000;

// Throws ConfigError naming the flag and what it expects.
CliOptions parse_cli(const std::vector<std::string>& args);
void apply_cli(const CliOptions& options, Config& config);
std::string usage_text();

}  // namespace hwperf
