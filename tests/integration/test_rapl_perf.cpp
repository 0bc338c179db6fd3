// The perf_event source. Event descriptions and scales are parsed as tables; the open-and-read
// path runs for real on this machine through a fixture PMU whose type is the software PMU
// (type 1) and whose energy events are cpu-clock (config 0): with a .scale of 1e-9 their
// "joules" are seconds, so how far they advance is known.
#include "tests/catch.hpp"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "collectors/rapl/perf_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::rapl;
using hwperf::perf::parse_perf_event;
using namespace hwperf::test::rapl_fixture;
using hwperf::test::TempDir;

namespace {

constexpr int kSoftwarePmuType = 1;  // PERF_TYPE_SOFTWARE
constexpr int kCpuClock = 0;         // PERF_COUNT_SW_CPU_CLOCK: nanoseconds
constexpr double kNanosecond = 1e-9;

// A `power` PMU description as the kernel writes it, but backed by the software PMU.
void write_software_power_pmu(const TempDir& dir, const std::string& pmu,
                              const std::string& cpumask,
                              const std::map<std::string, int>& events) {
  const std::string base = "sys/bus/event_source/devices/" + pmu + "/";
  dir.write(base + "type", std::to_string(kSoftwarePmuType) + "\n");
  if (!cpumask.empty()) dir.write(base + "cpumask", cpumask + "\n");
  dir.write(base + "format/event", "config:0-7\n");
  for (const auto& [name, config] : events) {
    char text[32];
    std::snprintf(text, sizeof text, "event=0x%02x\n", config);
    dir.write(base + "events/" + name, text);
    dir.write(base + "events/" + name + ".scale", "1e-09\n");
    dir.write(base + "events/" + name + ".unit", "Joules\n");
  }
}

std::string sysfs(const TempDir& dir) { return (dir.path() / "sys").string(); }
std::string procfs(const TempDir& dir) { return (dir.path() / "proc").string(); }

}  // namespace

TEST_CASE("perf event descriptions fill the bits their format files name", "[rapl]") {
  const std::map<std::string, std::string> formats = {{"event", "config:0-7"},
                                                      {"umask", "config:8-15"},
                                                      {"split", "config:0-3,8-11"},
                                                      {"any", "config:21"},
                                                      {"filter", "config1:0-15"}};
  struct Row {
    const char* text;
    std::uint64_t config;
    std::uint64_t config1;
  };
  const std::uint64_t event = 0x3c;
  const std::uint64_t umask = 0x01;
  const Row row = GENERATE_COPY(
      Row{"event=0x02", 0x02, 0}, Row{"event=0x3c,umask=0x1", event | (umask << 8), 0},
      Row{"event=2", 2, 0},
      // Low bits of the value go to the first range, the next bits to the second.
      Row{"split=0xab", 0xbull | (0xaull << 8), 0}, Row{"event=0x01,any", 0x01 | (1ull << 21), 0},
      Row{"event=0x01,filter=0xbeef", 0x01, 0xbeef});
  CAPTURE(row.text);
  const auto parsed = parse_perf_event(row.text, formats);
  CHECK(parsed.config == row.config);
  CHECK(parsed.config1 == row.config1);
  CHECK(parsed.config2 == 0);
}

TEST_CASE("perf event descriptions that cannot be honoured are refused", "[rapl]") {
  const std::map<std::string, std::string> formats = {{"event", "config:0-7"},
                                                      {"odd", "config5:0-3"}};
  const char* text = GENERATE("event=0x100", "umask=0x1", "event=zz", "", "odd=1");
  CAPTURE(text);
  CHECK_THROWS_AS(parse_perf_event(text, formats), std::invalid_argument);
}

TEST_CASE("perf scales become whole counts per joule", "[rapl]") {
  struct Row {
    const char* text;
    std::optional<std::uint64_t> expected;
  };
  const Row row =
      GENERATE(Row{"2.3283064365386962890625e-10", std::uint64_t{1} << 32},  // the kernel's 2^-32 J
               Row{"6.103515625e-05\n", std::uint64_t{1} << 14},
               Row{"1e-09", std::uint64_t{1000000000}}, Row{"1", std::uint64_t{1}},
               Row{"0.3", std::nullopt},  // 1/0.3 is not whole: the total could not stay exact
               Row{"0", std::nullopt}, Row{"-1e-9", std::nullopt}, Row{"2", std::nullopt},
               Row{"1e-30", std::nullopt}, Row{"abc", std::nullopt}, Row{"1e-9x", std::nullopt});
  CAPTURE(row.text);
  CHECK(counts_per_joule_from_scale(row.text) == row.expected);
}

TEST_CASE("perf opens one event per package and domain on a CPU of that package",
          "[rapl][kernel_perf]") {
  TempDir dir;
  write_software_power_pmu(dir, "power", "0-1",
                           {{"energy-pkg", kCpuClock}, {"energy-ram", kCpuClock}});
  auto probe = open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), DomainSet::all());
  INFO(probe.message);
  REQUIRE(probe.source != nullptr);
  const EnergySource& source = *probe.source;
  CHECK(source.interface() == RaplInterface::perf);
  REQUIRE(source.counters().size() == 4);
  std::map<std::pair<Domain, unsigned>, std::string> where;
  for (const auto& info : source.counters()) {
    REQUIRE(info.package.has_value());
    CHECK_FALSE(info.die.has_value());
    CHECK(info.scale.rule == WrapRule::modulo_2_64);
    CHECK(info.scale.counts_per_joule == static_cast<std::uint64_t>(1 / kNanosecond + 0.5));
    where[{info.domain, *info.package}] = info.source;
  }
  // two_package_topology puts cpu N in package N.
  CHECK(where.at({Domain::package, 0}) == "power/energy-pkg on cpu 0");
  CHECK(where.at({Domain::package, 1}) == "power/energy-pkg on cpu 1");
  CHECK(where.at({Domain::dram, 1}) == "power/energy-ram on cpu 1");
}

TEST_CASE("perf readings advance through the real perf_event_open path", "[rapl][kernel_perf]") {
  TempDir dir;
  write_software_power_pmu(dir, "power", "0-1", {{"energy-pkg", kCpuClock}});
  auto probe = open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), DomainSet::all());
  INFO(probe.message);
  REQUIRE(probe.source != nullptr);
  const auto count = probe.source->counters().size();
  RaplEngine engine(std::move(probe.source), std::vector<double>(count, 1000.0));
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto series = engine.snapshot();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE(series.size() == 2);
  for (const auto& s : series) {
    CAPTURE(*s.key.package, s.tally.energy.joules(), elapsed.count());
    // cpu-clock counts the CPU's wall time: the "joules" since the baseline are the seconds
    // between the engine's first read and the snapshot, which lie inside `elapsed`.
    CHECK(s.tally.energy.joules() > 0.5 * elapsed.count());
    CHECK(s.tally.energy.joules() <= elapsed.count() + 0.01);
    CHECK(s.tally.rejected == 0);
    CHECK(s.tally.read_errors == 0);
  }
}

TEST_CASE("perf: a PMU counting per die gives each die its counter", "[rapl][kernel_perf]") {
  TempDir dir;
  write_software_power_pmu(dir, "power", "0-1", {{"energy-pkg", kCpuClock}});
  // One package whose two CPUs sit on two dies, as the topology reports them (hwloc reads
  // die_id; the topology tests check that part).
  const Topology one_package({{0, 0, 0, 0, 0}, {1, 1, 0, 0, 1}}, {}, "test: 1 package, 2 dies");
  auto probe = open_perf_source(sysfs(dir), procfs(dir), one_package, DomainSet::all());
  REQUIRE(probe.source != nullptr);
  REQUIRE(probe.source->counters().size() == 2);
  std::set<unsigned> dies;
  for (const auto& info : probe.source->counters()) {
    CHECK(info.package == 0u);
    REQUIRE(info.die.has_value());
    dies.insert(*info.die);
  }
  CHECK(dies == std::set<unsigned>{0, 1});
}

TEST_CASE("perf on AMD and Hygon counts package energy once per socket, not once per CCD",
          "[rapl][kernel_perf]") {
  // A 2024 kernel scoping the power PMU per die: its cpumask names one CPU in each of the
  // package's two dies (CCDs), and each die's event counts the whole socket.
  for (const auto& [vendor, family] :
       {std::pair<std::string, unsigned>{"AuthenticAMD", 25}, {"HygonGenuine", 24}}) {
    CAPTURE(vendor);
    TempDir dir;
    write_software_power_pmu(dir, "power", "0-1", {{"energy-pkg", kCpuClock}});
    dir.write("proc/cpuinfo", cpuinfo(vendor, family, 17));
    const Topology one_package({{0, 0, 0, 0, 0}, {1, 1, 0, 0, 1}}, {}, "test: 1 package, 2 CCDs",
                               read_cpu_identity(procfs(dir)));
    auto probe = open_perf_source(sysfs(dir), procfs(dir), one_package, DomainSet::all());
    REQUIRE(probe.source != nullptr);
    REQUIRE(probe.source->counters().size() == one_package.packages().size());
    const CounterInfo& info = probe.source->counters().front();
    CHECK(info.package == 0u);
    CHECK_FALSE(info.die.has_value());
  }
}

TEST_CASE("perf: AMD's power_core PMU gives core energy per core", "[rapl][kernel_perf]") {
  TempDir dir;
  write_software_power_pmu(dir, "power", "0", {{"energy-pkg", kCpuClock}});
  write_software_power_pmu(dir, "power_core", "0-1", {{"energy-core", kCpuClock}});
  const Topology cores({{0, 0, 0, 0}, {1, 1, 0, 0}}, {}, "test: 1 package x 2 cores");
  auto probe = open_perf_source(sysfs(dir), procfs(dir), cores, DomainSet::all());
  REQUIRE(probe.source != nullptr);
  std::size_t core_counters = 0;
  for (const auto& info : probe.source->counters()) {
    if (info.domain != Domain::core) continue;
    ++core_counters;
    CHECK(info.package == 0u);
    CHECK_THAT(info.source, Catch::StartsWith("power_core/energy-core"));
  }
  CHECK(core_counters == cores.threads().size());
}

TEST_CASE("perf failure states name the cause and the remedy", "[rapl]") {
  TempDir dir;
  dir.write("sys/.keep", "");
  SECTION("no power PMU") {
    auto probe =
        open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), DomainSet::all());
    CHECK(probe.source == nullptr);
    CHECK(probe.interface == RaplInterface::perf);
    CHECK(probe.reason == "absent");
    CHECK_THAT(probe.message, Catch::Contains("devices/power/type"));
    CHECK_THAT(probe.message, Catch::Contains("ENOENT"));
  }
  SECTION("a power PMU without energy events (this VM)") {
    dir.write("sys/bus/event_source/devices/power/type", "9\n");
    dir.write("sys/bus/event_source/devices/power/format/event", "config:0-7\n");
    dir.write("sys/bus/event_source/devices/power/cpumask", "0\n");
    auto probe =
        open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), DomainSet::all());
    CHECK(probe.reason == "unsupported");
    CHECK_THAT(probe.message, Catch::Contains("no usable energy-* event"));
  }
  SECTION("an event the kernel does not know") {
    write_software_power_pmu(dir, "power", "0", {{"energy-pkg", 0x7f}});
    auto probe =
        open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), DomainSet::all());
    CHECK(probe.source == nullptr);
    CHECK(probe.reason == "unsupported");
    CHECK_THAT(probe.message, Catch::Contains("perf_event_open(power/energy-pkg, cpu 0)"));
  }
  SECTION("domains filtered away") {
    write_software_power_pmu(dir, "power", "0", {{"energy-pkg", kCpuClock}});
    DomainSet wanted = DomainSet::none();
    wanted.insert(Domain::dram);
    auto probe = open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), wanted);
    CHECK(probe.source == nullptr);
  }
}

TEST_CASE("perf: not permitted is a permission problem naming paranoid and CAP_PERFMON",
          "[rapl][kernel_perf]") {
  // What nobody may do follows from this machine's setting: at <= 0 an unprivileged CPU-wide
  // event is allowed, above it is refused. Each case has its own assertions.
  const auto real_paranoid = hwperf::test::read_file("/proc/sys/kernel/perf_event_paranoid");
  const bool unprivileged_allowed = std::stoi(real_paranoid) <= 0;
  TempDir dir;
  write_software_power_pmu(dir, "power", "0", {{"energy-pkg", kCpuClock}});
  dir.write("proc/sys/kernel/perf_event_paranoid", real_paranoid);
  const std::string report = probe_as_nobody(dir, [&] {
    return open_perf_source(sysfs(dir), procfs(dir), two_package_topology(), DomainSet::all());
  });
  INFO(report);
  if (unprivileged_allowed) {
    CHECK(report.rfind("source\n", 0) == 0);
    return;
  }
  CHECK(report.rfind("permission_denied\n", 0) == 0);
  CHECK_THAT(report, Catch::Contains("perf_event_paranoid"));
  CHECK_THAT(report,
             Catch::Contains("(it is " + std::string(hwperf::trim(real_paranoid)) + " here)"));
  CHECK_THAT(report, Catch::Contains("sysctl kernel.perf_event_paranoid=0"));
  CHECK_THAT(report, Catch::Contains("CAP_PERFMON"));
}
