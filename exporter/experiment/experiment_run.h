// Experiment mode as the exporter runs it (exporter/app.cpp): the command's process targets and
// children, the runs of `--once -- CMD`, where their exposition and summary go, how the command
// hears the exporter's stop signals, and the linger of served `-- CMD` after the command has ended.
// It reads its own flags (ExperimentOptions) and the exporter through ExperimentHost, so that it
// knows nothing of the process above it.
#pragma once

#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "common/interface.h"
#include "config/config.h"
#include "exporter/experiment/experiment.h"
#include "exporter/experiment/experiment_options.h"
#include "exporter/experiment/experiment_output.h"

namespace hwperf {

// What experiment mode reads of the exporter that counts the command (exporter/router.h's
// Exporter, handed over by exporter/app.cpp): its families and the scrapes it has answered.
class ExperimentHost : public Interface {
 public:
  // What the collectors discover, looked at again now (the command's name once it executed).
  virtual void refresh() const = 0;
  // Every family a scrape serves.
  virtual std::vector<prometheus::MetricFamily> gather() const = 0;
  // A mark now, and whether a scrape of the telemetry path that began after it was answered.
  virtual std::uint64_t scrape_mark() const = 0;
  virtual bool scraped_after(std::uint64_t mark) const = 0;
};

// The process targets that count the command: one named after the program (command_target_name,
// or --experiment.name), or with --repeat=N one per run, NAME.1 to NAME.N (each run's counts apart
// from the others'). Enables the process collector. Throws ConfigError for a name a configured
// target has already.
void add_command_targets(const ExperimentOptions& options, Config& config);

// The first of `candidates` (the build tree's marker library, then the installed one) that can be
// read; throws std::runtime_error naming them all when none can.
std::string marker_library(const std::vector<std::string>& candidates);

// Forks one waiting child per command target (the last ones of the configuration) and binds each
// target to its child's pid. With --experiment.regions each child also gets the marker library
// preloaded and a region segment of its own, whose descriptor the target's regions_fd names. Throws
// std::runtime_error when it cannot fork.
std::vector<std::unique_ptr<Experiment>> start_experiments(const ExperimentOptions& options,
                                                           Config& config);

// Where --once writes: the exposition to stdout ("-", or by default without -- CMD), to a file, or
// nowhere (-- CMD without --output); the summary of -- CMD to --summary.output or stderr. Opened
// now, before any command runs: a file that cannot be opened is a ConfigError naming it.
struct OnceOutputs {
  std::optional<OutputFile> exposition;
  std::optional<OutputFile> summary;
};
OnceOutputs open_outputs(const ExperimentOptions& options);

// What the summary of --once -- CMD is made from, besides the runs (experiment_plan.cpp): the
// groups whose formulas it shows (collector_rule_scopes), and the process targets' metrics of
// events that count in kernel mode only, which a target counting user mode opens but never sees
// count (perf stat shows them <not counted>).
struct SummaryPlan {
  std::vector<events::RuleScope> scopes;
  std::vector<std::string> kernel_mode_only;  // metrics that follow collectors.process.domain
  std::vector<std::string> user_mode_only;    // metrics whose own qualifiers leave kernel mode out
  bool user_mode_configured = false;          // collectors.process.domain: user
};
SummaryPlan summary_plan(const Config& config);
// The metrics of `plan` the runs could not measure, and why (ExperimentSummary::not_measured):
// the kernel-mode-only ones when the targets counted user mode, configured so or narrowed by the
// kernel (hwperf_process_domain_narrowed{domain="user"} in `families`).
std::map<std::string, std::string> not_measured(
    const SummaryPlan& plan, const std::vector<prometheus::MetricFamily>& families);
// The metric an event that counts in kernel mode only is exported under when the configuration
// names none ("context_switches" for perf::CONTEXT-SWITCHES); nullopt for any other event.
std::optional<std::string> kernel_mode_only_metric(const std::string& event);

// The first stop signal experiment mode heard, passed on to the command, and when.
struct StopRequest {
  int signal = 0;  // SIGTERM or SIGINT; 0 while none came
  std::chrono::steady_clock::time_point at;
  bool killed = false;  // the command was sent SIGKILL
};

// Waits for a released command to end, hearing `signals` (blocked in every thread): the first
// SIGTERM or SIGINT is passed on to it; a second one, or kStopGrace without its end, kills it
// (SIGKILL). Other signals are logged and ignored. Returns its exit code (Experiment::wait).
int wait_for_command(Experiment& command, const sigset_t& signals, StopRequest& stop);

// --once -- CMD: lets each run execute in turn and waits for it (wait_for_command), until a stop
// signal: then the runs not started are not, and the summary is of those that ran. Then writes
// the exposition of every run (after the command's own output on a line of its own, when both go
// to stdout) and the summary in --summary.format. `status` is what a shell would say:
// summary_exit_code, 126/127 for a run that could not be executed, 128+N when signal N stopped
// runs that all exited 0; `written` is false when the exposition or summary could not be written
// (logged), which the exporter's exit code then says.
struct OnceResult {
  int status = 0;
  bool written = true;
};
OnceResult run_once(const std::vector<std::unique_ptr<Experiment>>& runs,
                    const ExperimentHost& exporter, const SummaryPlan& plan,
                    const ExperimentOptions& options, const sigset_t& signals,
                    OnceOutputs& outputs);

// Served -- CMD: waits for the command to end (wait_for_command), then, unless a stop signal ended
// it, keeps serving until a scrape of the telemetry path that began after its end has been
// answered, `linger_ms` have passed, or SIGTERM or SIGINT arrived. Returns the command's status.
int serve_command(Experiment& command, const ExperimentHost& exporter, const sigset_t& signals,
                  unsigned linger_ms, const std::string& telemetry_path);

}  // namespace hwperf
