// The PAPI collector against this machine's real PAPI and kernel.
//
// [papi][live] tests count perf's software events, which every Linux kernel with perf_event has,
// so they run everywhere CI does (as root, or with kernel.perf_event_paranoid <= 0); where that
// is not given they FAIL saying so rather than skip. Where a behaviour depends on whether the
// machine has a hardware PMU (this project's CI VM has none), each branch asserts what must
// happen on that kind of machine.
//
// [.hardware] tests need a real PMU and are hidden; run them on a physical machine with
//   sudo ./build/tests/hwperf_tests "[.hardware]"
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/cpu_list.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/papi/papi_events.h"
#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_source.h"
#include "config/errors.h"
#include "exporter/exposition.h"
#include "tests/support.h"
#include "topology/topology.h"

using namespace hwperf;
using test::find_samples;
using test::parse_exposition;
using test::Sample;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

int perf_event_paranoid() {
  std::ifstream file("/proc/sys/kernel/perf_event_paranoid");
  int value = 3;
  file >> value;
  return value;
}

// System-wide counting needs root/CAP_PERFMON or perf_event_paranoid <= 0. A test that silently
// skipped here would hide a broken CI setup, so it fails with the remedy instead.
void require_system_wide_perf() {
  if (!fs::exists("/sys/bus/event_source/devices/software")) {
    FAIL(
        "this kernel has no perf_event software PMU (/sys/bus/event_source/devices/software); "
        "the live PAPI tests need perf_event");
  }
  if (geteuid() != 0 && perf_event_paranoid() > 0) {
    FAIL(
        "the live PAPI tests count every process on each CPU: run them as root, or set "
        "`sysctl kernel.perf_event_paranoid=0` (it is "
        << perf_event_paranoid() << "), or grant CAP_PERFMON");
  }
}

// Whether the kernel exposes a hardware PMU for CPU events (absent in VMs without passthrough).
bool has_hardware_pmu() {
  const fs::path devices = "/sys/bus/event_source/devices";
  for (const char* name : {"cpu", "cpu_core", "cpu_atom"}) {
    if (fs::exists(devices / name)) return true;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(devices, ec)) {
    if (entry.path().filename().string().rfind("armv", 0) == 0) return true;
  }
  return false;
}

Topology live_topology() { return Topology::load(TopologyConfig{}); }

PapiEventConfig event(const std::string& name, int line = 0) {
  PapiEventConfig e;
  e.event = name;
  e.mark = {"live.yml", line, 7};
  return e;
}

PapiCollectorConfig config_for(const std::vector<std::string>& events, const std::string& cpus) {
  PapiCollectorConfig config;
  if (cpus != "all") config.cpus = {false, parse_cpu_list(cpus), {"live.yml", 3, 9}};
  config.events_given = true;
  int line = 5;
  for (const auto& name : events) config.events.push_back(event(name, line++));
  return config;
}

std::vector<Sample> scrape(Collector& collector) {
  std::vector<prometheus::MetricFamily> families;
  collector.collect(families);
  return parse_exposition(serialize(families, ExpositionFormat::text_0_0_4));
}

double value_on(const std::vector<Sample>& samples, const std::string& name, unsigned cpu) {
  const auto found = find_samples(samples, name, {{"cpu", std::to_string(cpu)}});
  if (found.size() != 1) FAIL("expected one " << name << " sample for CPU " << cpu);
  return found.front().value;
}

// Runs `work` on a thread pinned to `cpu` and returns what went wrong ("" when nothing did).
// Only that thread is pinned: the test process keeps its own affinity, so the tests that run after
// this one are not confined to one CPU.
std::string run_pinned(unsigned cpu, const std::function<std::string()>& work) {
  std::string problem;
  std::thread worker([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
      problem = "cannot pin a thread to CPU " + std::to_string(cpu);
      return;
    }
    sched_yield();  // let the scheduler move it before the work starts
    problem = work();
  });
  worker.join();
  return problem;
}

// Page faults taken on `cpu`: a thread pinned there maps `bytes` of fresh anonymous memory and
// writes one byte per page, in small pages so that each page is one fault. A thread rather than
// a forked `taskset -c 1` child: fork would make this (large, multi-threaded) test process take
// copy-on-write faults on its own CPU, which is noise in what CPU 0 sees.
std::size_t fault_pages_on_cpu(unsigned cpu, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::string problem = run_pinned(cpu, [&]() -> std::string {
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return "mmap of " + std::to_string(bytes) + " bytes failed";
    madvise(memory, bytes, MADV_NOHUGEPAGE);
    auto* data = static_cast<volatile unsigned char*>(memory);
    for (std::size_t offset = 0; offset < bytes; offset += page) data[offset] = 1;
    munmap(memory, bytes);
    return "";
  });
  if (!problem.empty()) FAIL(problem);
  return bytes / page;
}

// Runs `iterations` of a loop of a few instructions each on a worker thread pinned to `cpu` and
// returns how long it took.
double busy_on_cpu(unsigned cpu, std::uint64_t iterations) {
  double seconds = 0;
  const std::string problem = run_pinned(cpu, [&]() -> std::string {
    const auto start = Clock::now();
    volatile std::uint64_t sink = 0;
    for (std::uint64_t i = 0; i < iterations; ++i) sink = sink + i;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return "";
  });
  if (!problem.empty()) FAIL(problem);
  return seconds;
}

// Two scrapes with a pause between them. The reads happened within [t0, t1] and [t2, t3], so a
// clock counted between them advanced by at least t2 - t1 (shortest) and at most t3 - t0
// (longest) seconds.
struct ScrapesApart {
  std::vector<Sample> first;
  std::vector<Sample> second;
  double shortest = 0;
  double longest = 0;
};

ScrapesApart scrape_twice(Collector& collector, std::chrono::milliseconds pause) {
  ScrapesApart result;
  const auto t0 = Clock::now();
  result.first = scrape(collector);
  const auto t1 = Clock::now();
  std::this_thread::sleep_for(pause);
  const auto t2 = Clock::now();
  result.second = scrape(collector);
  const auto t3 = Clock::now();
  result.shortest = std::chrono::duration<double>(t2 - t1).count();
  result.longest = std::chrono::duration<double>(t3 - t0).count();
  return result;
}

}  // namespace

TEST_CASE("CPU-CLOCK advances by wall time on every CPU, and page faults land on their CPU",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  auto collector =
      make_papi_collector(config_for({"perf::CPU-CLOCK", "perf::PAGE-FAULTS"}, "all"), topology);

  // Each CPU's clock advances with wall time (2% for timer granularity).
  const auto [first, second, shortest, longest] =
      scrape_twice(*collector, std::chrono::milliseconds(1000));
  for (unsigned cpu : topology.cpus()) {
    CAPTURE(cpu, shortest, longest);
    const double advanced = value_on(second, "hwperf_cpu_cpu_clock_seconds_total", cpu) -
                            value_on(first, "hwperf_cpu_cpu_clock_seconds_total", cpu);
    CHECK(advanced >= 0.98 * shortest);
    CHECK(advanced <= 1.02 * longest);
  }

  const auto before = scrape(*collector);
  const std::size_t pages = fault_pages_on_cpu(1, 200u << 20);
  const auto after = scrape(*collector);
  const double on_cpu1 = value_on(after, "hwperf_cpu_page_faults_total", 1) -
                         value_on(before, "hwperf_cpu_page_faults_total", 1);
  const double on_cpu0 = value_on(after, "hwperf_cpu_page_faults_total", 0) -
                         value_on(before, "hwperf_cpu_page_faults_total", 0);
  CAPTURE(pages, on_cpu1, on_cpu0);
  // Every first touch of a page faults on CPU 1. CPU 0 sees only what else ran meanwhile (on a
  // shared CI host other processes fault too: a few thousand here), far fewer than the pages.
  CHECK(on_cpu1 >= 0.95 * static_cast<double>(pages));
  CHECK(on_cpu0 < 0.5 * static_cast<double>(pages));
}

TEST_CASE("package granularity sums CPU-CLOCK over each package's CPUs", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  auto config = config_for({"perf::CPU-CLOCK"}, "all");
  config.granularity = Granularity::package;
  auto collector = make_papi_collector(config, topology);

  const auto [first, second, shortest, longest] =
      scrape_twice(*collector, std::chrono::milliseconds(500));
  const auto packages = topology.packages();
  CHECK(find_samples(second, "hwperf_package_cpu_clock_seconds_total").size() == packages.size());
  for (unsigned package : packages) {
    const std::map<std::string, std::string> labels = {{"package", std::to_string(package)}};
    const auto before = find_samples(first, "hwperf_package_cpu_clock_seconds_total", labels);
    const auto after = find_samples(second, "hwperf_package_cpu_clock_seconds_total", labels);
    REQUIRE(before.size() == 1);
    REQUIRE(after.size() == 1);
    // Each CPU's clock advances with wall time, so the package's sum by that times its CPUs.
    const auto cpus = static_cast<double>(topology.cpus_of_package(package).size());
    CAPTURE(package, cpus, shortest, longest);
    CHECK(after[0].value - before[0].value >= 0.98 * cpus * shortest);
    CHECK(after[0].value - before[0].value <= 1.02 * cpus * longest);
  }
}

TEST_CASE("the counting domain is applied: user-mode faults count in user, not kernel",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  // Two collectors at once: only qualifier sets can coexist on one CPU (PAPI runs one attached
  // set per CPU per process).
  auto user_config = config_for({"perf::PAGE-FAULTS"}, "1");
  user_config.attach = PapiAttachMode::qualifier;
  user_config.domain = CountingDomain::user;
  auto kernel_config = user_config;
  kernel_config.domain = CountingDomain::kernel;
  auto user = make_papi_collector(user_config, topology);
  auto kernel = make_papi_collector(kernel_config, topology);

  const auto user_before = scrape(*user);
  const auto kernel_before = scrape(*kernel);
  const std::size_t pages = fault_pages_on_cpu(1, 200u << 20);
  const double user_faults = value_on(scrape(*user), "hwperf_cpu_page_faults_total", 1) -
                             value_on(user_before, "hwperf_cpu_page_faults_total", 1);
  const double kernel_faults = value_on(scrape(*kernel), "hwperf_cpu_page_faults_total", 1) -
                               value_on(kernel_before, "hwperf_cpu_page_faults_total", 1);
  CAPTURE(pages, user_faults, kernel_faults);
  CHECK(user_faults >= 0.95 * static_cast<double>(pages));
  // Other processes' kernel-mode faults on CPU 1 are the only ones the kernel domain may see.
  CHECK(kernel_faults < 0.5 * static_cast<double>(pages));
}

TEST_CASE("auto binding: CPU attach with a hardware PMU, per-CPU qualifiers without",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  const std::vector<std::string> events = {"perf::CPU-CLOCK", "perf::PAGE-FAULTS",
                                           "perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS"};
  auto collector = make_papi_collector(config_for(events, "0-1"), topology);
  const auto samples = scrape(*collector);

  const std::string expected = has_hardware_pmu() ? "cpu_attach" : "qualifier";
  const auto sets = find_samples(samples, "hwperf_papi_event_set_events");
  REQUIRE(sets.size() >= 2);
  double counted = 0;
  for (const auto& set : sets) {
    CHECK(set.labels.at("binding") == expected);
    counted += set.value;
  }
  CHECK(counted == static_cast<double>(events.size() * 2));
  CHECK(find_samples(samples, "hwperf_papi_event_dropped").empty());

  // The figure the issue asks about (2 CPUs x 4 events); printed, not asserted: timing belongs
  // to benchmarks, not to tests on a shared machine.
  constexpr int kScrapes = 200;
  const auto start = Clock::now();
  for (int i = 0; i < kScrapes; ++i) {
    std::vector<prometheus::MetricFamily> families;
    collector->collect(families);
  }
  const double micros =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kScrapes;
  WARN("papi collect() of 2 CPUs x 4 events: " << micros << " us per scrape");
}

TEST_CASE("unknown events are configuration errors, all listed at once", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  std::vector<std::string> problems;
  try {
    make_papi_collector(
        config_for({"perf::CPU-CLOCK", "perf::NO-SUCH-EVENT", "PAPI_NO_SUCH"}, "all"), topology);
  } catch (const ConfigError& e) {
    problems = e.problems();
  }
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains("perf::NO-SUCH-EVENT") &&
                              Catch::Contains("live.yml:6:7") && Catch::Contains("papi_avail") &&
                              Catch::Contains("papi_native_avail"));
  CHECK_THAT(problems[1], Catch::Contains("PAPI_NO_SUCH") && Catch::Contains("live.yml:7:7"));
}

TEST_CASE("an event PAPI knows but cannot count here is dropped, visibly", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  auto collector =
      make_papi_collector(config_for({"PAPI_TOT_INS", "perf::CPU-CLOCK"}, "all"), topology);
  const auto samples = scrape(*collector);
  CHECK(find_samples(samples, "hwperf_cpu_cpu_clock_seconds_total").size() ==
        topology.cpus().size());
  const auto dropped =
      find_samples(samples, "hwperf_papi_event_dropped", {{"event", "PAPI_TOT_INS"}});
  if (has_hardware_pmu()) {
    CHECK(dropped.empty());
    CHECK(find_samples(samples, "hwperf_cpu_instructions_total").size() == topology.cpus().size());
  } else {
    CHECK(dropped.size() == topology.cpus().size());
    for (const auto& sample : dropped) CHECK_FALSE(sample.labels.at("reason").empty());
    CHECK(find_samples(samples, "hwperf_cpu_instructions_total").empty());
  }
}

TEST_CASE("when none of the named events can be counted, startup fails with the remedy",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  const auto config = config_for({"PAPI_TOT_INS", "PAPI_TOT_CYC"}, "all");
  if (has_hardware_pmu()) {
    CHECK_NOTHROW(make_papi_collector(config, topology));
  } else {
    CHECK_THROWS_WITH(make_papi_collector(config, topology), Catch::Contains("PAPI_TOT_INS") &&
                                                                 Catch::Contains("PAPI_TOT_CYC") &&
                                                                 Catch::Contains("papi_avail"));
  }
}

TEST_CASE("the default event set is best effort and counts something here", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  PapiCollectorConfig config;  // no events: the defaults
  auto collector = make_papi_collector(config, topology);
  const auto samples = scrape(*collector);
  // The scheduler's software events need no PMU.
  CHECK(find_samples(samples, "hwperf_cpu_context_switches_total").size() ==
        topology.cpus().size());
  if (!has_hardware_pmu()) {
    CHECK_FALSE(find_samples(samples, "hwperf_papi_event_dropped").empty());
  }
}

TEST_CASE("the check-config report says per event whether it can be counted", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  const auto lines =
      papi_check_report(config_for({"perf::CPU-CLOCK", "PAPI_TOT_INS"}, "all"), topology);
  auto line_of = [&](const std::string& event) {
    const auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.rfind(event + " ->", 0) == 0;
    });
    return it == lines.end() ? std::string() : *it;
  };
  CHECK_THAT(line_of("perf::CPU-CLOCK"), Catch::Contains("hwperf_cpu_cpu_clock_seconds_total") &&
                                             Catch::Contains("countable on CPUs"));
  if (has_hardware_pmu()) {
    CHECK_THAT(line_of("PAPI_TOT_INS"), Catch::Contains("countable on CPUs"));
  } else {
    CHECK_THAT(line_of("PAPI_TOT_INS"),
               Catch::Contains("NOT countable") && Catch::Contains("Event does not exist"));
  }
}

TEST_CASE("a source with hundreds of qualifier sets is torn down within a second",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  // Each CPU entry gets its own qualifier set and owner thread, so listing this machine's CPUs
  // over and over stands in for a large machine (256 CPUs, one qualifier set each).
  constexpr std::size_t kSets = 256;
  papi::OpenRequest request;
  request.events = {"perf::CPU-CLOCK", "perf::CONTEXT-SWITCHES"};
  request.attach = PapiAttachMode::qualifier;
  while (request.cpus.size() < kSets) {
    for (unsigned cpu : topology.cpus()) request.cpus.push_back(cpu);
  }
  papi::init_library(PathsConfig{}.procfs);
  auto source = papi::open_papi_source(request);
  REQUIRE(source->layout().dropped.empty());
  REQUIRE(source->layout().event_sets.size() == request.cpus.size());
  std::vector<std::uint64_t> values(source->layout().counters.size());
  source->read(values);

  // What SIGTERM does to the collector: every owner stops, cleans up and destroys its set.
  const auto start = Clock::now();
  source.reset();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CAPTURE(request.cpus.size(), seconds);
  CHECK(seconds < 1.0);
}

TEST_CASE("the PAPI version reported is that of the libpapi loaded at runtime", "[papi]") {
  const std::string version = papi_library_version();
  CHECK_THAT(version, Catch::Matches("[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+"));
  // papi_avail (papi-tools, see scripts/deps.sh) prints the version of the same shared libpapi.
  FILE* pipe = popen("papi_avail 2>/dev/null", "r");
  REQUIRE(pipe != nullptr);
  std::string reported;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) {
    const std::string line = buffer;
    if (line.rfind("PAPI version", 0) == 0 && line.find(':') != std::string::npos) {
      reported = line.substr(line.find(':') + 1);
      reported.erase(0, reported.find_first_not_of(" \t"));
      reported.erase(reported.find_last_not_of(" \t\r\n") + 1);
    }
  }
  pclose(pipe);
  if (reported.empty()) FAIL("papi_avail printed no \"PAPI version\" line: install papi-tools");
  CHECK(version == reported);
}

// ---- The exporter binary ---------------------------------------------------------------------

namespace {

std::string live_config_yaml(const std::string& events_yaml) {
  return "collectors:\n"
         "  rapl:\n"
         "    enabled: false\n"
         "  papi:\n"
         "    events:\n" +
         events_yaml;
}

}  // namespace

TEST_CASE("the binary exits 2 naming an unknown event", "[papi][e2e]") {
  test::TempDir dir;
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::CPU-CLOCK\n"
                                                             "      - perf::NO-SUCH-EVENT\n"));
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--once"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains("perf::NO-SUCH-EVENT") &&
                             Catch::Contains(path.string() + ":7:") &&
                             Catch::Contains("papi_avail"));
}

TEST_CASE("the binary starts with an event it cannot count here, and says why", "[papi][e2e]") {
  require_system_wide_perf();
  test::TempDir dir;
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::CPU-CLOCK\n"
                                                             "      - PAPI_TOT_INS\n"));
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--once"});
  REQUIRE(result.exit_code == 0);
  const auto samples = parse_exposition(result.out);
  CHECK_FALSE(find_samples(samples, "hwperf_cpu_cpu_clock_seconds_total").empty());
  if (has_hardware_pmu()) {
    CHECK_FALSE(find_samples(samples, "hwperf_cpu_instructions_total").empty());
  } else {
    CHECK_THAT(result.err,
               Catch::Contains("PAPI_TOT_INS") && Catch::Contains("Event does not exist"));
    CHECK_FALSE(
        find_samples(samples, "hwperf_papi_event_dropped", {{"event", "PAPI_TOT_INS"}}).empty());
  }
}

TEST_CASE("the binary's --check-config reports per event whether PAPI can count it",
          "[papi][e2e]") {
  require_system_wide_perf();
  test::TempDir dir;
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::PAGE-FAULTS\n"));
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--check-config"});
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::Contains("perf::PAGE-FAULTS -> hwperf_cpu_page_faults_total: "
                                         "countable on CPUs"));
}

TEST_CASE("without permission to count, the error names perf_event_paranoid and the remedies",
          "[papi][e2e]") {
  if (geteuid() != 0) FAIL("this test drops to user nobody with setpriv and must run as root");
  if (std::system("command -v setpriv >/dev/null 2>&1") != 0) {
    FAIL("this test needs setpriv (util-linux) to run the exporter as user nobody");
  }
  test::TempDir dir;
  // The unprivileged exporter must be able to read its configuration.
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::CPU-CLOCK\n"));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::others_read);
  // The remedy must quote perf_event_paranoid from --path.procfs (where a container mounts the
  // host's /proc), so the fixture holds a value this host's /proc does not.
  const std::string fixture_level = std::to_string(perf_event_paranoid() + 1);
  dir.write("procfs/sys/kernel/perf_event_paranoid", fixture_level + "\n");
  const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups " +
                              test::exporter_binary() + " --config.file=" + path.string() +
                              " --path.procfs=" + (dir.path() / "procfs").string() +
                              " --once 2>&1 >/dev/null";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  REQUIRE(WIFEXITED(status));
  CAPTURE(output);
  if (perf_event_paranoid() > 0) {
    CHECK(WEXITSTATUS(status) == 1);
    CHECK_THAT(output, Catch::Contains("perf::CPU-CLOCK") &&
                           Catch::Contains("kernel.perf_event_paranoid") &&
                           Catch::Contains("(it is " + fixture_level + " here)") &&
                           Catch::Contains("CAP_PERFMON") && Catch::Contains("--privileged") &&
                           Catch::Contains("seccomp"));
  } else {
    CHECK(WEXITSTATUS(status) == 0);  // paranoid <= 0 lets anyone count system-wide
  }
}

// ---- Real PMU only ---------------------------------------------------------------------------

TEST_CASE("PAPI_TOT_INS and PAPI_TOT_CYC count on a real PMU", "[.hardware]") {
  require_system_wide_perf();
  if (!has_hardware_pmu()) FAIL("no hardware PMU here (/sys/bus/event_source/devices/cpu)");
  const Topology topology = live_topology();
  auto collector = make_papi_collector(config_for({"PAPI_TOT_INS", "PAPI_TOT_CYC"}, "0"), topology);

  const auto before = scrape(*collector);
  // At least one instruction per iteration (an add and a compare-and-branch, kept by volatile).
  constexpr std::uint64_t kIterations = 200000000;
  const double seconds = busy_on_cpu(0, kIterations);
  const auto after = scrape(*collector);

  const double instructions = value_on(after, "hwperf_cpu_instructions_total", 0) -
                              value_on(before, "hwperf_cpu_instructions_total", 0);
  const double cycles = value_on(after, "hwperf_cpu_cycles_total", 0) -
                        value_on(before, "hwperf_cpu_cycles_total", 0);
  CAPTURE(instructions, cycles, seconds);
  CHECK(instructions >= static_cast<double>(kIterations));
  CHECK(cycles > 0);
  CHECK(cycles <= seconds * 10e9);  // no CPU runs at 10 GHz
  for (const auto& sample : find_samples(after, "hwperf_papi_event_set_events")) {
    CHECK(sample.labels.at("binding") == "cpu_attach");
  }
}

TEST_CASE("more hardware events than counters are multiplexed and every one is counted",
          "[.hardware]") {
  if (!has_hardware_pmu()) {
    FAIL("no hardware PMU here (/sys/bus/event_source/devices/cpu): this test overflows the PMU's "
         "counters to make PAPI multiplex; run it on a physical machine or a VM with PMU "
         "passthrough");
  }
  require_system_wide_perf();
  const Topology topology = live_topology();
  // Presets most x86 PMUs (Intel and AMD) can count. A core has 2-8 general-purpose counters
  // (one may be taken by the NMI watchdog) plus a few fixed ones, and several of these presets are
  // derived from two native events, so a dozen of them never fit at once.
  const char* candidates[] = {
      "PAPI_TOT_INS", "PAPI_TOT_CYC", "PAPI_REF_CYC", "PAPI_BR_INS", "PAPI_BR_MSP",
      "PAPI_BR_CN",   "PAPI_BR_TKN",  "PAPI_BR_NTK",  "PAPI_L1_DCM", "PAPI_L1_ICM",
      "PAPI_L2_DCM",  "PAPI_L2_ICM",  "PAPI_L2_TCM",  "PAPI_L2_DCA", "PAPI_L3_TCM",
      "PAPI_LD_INS",  "PAPI_SR_INS",  "PAPI_TLB_DM",  "PAPI_TLB_IM", "PAPI_RES_STL"};
  constexpr std::size_t kNeeded = 12;
  papi::init_library(PathsConfig{}.procfs);
  std::vector<std::string> events;
  std::string unavailable;
  for (const char* name : candidates) {
    if (papi::lookup_event(name).available) {
      events.push_back(name);
    } else {
      unavailable += std::string(unavailable.empty() ? "" : ", ") + name;
    }
  }
  if (events.size() < kNeeded) {
    FAIL("only " << events.size() << " of the candidate presets are available on this PMU "
                 << "(PAPI_query_named_event; not available: " << unavailable << "); this test "
                 << "needs " << kNeeded << " to overflow the hardware counters");
  }
  auto collector = make_papi_collector(config_for(events, "0"), topology);

  const auto first = scrape(*collector);
  constexpr std::uint64_t kIterations = 100000000;
  busy_on_cpu(0, kIterations);
  const auto second = scrape(*collector);

  for (const auto& drop : find_samples(second, "hwperf_papi_event_dropped")) {
    CAPTURE(drop.labels.at("event"), drop.labels.at("reason"));
    FAIL_CHECK("an event was dropped instead of multiplexed");
  }
  bool multiplexed = false;
  for (const auto& set : find_samples(second, "hwperf_papi_event_set_multiplexed")) {
    multiplexed = multiplexed || set.value == 1.0;
  }
  CHECK(multiplexed);
  for (const auto& event : events) {
    const std::string family = "hwperf_cpu_" + papi::default_metric_base(event) + "_total";
    CAPTURE(event, family);
    const auto before = find_samples(first, family, {{"cpu", "0"}});
    const auto after = find_samples(second, family, {{"cpu", "0"}});
    REQUIRE(before.size() == 1);  // counted: a series on CPU 0
    REQUIRE(after.size() == 1);
    CHECK(after[0].value >= before[0].value);  // scaled estimates, but never going back
  }
  // Scaled, but an estimate of the loop's instructions (at least one per iteration) on CPU 0.
  if (std::find(events.begin(), events.end(), "PAPI_TOT_INS") == events.end()) return;
  const double instructions = value_on(second, "hwperf_cpu_instructions_total", 0) -
                              value_on(first, "hwperf_cpu_instructions_total", 0);
  CAPTURE(instructions);
  CHECK(instructions >= 0.5 * static_cast<double>(kIterations));
}
