#include "exporter/app.h"

#include <signal.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "collectors/build_info.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/rapl/rapl_collector.h"
#include "collectors/rapl/rapl_factory.h"
#include "collectors/topology_collector.h"
#include "config/errors.h"
#include "config/loader.h"
#include "common/log.h"
#include "exporter/cli.h"
#include "exporter/exposition.h"
#include "exporter/http_server.h"

namespace hwperf {
namespace {

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

void log_problems(const ConfigError& error) {
  for (const auto& problem : error.problems()) log::error(problem);
}

// Runs one startup step and maps its failure to the exit code: 2 for what the user asked for
// (ConfigError), 1 for what the machine could not do; 0 when it succeeded.
template <typename Step>
int startup_step(Step&& step) {
  try {
    step();
  } catch (const ConfigError& e) {
    log_problems(e);
    return 2;
  } catch (const std::exception& e) {
    log::error(e.what());
    return 1;
  }
  return 0;
}

}  // namespace

CollectorSet build_collectors(const Config& config, const Topology& topology) {
  CollectorSet set;
  const auto& c = config.collectors;
  if (c.topology.enabled) set.add(make_topology_collector(topology));
  if (c.papi.enabled) set.add(make_papi_collector(c.papi, topology, config.paths));
  if (c.rapl.enabled) set.add(make_rapl_collector(c.rapl, config.paths, topology));
  return set;
}

Exporter::Exporter(Config config, Topology topology)
    : config_(std::move(config)),
      collectors_(build_collectors(config_, topology)),
      build_info_(build_info_family(papi_library_version(), hwloc_library_version())) {}

Exporter::Exporter(Config config, CollectorSet collectors, std::string papi_version,
                   std::string hwloc_version)
    : config_(std::move(config)),
      collectors_(std::move(collectors)),
      build_info_(build_info_family(papi_version, hwloc_version)) {}

std::vector<prometheus::MetricFamily> Exporter::gather() const {
  auto families = collectors_.collect();
  families.push_back(build_info_);
  return families;
}

HttpResponse Exporter::handle(const HttpRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    return HttpResponse{405, "text/plain; charset=utf-8", {{"Allow", "GET, HEAD"}},
                        "method not allowed\n"};
  }
  if (request.path == config_.web.telemetry_path) {
    const auto format = negotiate_format(request.accept);
    HttpResponse response;
    response.content_type = content_type(format);
    response.body = serialize(gather(), format);
    response.headers.emplace_back("Vary", "Accept, Accept-Encoding");
    if (accepts_gzip(request.accept_encoding)) {
      response.body = gzip_compress(response.body);
      response.headers.emplace_back("Content-Encoding", "gzip");
    }
    return response;
  }
  if (request.path == "/-/healthy") {
    return HttpResponse{200, "text/plain; charset=utf-8", {}, "OK\n"};
  }
  if (request.path == "/") {
    std::string body =
        "<!DOCTYPE html>\n<html><head><title>hwperf_exporter</title></head><body>\n"
        "<h1>hwperf_exporter</h1>\n<p>Hardware performance counters and CPU energy for "
        "Prometheus.</p>\n<p><a href=\"" +
        html_escape(config_.web.telemetry_path) + "\">Metrics</a></p>\n<h2>Active collectors</h2>\n<ul>\n";
    for (const auto& name : collectors_.names()) body += "<li>" + html_escape(name) + "</li>\n";
    body += "</ul>\n<p>Version " + html_escape(exporter_version()) + " (revision " +
            html_escape(exporter_revision()) + ")</p>\n</body></html>\n";
    return HttpResponse{200, "text/html; charset=utf-8", {}, body};
  }
  return HttpResponse{404, "text/plain; charset=utf-8", {}, "404 page not found\n"};
}

int run_exporter(const std::vector<std::string>& args) {
  CliOptions cli;
  try {
    cli = parse_cli(args);
  } catch (const ConfigError& e) {
    log_problems(e);
    return 2;
  }
  if (cli.help) {
    std::cout << usage_text();
    return 0;
  }
  if (cli.version) {
    std::cout << "hwperf_exporter version " << exporter_version() << " (revision "
              << exporter_revision() << ", papi " << papi_library_version() << ", hwloc "
              << hwloc_library_version() << ")\n";
    return 0;
  }

  Config config;
  try {
    config = load_config_file(cli.config_file.value_or(""));
    apply_cli(cli, config);
    try {
      civetweb_listening_port(config.web.listen_address);
    } catch (const std::invalid_argument& e) {
      throw ConfigError({e.what()});
    }
  } catch (const ConfigError& e) {
    log_problems(e);
    return 2;
  }
  log::set_level(config.log_level);

  // Blocked before any thread exists (PAPI owners, RAPL guard, CivetWeb workers) so that every
  // thread inherits the mask and only sigwait() below sees SIGTERM/SIGINT.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::optional<Topology> topology;
  try {
    topology.emplace(Topology::load(config.topology));
  } catch (const std::exception& e) {
    log::error(e.what());
    return config.topology.kind == TopologyConfig::Kind::system ? 1 : 2;
  }
  log::info("topology: " + topology->description());

  if (cli.check_config) {
    return startup_step([&] {
      std::cout << dump_config(config);
      std::cout << "# topology: " << topology->description() << "\n";
      if (config.collectors.rapl.enabled) rapl::validate_rapl_config(config.collectors.rapl);
      if (config.collectors.papi.enabled) {
        for (const auto& line :
             papi_check_report(config.collectors.papi, *topology, config.paths)) {
          std::cout << "# papi: " << line << "\n";
        }
      }
    });
  }

  std::unique_ptr<Exporter> exporter;
  if (const int failed = startup_step([&] {
        exporter = std::make_unique<Exporter>(config, std::move(*topology));
      })) {
    return failed;
  }

  if (cli.once) {
    std::cout << serialize(exporter->gather(), ExpositionFormat::text_0_0_4) << std::flush;
    return 0;
  }

  std::unique_ptr<HttpServer> server;
  if (const int failed = startup_step([&] {
        HttpServerOptions options;
        options.listen_address = config.web.listen_address;
        const Exporter* routes = exporter.get();
        server = std::make_unique<HttpServer>(
            options, [routes](const HttpRequest& request) { return routes->handle(request); });
      })) {
    return failed;
  }
  log::info("Listening on " + server->bound_address() + " (metrics at " +
            config.web.telemetry_path + ")");

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  log::info(std::string("received ") + (signal_number == SIGTERM ? "SIGTERM" : "SIGINT") +
            ", shutting down");
  server.reset();
  exporter.reset();
  return 0;
}

}  // namespace hwperf
