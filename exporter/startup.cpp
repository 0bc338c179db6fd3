// The startup's steps up to a built exporter (exporter/startup.h): the flags and files read, the
// process prepared, the topology loaded, the dry run, and the build.
#include "exporter/startup.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "collectors/build_info.h"
#include "collectors/registry.h"
#include "common/files.h"
#include "common/open_files.h"
#include "common/sysctl.h"
#include "common/text.h"
#include "collectors/configuration.h"
#include "web/http_server.h"
#include "web/tls.h"

namespace hwperf {
namespace {

// The listen address, parsed (and a host name resolved) once, before anything is built, so that a
// bad address is a configuration error naming where it was written.
ListenAddress resolve_listen_address(const WebConfig& web) {
  const std::string written_as = web.listen_address_mark.line != 0
                                     ? web.listen_address_mark.to_string() +
                                           ": web.listen_address \"" + web.listen_address + "\""
                                     : "";
  try {
    return ListenAddress::parse(web.listen_address, written_as);
  } catch (const std::invalid_argument& e) {
    throw ConfigError({e.what()});
  }
}

// Names the web config file in front of each problem found in it.
ConfigError in_web_config(const CliOptions& cli, const ConfigError& error) {
  std::vector<std::string> problems;
  for (const auto& problem : error.problems()) {
    problems.push_back(cli.web_config_file ? *cli.web_config_file + ": " + problem : problem);
  }
  return ConfigError(std::move(problems));
}

// --web.config.file: read now, and the certificate and key with it, once, so that a bad one is a
// configuration error before any counter opens; the server is handed what was read.
void load_web_config_file(Startup& startup) {
  const std::string& file = *startup.cli.web_config_file;
  startup.web_config = load_web_config(file);
  if (!startup.web_config.tls) return;
  try {
    startup.certificates = std::make_shared<TlsCertificates>(*startup.web_config.tls);
    startup.certificates->check();
  } catch (const std::runtime_error& e) {
    throw ConfigError({file + ": " + e.what()});
  }
}

constexpr unsigned kCapSysAdmin = 21;
constexpr unsigned kCapPerfmon = 38;

// Why this process cannot count every CPU, "" when it can: root, CAP_PERFMON or CAP_SYS_ADMIN in
// its effective set, or kernel.perf_event_paranoid <= 0 (kernel/events/core.c perf_event_open).
std::string system_wide_denied(const std::string& procfs) {
  if (::geteuid() == 0) return "";
  const auto status = read_small_file(procfs + "/self/status");
  if (const auto at = status.ok() ? status.value.find("\nCapEff:") : std::string::npos;
      at != std::string::npos) {
    const auto line = status.value.substr(at + 8, status.value.find('\n', at + 1) - at - 8);
    if (const auto caps = parse_u64(trim(line), 16)) {
      if ((*caps >> kCapPerfmon & 1) != 0 || (*caps >> kCapSysAdmin & 1) != 0) return "";
    }
  }
  const std::string paranoid = read_sysctl(procfs, "kernel.perf_event_paranoid");
  if (paranoid == "0" || paranoid.rfind('-', 0) == 0) return "";
  return "uid " + std::to_string(::geteuid()) + " without CAP_PERFMON, " +
         "kernel.perf_event_paranoid " + (paranoid.empty() ? "unreadable" : "is " + paranoid);
}

// Experiment mode started without a configuration file by a user who cannot count the whole
// machine (not root, no CAP_PERFMON or CAP_SYS_ADMIN, kernel.perf_event_paranoid above 0): the
// enabled system-wide collectors (registry.h), which would only warn about every CPU, event and
// energy interface they cannot open, left out, and said so in one log line. Empty otherwise: a
// configuration file that enables them is obeyed.
std::vector<std::string> collectors_left_out(const CliOptions& cli, const Config& config) {
  if (cli.command.empty() || cli.config_file) return {};
  auto names = system_wide_collectors(config);
  if (names.empty()) return {};
  const std::string denied = system_wide_denied(config.paths.procfs);
  if (denied.empty()) return {};
  log::info("experiment mode as " + denied + ": counting the command only; " + join(names) +
            " count the whole machine and are left out (run as root, grant CAP_PERFMON, or "
            "`sysctl kernel.perf_event_paranoid=0`; a --config.file that enables them is "
            "obeyed)");
  return names;
}

// Experiment mode without a configuration file by a user who can count the whole machine: what
// the system-wide collectors warn about at startup (no PMU, no RAPL here) describes the machine,
// not the experiment, so it is logged at info level; `--once -- CMD` logs at warn unless
// --log.level says otherwise, so that stderr holds the command's lines and the summary. A
// configuration file is obeyed: its level, and its collectors' warnings as warnings.
void quiet_experiment_log(const CliOptions& cli, const Config& config) {
  if (cli.command.empty() || cli.config_file) return;
  if (cli.once && !cli.log_level && config.log_level < LogLevel::warn) {
    log::set_level(LogLevel::warn);
  }
  std::vector<std::string> prefixes;
  for (const auto& name : system_wide_collectors(config)) prefixes.push_back(name + ": ");
  log::demote_warnings(std::move(prefixes));
}

// Before any counter is opened: running out of descriptors half way would look like PMU
// conflicts. Raises the soft limit to the hard one; throws ConfigError naming the targets that
// were chosen (when the rest fits), std::runtime_error otherwise.
void check_open_files(const CliOptions& cli, const Config& config, const Topology& topology) {
  auto needs = collector_file_needs(config, topology);
  needs.push_back({"already open", open_file_count()});
  if (!cli.once) needs.push_back({"HTTP server at the least", kMinimumHttpFiles});
  const unsigned long limit = raise_open_file_limit();
  const std::string shortfall = open_file_shortfall(needs, limit);
  if (shortfall.empty()) return;
  std::vector<FileNeed> fixed;
  std::string chosen;
  for (const auto& need : needs) {
    if (need.chosen_at.empty()) fixed.push_back(need);
    if (!need.chosen_at.empty()) chosen += (chosen.empty() ? "" : ", ") + need.chosen_at;
  }
  if (!chosen.empty() && open_file_shortfall(fixed, limit).empty()) {
    throw ConfigError({chosen + ": " + shortfall + "; or narrow these targets"});
  }
  throw std::runtime_error(shortfall);
}

}  // namespace

Startup load_startup(const std::vector<std::string>& args) {
  Startup startup;
  CliOptions& cli = startup.cli;
  cli = parse_cli(args);
  if (cli.help || cli.version || cli.print_reference) return startup;
  startup.config = load_config_file(cli.config_file.value_or(""));
  apply_cli(cli, startup.config);
  if (!cli.command.empty()) add_command_targets(cli, startup.config);
  startup.listen_address = resolve_listen_address(startup.config.web);
  if (cli.web_config_file) load_web_config_file(startup);
  if (cli.runtime_user) startup.runtime_user = resolve_runtime_user(*cli.runtime_user);
  return startup;
}

void prepare_process(const Startup& startup) {
  log::set_level(startup.config.log_level);
  quiet_experiment_log(startup.cli, startup.config);
  // no_new_privs is per thread and inherited: set now, before the first thread (PAPI owners, the
  // RAPL guard, CivetWeb's), every thread has it.
  if (startup.runtime_user) forbid_new_privileges();
}

Topology load_topology(const Config& config) {
  try {
    return Topology::load(config.topology, config.paths);
  } catch (const std::runtime_error& e) {
    // The live machine failing is the machine's problem; a file or description the user named
    // is the user's.
    if (config.topology.kind == TopologyConfig::Kind::system) throw;
    throw ConfigError({e.what()});
  }
}

void check_configuration(const Startup& startup, const Topology& topology) {
  // The configuration files (read by load_startup), the admission layer (bcrypt costs) and, in
  // collector_check_report as in build_collectors, the family names across collectors. The
  // collectors are probed by their own reports, each distinct event opened once, where the start
  // opens every configured one.
  make_admission(startup, [](std::string_view) { return true; });
  std::cout << dump_config(startup.config);
  std::cout << "# topology: " << topology.description() << "\n";
  for (const auto& line : collector_check_report(startup.config, topology)) {
    std::cout << "# " << line << "\n";
  }
}

unsigned worker_threads(const CliOptions& cli) {
  return cli.max_connections ? *cli.max_connections : HttpServerOptions{}.worker_threads;
}

std::shared_ptr<const Admission> make_admission(const Startup& startup,
                                                std::function<bool(std::string_view)> serves) {
  const CliOptions& cli = startup.cli;
  AdmissionPolicy policy;
  policy.serves = std::move(serves);
  // The concurrency limit (503 beyond it) guards collections: wherever metrics are served, and
  // the topology page's JSON, which collects too.
  policy.limited_paths = {startup.config.web.telemetry_path, "/topology.json"};
  if (cli.max_requests) policy.max_concurrent_requests = *cli.max_requests;
  // More scrapes at once than connections can never be collecting.
  policy.max_concurrent_requests = std::min(policy.max_concurrent_requests, worker_threads(cli));
  policy.rate_limit = startup.web_config.rate_limit;
  policy.users = startup.web_config.basic_auth_users;
  try {
    return std::make_shared<const Admission>(std::move(policy));
  } catch (const ConfigError& e) {
    throw in_web_config(cli, e);
  }
}

Built build(Startup& startup, const Topology& topology) {
  const CliOptions& cli = startup.cli;
  Config& config = startup.config;
  Built built;
  if (cli.once && !cli.command.empty()) built.plan = summary_plan(config);
  if (!cli.command.empty()) built.experiments = start_experiments(cli, config);
  if (cli.once) built.outputs = open_outputs(cli);
  check_open_files(cli, config, topology);
  // Every collector built and started, their family names checked against each other first (as
  // the dry run's collector_check_report checks them): what a scrape will read.
  auto collectors = build_collectors(config, topology, collectors_left_out(cli, config));
  built.exporter = std::make_unique<Exporter>(config.web.telemetry_path, std::move(collectors),
                                              registry_build_info(), &topology);
  return built;
}

}  // namespace hwperf
