#include "bench/bench_support.h"

#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace hwperf::bench {

std::int64_t thread_cpu_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t percentile(std::vector<std::int64_t>& samples, double fraction) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  // Nearest rank: the smallest sample with at least `fraction` of the samples at or below it.
  auto rank = static_cast<std::size_t>(fraction * static_cast<double>(samples.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, samples.size());
  return samples[rank - 1];
}

long resident_set_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

std::vector<events::ExportedEvent> stand_in_events(
    std::initializer_list<std::pair<const char*, const char*>> events_and_metrics) {
  std::vector<events::ExportedEvent> events;
  for (const auto& [event, metric] : events_and_metrics) {
    events::ExportedEvent spec;
    spec.event = event;
    spec.metric = metric;
    // About as long as PAPI's own descriptions, which end up in HELP.
    spec.description = std::string("Benchmark stand-in for ") + event + " (fake counter source)";
    events.push_back(std::move(spec));
  }
  return events;
}

std::vector<events::ExportedEvent> typical_hardware_events() {
  return stand_in_events({
      {"PAPI_TOT_INS", "instructions"},
      {"PAPI_TOT_CYC", "cycles"},
      {"PAPI_REF_CYC", "reference_cycles"},
      {"PAPI_BR_INS", "branch_instructions"},
      {"PAPI_BR_MSP", "branch_mispredictions"},
      {"PAPI_L1_DCM", "l1_data_cache_misses"},
      {"PAPI_L2_TCM", "l2_cache_misses"},
      {"PAPI_L3_TCM", "l3_cache_misses"},
  });
}

FakeCounterSource::FakeCounterSource(std::size_t events, const std::vector<unsigned>& cpus)
    : layout_(papi::every_event_on_every_cpu(events, cpus)) {
  counts_.resize(layout_.counters.size());
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] = 3'600'000'000'000ull + 7919 * i;
}

void FakeCounterSource::read(std::vector<std::int64_t>& values, std::vector<std::string>&) {
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += 1'000'003 + 13 * i;
    values[i] = static_cast<std::int64_t>(counts_[i]);
  }
}

TempTree::TempTree() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/hwperf-bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = pattern;
}

TempTree::~TempTree() {
  std::error_code ignored;  // a destructor must not throw; a leftover temp dir is harmless
  std::filesystem::remove_all(path_, ignored);
}

void TempTree::write(const std::string& relative, const std::string& content) const {
  const auto file = path_ / relative;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

std::string write_nine_zone_powercap(const TempTree& root) {
  struct Zone {
    const char* dir;
    const char* name;
    const char* energy_uj;
    const char* range_uj;
    const char* power_limit_uw;  // "" when the zone has no constraint files
  };
  // Ranges as the kernel reports them (0xFFFFFFFF units: 61 uJ for packages, 15 uJ for DRAM).
  const Zone zones[] = {
      {"intel-rapl:0", "package-0", "81234567890", "261999999939", "150000000"},
      {"intel-rapl:0:0", "core", "51234567890", "261999999939", ""},
      {"intel-rapl:0:1", "uncore", "1234567890", "261999999939", ""},
      {"intel-rapl:0:2", "dram", "21234567890", "64424509425", ""},
      {"intel-rapl:1", "package-1", "82234567890", "261999999939", "150000000"},
      {"intel-rapl:1:0", "core", "52234567890", "261999999939", ""},
      {"intel-rapl:1:1", "uncore", "2234567890", "261999999939", ""},
      {"intel-rapl:1:2", "dram", "22234567890", "64424509425", ""},
      {"intel-rapl:2", "psys", "123234567890", "261999999939", ""},
  };
  root.write("sys/class/powercap/intel-rapl/enabled", "1\n");
  for (const Zone& zone : zones) {
    const std::string dir = std::string("sys/class/powercap/") + zone.dir + "/";
    root.write(dir + "name", std::string(zone.name) + "\n");
    root.write(dir + "energy_uj", std::string(zone.energy_uj) + "\n");
    root.write(dir + "max_energy_range_uj", std::string(zone.range_uj) + "\n");
    root.write(dir + "enabled", "1\n");
    if (*zone.power_limit_uw != '\0') {
      root.write(dir + "constraint_0_name", "long_term\n");
      root.write(dir + "constraint_0_power_limit_uw", std::string(zone.power_limit_uw) + "\n");
    }
  }
  return (root.path() / "sys").string();
}

}  // namespace hwperf::bench
