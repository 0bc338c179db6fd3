// Starting the engine: the options checked, the program loaded with its maps sized, every counter
// opened and handed to it, the program attached to each CPU's cgroup-switches event.
#include "collectors/perf/bpf/cgroup_engine.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

#include "collectors/perf/bpf/bpf_support.h"
#include "collectors/perf/bpf/engine_state.h"
#include "common/log.h"
#include "common/text.h"

namespace hwperf::perf::bpf {
namespace {

static_assert(kMaxEvents == HWPERF_BPF_MAX_EVENTS, "one number, two languages");

// libbpf's warnings go to the log, or into the error being built while the engine loads.
thread_local std::string* libbpf_capture = nullptr;

int libbpf_message(libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[1024];
  std::vsnprintf(line, sizeof line, format, args);
  if (libbpf_capture != nullptr) {
    libbpf_capture->append(line);
  } else {
    log::debug(std::string("libbpf: ") + std::string(trim(line)));
  }
  return 0;
}

// What libbpf says on this thread while it lives.
struct LibbpfCapture {
  LibbpfCapture() { libbpf_capture = &said; }
  ~LibbpfCapture() { libbpf_capture = nullptr; }
  LibbpfCapture(const LibbpfCapture&) = delete;
  LibbpfCapture& operator=(const LibbpfCapture&) = delete;
  std::string said;
};

void check_options(const EngineOptions& options, std::size_t cpu_slots) {
  std::size_t events = 0;
  for (const auto& group : options.groups) {
    if (group.empty()) throw std::invalid_argument("bpf: an event group is empty");
    events += group.size();
  }
  if (events == 0 || events > kMaxEvents) {
    throw std::invalid_argument("bpf: " + std::to_string(events) +
                                " events; the engine counts 1 to " + std::to_string(kMaxEvents) +
                                " per CPU");
  }
  if (options.cpus.empty()) throw std::invalid_argument("bpf: no CPU to count on");
  const std::set<unsigned> unique(options.cpus.begin(), options.cpus.end());
  if (unique.size() != options.cpus.size())
    throw std::invalid_argument("bpf: a CPU is listed twice");
  if (*unique.rbegin() >= cpu_slots) {
    throw std::invalid_argument("bpf: CPU " + std::to_string(*unique.rbegin()) +
                                " is not a possible CPU (" + std::to_string(cpu_slots) + ")");
  }
  if (options.switch_period == 0)
    throw std::invalid_argument("bpf: switch_period must be at least 1");
  if (options.max_cgroups == 0 || options.max_tracked == 0) {
    throw std::invalid_argument("bpf: max_cgroups and max_tracked must be at least 1");
  }
}

std::unique_ptr<EngineState> plan_engine(const EngineOptions& options) {
  const int possible = libbpf_num_possible_cpus();
  if (possible <= 0)
    throw std::runtime_error("bpf: cannot read the possible CPUs: " + errno_text(-possible));
  check_options(options, static_cast<std::size_t>(possible));
  const auto missing =
      missing_for_bpf(probe_bpf_facts(options.sysfs, options.perf_event_on_cgroup_v2));
  if (!missing.empty()) throw std::runtime_error(bpf_unavailable_message(missing));
  auto state = std::make_unique<EngineState>();
  state->options = options;
  state->cpu_slots = static_cast<std::size_t>(possible);
  for (const auto& group : options.groups) {
    state->group_first.push_back(state->events);
    state->events += group.size();
  }
  state->shape = ValueShape{state->events, state->cpu_slots, options.cpus};
  state->subtrees = SubtreeTotals(state->events * options.cpus.size());
  state->keys.resize(kBatchEntries);
  state->flags.resize(kBatchEntries);
  state->values.resize(kBatchEntries * state->shape.entry_bytes());
  state->cpu_states.resize(state->cpu_slots * ((sizeof(hwperf_bpf_cpu_state) + 7) / 8 * 8));
  return state;
}

// Opens the skeleton, sizes its maps and loads it; the error names what libbpf said.
void load_program(EngineState& state) {
  static std::once_flag printer;
  std::call_once(printer, [] { libbpf_set_print(libbpf_message); });
  LibbpfCapture capture;
  const auto failed = [&capture](const std::string& step, int error) {
    std::string said = capture.said;
    if (said.size() > 2000) said = "..." + said.substr(said.size() - 2000);
    std::string text = "bpf: cannot " + step + " the cgroup counting program: " + errno_text(error);
    if (error == EPERM || error == EACCES)
      text += " (needs CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN)";
    return std::runtime_error(text +
                              (said.empty() ? "" : "; libbpf said: " + std::string(trim(said))));
  };
  state.skeleton.reset(hwperf_cgroup_bpf__open());
  if (!state.skeleton) throw failed("open", errno);
  auto& skeleton = *state.skeleton;
  skeleton.rodata->event_count = static_cast<__u32>(state.events);
  skeleton.rodata->cpu_slots = static_cast<__u32>(state.cpu_slots);
  skeleton.rodata->switch_period = state.options.switch_period;
  const auto value_size = static_cast<__u32>(state.shape.value_size());
  const auto max_cgroups = static_cast<__u32>(state.options.max_cgroups);
  int error = bpf_map__set_max_entries(skeleton.maps.counters,
                                       static_cast<__u32>(state.events * state.cpu_slots));
  if (error == 0) error = bpf_map__set_max_entries(skeleton.maps.own_counts, max_cgroups);
  if (error == 0) error = bpf_map__set_value_size(skeleton.maps.own_counts, value_size);
  if (error == 0) error = bpf_map__set_max_entries(skeleton.maps.lineage, max_cgroups);
  if (error == 0) {
    error =
        bpf_map__set_max_entries(skeleton.maps.switch_events, static_cast<__u32>(state.cpu_slots));
  }
  if (error == 0) {
    error = bpf_map__set_max_entries(skeleton.maps.tracked,
                                     static_cast<__u32>(state.options.max_tracked));
  }
  if (error != 0) throw failed("size the maps of", -error);
  error = hwperf_cgroup_bpf__load(&skeleton);
  if (error != 0) throw failed("load", -error);
}

std::string event_name(const EngineOptions& options, std::size_t group, std::size_t member) {
  const auto& name = options.groups[group][member].name;
  return name.empty() ? "event " + std::to_string(member) + " of group " + std::to_string(group)
                      : name;
}

// Every group on `cpu`, without a cgroup, each descriptor put where the program reads it (in
// place of what was there: the map lets go of a replaced counter).
std::vector<CounterGroup> open_cpu_counters(EngineState& state, unsigned cpu) {
  const int map = bpf_map__fd(state.skeleton->maps.counters);
  std::vector<CounterGroup> groups;
  for (std::size_t g = 0; g < state.options.groups.size(); ++g) {
    auto opened = CounterGroup::open(state.options.groups[g], -1, static_cast<int>(cpu));
    if (!opened.ok()) {
      std::string text = "bpf: cannot count " +
                         event_name(state.options, g, opened.value.failed_event()) + " on CPU " +
                         std::to_string(cpu) + ": " + errno_text(opened.error);
      if (opened.error == EACCES || opened.error == EPERM) {
        text += "; " + system_wide_permission_remedy(paranoid_setting(state.options.procfs));
      }
      throw std::runtime_error(text);
    }
    for (std::size_t m = 0; m < opened.value.size(); ++m) {
      const auto key = static_cast<__u32>((state.group_first[g] + m) * state.cpu_slots + cpu);
      const int fd = opened.value.descriptor(m);
      if (const int error = bpf_map_update_elem(map, &key, &fd, BPF_ANY); error != 0) {
        throw std::runtime_error("bpf: cannot hand " + event_name(state.options, g, m) +
                                 " on CPU " + std::to_string(cpu) +
                                 " to the program: " + errno_text(-error));
      }
    }
    groups.push_back(std::move(opened.value));
  }
  return groups;
}

void open_engine_counters(EngineState& state) {
  for (const unsigned cpu : state.options.cpus) {
    for (auto& group : open_cpu_counters(state, cpu)) state.counters.push_back(std::move(group));
  }
}

// `cpu`'s cgroup-switches event, counting, where the program finds it (to tell whether it ran at
// every switch), in place of what was there.
UniqueFd open_switch_counter(EngineState& state, unsigned cpu) {
  auto opened = open_switch_event(cpu, -1);
  if (!opened.ok()) {
    std::string text = "bpf: cannot count the cgroup switches of CPU " + std::to_string(cpu) +
                       ": " + errno_text(opened.error);
    if (opened.error == EINVAL || opened.error == ENOENT) {
      text += " (PERF_COUNT_SW_CGROUP_SWITCHES needs Linux 5.13)";
    }
    throw std::runtime_error(text);
  }
  const auto key = static_cast<__u32>(cpu);
  const int fd = opened.value.get();
  const int switch_map = bpf_map__fd(state.skeleton->maps.switch_events);
  if (const int error = bpf_map_update_elem(switch_map, &key, &fd, BPF_ANY); error != 0) {
    throw std::runtime_error("bpf: cannot hand the cgroup-switches event of CPU " +
                             std::to_string(cpu) + " to the program: " + errno_text(-error));
  }
  return std::move(opened.value);
}

void open_switch_counters(EngineState& state) {
  for (const unsigned cpu : state.options.cpus) {
    state.switch_events.push_back(open_switch_counter(state, cpu));
  }
}

// A tp_btf program on its tracepoint.
Link attach_to(bpf_program* program, const char* tracepoint) {
  Link link(bpf_program__attach(program));
  if (!link) {
    throw std::runtime_error(std::string("bpf: cannot attach to the ") + tracepoint +
                             " tracepoint: " + errno_text(errno) +
                             " (tp_btf programs need the kernel's BTF and Linux 5.5)");
  }
  return link;
}

}  // namespace

int trigger_on_cpu(const EngineState& state, unsigned cpu, std::uint64_t argument) {
  // The program's raw_tp context: one argument.
  bpf_test_run_opts run{};
  run.sz = sizeof run;
  run.ctx_in = &argument;
  run.ctx_size_in = sizeof argument;
  run.flags = BPF_F_TEST_RUN_ON_CPU;
  run.cpu = cpu;
  const int error =
      bpf_prog_test_run_opts(bpf_program__fd(state.skeleton->progs.trigger_read), &run);
  return error < 0 ? -error : 0;
}

OrErrno<UniqueFd> open_switch_event(unsigned cpu, int program, std::uint64_t period) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CGROUP_SWITCHES;
  attr.sample_period = program < 0 ? 0 : period;
  attr.disabled = 1;
  UniqueFd fd(static_cast<int>(
      ::syscall(SYS_perf_event_open, &attr, -1, static_cast<int>(cpu), -1, PERF_FLAG_FD_CLOEXEC)));
  if (!fd.valid()) return {UniqueFd{}, errno};
  if ((program >= 0 && ::ioctl(fd.get(), PERF_EVENT_IOC_SET_BPF, program) != 0) ||
      ::ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
    return {UniqueFd{}, errno};
  }
  return {std::move(fd), 0};
}

CgroupEngine CgroupEngine::open(const EngineOptions& options) {
  auto state = plan_engine(options);
  load_program(*state);
  open_engine_counters(*state);
  open_switch_counters(*state);
  state->rmdir_link = attach_to(state->skeleton->progs.on_cgroup_rmdir, "cgroup_rmdir");
  state->switch_link = attach_to(state->skeleton->progs.on_sched_switch, "sched_switch");
  // A first run on each CPU takes the counters' starting readings (a run attributes only what
  // they advanced since the previous one); a CPU that cannot run it now gets them at its first
  // switch.
  for (const unsigned cpu : options.cpus) {
    if (const int error = trigger_on_cpu(*state, cpu); error != 0) {
      throw std::runtime_error("bpf: cannot run the program on CPU " + std::to_string(cpu) +
                               " (BPF_PROG_TEST_RUN, Linux 5.10): " + errno_text(error));
    }
  }
  return CgroupEngine(std::move(state));
}

void CgroupEngine::reopen_cpu(unsigned cpu) {
  EngineState& state = *state_;
  const std::lock_guard<std::mutex> lock(state.mutex);
  const auto& cpus = state.options.cpus;
  const auto at = std::find(cpus.begin(), cpus.end(), cpu);
  if (at == cpus.end()) {
    throw std::invalid_argument("bpf: CPU " + std::to_string(cpu) + " is not counted");
  }
  const auto index = static_cast<std::size_t>(at - cpus.begin());
  const auto run = [&state, cpu](std::uint64_t argument, const char* what) {
    if (const int error = trigger_on_cpu(state, cpu, argument); error != 0) {
      throw std::runtime_error("bpf: cannot run the program on CPU " + std::to_string(cpu) +
                               " to " + what + " its count: " + errno_text(error));
    }
  };
  // The program runs at every switch there: paused, it makes no difference between the new
  // counters and the old ones' last readings, which would be no count.
  run(HWPERF_BPF_TRIGGER_PAUSE, "pause");
  auto counters = open_cpu_counters(state, cpu);
  std::move(counters.begin(), counters.end(),
            state.counters.begin() + static_cast<std::ptrdiff_t>(index * counters.size()));
  state.switch_events[index] = open_switch_counter(state, cpu);
  run(HWPERF_BPF_TRIGGER_RESTART, "restart");
}

CgroupEngine::CgroupEngine(std::unique_ptr<EngineState> state) : state_(std::move(state)) {}
CgroupEngine::CgroupEngine(CgroupEngine&& other) noexcept = default;
CgroupEngine& CgroupEngine::operator=(CgroupEngine&& other) noexcept = default;
CgroupEngine::~CgroupEngine() noexcept = default;

std::size_t CgroupEngine::event_count() const { return state_->events; }
std::size_t CgroupEngine::group_count() const { return state_->group_first.size(); }
std::size_t CgroupEngine::first_event_of(std::size_t group) const {
  return state_->group_first.at(group);
}
std::size_t CgroupEngine::group_size(std::size_t group) const {
  return state_->options.groups.at(group).size();
}
const std::vector<unsigned>& CgroupEngine::cpus() const { return state_->options.cpus; }
std::size_t CgroupEngine::perf_descriptors() const {
  return (state_->events + 1) * state_->options.cpus.size();
}

namespace {

// The kernfs id of `path` under `dirfd` (an empty path with AT_EMPTY_PATH: `dirfd` itself), once
// its filesystem is known to be cgroup v2.
OrErrno<std::uint64_t> kernfs_id(int dirfd, const char* path, int flags) {
  // A kernfs handle is the node's 64-bit id (FILEID_KERNFS).
  alignas(file_handle) unsigned char storage[sizeof(file_handle) + sizeof(std::uint64_t)] = {};
  auto* handle = reinterpret_cast<file_handle*>(storage);
  handle->handle_bytes = sizeof(std::uint64_t);
  int mount_id = 0;
  if (::name_to_handle_at(dirfd, path, handle, &mount_id, flags) != 0) return {0, errno};
  if (handle->handle_bytes != sizeof(std::uint64_t)) return {0, EINVAL};
  std::uint64_t id = 0;
  std::memcpy(&id, handle->f_handle, sizeof id);
  return {id, 0};
}

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC, linux/magic.h

}  // namespace

OrErrno<std::uint64_t> cgroup_id(const std::string& path) {
  struct statfs filesystem {};
  if (::statfs(path.c_str(), &filesystem) != 0) return {0, errno};
  if (filesystem.f_type != kCgroup2Magic) return {0, ENOTSUP};
  return kernfs_id(AT_FDCWD, path.c_str(), 0);
}

OrErrno<std::uint64_t> cgroup_id_of(int directory) {
  struct statfs filesystem {};
  if (::fstatfs(directory, &filesystem) != 0) return {0, errno};
  if (filesystem.f_type != kCgroup2Magic) return {0, ENOTSUP};
  return kernfs_id(directory, "", AT_EMPTY_PATH);
}

}  // namespace hwperf::perf::bpf
