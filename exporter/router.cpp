#include "exporter/router.h"

#include "collectors/build_info.h"
#include "exporter/exposition.h"

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

}  // namespace

Exporter::Exporter(std::string telemetry_path, CollectorSet collectors,
                   prometheus::MetricFamily build_info, WebConfigFile web_config)
    : telemetry_path_(std::move(telemetry_path)),
      collectors_(std::move(collectors)),
      build_info_(std::move(build_info)),
      web_config_(std::move(web_config)) {}

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
  if (request.path == "/-/healthy") {
    return HttpResponse{200, "text/plain; charset=utf-8", {}, "OK\n"};
  }
  if (!basic_auth_allows(web_config_, request.authorization)) {
    return HttpResponse{401,
                        "text/plain; charset=utf-8",
                        {{"WWW-Authenticate", "Basic realm=\"hwperf_exporter\", charset=\"UTF-8\""}},
                        "401 Unauthorized\n"};
  }
  if (request.path == telemetry_path_) {
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
  if (request.path == "/") {
    std::string body =
        "<!DOCTYPE html>\n<html><head><title>hwperf_exporter</title></head><body>\n"
        "<h1>hwperf_exporter</h1>\n<p>Hardware performance counters and CPU energy for "
        "Prometheus.</p>\n<p><a href=\"" +
        html_escape(telemetry_path_) + "\">Metrics</a></p>\n<h2>Active collectors</h2>\n<ul>\n";
    for (const auto& name : collectors_.names()) body += "<li>" + html_escape(name) + "</li>\n";
    body += "</ul>\n<p>Version " + html_escape(exporter_version()) + " (revision " +
            html_escape(exporter_revision()) + ")</p>\n</body></html>\n";
    return HttpResponse{200, "text/html; charset=utf-8", {}, body};
  }
  return HttpResponse{404, "text/plain; charset=utf-8", {}, "404 page not found\n"};
}

}  // namespace hwperf
