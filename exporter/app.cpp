#include "exporter/app.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>

#include "collectors/build_info.h"
#include "collectors/configuration.h"
#include "collectors/registry.h"
#include "common/log.h"
#include "common/open_files.h"
#include "common/text.h"
#include "config/errors.h"
#include "config/web_config.h"
#include "exporter/cli.h"
#include "exporter/experiment.h"
#include "exporter/experiment_output.h"
#include "exporter/experiment_run.h"
#include "exporter/exposition.h"
#include "exporter/privileges.h"
#include "exporter/reference.h"
#include "exporter/router.h"
#include "topology/topology.h"
#include "web/admission.h"
#include "web/http_server.h"
#include "web/listen_address.h"
#include "web/tls.h"

namespace hwperf {
namespace {

// The one mapping from a failed startup step to the exit code: ConfigError is what the user
// asked for, anything else what the machine could not do.
template <typename Step>
ExitCode startup_step(Step&& step) {
  try {
    step();
  } catch (const ConfigError& e) {
    for (const auto& problem : e.problems()) log::error(problem);
    return ExitCode::config_error;
  } catch (const std::exception& e) {
    log::error(e.what());
    return ExitCode::runtime_failure;
  }
  return ExitCode::ok;
}

int code(ExitCode exit_code) { return static_cast<int>(exit_code); }

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

// The serving threads: --web.max-connections, else the server's default.
unsigned worker_threads(const CliOptions& cli) {
  return cli.max_connections ? *cli.max_connections : HttpServerOptions{}.worker_threads;
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

// Every collector built and started, their family names checked against each other first (as
// the dry run's collector_check_report checks them): what a scrape will read.
std::unique_ptr<Exporter> build_exporter(const Config& config, const Topology& topology,
                                         const std::vector<std::string>& left_out) {
  auto collectors = build_collectors(config, topology, left_out);
  return std::make_unique<Exporter>(config.web.telemetry_path, std::move(collectors),
                                    registry_build_info(), &topology);
}

// Who may ask for what (web/admission.h): methods, paths (`serves`), the rate limit, the users,
// whose hashes are checked here (web/basic_auth.h). The dry run makes it too.
std::shared_ptr<const Admission> make_admission(const CliOptions& cli, const Config& config,
                                                const WebConfigFile& web_config,
                                                std::function<bool(std::string_view)> serves) {
  AdmissionPolicy policy;
  policy.serves = std::move(serves);
  // The concurrency limit (503 beyond it) guards collections: wherever metrics are served, and
  // the topology page's JSON, which collects too.
  policy.limited_paths = {config.web.telemetry_path, "/topology.json"};
  if (cli.max_requests) policy.max_concurrent_requests = *cli.max_requests;
  // More scrapes at once than connections can never be collecting.
  policy.max_concurrent_requests = std::min(policy.max_concurrent_requests, worker_threads(cli));
  policy.rate_limit = web_config.rate_limit;
  policy.users = web_config.basic_auth_users;
  try {
    return std::make_shared<const Admission>(std::move(policy));
  } catch (const ConfigError& e) {
    throw in_web_config(cli, e);
  }
}

// Blocked before any thread exists (PAPI owners, RAPL guard, CivetWeb workers) so that every
// thread inherits the mask and only sigwait() and sigtimedwait() see them. SIGHUP and the user
// signals would otherwise end the process silently (their default action); they are logged and
// ignored. SIGCHLD too: the command of experiment mode ending. SIGPIPE is ignored: a write to a
// reader that went away is an error the exit status reports (a waiting command killed by
// another hand, --output to a closed pipe), not a silent death.
sigset_t block_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD}) {
    sigaddset(&signals, signal_number);
  }
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Serving without a command: until SIGTERM or SIGINT.
void wait_for_stop(const sigset_t& signals) {
  while (true) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number == SIGCHLD) continue;
    if (signal_number == SIGTERM || signal_number == SIGINT) {
      log::info("received " + signal_text(signal_number) + ", shutting down");
      return;
    }
    log::info("received " + signal_text(signal_number) +
              ", ignored (only SIGTERM and SIGINT stop the exporter; the configuration is read "
              "at startup only)");
  }
}

// Served -- CMD: lets the command run; nothing once it does, else the status to exit with, as a
// shell gives it (127 not found, 126 not executable, 128+N when it was killed while it waited).
std::optional<int> release_command(Experiment& experiment) {
  bool started = false;
  if (startup_step([&] { started = experiment.release(); }) != ExitCode::ok) {
    return experiment.wait();
  }
  if (!started) {
    log::error(experiment.command_line() + " ended before it started (" +
               end_text(experiment.wait(), experiment.end_signal()) + ")");
    return experiment.wait();
  }
  return std::nullopt;
}

}  // namespace

int run_exporter(const std::vector<std::string>& args) {
  CliOptions cli;
  Config config;
  std::optional<ListenAddress> listen_address;
  WebConfigFile web_config;
  std::shared_ptr<TlsCertificates> certificates;
  std::optional<RuntimeUser> runtime_user;
  if (const auto failed = startup_step([&] {
        cli = parse_cli(args);
        if (cli.help || cli.version || cli.print_reference) return;
        config = load_config_file(cli.config_file.value_or(""));
        apply_cli(cli, config);
        if (!cli.command.empty()) add_command_targets(cli, config);
        listen_address = resolve_listen_address(config.web);
        if (cli.web_config_file) {
          web_config = load_web_config(*cli.web_config_file);
          // Certificate and key are read now, once, so that a bad one is a configuration error
          // before any counter opens; the server is handed what was read.
          if (web_config.tls) {
            try {
              certificates = std::make_shared<TlsCertificates>(*web_config.tls);
              certificates->check();
            } catch (const std::runtime_error& e) {
              throw ConfigError({*cli.web_config_file + ": " + e.what()});
            }
          }
        }
        if (cli.runtime_user) runtime_user = resolve_runtime_user(*cli.runtime_user);
      });
      failed != ExitCode::ok) {
    return code(failed);
  }
  if (cli.help) {
    std::cout << usage_text();
    return code(ExitCode::ok);
  }
  if (cli.print_reference) {
    std::vector<std::string> problems;
    std::cout << reference_markdown(problems);
    for (const auto& problem : problems) log::error("reference: " + problem);
    return code(problems.empty() ? ExitCode::ok : ExitCode::runtime_failure);
  }
  if (cli.print_rules) {
    // The groups are resolved as the start resolves them (an unknown name or a formula that does
    // not parse is the same error), but no machine is probed: the rules are for every node this
    // configuration runs on.
    std::string rules;
    if (const auto failed = startup_step(
            [&] { rules = events::rule_file(collector_rule_scopes(config), kRuleWindow); });
        failed != ExitCode::ok) {
      return code(failed);
    }
    std::cout << rules;
    return code(ExitCode::ok);
  }
  if (cli.version) {
    std::cout << "hwperf_exporter version " << exporter_version() << " (revision "
              << exporter_revision();
    for (const auto& library : collector_library_versions()) std::cout << ", " << library;
    std::cout << ")\n";
    return code(ExitCode::ok);
  }
  log::set_level(config.log_level);
  quiet_experiment_log(cli, config);
  // no_new_privs is per thread and inherited: set now, before the first thread (PAPI owners, the
  // RAPL guard, CivetWeb's), every thread has it.
  if (runtime_user) {
    if (const auto failed = startup_step([] { forbid_new_privileges(); }); failed != ExitCode::ok) {
      return code(failed);
    }
  }

  const sigset_t signals = block_signals();

  std::optional<Topology> topology;
  if (const auto failed = startup_step([&] {
        try {
          topology.emplace(Topology::load(config.topology, config.paths));
        } catch (const std::runtime_error& e) {
          // The live machine failing is the machine's problem; a file or description the user
          // named is the user's.
          if (config.topology.kind == TopologyConfig::Kind::system) throw;
          throw ConfigError({e.what()});
        }
      });
      failed != ExitCode::ok) {
    return code(failed);
  }
  log::info("topology: " + topology->description());

  if (cli.check_config) {
    // The checks of the start that cost little: the configuration files (read above), the
    // admission layer (bcrypt costs) and, in collector_check_report as in build_collectors, the
    // family names across collectors. The collectors are probed by their own reports, each
    // distinct event opened once, where the start opens every configured one.
    return code(startup_step([&] {
      make_admission(cli, config, web_config, [](std::string_view) { return true; });
      std::cout << dump_config(config);
      std::cout << "# topology: " << topology->description() << "\n";
      for (const auto& line : collector_check_report(config, *topology)) {
        std::cout << "# " << line << "\n";
      }
    }));
  }

  std::unique_ptr<Exporter> exporter;
  std::vector<std::unique_ptr<Experiment>> experiments;
  SummaryPlan plan;     // --once -- CMD: the groups whose formulas the summary shows
  OnceOutputs outputs;  // --once: where the exposition and the summary go
  if (const auto failed = startup_step([&] {
        if (cli.once && !cli.command.empty()) plan = summary_plan(config);
        // Forked before any thread exists; each waits until its counters are open.
        if (!cli.command.empty()) experiments = start_experiments(cli, config);
        // Opened after the fork, so that the command does not inherit the files.
        if (cli.once) outputs = open_outputs(cli);
        check_open_files(cli, config, *topology);
        exporter = build_exporter(config, *topology, collectors_left_out(cli, config));
      });
      failed != ExitCode::ok) {
    return code(failed);
  }
  topology.reset();  // every collector took what it needs

  if (cli.once && !experiments.empty()) {
    return run_once(experiments, *exporter, plan, cli, signals, outputs);
  }
  if (cli.once) {
    const std::string text = serialize(exporter->gather(), ExpositionFormat::text_0_0_4);
    return code(write_and_close(*outputs.exposition, text) ? ExitCode::ok
                                                           : ExitCode::runtime_failure);
  }
  Experiment* experiment = experiments.empty() ? nullptr : experiments.front().get();
  if (experiment) {
    if (const auto status = release_command(*experiment)) return *status;
    exporter->refresh();  // executed: the collectors see the command's name now
  }

  std::unique_ptr<HttpServer> server;
  HttpServerOptions http_options;
  if (const auto failed = startup_step([&] {
        HttpServerOptions& options = http_options;
        options.listen_address = *listen_address;
        options.worker_threads = worker_threads(cli);
        if (cli.request_timeout_ms) options.request_timeout_ms = *cli.request_timeout_ms;
        if (cli.keep_alive_timeout_ms) options.keep_alive_timeout_ms = *cli.keep_alive_timeout_ms;
        options.tls = web_config.tls;
        options.certificates = certificates;
        options.response_headers = web_config.http.headers;
        // Held until the drop below: no request is read while the process is root.
        options.accept_later = runtime_user.has_value();
        const Exporter* routes = exporter.get();
        options.admission =
            make_admission(cli, config, web_config,
                           [routes](std::string_view path) { return routes->serves(path); });
        server = std::make_unique<HttpServer>(
            options, [routes](const HttpRequest& request) { return routes->route(request); });
      });
      failed != ExitCode::ok) {
    return code(failed);
  }
  // Every counter is open and the port is bound: nothing left needs root. Reads go through
  // descriptors opened already, which the kernel checked at open (exporter/privileges.h).
  if (runtime_user) {
    if (const auto failed = startup_step([&] { drop_privileges(*runtime_user); });
        failed != ExitCode::ok) {
      return code(failed);
    }
    if (runtime_user->uid == 0) {
      log::warn("running as " + runtime_user->name +
                " (uid 0) with every capability root has; name an unprivileged user in "
                "--runtime.user (e.g. nobody) to give them up");
    } else {
      log::info("running as " + runtime_user->name + " (uid " + std::to_string(runtime_user->uid) +
                ") with no capabilities");
    }
    server->accept_connections();
  }
  log::info("HTTP: " + std::to_string(server->worker_threads()) + " connections served at once, " +
            std::to_string(server->connection_queue()) + " more queued; request deadline " +
            format_number(http_options.request_timeout_ms / 1000.0) + " s, keep-alive " +
            format_number(http_options.keep_alive_timeout_ms / 1000.0) + " s; " +
            (http_options.admission->policy().max_concurrent_requests == 0
                 ? std::string("no limit on concurrent scrapes")
                 : std::to_string(http_options.admission->policy().max_concurrent_requests) +
                       " scrapes at once, 503 beyond"));
  log::info("Listening on " + server->bound_address() + " (metrics at " +
            config.web.telemetry_path + ")" +
            (web_config.tls ? ", HTTPS only: " + describe_tls(*web_config.tls) : "") +
            (web_config.basic_auth_users.empty() ? "" : ", basic authentication required"));

  int exit_status = code(ExitCode::ok);
  if (experiment) {
    exit_status =
        serve_command(*experiment, *exporter, signals, cli.linger_ms, config.web.telemetry_path);
  } else {
    wait_for_stop(signals);
  }
  // Whatever a worker or collector is doing (a client CivetWeb still waits on, a read stuck in
  // the kernel), the process ends within this deadline of the signal; a clean stop takes well
  // under a second.
  try {
    std::thread([exit_status] {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      log::warn("shutdown did not finish within 3 s; exiting without waiting for the rest");
      std::_Exit(exit_status);
    }).detach();
  } catch (const std::system_error&) {
    // No thread to spare: the stop below is then not bounded, but still happens.
  }
  server.reset();
  exporter.reset();
  return exit_status;
}

}  // namespace hwperf
