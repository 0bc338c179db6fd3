// The router with basic authentication (exporter-toolkit's basic_auth_users), without sockets.
#include "tests/catch.hpp"

#include <string>

#include "collectors/build_info.h"
#include "exporter/router.h"
#include "tests/support.h"

using namespace hwperf;

namespace {

Exporter exporter_with_user(const std::string& user, const std::string& password) {
  WebConfigFile web;
  web.basic_auth_users[user] = test::bcrypt_hash(password, 4);
  return Exporter("/metrics", CollectorSet{}, build_info_family({}), web);
}

HttpRequest get(const std::string& path, const std::string& authorization = "") {
  HttpRequest request;
  request.method = "GET";
  request.path = path;
  request.authorization = authorization;
  return request;
}

}  // namespace

TEST_CASE("with basic_auth_users every path but /-/healthy needs the right credentials",
          "[http][web_config]") {
  const std::string user = "prometheus";
  const std::string password = "s3cret";
  const Exporter exporter = exporter_with_user(user, password);
  const std::string right = "Basic " + test::base64(user + ":" + password);
  const std::string wrong = "Basic " + test::base64(user + ":" + password + "!");
  for (const char* path : {"/metrics", "/", "/nowhere"}) {
    CAPTURE(path);
    const HttpResponse missing = exporter.handle(get(path));
    CHECK(missing.status == 401);
    bool challenge = false;
    for (const auto& [name, value] : missing.headers) {
      challenge = challenge || (name == "WWW-Authenticate" && value.rfind("Basic ", 0) == 0);
    }
    CHECK(challenge);
    CHECK(exporter.handle(get(path, wrong)).status == 401);
  }
  CHECK(exporter.handle(get("/metrics", right)).status == 200);
  CHECK(exporter.handle(get("/", right)).status == 200);
  CHECK(exporter.handle(get("/nowhere", right)).status == 404);
  // Liveness probes carry no credentials; the answer says nothing about the machine.
  CHECK(exporter.handle(get("/-/healthy")).status == 200);
  // Without users nothing is asked.
  const Exporter open("/metrics", CollectorSet{}, build_info_family({}));
  CHECK(open.handle(get("/metrics")).status == 200);
}
