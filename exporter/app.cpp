// The process as a list of steps (exporter/startup.h has each one).
#include "exporter/app.h"

#include <signal.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "collectors/build_info.h"
#include "collectors/registry.h"
#include "exporter/reference.h"
#include "exporter/startup.h"

namespace hwperf {
namespace {

// --help, --print-reference, --print-rules and --version print and exit: the exit status, or
// nullopt for every other command line.
std::optional<int> print_and_exit(const Startup& startup) {
  const CliOptions& cli = startup.cli;
  if (cli.help) {
    std::cout << usage_text();
    return exit_status(ExitCode::ok);
  }
  if (cli.print_reference) {
    std::vector<std::string> problems;
    std::cout << reference_markdown(problems);
    for (const auto& problem : problems) log::error("reference: " + problem);
    return exit_status(problems.empty() ? ExitCode::ok : ExitCode::runtime_failure);
  }
  if (cli.print_rules) {
    // The groups are resolved as the start resolves them (an unknown name or a formula that does
    // not parse is the same error), but no machine is probed: the rules are for every node this
    // configuration runs on.
    std::string rules;
    if (const auto failed = startup_step(
            [&] { rules = events::rule_file(collector_rule_scopes(startup.config), kRuleWindow); });
        failed != ExitCode::ok) {
      return exit_status(failed);
    }
    std::cout << rules;
    return exit_status(ExitCode::ok);
  }
  if (cli.version) {
    std::cout << "hwperf_exporter version " << exporter_version() << " (revision "
              << exporter_revision();
    for (const auto& library : collector_library_versions()) std::cout << ", " << library;
    std::cout << ")\n";
    return exit_status(ExitCode::ok);
  }
  return std::nullopt;
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

}  // namespace

int run_exporter(const std::vector<std::string>& args) {
  Startup startup;
  if (const auto failed = startup_step([&] { startup = load_startup(args); });
      failed != ExitCode::ok) {
    return exit_status(failed);
  }
  if (const auto printed = print_and_exit(startup)) return *printed;
  if (const auto failed = startup_step([&] { prepare_process(startup); }); failed != ExitCode::ok) {
    return exit_status(failed);
  }
  const sigset_t signals = block_signals();

  std::optional<Topology> topology;
  if (const auto failed = startup_step([&] { topology.emplace(load_topology(startup.config)); });
      failed != ExitCode::ok) {
    return exit_status(failed);
  }
  log::info("topology: " + topology->description());
  if (startup.cli.check_config) {
    return exit_status(startup_step([&] { check_configuration(startup, *topology); }));
  }

  Built built;
  if (const auto failed = startup_step([&] { built = build(startup, *topology); });
      failed != ExitCode::ok) {
    return exit_status(failed);
  }
  topology.reset();  // every collector took what it needs
  return startup.cli.once ? print_once(startup, built, signals) : serve(startup, built, signals);
}

}  // namespace hwperf
