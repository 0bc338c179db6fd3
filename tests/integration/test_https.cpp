// HTTPS from tls_server_config: the in-process server with certificates made per test, a real TLS
// client (curl), client certificate policies as Go's crypto/tls defines them (exporter-toolkit's
// client_auth_type), the lowest protocol version, and files that cannot be used.
#include "tests/catch.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "web/http_server.h"
#include "web/tls.h"
#include "tests/support/http_clients.h"
#include "tests/support/support.h"

using namespace hwperf;
using hwperf::test::http_clients::check_rotated;

namespace {

HttpServerOptions tls_options(const test::TestCertificates& certificates) {
  HttpServerOptions options;
  options.listen_address = ListenAddress::parse("127.0.0.1:0");
  options.worker_threads = 8;
  options.request_timeout_ms = 1000;
  TlsServerConfig tls;
  tls.cert_file = certificates.server_cert.string();
  tls.key_file = certificates.server_key.string();
  options.tls = tls;
  return options;
}

HttpHandler answer(std::string body) {
  return [body = std::move(body)](const HttpRequest& request) {
    return HttpResponse{200, "text/plain; charset=utf-8", {}, request.path + ": " + body};
  };
}

std::string url(const HttpServer& server, const std::string& path) {
  return "https://127.0.0.1:" + std::to_string(server.port()) + path;
}

}  // namespace

TEST_CASE("HTTPS: a TLS client gets the response, plain HTTP to the port gets none",
          "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  HttpServer server(tls_options(certificates), answer("served over TLS"));

  const auto scraped =
      test::curl({"--cacert", certificates.ca_cert.string()}, url(server, "/metrics"));
  INFO(scraped.error);
  CHECK(scraped.exit_code == 0);
  CHECK(scraped.status == 200);
  CHECK(scraped.body == "/metrics: served over TLS");

  // The client checks the server too: a CA that did not sign the server's certificate fails.
  const auto unverified =
      test::curl({"--cacert", certificates.rogue_cert.string()}, url(server, "/metrics"));
  CHECK(unverified.status == 0);
  CHECK(unverified.exit_code != 0);

  // Plain HTTP on the TLS port: the handshake fails and no HTTP response comes back.
  bool plain_answered = false;
  try {
    plain_answered = test::http_get(server.port(), "/metrics").status != 0;
  } catch (const std::exception&) {
    plain_answered = false;  // the server closed the connection without an HTTP response
  }
  CHECK_FALSE(plain_answered);
  const auto plain =
      test::curl({}, "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  CHECK(plain.status == 0);

  // ... and the server keeps serving TLS clients.
  CHECK(test::curl({"--cacert", certificates.ca_cert.string()}, url(server, "/-/healthy")).status ==
        200);
}

TEST_CASE("HTTPS: min_version refuses older clients", "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const std::vector<std::string> tls12_client = {"--cacert", certificates.ca_cert.string(),
                                                 "--tls-max", "1.2"};
  auto options = tls_options(certificates);

  options.tls->min_version = TlsVersion::tls12;
  {
    HttpServer server(options, answer("ok"));
    const auto result = test::curl(tls12_client, url(server, "/"));
    INFO(result.error);
    CHECK(result.status == 200);
  }
  options.tls->min_version = TlsVersion::tls13;
  {
    HttpServer server(options, answer("ok"));
    const auto refused = test::curl(tls12_client, url(server, "/"));
    CHECK(refused.status == 0);
    CHECK(refused.exit_code != 0);
    const auto tls13 =
        test::curl({"--cacert", certificates.ca_cert.string(), "--tlsv1.3"}, url(server, "/"));
    INFO(tls13.error);
    CHECK(tls13.status == 200);
  }
}

TEST_CASE("HTTPS: client_auth_type policies", "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  enum class Presented { none, signed_by_ca, unknown_ca };
  struct Row {
    ClientAuth policy;
    Presented presented;
    bool served;  // Go's crypto/tls semantics, which exporter-toolkit's names stand for
  };
  const auto row = GENERATE(Row{ClientAuth::none, Presented::none, true},
                            Row{ClientAuth::none, Presented::unknown_ca, true},
                            Row{ClientAuth::request, Presented::none, true},
                            Row{ClientAuth::request, Presented::unknown_ca, true},
                            Row{ClientAuth::require_any, Presented::none, false},
                            Row{ClientAuth::require_any, Presented::unknown_ca, true},
                            Row{ClientAuth::require_any, Presented::signed_by_ca, true},
                            Row{ClientAuth::verify_if_given, Presented::none, true},
                            Row{ClientAuth::verify_if_given, Presented::signed_by_ca, true},
                            Row{ClientAuth::verify_if_given, Presented::unknown_ca, false},
                            Row{ClientAuth::require_and_verify, Presented::none, false},
                            Row{ClientAuth::require_and_verify, Presented::signed_by_ca, true},
                            Row{ClientAuth::require_and_verify, Presented::unknown_ca, false});
  CAPTURE(name_of(kClientAuthNames, row.policy), static_cast<int>(row.presented));

  auto options = tls_options(certificates);
  options.tls->client_auth = row.policy;
  if (row.policy != ClientAuth::none) options.tls->client_ca_file = certificates.ca_cert.string();
  HttpServer server(options, answer("ok"));

  std::vector<std::string> args = {"--cacert", certificates.ca_cert.string()};
  if (row.presented == Presented::signed_by_ca) {
    args.insert(args.end(), {"--cert", certificates.client_cert.string(), "--key",
                             certificates.client_key.string()});
  } else if (row.presented == Presented::unknown_ca) {
    args.insert(args.end(), {"--cert", certificates.rogue_cert.string(), "--key",
                             certificates.rogue_key.string()});
  }
  const auto result = test::curl(args, url(server, "/metrics"));
  INFO(result.error);
  if (row.served) {
    CHECK(result.status == 200);
  } else {
    // TLS 1.3 sends the refusal after the client's handshake ends: curl then fails on reading.
    CHECK(result.status == 0);
    CHECK(result.exit_code != 0);
  }
}

TEST_CASE("HTTPS: files that cannot be used are errors naming the file", "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  auto options = tls_options(certificates);
  std::string expected;
  SECTION("a certificate file that holds no certificate") {
    options.tls->cert_file = dir.write("not-a-cert.pem", "certificate\n").string();
    expected = "cert_file " + options.tls->cert_file + " holds no usable PEM certificate";
  }
  SECTION("a key that is not the certificate's") {
    options.tls->key_file = certificates.client_key.string();
    expected = "key_file " + options.tls->key_file + " is not the key of the certificate in " +
               options.tls->cert_file;
  }
  SECTION("a key file that holds no key") {
    options.tls->key_file = certificates.server_cert.string();
    expected = "key_file " + options.tls->key_file + " holds no usable PEM private key";
  }
  SECTION("a client CA file that holds no certificate") {
    options.tls->client_auth = ClientAuth::require_and_verify;
    options.tls->client_ca_file = certificates.server_key.string();
    expected = "client_ca_file " + options.tls->client_ca_file + " holds no usable PEM certificate";
  }
  CHECK_THROWS_WITH(check_tls_config(*options.tls), Catch::Contains(expected));
  CHECK_THROWS_WITH(HttpServer(options, answer("never")), Catch::Contains(expected));
}

TEST_CASE("HTTPS: a renewed certificate is served without a restart, an unusable one is not",
          "[http][tls]") {
  test::TempDir first_dir;
  test::TempDir second_dir;
  test::TempDir served_dir;
  const auto first = test::make_test_certificates(first_dir);
  const auto second = test::make_test_certificates(second_dir);
  // The files the server is configured with, rewritten in place as a renewal would.
  const auto put = [&](const test::TestCertificates& from) {
    served_dir.write("server.crt", test::read_file(from.server_cert));
    served_dir.write("server.key", test::read_file(from.server_key));
  };
  put(first);
  HttpServerOptions options = tls_options(first);
  options.tls->cert_file = (served_dir.path() / "server.crt").string();
  options.tls->key_file = (served_dir.path() / "server.key").string();
  HttpServer server(options, answer("ok"));
  const auto trusting = [&](const test::TestCertificates& which) {
    return test::curl({"--cacert", which.ca_cert.string()}, url(server, "/metrics"));
  };
  REQUIRE(trusting(first).status == 200);
  CHECK(trusting(second).status == 0);

  put(second);
  check_rotated(trusting, second, first, "serving the certificate read from them now");

  // Half written: a certificate without its key. The last good pair is still served, and the
  // failure is logged once, not on every handshake.
  served_dir.write("server.crt", test::read_file(first.server_cert));
  {
    const test::CapturedStderr log;
    CHECK(trusting(second).status == 200);
    CHECK(trusting(second).status == 200);
    const std::string text = log.text();
    const std::string warning = "is not the key of the certificate in";
    CHECK_THAT(text, Catch::Contains(warning) &&
                         Catch::Contains("still serving the previous certificate"));
    CHECK(text.find(warning) == text.rfind(warning));
  }
  // ... until the key arrives too.
  served_dir.write("server.key", test::read_file(first.server_key));
  CHECK(trusting(first).status == 200);
}

TEST_CASE(
    "HTTPS: the rest of tls_server_config: inline PEM, max_version, cipher suites, curves, "
    "allowed client SANs",
    "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const std::vector<std::string> trust = {"--cacert", certificates.ca_cert.string()};
  const auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), trust.begin(), trust.end());
    return extra;
  };
  auto options = tls_options(certificates);

  SECTION("certificate and key given in the config itself") {
    options.tls->cert_pem = test::read_file(certificates.server_cert);
    options.tls->key_pem = test::read_file(certificates.server_key);
    options.tls->cert_file.clear();
    options.tls->key_file.clear();
    HttpServer server(options, answer("ok"));
    CHECK(test::curl(trust, url(server, "/")).status == 200);
  }
  SECTION("max_version") {
    options.tls->max_version = TlsVersion::tls12;
    HttpServer server(options, answer("ok"));
    CHECK(test::curl(with({"--tls-max", "1.2"}), url(server, "/")).status == 200);
    CHECK(test::curl(with({"--tlsv1.3"}), url(server, "/")).status == 0);
  }
  SECTION("cipher_suites (TLS 1.2; the test certificate is ECDSA)") {
    options.tls->max_version = TlsVersion::tls12;
    options.tls->cipher_suites = {"ECDHE-ECDSA-AES256-GCM-SHA384"};
    HttpServer server(options, answer("ok"));
    CHECK(
        test::curl(with({"--ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384"}), url(server, "/")).status ==
        200);
    CHECK(
        test::curl(with({"--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256"}), url(server, "/")).status ==
        0);
  }
  SECTION("curve_preferences") {
    options.tls->curve_groups = {"P-384"};
    HttpServer server(options, answer("ok"));
    CHECK(test::curl(with({"--curves", "P-384"}), url(server, "/")).status == 200);
    CHECK(test::curl(with({"--curves", "P-256"}), url(server, "/")).status == 0);
  }
  SECTION("client_allowed_sans") {
    options.tls->client_auth = ClientAuth::require_and_verify;
    options.tls->client_ca_file = certificates.ca_cert.string();
    const auto client = with(
        {"--cert", certificates.client_cert.string(), "--key", certificates.client_key.string()});
    options.tls->client_allowed_sans = {"other.example", "prometheus.example"};
    {
      HttpServer server(options, answer("ok"));
      const auto allowed = test::curl(client, url(server, "/"));
      INFO(allowed.error);
      CHECK(allowed.status == 200);
    }
    options.tls->client_allowed_sans = {"other.example"};
    {
      HttpServer server(options, answer("ok"));
      CHECK(test::curl(client, url(server, "/")).status == 0);
    }
  }
}

TEST_CASE(
    "http_server_config headers are on every response; rate_limit answers 429 beyond its "
    "burst, never on /-/healthy",
    "[http]") {
  HttpServerOptions options;
  options.listen_address = ListenAddress::parse("127.0.0.1:0");
  options.worker_threads = 8;
  options.response_headers = {{"Strict-Transport-Security", "max-age=31536000"},
                              {"X-Frame-Options", "deny"}};
  RateLimit limit;
  limit.burst = 3;
  limit.interval_seconds = 3600;  // no refill within the test
  AdmissionPolicy policy;
  policy.rate_limit = limit;
  options.admission = std::make_shared<const Admission>(policy);
  HttpServer server(options, answer("ok"));
  const auto first = test::http_get(server.port(), "/metrics");
  CHECK(first.status == 200);
  CHECK(first.headers.at("strict-transport-security") == "max-age=31536000");
  CHECK(first.headers.at("x-frame-options") == "deny");
  CHECK(test::http_get(server.port(), "/").status == 200);
  CHECK(test::http_get(server.port(), "/metrics").status == 200);
  const auto limited = test::http_get(server.port(), "/metrics");
  CHECK(limited.status == 429);
  CHECK(limited.headers.at("x-frame-options") == "deny");
  CHECK(test::http_get(server.port(), "/-/healthy").status == 200);
}
