#include "collectors/process/process_collector.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <map>
#include <tuple>
#include <utility>

#include "collectors/events/emission.h"
#include "collectors/process/process_families.h"
#include "collectors/metrics.h"
#include "common/log.h"
#include "collectors/perf/perf_event.h"
#include "common/text.h"

namespace hwperf::process {

namespace {

// The start-time tick at which a file was last written: its mtime moved from the wall clock to
// the boot clock the kernel reports start times in.
std::optional<std::uint64_t> written_ticks(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto hz = static_cast<std::int64_t>(::sysconf(_SC_CLK_TCK));
  const std::int64_t age_ns =
      (now.tv_sec - info.st_mtim.tv_sec) * 1000000000LL + (now.tv_nsec - info.st_mtim.tv_nsec);
  const auto age_ticks =
      static_cast<std::uint64_t>(std::max<std::int64_t>(age_ns, 0) * hz / 1000000000LL);
  const std::uint64_t now_ticks = boot_ticks_now();
  return now_ticks > age_ticks ? now_ticks - age_ticks : 0;
}

std::string uid_of(const std::string& procfs, pid_t pid) {
  const auto status = read_small_file(procfs + "/" + std::to_string(pid) + "/status");
  if (!status.ok()) return "?";
  const auto at = status.value.find("\nUid:");
  if (at == std::string::npos) return "?";
  const auto value = trim(std::string_view(status.value).substr(at + 5, 16));
  return std::string(value.substr(0, value.find_first_of(" \t")));
}

// What the kernel wants for counting another process (kernel/events/core.c: perf_event_open
// checks ptrace_may_access with PTRACE_MODE_READ_REALCREDS, then perf_event_paranoid unless the
// caller has CAP_PERFMON), said for the process that could not be counted.
std::string permission_remedy(const std::string& procfs, pid_t pid) {
  const std::string paranoid = perf::paranoid_setting(procfs);
  const std::string owner = uid_of(procfs, pid);
  std::string text = "pid " + std::to_string(pid) + " runs as uid " + owner +
                     ", the exporter as uid " + std::to_string(::geteuid()) + "; ";
  if (owner != std::to_string(::geteuid())) {
    text += "another user's process needs ptrace access (CAP_SYS_PTRACE, or run as that user) ";
    text += "and ";
  }
  text += "CAP_PERFMON or kernel.perf_event_paranoid <= 2 for user-mode counts (it is " + paranoid +
          "); remedy: run as root, grant CAP_PERFMON (and CAP_SYS_PTRACE), or `sysctl "
          "kernel.perf_event_paranoid=2`";
  return text;
}

// Why counters could not be opened on `pid`, as the target's state and the reason it reports.
std::pair<TargetState, std::string> attach_failure(const std::string& procfs, pid_t pid,
                                                   int error) {
  if (error == EACCES || error == EPERM) {
    return {TargetState::permission_denied, permission_remedy(procfs, pid)};
  }
  if (error == EMFILE || error == ENFILE) {
    return {TargetState::fd_budget,
            "no file descriptor left for pid " + std::to_string(pid) + " (" + errno_text(error) +
                "); raise the open-file limit (ulimit -n, systemd LimitNOFILE=) or narrow the "
                "target"};
  }
  return {TargetState::error,
          "perf_event_open for pid " + std::to_string(pid) + ": " + errno_text(error)};
}

}  // namespace

ProcessCollector::ProcessCollector(ProcessCollectorSettings settings)
    : settings_(std::move(settings)),
      plan_(perf::counting_plan(settings_.events, settings_.groups)),
      slot_series_(settings_.cpus.empty()
                       ? std::vector<events::CounterSeries>{{{}, {0}}}
                       : events::series_at_level(Granularity::cpu, settings_.cpus)) {
  auto layout = std::make_shared<perf::CounterLayout>();
  for (const auto& unit : plan_.units) layout->units.push_back(unit.events);
  for (const HardwareThread& thread : settings_.cpus) {
    layout->cpus.push_back(static_cast<int>(thread.cpu));
  }
  if (layout->cpus.empty()) layout->cpus.push_back(-1);
  layout_ = std::move(layout);
  region::TargetRegionsOptions region_options;
  if (settings_.regions) {
    // Learned once: a candidate segment not on this mount is never opened.
    region_options.shm_mount = region::shared_memory_mount_id(settings_.procfs);
    if (!region_options.shm_mount) {
      const std::string& procfs = settings_.procfs;
      log::warn("process targets: regions: " + procfs + "/self/fdinfo shows no mnt_id for a " +
                "memfd of the exporter's own, so no segment found under " + procfs +
                " can be told from a file named like one: none is opened (those of -- CMD are "
                "read)");
    }
  }
  for (const auto& config : settings_.targets) {
    targets_.push_back(std::make_unique<Target>(config, layout_, *settings_.backend));
    if (!settings_.regions && config.regions_fd < 0) continue;
    if (config.regions_fd >= 0) {
      // The command waits before its exec: the library sees READY from its first instruction.
      std::vector<std::string> left_out;
      publish_region_events(config.regions_fd,
                            region::segment_event_table(settings_.region_events, left_out));
      if (!left_out.empty()) {
        log::warn("process target " + config.name + ": regions count the first " +
                  std::to_string(HWPERF_REGION_MAX_EVENTS) +
                  " events only; left out: " + join(left_out));
      }
    }
    targets_.back()->regions = std::make_unique<region::TargetRegions>(
        config.name, settings_.procfs, settings_.region_events, config.regions_fd, region_options);
  }
  prepare_text();
  rescan();
  rescanner_.emplace("process: rescan",
                     std::chrono::duration<double>(settings_.rescan_interval_seconds),
                     [this] { rescan(); });
}

ProcessCollector::~ProcessCollector() = default;

void ProcessCollector::rescan() {
  std::lock_guard lock(rescan_mutex_);
  Snapshot snapshot;
  snapshot.now_ticks = boot_ticks_now();
  for (auto& stat : read_all_proc_stats(settings_.procfs)) {
    const pid_t pid = stat.identity.pid;
    snapshot.processes.emplace(pid, std::move(stat));
  }
  // A match on exe or cmdline reads each process's at most once per rescan.
  std::map<pid_t, std::string> exes, cmdlines;
  ProcessFacts facts;
  facts.exe = [&](pid_t pid) -> std::string {
    auto [it, added] = exes.try_emplace(pid);
    if (added) it->second = read_exe(settings_.procfs, pid);
    return it->second;
  };
  facts.cmdline = [&](pid_t pid) -> std::string {
    auto [it, added] = cmdlines.try_emplace(pid);
    if (added) it->second = read_cmdline(settings_.procfs, pid);
    return it->second;
  };
  for (auto& target : targets_) rescan_target(*target, snapshot, facts);
}

int ProcessCollector::attach(Target& target, const ProcStat& process, bool from_exec) {
  const std::uint64_t since = boot_ticks_now();
  const auto threads = list_threads(settings_.procfs, process.identity.pid);
  std::vector<perf::CountingTarget> tasks;
  for (const pid_t thread : threads) {
    tasks.push_back(perf::CountingTarget::task(thread, true, from_exec));
  }
  const auto opening = target.counting.open(tasks);
  if (opening.error != 0) return opening.error;
  // The process may have ended between the look at /proc and the open, and its pid gone to
  // another: counters are kept only when the pid still has the start time that was selected.
  const auto now = read_proc_stat(settings_.procfs, process.identity.pid);
  if (!now || !(now->identity == process.identity)) {
    target.counting.discard(opening.member);
    return ESRCH;
  }
  target.roots[process.identity] = opening.member;
  target.plan.attached(process.identity, since);
  // Before its exec the command is still a copy of the exporter, with its name: the name it
  // takes is logged by the rescan that first sees it (publish).
  log::info("process target " + target.plan.config().name + ": counting pid " +
            std::to_string(process.identity.pid) + " (" +
            (from_exec ? std::string("from its exec") : process.comm) + ", " +
            std::to_string(threads.size()) + " threads)");
  return 0;
}

void ProcessCollector::rescan_target(Target& target, const Snapshot& snapshot,
                                     const ProcessFacts& facts) {
  const auto& config = target.plan.config();
  std::optional<PidfileReading> pidfile;
  if (config.selector == ProcessTargetConfig::Selector::pidfile) {
    const auto read = read_pidfile(config.pidfile);
    pidfile = PidfileReading{read.pid, read.error, written_ticks(config.pidfile)};
  }
  auto actions = target.plan.update(snapshot, facts, pidfile);
  for (const auto& identity : actions.detach) {
    if (const auto root = target.roots.find(identity); root != target.roots.end()) {
      target.counting.close(root->second);
      target.roots.erase(root);
    }
    target.plan.detached(identity);
    log::info("process target " + config.name + ": pid " + std::to_string(identity.pid) +
              " and everything it started have ended; its counters are closed");
  }
  TargetState state = actions.no_process.empty() ? TargetState::counting
                      : actions.ended            ? TargetState::ended
                                                 : TargetState::no_process;
  std::string reason = actions.no_process;
  // The command of experiment mode waits before its exec: counting starts at the exec.
  const bool from_exec = config.selector == ProcessTargetConfig::Selector::command;
  for (const auto& process : actions.attach) {
    const int error = attach(target, process, from_exec);
    if (error == 0) actions.counted.push_back(process);
    if (error == 0 || error == ESRCH) continue;  // ESRCH: gone between the look and the open
    std::tie(state, reason) = attach_failure(settings_.procfs, process.identity.pid, error);
  }
  if (state != TargetState::counting && !actions.counted.empty()) {
    // Some processes count; the log says why the others do not.
    log::warn("process target " + config.name + ": " + reason);
    state = TargetState::counting;
  }
  // The command's own segment is the only one its processes write (they inherit it): looking
  // under procfs too would count it twice. Before the scrapes' lock: the programs' descriptors
  // are looked at while scrapes go on.
  if (target.regions && config.regions_fd < 0) {
    std::vector<region::ProcessKey> keys;
    for (const auto& process : actions.counted) {
      keys.emplace_back(process.identity.pid, process.identity.start_ticks);
    }
    target.regions->update(keys);
  }
  publish(target, state, std::move(reason), std::move(actions.counted));
}

void ProcessCollector::publish(Target& target, TargetState state, std::string reason,
                               std::vector<ProcStat> counted) {
  const std::string& name = target.plan.config().name;
  std::size_t threads = 0;
  for (const auto& process : counted) {
    threads += list_threads(settings_.procfs, process.identity.pid).size();
  }
  std::lock_guard lock(target.status_mutex);
  if (state != target.state || reason != target.reason) {
    const std::string text =
        "process target " + name + ": " + to_string(state) + (reason.empty() ? "" : ": " + reason);
    if (state == TargetState::counting || state == TargetState::no_process ||
        state == TargetState::ended) {
      log::info(text);
    } else {
      log::warn(text);
    }
  }
  // A process that executed another program since the last rescan has its name now (a match
  // target may count thousands of processes: looked up, not compared pairwise).
  std::map<ProcessIdentity, const std::string*> names_before;
  for (const auto& before : target.counted) names_before.emplace(before.identity, &before.comm);
  for (const auto& process : counted) {
    const auto before = names_before.find(process.identity);
    if (before != names_before.end() && *before->second != process.comm) {
      log::info("process target " + name + ": pid " + std::to_string(process.identity.pid) +
                " runs " + process.comm);
    }
  }
  target.state = state;
  target.reason = std::move(reason);
  target.counted = std::move(counted);
  target.threads = threads;
}

}  // namespace hwperf::process
