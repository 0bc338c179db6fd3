// common/: kernel attribute reads that cannot be made to hang or to read the wrong kind of file,
// open-file budgets, durations.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_config.h"
#include "collectors/hwmon/hwmon_config.h"
#include "collectors/papi/papi_config.h"
#include "collectors/process/process_config.h"
#include "collectors/rapl/rapl_config.h"
#include "collectors/topology/topology_config.h"
#include "collectors/uncore/uncore_config.h"
#include "collectors/registry.h"
#include "common/cpu_list.h"
#include "common/files.h"
#include "common/open_files.h"
#include "common/text.h"
#include "topology/topology.h"
#include "tests/support/support.h"

using namespace hwperf;

TEST_CASE("an attribute that is a FIFO, a folder or a device is refused at once", "[common]") {
  test::TempDir dir;
  const auto fifo = dir.path() / "energy_uj";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Opened without O_NONBLOCK this would wait for a writer for ever.
  const auto from_fifo = read_small_file(fifo.string());
  CHECK(from_fifo.error == ENOTSUP);
  CHECK(read_u64_file(fifo.string()).error == ENOTSUP);
  CHECK(open_attribute(dir.path().string()).error == ENOTSUP);
  CHECK(open_attribute("/dev/null").error == ENOTSUP);
  CHECK(open_attribute((dir.path() / "absent").string()).error == ENOENT);

  const auto regular = dir.write("max_energy_range_uj", "262143328850\n");
  const auto value = read_u64_file(regular.string());
  REQUIRE(value.ok());
  CHECK(value.value == 262143328850ull);
}

TEST_CASE("the open-file budget of 512 CPUs x 11 events does not fit systemd's 1024", "[common]") {
  constexpr unsigned long kCpus = 512;
  constexpr unsigned long kEvents = 11;
  const std::vector<FileNeed> needs = {
      {"PAPI: 512 CPUs x 11 events", kCpus * kEvents}, {"RAPL", 10}, {"already open", 12}};
  const unsigned long total = kCpus * kEvents + 10 + 12;
  const std::string shortfall = open_file_shortfall(needs, 1024);
  CHECK_THAT(shortfall, Catch::Contains("needs about " + std::to_string(total) + " open files") &&
                            Catch::Contains(std::to_string(kCpus * kEvents)) &&
                            Catch::Contains("is 1024") && Catch::Contains("LimitNOFILE=") &&
                            Catch::Contains("ulimit -n"));
  CHECK(open_file_shortfall(needs, total).empty());
  CHECK_FALSE(open_file_shortfall(needs, total - 1).empty());
}

TEST_CASE("the PAPI collector's open-file need is one descriptor per CPU and event",
          "[common][papi]") {
  TopologyConfig synthetic;
  synthetic.kind = TopologyConfig::Kind::synthetic;
  synthetic.argument = "pack:2 core:64 pu:4";
  const Topology topology = Topology::load(synthetic);
  Config config;
  // Only PAPI: the collectors on by default that hold descriptors of their own are off.
  config.get<RaplCollectorConfig>().enabled = false;
  config.get<UncoreCollectorConfig>().enabled = false;
  config.get<HwmonCollectorConfig>().enabled = false;
  config.get<PapiCollectorConfig>().events_given = true;
  for (int i = 0; i < 11; ++i) {
    EventSpec event;
    event.event = "perf::CPU-CLOCK";
    config.get<PapiCollectorConfig>().events.push_back(event);
  }
  const auto needs = collector_file_needs(config, topology);
  REQUIRE(needs.size() == 1);
  const unsigned long cpus = topology.cpus().size();
  CHECK(cpus == 512);
  CHECK(needs.front().count == cpus * config.get<PapiCollectorConfig>().events.size());
  CHECK_FALSE(open_file_shortfall(needs, 1024).empty());
}

TEST_CASE("durations are read as Prometheus writes them", "[common]") {
  struct Row {
    const char* text;
    std::optional<std::uint64_t> ms;
  };
  const auto row = GENERATE(
      Row{"500ms", 500}, Row{"5s", 5 * 1000}, Row{"1m", 60 * 1000}, Row{"1m30s", 90 * 1000},
      Row{"2h", 2 * 3600 * 1000}, Row{"1s500ms", 1500}, Row{"0s", 0}, Row{"", std::nullopt},
      Row{"5", std::nullopt}, Row{"s", std::nullopt}, Row{"1.5s", std::nullopt},
      Row{"-1s", std::nullopt}, Row{"5 s", std::nullopt}, Row{"3d", std::nullopt},
      Row{"99999999999999999999ms", std::nullopt}, Row{"9999999999999999h", std::nullopt});
  CAPTURE(row.text);
  CHECK(parse_duration_ms(row.text) == row.ms);
}

TEST_CASE("durations are read as Go's time.ParseDuration reads them", "[common][web]") {
  struct Row {
    const char* text;
    std::optional<double> seconds;
  };
  const auto row =
      GENERATE(Row{"1h30m", 5400}, Row{"1.5s", 1.5}, Row{"300ms", 0.3}, Row{"250us", 250e-6},
               Row{"250\u00b5s", 250e-6}, Row{"10ns", 10e-9}, Row{"2h45m30.5s", 9930.5},
               Row{"0", 0}, Row{".5s", 0.5}, Row{"1.s", 1}, Row{"-2m", -120}, Row{"+3s", 3},
               Row{"", std::nullopt}, Row{"5", std::nullopt}, Row{"s", std::nullopt},
               Row{".s", std::nullopt}, Row{"1d", std::nullopt}, Row{"5 s", std::nullopt},
               Row{"1e3s", std::nullopt}, Row{"3000000h", std::nullopt});
  CAPTURE(row.text);
  const auto parsed = parse_go_duration_seconds(row.text);
  REQUIRE(parsed.has_value() == row.seconds.has_value());
  if (row.seconds) CHECK(*parsed == Approx(*row.seconds).epsilon(1e-12));
}

TEST_CASE(
    "CPU lists merge their ranges before expanding, so work follows the text and the "
    "distinct CPUs",
    "[common]") {
  CHECK(parse_cpu_list("5-7,0-3,2-6") == std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(parse_cpu_list("9,1,9,1-1") == std::vector<unsigned>{1, 9});
  // A thousand repeats of the widest range Linux allows: 65536 CPUs, not 65 million entries.
  std::string repeated;
  for (int i = 0; i < 1000; ++i) repeated += (i == 0 ? "" : ",") + std::string("0-65535");
  const auto cpus = parse_cpu_list(repeated);
  REQUIRE(cpus.size() == 65536);
  CHECK(cpus.front() == 0);
  CHECK(cpus.back() == 65535);
  CHECK(std::adjacent_find(cpus.begin(), cpus.end(),
                           [](unsigned a, unsigned b) { return b != a + 1; }) == cpus.end());
  CHECK_THROWS_AS(parse_cpu_list("0-65536"), std::invalid_argument);
  CHECK_THROWS_AS(parse_cpu_list("3-1"), std::invalid_argument);
}
