// HTTPS files that could block a handshake (a FIFO, an encrypted key), the protocol versions a
// web config allows, and SIGTERM while the files are wrong or clients hold every worker.
#include "tests/catch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "web/http_server.h"
#include "web/openssl_shim/loader.h"
#include "web/tls.h"
#include "tests/support/http_clients.h"
#include "tests/support/support.h"

using namespace hwperf;
using hwperf::test::http_clients::https_metrics_url;
using hwperf::test::http_clients::server_tls;
using hwperf::test::http_clients::tls_server_options;

namespace {

using hwperf::test::seconds_since;

// `openssl s_client` forced to one protocol version (security level 0 on the client, so that
// only the server's policy decides); the protocol it negotiated ("TLSv1", "TLSv1.1", ...), or
// "(NONE)".
std::string negotiated(unsigned port, const std::string& version_flag) {
  int exit_code = 0;
  const std::string output = test::run_shell(
      "echo | timeout 10 openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " " +
          version_flag + " -cipher DEFAULT@SECLEVEL=0 2>&1",
      &exit_code);
  if (output.find("Cipher is (NONE)") != std::string::npos) return "(NONE)";
  const std::string label = "Protocol  : ";
  const auto at = output.find(label);
  if (at != std::string::npos) {
    return output.substr(at + label.size(), output.find('\n', at) - at - label.size());
  }
  // TLS 1.3 sessions are printed later, if at all: then "New, TLSv1.3, Cipher is ..." says it.
  const auto fresh = output.find("New, ");
  if (fresh == std::string::npos) return "(NONE)";
  return output.substr(fresh + 5, output.find(',', fresh + 5) - fresh - 5);
}

HttpHandler answer() {
  return [](const HttpRequest&) { return HttpResponse{200, "text/plain", {}, "ok\n"}; };
}

// What check_tls_config says of a server with these files: "accepted" when it takes them.
std::string tls_files_error(const std::string& cert_file, const std::string& key_file) {
  TlsServerConfig config;
  config.cert_file = cert_file;
  config.key_file = key_file;
  try {
    check_tls_config(config);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("HTTPS: a certificate file that is a FIFO is refused at once, not waited on",
          "[http][tls][web]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const auto fifo = dir.path() / "fifo.crt";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THAT(
      tls_files_error(fifo.string(), certificates.server_key.string()),
      Catch::Contains("cert_file " + fifo.string()) && Catch::Contains("not a regular file"));
  CHECK(seconds_since(start) < 5);
}

TEST_CASE("HTTPS: an encrypted key is refused without asking for a pass phrase",
          "[http][tls][web]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const auto encrypted = dir.path() / "encrypted.key";
  int exit_code = -1;
  const std::string output =
      test::run_shell("openssl pkey -in '" + certificates.server_key.string() +
                          "' -aes256 -passout pass:secret -out '" + encrypted.string() + "'",
                      &exit_code);
  REQUIRE(exit_code == 0);
  REQUIRE_THAT(test::read_file(encrypted), Catch::Contains("ENCRYPTED"));
  CHECK_THAT(tls_files_error(certificates.server_cert.string(), encrypted.string()),
             Catch::Contains("key_file " + encrypted.string()) &&
                 Catch::Contains("encrypted private key"));
}

TEST_CASE("cert_file swapped for a FIFO, then fixed: HTTPS answers throughout, SIGTERM ends it",
          "[http][tls][e2e][web]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const auto served = dir.path() / "served.crt";
  std::filesystem::copy_file(certificates.server_cert, served);
  const auto web =
      dir.write("web.yml", "tls_server_config:\n  cert_file: " + served.string() +
                               "\n  key_file: " + certificates.server_key.string() + "\n");
  const auto config = dir.write("hwperf.yml",
                                "collectors:\n  papi:\n    enabled: false\n"
                                "  rapl:\n    enabled: false\n");
  const auto swap_in_fifo = [&] {
    std::filesystem::remove(served);
    REQUIRE(mkfifo(served.c_str(), 0600) == 0);
  };
  const bool stop_while_fifo = GENERATE(true, false);
  CAPTURE(stop_while_fifo);
  test::RunningExporter exporter(
      {"--config.file=" + config.string(), "--web.config.file=" + web.string()});
  const auto scrape = [&] {
    return test::curl({"--cacert", certificates.ca_cert.string()},
                      "https://127.0.0.1:" + std::to_string(exporter.port()) + "/-/healthy");
  };
  REQUIRE(scrape().status == 200);
  swap_in_fifo();
  // The handshake that sees the change reads nothing from the FIFO and keeps the previous pair.
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto result = scrape();
    INFO(result.error << "\n" << exporter.stderr_text());
    CHECK(result.status == 200);
    CHECK(seconds_since(start) < 5);
  }
  CHECK_THAT(exporter.stderr_text(), Catch::Contains("not a regular file"));
  if (!stop_while_fifo) {
    std::filesystem::remove(served);
    std::filesystem::copy_file(certificates.server_cert, served);
    const auto fixed = scrape();
    INFO(fixed.error << "\n" << exporter.stderr_text());
    CHECK(fixed.status == 200);
    CHECK_THAT(exporter.stderr_text(), Catch::Contains("serving the certificate read from them"));
  }
  const auto start = std::chrono::steady_clock::now();
  CHECK(exporter.stop() == 0);
  CHECK(seconds_since(start) < 5);
}

TEST_CASE("SIGTERM ends the exporter within seconds while clients hold every worker",
          "[http][e2e][web]") {
  test::TempDir dir;
  const auto config = dir.write("hwperf.yml",
                                "collectors:\n  papi:\n    enabled: false\n"
                                "  rapl:\n    enabled: false\n");
  test::RunningExporter exporter(
      {"--config.file=" + config.string(), "--web.max-connections=4", "--web.request-timeout=60s"});
  // Half a request head each, on more connections than workers: every worker waits on a client
  // for up to the one-minute deadline.
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(test::connect_to(exporter.port()));
    const std::string partial = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
    REQUIRE(write(clients.back().get(), partial.data(), partial.size()) ==
            static_cast<ssize_t>(partial.size()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  const int status = exporter.stop();
  const double took = seconds_since(start);
  INFO(exporter.stderr_text());
  CHECK(status == 0);
  CHECK(took < 5);
}

TEST_CASE("min_version TLS10 and TLS11 really admit those clients; max_version bounds them",
          "[http][tls][web]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  TlsServerConfig tls = server_tls(certificates);
  SECTION("min_version TLS10") {
    tls.min_version = TlsVersion::tls10;
    HttpServer server(tls_server_options(tls, 4), answer());
    CHECK(negotiated(server.port(), "-tls1") == "TLSv1");
    CHECK(negotiated(server.port(), "-tls1_1") == "TLSv1.1");
    CHECK(negotiated(server.port(), "-tls1_3") == "TLSv1.3");
    CHECK_THAT(describe_tls(tls),
               Catch::Contains("TLS 1.0 or later") && Catch::Contains("security level 0"));
  }
  SECTION("min_version TLS10, max_version TLS11") {
    tls.min_version = TlsVersion::tls10;
    tls.max_version = TlsVersion::tls11;
    HttpServer server(tls_server_options(tls, 4), answer());
    CHECK(negotiated(server.port(), "-tls1_1") == "TLSv1.1");
    CHECK(negotiated(server.port(), "-tls1_2") == "(NONE)");
    CHECK_THAT(describe_tls(tls), Catch::Contains("TLS 1.0 to TLS 1.1"));
  }
  SECTION("the default, TLS12: older clients are refused, and the log does not mention them") {
    HttpServer server(tls_server_options(tls, 4), answer());
    CHECK(negotiated(server.port(), "-tls1_1") == "(NONE)");
    CHECK(negotiated(server.port(), "-tls1_2") == "TLSv1.2");
    CHECK_THAT(describe_tls(tls), !Catch::Contains("security level"));
  }
}

TEST_CASE("the libssl.so CivetWeb gets is the exporter's OpenSSL shim once it is loaded",
          "[http][tls][web]") {
  load_civetweb_openssl();
  CHECK_NOTHROW(assert_civetweb_openssl_loaded());
  // An HTTPS server starts only after that check, and then serves.
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  HttpServer server(tls_server_options(server_tls(certificates), 2), answer());
  const auto result =
      test::curl({"--cacert", certificates.ca_cert.string()}, https_metrics_url(server.port()));
  INFO(result.error);
  CHECK(result.status == 200);
}
