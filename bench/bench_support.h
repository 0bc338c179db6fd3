// Small helpers for hwperf_bench: clocks, percentiles, a fake PAPI counter source, a temporary
// powercap tree and /proc readings. Kept apart from tests/support/support.h so the bench never
// links Catch2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "collectors/papi/papi_collector.h"

namespace hwperf::bench {

// Nanoseconds this thread has spent on a CPU (CLOCK_THREAD_CPUTIME_ID): what one scrape costs
// the machine, without the time the thread was runnable but waiting.
std::int64_t thread_cpu_ns();
// Nanoseconds of wall time (steady clock).
std::int64_t wall_ns();

// Nearest-rank percentile of `samples` (sorted in place); 0 for an empty set.
std::int64_t percentile(std::vector<std::int64_t>& samples, double fraction);

// VmRSS of this process in KiB, from /proc/self/status; 0 if it cannot be read.
long resident_set_kib();

// Events counted by FakeCounterSource, each (event, metric) as a configuration names it, with a
// HELP text about as long as PAPI's descriptions.
std::vector<events::ExportedEvent> stand_in_events(
    std::initializer_list<std::pair<const char*, const char*>> events_and_metrics);
// The eight events a typical hardware configuration exports, named as the real factory names
// them, so family names, HELP and body size match a real scrape.
std::vector<events::ExportedEvent> typical_hardware_events();

// Counts every event on every CPU, one qualifier event set per CPU, like the real source on a
// machine without multiplexing. Values start in the range real counters reach after an hour and
// grow by a different step per counter, so the exposition formats realistic, distinct numbers.
class FakeCounterSource final : public papi::CounterSource {
 public:
  FakeCounterSource(std::size_t events, const std::vector<unsigned>& cpus);
  const papi::SourceLayout& layout() const override { return layout_; }
  void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) override;
  std::string reset(std::size_t) override { return {}; }
  std::string rebuild(std::size_t) override { return {}; }

 private:
  papi::SourceLayout layout_;
  std::vector<std::uint64_t> counts_;
};

// A directory under $TMPDIR (or /tmp) removed with everything in it when the owner goes away.
class TempTree {
 public:
  TempTree();
  ~TempTree();
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to path()/relative, creating the parent directories.
  void write(const std::string& relative, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

// Writes <root>/sys/class/powercap with nine RAPL zones as a two-socket Intel server lays them
// out (two packages with core, uncore and dram subzones, and psys), the same layout
// scripts/bench-side-by-side.sh writes. Returns the sysfs root to pass as paths.sysfs.
std::string write_nine_zone_powercap(const TempTree& root);

}  // namespace hwperf::bench
