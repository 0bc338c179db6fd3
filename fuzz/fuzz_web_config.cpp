// libFuzzer target: the web config (TLS, basic auth) file parser, and the Authorization header.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config/errors.h"
#include "web/basic_auth.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // load_web_config reads a path (it checks the file kind and size first), so the input goes
  // through one temporary file, rewritten for every run.
  static const std::string path = [] {
    char name[] = "/tmp/hwperf-fuzz-web-XXXXXX";
    const int fd = mkstemp(name);
    if (fd >= 0) close(fd);
    return std::string(name);
  }();
  if (FILE* file = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, file);
    std::fclose(file);
  }
  try {
    hwperf::load_web_config(path);
  } catch (const hwperf::ConfigError&) {
  }
  // Built once: its startup measures bcrypt and makes the unknown user's hash.
  static const hwperf::BasicAuth auth(
      {{"u", "$2b$04$abcdefghijklmnopqrstuu5Nr7eY6b1ejvyrfJd5ZAzk5jd0fIUkq"}});
  auth.allows(std::string_view(reinterpret_cast<const char*>(data), size > 256 ? 256 : size));
  return 0;
}
