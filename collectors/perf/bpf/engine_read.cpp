// Reading the engine: the program run on every CPU, the two count maps read in batches, the
// per-CPU state's failures, removed cgroups' entries reclaimed; and the tracked set.
#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "collectors/perf/bpf/cgroup_engine.h"
#include "collectors/perf/bpf/engine_state.h"
#include "common/text.h"

namespace hwperf::perf::bpf {
namespace {

// Every entry of a count map, kBatchEntries per system call.
void read_entries(EngineState& state, const bpf_map* map, std::vector<CgroupCounts>& out) {
  const int fd = bpf_map__fd(map);
  std::uint64_t token = 0;  // a hash map's batch position (a bucket number)
  bool first = true;
  while (true) {
    auto count = static_cast<__u32>(kBatchEntries);
    std::uint64_t next = 0;
    bpf_map_batch_opts options{};
    options.sz = sizeof options;
    const int result = bpf_map_lookup_batch(fd, first ? nullptr : &token, &next, state.keys.data(),
                                            state.values.data(), &count, &options);
    // ENOENT: the map's end, with the last entries in the buffers.
    if (result != 0 && result != -ENOENT) {
      throw std::runtime_error(std::string("bpf: cannot read the map ") + bpf_map__name(map) +
                               ": " + errno_text(-result));
    }
    decode_counts(state.keys.data(), state.values.data(), count, state.shape, out);
    if (result == -ENOENT) return;
    token = next;
    first = false;
  }
}

// The failures each counted CPU's state has recorded, and the totals.
void read_cpu_states(EngineState& state, EngineReading& out) {
  const __u32 zero = 0;
  const int result = bpf_map_lookup_elem(bpf_map__fd(state.skeleton->maps.cpu_state), &zero,
                                         state.cpu_states.data());
  if (result != 0)
    throw std::runtime_error("bpf: cannot read the per-CPU state: " + errno_text(-result));
  const std::size_t stride = state.cpu_states.size() / state.cpu_slots;
  for (std::size_t slot = 0; slot < state.cpu_slots; ++slot) {
    hwperf_bpf_cpu_state cpu{};
    std::memcpy(&cpu, state.cpu_states.data() + slot * stride, sizeof cpu);
    out.not_counted += cpu.not_counted;
    out.runs += cpu.runs;
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

void set_tracked_count(EngineState& state) {
  state.skeleton->bss->tracked_cgroups = static_cast<__u32>(state.tracked.size());
}

// Deletes the entries of cgroups removed before the previous read (RemovalGrace).
void reclaim(EngineState& state, const EngineReading& reading) {
  const int own = bpf_map__fd(state.skeleton->maps.own_counts);
  for (const std::uint64_t id : state.own_grace.due(removed_ids(reading.own))) {
    bpf_map_delete_elem(own, &id);
  }
  const int subtree = bpf_map__fd(state.skeleton->maps.subtree_counts);
  for (const std::uint64_t id : state.subtree_grace.due(removed_ids(reading.subtree))) {
    bpf_map_delete_elem(subtree, &id);
    state.tracked.erase(id);
  }
  set_tracked_count(state);
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
  read_entries(state, state.skeleton->maps.own_counts, reading.own);
  read_entries(state, state.skeleton->maps.subtree_counts, reading.subtree);
  read_cpu_states(state, reading);
  reclaim(state, reading);
  return reading;
}

int CgroupEngine::track(std::uint64_t cgroup_id) {
  EngineState& state = *state_;
  const std::lock_guard<std::mutex> lock(state.mutex);
  if (state.tracked.count(cgroup_id) != 0) return 0;
  // All zeros on every CPU; BPF_NOEXIST keeps what an entry already holds.
  std::vector<unsigned char> zeros(state.shape.entry_bytes());
  const int result = bpf_map_update_elem(bpf_map__fd(state.skeleton->maps.subtree_counts),
                                         &cgroup_id, zeros.data(), BPF_NOEXIST);
  if (result != 0 && result != -EEXIST) return -result;
  state.tracked.insert(cgroup_id);
  set_tracked_count(state);
  return 0;
}

void CgroupEngine::forget(std::uint64_t cgroup_id) {
  EngineState& state = *state_;
  const std::lock_guard<std::mutex> lock(state.mutex);
  bpf_map_delete_elem(bpf_map__fd(state.skeleton->maps.subtree_counts), &cgroup_id);
  state.tracked.erase(cgroup_id);
  set_tracked_count(state);
}

GroupReading group_reading(const CgroupEngine& engine, const CgroupCounts& counts,
                           std::size_t group, std::size_t cpu_index) {
  return group_reading(counts, engine.first_event_of(group), engine.group_size(group),
                       engine.cpus().size(), cpu_index);
}

}  // namespace hwperf::perf::bpf
