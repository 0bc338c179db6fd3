// Which processes a target counts, decided from one look at /proc at a time (a Snapshot), with no
// perf calls: tested on hand-made snapshots. A target counts its roots (the processes its
// selector names, each attached with one counter per thread and event) and, through the kernel's
// inherit, every process and thread a counted process creates after it is counted. So a process
// the selector also names is attached only when nothing counts it yet, and a root whose process
// is gone keeps its counters while a process it counts is still alive.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "collectors/process/proc_scan.h"
#include "common/enum_names.h"
#include "collectors/process/process_config.h"

namespace hwperf::process {

// Every process of the machine at one moment, by pid, and the time in start-time ticks.
struct Snapshot {
  std::map<pid_t, ProcStat> processes;
  std::uint64_t now_ticks = 0;
  const ProcStat* find(const ProcessIdentity& identity) const;
};

// The process facts a `match` selector may ask for beyond the comm, read only when asked.
struct ProcessFacts {
  std::function<std::string(pid_t)> exe;
  std::function<std::string(pid_t)> cmdline;
};

// A pidfile and when it was last written, in the start-time clock.
struct PidfileReading {
  pid_t pid = 0;
  int error = 0;
  std::optional<std::uint64_t> written_ticks;
};

// Why a target counts nothing, as the `state` of hwperf_process_target_state.
enum class TargetState { counting, no_process, ended, permission_denied, fd_budget, error };
inline constexpr EnumName<TargetState> kTargetStateNames[] = {
    {TargetState::counting, "counting"},   {TargetState::no_process, "no_process"},
    {TargetState::ended, "ended"},         {TargetState::permission_denied, "permission_denied"},
    {TargetState::fd_budget, "fd_budget"}, {TargetState::error, "error"},
};
inline const char* to_string(TargetState state) { return name_of(kTargetStateNames, state); }

class TargetPlan {
 public:
  explicit TargetPlan(const ProcessTargetConfig& config);

  struct Actions {
    std::vector<ProcStat> attach;         // new roots to open counters on
    std::vector<ProcessIdentity> detach;  // roots whose counters can be read once and closed
    std::vector<ProcStat> counted;        // live processes counted: roots and descendants
    std::string no_process;               // why nothing is selected, when nothing is
    // With no_process: the one process a pid or command target binds to has ended, and all it
    // started; nothing will be selected again.
    bool ended = false;
  };
  // `pidfile` is read by the caller for pidfile targets (nothing otherwise).
  Actions update(const Snapshot& snapshot, const ProcessFacts& facts,
                 const std::optional<PidfileReading>& pidfile);

  // After the caller opened (or failed to open) counters on an attach action's process.
  void attached(const ProcessIdentity& identity, std::uint64_t since_ticks);
  void detached(const ProcessIdentity& identity);
  // A process the caller attached itself (experiment mode: before exec).
  void adopt(const ProcessIdentity& identity, std::uint64_t since_ticks);

  const ProcessTargetConfig& config() const { return config_; }

 private:
  struct Root {
    std::uint64_t since_ticks = 0;
    std::set<ProcessIdentity>
        descendants;  // counted through inherit, remembered across reparenting
  };
  std::vector<ProcessIdentity> select(const Snapshot& snapshot, const ProcessFacts& facts,
                                      const std::optional<PidfileReading>& pidfile,
                                      std::string& why_none);
  // The root that counts `process` through inherit (or as itself), if any.
  const ProcessIdentity* counted_by(const Snapshot& snapshot, const ProcStat& process,
                                    std::map<pid_t, const ProcessIdentity*>& memo);

  ProcessTargetConfig config_;
  std::optional<std::regex> comm_, exe_, cmdline_;
  std::optional<ProcessIdentity> bound_pid_;  // Selector::pid: the process first seen there
  std::map<ProcessIdentity, Root> roots_;
};

}  // namespace hwperf::process
