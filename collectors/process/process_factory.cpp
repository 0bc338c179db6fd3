#include "collectors/process/process_factory.h"

#include <cerrno>
#include <map>
#include <set>
#include <stdexcept>

#include "collectors/metrics.h"
#include "collectors/papi/papi_events.h"
#include "collectors/papi/papi_library.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/log.h"
#include "common/sysctl.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::process {
namespace {

std::string where_of(const PapiEventConfig& event) {
  return event.mark.line != 0 ? event.mark.to_string() + ": " : "";
}

bool missing_counter(int error) {
  return error == ENOENT || error == EOPNOTSUPP || error == EINVAL || error == ENODEV;
}

// A PAPI preset as libpfm4 can encode it: the one native event PAPI defines it as on this CPU,
// else the kernel's generic event with exactly its meaning (encode_event's own fallback); a
// preset PAPI derives from several events (a sum or difference) cannot be one counter.
std::string counted_as(const std::string& event, const std::string& procfs) {
  if (!papi::is_preset(event)) return event;
  try {
    papi::init_library(procfs);
    const auto lookup = papi::lookup_event(event);
    if (!lookup.single_native.empty()) return lookup.single_native;
    if (lookup.available && lookup.native_terms > 1 && !papi::generic_equivalent(event)) {
      throw std::invalid_argument(
          event + " is derived here from " + std::to_string(lookup.native_terms) +
          " native events, which one process counter cannot count; list them one by one "
          "(papi_avail -e " +
          event + " names them)");
    }
  } catch (const papi::UnavailableError&) {
    // Without PAPI, only the kernel's generic equivalent is left.
  }
  return event;
}

struct Resolved {
  std::vector<ProcessEvent> events;
  CountingDomain domain;
  std::string domain_note;
};

// Encodes every event and opens it once on this thread: what cannot be counted here is found at
// startup, not on the first scrape. Without CAP_PERFMON and with kernel.perf_event_paranoid = 2,
// the kernel lets a user count user mode only (perf stat does the same): then every event counts
// user mode, and the collector says so.
Resolved resolve_events(const ProcessCollectorConfig& config, const std::string& procfs) {
  const bool defaults = !config.events_given;
  const auto configured = defaults ? default_process_events() : config.events;
  Resolved resolved{{}, config.domain, ""};
  std::vector<std::string> problems;
  std::set<std::string> families;
  for (const auto& event : configured) {
    const std::string where = where_of(event);
    perf::EventEncoding encoding;
    try {
      encoding = perf::encode_event(counted_as(event.event, procfs), resolved.domain);
      encoding.name = event.event;
    } catch (const std::invalid_argument& e) {
      if (defaults) {
        log::warn("process: skipping default event " + event.event + ": " + e.what());
      } else {
        problems.push_back(where + "collectors.process.events: " + e.what());
      }
      continue;
    }
    auto probe = perf::open_counter(encoding, 0, -1);
    if ((probe.error == EACCES || probe.error == EPERM) && !encoding.exclude_kernel &&
        resolved.domain != CountingDomain::kernel) {
      encoding.exclude_kernel = true;
      encoding.exclude_hv = true;
      probe = perf::open_counter(encoding, 0, -1);
      if (probe.ok() && resolved.domain_note.empty()) {
        resolved.domain = CountingDomain::user;
        resolved.domain_note =
            "kernel-mode counts excluded: kernel.perf_event_paranoid is " +
            read_sysctl(procfs, "kernel.perf_event_paranoid") +
            " and the exporter has no CAP_PERFMON, so the kernel allows user mode only";
        log::warn("process: " + resolved.domain_note +
                  "; run as root or grant CAP_PERFMON to count kernel mode too");
        for (auto& earlier : resolved.events) {
          earlier.encoding.exclude_kernel = true;
          earlier.encoding.exclude_hv = true;
        }
      }
    } else if (!resolved.domain_note.empty()) {
      encoding.exclude_kernel = true;
      encoding.exclude_hv = true;
    }
    if (!probe.ok()) {
      const std::string reason =
          event.event + ": perf_event_open: " + errno_text(probe.error) +
          (missing_counter(probe.error)
               ? " (this machine has no such counter: a VM without a hardware PMU counts "
                 "software events only, perf::TASK-CLOCK, perf::PAGE-FAULTS, ...)"
               : "; run as root, grant CAP_PERFMON, or lower kernel.perf_event_paranoid");
      if (defaults) {
        log::warn("process: skipping default event " + reason);
      } else {
        problems.push_back(where + "collectors.process.events: " + reason);
      }
      continue;
    }
    ProcessEvent resolved_event;
    resolved_event.event = event.event;
    resolved_event.where = event.mark.line != 0 ? event.mark.to_string() : "";
    resolved_event.unit = papi::event_unit(event.event);
    const std::string metric =
        event.metric.empty() ? papi::default_metric_base(event.event) : event.metric;
    try {
      resolved_event.family = counter_name({"process", metric});
    } catch (const std::invalid_argument& e) {
      problems.push_back(where + "collectors.process.events: " + e.what());
      continue;
    }
    if (!families.insert(resolved_event.family).second) {
      problems.push_back(where + "collectors.process.events: " + event.event + " would export " +
                         resolved_event.family +
                         ", which an earlier event exports too; give one a `metric:`");
      continue;
    }
    std::string description = event.help;
    if (description.empty()) description = papi::builtin_description(event.event);
    if (description.empty()) description = "Event " + event.event;
    if (description.back() != '.') description += '.';
    resolved_event.help = description + " Counted for each process target (event " + event.event +
                          ", " + to_string(resolved.domain) +
                          " mode), every thread and what it starts, scaled where multiplexed." +
                          (resolved_event.unit == papi::Unit::nanoseconds
                               ? " Seconds, converted from the event's nanoseconds."
                               : "");
    resolved_event.encoding = encoding;
    resolved.events.push_back(std::move(resolved_event));
  }
  if (!problems.empty()) throw ConfigError(problems);
  if (resolved.events.empty()) {
    throw std::runtime_error(
        "process: none of the default events can be counted here (see the warnings above); "
        "list events this machine has under collectors.process.events");
  }
  return resolved;
}

void check_pidfiles(const ProcessCollectorConfig& config) {
  std::vector<std::string> problems;
  for (const auto& target : config.targets) {
    if (target.selector != ProcessTargetConfig::Selector::pidfile) continue;
    const auto read = read_pidfile(target.pidfile);
    if (read.error == 0) continue;
    problems.push_back(target.mark.to_string() + ": collectors.process.targets: " + target.name +
                       ": pidfile " + target.pidfile + ": " +
                       (read.error == EINVAL ? std::string("does not hold one process id")
                                             : errno_text(read.error)) +
                       "; start the service first, or fix the path (the exporter reads it "
                       "again whenever its process is gone)");
  }
  if (!problems.empty()) throw ConfigError(problems);
}

}  // namespace

std::vector<PapiEventConfig> default_process_events() {
  // What a researcher asks of a program first: instructions and cycles (hence IPC), cache and
  // branch misses, and the scheduler's view, which also counts in VMs without a hardware PMU.
  const char* names[] = {"perf::TASK-CLOCK",     "perf::PAGE-FAULTS",  "perf::CONTEXT-SWITCHES",
                         "perf::CPU-MIGRATIONS", "perf::INSTRUCTIONS", "perf::CYCLES",
                         "perf::CACHE-MISSES",   "perf::BRANCH-MISSES"};
  std::vector<PapiEventConfig> events;
  for (const char* name : names) {
    PapiEventConfig event;
    event.event = name;
    events.push_back(std::move(event));
  }
  return events;
}

std::unique_ptr<ProcessCollector> make_process_collector(const Config& config,
                                                         const Topology& topology) {
  const auto& process = config.collectors.process;
  try {
    perf::initialize_pfm();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("process: ") + e.what());
  }
  check_pidfiles(process);
  Resolved resolved = resolve_events(process, config.paths.procfs);
  ProcessCollectorSettings settings;
  settings.procfs = config.paths.procfs;
  settings.targets = process.targets;
  settings.events = std::move(resolved.events);
  settings.rescan_interval_seconds = process.rescan_interval_seconds;
  settings.domain = resolved.domain;
  settings.domain_note = resolved.domain_note;
  if (process.per_cpu) {
    settings.cpus = topology.threads();
  }
  return std::make_unique<ProcessCollector>(std::move(settings));
}

FileNeed process_file_need(const Config& config, const Topology& topology) {
  const auto& process = config.collectors.process;
  const std::size_t events =
      process.events_given ? process.events.size() : default_process_events().size();
  const std::size_t slots = process.per_cpu ? topology.threads().size() : 1;
  Snapshot snapshot;
  for (auto& stat : read_all_proc_stats(config.paths.procfs)) {
    const pid_t pid = stat.identity.pid;
    snapshot.processes.emplace(pid, std::move(stat));
  }
  ProcessFacts facts;
  facts.exe = [&](pid_t pid) { return read_exe(config.paths.procfs, pid); };
  facts.cmdline = [&](pid_t pid) { return read_cmdline(config.paths.procfs, pid); };
  std::size_t threads = 0;
  std::string chosen_at;
  for (const auto& target : process.targets) {
    if (target.mark.line != 0) {
      chosen_at += (chosen_at.empty() ? "" : ", ") + target.mark.to_string() +
                   ": collectors.process.targets: " + target.name;
    }
    TargetPlan plan(target);
    std::optional<PidfileReading> pidfile;
    if (target.selector == ProcessTargetConfig::Selector::pidfile) {
      const auto read = read_pidfile(target.pidfile);
      pidfile = PidfileReading{read.pid, read.error, std::nullopt};
    }
    for (const auto& selected : plan.update(snapshot, facts, pidfile).attach) {
      threads += list_threads(config.paths.procfs, selected.identity.pid).size();
    }
  }
  const std::size_t count = threads * events * slots;
  return {"process targets: " + std::to_string(threads) + " threads x " + std::to_string(events) +
              " events x " + std::to_string(slots) + (slots == 1 ? " CPU slot" : " CPUs"),
          static_cast<unsigned long>(count), chosen_at.empty() ? "collectors.process" : chosen_at};
}

std::vector<std::string> process_check_report(const Config& config, const Topology&) {
  std::vector<std::string> lines;
  for (const auto& target : config.collectors.process.targets) {
    std::string selector;
    switch (target.selector) {
      case ProcessTargetConfig::Selector::pid:
      case ProcessTargetConfig::Selector::command:
        selector = "pid " + std::to_string(target.pid);
        break;
      case ProcessTargetConfig::Selector::pidfile: selector = "pidfile " + target.pidfile; break;
      case ProcessTargetConfig::Selector::match:
        selector = "match";
        if (!target.comm.empty()) selector += " comm=/" + target.comm + "/";
        if (!target.exe.empty()) selector += " exe=/" + target.exe + "/";
        if (!target.cmdline.empty()) selector += " cmdline=/" + target.cmdline + "/";
        break;
    }
    lines.push_back("target " + target.name + ": " + selector);
  }
  return lines;
}

}  // namespace hwperf::process
