// --web.config.file in exporter-toolkit's format: parsing with positions, bcrypt checks at the
// hash's own cost, and the Authorization header. Hashes are made here with libcrypt, from
// passwords the test picks, never copied from elsewhere.
#include "tests/catch.hpp"

#include <string>

#include "config/errors.h"
#include "exporter/basic_auth.h"
#include "tests/support.h"

using namespace hwperf;
using hwperf::test::base64;
using hwperf::test::bcrypt_hash;

namespace {

std::vector<std::string> problems_loading(const std::string& path) {
  try {
    load_web_config(path);
  } catch (const ConfigError& e) {
    return e.problems();
  }
  return {};
}

}  // namespace

TEST_CASE("bcrypt hashes verify at the cost they were made with", "[web_config]") {
  const auto cost = GENERATE(4ul, 6ul, 10ul);
  const std::string password = "pw-" + std::to_string(cost);
  const std::string hash = bcrypt_hash(password, cost);
  CAPTURE(hash);
  // The cost is part of the hash, and crypt_r honours it.
  CHECK(hash.substr(4, 2) == (cost < 10 ? "0" : "") + std::to_string(cost));
  CHECK(bcrypt_matches(password, hash));
  CHECK_FALSE(bcrypt_matches(password + "x", hash));
  CHECK_FALSE(bcrypt_matches(password, "not a hash"));
}

TEST_CASE("basic auth allows exactly the configured users with their passwords", "[web_config]") {
  WebConfigFile config;
  config.basic_auth_users["prometheus"] = bcrypt_hash("s3cret", 4);
  auto header = [](const std::string& user, const std::string& password) {
    return "Basic " + base64(user + ":" + password);
  };
  CHECK(basic_auth_allows(config, header("prometheus", "s3cret")));
  CHECK(basic_auth_allows(config, "basic " + base64("prometheus:s3cret")));  // scheme is case-insensitive
  CHECK_FALSE(basic_auth_allows(config, header("prometheus", "wrong")));
  CHECK_FALSE(basic_auth_allows(config, header("someone", "s3cret")));
  CHECK_FALSE(basic_auth_allows(config, ""));
  CHECK_FALSE(basic_auth_allows(config, "Bearer abc"));
  CHECK_FALSE(basic_auth_allows(config, "Basic !!!!"));
  CHECK_FALSE(basic_auth_allows(config, "Basic " + base64("no-colon")));
  // A password may contain colons: only the first one separates the user.
  config.basic_auth_users["colons"] = bcrypt_hash("a:b:c", 4);
  CHECK(basic_auth_allows(config, header("colons", "a:b:c")));
  // Without users, nothing is asked.
  CHECK(basic_auth_allows(WebConfigFile{}, ""));
}

TEST_CASE("a web config file is read with relative paths from its folder", "[web_config]") {
  test::TempDir dir;
  dir.write("tls/server.crt", "certificate\n");
  dir.write("tls/server.key", "key\n");
  dir.write("tls/ca.crt", "ca\n");
  const std::string hash = bcrypt_hash("pw", 4);
  const auto path = dir.write("web.yml",
                              "tls_server_config:\n"
                              "  cert_file: tls/server.crt\n"
                              "  key_file: tls/server.key\n"
                              "  client_ca_file: tls/ca.crt\n"
                              "  client_auth_type: RequireAndVerifyClientCert\n"
                              "  min_version: TLS13\n"
                              "basic_auth_users:\n"
                              "  alice: " + hash + "\n");
  const WebConfigFile config = load_web_config(path.string());
  REQUIRE(config.tls.has_value());
  CHECK(config.tls->cert_file == (dir.path() / "tls/server.crt").string());
  CHECK(config.tls->key_file == (dir.path() / "tls/server.key").string());
  CHECK(config.tls->client_ca_file == (dir.path() / "tls/ca.crt").string());
  CHECK(config.tls->client_auth == ClientAuth::require_and_verify);
  CHECK(config.tls->min_version == TlsVersion::tls13);
  CHECK(config.basic_auth_users.at("alice") == hash);
}

TEST_CASE("every problem in a web config file is reported at once, with its position",
          "[web_config]") {
  test::TempDir dir;
  const auto path = dir.write("web.yml",
                              "tls_server_config:\n"
                              "  cert_file: missing.crt\n"
                              "  client_auth_type: Sometimes\n"
                              "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"
                              "basic_auth_users:\n"
                              "  bob: plaintext\n"
                              "tls: yes\n");
  const auto problems = problems_loading(path.string());
  const std::string file = path.string();
  auto has = [&](const std::string& start, const std::string& part) {
    for (const auto& p : problems) {
      if (p.rfind(file + ":" + start, 0) == 0 && p.find(part) != std::string::npos) return true;
    }
    return false;
  };
  INFO(test::read_file(path));
  for (const auto& p : problems) INFO(p);
  CHECK(has("2:14:", "missing.crt is not a readable regular file"));
  CHECK(has("3:21:", "expected one of NoClientCert"));
  CHECK(has("4:3:", "does not support"));
  CHECK(has("2:3:", "needs both cert_file and key_file"));
  CHECK(has("6:8:", "expected a bcrypt hash"));
  CHECK(has("7:1:", "unknown key \"tls\""));
  CHECK(problems.size() == 6);
}

TEST_CASE("a web config path that is not a small regular file is refused", "[web_config]") {
  test::TempDir dir;
  const auto directory = dir.path() / "folder";
  std::filesystem::create_directories(directory);
  CHECK_THAT(problems_loading(directory.string()).at(0), Catch::Contains("regular file"));
  CHECK_THAT(problems_loading((dir.path() / "absent.yml").string()).at(0),
             Catch::Contains("regular file"));
  // Found by fuzzing: a complex key ("? ...") used to escape as a YAML exception.
  const auto complex_key = dir.write("complex.yml", "? [a, b]\n: 1\nbasic_auth_users:\n  ? [c]\n  : x\n");
  const auto complex_problems = problems_loading(complex_key.string());
  REQUIRE(complex_problems.size() == 2);
  CHECK_THAT(complex_problems[0], Catch::StartsWith(complex_key.string() + ":1:3: "));
  CHECK_THAT(complex_problems[1], Catch::Contains("user name must be a plain name"));
  const auto broken = dir.write("broken.yml", "basic_auth_users: [\n");
  CHECK_THAT(problems_loading(broken.string()).at(0), Catch::StartsWith(broken.string() + ":"));
}
