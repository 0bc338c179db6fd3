// The uncore collector on this machine's own msr PMU (present on every x86 kernel with
// CONFIG_PERF_EVENTS_MSR, VMs included): tsc counted for real through perf_event_open, its rate
// against the TSC frequency the kernel reports, and aperf/mperf reported as what sysfs says.
#include "tests/catch.hpp"

#include <time.h>

#include <chrono>
#include <cmath>
#include <map>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "collectors/uncore/counter_backend.h"
#include "collectors/uncore/uncore_collector.h"
#include "collectors/uncore/uncore_plan.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test;

namespace {

double monotonic_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// The number after `key` up to " MHz" in the last line of `text` that holds it.
std::optional<double> last_mhz_after(const std::string& text, const std::string& key) {
  std::optional<double> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(key);
    if (at == std::string::npos) continue;
    try {
      found = std::stod(line.substr(at + key.size()));
    } catch (const std::exception&) {
    }
  }
  return found;
}

// The TSC frequency as the kernel states it, and where it was read. In order:
// 1. /sys/devices/system/cpu/cpu0/tsc_freq_khz (some distribution kernels add it);
// 2. the kernel log: arch/x86/kernel/tsc.c prints "tsc: Refined TSC clocksource calibration:
//    X MHz" when it recalibrates, else "tsc: Detected X MHz processor" (tsc_khz at boot); the
//    log can have rotated out on a long-running host, hence
// 3. /proc/cpuinfo "cpu MHz" on a CPU without the aperfmperf flag: arch/x86/kernel/cpu/proc.c
//    prints cpu_khz there, which tsc.c sets from the same calibration (with aperfmperf it prints
//    the current clock instead, which is no reference).
std::pair<std::optional<double>, std::string> kernel_tsc_hz() {
  std::ifstream khz("/sys/devices/system/cpu/cpu0/tsc_freq_khz");
  double value = 0;
  if (khz >> value && value > 0) return {value * 1e3, "tsc_freq_khz"};
  std::string log;
  if (FILE* pipe = popen("dmesg 2>/dev/null", "r")) {
    char buffer[4096];
    for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) log.append(buffer, n);
    pclose(pipe);
  }
  if (auto mhz = last_mhz_after(log, "Refined TSC clocksource calibration: ")) {
    return {*mhz * 1e6, "kernel log (refined calibration)"};
  }
  if (auto mhz = last_mhz_after(log, "tsc: Detected ")) return {*mhz * 1e6, "kernel log"};
  const std::string cpuinfo = read_file("/proc/cpuinfo");
  if (cpuinfo.find(" aperfmperf") == std::string::npos) {
    if (auto mhz = last_mhz_after(cpuinfo, "cpu MHz\t\t: ")) return {*mhz * 1e6, "cpuinfo"};
  }
  return {std::nullopt,
          "no tsc_freq_khz, no tsc line in the kernel log (dmesg), and cpuinfo's "
          "cpu MHz is the current clock on this CPU (aperfmperf)"};
}

}  // namespace

TEST_CASE(
    "the live msr PMU: tsc counted at the kernel's TSC frequency, aperf/mperf as sysfs "
    "says",
    "[uncore][x86]") {
  const std::string sysfs = "/sys";
  REQUIRE(std::filesystem::exists(sysfs + "/bus/event_source/devices/msr/events/tsc"));
  const Topology topology = Topology::load(TopologyConfig{});
  auto plan = uncore::plan_uncore(sysfs, topology);
  auto collector =
      uncore::make_uncore_collector(std::move(plan), uncore::make_perf_backend(), "/proc");
  const auto [reference_hz, reference] = kernel_tsc_hz();
  INFO("reference: " << reference);
  REQUIRE(reference_hz.has_value());

  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  auto before = monotonic_seconds();
  const auto first = scrape(*collector);
  const double t1 = (before + monotonic_seconds()) / 2;
  INFO("the open needs root or kernel.perf_event_paranoid <= 0");
  REQUIRE(value_of(first, "hwperf_uncore_source_available",
                   {{"source", "msr_tsc"}, {"reason", "ok"}}) == 1);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  before = monotonic_seconds();
  const auto second = scrape(*collector);
  const double t2 = (before + monotonic_seconds()) / 2;
  const double rate = (value_of(second, "hwperf_msr_tsc_cycles_total", cpu0) -
                       value_of(first, "hwperf_msr_tsc_cycles_total", cpu0)) /
                      (t2 - t1);
  INFO("tsc rate " << rate << " Hz, kernel " << *reference_hz << " Hz");
  CHECK(std::abs(rate / *reference_hz - 1) < 0.01);

  // aperf and mperf: counted where sysfs lists them, else an exported "absent" state.
  for (const char* event : {"aperf", "mperf"}) {
    const bool listed =
        std::filesystem::exists(sysfs + "/bus/event_source/devices/msr/events/" + event);
    const std::string source = std::string("msr_") + event;
    CHECK(value_of(second, "hwperf_uncore_source_available",
                   {{"source", source}, {"reason", listed ? "ok" : "absent"}}) == (listed ? 1 : 0));
    CHECK(find_samples(second, std::string("hwperf_msr_") + event + "_cycles_total").empty() ==
          !listed);
  }
}
