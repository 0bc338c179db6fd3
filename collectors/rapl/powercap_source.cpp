#include "collectors/rapl/powercap_source.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "common/log.h"

namespace hwperf::rapl {
namespace {
namespace fs = std::filesystem;

constexpr std::uint64_t kMicrojoulesPerJoule = 1000000;
// Power-limit constraints a zone may list (long_term, short_term, peak_power, ...).
constexpr int kMaxConstraints = 8;

std::optional<unsigned> parse_unsigned(std::string_view text) {
  const auto value = parse_u64(text);
  if (!value || *value > 0xFFFFFFu) return std::nullopt;
  return static_cast<unsigned>(*value);
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Which driver made a zone, in the order zones are preferred when two describe the same package
// and die: the MSR driver's intel-rapl, then TPMI's (Granite Rapids, Sierra Forest and later:
// drivers/powercap/intel_rapl_tpmi.c, whose control type is "intel-rapl" in mainline and was
// "intel-rapl-tpmi" in some versions; its zones are "package-N-die-M" per power domain), then
// intel-rapl-mmio, which repeats a package the MSR driver already has.
enum class ZoneFamily { msr = 0, tpmi = 1, mmio = 2 };

struct ZonePrefix {
  std::string_view prefix;
  ZoneFamily family;
};
constexpr ZonePrefix kZonePrefixes[] = {{"intel-rapl:", ZoneFamily::msr},
                                        {"intel-rapl-tpmi:", ZoneFamily::tpmi},
                                        {"intel-rapl-mmio:", ZoneFamily::mmio}};

// "intel-rapl:0:1" -> {msr, index={0,1}}; the bare control-type directories ("intel-rapl",
// "intel-rapl-mmio") and other powercap drivers are not zones of ours.
struct ZoneDir {
  std::string dir_name;
  ZoneFamily family = ZoneFamily::msr;
  std::vector<unsigned> index;
};

std::optional<ZoneDir> parse_zone_dir(const std::string& dir_name) {
  ZoneDir zone{dir_name, ZoneFamily::msr, {}};
  std::string_view rest = dir_name;
  const ZonePrefix* match = nullptr;
  for (const auto& candidate : kZonePrefixes) {
    if (starts_with(rest, candidate.prefix)) match = &candidate;
  }
  if (match == nullptr) return std::nullopt;
  zone.family = match->family;
  rest.remove_prefix(match->prefix.size());
  while (true) {
    const auto colon = rest.find(':');
    const auto part = parse_unsigned(rest.substr(0, colon));
    if (!part) return std::nullopt;
    zone.index.push_back(*part);
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return zone;
}

using Key = std::tuple<Domain, std::optional<unsigned>, std::optional<unsigned>>;

// Each zone's energy_uj is opened once, here at startup, and then only read (pread at offset 0):
// never reopened on a scrape or a guard tick.
class PowercapSource final : public EnergySource {
 public:
  PowercapSource(std::vector<CounterInfo> counters, std::vector<UniqueFd> fds,
                 std::map<unsigned, double> hints)
      : counters_(std::move(counters)), fds_(std::move(fds)), hints_(std::move(hints)) {}
  RaplInterface interface() const override { return RaplInterface::powercap; }
  const std::vector<CounterInfo>& counters() const override { return counters_; }
  OrErrno<std::uint64_t> read(std::size_t index) override { return pread_counter(fds_.at(index)); }
  std::map<unsigned, double> package_power_hints() const override { return hints_; }

 private:
  std::vector<CounterInfo> counters_;
  std::vector<UniqueFd> fds_;  // energy_uj of counters_[i]
  std::map<unsigned, double> hints_;
};

// The largest figure among the zone's constraints, in watts; 0 when it lists none.
double zone_power_hint(const std::string& zone_path) {
  double watts = 0;
  for (int i = 0; i < kMaxConstraints; ++i) {
    for (const char* field : {"_max_power_uw", "_power_limit_uw"}) {
      const auto uw = read_u64_file(zone_path + "/constraint_" + std::to_string(i) + field);
      if (uw.ok()) watts = std::max(watts, static_cast<double>(uw.value) / 1e6);
    }
  }
  return watts;
}

ProbeResult powercap_failure(std::string reason, const std::string& message) {
  return probe_failure(RaplInterface::powercap, std::move(reason), message);
}

std::string permission_remedy() {
  return "energy_uj is readable by root only since Linux 5.10 (CVE-2020-8694); remedy: run "
         "the exporter as root, or make energy_uj world-readable at boot (a udev rule or "
         "systemd-tmpfiles running `chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj "
         "/sys/class/powercap/intel-rapl:*:*/energy_uj`), or in a container run --privileged";
}

// The zone directories under `root` into `dirs`, in the order they are read; the probe's
// failure when there are none.
std::optional<ProbeResult> list_zone_dirs(const std::string& root, std::vector<ZoneDir>& dirs) {
  {
    std::error_code ec;
    fs::directory_iterator it(root, ec);
    if (ec) {
      const int error = ec.value();
      if (error == EACCES || error == EPERM) {
        return powercap_failure("permission_denied", root + ": " + errno_text(error) +
                                                         "; remedy: run the exporter as root");
      }
      return powercap_failure(
          "absent", root + ": " + errno_text(error) +
                        ": no RAPL powercap driver on this kernel or CPU, or /sys/class/powercap "
                        "is masked in this container; remedy: `modprobe intel_rapl_msr` on the "
                        "host, and in a container mount the host /sys read-only (-v /sys:/sys:ro)");
    }
    for (const auto& entry : it) {
      if (auto zone = parse_zone_dir(entry.path().filename().string())) {
        dirs.push_back(std::move(*zone));
      }
    }
  }
  if (dirs.empty()) {
    return powercap_failure(
        "absent", root +
                      " holds no intel-rapl zones: the intel_rapl_msr driver is not "
                      "loaded or this CPU has no RAPL; remedy: `modprobe intel_rapl_msr`");
  }
  // MSR-backed zones before MMIO ones, parents before subzones, so that an MMIO zone that
  // duplicates a package is recognised as the duplicate, and a subzone finds its parent.
  std::sort(dirs.begin(), dirs.end(), [](const ZoneDir& a, const ZoneDir& b) {
    return std::make_tuple(a.family, a.index.size(), a.index) <
           std::make_tuple(b.family, b.index.size(), b.index);
  });
  return std::nullopt;
}

// Takes the zone directories one by one, in list_zone_dirs' order: names each, places it under
// its package, leaves out duplicates and what is not wanted, and opens the energy_uj of the
// rest; finish() says what went wrong and makes the source.
class PowercapProbe {
 public:
  PowercapProbe(const std::string& root, const Topology& topology, DomainSet wanted,
                const std::optional<CpuIdentity>& cpu)
      : root_(root),
        topology_(topology),
        wanted_(wanted),
        cpu_(cpu),
        amd_(cpu && amd_rapl(*cpu)),
        packages_(topology.packages()) {}

  void add(const ZoneDir& dir) {
    const std::string path = root_ + "/" + dir.dir_name;
    auto zone = read_zone(dir, path);
    if (!zone || !place_zone(dir, path, *zone) || !new_zone(path, *zone) ||
        !wanted_zone(path, *zone)) {
      return;
    }
    open_zone(path, *zone);
  }

  ProbeResult finish() {
    // A partial tree is still worth serving; say once what is missing from it.
    for (const auto& problem : broken_) log::warn("rapl: powercap: skipping " + problem);
    if (!counters_.empty() && !denied_.empty()) {
      log::warn("rapl: powercap: " + std::to_string(denied_.size()) + " zone(s), first " +
                denied_.front() + ", are not readable (EACCES): " + permission_remedy());
    }
    if (counters_.empty()) {
      if (!denied_.empty()) {
        return powercap_failure("permission_denied", denied_.front() + ": " + errno_text(EACCES) +
                                                         ": " + permission_remedy());
      }
      if (!broken_.empty()) return powercap_failure("error", "no readable zone under " + root_);
      return powercap_failure("absent", root_ + " has no zone for the configured domains");
    }
    ProbeResult result;
    result.interface = RaplInterface::powercap;
    result.source =
        std::make_unique<PowercapSource>(std::move(counters_), std::move(fds_), std::move(hints_));
    return result;
  }

 private:
  // The zone's name file read and parsed; on AMD a top-level die zone stands for its package.
  std::optional<ZoneName> read_zone(const ZoneDir& dir, const std::string& path) {
    const auto name_text = read_small_file(path + "/name");
    if (!name_text.ok()) {
      broken_.push_back(path + "/name: " + errno_text(name_text.error));
      return std::nullopt;
    }
    auto zone = parse_zone_name(name_text.value);
    if (!zone) {
      log::debug("rapl: powercap: skipping " + path + " named \"" +
                 std::string(trim(name_text.value)) + "\": not a RAPL domain this exporter knows");
      return std::nullopt;
    }
    // Kernels 6.10 and 6.11 register one package-P-die-D zone per CCD on AMD, each reading the
    // whole socket's MSR_AMD_PKG_ENERGY_STATUS (fixed in 6.12: "powercap/intel_rapl: Fix the
    // energy-pkg event for AMD CPUs"). The socket's energy is read once, from its first die
    // zone; the perf and msr interfaces read it once per socket for the same reason.
    if (dir.index.size() == 1 && amd_ && zone->die) {
      if (!amd_dies_logged_) {
        log::info("rapl: powercap: " + path + " is \"" + std::string(trim(name_text.value)) +
                  "\": on " + cpu_->vendor +
                  " CPUs every die zone of a package reads the whole "
                  "socket's energy (Linux 6.10/6.11 register one per CCD), so each package is "
                  "read once, from its first die zone");
        amd_dies_logged_ = true;
      }
      zone->die.reset();
    }
    return zone;
  }

  // A top-level zone is a package or psys and parents its subzones; a subzone takes its
  // package's package and die. False for a zone left out.
  bool place_zone(const ZoneDir& dir, const std::string& path, ZoneName& zone) {
    if (dir.index.size() == 1) {
      if (zone.domain != Domain::package && zone.domain != Domain::psys) {
        log::debug("rapl: powercap: skipping top-level zone " + path + " (" +
                   std::string(to_string(zone.domain)) + " without a package)");
        return false;
      }
      parents_[{dir.family, dir.index[0]}] = zone;
      return true;
    }
    if (dir.index.size() == 2) {
      const auto parent = parents_.find({dir.family, dir.index[0]});
      if (parent == parents_.end() || parent->second.domain != Domain::package ||
          zone.domain == Domain::package || zone.domain == Domain::psys) {
        log::debug("rapl: powercap: skipping subzone " + path + ": no package zone above it");
        return false;
      }
      zone.package = parent->second.package;
      zone.die = parent->second.die;
      return true;
    }
    return false;
  }

  // False for a zone already read; warns of a package the topology lacks, and keeps a package
  // zone's power hint.
  bool new_zone(const std::string& path, const ZoneName& zone) {
    const Key key{zone.domain, zone.package, zone.die};
    if (!seen_.insert(key).second) {
      // intel-rapl-mmio:0 is the same package as intel-rapl:0 reached through MMIO (power limits
      // only differ); counting it twice would double the package's energy.
      log::debug("rapl: powercap: skipping " + path + ": duplicates a zone already read");
      return false;
    }
    if (zone.package && !std::binary_search(packages_.begin(), packages_.end(), *zone.package) &&
        warned_packages_.insert(*zone.package).second) {
      log::warn("rapl: powercap: " + path + " names package " + std::to_string(*zone.package) +
                ", which the topology (" + topology_.description() +
                ") does not have; exporting it under that id");
    }
    if (zone.domain == Domain::package && zone.package) {
      const double hint = zone_power_hint(path);
      if (hint > 0) hints_[*zone.package] = std::max(hints_[*zone.package], hint);
    }
    return true;
  }

  // False for a domain not configured, and for AMD's core zones.
  bool wanted_zone(const std::string& path, const ZoneName& zone) {
    if (!wanted_.contains(zone.domain)) return false;
    // On AMD and Hygon the kernel maps the `core` zone to the core energy register, which is per
    // core (MSR 0xC001029A; drivers/powercap/intel_rapl_msr.c, AMD register table), and reads it
    // on the package's lead CPU (rapl_msr_read_raw on rp->lead_cpu): one core's energy under a
    // name that means all cores of the package. perf's power_core PMU and the msr interface read
    // every core; this zone is left out rather than exported as something it is not.
    if (amd_ && zone.domain == Domain::core) {
      if (!amd_core_logged_) {
        log::info("rapl: powercap: leaving out " + path + " and the other `core` zones: on " +
                  cpu_->vendor +
                  " CPUs each is one core's energy (the per-core register read on "
                  "the package's first CPU), not the package's cores; interface perf (power_core) "
                  "or msr reads every core");
        amd_core_logged_ = true;
      }
      return false;
    }
    return true;
  }

  // The zone's range and energy_uj, opened and read once; a counter, or a problem kept.
  void open_zone(const std::string& path, const ZoneName& zone) {
    const auto range = read_u64_file(path + "/max_energy_range_uj");
    if (!range.ok() || range.value == 0) {
      broken_.push_back(path + "/max_energy_range_uj: " +
                        (range.ok() ? std::string("0") : errno_text(range.error)) +
                        " (without it a wrap cannot be told from a reset)");
      return;
    }
    const std::string energy = path + "/energy_uj";
    UniqueFd fd(::open(energy.c_str(), O_RDONLY | O_CLOEXEC));
    // The first read checks that the zone answers; the engine takes its own baseline later.
    const auto first = fd.valid() ? pread_counter(fd) : OrErrno<std::uint64_t>{0, errno};
    if (!first.ok()) {
      if (first.error == EACCES || first.error == EPERM) {
        denied_.push_back(energy);
      } else {
        broken_.push_back(energy + ": " + errno_text(first.error));
      }
      return;
    }
    CounterInfo info;
    info.domain = zone.domain;
    info.package = zone.package;
    info.die = zone.die;
    info.scale = {WrapRule::powercap_range, range.value, kMicrojoulesPerJoule};
    info.source = energy;
    counters_.push_back(std::move(info));
    fds_.push_back(std::move(fd));
  }

  const std::string& root_;
  const Topology& topology_;
  DomainSet wanted_;
  const std::optional<CpuIdentity>& cpu_;
  const bool amd_;
  bool amd_core_logged_ = false;
  bool amd_dies_logged_ = false;
  std::vector<unsigned> packages_;
  std::map<std::pair<ZoneFamily, unsigned>, ZoneName> parents_;  // (driver, top index) -> name
  std::set<Key> seen_;
  std::set<unsigned> warned_packages_;
  std::vector<CounterInfo> counters_;
  std::vector<UniqueFd> fds_;  // one per counter, kept open for the source's lifetime
  std::map<unsigned, double> hints_;
  std::vector<std::string> denied_;
  std::vector<std::string> broken_;
};

}  // namespace

std::optional<ZoneName> parse_zone_name(std::string_view name) {
  name = trim(name);
  if (name == "core") return ZoneName{Domain::core, std::nullopt, std::nullopt};
  if (name == "uncore") return ZoneName{Domain::uncore, std::nullopt, std::nullopt};
  if (name == "dram") return ZoneName{Domain::dram, std::nullopt, std::nullopt};
  if (name == "psys") return ZoneName{Domain::psys, std::nullopt, std::nullopt};
  if (starts_with(name, "psys-")) {
    const auto package = parse_unsigned(name.substr(5));
    if (!package) return std::nullopt;
    return ZoneName{Domain::psys, package, std::nullopt};
  }
  if (starts_with(name, "package-")) {
    std::string_view rest = name.substr(8);
    const auto dash = rest.find("-die-");
    const auto package = parse_unsigned(rest.substr(0, dash));
    if (!package) return std::nullopt;
    if (dash == std::string_view::npos) return ZoneName{Domain::package, package, std::nullopt};
    const auto die = parse_unsigned(rest.substr(dash + 5));
    if (!die) return std::nullopt;
    return ZoneName{Domain::package, package, die};
  }
  return std::nullopt;
}

ProbeResult open_powercap_source(const std::string& sysfs_root, const Topology& topology,
                                 DomainSet wanted, const std::optional<CpuIdentity>& cpu) {
  const std::string root = sysfs_root + "/class/powercap";
  std::vector<ZoneDir> dirs;
  if (auto failure = list_zone_dirs(root, dirs)) return std::move(*failure);
  PowercapProbe probe(root, topology, wanted, cpu);
  for (const ZoneDir& dir : dirs) probe.add(dir);
  return probe.finish();
}

}  // namespace hwperf::rapl
