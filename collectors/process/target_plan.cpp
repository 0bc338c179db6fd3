#include "collectors/process/target_plan.h"

#include <cstring>

namespace hwperf::process {
namespace {

// Deeper than any real process tree; a bound so that a corrupt snapshot cannot loop.
constexpr int kMaxAncestors = 512;

std::optional<std::regex> compile(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return std::regex(text, std::regex::ECMAScript | std::regex::optimize);
}

bool alive(const ProcStat* process) { return process != nullptr && process->state != 'Z'; }

}  // namespace

const ProcStat* Snapshot::find(const ProcessIdentity& identity) const {
  const auto it = processes.find(identity.pid);
  if (it == processes.end() || !(it->second.identity == identity)) return nullptr;
  return &it->second;
}

TargetPlan::TargetPlan(const ProcessTargetConfig& config)
    : config_(config),
      comm_(compile(config.comm)),
      exe_(compile(config.exe)),
      cmdline_(compile(config.cmdline)) {}

void TargetPlan::attached(const ProcessIdentity& identity, std::uint64_t since_ticks) {
  roots_[identity].since_ticks = since_ticks;
}

void TargetPlan::adopt(const ProcessIdentity& identity, std::uint64_t since_ticks) {
  attached(identity, since_ticks);
  bound_pid_ = identity;
}

void TargetPlan::detached(const ProcessIdentity& identity) { roots_.erase(identity); }

const ProcessIdentity* TargetPlan::counted_by(const Snapshot& snapshot, const ProcStat& process,
                                              std::map<pid_t, const ProcessIdentity*>& memo) {
  // Walk up to the nearest process whose answer is known, then answer down the chain: a process
  // is counted when its parent is and it was created after its parent was counted.
  std::vector<const ProcStat*> chain;
  const ProcStat* current = &process;
  const ProcessIdentity* answer = nullptr;
  for (int depth = 0; current != nullptr && depth < kMaxAncestors; ++depth) {
    if (const auto known = memo.find(current->identity.pid); known != memo.end()) {
      answer = known->second;
      break;
    }
    if (const auto root = roots_.find(current->identity); root != roots_.end()) {
      answer = &root->first;
      memo[current->identity.pid] = answer;
      break;
    }
    bool remembered = false;
    for (const auto& [identity, root] : roots_) {
      if (root.descendants.count(current->identity) != 0) {
        answer = &identity;
        memo[current->identity.pid] = answer;
        remembered = true;
        break;
      }
    }
    if (remembered) break;
    chain.push_back(current);
    const auto parent = snapshot.processes.find(current->ppid);
    current = parent == snapshot.processes.end() || current->ppid == current->identity.pid
                  ? nullptr
                  : &parent->second;
  }
  // chain.back()'s parent is `current` (known), or there is none.
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const ProcStat* child = *it;
    if (answer != nullptr) {
      const auto parent = snapshot.processes.find(child->ppid);
      const bool parent_is_root =
          parent != snapshot.processes.end() && parent->second.identity == *answer;
      const std::uint64_t counted_since = parent_is_root ? roots_.at(*answer).since_ticks
                                          : parent != snapshot.processes.end()
                                              ? parent->second.identity.start_ticks
                                              : 0;
      // Created in the tick the root was attached: counted by inherit rather than twice.
      if (child->identity.start_ticks < counted_since) answer = nullptr;
    }
    memo[child->identity.pid] = answer;
  }
  return answer;
}

std::vector<ProcessIdentity> TargetPlan::select(const Snapshot& snapshot, const ProcessFacts& facts,
                                                const std::optional<PidfileReading>& pidfile,
                                                std::string& why_none) {
  std::vector<ProcessIdentity> selected;
  switch (config_.selector) {
    case ProcessTargetConfig::Selector::pid:
    case ProcessTargetConfig::Selector::command: {
      const auto it = snapshot.processes.find(static_cast<pid_t>(config_.pid));
      if (!bound_pid_ && it != snapshot.processes.end() && alive(&it->second)) {
        bound_pid_ = it->second.identity;
      }
      if (bound_pid_ && alive(snapshot.find(*bound_pid_))) {
        selected.push_back(*bound_pid_);
      } else {
        why_none = bound_pid_ ? "process " + std::to_string(config_.pid) + " exited"
                              : "no process " + std::to_string(config_.pid);
      }
      break;
    }
    case ProcessTargetConfig::Selector::pidfile: {
      if (!pidfile || pidfile->error != 0) {
        why_none = config_.pidfile + ": " +
                   (pidfile ? std::string(std::strerror(pidfile->error)) : "not read");
        break;
      }
      const auto it = snapshot.processes.find(pidfile->pid);
      if (it == snapshot.processes.end() || !alive(&it->second)) {
        why_none =
            "pid " + std::to_string(pidfile->pid) + " from " + config_.pidfile + " is not running";
        break;
      }
      // A service writes its pidfile after it starts; a process that started after the file
      // was last written is another one that was handed the same pid.
      if (pidfile->written_ticks && it->second.identity.start_ticks > *pidfile->written_ticks + 1) {
        why_none = "pid " + std::to_string(pidfile->pid) + " from " + config_.pidfile +
                   " belongs to a process started after the file was written (the pid was "
                   "reused); not counted";
        break;
      }
      selected.push_back(it->second.identity);
      break;
    }
    case ProcessTargetConfig::Selector::match: {
      for (const auto& [pid, process] : snapshot.processes) {
        if (!alive(&process)) continue;
        if (comm_ && !std::regex_search(process.comm, *comm_)) continue;
        if (exe_ && !std::regex_search(facts.exe(pid), *exe_)) continue;
        if (cmdline_ && !std::regex_search(facts.cmdline(pid), *cmdline_)) continue;
        selected.push_back(process.identity);
      }
      if (selected.empty()) why_none = "no process matches";
      break;
    }
  }
  return selected;
}

TargetPlan::Actions TargetPlan::update(const Snapshot& snapshot, const ProcessFacts& facts,
                                       const std::optional<PidfileReading>& pidfile) {
  Actions actions;
  std::map<pid_t, const ProcessIdentity*> memo;
  for (auto& [identity, root] : roots_) {
    for (auto it = root.descendants.begin(); it != root.descendants.end();) {
      it = alive(snapshot.find(*it)) ? std::next(it) : root.descendants.erase(it);
    }
  }
  for (const auto& [pid, process] : snapshot.processes) {
    if (!alive(&process)) continue;
    const ProcessIdentity* root = counted_by(snapshot, process, memo);
    if (root == nullptr) continue;
    if (!(*root == process.identity)) roots_.at(*root).descendants.insert(process.identity);
    actions.counted.push_back(process);
  }
  bool any_alive = false;
  for (const auto& [identity, root] : roots_) {
    const bool root_alive = alive(snapshot.find(identity));
    any_alive = any_alive || root_alive || !root.descendants.empty();
    if (!root_alive && root.descendants.empty()) actions.detach.push_back(identity);
  }
  std::string why_none;
  for (const auto& identity : select(snapshot, facts, pidfile, why_none)) {
    if (roots_.count(identity) != 0) continue;
    const ProcStat* process = snapshot.find(identity);
    if (process == nullptr || counted_by(snapshot, *process, memo) != nullptr) continue;
    actions.attach.push_back(*process);
  }
  if (!any_alive && actions.attach.empty()) {
    actions.no_process = why_none;
    actions.ended =
        bound_pid_.has_value() && (config_.selector == ProcessTargetConfig::Selector::pid ||
                                   config_.selector == ProcessTargetConfig::Selector::command);
  }
  return actions;
}

}  // namespace hwperf::process
