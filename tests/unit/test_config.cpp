#include "tests/catch.hpp"

#include <sys/stat.h>

#include <set>
#include <string>

#include "collectors/cgroup/cgroup_config.h"
#include "collectors/hwmon/hwmon_config.h"
#include "collectors/papi/papi_config.h"
#include "collectors/process/process_config.h"
#include "collectors/rapl/rapl_config.h"
#include "collectors/topology/topology_config.h"
#include "collectors/uncore/uncore_config.h"
#include "common/cpu_list.h"
#include "config/errors.h"
#include "collectors/configuration.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {
std::string error_text(const std::string& yaml) { return test::config_error(yaml, "bad.yml"); }

// The web and paths sections hold these values.
void check_web_and_paths(const Config& config, const std::string& listen_address,
                         const std::string& telemetry_path, const std::string& sysfs,
                         const std::string& procfs, const std::string& devfs) {
  CHECK(config.web.listen_address == listen_address);
  CHECK(config.web.telemetry_path == telemetry_path);
  CHECK(config.paths.sysfs == sysfs);
  CHECK(config.paths.procfs == procfs);
  CHECK(config.paths.devfs == devfs);
}
}  // namespace

TEST_CASE("no config file gives the documented defaults", "[config]") {
  const Config config = load_config_file("");
  check_web_and_paths(config, ":9477", "/metrics", "/sys", "/proc", "/dev");
  CHECK(config.topology.kind == TopologyConfig::Kind::system);
  CHECK(config.get<TopologyCollectorConfig>().enabled);
  CHECK(config.get<PapiCollectorConfig>().enabled);
  CHECK_FALSE(config.get<PapiCollectorConfig>().events_given);
  CHECK(config.get<RaplCollectorConfig>().enabled);
}

TEST_CASE("an empty file is valid and means defaults", "[config]") {
  const Config config = parse_config_text("", "empty.yml");
  CHECK(config.web.listen_address == ":9477");
}

TEST_CASE("every section is read", "[config]") {
  const Config config = parse_config_text(R"(
web:
  listen_address: "127.0.0.1:9999"
  telemetry_path: /m
paths: {sysfs: /s, procfs: /p, devfs: /d}
topology:
  source: "synthetic:pack:2 core:4 pu:2"
log: {level: debug}
collectors:
  topology: {enabled: false}
  papi:
    cpus: "0-3,8"
    granularity: package
    domain: user
    attach: qualifier
    multiplex: false
    events:
      - PAPI_TOT_INS
      - event: perf::PAGE-FAULTS
        metric: page_faults
        help: Page faults
  rapl:
    interface: msr
    domains: [package, dram]
    max_power_watts: 250
    wrap_guard_interval_seconds: 0.5
)",
                                          "full.yml");
  check_web_and_paths(config, "127.0.0.1:9999", "/m", "/s", "/p", "/d");
  CHECK(config.topology.kind == TopologyConfig::Kind::synthetic);
  CHECK(config.topology.argument == "pack:2 core:4 pu:2");
  CHECK(config.log_level == LogLevel::debug);
  CHECK_FALSE(config.get<TopologyCollectorConfig>().enabled);
  const auto& papi = config.get<PapiCollectorConfig>();
  CHECK_FALSE(papi.cpus.all);
  CHECK(papi.cpus.cpus == std::vector<unsigned>{0, 1, 2, 3, 8});
  CHECK(papi.cpus.to_string() == "0-3,8");
  CHECK(papi.cpus.mark.line == 12);
  CHECK(papi.granularity == Granularity::package);
  CHECK(papi.domain == CountingDomain::user);
  CHECK(papi.attach == PapiAttachMode::qualifier);
  CHECK_FALSE(papi.multiplex);
  REQUIRE(papi.events.size() == 2);
  CHECK(papi.events[0].event == "PAPI_TOT_INS");
  CHECK(papi.events[0].mark.to_string() == "full.yml:18:9");
  CHECK(papi.events[1].event == "perf::PAGE-FAULTS");
  CHECK(papi.events[1].metric == "page_faults");
  CHECK(papi.events[1].help == "Page faults");
  const auto& rapl = config.get<RaplCollectorConfig>();
  CHECK(rapl.interface == RaplInterface::msr);
  CHECK(rapl.domains == std::vector<RaplDomain>{RaplDomain::package, RaplDomain::dram});
  CHECK(rapl.max_power_watts == 250);
  CHECK(rapl.wrap_guard_interval_seconds == 0.5);
}

TEST_CASE("bad configuration files name file, line and column", "[config]") {
  // Each input is written so that the offending token sits at a known line and column.
  auto [yaml, expected] = GENERATE(table<std::string, std::string>({
      {"web:\n  listen: x\n",
       "bad.yml:2:3: unknown key \"listen\" in web (expected one of: listen_address, "
       "telemetry_path)"},
      {"colectors: {}\n", "bad.yml:1:1: unknown key \"colectors\" in the top level"},
      {"collectors:\n  papi:\n    enabled: maybe\n",
       "bad.yml:3:14: collectors.papi.enabled: expected true or false, got \"maybe\""},
      {"collectors:\n  papi:\n    granularity: socket\n",
       "bad.yml:3:18: collectors.papi.granularity: expected one of cpu, core, package, machine, "
       "got \"socket\""},
      {"collectors:\n  papi:\n    cpus: 3-1\n",
       "bad.yml:3:11: collectors.papi.cpus: expected \"all\" or a CPU list"},
      {"collectors:\n  papi:\n    events: PAPI_TOT_INS\n",
       "bad.yml:3:13: collectors.papi.events: expected a list"},
      {"collectors:\n  papi:\n    events:\n      - {evnt: X}\n",
       "bad.yml:4:10: unknown key \"evnt\" in collectors.papi.events[0]"},
      {"collectors:\n  papi:\n    events:\n      - event: X\n        metric: Bad-Name\n",
       "bad.yml:4:9: collectors.papi.events[0].metric: \"Bad-Name\" is not a valid metric name "
       "part"},
      {"collectors:\n  rapl:\n    domains: [package, gpu]\n",
       "bad.yml:3:24: collectors.rapl.domains: unknown domain \"gpu\""},
      {"collectors:\n  rapl:\n    wrap_guard_interval_seconds: 1e10\n",
       "bad.yml:3:34: collectors.rapl.wrap_guard_interval_seconds: expected at most 3600 seconds"},
      {"collectors:\n  rapl:\n    max_power_watts: 1e9\n",
       "bad.yml:3:22: collectors.rapl.max_power_watts: expected at most 100000 watt"},
      // GB/s written where bytes per second are meant, and bits counted as bytes twice over.
      {"collectors:\n  uncore:\n    peak_memory_bytes_per_second: 460.8\n",
       "bad.yml:3:35: collectors.uncore.peak_memory_bytes_per_second: expected 0 (not exported) or "
       "at least 1e+06 bytes per second"},
      {"collectors:\n  uncore:\n    peak_memory_bytes_per_second: 3.7e15\n",
       "bad.yml:3:35: collectors.uncore.peak_memory_bytes_per_second: expected at most 1e+14 bytes "
       "per second"},
      {"topology:\n  source: \"synthetic:pack:1000 core:1000 pu:100\"\n",
       "bad.yml:2:11: topology.source: the synthetic description stands for more than 65536 CPUs"},
      {"collectors:\n  papi:\n    events:\n      - " + std::string(8192, 'X') + "\n",
       "bad.yml:4:9: collectors.papi.events[0]: an event name of 8192 characters"},
      {"collectors:\n  rapl:\n    max_power_watts: -5\n",
       "bad.yml:3:22: collectors.rapl.max_power_watts: expected a number >= 0, got \"-5\""},
      {"topology:\n  source: lstopo\n",
       "bad.yml:2:11: topology.source: expected system, xml:PATH or synthetic:DESCRIPTION, got "
       "\"lstopo\""},
      {"web:\n  telemetry_path: metrics\n",
       "bad.yml:2:19: web.telemetry_path: expected a path starting with /"},
      {"web:\n  telemetry_path: /-/healthy\n",
       "bad.yml:2:19: web.telemetry_path: \"/-/healthy\" is where the exporter serves its liveness "
       "answer, so the metrics could not be reached; choose another path such as /metrics"},
      {"web: [1, 2]\n", "bad.yml:1:6: web: expected a mapping"},
      {"web:\n  listen_address: \":1\"\n  listen_address: \":2\"\n",
       "bad.yml:3:3: duplicate key \"listen_address\" in web"},
      {"web: {listen_address: [\n", "bad.yml:2:1: invalid YAML"},
      {"collectors:\n  rapl:\n    wrap_guard_interval_seconds: 0.0001\n",
       "bad.yml:3:34: collectors.rapl.wrap_guard_interval_seconds: expected 0 (derived) or at "
       "least 0.001 seconds"},
      {"collectors:\n  papi:\n    events: []\n",
       "bad.yml:3:13: collectors.papi.events: the list is empty"},
      {"collectors:\n  papi:\n    events:\n",
       "bad.yml:3:5: collectors.papi.events: expected a list"},
      {"web:\n  listen_address:\n", "bad.yml:2:3: web.listen_address: expected a non-empty string"},
      {"collectors:\n  rapl:\n    max_power_watts: inf\n",
       "bad.yml:3:22: collectors.rapl.max_power_watts: expected a number >= 0, got \"inf\""},
      {"collectors:\n  rapl:\n    max_power_watts: 0.5\n",
       "bad.yml:3:22: collectors.rapl.max_power_watts: expected 0 (from the hardware) or at least "
       "1 watt"},
      {"collectors:\n  rapl:\n    wrap_guard_interval_seconds: nan\n",
       "bad.yml:3:34: collectors.rapl.wrap_guard_interval_seconds: expected a number >= 0, got "
       "\"nan\""},
      {"log:\n  level: loud\n",
       "bad.yml:2:10: log.level: expected one of debug, info, warn, error, got \"loud\""},
      {"collectors:\n  papi:\n    events:\n      - \"perf::PAGE-FAULTS\\0\"\n",
       "bad.yml:4:9: collectors.papi.events[0]: the event name holds a control character (0x00 "
       "at position 17)"},
      {"collectors:\n  process:\n    events:\n      - \"perf::TASK-CLOCK\\tx\"\n",
       "bad.yml:4:9: collectors.process.events[0]: the event name holds a control character "
       "(0x09 at position 16)"},
      {"collectors:\n  cgroup:\n    events:\n      - ''\n",
       "bad.yml:4:9: collectors.cgroup.events[0]: an empty event name"},
  }));
  CAPTURE(yaml);
  const std::string text = error_text(yaml);
  CHECK_THAT(text, Catch::Contains(expected));
}

TEST_CASE("an event mapping without its event key is reported, and so is what follows",
          "[config]") {
  const std::string text = error_text(
      "collectors:\n  papi:\n    events:\n      - {metric: x}\n      - event:\n  rapl:\n    "
      "enabled: 3\n");
  CHECK_THAT(text, Catch::Contains(
                       "bad.yml:4:9: collectors.papi.events[0]: missing required key \"event\""));
  CHECK_THAT(
      text,
      Catch::Contains("bad.yml:5:9: collectors.papi.events[1].event: expected a non-empty string"));
  CHECK_THAT(text,
             Catch::Contains("bad.yml:7:14: collectors.rapl.enabled: expected true or false"));
  CHECK_THAT(text, !Catch::Contains("invalid configuration"));
}

TEST_CASE("all problems in a file are reported at once", "[config]") {
  const std::string text =
      error_text("web:\n  port: 1\ncollectors:\n  papi:\n    domain: both\n  gpu: {}\n");
  CHECK_THAT(text, Catch::Contains("bad.yml:2:3"));
  CHECK_THAT(text, Catch::Contains("bad.yml:5:13"));
  CHECK_THAT(text, Catch::Contains("bad.yml:6:3"));
}

TEST_CASE("a missing config file is an error naming the path", "[config]") {
  test::TempDir dir;
  const std::string missing = (dir.path() / "nope.yml").string();
  REQUIRE_THROWS_AS(load_config_file(missing), ConfigError);
  try {
    load_config_file(missing);
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains(missing) && Catch::Contains("No such file"));
  }
}

TEST_CASE("the effective configuration round-trips through dump_config", "[config]") {
  Config original = parse_config_text(R"(
collectors:
  papi:
    cpus: "1"
    events: [perf::CPU-CLOCK, {event: perf::PAGE-FAULTS, metric: faults}]
  rapl: {interface: perf, domains: [dram]}
topology: {source: "synthetic:pack:1 pu:2"}
)",
                                      "a.yml");
  const Config again = parse_config_text(dump_config(original), "dump.yml");
  CHECK(dump_config(again) == dump_config(original));
  CHECK(again.get<PapiCollectorConfig>().events.size() == 2);
  CHECK(again.get<PapiCollectorConfig>().events[1].metric == "faults");
  CHECK(again.get<RaplCollectorConfig>().interface == RaplInterface::perf);
  CHECK(again.topology.to_string() == "synthetic:pack:1 pu:2");
}

TEST_CASE("the shipped example configuration is valid", "[config]") {
  const Config config = load_config_file(std::string(HWPERF_SOURCE_DIR) + "/config/hwperf.yml");
  CHECK(config.source_file == std::string(HWPERF_SOURCE_DIR) + "/config/hwperf.yml");
  CHECK(config.web.listen_address == Config{}.web.listen_address);
}

TEST_CASE("CPU lists", "[config]") {
  auto [text, expected] = GENERATE(table<std::string, std::vector<unsigned>>({
      {"0", {0}},
      {"0-3", {0, 1, 2, 3}},
      {"0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}},
      {" 5 , 1-2 ", {1, 2, 5}},
      {"2,2,1-2", {1, 2}},
  }));
  CAPTURE(text);
  const auto cpus = parse_cpu_list(text);
  CHECK(cpus == expected);
  CHECK(parse_cpu_list(format_cpu_list(cpus)) == cpus);
}

TEST_CASE("bad CPU lists are rejected with the offending part", "[config]") {
  auto [text, part] = GENERATE(table<std::string, std::string>({
      {"", "empty"},
      {"a", "\"a\""},
      {"3-1", "backwards"},
      {"1,,2", "\"\""},
      {"-1", "\"\""},
      {"0-4294967295", "beyond any Linux kernel"},
      {"65536", "beyond any Linux kernel"},
  }));
  CAPTURE(text);
  REQUIRE_THROWS_AS(parse_cpu_list(text), std::invalid_argument);
  try {
    parse_cpu_list(text);
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains(part));
  }
}

TEST_CASE("every enum has one spelling per value, and it reads back", "[config]") {
  // Each table is the one home of its enum's spellings; a value missing from it would print as
  // the first entry's name.
  auto round_trips = [](const auto& table, std::size_t expected_values) {
    std::set<std::string> names;
    for (const auto& entry : table) {
      CAPTURE(entry.name);
      CHECK(parse_name(table, entry.name) == entry.value);
      CHECK(std::string(name_of(table, entry.value)) == entry.name);
      names.insert(entry.name);
    }
    CHECK(names.size() == expected_values);
  };
  round_trips(kGranularityNames, 4);
  round_trips(kCountingDomainNames, 3);
  round_trips(kPapiAttachModeNames, 3);
  round_trips(kRaplInterfaceNames, 4);
  round_trips(kRaplDomainNames, 5);
  round_trips(kLogLevelNames, 4);
}

TEST_CASE("a configuration path that is no small regular file is refused at once", "[config]") {
  test::TempDir dir;
  auto error_of = [](const std::string& path) {
    try {
      load_config_file(path);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A directory, a FIFO (which would block a plain open) and /dev/zero (which never ends).
  CHECK_THAT(error_of(dir.path().string()), Catch::Contains("not a regular file"));
  const auto fifo = dir.path() / "config.yml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(error_of(fifo.string()), Catch::Contains("not a regular file"));
  CHECK_THAT(error_of("/dev/zero"), Catch::Contains("not a regular file"));
  const auto huge = dir.write("huge.yml", "# " + std::string(2u << 20, 'x') + "\n");
  CHECK_THAT(error_of(huge.string()), Catch::Contains("larger than 1 MiB"));
  const auto fine = dir.write("fine.yml", "log: {level: warn}\n");
  CHECK(load_config_file(fine.string()).log_level == LogLevel::warn);
}
