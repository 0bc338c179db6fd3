#include "collectors/rapl/perf_source.h"

#include "collectors/perf/perf_event.h"
#include "collectors/perf/pmu_sysfs.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/cpu_list.h"
#include "common/log.h"

namespace hwperf::rapl {
namespace {
using perf::parse_perf_event;
using perf::PerfEventConfig;
using perf::read_formats;
namespace fs = std::filesystem;

struct EventName {
  const char* file;
  Domain domain;
};
// The kernel's names (arch/x86/events/rapl.c): PP0 is "cores", PP1 is "gpu".
constexpr EventName kPowerEvents[] = {{"energy-pkg", Domain::package},
                                      {"energy-cores", Domain::core},
                                      {"energy-gpu", Domain::uncore},
                                      {"energy-ram", Domain::dram},
                                      {"energy-psys", Domain::psys}};

class PerfSource final : public EnergySource {
 public:
  RaplInterface interface() const override { return RaplInterface::perf; }
  const std::vector<CounterInfo>& counters() const override { return counters_; }
  OrErrno<std::uint64_t> read(std::size_t index) override {
    const auto reading = perf::read_counter(fds_.at(index));
    return {reading.value.value, reading.error};
  }
  void add(CounterInfo info, UniqueFd fd) {
    counters_.push_back(std::move(info));
    fds_.push_back(std::move(fd));
  }
  bool empty() const { return counters_.empty(); }

 private:
  std::vector<CounterInfo> counters_;
  std::vector<UniqueFd> fds_;
};

// One CPU per package, or per die where the PMU counts per die, taken from the PMU's cpumask
// where it names one in that die, else the die's first CPU from the topology.
std::vector<CpuTarget> package_targets(const std::string& pmu_dir, const Topology& topology,
                                       bool per_die) {
  std::vector<unsigned> preferred;
  const auto mask = read_small_file(pmu_dir + "/cpumask");
  if (mask.ok()) {
    try {
      preferred = parse_cpu_list(trim(mask.value));
    } catch (const std::invalid_argument& e) {
      log::warn("rapl: perf: ignoring " + pmu_dir + "/cpumask: " + e.what());
    }
  }
  return topology.package_targets(preferred, per_die);
}

ProbeResult perf_failure(std::string reason, const std::string& message) {
  return probe_failure(RaplInterface::perf, std::move(reason), message);
}

struct PmuEvent {
  std::string name;  // "power/energy-pkg"
  Domain domain;
  PerfEventConfig config;
  std::uint64_t counts_per_joule;
  bool per_core;
};

// Reads the event, its .scale and .unit. Problems with one event are warnings, not failures.
std::optional<PmuEvent> describe_event(const std::string& pmu_dir, const std::string& pmu_name,
                                       const std::string& file, Domain domain, bool per_core,
                                       const std::map<std::string, std::string>& formats) {
  const std::string path = pmu_dir + "/events/" + file;
  const auto text = read_small_file(path);
  if (!text.ok()) return std::nullopt;
  const std::string name = pmu_name + "/" + file;
  PmuEvent event{name, domain, {}, 0, per_core};
  try {
    event.config = parse_perf_event(trim(text.value), formats);
  } catch (const std::invalid_argument& e) {
    log::warn("rapl: perf: skipping " + name + ": " + path + ": " + e.what());
    return std::nullopt;
  }
  const auto scale = read_small_file(path + ".scale");
  const auto per_joule = scale.ok() ? counts_per_joule_from_scale(trim(scale.value)) : std::nullopt;
  if (!per_joule) {
    log::warn("rapl: perf: skipping " + name + ": " + path + ".scale " +
              (scale.ok() ? "is not 1/n joule: \"" + std::string(trim(scale.value)) + "\""
                          : errno_text(scale.error)));
    return std::nullopt;
  }
  event.counts_per_joule = *per_joule;
  const auto unit = read_small_file(path + ".unit");
  if (unit.ok() && trim(unit.value) != "Joules") {
    log::warn("rapl: perf: " + name + " counts in \"" + std::string(trim(unit.value)) +
              "\", not Joules; exporting count * .scale as joules");
  }
  return event;
}

// The energy events to open: the power PMU's for the wanted domains, and AMD's per-core
// power_core event when the power PMU has none for the cores.
struct PowerEvents {
  std::vector<PmuEvent> events;
  std::uint64_t core_type = 0;  // the power_core PMU's type, for the events read per core
};

PowerEvents describe_power_events(const std::string& devices, DomainSet wanted) {
  const std::string pmu_dir = devices + "/power";
  PowerEvents power;
  const auto formats = read_formats(pmu_dir);
  for (const EventName& e : kPowerEvents) {
    if (!wanted.contains(e.domain)) continue;
    if (auto event = describe_event(pmu_dir, "power", e.file, e.domain, false, formats)) {
      power.events.push_back(std::move(*event));
    }
  }
  // AMD (Linux 6.13+) counts core energy per core in a PMU of its own.
  const std::string core_dir = devices + "/power_core";
  const auto core_type = read_u64_file(core_dir + "/type");
  bool have_core = false;
  for (const auto& event : power.events) have_core = have_core || event.domain == Domain::core;
  if (core_type.ok() && core_type.value <= 0xFFFFFFFFu && !have_core &&
      wanted.contains(Domain::core)) {
    if (auto event = describe_event(core_dir, "power_core", "energy-core", Domain::core, true,
                                    read_formats(core_dir))) {
      power.events.push_back(std::move(*event));
      power.core_type = core_type.value;
    }
  }
  return power;
}

// Opens `event` on `target`'s CPU into `source`. A failure is a problem said later, except a
// permission one, which ends the probe: it is returned.
std::optional<ProbeResult> open_energy_event(PerfSource& source, const PmuEvent& event,
                                             std::uint32_t pmu_type, const CpuTarget& target,
                                             double hardware_unit, const std::string& procfs_root,
                                             std::vector<std::string>& problems) {
  perf::EventEncoding encoding;
  encoding.name = event.name;
  encoding.type = pmu_type;
  encoding.config = event.config.config;
  encoding.config1 = event.config.config1;
  encoding.config2 = event.config.config2;
  // pid -1 with a CPU: a system-wide count of everything on that CPU's package, which is what
  // the power PMU supports (it rejects per-task events and exclude_* filters).
  auto opened = perf::open_counter(encoding, -1, static_cast<int>(target.cpu));
  UniqueFd fd = std::move(opened.value);
  if (!opened.ok()) {
    const int error = opened.error;
    const std::string what = "perf_event_open(" + event.name + ", cpu " +
                             std::to_string(target.cpu) + "): " + errno_text(error);
    if (error == EACCES || error == EPERM) {
      return perf_failure("permission_denied", what + ": the power PMU's system-wide events " +
                                                   perf::system_wide_permission_remedy(
                                                       perf::paranoid_setting(procfs_root)));
    }
    problems.push_back(what);
    return std::nullopt;
  }
  CounterInfo info;
  info.domain = event.domain;
  if (event.domain != Domain::psys) {
    info.package = target.package;
    info.die = target.die;
  }
  info.scale = {WrapRule::modulo_2_64,
                perf_update_range_counts(hardware_unit, event.counts_per_joule),
                event.counts_per_joule};
  info.source = event.name + " on cpu " + std::to_string(target.cpu);
  source.add(std::move(info), std::move(fd));
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> counts_per_joule_from_scale(std::string_view scale_text) {
  const auto parsed = perf::parse_event_scale(scale_text);
  if (!parsed || *parsed > 1) return std::nullopt;
  const double scale = *parsed;
  const double reciprocal = 1.0 / scale;
  const double rounded = std::round(reciprocal);
  // Up to 2^62 counts per joule, so that EnergyTotal's remainder arithmetic cannot overflow.
  if (!(rounded <= 4611686018427387904.0) || std::fabs(reciprocal - rounded) > 1e-9 * rounded) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(rounded);
}

std::optional<double> powercap_energy_unit_joules(const std::string& sysfs_root) {
  std::optional<double> smallest;
  std::error_code ec;
  for (fs::directory_iterator it(sysfs_root + "/class/powercap", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename().string().rfind("intel-rapl", 0) != 0) continue;
    const auto range = read_u64_file(it->path().string() + "/max_energy_range_uj");
    if (!range.ok() || range.value == 0) continue;
    const double unit = static_cast<double>(range.value) / 4294967295.0 / 1e6;
    if (!smallest || unit < *smallest) smallest = unit;
  }
  return smallest;
}

ProbeResult open_perf_source(const std::string& sysfs_root, const std::string& procfs_root,
                             const Topology& topology, DomainSet wanted) {
  const std::string devices = sysfs_root + "/bus/event_source/devices";
  const std::string pmu_dir = devices + "/power";
  const auto type = read_u64_file(pmu_dir + "/type");
  if (!type.ok()) {
    return perf_failure("absent", pmu_dir + "/type: " + errno_text(type.error) +
                                      ": the kernel has no RAPL perf PMU for this CPU (or this VM "
                                      "hides RAPL); in a container, mount the host /sys read-only");
  }
  if (type.value > 0xFFFFFFFFu) return perf_failure("error", pmu_dir + "/type is not a PMU type");

  const PowerEvents power = describe_power_events(devices, wanted);
  if (power.events.empty()) {
    return perf_failure("unsupported", "the power PMU at " + pmu_dir +
                                           " lists no usable energy-* event for the configured "
                                           "domains: this CPU (or the hypervisor) exposes no RAPL "
                                           "energy counters through perf");
  }

  // AMD and Hygon count package energy once per socket. Kernels that scope the power PMU per
  // die (arch/x86/events/rapl.c, 2024: the PMU's cpumask names one CPU per die, a CCD on AMD)
  // would otherwise give one series per CCD, each the whole socket's energy; the MSR path reads
  // die 0 only for the same reason.
  const auto& cpu = topology.cpu_identity();
  const bool amd = cpu && amd_rapl(*cpu);
  const auto packages = package_targets(pmu_dir, topology, !amd);
  const auto cores = topology.core_targets();
  // What the kernel's 32-bit update can carry decides how often the guard reads (energy.h).
  const double hardware_unit =
      powercap_energy_unit_joules(sysfs_root).value_or(kSmallestRaplUnitJoules);
  auto source = std::make_unique<PerfSource>();
  std::vector<std::string> problems;
  for (const PmuEvent& event : power.events) {
    const auto pmu_type = static_cast<std::uint32_t>(event.per_core ? power.core_type : type.value);
    std::vector<CpuTarget> targets = event.per_core ? cores : packages;
    // psys is one platform-wide counter; each package's PMU would report the same one.
    if (event.domain == Domain::psys && targets.size() > 1) targets.resize(1);
    for (const CpuTarget& target : targets) {
      if (auto denied = open_energy_event(*source, event, pmu_type, target, hardware_unit,
                                          procfs_root, problems)) {
        return std::move(*denied);
      }
    }
  }
  if (source->empty()) {
    return perf_failure("unsupported",
                        problems.empty() ? "no event could be opened" : problems.front());
  }
  for (const auto& problem : problems) log::warn("rapl: perf: skipping " + problem);
  ProbeResult result;
  result.interface = RaplInterface::perf;
  result.source = std::move(source);
  return result;
}

}  // namespace hwperf::rapl
