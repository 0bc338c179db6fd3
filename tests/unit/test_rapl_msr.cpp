// The MSR source against fake /dev/cpu/N/msr files (a regular file read with pread at the
// register's address, exactly as the driver is): Intel server and client layouts with their unit
// quirks, AMD's per-core counters, and the states a user meets without the msr driver.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <map>
#include <string>

#include "collectors/rapl/msr_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fakes.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::rapl;
using namespace hwperf::test::rapl_fixture;
using hwperf::test::TempDir;
using hwperf::test::with_cpu_identity_from;
using hwperf::test::rapl_fakes::kTwoTo32;

namespace {

// The unit register: power units in bits 3:0, energy status units in 12:8, time units in 19:16.
constexpr std::uint64_t unit_register(unsigned power_unit, unsigned esu, unsigned time_unit) {
  return (std::uint64_t{time_unit} << 16) | (std::uint64_t{esu} << 8) | power_unit;
}

struct MsrTree {
  TempDir dir;
  PathsConfig paths;
  MsrTree() {
    paths.sysfs = (dir.path() / "sys").string();
    paths.procfs = (dir.path() / "proc").string();
    paths.devfs = (dir.path() / "dev").string();
    dir.write("sys/.keep", "");
  }
  void cpu(const std::string& vendor, unsigned family, unsigned model) const {
    dir.write("proc/cpuinfo", cpuinfo(vendor, family, model));
  }
  void set(unsigned cpu, std::uint64_t address, std::uint64_t value) const {
    write_msr(dir, cpu, address, value);
  }
  // An empty file named `name` in /dev/cpu/N of both CPUs.
  void device_files(const std::string& name) const {
    for (const char* cpu : {"0", "1"}) dir.write(std::string("dev/cpu/") + cpu + "/" + name, "");
  }
  // The MSR source over this tree on the two-package machine, every domain asked for.
  ProbeResult open() const {
    return open_msr_source(paths, with_cpu_identity_from(two_package_topology(), paths.procfs),
                           DomainSet::all());
  }
};

const CounterInfo* package_counter(const EnergySource& source, Domain domain,
                                   std::optional<unsigned> package) {
  for (const auto& info : source.counters()) {
    if (info.domain == domain && info.package == package) return &info;
  }
  return nullptr;
}

// The probe failed for `reason`, and its message names every one of `fragments`.
void check_failure(const ProbeResult& probe, const std::string& reason,
                   std::initializer_list<std::string> fragments) {
  CHECK(probe.reason == reason);
  for (const auto& fragment : fragments) CHECK_THAT(probe.message, Catch::Contains(fragment));
}

std::size_t count_domain(const EnergySource& source, Domain domain) {
  std::size_t n = 0;
  for (const auto& info : source.counters()) n += info.domain == domain ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("energy unit exponents follow the unit register and Linux's quirks", "[rapl]") {
  const unsigned esu = 14;
  const std::uint64_t reg = unit_register(3, esu, 10);
  struct Row {
    const char* what;
    CpuIdentity cpu;
    Domain domain;
    unsigned expected;
  };
  const Row row = GENERATE_COPY(
      Row{"package follows ESU", {"GenuineIntel", 6, 0x55}, Domain::package, esu},
      Row{"Skylake-X DRAM is fixed at 2^-16 J", {"GenuineIntel", 6, 0x55}, Domain::dram, 16u},
      Row{"Haswell-X DRAM is fixed", {"GenuineIntel", 6, 0x3F}, Domain::dram, 16u},
      Row{"Ice Lake-X DRAM is fixed", {"GenuineIntel", 6, 0x6A}, Domain::dram, 16u},
      Row{"Sapphire Rapids DRAM follows ESU", {"GenuineIntel", 6, 0x8F}, Domain::dram, esu},
      Row{"Sapphire Rapids psys counts joules", {"GenuineIntel", 6, 0x8F}, Domain::psys, 0u},
      Row{"a client's DRAM follows ESU", {"GenuineIntel", 6, 0x8C}, Domain::dram, esu},
      Row{"AMD follows ESU", {"AuthenticAMD", 0x19, 0x01}, Domain::dram, esu});
  CAPTURE(row.what);
  CHECK(energy_unit_exponent(row.cpu, row.domain, reg) == row.expected);
}

TEST_CASE("msr on an Intel server: package, core and fixed-unit DRAM per package", "[rapl]") {
  MsrTree tree;
  const unsigned model = 0x55;  // Skylake-X: DRAM at 2^-16 J
  tree.cpu("GenuineIntel", 6, model);
  const unsigned esu = 14;
  const unsigned power_unit = 3;  // 1/8 W
  const std::uint64_t tdp_watts = 125;
  // cpu 0 is package 0, cpu 1 package 1; PP1 and psys read 0 (absent on servers).
  for (unsigned cpu : {0u, 1u}) {
    tree.set(cpu, msr::kIntelPowerUnit, unit_register(power_unit, esu, 10));
    tree.set(cpu, msr::kIntelPackageEnergy, 0x1000 + cpu);
    tree.set(cpu, msr::kIntelPp0Energy, 0x2000 + cpu);
    tree.set(cpu, msr::kIntelDramEnergy, 0x3000 + cpu);
    tree.set(cpu, msr::kIntelPp1Energy, 0);
    tree.set(cpu, msr::kIntelPsysEnergy, 0);
    // Thermal spec power 125 W in 1/8 W; maximum power not reported (0).
    tree.set(cpu, msr::kIntelPackagePowerInfo, tdp_watts << power_unit);
  }
  auto probe = tree.open();
  REQUIRE(probe.source != nullptr);
  const EnergySource& source = *probe.source;
  CHECK(source.interface() == RaplInterface::msr);
  CHECK(count_domain(source, Domain::package) == 2);
  CHECK(count_domain(source, Domain::core) == 2);
  CHECK(count_domain(source, Domain::dram) == 2);
  CHECK(count_domain(source, Domain::uncore) == 0);
  CHECK(count_domain(source, Domain::psys) == 0);
  for (unsigned package : {0u, 1u}) {
    CAPTURE(package);
    const CounterInfo* pkg = package_counter(source, Domain::package, package);
    const CounterInfo* dram = package_counter(source, Domain::dram, package);
    REQUIRE(pkg != nullptr);
    REQUIRE(dram != nullptr);
    CHECK(pkg->scale.rule == WrapRule::modulo_2_32);
    CHECK(pkg->scale.counts_per_joule == (1ull << esu));
    CHECK(dram->scale.counts_per_joule == (1ull << 16));
    CHECK_THAT(pkg->source, Catch::Contains("/cpu/" + std::to_string(package) + "/msr"));
  }
  const auto hints = source.package_power_hints();
  CHECK(hints.at(0) == Approx(static_cast<double>(tdp_watts)));
  CHECK(hints.at(1) == Approx(static_cast<double>(tdp_watts)));
}

TEST_CASE("msr energy through the engine: 32-bit wraps in raw units, times the unit", "[rapl]") {
  MsrTree tree;
  tree.cpu("GenuineIntel", 6, 0x55);
  const unsigned esu = 14;
  const std::uint64_t start_pkg = kTwoTo32 - 100;  // wraps on the first step
  const std::uint64_t start_dram = kTwoTo32 - 1;   // a wrap of one unit
  const std::uint64_t start_core = 777;            // equal readings
  tree.set(0, msr::kIntelPowerUnit, unit_register(3, esu, 10));
  tree.set(0, msr::kIntelPackageEnergy, start_pkg);
  tree.set(0, msr::kIntelPp0Energy, start_core);
  tree.set(0, msr::kIntelDramEnergy, start_dram);
  const Topology topology({{0, 0, 0, 0}}, {}, "test: one CPU");
  auto probe = open_msr_source(tree.paths, with_cpu_identity_from(topology, tree.paths.procfs),
                               DomainSet::all());
  REQUIRE(probe.source != nullptr);
  const auto infos = probe.source->counters();
  auto now = Clock::time_point{} + std::chrono::hours(1);
  RaplEngine engine(std::move(probe.source), std::vector<double>(infos.size(), 1000.0),
                    [&now] { return now; });

  const std::uint64_t pkg_step = 250;
  const std::uint64_t dram_step = 1;
  // Reserved high bits set on the new value must not count as energy.
  tree.set(0, msr::kIntelPackageEnergy, (0xFFull << 32) | ((start_pkg + pkg_step) % kTwoTo32));
  tree.set(0, msr::kIntelDramEnergy, (start_dram + dram_step) % kTwoTo32);
  now += std::chrono::seconds(1);
  const auto series = engine.snapshot();

  std::map<Domain, const SeriesSnapshot*> by_domain;
  for (const auto& s : series) by_domain[s.key.domain] = &s;
  REQUIRE(by_domain.count(Domain::package) == 1);
  REQUIRE(by_domain.count(Domain::dram) == 1);
  REQUIRE(by_domain.count(Domain::core) == 1);
  CHECK(by_domain[Domain::package]->tally.energy.joules() ==
        static_cast<double>(pkg_step) / static_cast<double>(1ull << esu));
  CHECK(by_domain[Domain::dram]->tally.energy.joules() ==
        static_cast<double>(dram_step) / static_cast<double>(1ull << 16));
  CHECK(by_domain[Domain::core]->tally.energy.joules() == 0);
  CHECK(by_domain[Domain::package]->tally.wraps == 1);
  CHECK(by_domain[Domain::dram]->tally.wraps == 1);
  CHECK(by_domain[Domain::core]->tally.wraps == 0);
}

TEST_CASE("msr on an Intel client: psys is read once, platform-wide", "[rapl]") {
  MsrTree tree;
  tree.cpu("GenuineIntel", 6, 0x8C);  // Tiger Lake
  for (unsigned cpu : {0u, 1u}) {
    tree.set(cpu, msr::kIntelPowerUnit, unit_register(3, 14, 10));
    tree.set(cpu, msr::kIntelPackageEnergy, 100);
    tree.set(cpu, msr::kIntelPp1Energy, 200);
    tree.set(cpu, msr::kIntelPsysEnergy, 300);
  }
  auto probe = tree.open();
  REQUIRE(probe.source != nullptr);
  CHECK(count_domain(*probe.source, Domain::psys) == 1);
  CHECK(count_domain(*probe.source, Domain::uncore) == 2);
  const CounterInfo* psys = package_counter(*probe.source, Domain::psys, std::nullopt);
  REQUIRE(psys != nullptr);
  CHECK_FALSE(psys->die.has_value());
}

TEST_CASE("msr on AMD: package per package, core energy summed over each core", "[rapl]") {
  MsrTree tree;
  tree.cpu("AuthenticAMD", 0x19, 0x01);
  const unsigned esu = 16;
  const auto topology = smt_topology();  // cores 0 (cpus 0,1) and 1 (cpus 2,3)
  for (unsigned cpu = 0; cpu < 4; ++cpu) {
    tree.set(cpu, msr::kAmdPowerUnit, unit_register(3, esu, 10));
    tree.set(cpu, msr::kAmdPackageEnergy, 5000);
  }
  const std::map<unsigned, std::uint64_t> core_start = {{0, kTwoTo32 - 10}, {2, 400}};
  for (const auto& [cpu, value] : core_start) tree.set(cpu, msr::kAmdCoreEnergy, value);
  auto probe = open_msr_source(tree.paths, with_cpu_identity_from(topology, tree.paths.procfs),
                               DomainSet::all());
  REQUIRE(probe.source != nullptr);
  CHECK(count_domain(*probe.source, Domain::package) == 1);
  // One counter per core, read on the core's first thread, both in package 0.
  CHECK(count_domain(*probe.source, Domain::core) == core_start.size());
  for (const auto& info : probe.source->counters()) {
    CHECK(info.package == 0u);
    CHECK(info.scale.counts_per_joule == (1ull << esu));
  }

  const auto infos = probe.source->counters();
  auto now = Clock::time_point{} + std::chrono::hours(1);
  RaplEngine engine(std::move(probe.source), std::vector<double>(infos.size(), 1000.0),
                    [&now] { return now; });
  const std::map<unsigned, std::uint64_t> core_step = {{0, 30}, {2, 70}};
  std::uint64_t total = 0;
  for (const auto& [cpu, step] : core_step) {
    tree.set(cpu, msr::kAmdCoreEnergy, (core_start.at(cpu) + step) % kTwoTo32);
    total += step;
  }
  now += std::chrono::seconds(1);
  const auto series = engine.snapshot();
  const SeriesSnapshot* core = nullptr;
  for (const auto& s : series) {
    if (s.key.domain == Domain::core) core = &s;
  }
  REQUIRE(core != nullptr);
  CHECK(core->key.package == 0u);
  CHECK(core->tally.energy.joules() ==
        static_cast<double>(total) / static_cast<double>(1ull << esu));
  CHECK(core->tally.wraps == 1);  // core 0 wrapped
}

TEST_CASE("msr failure states name the cause and the remedy", "[rapl]") {
  MsrTree tree;
  tree.cpu("GenuineIntel", 6, 0x55);
  SECTION("no /dev/cpu at all") {
    auto probe = tree.open();
    CHECK(probe.source == nullptr);
    check_failure(probe, "absent",
                  {tree.paths.devfs + "/cpu/0/msr", "ENOENT", "modprobe msr", "--device"});
  }
  SECTION("/dev/cpu/N without msr: the driver is not loaded (this VM)") {
    tree.device_files("cpuid");
    check_failure(tree.open(), "absent", {"msr driver is not loaded", "modprobe msr"});
  }
  SECTION("no unit register: the CPU or hypervisor has no RAPL") {
    tree.device_files("msr");
    check_failure(tree.open(), "unsupported", {"0x606", "EIO"});
  }
  SECTION("every status register reads 0") {
    for (unsigned cpu : {0u, 1u}) tree.set(cpu, msr::kIntelPowerUnit, unit_register(3, 14, 10));
    tree.set(0, msr::kIntelPsysEnergy, 0);
    check_failure(tree.open(), "unsupported", {"reads 0"});
  }
  SECTION("a vendor without known registers") {
    tree.cpu("CentaurHauls", 7, 1);
    check_failure(tree.open(), "unsupported", {"CentaurHauls family 7 model 1"});
  }
}

TEST_CASE("msr: a root-only device is a permission problem with its remedy", "[rapl]") {
  MsrTree tree;
  tree.cpu("GenuineIntel", 6, 0x55);
  for (unsigned cpu : {0u, 1u}) {
    tree.set(cpu, msr::kIntelPowerUnit, unit_register(3, 14, 10));
    ::chmod((tree.dir.path() / ("dev/cpu/" + std::to_string(cpu) + "/msr")).c_str(), 0600);
  }
  const std::string report = probe_as_nobody(tree.dir, [&] { return tree.open(); });
  INFO(report);
  CHECK(report.rfind("permission_denied\n", 0) == 0);
  CHECK_THAT(report, Catch::Contains("EACCES"));
  CHECK_THAT(report, Catch::Contains("root"));
}
