// hwperf_topology_bench: what /topology.json costs next to a /metrics scrape at 512 synthetic
// CPUs (topology collector + PAPI with eight events per CPU from a fake counter source, as
// hwperf_bench), and how large page and JSON are. Prints figures, never pass/fail.
//
//   hwperf_topology_bench              the table (~10 s)
//   hwperf_topology_bench --serve      serves that exporter on 127.0.0.1 (a free port, printed
//                                      as "serving on PORT") until stdin closes, for
//                                      bench/topology_page_bench.py to load in chromium
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/build_info.h"
#include "collectors/collector_set.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/topology/topology_collector.h"
#include "common/log.h"
#include "exporter/exposition.h"
#include "web/admission.h"
#include "web/http_server.h"
#include "exporter/router.h"
#include "topology/topology.h"

namespace hwperf::bench {
namespace {

// Two sockets of 128 cores with SMT (tests/golden/topology_page_512.html draws the same).
const char* const kMachine = "pack:2 numa:4 l3:4 l2:8 core:1 pu:2";

std::unique_ptr<Exporter> make_exporter(const Topology& topology) {
  CollectorSet collectors;
  collectors.add(make_topology_collector(topology));
  collectors.add(make_papi_collector_from_source(
      PapiCollectorConfig{}, typical_hardware_events(), topology,
      std::make_unique<FakeCounterSource>(typical_hardware_events().size(), topology.cpus())));
  return std::make_unique<Exporter>(
      "/metrics", std::move(collectors),
      build_info_family({{"hwloc_version", hwloc_library_version()}, {"papi_version", "bench"}}),
      &topology);
}

struct Cost {
  std::int64_t cpu_p50 = 0, cpu_p99 = 0;
  std::size_t bytes = 0;
};

Cost measure(const Exporter& exporter, const HttpRequest& request) {
  for (int warm_up = 0; warm_up < 5; ++warm_up) exporter.handle(request);
  std::vector<std::int64_t> cpu;
  Cost cost;
  const std::int64_t deadline = wall_ns() + 2'000'000'000;
  while (cpu.size() < 50 || (wall_ns() < deadline && cpu.size() < 2000)) {
    const std::int64_t start = thread_cpu_ns();
    const HttpResponse response = exporter.handle(request);
    cpu.push_back(thread_cpu_ns() - start);
    cost.bytes = response.body.size();
  }
  cost.cpu_p50 = percentile(cpu, 0.5);
  cost.cpu_p99 = percentile(cpu, 0.99);
  return cost;
}

void print_table(const Exporter& exporter) {
  const std::string prometheus_accept =
      "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
  struct Row {
    const char* name;
    HttpRequest request;
  };
  const Row rows[] = {
      {"/metrics openmetrics", {"GET", "/metrics", prometheus_accept, "", ""}},
      {"/metrics openmetrics gzip", {"GET", "/metrics", prometheus_accept, "gzip", ""}},
      {"/topology.json", {"GET", "/topology.json", "", "", ""}},
      {"/topology.json gzip", {"GET", "/topology.json", "", "gzip", ""}},
      {"/topology", {"GET", "/topology", "", "", ""}},
      {"/topology.js", {"GET", "/topology.js", "", "", ""}},
      {"/topology.css", {"GET", "/topology.css", "", "", ""}},
  };
  std::printf(
      "== 512 synthetic CPUs (%s), topology collector + PAPI 8 events per CPU (fake source), "
      "through Exporter::handle ==\n",
      kMachine);
  std::printf("%-28s %10s %12s %12s\n", "request", "bytes", "cpu p50 us", "cpu p99 us");
  for (const Row& row : rows) {
    const Cost cost = measure(exporter, row.request);
    std::printf("%-28s %10zu %12.1f %12.1f\n", row.name, cost.bytes,
                static_cast<double>(cost.cpu_p50) / 1e3, static_cast<double>(cost.cpu_p99) / 1e3);
  }
}

int serve(const Exporter& exporter) {
  HttpServerOptions options;
  options.listen_address = ListenAddress::parse("127.0.0.1:0");
  options.worker_threads = 8;
  AdmissionPolicy policy;
  policy.serves = [&exporter](std::string_view path) { return exporter.serves(path); };
  options.admission = std::make_shared<const Admission>(std::move(policy));
  HttpServer server(options,
                    [&exporter](const HttpRequest& request) { return exporter.route(request); });
  std::printf("serving on %u\n", server.port());
  std::fflush(stdout);
  std::string ignored;
  while (std::getline(std::cin, ignored)) {
  }
  return 0;
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf;
  log::set_level(LogLevel::warn);
  TopologyConfig source;
  source.kind = TopologyConfig::Kind::synthetic;
  source.argument = bench::kMachine;
  const Topology topology = Topology::load(source);
  const auto exporter = bench::make_exporter(topology);
  if (argc > 1 && std::string(argv[1]) == "--serve") return bench::serve(*exporter);
  bench::print_table(*exporter);
  return 0;
}
