#include "collectors/rapl/msr_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/log.h"

namespace hwperf::rapl {
namespace {

enum class Vendor { intel, amd, unknown };

Vendor vendor_of(const CpuIdentity& cpu) {
  if (cpu.vendor == "GenuineIntel" && cpu.family == 6) return Vendor::intel;
  // Zen and later, and Hygon's Zen derivative, share AMD's RAPL MSRs.
  if (amd_rapl(cpu)) return Vendor::amd;
  return Vendor::unknown;
}

// One CPU's msr device, opened read-only. The kernel's device is register-addressed: the file
// offset is the register number and every read returns that register's 8 bytes. A regular file
// stands in for it in fixture trees, and there register r lives at byte 8 * r, because at byte r
// neighbouring registers would share bytes (AMD's 0xC0010299, 0xC001029A and 0xC001029B are one
// apart).
class MsrDevice {
 public:
  MsrDevice(UniqueFd fd, std::uint64_t stride) noexcept : fd_(std::move(fd)), stride_(stride) {}
  OrErrno<std::uint64_t> read(std::uint64_t address) const {
    std::uint64_t value = 0;
    const ssize_t n =
        ::pread(fd_.get(), &value, sizeof value, static_cast<off_t>(address * stride_));
    if (n < 0) return {0, errno};
    // The driver answers EIO for a register the CPU does not have; a short read (a fixture file
    // that ends before the register) means the same.
    if (n != static_cast<ssize_t>(sizeof value)) return {0, EIO};
    return {value, 0};
  }

 private:
  UniqueFd fd_;
  std::uint64_t stride_;
};

class MsrSource final : public EnergySource {
 public:
  RaplInterface interface() const override { return RaplInterface::msr; }
  const std::vector<CounterInfo>& counters() const override { return counters_; }
  OrErrno<std::uint64_t> read(std::size_t index) override {
    const Register& reg = registers_.at(index);
    return devices_.at(reg.fd).read(reg.address);
  }
  std::map<unsigned, double> package_power_hints() const override { return hints_; }

  // Index of the open device of `cpu`, or the errno of opening it.
  OrErrno<std::size_t> device(const std::string& devfs_root, unsigned cpu) {
    const auto found = fd_of_cpu_.find(cpu);
    if (found != fd_of_cpu_.end()) return {found->second, 0};
    const std::string path = devfs_root + "/cpu/" + std::to_string(cpu) + "/msr";
    // Read-only: this exporter never writes a model-specific register.
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return {0, errno};
    struct stat info {};
    const bool regular_file = ::fstat(fd.get(), &info) == 0 && S_ISREG(info.st_mode);
    devices_.emplace_back(std::move(fd), regular_file ? 8 : 1);
    fd_of_cpu_[cpu] = devices_.size() - 1;
    return {devices_.size() - 1, 0};
  }
  const MsrDevice& at(std::size_t index) const { return devices_.at(index); }
  void add(CounterInfo info, std::size_t fd_index, std::uint64_t address) {
    counters_.push_back(std::move(info));
    registers_.push_back({fd_index, address});
  }
  void hint(unsigned package, double watts) {
    if (watts > 0) hints_[package] = std::max(hints_[package], watts);
  }
  bool empty() const { return counters_.empty(); }

 private:
  struct Register {
    std::size_t fd;
    std::uint64_t address;
  };
  std::vector<CounterInfo> counters_;
  std::vector<Register> registers_;
  std::vector<MsrDevice> devices_;
  std::map<unsigned, std::size_t> fd_of_cpu_;
  std::map<unsigned, double> hints_;
};

ProbeResult msr_failure(std::string reason, const std::string& message) {
  return probe_failure(RaplInterface::msr, std::move(reason), message);
}

ProbeResult open_failure(const std::string& devfs_root, unsigned cpu, int error) {
  const std::string path = devfs_root + "/cpu/" + std::to_string(cpu) + "/msr";
  const std::string what = path + ": " + errno_text(error);
  struct stat info {};
  const bool cpu_dir = ::stat((devfs_root + "/cpu/" + std::to_string(cpu)).c_str(), &info) == 0;
  switch (error) {
    case ENOENT:
      return msr_failure("absent",
                         what +
                             (cpu_dir ? ": the msr driver is not loaded"
                                      : ": there is no " + devfs_root +
                                            "/cpu (no msr driver, "
                                            "or not mapped into this container)") +
                             "; remedy: `modprobe msr` on the host, and in a container map the "
                             "device (--device /dev/cpu/N/msr for every CPU, or --privileged)");
    case EACCES:
      return msr_failure("permission_denied",
                         what +
                             ": the msr device is root-only; remedy: run the exporter as root "
                             "(with CAP_SYS_RAWIO), or --privileged in a container");
    case EPERM:
      return msr_failure("permission_denied",
                         what +
                             ": opening the msr device needs CAP_SYS_RAWIO; remedy: run as root "
                             "with CAP_SYS_RAWIO (`setcap cap_sys_rawio+ep` on the binary, or "
                             "--cap-add SYS_RAWIO / --privileged in a container)");
    default: return msr_failure("unsupported", what + ": this CPU is offline or has no MSR access");
  }
}

// Opens the first target CPU's msr device and reads its power unit register: a failure of
// either is the probe's failure.
std::optional<ProbeResult> check_first_cpu(MsrSource& source, const std::string& devfs_root,
                                           unsigned cpu, std::uint64_t unit_address,
                                           const std::string& identity) {
  const auto first = source.device(devfs_root, cpu);
  if (!first.ok()) return open_failure(devfs_root, cpu, first.error);
  const auto first_unit = source.at(first.value).read(unit_address);
  if (!first_unit.ok()) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llX", static_cast<unsigned long long>(unit_address));
    return msr_failure("unsupported", devfs_root + "/cpu/" + std::to_string(cpu) +
                                          "/msr: reading the power unit register " + hex + ": " +
                                          errno_text(first_unit.error) + ": " + identity +
                                          " (or its hypervisor) does not expose RAPL");
  }
  return std::nullopt;
}

// A domain's energy status register.
struct StatusRegister {
  Domain domain;
  std::uint64_t address;
};

// The energy status registers read on each package's (or die's) CPU.
std::vector<StatusRegister> msr_package_registers(bool amd) {
  return amd ? std::vector<StatusRegister>{{Domain::package, msr::kAmdPackageEnergy}}
             : std::vector<StatusRegister>{{Domain::package, msr::kIntelPackageEnergy},
                                           {Domain::core, msr::kIntelPp0Energy},
                                           {Domain::uncore, msr::kIntelPp1Energy},
                                           {Domain::dram, msr::kIntelDramEnergy},
                                           {Domain::psys, msr::kIntelPsysEnergy}};
}

// Adds the live energy status registers of each CPU it is given to the source; remembers the
// domains whose register is missing or dead, and the CPUs it could not read, for the caller
// to say.
class MsrProbe {
 public:
  MsrProbe(MsrSource& source, const std::string& devfs_root, const CpuIdentity& cpu,
           std::uint64_t unit_address)
      : source_(source), devfs_root_(devfs_root), cpu_(cpu), unit_address_(unit_address) {}

  // Every wanted register on each target's CPU, psys once, and on Intel each package's power
  // hint.
  void add_packages(const std::vector<CpuTarget>& targets,
                    const std::vector<StatusRegister>& package_scope, DomainSet wanted, bool amd) {
    bool psys_done = false;
    for (const CpuTarget& target : targets) {
      const auto opened = open_cpu(target.cpu);
      if (!opened) continue;
      for (const StatusRegister& status : package_scope) {
        if (!wanted.contains(status.domain)) continue;
        // psys is one platform-wide counter, read once.
        if (status.domain == Domain::psys) {
          if (psys_done) continue;
          psys_done = true;
        }
        try_add(target, opened->fd_index, status.domain, status.address, opened->unit,
                status.domain != Domain::psys);
      }
      if (!amd) add_power_hint(target, *opened);
    }
  }

  // AMD counts core energy per core; each core's counter feeds its package's core series.
  void add_amd_cores(const Topology& topology) {
    std::set<std::pair<unsigned, unsigned>> seen;
    for (const HardwareThread& thread : topology.threads()) {
      if (!seen.insert({thread.package, thread.core}).second) continue;
      const auto opened = open_cpu(thread.cpu);
      if (!opened) continue;
      try_add({thread.cpu, thread.package, std::nullopt}, opened->fd_index, Domain::core,
              msr::kAmdCoreEnergy, opened->unit, true);
    }
  }

  std::set<Domain> absent;
  std::vector<std::string> problems;

 private:
  // A CPU's msr device and its power unit register.
  struct OpenedCpu {
    std::size_t fd_index = 0;
    std::uint64_t unit = 0;
  };

  // A problem said, and nothing, when either cannot be read.
  std::optional<OpenedCpu> open_cpu(unsigned cpu_number) {
    const auto fd_index = source_.device(devfs_root_, cpu_number);
    if (!fd_index.ok()) {
      problems.push_back(devfs_root_ + "/cpu/" + std::to_string(cpu_number) +
                         "/msr: " + errno_text(fd_index.error));
      return std::nullopt;
    }
    const auto unit = source_.at(fd_index.value).read(unit_address_);
    if (!unit.ok()) {
      problems.push_back("power unit register on cpu " + std::to_string(cpu_number) + ": " +
                         errno_text(unit.error));
      return std::nullopt;
    }
    return OpenedCpu{fd_index.value, unit.value};
  }

  // A register the CPU lacks fails with EIO. One it has but does not drive (PP1 on servers,
  // DRAM on most clients) reads 0: a live counter has counted since reset, so 0 at startup
  // means "the hardware does not drive it", wrong only with a chance of 2^-32.
  void try_add(const CpuTarget& target, std::size_t fd_index, Domain domain, std::uint64_t address,
               std::uint64_t unit, bool package_label) {
    const auto status = source_.at(fd_index).read(address);
    if (!status.ok() || (status.value & 0xFFFFFFFFu) == 0) {
      absent.insert(domain);
      return;
    }
    CounterInfo info;
    info.domain = domain;
    if (package_label) {
      info.package = target.package;
      info.die = target.die;
    }
    const unsigned exponent = energy_unit_exponent(cpu_, domain, unit);
    info.scale = {WrapRule::modulo_2_32, 0, std::uint64_t{1} << exponent};
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llX", static_cast<unsigned long long>(address));
    info.source = devfs_root_ + "/cpu/" + std::to_string(target.cpu) + "/msr@" + hex;
    source_.add(std::move(info), fd_index, address);
  }

  // PKG_POWER_INFO: thermal spec power in bits 14:0, maximum power in bits 46:32, both in
  // units of 2^-PU W (PU = unit register bits 3:0). Either may be 0 (not reported).
  void add_power_hint(const CpuTarget& target, const OpenedCpu& opened) {
    const auto info = source_.at(opened.fd_index).read(msr::kIntelPackagePowerInfo);
    if (info.ok()) {
      const double per_watt = static_cast<double>(std::uint64_t{1} << (opened.unit & 0xF));
      const auto tdp = static_cast<double>(info.value & 0x7FFF);
      const auto max = static_cast<double>((info.value >> 32) & 0x7FFF);
      source_.hint(target.package, std::max(tdp, max) / per_watt);
    }
  }

  MsrSource& source_;
  const std::string& devfs_root_;
  const CpuIdentity& cpu_;
  std::uint64_t unit_address_;
};

}  // namespace

unsigned energy_unit_exponent(const CpuIdentity& cpu, Domain domain, std::uint64_t unit_register) {
  const auto esu = static_cast<unsigned>((unit_register >> 8) & 0x1F);
  if (vendor_of(cpu) != Vendor::intel) return esu;
  // Haswell-X, Broadwell-X, Broadwell-D, Xeon Phi KNL/KNM, Skylake-X (and Cascade/Cooper Lake),
  // Ice Lake-X/-D: the DRAM domain counts in 2^-16 J whatever the unit register says.
  static const std::set<unsigned> dram_fixed = {0x3F, 0x4F, 0x56, 0x57, 0x85, 0x55, 0x6A, 0x6C};
  // Sapphire Rapids and Emerald Rapids count psys in whole joules.
  static const std::set<unsigned> psys_joules = {0x8F, 0xCF};
  if (domain == Domain::dram && dram_fixed.count(cpu.model) != 0) return 16;
  if (domain == Domain::psys && psys_joules.count(cpu.model) != 0) return 0;
  return esu;
}

ProbeResult open_msr_source(const PathsConfig& paths, const Topology& topology, DomainSet wanted) {
  const auto& cpu = topology.cpu_identity();
  if (!cpu) {
    return msr_failure("error", paths.procfs +
                                    "/cpuinfo is unreadable or names no vendor_id, cpu "
                                    "family and model: the CPU vendor decides which "
                                    "registers to read");
  }
  const Vendor vendor = vendor_of(*cpu);
  const std::string identity = cpu->describe();
  if (vendor == Vendor::unknown) {
    return msr_failure("unsupported", "no RAPL register layout is known for " + identity);
  }
  const bool amd = vendor == Vendor::amd;

  // One CPU per package, or per die where Intel counts per die (Cascade Lake-AP and later);
  // AMD's package counter is package-wide whatever the kernel calls a die.
  const std::vector<CpuTarget> targets = topology.package_targets({}, !amd);
  if (targets.empty()) return msr_failure("error", "the topology has no CPUs");

  auto source = std::make_unique<MsrSource>();
  const std::uint64_t unit_address = amd ? msr::kAmdPowerUnit : msr::kIntelPowerUnit;
  if (auto failure =
          check_first_cpu(*source, paths.devfs, targets.front().cpu, unit_address, identity)) {
    return std::move(*failure);
  }

  MsrProbe probe(*source, paths.devfs, *cpu, unit_address);
  probe.add_packages(targets, msr_package_registers(amd), wanted, amd);
  if (amd && wanted.contains(Domain::core)) probe.add_amd_cores(topology);
  for (const auto& problem : probe.problems) log::warn("rapl: msr: skipping " + problem);
  if (source->empty()) {
    return msr_failure("unsupported", identity +
                                          " reports no live energy status register (each is "
                                          "missing or reads 0) for the configured domains");
  }
  for (Domain domain : probe.absent) {
    bool found = false;
    for (const auto& info : source->counters()) found = found || info.domain == domain;
    if (!found && wanted.contains(domain)) {
      log::debug("rapl: msr: " + std::string(to_string(domain)) +
                 " status register is missing "
                 "or reads 0 on " +
                 identity + "; not exported");
    }
  }
  ProbeResult result;
  result.interface = RaplInterface::msr;
  result.source = std::move(source);
  return result;
}

}  // namespace hwperf::rapl
