// exporter-toolkit parity for client certificates: a node_exporter web config with an inline
// client_ca and client_allowed_sans under VerifyClientCertIfGiven, the SAN check under every
// policy that asks for a certificate, and a client CA file followed on disk like cert and key.
#include "tests/catch.hpp"

#include <string>
#include <vector>

#include "config/web_config.h"
#include "web/http_server.h"
#include "web/tls.h"
#include "tests/support/http_clients.h"
#include "tests/support/support.h"

using namespace hwperf;
using hwperf::test::http_clients::check_rotated;
using hwperf::test::http_clients::https_metrics_url;
using hwperf::test::http_clients::server_tls;
using hwperf::test::http_clients::simple_handler;
using hwperf::test::http_clients::tls_server_options;

namespace {

enum class Presented { none, allowed, unknown_ca };

std::vector<std::string> client_args(const test::TestCertificates& certificates,
                                     Presented presented) {
  std::vector<std::string> args = {"--cacert", certificates.ca_cert.string()};
  if (presented == Presented::allowed) {
    args.insert(args.end(), {"--cert", certificates.client_cert.string(), "--key",
                             certificates.client_key.string()});
  } else if (presented == Presented::unknown_ca) {
    args.insert(args.end(), {"--cert", certificates.rogue_cert.string(), "--key",
                             certificates.rogue_key.string()});
  }
  return args;
}

// The PEM text indented as a YAML block scalar under a key two levels deep.
std::string yaml_block(const std::string& pem) {
  std::string out = "|\n";
  std::size_t start = 0;
  while (start < pem.size()) {
    const auto end = pem.find('\n', start);
    out += "    " + pem.substr(start, end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("a node_exporter web config with inline client_ca and client_allowed_sans works",
          "[http][tls][e2e][web]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  // As node_exporter's documentation writes it: the CA inline, the SAN the client certificate
  // carries (prometheus.example, tests/support/support.h) allowed.
  const auto web = dir.write(
      "web-config.yml", "tls_server_config:\n  cert_file: " + certificates.server_cert.string() +
                            "\n  key_file: " + certificates.server_key.string() +
                            "\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca: " +
                            yaml_block(test::read_file(certificates.ca_cert)) +
                            "  client_allowed_sans:\n    - prometheus.example\n");
  const auto config = dir.write("hwperf.yml",
                                "collectors:\n  papi:\n    enabled: false\n"
                                "  rapl:\n    enabled: false\n");
  test::RunningExporter exporter(
      {"--config.file=" + config.string(), "--web.config.file=" + web.string()});
  const std::string url = "https://127.0.0.1:" + std::to_string(exporter.port()) + "/metrics";
  const auto allowed = test::curl(client_args(certificates, Presented::allowed), url);
  INFO(allowed.error << "\n" << exporter.stderr_text());
  CHECK(allowed.status == 200);
  CHECK_THAT(allowed.body, Catch::Contains("hwperf_build_info"));
  // exporter-toolkit's SAN check fails the handshake for a client with no certificate.
  const auto without = test::curl(client_args(certificates, Presented::none), url);
  CHECK(without.status == 0);
  const auto unknown = test::curl(client_args(certificates, Presented::unknown_ca), url);
  CHECK(unknown.status == 0);
  CHECK(exporter.stop() == 0);
}

TEST_CASE("client_allowed_sans applies under every policy that asks for a certificate",
          "[http][tls][web]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  struct Row {
    ClientAuth policy;
    const char* allowed_san;
    Presented presented;
    bool served;
  };
  const auto row =
      GENERATE(Row{ClientAuth::request, "prometheus.example", Presented::allowed, true},
               Row{ClientAuth::request, "other.example", Presented::allowed, false},
               Row{ClientAuth::request, "prometheus.example", Presented::none, false},
               Row{ClientAuth::require_any, "other.example", Presented::allowed, false},
               Row{ClientAuth::verify_if_given, "prometheus.example", Presented::allowed, true},
               Row{ClientAuth::verify_if_given, "other.example", Presented::allowed, false},
               Row{ClientAuth::verify_if_given, "prometheus.example", Presented::unknown_ca, false},
               Row{ClientAuth::require_and_verify, "prometheus.example", Presented::allowed, true},
               Row{ClientAuth::require_and_verify, "other.example", Presented::allowed, false});
  CAPTURE(name_of(kClientAuthNames, row.policy), row.allowed_san, static_cast<int>(row.presented));
  TlsServerConfig tls = server_tls(certificates);
  tls.client_auth = row.policy;
  tls.client_ca_pem = test::read_file(certificates.ca_cert);
  tls.client_allowed_sans = {row.allowed_san};
  HttpServer server(tls_server_options(tls, 4), simple_handler());
  const auto result =
      test::curl(client_args(certificates, row.presented), https_metrics_url(server.port()));
  INFO(result.error);
  CHECK(result.status == (row.served ? 200 : 0));
}

TEST_CASE("a rotated client CA file is used without a restart", "[http][tls][web]") {
  test::TempDir old_dir;
  test::TempDir new_dir;
  test::TempDir served_dir;
  const auto old_certificates = test::make_test_certificates(old_dir);
  const auto new_certificates = test::make_test_certificates(new_dir);
  const auto ca_file = served_dir.write("ca.crt", test::read_file(old_certificates.ca_cert));
  TlsServerConfig tls = server_tls(old_certificates);
  tls.client_auth = ClientAuth::require_and_verify;
  tls.client_ca_file = ca_file.string();
  HttpServer server(tls_server_options(tls, 4), simple_handler());
  const auto with_client_of = [&](const test::TestCertificates& client) {
    return test::curl({"--cacert", old_certificates.ca_cert.string(), "--cert",
                       client.client_cert.string(), "--key", client.client_key.string()},
                      https_metrics_url(server.port()));
  };
  REQUIRE(with_client_of(old_certificates).status == 200);
  CHECK(with_client_of(new_certificates).status == 0);

  served_dir.write("ca.crt", test::read_file(new_certificates.ca_cert));
  check_rotated(with_client_of, new_certificates, old_certificates,
                "verifying client certificates with the CAs read");
  // A CA file half written keeps the CAs read before, logged once.
  served_dir.write("ca.crt", "-----BEGIN CERTIFICATE-----\ntruncated\n");
  {
    const test::CapturedStderr log;
    CHECK(with_client_of(new_certificates).status == 200);
    CHECK_THAT(log.text(), Catch::Contains("still verifying with the previous CAs"));
  }
}
