// --web.config.file in exporter-toolkit's format: parsing with positions, bcrypt checks at the
// hash's own cost, and the Authorization header. Hashes are made here with libcrypt, from
// passwords the test picks, never copied from elsewhere.
#include "tests/catch.hpp"

#include <map>
#include <string>
#include <vector>

#include "config/errors.h"
#include "web/basic_auth.h"
#include "tests/support/support.h"

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
  std::map<std::string, std::string> users;
  users["prometheus"] = bcrypt_hash("s3cret", 4);
  // A password may contain colons: only the first one separates the user.
  users["colons"] = bcrypt_hash("a:b:c", 4);
  const BasicAuth auth(users);
  auto header = [](const std::string& user, const std::string& password) {
    return "Basic " + base64(user + ":" + password);
  };
  CHECK(auth.required());
  CHECK(auth.allows(header("prometheus", "s3cret")));
  CHECK(auth.allows("basic " + base64("prometheus:s3cret")));  // scheme is case-insensitive
  CHECK_FALSE(auth.allows(header("prometheus", "wrong")));
  CHECK_FALSE(auth.allows(header("someone", "s3cret")));
  CHECK_FALSE(auth.allows(""));
  CHECK_FALSE(auth.allows("Bearer abc"));
  CHECK_FALSE(auth.allows("Basic !!!!"));
  CHECK_FALSE(auth.allows("Basic " + base64("no-colon")));
  CHECK(auth.allows(header("colons", "a:b:c")));
  // crypt_r stops at a NUL; a password with one is never the shorter one.
  CHECK_FALSE(auth.allows(header("prometheus", std::string("s3cret\0tail", 11))));
  // Without users, nothing is asked.
  CHECK(BasicAuth({}).allows(""));
}

TEST_CASE("verdicts are cached: the same credentials run bcrypt once, right or wrong",
          "[web_config]") {
  const BasicAuth auth({{"prometheus", bcrypt_hash("s3cret", 4)}});
  const auto right = "Basic " + base64("prometheus:s3cret");
  const auto wrong = "Basic " + base64("prometheus:guess");
  for (int scrape = 0; scrape < 20; ++scrape) CHECK(auth.allows(right));
  CHECK(auth.bcrypt_runs() == 1);
  for (int scrape = 0; scrape < 20; ++scrape) CHECK_FALSE(auth.allows(wrong));
  CHECK(auth.bcrypt_runs() == 2);
  // Every new guess costs one run, and only one.
  for (int guess = 0; guess < 5; ++guess) {
    CHECK_FALSE(auth.allows("Basic " + base64("nobody:guess" + std::to_string(guess))));
  }
  CHECK(auth.bcrypt_runs() == 7);
}

TEST_CASE("what a bcrypt check costs here is measured once per process, not once per user",
          "[web_config]") {
  // 12,000 users at cost 4 took 33 s to start when each user's cost was measured with three runs.
  std::map<std::string, std::string> users;
  const std::string hash = bcrypt_hash("pw", 4);
  for (int user = 0; user < 500; ++user) users["user" + std::to_string(user)] = hash;
  const BasicAuth many(users);
  const BasicAuth again({{"one", bcrypt_hash("pw", 5)}});
  CHECK(bcrypt_calibration_runs() > 0);
  CHECK(bcrypt_calibration_runs() <= 3);
  CHECK(many.allows("Basic " + base64("user499:pw")));
}

TEST_CASE("a refused password costs the highest configured bcrypt cost, whoever it names",
          "[web_config]") {
  // cheap's hash costs 4, dear's 6: a wrong password for cheap is checked against cheap's hash
  // and then at cost 6, as a wrong one for dear and an unknown user are, so the time of a
  // refusal does not tell which names are configured.
  const BasicAuth auth({{"cheap", bcrypt_hash("pw", 4)}, {"dear", bcrypt_hash("pw", 6)}});
  CHECK_FALSE(auth.allows("Basic " + base64("cheap:guess")));
  CHECK(auth.bcrypt_runs() == 2);
  CHECK_FALSE(auth.allows("Basic " + base64("dear:guess")));
  CHECK(auth.bcrypt_runs() == 3);
  CHECK_FALSE(auth.allows("Basic " + base64("nobody:guess")));
  CHECK(auth.bcrypt_runs() == 4);
  // The right password answers at its own cost, once, and is cached like any verdict.
  CHECK(auth.allows("Basic " + base64("cheap:pw")));
  CHECK(auth.bcrypt_runs() == 5);
  CHECK_FALSE(auth.allows("Basic " + base64("cheap:guess")));
  CHECK(auth.bcrypt_runs() == 5);
}

TEST_CASE(
    "hashes that can never match, or that cost too much here, are startup errors naming "
    "the user",
    "[web_config]") {
  const std::string good = bcrypt_hash("pw", 4);
  // A cost above what one check may take on any machine this runs on (cost 31 is 2^27 times
  // cost 4: hours).
  std::string slow = good;
  slow.replace(4, 2, "31");
  std::vector<std::string> problems;
  try {
    BasicAuth auth({{"alice", slow}});
  } catch (const ConfigError& e) {
    problems = e.problems();
  }
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.front(), Catch::StartsWith("basic_auth_users.alice: bcrypt cost 31") &&
                                   Catch::Contains("htpasswd -nBC"));
  for (const std::string& never :
       {std::string("$2b$03$") + good.substr(7), std::string("$2b$32$") + good.substr(7),
        std::string("$2b$99$") + good.substr(7), good.substr(0, 20) + "!" + good.substr(21)}) {
    CAPTURE(never);
    CHECK_FALSE(is_bcrypt_hash(never));
    CHECK_THROWS_AS(BasicAuth({{"bob", never}}), ConfigError);
  }
  CHECK(is_bcrypt_hash(good));
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
                              "  alice: " +
                                  hash + "\n");
  const WebConfigFile config = load_web_config(path.string());
  REQUIRE(config.tls.has_value());
  CHECK(config.tls->cert_file == (dir.path() / "tls/server.crt").string());
  CHECK(config.tls->key_file == (dir.path() / "tls/server.key").string());
  CHECK(config.tls->client_ca_file == (dir.path() / "tls/ca.crt").string());
  CHECK(config.tls->client_auth == ClientAuth::require_and_verify);
  CHECK(config.tls->min_version == TlsVersion::tls13);
  CHECK(config.basic_auth_users.at("alice") == hash);
}

TEST_CASE(
    "every exporter-toolkit setting is read: inline PEM, versions, suites, curves, SANs, "
    "headers, rate limit",
    "[web_config]") {
  test::TempDir dir;
  dir.write("ca.crt", "ca\n");
  const auto path = dir.write("web.yml",
                              "tls_server_config:\n"
                              "  cert: |\n    -----BEGIN CERTIFICATE-----\n    x\n"
                              "  key: secret\n"
                              "  client_ca_file: ca.crt\n"
                              "  client_auth_type: RequireAndVerifyClientCert\n"
                              "  client_allowed_sans: [prometheus.example, 10.0.0.1]\n"
                              "  min_version: TLS12\n"
                              "  max_version: TLS12\n"
                              "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,\n"
                              "                  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256]\n"
                              "  prefer_server_cipher_suites: false\n"
                              "  curve_preferences: [X25519, CurveP384]\n"
                              "http_server_config:\n"
                              "  http2: false\n"
                              "  headers:\n"
                              "    Strict-Transport-Security: max-age=31536000\n"
                              "    X-Frame-Options: deny\n"
                              "rate_limit:\n"
                              "  interval: 100ms\n"
                              "  burst: 20\n");
  const WebConfigFile config = load_web_config(path.string());
  REQUIRE(config.tls.has_value());
  CHECK(config.tls->cert_pem == "-----BEGIN CERTIFICATE-----\nx\n");
  CHECK(config.tls->key_pem == "secret");
  CHECK(config.tls->cert_file.empty());
  CHECK(config.tls->client_allowed_sans ==
        std::vector<std::string>{"prometheus.example", "10.0.0.1"});
  CHECK(config.tls->max_version == TlsVersion::tls12);
  CHECK(config.tls->cipher_suites ==
        std::vector<std::string>{"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"});
  CHECK_FALSE(config.tls->prefer_server_cipher_suites);
  CHECK(config.tls->curve_groups == std::vector<std::string>{"X25519", "P-384"});
  CHECK_FALSE(config.http.http2);
  CHECK(config.http.headers ==
        std::vector<std::pair<std::string, std::string>>{
            {"Strict-Transport-Security", "max-age=31536000"}, {"X-Frame-Options", "deny"}});
  REQUIRE(config.rate_limit.has_value());
  CHECK(config.rate_limit->interval_seconds == 0.1);
  CHECK(config.rate_limit->burst == 20u);
}

TEST_CASE("exporter-toolkit settings that contradict each other or cannot be honoured are errors",
          "[web_config]") {
  test::TempDir dir;
  dir.write("server.crt", "c\n");
  dir.write("ca.crt", "c\n");
  struct Row {
    std::string yaml;
    std::string says;
  };
  const auto row = GENERATE(
      Row{"tls_server_config:\n  cert_file: server.crt\n  cert: x\n  key: y\n",
          "cert and cert_file are exclusive"},
      Row{"tls_server_config:\n  cert: x\n  key: y\n  min_version: TLS13\n  max_version: TLS12\n",
          "max_version TLS12 is below min_version TLS13"},
      Row{"tls_server_config:\n  cert: x\n  key: y\n  client_allowed_sans: [a]\n",
          "client_allowed_sans needs a client_auth_type that asks for client certificates"},
      Row{"tls_server_config:\n  cert: x\n  key: y\n  client_ca: z\n  client_ca_file: ca.crt\n"
          "  client_auth_type: VerifyClientCertIfGiven\n",
          "client_ca and client_ca_file are exclusive"},
      Row{"tls_server_config:\n  cert: x\n  key: y\n  client_ca: z\n",
          "a client CA is configured but client_auth_type asks for no client certificate"},
      Row{"tls_server_config:\n  cert: x\n  key: y\n  client_auth_type: VerifyClientCertIfGiven\n",
          "needs client_ca_file or client_ca"},
      Row{"tls_server_config:\n  cert: x\n  key: y\n  curve_preferences: [CurveP224]\n",
          "unknown name \"CurveP224\""},
      Row{"http_server_config:\n  headers:\n    Server: hwperf\n", "\"Server\" cannot be set"},
      Row{"rate_limit:\n  interval: 1\n  burst: 5\n",
          "rate_limit.interval: expected a positive Go duration"},
      Row{"rate_limit:\n  interval: 1s\n  burst: 0\n", "rate_limit.burst: expected a whole number"},
      Row{"basic_auth_users:\n  u: \"" + bcrypt_hash("a", 4) + "\"\n  u: \"" + bcrypt_hash("b", 4) +
              "\"\n",
          "user \"u\" is listed twice"},
      Row{"http_server_config:\n  headers:\n    X-Frame-Options: \"deny\\x01\"\n",
          "no control characters"},
      Row{"http_server_config:\n  headers:\n    X-Frame-Options: \"deny\\0x\"\n",
          "no control characters"},
      Row{"http_server_config:\n  headers:\n    X-Frame-Options: \"deny\\0x\"\n",
          "0x00 at position 4"},
      Row{"http_server_config:\n  headers:\n    Content-Security-Policy: \"" +
              std::string(200 * 1024, 'a') + "\"\n",
          "http_server_config.headers.Content-Security-Policy: a value of 204800 bytes; at most "
          "8192"},
      Row{"http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Frame-Options: "
          "sameorigin\n",
          "\"X-Frame-Options\" is set twice"});
  CAPTURE(row.yaml);
  const auto problems = problems_loading(dir.write("web.yml", row.yaml).string());
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(row.says));
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
  // TLS 1.3 suites are not chosen in Go's crypto/tls, so not in exporter-toolkit either.
  CHECK(has("4:19:", "unknown name \"TLS_AES_128_GCM_SHA256\""));
  CHECK(has("2:3:", "needs a certificate (cert_file or cert) and a key (key_file or key)"));
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
  const auto complex_key =
      dir.write("complex.yml", "? [a, b]\n: 1\nbasic_auth_users:\n  ? [c]\n  : x\n");
  const auto complex_problems = problems_loading(complex_key.string());
  REQUIRE(complex_problems.size() == 2);
  CHECK_THAT(complex_problems[0], Catch::StartsWith(complex_key.string() + ":1:3: "));
  CHECK_THAT(complex_problems[1], Catch::Contains("user name must be a plain name"));
  const auto broken = dir.write("broken.yml", "basic_auth_users: [\n");
  CHECK_THAT(problems_loading(broken.string()).at(0), Catch::StartsWith(broken.string() + ":"));
}

TEST_CASE("rate_limit.interval takes Go durations, as exporter-toolkit does", "[web_config][web]") {
  struct Row {
    const char* interval;
    double seconds;
  };
  const auto row = GENERATE(Row{"1h30m", 5400}, Row{"1.5s", 1.5}, Row{"250us", 250e-6});
  test::TempDir dir;
  const auto path = dir.write(
      "web.yml", std::string("rate_limit:\n  interval: ") + row.interval + "\n  burst: 3\n");
  const WebConfigFile config = load_web_config(path.string());
  REQUIRE(config.rate_limit.has_value());
  CHECK(config.rate_limit->interval_seconds == Approx(row.seconds));
  CHECK(config.rate_limit->burst == 3u);
}
