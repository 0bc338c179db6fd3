#include "bench/gzip_size.h"

#include <libdeflate.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/registry.h"
#include "common/log.h"
#include "collectors/papi/papi_config.h"
#include "collectors/rapl/rapl_config.h"
#include "config/config.h"
#include "exporter/compression/gzip.h"
#include "exporter/router.h"
#include "topology/topology.h"

namespace hwperf::bench {
namespace {

// Owns a libdeflate compressor; libdeflate_free_compressor is its only release.
struct CompressorCloser {
  void operator()(libdeflate_compressor* compressor) const noexcept {
    libdeflate_free_compressor(compressor);
  }
};

std::size_t libdeflate_gzip_size(const std::string& body, int level) {
  const std::unique_ptr<libdeflate_compressor, CompressorCloser> compressor(
      libdeflate_alloc_compressor(level));
  if (!compressor) throw std::runtime_error("libdeflate_alloc_compressor failed");
  std::vector<char> out(libdeflate_gzip_compress_bound(compressor.get(), body.size()));
  return libdeflate_gzip_compress(compressor.get(), body.data(), body.size(), out.data(),
                                  out.size());
}

// The events a default PAPI collector counts per CPU on a machine with a hardware PMU: the
// default groups' members (ipc, branch, cache, freq), as the bench's typical hardware events, and
// the default software events. This VM has no PMU, so a fake source counts them.
std::vector<events::ExportedEvent> default_papi_events() {
  auto events = typical_hardware_events();
  for (auto& event : stand_in_events({{"perf::CONTEXT-SWITCHES", "context_switches"},
                                      {"perf::CPU-MIGRATIONS", "migrations"},
                                      {"perf::PAGE-FAULTS", "page_faults"}})) {
    events.push_back(std::move(event));
  }
  return events;
}

// The default configuration on `description`'s topology and the nine-zone powercap tree under
// `sysfs`: every default collector as the registry builds it, PAPI's counted by a fake source
// when `fake_papi` (else PAPI off, as scripts/bench-side-by-side.sh runs it).
std::unique_ptr<Exporter> default_exporter(const std::string& description, const std::string& sysfs,
                                           bool fake_papi, std::optional<Topology>& topology) {
  TopologyConfig source;
  source.kind = TopologyConfig::Kind::synthetic;
  source.argument = description;
  topology.emplace(Topology::load(source));
  Config config;
  config.paths.sysfs = sysfs;
  config.get<PapiCollectorConfig>().enabled = false;
  config.get<RaplCollectorConfig>().interface = RaplInterface::powercap;
  CollectorSet collectors = build_collectors(config, *topology, {});
  if (fake_papi) {
    const auto events = default_papi_events();
    collectors.add(make_papi_collector_from_source(
        PapiCollectorConfig{}, events, *topology,
        std::make_unique<FakeCounterSource>(events.size(), topology->cpus())));
  }
  return std::make_unique<Exporter>(config.web.telemetry_path, std::move(collectors),
                                    registry_build_info());
}

void print_sizes(const char* name, const Exporter& exporter) {
  HttpRequest request{"GET", "/metrics", "text/plain;version=0.0.4", "", ""};
  const std::string identity = exporter.handle(request).body;

  request.accept_encoding = "gzip";
  exporter.handle(request);  // the first gzip scrape trains the codes the next ones use
  const std::size_t served = exporter.handle(request).body.size();
  const std::size_t level1 = libdeflate_gzip_size(identity, 1);
  std::printf("%-28s %9zu %9zu %11zu %9zu %11zu %9.3f\n", name, identity.size(), served, level1,
              gzip_compress(identity).size(), libdeflate_gzip_size(identity, 6),
              static_cast<double>(served) / static_cast<double>(level1));
}

}  // namespace

void run_gzip_size() {
  std::printf(
      "\n== gzip size: the body served with gzip (the constant prefix by zlib at level 9, once; "
      "the rest by trained codes) against the identity body compressed whole; bytes ==\n");
  // The fixture has no uncore PMU and no hwmon chip: their collectors would warn of it.
  log::set_level(LogLevel::error);
  std::printf("%-28s %9s %9s %11s %9s %11s %9s\n", "exposition", "identity", "served",
              "libdeflate1", "zlib1", "libdeflate6", "served/l1");
  TempTree tree;
  const std::string sysfs = write_nine_zone_powercap(tree);
  std::optional<Topology> topology;
  print_sizes(
      "64 CPUs, default families",
      *default_exporter("pack:2 l3:1 core:16 l2:1 l1d:1 l1i:1 pu:2", sysfs, true, topology));
  print_sizes("RAPL fixture (side by side)",
              *default_exporter("pack:2 core:2 pu:1", sysfs, false, topology));
  log::set_level(LogLevel::warn);  // hwperf_bench's level
}

}  // namespace hwperf::bench
