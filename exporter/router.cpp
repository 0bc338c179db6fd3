#include "exporter/router.h"

#include <algorithm>
#include <iterator>

#include "collectors/build_info.h"
#include "config/config.h"
#include "common/text.h"
#include "exporter/compression/gzip.h"
#include "exporter/topology_page/topology_page.h"
#include "web/query.h"

namespace hwperf {
namespace {

std::string serialized(const std::vector<prometheus::MetricFamily>& families,
                       ExpositionFormat format) {
  std::string out;
  append_families(out, families, format);
  return out;
}

// A client's name is echoed only as far as a person needs to recognise it: a 16 kB query must not
// come back whole.
constexpr std::size_t kTargetEchoLimit = 128;

HttpResponse not_found() { return HttpResponse{404, kTextPlain, {}, "404 page not found\n"}; }

}  // namespace

Exporter::Exporter(std::string telemetry_path, CollectorSet collectors,
                   prometheus::MetricFamily build_info, const Topology* topology)
    : telemetry_path_(std::move(telemetry_path)),
      collectors_(std::move(collectors)),
      build_info_(std::move(build_info)),
      constant_(constant_families()) {
  if (topology != nullptr) topology_page_.emplace(*topology, telemetry_path_);
}

Exporter::ConstantExposition::ConstantExposition(
    const std::vector<prometheus::MetricFamily>& families)
    : text(serialized(families, ExpositionFormat::text_0_0_4)),
      openmetrics(serialized(families, ExpositionFormat::openmetrics_1_0_0)),
      gzip_text(text),
      gzip_openmetrics(openmetrics) {}

std::vector<prometheus::MetricFamily> Exporter::constant_families() const {
  auto families = collectors_.collect_constant();
  families.push_back(build_info_);
  return families;
}

std::vector<prometheus::MetricFamily> Exporter::gather() const {
  auto families = constant_families();
  auto scraped = collectors_.collect();
  families.insert(families.end(), std::make_move_iterator(scraped.begin()),
                  std::make_move_iterator(scraped.end()));
  return families;
}

std::string Exporter::exposition(ExpositionFormat format, bool gzip) const {
  const bool openmetrics = format == ExpositionFormat::openmetrics_1_0_0;
  if (gzip) {
    std::string rest;
    // Room for a small machine's series at once, rather than a dozen reallocations on the way.
    rest.reserve(16384);
    collectors_.collect_text(rest, format);
    rest += end_of_exposition(format);
    return (openmetrics ? constant_.gzip_openmetrics : constant_.gzip_text).compress(rest);
  }
  const std::string& constant = openmetrics ? constant_.openmetrics : constant_.text;
  std::string body;
  // The constant part is the bulk on a large machine; one allocation for it and some room for
  // the rest avoids copying it again as the body grows.
  body.reserve(constant.size() + constant.size() / 2 + 4096);
  body += constant;
  collectors_.collect_text(body, format);
  body += end_of_exposition(format);
  return body;
}

std::string Exporter::target_exposition(ExpositionFormat format, bool gzip,
                                        const std::vector<std::string>& targets) const {
  std::string body;
  append_families(body, {build_info_}, format);
  append_families(body, collectors_.collect(targets), format);
  body += end_of_exposition(format);
  return gzip ? gzip_compress(body) : body;
}

HttpResponse Exporter::telemetry(const HttpRequest& request) const {
  const std::uint64_t ticket = ++scrapes_begun_;
  const auto targets = query_values(request.query, "target");
  if (!targets.empty()) {
    const auto known = collectors_.target_names();
    for (const auto& target : targets) {
      if (std::find(known.begin(), known.end(), target) != known.end()) continue;
      return HttpResponse{400,
                          kTextPlain,
                          {},
                          "unknown target " + quoted_excerpt(target, kTargetEchoLimit) + "; " +
                              (known.empty() ? std::string("no targets are configured")
                                             : "the configured targets are: " + join(known)) +
                              "\n"};
    }
  }
  const auto format = negotiate_format(request.accept);
  HttpResponse response;
  response.content_type = content_type(format);
  const bool gzip = accepts_gzip(request.accept_encoding);
  response.body =
      targets.empty() ? exposition(format, gzip) : target_exposition(format, gzip, targets);
  response.headers.reserve(2);
  response.headers.emplace_back("Vary", "Accept, Accept-Encoding");
  if (gzip) response.headers.emplace_back("Content-Encoding", "gzip");
  // The latest scrape answered, by when it began: one that began before a mark and ends after
  // it must not count as having read what came after the mark.
  std::uint64_t answered = scrapes_answered_.load();
  while (answered < ticket && !scrapes_answered_.compare_exchange_weak(answered, ticket)) {
  }
  return response;
}

bool Exporter::serves(std::string_view path) const {
  return path == kHealthPath || path == telemetry_path_ || path == "/" || serves_topology(path);
}

HttpResponse Exporter::route(const HttpRequest& request) const {
  if (request.path == kHealthPath) {
    return HttpResponse{200, kTextPlain, {}, "OK\n"};
  }
  if (request.path == telemetry_path_) return telemetry(request);
  if (serves_topology(request.path)) {
    // The JSON reads through the scrape's own collection (the same locks, the same collectors).
    return topology_page_->respond(
        request, [this] { return collectors_.collect(); }, accepts_gzip(request.accept_encoding));
  }
  if (request.path == "/") {
    std::string body =
        "<!DOCTYPE html>\n<html><head><title>hwperf_exporter</title></head><body>\n"
        "<h1>hwperf_exporter</h1>\n<p>Hardware performance counters and CPU energy for "
        "Prometheus.</p>\n<p><a href=\"" +
        html_escape_text(telemetry_path_) + "\">Metrics</a></p>\n" +
        (topology_page_ ? "<p><a href=\"topology\">Topology</a> (live)</p>\n" : "") +
        "<h2>Active collectors</h2>\n<ul>\n";
    for (const auto& name : collectors_.names())
      body += "<li>" + html_escape_text(name) + "</li>\n";
    body += "</ul>\n<p>Version " + html_escape_text(exporter_version()) + " (revision " +
            html_escape_text(exporter_revision()) + ")</p>\n</body></html>\n";
    return HttpResponse{200, "text/html; charset=utf-8", {}, body};
  }
  return not_found();
}

}  // namespace hwperf
