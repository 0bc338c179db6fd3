// Experiment mode: `hwperf_exporter [--once] -- CMD ARGS...` runs a command as a process target
// whose counters are opened before it executes (perf stat's way: the child waits until the
// exporter has attached, and the kernel enables the counters at its exec), so nothing of the
// exporter and everything of the command is counted.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/registry.h"  // events::RuleScope, through the registry entries

namespace hwperf {

class Experiment {
 public:
  // Forks the child, which waits. Throws std::runtime_error when it cannot.
  explicit Experiment(std::vector<std::string> command);
  ~Experiment();
  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;

  pid_t pid() const { return pid_; }
  // The target's name: the command's file name ("sh" for /bin/sh).
  std::string target_name() const;
  std::string command_line() const;
  // Lets the child execute the command. Throws std::runtime_error when exec failed (the child
  // exited 127), naming the command and the error.
  void release();
  // The child's exit code (128 + signal when a signal ended it), once it has ended.
  int wait();
  std::optional<int> poll();
  void forward(int signal_number);

 private:
  std::vector<std::string> command_;
  pid_t pid_ = -1;
  int go_fd_ = -1;     // written to once: the child may exec
  int error_fd_ = -1;  // the child writes its exec errno here; closed by a successful exec
  bool reaped_ = false;
  int status_ = 0;
};

// perf-stat-like lines for stderr: each event the target counted (and the group that counted
// it), then, as perf stat prints its shadow metrics, every formula of the event groups of the
// `scopes` whose families are the process targets' (collector_rule_scopes), evaluated over the
// whole run: each variable is its member's count in the target's series of that group, per
// second of `seconds`. A group whose events were not counted says so. Then the command's status
// and the time it ran.
std::string experiment_summary(const std::vector<prometheus::MetricFamily>& families,
                               const std::vector<events::RuleScope>& scopes,
                               const std::string& target, const std::string& command_line,
                               int exit_code, double seconds);

}  // namespace hwperf
