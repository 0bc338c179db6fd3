// Experiment mode as the exporter runs it (exporter/app.cpp): the command's process targets and
// children, the runs of `--once -- CMD`, where their exposition and summary go, and the linger of
// served `-- CMD` after the command has ended.
#pragma once

#include <signal.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "exporter/cli.h"
#include "exporter/experiment.h"
#include "exporter/router.h"

namespace hwperf {

// The process targets that count the command: one named after the program, or with --repeat=N
// one per run, NAME.1 to NAME.N (each run's counts apart from the others'). Enables the process
// collector.
void add_command_targets(const CliOptions& cli, Config& config);

// Experiment mode started without a configuration file by a user who cannot count the whole
// machine (not root, no CAP_PERFMON or CAP_SYS_ADMIN, kernel.perf_event_paranoid above 0): the
// enabled system-wide collectors (registry.h), which would only warn about every CPU, event and
// energy interface they cannot open, left out, and said so in one log line. Empty otherwise: a
// configuration file that enables them is obeyed.
std::vector<std::string> collectors_left_out(const CliOptions& cli, const Config& config);

// The first of `candidates` (the build tree's marker library, then the installed one) that can be
// read; throws std::runtime_error naming them all when none can.
std::string marker_library(const std::vector<std::string>& candidates);

// Forks one waiting child per command target (the last ones of the configuration) and binds each
// target to its child's pid. With --experiment.regions each child also gets the marker library
// preloaded and a region segment of its own, whose descriptor the target's regions_fd names. Throws
// std::runtime_error when it cannot fork.
std::vector<std::unique_ptr<Experiment>> start_experiments(const CliOptions& cli, Config& config);

// Where --once writes the exposition: stdout ("-", or by default without -- CMD), a file opened
// now, before any command runs, or nowhere (null: -- CMD without --output). Throws ConfigError
// naming the file when it cannot be written.
std::unique_ptr<std::ostream> open_output(const CliOptions& cli);

// --once -- CMD: lets each run execute in turn and waits for it, then writes the exposition of
// every run to `output` (when not null) and the summary to stderr in --summary.format. Returns
// what a shell would: summary_exit_code, or 126/127 for a run that could not be executed.
int run_once(const std::vector<std::unique_ptr<Experiment>>& runs, const Exporter& exporter,
             const std::vector<events::RuleScope>& scopes, const CliOptions& cli,
             std::ostream* output);

// Served -- CMD, once the command has ended: keeps serving until a scrape of the telemetry path
// that began after now has been answered, `linger_ms` have passed, or SIGTERM or SIGINT arrived
// (`signals` are blocked and waited for here, as in the serving loop).
void linger(const Exporter& exporter, const sigset_t& signals, unsigned linger_ms,
            const std::string& telemetry_path);

}  // namespace hwperf
