// Experiment mode: `hwperf_exporter [--once] -- CMD ARGS...` runs a command as a process target
// whose counters are opened before it executes (perf stat's way: the child waits until the
// exporter has attached, and the kernel enables the counters at its exec), so nothing of the
// exporter and everything of the command is counted.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/registry.h"  // events::RuleScope, through the registry entries
#include "common/unique_fd.h"
#include "exporter/experiment/experiment_options.h"

namespace hwperf {

// A command's file name ("sh" for /bin/sh).
std::string program_name(const std::string& program);

// Whether execvp would run `word` as a program: a path (with a '/') to an executable file, or an
// executable file of that name in a directory of $PATH.
bool is_program(const std::string& word);

// The process target's name for a command (experiment_name.cpp): its program's file name, or,
// when the command is a wrapper that runs another program (taskset, numactl, env, time, nice,
// ionice, chrt, nohup, timeout, stdbuf, setarch, srun, mpirun, mpiexec), the first word after the
// wrapper's own that `is_program` accepts, itself looked through the same way; for a shell's -c
// STRING, the program of STRING when it is one simple command (no ; | & ( ) { } ` or newline),
// else the shell. Decided before the command runs: the name is every series' target label from
// the first scrape on.
std::string command_target_name(const std::vector<std::string>& command,
                                bool (*is_program)(const std::string&) = &hwperf::is_program);

// How a process ended, as a shell and the summary say it: "exit status 3", or "terminated by
// signal 15 (SIGTERM)".
std::string end_text(int exit_code, int signal_number);
// "SIGTERM" for 15.
std::string signal_text(int signal_number);

// How long the command has to end once a stop signal was passed on to it, before it is killed
// (SIGKILL): under docker stop's 10 s, with the exporter's own exit (well under 2 s) to spare. A
// second stop signal kills it at once.
inline constexpr std::chrono::milliseconds kStopGrace{5000};

// What the command gets besides its arguments (--experiment.regions): a library preloaded before
// any LD_PRELOAD it already has, and a descriptor it inherits, its number in an environment
// variable. The Experiment owns the descriptor for as long as it lives.
struct CommandSetup {
  std::string preload;  // "" for none
  UniqueFd inherited;   // close-on-exec here; left open across the command's exec only
  std::string fd_env;   // e.g. HWPERF_REGIONS_FD
};

class Experiment {
 public:
  // Forks the child, which waits. Throws std::runtime_error when it cannot. `target`: the
  // process target that counts it, program_name() of the command when "".
  explicit Experiment(std::vector<std::string> command, std::string target = "",
                      CommandSetup setup = {});
  ~Experiment();
  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& target_name() const { return target_; }
  std::string command_line() const;
  // Lets the child execute the command; false when the child had ended while it waited (killed
  // by another hand: wait() then says how). Throws std::runtime_error when exec failed, naming
  // the command and the error; the child then exited as a shell would (wait(): 127 when the
  // command was not found, 126 when it could not be executed).
  bool release();
  // The child's exit code (128 + signal when a signal ended it), once it has ended.
  int wait();
  std::optional<int> poll();
  // The signal that ended the child, 0 when it exited (or has not ended).
  int end_signal() const { return signal_; }
  void forward(int signal_number);

 private:
  std::vector<std::string> command_;
  std::string target_;
  CommandSetup setup_;
  pid_t pid_ = -1;
  int go_fd_ = -1;     // written to once: the child may exec
  int error_fd_ = -1;  // the child writes its exec errno here; closed by a successful exec
  bool reaped_ = false;
  int status_ = 0;
  int signal_ = 0;
  void reaped(int status);
};

// One line of the summary over every run: an event the target counted (in a group, or
// ungrouped) or a formula of an event group, with its value in each run (nothing where a
// formula's divisor was 0; `counted` false when the group was not counted at all).
struct SummaryLine {
  enum class Kind { event, metric };
  Kind kind = Kind::event;
  std::string name;      // "page_faults", or a metric's short name ("CPUs utilized")
  std::string group;     // "" for an ungrouped event
  std::string formula;   // a metric's formula text
  bool seconds = false;  // an event counted in seconds (printed with decimals)
  bool counted = true;
  std::vector<std::optional<double>> values;  // one per run
  std::string note;                           // multiplexing, as the last run saw it
  // Why the line has no value in any run although its event was opened (an event that counts in
  // kernel mode only, where the target counts user mode); "" when it was measured.
  std::string not_measured;
};

struct ExperimentRun {
  int exit_code = 0;
  double seconds = 0;
  int signal = 0;  // the signal that ended the command, 0 when it exited
};

// One marked region of one run (--experiment.regions), as likwid-perfctr -m prints it: a row per
// thread, then their sum, from the hwperf_region_thread_* families.
struct RegionTable {
  std::size_t run = 0;  // 1-based
  std::string region;
  std::vector<std::string> columns;  // "calls", "seconds", then each event's metric
  struct Row {
    std::string thread;  // the tid, or "sum"
    std::vector<double> values;
  };
  std::vector<Row> rows;
};

// What `--once -- CMD` (and `--repeat=N`) measured, ready to be written in any SummaryFormat.
struct ExperimentSummary {
  std::string command_line;
  std::vector<SummaryLine> lines;
  std::vector<RegionTable> regions;
  std::vector<ExperimentRun> runs;
  std::string note;  // why the kernel counted less than configured, "" when it did not
  // The metrics (family names without hwperf_process_ and _total) that were opened but cannot
  // count here, and why: set before add_run (not_measured_in, experiment_run.h).
  std::map<std::string, std::string> not_measured;
  // Why fewer runs were measured than asked ("stopped by SIGINT after 2 of 5 runs"), "" when all
  // were; and the status that stop gives when every measured run exited 0.
  std::string stopped;
  int stopped_status = 0;
};

// Each region's "sum" row over the runs (--repeat): one value per run and column, nothing in a
// run that did not enter the region.
struct RegionOverRuns {
  std::string region;
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<double>>> values;  // [column][run]
};
std::vector<RegionOverRuns> regions_over_runs(const ExperimentSummary& summary);

// Adds one run to `summary`: each event `target` counted (and the group that counted it), then,
// as perf stat prints its shadow metrics, every formula of the event groups of the `scopes` whose
// families are the process targets' (collector_rule_scopes), evaluated over the run: each
// variable is its member's count in the target's series of that group, per second of `seconds`.
void add_run(ExperimentSummary& summary, const std::vector<prometheus::MetricFamily>& families,
             const std::vector<events::RuleScope>& scopes, const std::string& target,
             ExperimentRun run);

// The summary in `format`. Over several runs each value is their mean, with the relative spread
// (standard deviation / mean) that perf stat -r prints as "+- x%".
std::string format_summary(const ExperimentSummary& summary, SummaryFormat format);
// What `--once -- CMD` exits with: the first run's status that is not 0, else stopped_status.
int summary_exit_code(const ExperimentSummary& summary);

// The text summary of one run (format_summary of add_run's summary).
std::string experiment_summary(const std::vector<prometheus::MetricFamily>& families,
                               const std::vector<events::RuleScope>& scopes,
                               const std::string& target, const std::string& command_line,
                               int exit_code, double seconds);

}  // namespace hwperf
