#include "exporter/experiment_run.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "common/files.h"
#include "common/region_segment_file.h"
#include "common/log.h"
#include "common/sysctl.h"
#include "common/text.h"
#include "config/errors.h"
#include "collectors/registry.h"
#include "exporter/exposition.h"

namespace hwperf {
namespace {

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

}  // namespace

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

void add_command_targets(const CliOptions& cli, Config& config) {
  const std::string name = program_name(cli.command.front());
  config.collectors.process.enabled = true;
  for (unsigned run = 1; run <= cli.repeat; ++run) {
    ProcessTargetConfig target;
    target.selector = ProcessTargetConfig::Selector::command;
    target.name = cli.repeat == 1 ? name : name + "." + std::to_string(run);
    config.collectors.process.targets.push_back(target);
  }
}

std::string marker_library(const std::vector<std::string>& candidates) {
  for (const auto& path : candidates) {
    if (::access(path.c_str(), R_OK) == 0) return path;
  }
  throw std::runtime_error("--experiment.regions: the marker library is in none of " +
                           join(candidates, ", ") +
                           "; build the hwperf_markers target, or install the project");
}

std::vector<std::unique_ptr<Experiment>> start_experiments(const CliOptions& cli, Config& config) {
  auto& targets = config.collectors.process.targets;
  std::string preload;
  if (cli.experiment_regions) {
    preload = marker_library({HWPERF_MARKERS_BUILD_PATH, HWPERF_MARKERS_INSTALL_PATH});
    log::info("--experiment.regions: preloading " + preload);
  }
  std::vector<std::unique_ptr<Experiment>> runs;
  for (std::size_t i = targets.size() - cli.repeat; i < targets.size(); ++i) {
    CommandSetup setup;
    if (cli.experiment_regions) {
      // One segment per run, so that each run's regions are counted apart, as its events are.
      setup.preload = preload;
      setup.inherited = create_region_segment();
      setup.fd_env = HWPERF_REGION_FD_ENV;
      targets[i].regions_fd = setup.inherited.get();
    }
    runs.push_back(std::make_unique<Experiment>(cli.command, targets[i].name, std::move(setup)));
    targets[i].pid = runs.back()->pid();
  }
  return runs;
}

std::unique_ptr<std::ostream> open_output(const CliOptions& cli) {
  if (!cli.output && !cli.command.empty()) return nullptr;
  if (!cli.output || *cli.output == "-") return std::make_unique<std::ostream>(std::cout.rdbuf());
  auto file = std::make_unique<std::ofstream>(*cli.output, std::ios::out | std::ios::trunc);
  if (!file->is_open()) {
    throw ConfigError({"--output=" + *cli.output + ": cannot write it (" + errno_text(errno) +
                       "); name a file in a directory you can write, or - for stdout"});
  }
  return file;
}

int run_once(const std::vector<std::unique_ptr<Experiment>>& runs, const Exporter& exporter,
             const std::vector<events::RuleScope>& scopes, const CliOptions& cli,
             std::ostream* output) {
  std::vector<ExperimentRun> measured;
  for (const auto& run : runs) {
    const auto start = std::chrono::steady_clock::now();
    try {
      run->release();
    } catch (const std::runtime_error& e) {
      log::error(e.what());
      return run->wait();
    }
    // Executed: what the collectors show of it (its name) is the command's from now on.
    exporter.refresh();
    const int status = run->wait();
    measured.push_back(
        {status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  }
  const auto families = exporter.gather();
  if (output != nullptr) {
    *output << serialize(families, ExpositionFormat::text_0_0_4) << std::flush;
    if (!*output) log::error("--output=" + cli.output.value_or("-") + ": write failed");
  }
  ExperimentSummary summary;
  summary.command_line = runs.front()->command_line();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    add_run(summary, families, scopes, runs[i]->target_name(), measured[i]);
  }
  std::cerr << format_summary(summary, cli.summary_format) << std::flush;
  return summary_exit_code(summary);
}

void linger(const Exporter& exporter, const sigset_t& signals, unsigned linger_ms,
            const std::string& telemetry_path) {
  if (linger_ms == 0) return;
  const std::uint64_t mark = exporter.scrape_mark();
  log::info("serving the final counts until a scrape of " + telemetry_path + " has read them, " +
            "at most " + format_number(linger_ms / 1000.0) + " s (--linger)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(linger_ms);
  while (!exporter.scraped_after(mark)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      log::info("no scrape read the final counts within " + format_number(linger_ms / 1000.0) +
                " s (--linger)");
      return;
    }
    // A scrape is answered on a server thread: look every 50 ms, which a scrape interval of
    // seconds never notices, and hear a stop signal meanwhile.
    const timespec poll{0, 50 * 1000 * 1000};
    const int signal_number = ::sigtimedwait(&signals, nullptr, &poll);
    if (signal_number == SIGTERM || signal_number == SIGINT) {
      log::info("stop signal while serving the final counts; exiting");
      return;
    }
  }
  log::info("a scrape read the final counts");
}

}  // namespace hwperf
