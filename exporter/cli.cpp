#include "exporter/cli.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <utility>

#include "common/text.h"
#include "config/errors.h"
#include "exporter/experiment/experiment.h"
#include "web/http_server.h"

namespace hwperf {
namespace {

// A target label a person can read: not empty, no control characters.
bool printable_name(const std::string& name) {
  return !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
}

std::string duration_range() {
  return "from " + std::to_string(kMinTimeoutMs) + "ms to " + std::to_string(kMaxTimeoutMs / 1000) +
         "s";
}

}  // namespace

// Defaults and spellings come from the configuration's own defaults and name tables.
const std::vector<CliFlag>& cli_flags() {
  static const std::vector<CliFlag> all = [] {
    const Config defaults;
    const HttpServerOptions http;
    return std::vector<CliFlag>{
        {"--config.file", "PATH", "YAML configuration file", "none, built-in defaults"},
        {"--web.listen-address", "[HOST]:PORT", "address to serve on", defaults.web.listen_address},
        {"--web.telemetry-path", "PATH", "path of the metrics endpoint",
         defaults.web.telemetry_path},
        {"--path.sysfs", "PATH", "sysfs mount point", defaults.paths.sysfs},
        {"--path.procfs", "PATH", "procfs mount point", defaults.paths.procfs},
        {"--path.devfs", "PATH", "devfs mount point", defaults.paths.devfs},
        {"--log.level", "LEVEL", join_names(kLogLevelNames, ", ", " or "),
         to_string(defaults.log_level)},
        {"--web.config.file", "PATH",
         "TLS and basic authentication, in the exporter-toolkit web config format",
         "none, plain HTTP"},
        {"--web.max-requests", "N",
         "most scrapes collected at once, answered 503 beyond (as node_exporter); 0 for no "
         "limit; at most --web.max-connections",
         std::to_string(AdmissionPolicy{}.max_concurrent_requests)},
        {"--web.max-connections", "N",
         "connections served at once, each by a worker thread; more wait in a queue (at most " +
             std::to_string(kMaxConnectionsCeiling) + ")",
         std::to_string(http.worker_threads)},
        {"--web.request-timeout", "DURATION",
         "time a client has to send its request head (and finish a TLS handshake), and a "
         "response write may stall, before its connection is closed; " +
             duration_range(),
         std::to_string(http.request_timeout_ms / 1000) + "s"},
        {"--web.keep-alive-timeout", "DURATION",
         "time an idle keep-alive connection is kept; " + duration_range(),
         std::to_string(http.keep_alive_timeout_ms / 1000) + "s"},
        {"--runtime.user", "USER",
         "once every counter is open and the port bound, run as USER (a name or uid) with no "
         "capabilities",
         "keep the user it was started as"},
        {"--check-config", nullptr,
         "validate the configuration (both files, the web config's users, TLS files and "
         "headers, and family names across collectors, as the start checks them), print the "
         "effective configuration and what each collector can do here, exit 0 (or 2 on error)",
         ""},
        {"--once", nullptr,
         "collect once, print the exposition to stdout and exit (1 when it cannot be written); "
         "with -- CMD, once CMD has ended, print a summary (the exposition only with --output) "
         "and exit with CMD's status; SIGTERM and SIGINT are passed on to CMD, which is killed " +
             std::to_string(kStopGrace.count() / 1000) +
             " s later if it has not ended (at once on a second signal), and runs not started "
             "yet are left out",
         ""},
        {"--output", "FILE",
         "with --once, write the exposition to FILE (- for stdout; a FIFO must have its reader "
         "already)",
         "stdout; with -- CMD, none"},
        {"--summary.output", "FILE",
         "with --once -- CMD, write the summary to FILE (- for stdout) rather than to stderr, "
         "which the command and the log share",
         "stderr"},
        {"--summary.format", "FORMAT",
         "with --once -- CMD, the summary as " + join_names(kSummaryFormatNames, ", ", " or ") +
             " (csv: a row per event, metric and region value, and per region its mean over the "
             "runs)",
         "text"},
        {"--repeat", "N",
         "with --once -- CMD, run CMD N times (at most " + std::to_string(kMaxRepeat) +
             "), one after the other, and summarise each event, metric and region as the mean of "
             "the runs and their relative spread (standard deviation / mean); the runs are the "
             "targets NAME.1 to NAME.N",
         "1"},
        {"--experiment.name", "NAME", "with -- CMD, the process target's name (the target label)",
         "the program CMD runs, behind a wrapper such as taskset, numactl, env, time, nice, chrt, "
         "srun, mpirun, stdbuf, setarch or sh -c"},
        {"--linger", "DURATION",
         "with -- CMD (served), once CMD has ended, keep serving its final counts until a scrape "
         "of the metrics path has read them, at most this long (0 to exit at once); then exit "
         "with CMD's status. A stop signal (SIGTERM, SIGINT) is passed on to CMD, which is "
         "killed " +
             std::to_string(kStopGrace.count() / 1000) +
             " s later if it has not ended (at once on a second signal); the exporter then exits "
             "without lingering",
         "30s"},
        {"--experiment.regions", nullptr,
         "with -- CMD, preload the marker library (libhwperf_markers.so) into CMD, before any "
         "LD_PRELOAD it has, and hand it a region segment for the events its target counts: "
         "each region it marks (PAPI_hl_region_begin, LIKWID_MARKER_START) is exported as "
         "hwperf_region_* and, with --once, summarised per region and thread "
         "([regions](collectors/region.md))",
         ""},
        {"--print-rules", nullptr,
         std::string("print Prometheus recording rules for the formulas of the event groups the "
                     "configuration counts (the defaults without one) and exit 0, or 2 on a "
                     "configuration error; each formula combines rates over ") +
             kRuleWindow +
             " (four scrapes at Prometheus' default 15 s interval; with a slower scrape "
             "interval, edit the window to at least four intervals)",
         ""},
        {"--version", nullptr, "print the version and exit", ""},
        {"--help", nullptr, "print this help and exit", ""},
        {"--print-reference", nullptr, "print docs/reference.md and exit", "", true},
    };
  }();
  return all;
}

namespace {

std::optional<unsigned> parse_count(const std::string& flag, const std::string& value, unsigned low,
                                    unsigned high, std::vector<std::string>& problems) {
  const auto parsed = parse_u64(value);
  if (!parsed || *parsed < low || *parsed > high) {
    problems.push_back(flag + "=" + value + ": expected a whole number from " +
                       std::to_string(low) + (low == 0 ? " (no limit)" : "") + " to " +
                       std::to_string(high));
    return std::nullopt;
  }
  return static_cast<unsigned>(*parsed);
}

std::optional<unsigned> parse_timeout(const std::string& flag, const std::string& value,
                                      std::vector<std::string>& problems) {
  const auto parsed = parse_duration_ms(value);
  if (!parsed || *parsed < kMinTimeoutMs || *parsed > kMaxTimeoutMs) {
    problems.push_back(flag + "=" + value + ": expected a duration from " +
                       std::to_string(kMinTimeoutMs) + "ms to " +
                       std::to_string(kMaxTimeoutMs / 1000) + "s, such as 500ms, 5s or 1m");
    return std::nullopt;
  }
  return static_cast<unsigned>(*parsed);
}

LogLevel parse_level(const std::string& text) {
  if (const auto level = parse_name(kLogLevelNames, text)) return *level;
  throw ConfigError(
      {"--log.level=" + text + ": expected " + join_names(kLogLevelNames, ", ", " or ")});
}

// Flags whose value is kept as given, checked later where it is used.
constexpr std::pair<const char*, std::optional<std::string> CliOptions::*> kTextFlags[] = {
    {"--config.file", &CliOptions::config_file},
    {"--web.listen-address", &CliOptions::listen_address},
    {"--path.sysfs", &CliOptions::sysfs},
    {"--path.procfs", &CliOptions::procfs},
    {"--path.devfs", &CliOptions::devfs},
    {"--web.config.file", &CliOptions::web_config_file},
    {"--runtime.user", &CliOptions::runtime_user},
    {"--output", &CliOptions::output},
    {"--summary.output", &CliOptions::summary_output},
    {"--experiment.name", &CliOptions::experiment_name},
};

// Flags without a value, which set their option.
constexpr std::pair<const char*, bool CliOptions::*> kSwitches[] = {
    {"--check-config", &CliOptions::check_config},
    {"--once", &CliOptions::once},
    {"--version", &CliOptions::version},
    {"--help", &CliOptions::help},
    {"--print-rules", &CliOptions::print_rules},
    {"--experiment.regions", &CliOptions::experiment_regions},
    {"--print-reference", &CliOptions::print_reference},
};

// The option a table binds to `arg`, or nullopt when the table does not list it.
template <typename Member, std::size_t N>
std::optional<Member> find_flag(const std::pair<const char*, Member> (&table)[N],
                                const std::string& arg) {
  for (const auto& [name, member] : table) {
    if (arg == name) return member;
  }
  return std::nullopt;
}

// The flags of experiment mode, where they mean something: `args` as given, `options` as parsed.
void experiment_flag_problems(const std::vector<std::string>& args, const CliOptions& options,
                              std::vector<std::string>& problems) {
  const auto given = [&](const char* flag) {
    return std::any_of(args.begin(),
                       args.end() - static_cast<std::ptrdiff_t>(options.command.size()),
                       [&](const std::string& arg) { return arg.rfind(flag, 0) == 0; });
  };
  const bool once_command = options.once && !options.command.empty();
  if (given("--output") && !options.once) problems.push_back("--output needs --once");
  for (const char* flag : {"--summary.format", "--summary.output", "--repeat"}) {
    if (given(flag) && !once_command) {
      problems.push_back(std::string(flag) + " needs --once -- CMD");
    }
  }
  for (const auto& [flag, set] :
       {std::pair<const char*, bool>{"--experiment.regions", options.experiment_regions},
        {"--experiment.name", options.experiment_name.has_value()}}) {
    if (set && options.command.empty()) problems.push_back(std::string(flag) + " needs -- CMD");
  }
  if (options.experiment_name && !printable_name(*options.experiment_name)) {
    problems.push_back("--experiment.name=" + *options.experiment_name +
                       ": expected a name of printable characters, such as matmul");
  }
  if (given("--linger") && (options.once || options.command.empty())) {
    problems.push_back("--linger needs -- CMD without --once");
  }
}

}  // namespace

CliOptions parse_cli(const std::vector<std::string>& args) {
  CliOptions options;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      if (options.command.empty()) problems.push_back("-- needs a command to run after it");
      break;
    }
    std::optional<std::string> value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "-h") arg = "--help";
    const CliFlag* flag = nullptr;
    for (const auto& candidate : cli_flags()) {
      if (arg == candidate.name) flag = &candidate;
    }
    if (flag == nullptr) {
      problems.push_back("unknown flag \"" + args[i] + "\" (see --help)");
      continue;
    }
    if (flag->value_name != nullptr && !value) {
      if (i + 1 >= args.size()) {
        problems.push_back(arg + " needs a value: " + arg + "=" + flag->value_name);
        continue;
      }
      value = args[++i];
    }
    if (flag->value_name == nullptr && value) {
      problems.push_back(arg + " takes no value");
      continue;
    }
    try {
      if (const auto text = find_flag(kTextFlags, arg)) {
        options.*(*text) = value;
      } else if (const auto on = find_flag(kSwitches, arg)) {
        options.*(*on) = true;
      } else if (arg == "--web.telemetry-path") {
        if (const auto problem = telemetry_path_problem(*value); !problem.empty()) {
          problems.push_back(arg + "=" + *value + ": " + problem);
        }
        options.telemetry_path = value;
      } else if (arg == "--log.level") {
        options.log_level = parse_level(*value);
      } else if (arg == "--web.max-requests") {
        options.max_requests = parse_count(arg, *value, 0, kMaxConnectionsCeiling, problems);
      } else if (arg == "--web.max-connections") {
        options.max_connections = parse_count(arg, *value, 1, kMaxConnectionsCeiling, problems);
      } else if (arg == "--web.request-timeout") {
        options.request_timeout_ms = parse_timeout(arg, *value, problems);
      } else if (arg == "--web.keep-alive-timeout") {
        options.keep_alive_timeout_ms = parse_timeout(arg, *value, problems);
      } else if (arg == "--summary.format") {
        if (const auto format = parse_name(kSummaryFormatNames, *value)) {
          options.summary_format = *format;
        } else {
          problems.push_back(arg + "=" + *value + ": expected " +
                             join_names(kSummaryFormatNames, ", ", " or "));
        }
      } else if (arg == "--repeat") {
        options.repeat = parse_count(arg, *value, 1, kMaxRepeat, problems).value_or(1);
      } else if (arg == "--linger") {
        const auto parsed = parse_duration_ms(*value);
        if (!parsed || *parsed > kMaxLingerMs) {
          problems.push_back(arg + "=" + *value + ": expected a duration from 0s to " +
                             std::to_string(kMaxLingerMs / 60000) + "m, such as 30s or 2m");
        } else {
          options.linger_ms = static_cast<unsigned>(*parsed);
        }
      }
    } catch (const ConfigError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  // A collection runs on an HTTP worker, so no more can ever be collecting than there are workers.
  const unsigned connections = options.max_connections.value_or(HttpServerOptions{}.worker_threads);
  if (options.max_requests && *options.max_requests > connections) {
    problems.push_back("--web.max-requests=" + std::to_string(*options.max_requests) +
                       ": at most one scrape per connection served at once, " +
                       std::to_string(connections) + " (--web.max-connections)");
  }
  if (options.check_config && options.once) {
    problems.push_back("--check-config and --once cannot be combined");
  }
  experiment_flag_problems(args, options, problems);
  if (options.print_rules && (options.check_config || options.once)) {
    problems.push_back("--print-rules cannot be combined with --check-config or --once");
  }
  if (!problems.empty()) throw ConfigError(problems);
  return options;
}

void apply_cli(const CliOptions& options, Config& config) {
  if (options.listen_address) {
    config.web.listen_address = *options.listen_address;
    config.web.listen_address_mark = SourceMark{};
  }
  if (options.telemetry_path) config.web.telemetry_path = *options.telemetry_path;
  if (options.sysfs) config.paths.sysfs = *options.sysfs;
  if (options.procfs) config.paths.procfs = *options.procfs;
  if (options.devfs) config.paths.devfs = *options.devfs;
  if (options.log_level) config.log_level = *options.log_level;
}

std::string usage_text() {
  std::string text =
      "usage: hwperf_exporter [flags] [-- CMD ARGS...]\n\n"
      "Prometheus/OpenMetrics exporter for hardware performance counters (PAPI) and CPU energy "
      "(RAPL).\nWith -- CMD ARGS..., runs CMD as a process target counted from its first "
      "instruction\n(collectors.process events), serves while it runs (and until a scrape has read "
      "its "
      "end,\n--linger) and exits with its status; with --once, leaves stdout to CMD and prints "
      "a\nsummary of the run on stderr or to --summary.output (--summary.format, --repeat; the "
      "exposition\nwith --output).\n\nFlags:\n";
  for (const auto& flag : cli_flags()) {
    if (flag.hidden) continue;
    std::string left = std::string("  ") + flag.name;
    if (flag.value_name) left += std::string("=") + flag.value_name;
    if (left.size() < 34)
      left.resize(34, ' ');
    else
      left += "  ";
    text += left + flag.help;
    if (!flag.default_value.empty()) text += " (default: " + flag.default_value + ")";
    text += "\n";
  }
  return text;
}

}  // namespace hwperf
