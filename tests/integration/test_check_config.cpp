// --check-config is what an admin runs in CI or an init container before rolling a configuration
// out, so it must refuse what the start refuses: each configuration here is run both ways and
// must be refused both ways, with the same message. A check added to one path only fails here
// when a row for it is added.
#include "tests/catch.hpp"
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "collectors/papi/papi_presets.h"
#include "collectors/registry.h"
#include "collectors/configuration.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

struct Refused {
  std::string name;
  std::string config;      // the main configuration file, "" for none
  std::string web_config;  // --web.config.file, "" for none
  std::string message;     // what both runs must say
};

std::vector<Refused> refusals() {
  // EC keys (prime256v1), kept for the whole run: the rows name their paths.
  static const test::TempDir certificate_dir;
  static const auto certificates = test::make_test_certificates(certificate_dir);
  std::string slow_hash = test::bcrypt_hash("pw", 4);
  slow_hash.replace(4, 2, "31");
  const auto papi_events = [](const std::string& list) {
    return "collectors:\n  papi:\n    events:\n" + list;
  };
  return {
      // Found across collectors, from the names the registry entries declare: the dry run
      // builds no collector, the start checks before it builds one.
      {"a family name another collector exports",
       papi_events("      - {event: perf::PAGE-FAULTS, metric: info}\n"), "",
       "hwperf.yml:4:9: the papi collector would export hwperf_cpu_info_total, which is the "
       "topology collector's family hwperf_cpu_info (in OpenMetrics a counter is named without "
       "_total)"},
      {"a bcrypt cost that takes hours per check", "",
       "basic_auth_users:\n  slow: \"" + slow_hash + "\"\n",
       "basic_auth_users.slow: bcrypt cost 31"},
      {"an event name with a NUL", papi_events("      - \"perf::PAGE-FAULTS\\0\"\n"), "",
       "collectors.papi.events[0]: the event name holds a control character (0x00 at position "
       "17)"},
      {"an empty event name", papi_events("      - ''\n"), "",
       "collectors.papi.events[0]: an empty event name"},
      {"an event that samples", papi_events("      - perf::PAGE-FAULTS:period=10000\n"), "",
       "sampling qualifier period=10000"},
      {"a header value no client reads", "",
       "http_server_config:\n  headers:\n    Content-Security-Policy: \"" +
           std::string(200 * 1024, 'a') + "\"\n",
       "http_server_config.headers.Content-Security-Policy: a value of 204800 bytes; at most "
       "8192"},
      {"an unknown key", "colectors: {}\n", "", "in the top level (expected one of: web, paths"},
      {"cipher suites the certificate's key cannot sign", "",
       "tls_server_config:\n  cert_file: " + certificates.server_cert.string() +
           "\n  key_file: " + certificates.server_key.string() +
           "\n  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n",
       "hold no suite that the EC key of " + certificates.server_cert.string() +
           " can sign up to max_version TLS12"},
  };
}

}  // namespace

TEST_CASE("the dry run refuses every configuration the start refuses, with the same message",
          "[e2e][check_config][kernel_perf]") {
  test::TempDir dir;
  const Refused row = GENERATE(from_range(refusals()));
  CAPTURE(row.name);
  std::vector<std::string> args = {"--config.file=" + dir.write("hwperf.yml", row.config).string()};
  if (!row.web_config.empty()) {
    args.push_back("--web.config.file=" + dir.write("web.yml", row.web_config).string());
  }
  for (const char* mode : {"--check-config", "--web.listen-address=127.0.0.1:0"}) {
    CAPTURE(mode);
    auto run = args;
    run.push_back(mode);
    // A start that is not refused serves until the timeout, and fails the exit code check.
    const auto result = test::run_exporter(run, 60);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains(row.message));
  }
}

// The names the start and the dry run check before building anything are those of each entry's
// `families`; CollectorSet::add checks the built collectors again. An entry that declared less
// than its collector exports under configured names would let the dry run pass what the start
// refuses: each built collector's declared families must be among its entry's.
TEST_CASE("each collector's entry declares the families its built collector declares",
          "[check_config][kernel_perf]") {
  test::TempDir dir;
  const std::string config_text =
      "collectors:\n"
      "  papi:\n"
      "    cpus: \"0\"\n"
      "    granularity: package\n"
      "    events:\n"
      "      - {event: perf::PAGE-FAULTS, metric: faults}\n"
      "      - perf::CPU-CLOCK\n"
      "  process:\n"
      "    targets:\n"
      "      - {name: self, pid: " +
      std::to_string(getpid()) +
      "}\n"
      "    events: [perf::TASK-CLOCK, {event: perf::PAGE-FAULTS, metric: faults}]\n"
      "  cgroup:\n"
      "    enabled: true\n"
      "    events: [{event: perf::CPU-CLOCK, metric: cpu_time_seconds}]\n";
  const Config config = load_config_file(dir.write("hwperf.yml", config_text).string());
  const Topology topology = Topology::load(config.topology, config.paths);
  const CollectorServices services{papi::preset_catalog()};
  std::size_t compared = 0;
  for (const CollectorEntry* entry : collector_registry()) {
    if (!entry->enabled(config)) continue;
    CAPTURE(entry->name);
    const auto built = declared_families(*entry->make(config, topology, services));
    const auto declared = entry->families != nullptr ? entry->families(config, topology)
                                                     : std::vector<FamilyDeclaration>{};
    for (const auto& family : built) {
      CAPTURE(family.name, family.where);
      CHECK(std::any_of(declared.begin(), declared.end(),
                        [&](const FamilyDeclaration& d) { return d.name == family.name; }));
      ++compared;
    }
  }
  CHECK(compared >= 4);  // papi's two and the process target's two, at the least
}

// 12,000 users at cost 4 took 33 s to start or check when each user's bcrypt cost was measured
// with three runs of its own (2.8 ms per user); the measure is now taken once per process. The
// bound is far above what the check takes (0.4 s here) and far below what it took.
TEST_CASE("a web config with twelve thousand users is checked in seconds", "[e2e][check_config]") {
  test::TempDir dir;
  const std::string hash = test::bcrypt_hash("pw", 4);
  std::string users = "basic_auth_users:\n";
  for (int user = 0; user < 12000; ++user) {
    users += "  user" + std::to_string(user) + ": \"" + hash + "\"\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const auto result = test::run_exporter(
      {"--web.config.file=" + dir.write("web.yml", users).string(), "--check-config"}, 60);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(result.exit_code == 0);
  CHECK(seconds < 8.0 * HWPERF_SLOWDOWN);
}
