// hwperf_bench: what one scrape costs, measured through Exporter::handle() so that Accept
// negotiation, every collector, serialisation and gzip are all included (only the socket is
// not; scripts/bench-side-by-side.sh measures that). Prints tables, never pass/fail.
//
//   hwperf_bench            ~2-3 minutes on 2 cores
//   hwperf_bench --quick    ~20 s, fewer samples (p99 of fewer than 100 samples is the maximum)
#include <crypt.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "bench/gzip_size.h"
#include "collectors/collector_set.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/rapl/rapl_config.h"
#include "collectors/topology/topology_collector.h"
#include "collectors/topology/topology_config.h"
#include "config/config.h"
#include "common/log.h"
#include "collectors/build_info.h"
#include "collectors/registry.h"
#include "exporter/router.h"
#include "web/admission.h"
#include "web/basic_auth.h"
#include "topology/topology.h"

namespace hwperf::bench {
namespace {

struct Options {
  double case_seconds = 1.0;  // time spent measuring each table row
  std::size_t max_scrapes_per_case = 2000;
  std::size_t min_scrapes_per_case = 20;
  std::size_t rss_scrapes = 10000;
  // 512 CPUs scrape in milliseconds, so 10,000 of them would take most of the run; the growth
  // between startup and the last reading shows after far fewer.
  std::size_t rss_scrapes_512 = 1000;
  unsigned only_cpus = 0;  // run only the synthetic rows of this size (for profiling)
  bool gzip_size_only = false;
  std::string rss_probe;  // internal: run one RSS measurement in this fresh process
};

// What a scrape asks for: Prometheus' own Accept header (OpenMetrics first) or the text format,
// with or without gzip.
struct Variant {
  const char* format;
  const char* encoding;
  HttpRequest request;
};

std::vector<Variant> all_variants() {
  const std::string text = "text/plain;version=0.0.4";
  const std::string prometheus_accept =
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
      "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
  return {
      {"text", "identity", {"GET", "/metrics", text, "", ""}},
      {"text", "gzip", {"GET", "/metrics", text, "gzip", ""}},
      {"openmetrics", "identity", {"GET", "/metrics", prometheus_accept, "", ""}},
      {"openmetrics", "gzip", {"GET", "/metrics", prometheus_accept, "gzip", ""}},
  };
}

struct Measurement {
  std::size_t scrapes = 0;
  std::size_t body_bytes = 0;
  std::int64_t cpu_p50 = 0, cpu_p99 = 0, wall_p50 = 0, wall_p99 = 0;
};

using Handler = std::function<HttpResponse(const HttpRequest&)>;

Measurement measure(const Handler& handle, const HttpRequest& request, const Options& options) {
  for (int warm_up = 0; warm_up < 3; ++warm_up) handle(request);
  std::vector<std::int64_t> cpu, wall;
  Measurement result;
  const std::int64_t deadline = wall_ns() + static_cast<std::int64_t>(options.case_seconds * 1e9);
  while (cpu.size() < options.max_scrapes_per_case &&
         (cpu.size() < options.min_scrapes_per_case || wall_ns() < deadline)) {
    const std::int64_t cpu_start = thread_cpu_ns();
    const std::int64_t wall_start = wall_ns();
    const HttpResponse response = handle(request);
    wall.push_back(wall_ns() - wall_start);
    cpu.push_back(thread_cpu_ns() - cpu_start);
    result.body_bytes = response.body.size();
  }
  result.scrapes = cpu.size();
  result.cpu_p50 = percentile(cpu, 0.50);
  result.cpu_p99 = percentile(cpu, 0.99);
  result.wall_p50 = percentile(wall, 0.50);
  result.wall_p99 = percentile(wall, 0.99);
  return result;
}

Measurement measure(const Exporter& exporter, const HttpRequest& request, const Options& options) {
  return measure([&](const HttpRequest& r) { return exporter.handle(r); }, request, options);
}

std::size_t series_count(const Exporter& exporter) {
  std::size_t series = 0;
  for (const auto& family : exporter.gather()) series += family.metric.size();
  return series;
}

void print_header(const char* first_column) {
  std::printf("%-26s %-8s %-11s %-8s %7s %9s %6s %9s %9s %9s %9s\n", first_column, "level",
              "format", "encoding", "series", "bytes", "n", "cpu p50", "cpu p99", "wall p50",
              "wall p99");
}

void print_row(const std::string& scenario, const char* level, const Variant& variant,
               std::size_t series, const Measurement& m) {
  const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  std::printf("%-26s %-8s %-11s %-8s %7zu %9zu %6zu %9.1f %9.1f %9.1f %9.1f\n", scenario.c_str(),
              level, variant.format, variant.encoding, series, m.body_bytes, m.scrapes,
              us(m.cpu_p50), us(m.cpu_p99), us(m.wall_p50), us(m.wall_p99));
  std::fflush(stdout);
}

Topology synthetic_topology(const std::string& description) {
  TopologyConfig source;
  source.kind = TopologyConfig::Kind::synthetic;
  source.argument = description;
  return Topology::load(source);
}

// Caches as a server has them (L3 per package, L2/L1d/L1i per core), so that the topology
// collector exports the cache families it would on real hardware.
struct SyntheticMachine {
  unsigned cpus;
  const char* description;
};
const SyntheticMachine kMachines[] = {
    {2, "pack:1 l3:1 core:2 l2:1 l1d:1 l1i:1 pu:1"},
    {16, "pack:2 l3:1 core:4 l2:1 l1d:1 l1i:1 pu:2"},
    {64, "pack:2 l3:1 core:16 l2:1 l1d:1 l1i:1 pu:2"},
    {256, "pack:2 l3:1 core:64 l2:1 l1d:1 l1i:1 pu:2"},
    {512, "pack:2 l3:1 core:64 l2:1 l1d:1 l1i:1 pu:4"},
};

// The topology collector plus a PAPI collector counting 8 events on every CPU from a fake
// source, as the real exporter assembles them (Exporter adds hwperf_build_info).
std::unique_ptr<Exporter> synthetic_exporter(const Topology& topology, Granularity granularity) {
  PapiCollectorConfig papi;
  papi.granularity = granularity;
  CollectorSet collectors;
  collectors.add(make_topology_collector(topology));
  collectors.add(make_papi_collector_from_source(
      papi, typical_hardware_events(), topology,
      std::make_unique<FakeCounterSource>(typical_hardware_events().size(), topology.cpus())));
  return std::make_unique<Exporter>(
      Config{}.web.telemetry_path, std::move(collectors),
      build_info_family({{"hwloc_version", hwloc_library_version()}, {"papi_version", "bench"}}));
}

void run_synthetic(const Options& options) {
  std::printf(
      "\n== Synthetic topologies: topology collector + PAPI (8 events per CPU, fake "
      "counter source), through Exporter::handle; times in microseconds ==\n");
  print_header("topology");
  const Granularity levels[] = {Granularity::cpu, Granularity::core, Granularity::package,
                                Granularity::machine};
  for (const auto& machine : kMachines) {
    if (options.only_cpus != 0 && machine.cpus != options.only_cpus) continue;
    const Topology topology = synthetic_topology(machine.description);
    const std::string name = std::to_string(machine.cpus) + " CPUs";
    for (Granularity level : levels) {
      const auto exporter = synthetic_exporter(topology, level);
      const std::size_t series = series_count(*exporter);
      for (const auto& variant : all_variants()) {
        print_row(name, to_string(level), variant, series,
                  measure(*exporter, variant.request, options));
      }
    }
  }
}

// Basic authentication in front of the same scrape: the admission layer as the server runs it,
// with one user whose hash has cost 10 (htpasswd -B -C 10). The verdict is cached after the
// first request, so a scrape should cost about what it costs without authentication.
void run_authentication(const Options& options) {
  std::printf(
      "\n== Authenticated scrapes: admission (basic auth, bcrypt cost 10, cached) + "
      "Exporter::handle, 16 CPUs at cpu level; microseconds ==\n");
  print_header("authentication");
  const Topology topology = synthetic_topology(kMachines[1].description);
  const auto exporter = synthetic_exporter(topology, Granularity::cpu);
  const std::size_t series = series_count(*exporter);
  crypt_data data{};
  const char* salt = crypt_gensalt_rn("$2b$", 10, nullptr, 0, data.setting, sizeof data.setting);
  const char* hash = salt != nullptr ? crypt_r("s3cret", salt, &data) : nullptr;
  if (hash == nullptr) throw std::runtime_error("libcrypt cannot make a bcrypt hash");
  AdmissionPolicy policy;
  policy.users["prometheus"] = hash;
  const Admission admission(policy);
  const std::string credentials = "Basic cHJvbWV0aGV1czpzM2NyZXQ=";  // prometheus:s3cret
  const Handler authenticated = [&](const HttpRequest& request) {
    auto ticket = admission.admit(request);
    if (!ticket.admitted()) throw std::runtime_error("the bench's credentials were refused");
    return exporter->handle(request);
  };
  for (const auto& variant : all_variants()) {
    HttpRequest request = variant.request;
    const Measurement open = measure(*exporter, request, options);
    print_row("no authentication", "cpu", variant, series, open);
    request.authorization = credentials;
    const Measurement with_auth = measure(authenticated, request, options);
    print_row("basic auth (cached)", "cpu", variant, series, with_auth);
    std::printf("%-26s cpu p50 ratio %.2f\n", "",
                static_cast<double>(with_auth.cpu_p50) /
                    static_cast<double>(std::max<std::int64_t>(open.cpu_p50, 1)));
  }
  std::printf("%-26s bcrypt runs: %llu\n", "",
              static_cast<unsigned long long>(admission.bcrypt_runs()));
}

// How long a refused login takes, by whom it names: users at bcrypt costs 10 and 5, and a name
// no user has. Each attempt is a new password (a cached verdict answers at once, for anyone), so
// each runs bcrypt; the medians must not tell a configured name from an unknown one.
void run_refusal_timing(const Options& options) {
  const auto hash_at = [](unsigned long cost) {
    crypt_data data{};
    const char* salt =
        crypt_gensalt_rn("$2b$", cost, nullptr, 0, data.setting, sizeof data.setting);
    const char* hash = salt != nullptr ? crypt_r("s3cret", salt, &data) : nullptr;
    if (hash == nullptr) throw std::runtime_error("libcrypt cannot make a bcrypt hash");
    return std::string(hash);
  };
  const BasicAuth auth({{"dear", hash_at(10)}, {"cheap", hash_at(5)}});
  const int attempts = options.case_seconds < 0.5 ? 9 : 31;
  std::printf(
      "\n== Refused logins, users at bcrypt cost 10 (dear) and 5 (cheap): median of %d "
      "new wrong passwords, milliseconds ==\n",
      attempts);
  double medians[3] = {};
  const char* names[3] = {"dear", "cheap", "nobody"};
  for (int who = 0; who < 3; ++who) {
    std::vector<double> times;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      const std::string credentials = std::string(names[who]) + ":guess" + std::to_string(attempt);
      std::string header = "Basic ";
      // base64 of the credentials, by hand: the bench has no encoder of its own.
      static const char kAlphabet[] =
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      for (std::size_t i = 0; i < credentials.size(); i += 3) {
        unsigned value = static_cast<unsigned char>(credentials[i]) << 16;
        if (i + 1 < credentials.size())
          value |= static_cast<unsigned char>(credentials[i + 1]) << 8;
        if (i + 2 < credentials.size()) value |= static_cast<unsigned char>(credentials[i + 2]);
        header += kAlphabet[(value >> 18) & 63];
        header += kAlphabet[(value >> 12) & 63];
        header += i + 1 < credentials.size() ? kAlphabet[(value >> 6) & 63] : '=';
        header += i + 2 < credentials.size() ? kAlphabet[value & 63] : '=';
      }
      const std::int64_t start = wall_ns();
      if (auth.allows(header)) throw std::runtime_error("a wrong password was allowed");
      times.push_back(static_cast<double>(wall_ns() - start) / 1e6);
    }
    std::sort(times.begin(), times.end());
    medians[who] = times[times.size() / 2];
    std::printf("%-8s %8.1f\n", names[who], medians[who]);
  }
  const double slowest = *std::max_element(medians, medians + 3);
  const double quickest = *std::min_element(medians, medians + 3);
  std::printf("slowest / quickest median: %.2f (bcrypt runs: %llu)\n", slowest / quickest,
              static_cast<unsigned long long>(auth.bcrypt_runs()));
}

// This VM's two CPUs as two packages (so the two-package powercap tree maps onto them) with
// the real PAPI source counting perf's software events, and RAPL read from a powercap tree.
Config real_config(const std::string& sysfs, bool topology_on, bool papi_on, bool rapl_on) {
  Config config;
  config.paths.sysfs = sysfs;
  config.get<TopologyCollectorConfig>().enabled = topology_on;
  config.get<PapiCollectorConfig>().enabled = papi_on;
  for (const char* event :
       {"perf::CPU-CLOCK", "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS"}) {
    EventSpec entry;
    entry.event = event;
    config.get<PapiCollectorConfig>().events.push_back(entry);
  }
  config.get<PapiCollectorConfig>().events_given = true;
  config.get<RaplCollectorConfig>().enabled = rapl_on;
  config.get<RaplCollectorConfig>().interface = RaplInterface::powercap;
  return config;
}

const char* kRealTopology = "pack:2 core:1 pu:1";

std::unique_ptr<Exporter> real_exporter(const Config& config) {
  const Topology topology = synthetic_topology(kRealTopology);
  return std::make_unique<Exporter>(config.web.telemetry_path, build_collectors(config, topology),
                                    registry_build_info());
}

void run_real(const Options& options) {
  std::printf(
      "\n== Real collectors on this machine: PAPI with the real source (perf "
      "software events, CPUs 0-1), RAPL from a 9-zone powercap tree; microseconds ==\n");
  print_header("collectors");
  TempTree tree;
  const std::string sysfs = write_nine_zone_powercap(tree);
  struct Scenario {
    const char* name;
    bool topology, papi, rapl;
  };
  const Scenario scenarios[] = {
      {"rapl (9 zones)", false, false, true},
      {"papi (4 sw events x 2)", false, true, false},
      {"topology+papi+rapl", true, true, true},
  };
  for (const auto& scenario : scenarios) {
    std::unique_ptr<Exporter> exporter;
    try {
      exporter = real_exporter(real_config(sysfs, scenario.topology, scenario.papi, scenario.rapl));
    } catch (const std::exception& e) {
      std::printf("%-26s skipped: %s\n", scenario.name, e.what());
      continue;
    }
    const std::size_t series = series_count(*exporter);
    for (const auto& variant : all_variants()) {
      print_row(scenario.name, "cpu", variant, series,
                measure(*exporter, variant.request, options));
    }
  }
}

// Runs in a fresh process (see run_rss) so that earlier cases' heap does not count: builds one
// exporter, then scrapes it, cycling through the four variants, and prints VmRSS at each step.
int rss_probe(const std::string& what, std::size_t scrapes) {
  const long at_start = resident_set_kib();
  std::optional<TempTree> tree;
  std::unique_ptr<Exporter> exporter;
  std::optional<Topology> topology;
  if (what == "real") {
    tree.emplace();
    exporter = real_exporter(real_config(write_nine_zone_powercap(*tree), true, true, true));
  } else {
    topology.emplace(synthetic_topology(kMachines[std::size(kMachines) - 1].description));
    exporter = synthetic_exporter(*topology, Granularity::cpu);
  }
  const long after_startup = resident_set_kib();
  const auto variants = all_variants();
  const std::int64_t start = wall_ns();
  for (std::size_t i = 0; i < scrapes; ++i) exporter->handle(variants[i % variants.size()].request);
  const double seconds = static_cast<double>(wall_ns() - start) / 1e9;
  std::printf("%ld %ld %ld %.1f\n", at_start, after_startup, resident_set_kib(), seconds);
  return 0;
}

// Owns a popen() stream; pclose is its only release.
struct PipeCloser {
  void operator()(FILE* pipe) const noexcept { ::pclose(pipe); }
};

void run_rss(const Options& options) {
  std::printf(
      "\n== Resident set size (VmRSS, MiB), each in a fresh process; scrapes cycle "
      "text/OpenMetrics x identity/gzip ==\n");
  std::printf("%-44s %9s %9s %9s %8s %8s\n", "exporter", "at start", "built", "scraped", "scrapes",
              "seconds");
  char self[4096] = {};
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) {
    std::printf("cannot find this executable: %s\n", std::strerror(errno));
    return;
  }
  struct Probe {
    const char* label;
    const char* what;
    std::size_t scrapes;
  };
  const Probe probes[] = {
      {"512 CPUs, topology + PAPI 8 events (fake)", "synthetic512", options.rss_scrapes_512},
      {"real: topology + PAPI 4 sw + RAPL 9 zones", "real", options.rss_scrapes},
  };
  for (const auto& [label, what, scrapes] : probes) {
    const std::string command = std::string("'") + self + "' --rss-probe=" + what +
                                " --rss-scrapes=" + std::to_string(scrapes);
    std::unique_ptr<FILE, PipeCloser> pipe(::popen(command.c_str(), "r"));
    long at_start = 0, built = 0, scraped = 0;
    double seconds = 0;
    if (!pipe ||
        std::fscanf(pipe.get(), "%ld %ld %ld %lf", &at_start, &built, &scraped, &seconds) != 4) {
      std::printf("%-44s probe failed\n", label);
      continue;
    }
    std::printf("%-44s %9.1f %9.1f %9.1f %8zu %8.1f\n", label,
                static_cast<double>(at_start) / 1024.0, static_cast<double>(built) / 1024.0,
                static_cast<double>(scraped) / 1024.0, scrapes, seconds);
    std::fflush(stdout);
  }
}

// Other work on the machine shows in wall time and in the p99s; the load average says how much.
std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::optional<Options> parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      options.case_seconds = 0.1;
      options.min_scrapes_per_case = 10;
      options.rss_scrapes = 1000;
      options.rss_scrapes_512 = 200;
    } else if (arg.rfind("--case-seconds=", 0) == 0) {
      options.case_seconds = std::stod(arg.substr(15));
    } else if (arg.rfind("--rss-scrapes=", 0) == 0) {
      options.rss_scrapes = std::stoul(arg.substr(14));
    } else if (arg.rfind("--rss-scrapes-512=", 0) == 0) {
      options.rss_scrapes_512 = std::stoul(arg.substr(18));
    } else if (arg.rfind("--only-cpus=", 0) == 0) {
      options.only_cpus = static_cast<unsigned>(std::stoul(arg.substr(12)));
    } else if (arg == "--gzip-size") {
      options.gzip_size_only = true;
    } else if (arg.rfind("--rss-probe=", 0) == 0) {
      options.rss_probe = arg.substr(12);
    } else {
      const bool asked = arg == "--help" || arg == "-h";
      (asked ? std::cout : std::cerr)
          << "usage: hwperf_bench [--quick] [--case-seconds=S] [--rss-scrapes=N] "
             "[--rss-scrapes-512=N] [--only-cpus=N] [--gzip-size]\n"
             "  --quick             ~20 s: 0.1 s per row, 1000 / 200 scrapes for RSS\n"
             "  --case-seconds      time measured per row (default 1; at most 2000 scrapes)\n"
             "  --rss-scrapes       scrapes of the real exporter before its last RSS reading "
             "(default 10000)\n"
             "  --rss-scrapes-512   the same for 512 CPUs (default 1000)\n"
             "  --only-cpus         only the synthetic rows for 2, 16, 64, 256 or 512 CPUs "
             "(e.g. under perf record)\n"
             "  --gzip-size         only the gzip size table\n";
      if (asked) std::exit(0);
      return std::nullopt;
    }
  }
  return options;
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf::bench;
  const auto options = parse(argc, argv);
  if (!options) return 2;
  // Startup notes (dropped events, RAPL probing) would interleave with the tables.
  hwperf::log::set_level(hwperf::LogLevel::warn);
  try {
    if (!options->rss_probe.empty()) return rss_probe(options->rss_probe, options->rss_scrapes);
    if (options->gzip_size_only) {
      run_gzip_size();
      return 0;
    }
    const std::int64_t start = wall_ns();
    std::printf("load average at start: %s\n", load_average().c_str());
    run_synthetic(*options);
    if (options->only_cpus == 0) {
      run_gzip_size();
      run_authentication(*options);
      run_refusal_timing(*options);
      run_real(*options);
      run_rss(*options);
    }
    std::printf("\nbench took %.1f s; load average at end: %s\n",
                static_cast<double>(wall_ns() - start) / 1e9, load_average().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hwperf_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
