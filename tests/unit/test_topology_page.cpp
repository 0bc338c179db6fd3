// The /topology page without a browser: the HTML against golden files, the nesting it draws,
// cache sizes as lstopo prints them, the JSON's shape and escaping, the routes' admission and
// headers, and the size at 512 CPUs. tests/browser/topology_page_test.py runs it in chromium.
#include "tests/catch.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "collectors/build_info.h"
#include "collectors/metrics.h"
#include "exporter/router.h"
#include "web/admission.h"
#include "exporter/topology_page/topology_page.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

const char* const kThirtyTwo = "pack:2 numa:2 l3:1 core:4 pu:2";
// Two sockets of 128 cores with SMT, 4 NUMA nodes each, an L3 per 8 cores and an L2 per core, as
// a two-socket AMD Genoa server has them.
const char* const kFiveTwelve = "pack:2 numa:4 l3:4 l2:8 core:1 pu:2";

// For each hardware thread's box, the opening lines of the boxes around it, outermost first.
std::map<unsigned, std::vector<std::string>> ancestors(const std::string& html) {
  std::map<unsigned, std::vector<std::string>> result;
  std::vector<std::string> open;
  std::size_t pos = html.find("<main");
  while (true) {
    const std::size_t opening = html.find("<div", pos), closing = html.find("</div>", pos);
    if (opening == std::string::npos && closing == std::string::npos) break;
    if (opening < closing) {
      const std::string tag = html.substr(opening, html.find('>', opening) - opening);
      if (tag.find("class=\"pu\"") != std::string::npos) {
        result[static_cast<unsigned>(std::stoul(tag.substr(tag.find("id=\"c") + 5)))] = open;
        pos = html.find("</div>", opening) + 6;  // a hardware thread holds no box
        continue;
      }
      // The box's label follows its opening tag on the same line.
      open.push_back(html.substr(opening, html.find('\n', opening) - opening));
      pos = opening + 4;
    } else {
      open.pop_back();
      pos = closing + 6;
    }
  }
  return result;
}

void check_golden(const std::string& actual, const std::string& name) {
  const std::string path = std::string(HWPERF_SOURCE_DIR) + "/tests/golden/" + name;
  if (std::getenv("HWPERF_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual;
    WARN("golden file rewritten: " + path);
  }
  CHECK(actual == test::read_file(path));
}

// A collector that counts its collections and exports what a scrape's families look like.
class FakeCollector final : public Collector {
 public:
  explicit FakeCollector(std::vector<prometheus::MetricFamily> families)
      : families_(std::move(families)) {}
  std::string name() const override { return "fake"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    ++collections;
    out.insert(out.end(), families_.begin(), families_.end());
  }
  std::atomic<int> collections{0};

 private:
  std::vector<prometheus::MetricFamily> families_;
};

std::string header(const HttpResponse& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

}  // namespace

TEST_CASE("the page for two synthetic topologies matches its golden file", "[topology_page]") {
  check_golden(TopologyPage(test::synthetic_topology(kThirtyTwo), "/metrics").html(),
               "topology_page_32.html");
  check_golden(TopologyPage(test::synthetic_topology(kFiveTwelve), "/metrics").html(),
               "topology_page_512.html");
}

TEST_CASE("the page nests package > NUMA node > L3 > L2 > core > hardware thread",
          "[topology_page]") {
  struct Case {
    const char* description;
    std::size_t packages, numa_nodes, l3s, l2s, cores;
    const char* merged;  // a box drawn with two labels (one level holding one box of the next)
  };
  const Case machine = GENERATE(Case{kThirtyTwo, 2, 4, 4, 0, 16, "NUMANode P#3 + L3 (16MB)"},
                                Case{kFiveTwelve, 2, 8, 32, 256, 256, "L2 (4096KB) + Core P#9"});
  CAPTURE(machine.description);
  const Topology topology = test::synthetic_topology(machine.description);
  const std::string html = TopologyPage(topology, "/metrics").html();
  CHECK(test::occurrences(html, "class=\"box pkg") == machine.packages);
  CHECK(test::occurrences(html, "class=\"box numa") == machine.numa_nodes);
  CHECK(test::occurrences(html, "L3 (16MB)") == machine.l3s);
  CHECK(test::occurrences(html, "L2 (4096KB)") == machine.l2s);
  CHECK(test::occurrences(html, "core\" id=\"k") == machine.cores);
  CHECK(test::occurrences(html, "class=\"pu\"") == topology.threads().size());
  CHECK_THAT(html, Catch::Contains(machine.merged));
  // Each hardware thread's box lies in its core's, that in one L3, that in its NUMA node's and
  // that in its package's, in that order (outermost first).
  const auto chains = ancestors(html);
  for (const HardwareThread& thread : topology.threads()) {
    CAPTURE(thread.cpu);
    const auto chain = chains.find(thread.cpu);
    REQUIRE(chain != chains.end());
    const auto& boxes = chain->second;
    auto position = [&](const std::string& needle) {
      std::vector<std::size_t> found;
      for (std::size_t i = 0; i < boxes.size(); ++i) {
        if (boxes[i].find(needle) != std::string::npos) found.push_back(i);
      }
      return found;
    };
    const auto package = position("id=\"p" + std::to_string(thread.package) + "\"");
    const auto numa = position("id=\"n" + std::to_string(thread.numa_node) + "\"");
    const auto l3 = position("L3 (");
    const auto core = position("id=\"k" + std::to_string(thread.package) + "-" +
                               std::to_string(thread.core) + "\"");
    REQUIRE(package.size() == 1);
    REQUIRE(numa.size() == 1);
    REQUIRE(l3.size() == 1);
    REQUIRE(core.size() == 1);
    CHECK(package[0] == 0);
    CHECK(package[0] < numa[0]);
    CHECK(numa[0] <= l3[0]);  // one box where both hold the same CPUs
    CHECK(l3[0] < core[0]);
    CHECK(core[0] == boxes.size() - 1);
    CHECK(position("class=\"box pkg").size() == 1);
    CHECK(position("class=\"box numa").size() == 1);
  }
}

TEST_CASE("an L3 spanning two NUMA nodes (sub-NUMA clustering) is drawn around them",
          "[topology_page]") {
  TopologyConfig source;
  source.kind = TopologyConfig::Kind::xml;
  source.argument = test::fixtures_dir() + "/topology/two_socket_snc2.xml";
  const std::string html = TopologyPage(Topology::load(source), "/metrics").html();
  // In each package: the L3 box opens before both of its NUMA nodes.
  const auto l3 = html.find("L3 (30MB)");
  REQUIRE(l3 != std::string::npos);
  CHECK(l3 < html.find("id=\"n0\""));
  CHECK(html.find("id=\"n1\"") < html.find("L3 (30MB)", l3 + 1));
  CHECK(test::occurrences(html, "L3 (30MB)") == 2);
  CHECK(test::occurrences(html, "class=\"box numa") == 4);
}

TEST_CASE("cache sizes read as lstopo prints them", "[topology_page]") {
  const std::uint64_t bytes = GENERATE(1000, 49152, 1048576, 1572864, 10485759, 10485760, 33554432,
                                       12345678, 3221225472ULL);
  CAPTURE(bytes);
  const std::string ours = lstopo_size(bytes);
  // The reference is lstopo itself (the hwloc package) on a one-cache synthetic machine.
  int exit_code = -1;
  const std::string lstopo = test::run_shell(
      "lstopo-no-graphics -i 'pack:1 l3:1(size=" + std::to_string(bytes) + ") pu:1' --of console",
      &exit_code);
  REQUIRE(exit_code == 0);
  CHECK_THAT(lstopo, Catch::Contains("L3 L#0 (" + ours + ")"));
}

TEST_CASE("labels with markup or quotes render as text", "[topology_page]") {
  const std::string evil = "<script>alert(\"x\")</script> 'single' & more";
  // The topology's description is what the page writes from the server side (it names the
  // synthetic description or XML file the user configured).
  const Topology topology({{0, 0, 0, 0, 0}, {1, 1, 0, 0, 0}}, {}, evil);
  const std::string html = TopologyPage(topology, "/metrics\"><script>x</script>").html();
  CHECK(test::occurrences(html, "<script") == 1);  // the page's own script element only
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; "
                                   "&#39;single&#39; &amp; more"));
  CHECK(test::occurrences(html, "\"><script>") == 0);

  // Names and help reach the browser only through the JSON, which the script puts into the page
  // as text (textContent, option.text, title); here the JSON must carry them back exactly.
  auto family = make_family("hwperf_cpu_evil_total", evil, prometheus::MetricType::Counter);
  add_counter(family, {{"cpu", "0"}, {"target", evil}}, std::uint64_t{7});
  const std::string json = topology_json({family}, 1.5);
  CHECK(test::occurrences(json, "<") == 0);
  test::TempDir dir;
  const auto path = dir.write("topology.json", json);
  int exit_code = -1;
  const std::string decoded = test::run_shell(
      "/usr/bin/python3 -c 'import json,sys; f = json.load(open(sys.argv[1]))[\"families\"][0];"
      " sys.stdout.write(f[\"help\"] + \"|\" + f[\"series\"][0][\"labels\"][\"target\"])' " +
          path.string(),
      &exit_code);
  REQUIRE(exit_code == 0);
  CHECK(decoded == evil + "|" + evil);
}

TEST_CASE("the JSON holds counter totals per CPU, core and package, grouped by their other labels",
          "[topology_page]") {
  auto cpu =
      make_family("hwperf_cpu_clock_seconds_total", "CPU time", prometheus::MetricType::Counter);
  for (unsigned c : {0u, 1u}) {
    add_counter(cpu, {{"cpu", std::to_string(c)}, {"core", "0"}, {"package", "0"}}, 1.25 + c);
  }
  auto target = make_family("hwperf_target_x_total", "per target", prometheus::MetricType::Counter);
  add_counter(target, {{"target", "a"}, {"cpu", "0"}}, std::uint64_t{1});
  add_counter(target, {{"target", "b"}, {"cpu", "0"}}, std::uint64_t{2});
  add_counter(target, {{"target", "a"}, {"cpu", "1"}}, std::uint64_t{3});
  auto core = make_family("hwperf_core_x_total", "per core", prometheus::MetricType::Counter);
  add_counter(core, {{"core", "3"}, {"package", "1"}}, std::uint64_t{9});
  auto energy =
      make_family("hwperf_rapl_package_joules_total", "J", prometheus::MetricType::Counter);
  add_counter(energy, {{"package", "0"}, {"die", "1"}}, 812.5);
  auto gauge = make_family("hwperf_cpu_online", "gauge", prometheus::MetricType::Gauge);
  add_gauge(gauge, {{"cpu", "0"}}, 1);
  auto machine = make_family("hwperf_machine_total", "none", prometheus::MetricType::Counter);
  add_counter(machine, {}, std::uint64_t{5});

  const std::string json = topology_json({cpu, target, core, energy, gauge, machine}, 12.3456);
  CHECK(json ==
        "{\"timestamp\":12.346,\"families\":[\n"
        "{\"name\":\"hwperf_cpu_clock_seconds_total\",\"help\":\"CPU time\",\"scope\":\"cpu\","
        "\"series\":[{\"labels\":{},\"cpu\":[0,1],\"value\":[1.25,2.25]}]},\n"
        "{\"name\":\"hwperf_target_x_total\",\"help\":\"per target\",\"scope\":\"cpu\","
        "\"series\":[{\"labels\":{\"target\":\"a\"},\"cpu\":[0,1],\"value\":[1,3]},"
        "{\"labels\":{\"target\":\"b\"},\"cpu\":[0],\"value\":[2]}]},\n"
        "{\"name\":\"hwperf_core_x_total\",\"help\":\"per core\",\"scope\":\"core\","
        "\"series\":[{\"labels\":{},\"package\":[1],\"core\":[3],\"value\":[9]}]},\n"
        "{\"name\":\"hwperf_rapl_package_joules_total\",\"help\":\"J\",\"scope\":\"package\","
        "\"series\":[{\"labels\":{},\"package\":[0],\"die\":[1],\"value\":[812.5]}]}]}\n");
}

TEST_CASE("the topology routes share /metrics' admission and carry a strict CSP",
          "[topology_page][http]") {
  const Topology topology = test::synthetic_topology(kThirtyTwo);
  auto family = make_family("hwperf_cpu_x_total", "x", prometheus::MetricType::Counter);
  add_counter(family, {{"cpu", "0"}}, std::uint64_t{1});
  auto fake = std::make_unique<FakeCollector>(std::vector<prometheus::MetricFamily>{family});
  FakeCollector* counter = fake.get();
  CollectorSet collectors;
  collectors.add(std::move(fake));
  const Exporter exporter("/metrics", std::move(collectors), build_info_family({}), &topology);
  AdmissionPolicy policy;
  policy.serves = [&exporter](std::string_view path) { return exporter.serves(path); };
  policy.users["prometheus"] = test::bcrypt_hash("s3cret", 4);
  const Admission admission(std::move(policy));
  // What the server does with a request: admission first, then the route.
  const auto serve = [&](const HttpRequest& request) {
    Admission::Ticket ticket = admission.admit(request);
    return ticket.admitted() ? exporter.route(request) : ticket.refusal();
  };
  const std::string right = "Basic " + test::base64("prometheus:s3cret");
  for (const char* path : {"/topology", "/topology.json", "/topology.js", "/topology.css"}) {
    CAPTURE(path);
    CHECK(serve(test::get_request(path)).status == 401);
    const HttpResponse response = serve(test::get_request(path, right));
    CHECK(response.status == 200);
    const std::string csp = header(response, "Content-Security-Policy");
    CHECK_THAT(csp, Catch::Contains("default-src 'none'") && Catch::Contains("script-src 'self'") &&
                        Catch::Contains("frame-ancestors 'none'"));
    CHECK(csp.find("unsafe") == std::string::npos);
    CHECK(header(response, "X-Content-Type-Options") == "nosniff");
  }
  CHECK(serve(test::get_request("/topology.nope", right)).status == 404);
  // Only the JSON collects, through the scrape's collector set, once per request.
  const int before = counter->collections;
  const HttpResponse json = exporter.handle(test::get_request("/topology.json", right));
  CHECK(counter->collections == before + 1);
  CHECK(json.content_type == "application/json");
  CHECK_THAT(json.body, Catch::Contains("\"name\":\"hwperf_cpu_x_total\""));
  HttpRequest gzip = test::get_request("/topology.json", right);
  gzip.accept_encoding = "gzip";
  const HttpResponse zipped = exporter.handle(gzip);
  CHECK(header(zipped, "Content-Encoding") == "gzip");
  CHECK_THAT(test::gunzip(zipped.body), Catch::Contains("\"name\":\"hwperf_cpu_x_total\""));
  exporter.handle(test::get_request("/topology", right));
  exporter.handle(test::get_request("/topology.js", right));
  CHECK(counter->collections == before + 2);
  CHECK_THAT(exporter.handle(test::get_request("/", right)).body,
             Catch::Contains("href=\"topology\""));

  // Without a topology there is no page, and the landing page does not link one.
  const Exporter without("/metrics", CollectorSet{}, build_info_family({}));
  CHECK(without.handle(test::get_request("/topology")).status == 404);
  CHECK(without.handle(test::get_request("/")).body.find("topology") == std::string::npos);
}

TEST_CASE("page and JSON stay under 200 KB at 512 CPUs", "[topology_page]") {
  const Topology topology = test::synthetic_topology(kFiveTwelve);
  REQUIRE(topology.threads().size() == 512);
  // What the default PAPI events (ten) and CPU time export per CPU after a day of counting:
  // 13-digit totals and nanosecond-resolution seconds; RAPL's package energy on top.
  std::vector<prometheus::MetricFamily> families;
  for (int event = 0; event < 10; ++event) {
    auto family = make_family("hwperf_cpu_event" + std::to_string(event) + "_total", "help text",
                              prometheus::MetricType::Counter);
    for (const HardwareThread& thread : topology.threads()) {
      add_counter(family,
                  {{"cpu", std::to_string(thread.cpu)},
                   {"core", std::to_string(thread.core)},
                   {"package", std::to_string(thread.package)},
                   {"numa_node", std::to_string(thread.numa_node)}},
                  std::uint64_t{8'640'000'000'000} + thread.cpu * 7919u * (event + 1));
    }
    families.push_back(std::move(family));
  }
  auto seconds =
      make_family("hwperf_cpu_clock_seconds_total", "CPU time", prometheus::MetricType::Counter);
  for (const HardwareThread& thread : topology.threads()) {
    add_counter(seconds, {{"cpu", std::to_string(thread.cpu)}}, 86400.123456789 + thread.cpu / 7.0);
  }
  families.push_back(std::move(seconds));
  const std::size_t page = TopologyPage(topology, "/metrics").html().size() +
                           topology_page_script().size() + topology_page_style().size();
  const std::size_t json = topology_json(families, 1e9).size();
  INFO("page (HTML, script, style) " << page << " bytes, JSON " << json << " bytes");
  CHECK(page + json < 200 * 1024);
}
