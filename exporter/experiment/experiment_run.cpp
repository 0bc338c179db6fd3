#include "exporter/experiment/experiment_run.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include "collectors/metrics.h"
#include "collectors/registry.h"
#include "common/region_segment_file.h"
#include "common/log.h"
#include "common/text.h"
#include "config/errors.h"
#include "collectors/exposition_text.h"

namespace hwperf {
namespace {

std::string seconds_text(std::chrono::milliseconds duration) {
  return format_number(static_cast<double>(duration.count()) / 1000.0) + " s";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string add_note(const std::string& notes, const std::string& note) {
  return notes.empty() ? note : notes + "; " + note;
}

// A stop signal while the command runs: the first is passed on, a second kills it.
void heard_stop(Experiment& command, int signal_number, StopRequest& stop) {
  if (stop.signal == 0) {
    stop.signal = signal_number;
    stop.at = std::chrono::steady_clock::now();
    log::info("received " + signal_text(signal_number) + ", passed on to " +
              command.command_line() + " (killed if it has not ended within " +
              seconds_text(kStopGrace) + ", at once on a second signal)");
    command.forward(signal_number);
  } else if (!stop.killed) {
    log::warn("received " + signal_text(signal_number) + " again; killing " +
              command.command_line() + " (SIGKILL)");
    command.forward(SIGKILL);
    stop.killed = true;
  }
}

// Between runs: whether a stop signal came (taken from the pending ones, the others dropped).
bool stop_heard(const sigset_t& signals, StopRequest& stop) {
  const timespec now{0, 0};
  int signal_number = 0;
  while (stop.signal == 0 && (signal_number = ::sigtimedwait(&signals, nullptr, &now)) > 0) {
    if (signal_number != SIGTERM && signal_number != SIGINT) continue;
    stop.signal = signal_number;
    stop.at = std::chrono::steady_clock::now();
    log::info("received " + signal_text(signal_number) + " between runs; no more runs");
  }
  return stop.signal != 0;
}

// A run whose waiting child was killed before it could start (Ctrl-C reaches the whole process
// group): nothing of it is measured, and the summary says so.
void not_started(ExperimentSummary& summary, Experiment& run, std::size_t index, std::size_t runs) {
  const int status = run.wait();
  const std::string note = "run " + std::to_string(index + 1) + " of " + std::to_string(runs) +
                           " did not start: its process, waiting for its counters, ended (" +
                           end_text(status, run.end_signal()) + ")";
  log::warn(note);
  summary.stopped = add_note(summary.stopped, note);
  if (summary.stopped_status == 0) summary.stopped_status = status;
}

struct MeasuredRun {
  std::string target;
  ExperimentRun run;
};

// After the runs: the exposition of them all (every collector, as one scrape) and the summary of
// those measured, written where --once says. False when either could not be written (logged).
bool write_results(const ExperimentHost& exporter, const SummaryPlan& plan,
                   const ExperimentOptions& options, OnceOutputs& outputs,
                   ExperimentSummary& summary, const std::vector<MeasuredRun>& measured) {
  // The targets' state and processes as the runs left them: ended, none live.
  exporter.refresh();
  const auto families = exporter.gather();
  bool written = true;
  if (outputs.exposition) {
    // stdout is the command's too: the exposition starts on a line of its own (the text format
    // ignores an empty line).
    const bool shared = outputs.exposition->is_stdout();
    written =
        write_and_close(*outputs.exposition,
                        (shared ? "\n" : "") + serialize(families, ExpositionFormat::text_0_0_4));
  }
  summary.not_measured = not_measured(plan, families);
  for (const auto& [target, run] : measured) {
    add_run(summary, families, plan.scopes, target, run);
  }
  return write_and_close(*outputs.summary, format_summary(summary, options.summary_format)) &&
         written;
}

void linger(const ExperimentHost& exporter, const sigset_t& signals, unsigned linger_ms,
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

}  // namespace

namespace {

// The target name of each run of the command.
std::vector<std::string> command_target_names(const ExperimentOptions& options) {
  const std::string name = options.experiment_name.value_or(command_target_name(options.command));
  std::vector<std::string> names;
  for (unsigned run = 1; run <= options.repeat; ++run) {
    names.push_back(options.repeat == 1 ? name : name + "." + std::to_string(run));
  }
  return names;
}

}  // namespace

void add_command_targets(const ExperimentOptions& options, Config& config) {
  add_experiment_commands(config, command_target_names(options));
}

std::string marker_library(const std::vector<std::string>& candidates) {
  for (const auto& path : candidates) {
    if (::access(path.c_str(), R_OK) == 0) return path;
  }
  throw std::runtime_error("--experiment.regions: the marker library is in none of " +
                           join(candidates, ", ") +
                           "; build the hwperf_markers target, or install the project");
}

std::vector<std::unique_ptr<Experiment>> start_experiments(const ExperimentOptions& options,
                                                           Config& config) {
  std::string preload;
  if (options.experiment_regions) {
    preload = marker_library({HWPERF_MARKERS_BUILD_PATH, HWPERF_MARKERS_INSTALL_PATH});
    log::info("--experiment.regions: preloading " + preload);
  }
  std::vector<std::unique_ptr<Experiment>> runs;
  for (const auto& name : command_target_names(options)) {
    CommandSetup setup;
    int regions_fd = -1;
    if (options.experiment_regions) {
      // One segment per run, so that each run's regions are counted apart, as its events are.
      setup.preload = preload;
      setup.inherited = create_region_segment();
      setup.fd_env = HWPERF_REGION_FD_ENV;
      regions_fd = setup.inherited.get();
    }
    runs.push_back(std::make_unique<Experiment>(options.command, name, std::move(setup)));
    experiment_command_started(config, name, runs.back()->pid(), regions_fd);
  }
  return runs;
}

OnceOutputs open_outputs(const ExperimentOptions& options) {
  OnceOutputs outputs;
  if (options.output) {
    outputs.exposition.emplace(OutputFile::open("--output", *options.output));
  } else if (options.command.empty()) {
    outputs.exposition.emplace(OutputFile::standard(1, "stdout"));
  }
  if (options.command.empty()) return outputs;
  outputs.summary.emplace(options.summary_output
                              ? OutputFile::open("--summary.output", *options.summary_output)
                              : OutputFile::standard(2, "stderr"));
  return outputs;
}

int wait_for_command(Experiment& command, const sigset_t& signals, StopRequest& stop) {
  while (true) {
    if (const auto status = command.poll()) return *status;
    const auto now = std::chrono::steady_clock::now();
    if (stop.signal != 0 && !stop.killed && now - stop.at >= kStopGrace) {
      log::warn(command.command_line() + " did not end within " + seconds_text(kStopGrace) +
                " of " + signal_text(stop.signal) + "; killing it (SIGKILL)");
      command.forward(SIGKILL);
      stop.killed = true;
    }
    // SIGCHLD wakes this at once; the timeout only measures the grace period.
    const timespec look{0, 100 * 1000 * 1000};
    const int signal_number = ::sigtimedwait(&signals, nullptr, &look);
    if (signal_number == SIGTERM || signal_number == SIGINT) {
      heard_stop(command, signal_number, stop);
    } else if (signal_number > 0 && signal_number != SIGCHLD) {
      log::info("received " + signal_text(signal_number) +
                ", ignored (SIGTERM and SIGINT are passed on to the command)");
    }
  }
}

OnceResult run_once(const std::vector<std::unique_ptr<Experiment>>& runs,
                    const ExperimentHost& exporter, const SummaryPlan& plan,
                    const ExperimentOptions& options, const sigset_t& signals,
                    OnceOutputs& outputs) {
  ExperimentSummary summary;
  summary.command_line = runs.front()->command_line();
  StopRequest stop;
  std::vector<MeasuredRun> measured;
  std::string where;  // the run a stop signal came in
  std::size_t next = 0;
  for (; next < runs.size() && !stop_heard(signals, stop); ++next) {
    Experiment& run = *runs[next];
    const auto start = std::chrono::steady_clock::now();
    try {
      if (!run.release()) {
        not_started(summary, run, next, runs.size());
        continue;
      }
    } catch (const std::runtime_error& e) {
      log::error(e.what());
      return {run.wait(), true};
    }
    // Executed: what the collectors show of it (its name) is the command's from now on.
    exporter.refresh();
    const int status = wait_for_command(run, signals, stop);
    measured.push_back({run.target_name(), {status, seconds_since(start), run.end_signal()}});
    if (stop.signal != 0 && where.empty()) where = "during run " + std::to_string(next + 1);
  }
  if (stop.signal != 0) {
    if (where.empty()) where = "before run " + std::to_string(next + 1);
    summary.stopped = add_note(summary.stopped, "stopped by " + signal_text(stop.signal) + " " +
                                                    where + " of " + std::to_string(runs.size()));
    summary.stopped_status = 128 + stop.signal;
  }
  const bool written = write_results(exporter, plan, options, outputs, summary, measured);
  return {summary_exit_code(summary), written};
}

int serve_command(Experiment& command, const ExperimentHost& exporter, const sigset_t& signals,
                  unsigned linger_ms, const std::string& telemetry_path) {
  StopRequest stop;
  const int status = wait_for_command(command, signals, stop);
  log::info(command.command_line() + (command.end_signal() == 0
                                          ? " exited with status " + std::to_string(status)
                                          : " ended: " + end_text(status, command.end_signal()) +
                                                ", status " + std::to_string(status)));
  if (stop.signal != 0) {
    log::info("stopped by " + signal_text(stop.signal) +
              ": not serving the final counts (--linger)");
  } else {
    linger(exporter, signals, linger_ms, telemetry_path);
  }
  log::info("shutting down");
  return status;
}

}  // namespace hwperf
