// TLS settings that can never complete a handshake are refused before serving: under TLS 1.2 and
// below a cipher suite names the key type that signs the handshake, so RSA-only suites with an EC
// certificate and max_version TLS12 would start a server every client fails against ("no shared
// cipher").
#include "tests/catch.hpp"
#include <string>

#include "tests/support/support.h"
#include "web/tls.h"

using namespace hwperf;

TEST_CASE(
    "cipher suites that the certificate's key cannot sign under the allowed versions are "
    "refused, naming the suites and the key type",
    "[tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);  // EC keys (prime256v1)
  TlsServerConfig config;
  config.cert_file = certificates.server_cert.string();
  config.key_file = certificates.server_key.string();
  config.cipher_suites = {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"};

  config.max_version = TlsVersion::tls12;
  CHECK_THROWS_WITH(check_tls_config(config),
                    Catch::Contains("ECDHE-RSA-AES128-GCM-SHA256, ECDHE-RSA-AES256-GCM-SHA384") &&
                        Catch::Contains("EC key") && Catch::Contains("max_version TLS12") &&
                        Catch::Contains("no shared cipher"));

  // TLS 1.3 allowed: its suites take any key, so the handshake can complete.
  config.max_version = TlsVersion::tls13;
  CHECK_NOTHROW(check_tls_config(config));
  config.max_version.reset();
  CHECK_NOTHROW(check_tls_config(config));

  // A suite for EC keys among them: fine under TLS 1.2 too.
  config.max_version = TlsVersion::tls12;
  config.cipher_suites.push_back("ECDHE-ECDSA-AES128-GCM-SHA256");
  CHECK_NOTHROW(check_tls_config(config));
}
