// Reading the engine: the program run on every CPU, the own counts read in batches with the
// ancestry of new entries, the tracked cgroups' sums, the per-CPU state's failures, removed
// cgroups' entries reclaimed; and the tracked set.
#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "collectors/perf/bpf/cgroup_engine.h"
#include "collectors/perf/bpf/engine_state.h"
#include "common/text.h"

namespace hwperf::perf::bpf {
namespace {

// Why a map could not be read, and what to do where the kernel refuses the call.
std::string read_error(const std::string& what, int error) {
  std::string text = "bpf: cannot read " + what + ": " + errno_text(error);
  // Before Linux 5.19 ("bpf: refine kernel.unprivileged_bpf_disabled behaviour"), that sysctl
  // refused every bpf() call, map reads on descriptors already held included, to a process
  // without CAP_BPF: the exporter after --runtime.user.
  if (error == EPERM) {
    text +=
        " (a kernel before 5.19 refuses it without CAP_BPF while "
        "kernel.unprivileged_bpf_disabled is set: run without --runtime.user, set the "
        "sysctl to 0, or use collectors.cgroup.mode: perf)";
  }
  return text;
}

// Every entry of a hash map, kBatchEntries per system call into `keys` and `values`; `take` gets
// the number of entries each call returned.
void read_batches(const bpf_map* map, void* keys, void* values,
                  const std::function<void(std::size_t)>& take) {
  const int fd = bpf_map__fd(map);
  std::uint64_t token = 0;  // a hash map's batch position (a bucket number)
  bool first = true;
  while (true) {
    auto count = static_cast<__u32>(kBatchEntries);
    std::uint64_t next = 0;
    bpf_map_batch_opts options{};
    options.sz = sizeof options;
    const int result =
        bpf_map_lookup_batch(fd, first ? nullptr : &token, &next, keys, values, &count, &options);
    // ENOENT: the map's end, with the last entries in the buffers.
    if (result != 0 && result != -ENOENT) {
      throw std::runtime_error(read_error(std::string("the map ") + bpf_map__name(map), -result));
    }
    take(count);
    if (result == -ENOENT) return;
    token = next;
    first = false;
  }
}

// The ancestry of each entry not seen before (the program records it when it makes the entry).
void learn_lineages(EngineState& state, const std::vector<CgroupCounts>& own) {
  const int fd = bpf_map__fd(state.skeleton->maps.lineage);
  for (const auto& entry : own) {
    if (state.lineages.count(entry.id) != 0) continue;
    hwperf_bpf_lineage lineage{};
    if (bpf_map_lookup_elem(fd, &entry.id, &lineage) != 0) continue;  // not written yet
    const std::size_t levels = std::min<std::size_t>(lineage.levels, HWPERF_BPF_MAX_LEVELS);
    state.lineages.emplace(entry.id,
                           std::vector<std::uint64_t>(lineage.ancestor, lineage.ancestor + levels));
  }
}

// The tracked cgroups' sums, each flagged when the rmdir program flagged it.
std::vector<CgroupCounts> subtree_sums(EngineState& state, const std::vector<CgroupCounts>& own) {
  std::vector<CgroupCounts> sums = state.subtrees.sums(own, state.lineages);
  std::unordered_map<std::uint64_t, bool> removed;
  read_batches(state.skeleton->maps.tracked, state.keys.data(), state.flags.data(),
               [&state, &removed](std::size_t count) {
                 for (std::size_t i = 0; i < count; ++i) {
                   removed[state.keys[i]] = (state.flags[i] & HWPERF_BPF_REMOVED) != 0;
                 }
               });
  for (auto& sum : sums) sum.removed = removed[sum.id];
  std::sort(sums.begin(), sums.end(),
            [](const CgroupCounts& a, const CgroupCounts& b) { return a.id < b.id; });
  return sums;
}

// The failures each counted CPU's state has recorded, and the totals.
void read_cpu_states(EngineState& state, EngineReading& out) {
  const __u32 zero = 0;
  const int result = bpf_map_lookup_elem(bpf_map__fd(state.skeleton->maps.cpu_state), &zero,
                                         state.cpu_states.data());
  if (result != 0) {
    throw std::runtime_error(read_error("the per-CPU state", -result));
  }
  const std::size_t stride = state.cpu_states.size() / state.cpu_slots;
  const std::size_t cpus = state.options.cpus.size();
  out.unattributed.assign(state.events * cpus, Reading{});
  for (std::size_t slot = 0; slot < state.cpu_slots; ++slot) {
    hwperf_bpf_cpu_state cpu{};
    std::memcpy(&cpu, state.cpu_states.data() + slot * stride, sizeof cpu);
    out.not_counted += cpu.not_counted;
    out.runs += cpu.runs;
    out.missed_switches += cpu.missed_switches;
    for (std::size_t c = 0; c < cpus; ++c) {
      if (state.options.cpus[c] != slot) continue;
      for (std::size_t event = 0; event < state.events; ++event) {
        const hwperf_bpf_reading& sum = cpu.unattributed[event];
        out.unattributed[event * cpus + c] = {sum.counter, sum.enabled, sum.running};
      }
    }
    for (std::size_t event = 0; event < state.events; ++event) {
      if (cpu.read_failures[event] == 0) continue;
      out.failures.push_back({static_cast<unsigned>(slot), event,
                              static_cast<int>(-cpu.last_error[event]), cpu.read_failures[event]});
    }
  }
}

std::vector<std::uint64_t> removed_ids(const std::vector<CgroupCounts>& entries) {
  std::vector<std::uint64_t> ids;
  for (const auto& entry : entries) {
    if (entry.removed) ids.push_back(entry.id);
  }
  return ids;
}

// Deletes the entries of cgroups removed before the previous read (RemovalGrace); an own entry's
// counts stay in its tracked ancestors' sums.
void reclaim(EngineState& state, const EngineReading& reading) {
  const int own = bpf_map__fd(state.skeleton->maps.own_counts);
  const int lineage = bpf_map__fd(state.skeleton->maps.lineage);
  const auto due = state.own_grace.due(removed_ids(reading.own));
  std::unordered_map<std::uint64_t, const CgroupCounts*> entries;
  for (const auto& entry : reading.own) {
    if (entry.removed) entries.emplace(entry.id, &entry);
  }
  for (const std::uint64_t id : due) {
    state.subtrees.retire(*entries.at(id), state.lineages);
    bpf_map_delete_elem(own, &id);
    bpf_map_delete_elem(lineage, &id);
    state.lineages.erase(id);
  }
  const int tracked = bpf_map__fd(state.skeleton->maps.tracked);
  for (const std::uint64_t id : state.tracked_grace.due(removed_ids(reading.subtree))) {
    bpf_map_delete_elem(tracked, &id);
    state.subtrees.forget(id);
  }
}

}  // namespace

EngineReading CgroupEngine::read() {
  EngineState& state = *state_;
  const std::lock_guard<std::mutex> lock(state.mutex);
  EngineReading reading;
  for (const unsigned cpu : state.options.cpus) {
    if (const int error = trigger_on_cpu(state, cpu); error != 0) {
      reading.failures.push_back({cpu, ReadFailure::kTrigger, error, 1});
    }
  }
  read_batches(state.skeleton->maps.own_counts, state.keys.data(), state.values.data(),
               [&state, &reading](std::size_t count) {
                 decode_counts(state.keys.data(), state.values.data(), count, state.shape,
                               reading.own);
               });
  learn_lineages(state, reading.own);
  for (const auto& entry : reading.own) {
    const auto lineage = state.lineages.find(entry.id);
    if (entry.removed && lineage != state.lineages.end()) reading.lineages.insert(*lineage);
  }
  reading.subtree = subtree_sums(state, reading.own);
  read_cpu_states(state, reading);
  reclaim(state, reading);
  return reading;
}

int CgroupEngine::track(std::uint64_t cgroup_id) {
  EngineState& state = *state_;
  const std::lock_guard<std::mutex> lock(state.mutex);
  if (state.subtrees.tracks(cgroup_id)) return 0;
  const std::uint64_t flags = 0;
  const int result = bpf_map_update_elem(bpf_map__fd(state.skeleton->maps.tracked), &cgroup_id,
                                         &flags, BPF_NOEXIST);
  if (result != 0 && result != -EEXIST) return -result;
  state.subtrees.track(cgroup_id);
  return 0;
}

void CgroupEngine::forget(std::uint64_t cgroup_id) {
  EngineState& state = *state_;
  const std::lock_guard<std::mutex> lock(state.mutex);
  bpf_map_delete_elem(bpf_map__fd(state.skeleton->maps.tracked), &cgroup_id);
  state.subtrees.forget(cgroup_id);
}

GroupReading group_reading(const CgroupEngine& engine, const CgroupCounts& counts,
                           std::size_t group, std::size_t cpu_index) {
  return group_reading(counts, engine.first_event_of(group), engine.group_size(group),
                       engine.cpus().size(), cpu_index);
}

}  // namespace hwperf::perf::bpf
