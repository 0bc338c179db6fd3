#include "web/openssl_shim/loader.h"

#include <dlfcn.h>
#include <sys/auxv.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>

namespace hwperf {
namespace {

namespace fs = std::filesystem;

// Defined by libssl.c alone: how the loaded "libssl.so" is recognised as ours.
constexpr const char* kShimMarker = "hwperf_civetweb_openssl_shim";

}  // namespace

void load_civetweb_openssl() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    // Beside the executable's bin/ (or tests/, exporter/ in the build tree, which keeps the same
    // layout), found from the path it was started by, symlinks resolved. Then by name, through
    // the executable's RUNPATH: a sanitizer's dlopen interceptor hides that RUNPATH, hence the
    // explicit path first.
    std::string directory;
    const auto* executable = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
    if (executable != nullptr) {
      if (char* resolved = realpath(executable, nullptr); resolved != nullptr) {
        directory =
            (fs::path(resolved).parent_path().parent_path() / "lib" / "hwperf_exporter").string();
        std::free(resolved);
      }
    }
    // Crypto first: the ssl library depends on it.
    for (const char* library :
         {"libhwperf_civetweb_libcrypto.so", "libhwperf_civetweb_libssl.so"}) {
      std::string tried;
      if (!directory.empty()) {
        const std::string path = directory + "/" + library;
        if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) continue;
        const char* reason = dlerror();
        tried = path + ": " + (reason ? reason : "unknown") + "; ";
      }
      if (dlopen(library, RTLD_NOW | RTLD_LOCAL) != nullptr) continue;
      const char* reason = dlerror();
      failure = std::string("cannot load ") + library + ", which lets CivetWeb use OpenSSL 3 for " +
                "HTTPS (" + tried + (reason ? reason : "unknown") +
                "): install the exporter with `cmake --install`, which puts it in "
                "lib/hwperf_exporter/ beside bin/";
      return;
    }
  });
  if (!failure.empty()) throw std::runtime_error(failure);
}
void assert_civetweb_openssl_loaded() {
  // RTLD_NOLOAD: only what is loaded already, which is what CivetWeb's dlopen will get.
  void* loaded = dlopen("libssl.so", RTLD_NOW | RTLD_NOLOAD);
  if (loaded == nullptr) {
    throw std::logic_error(
        "no libssl.so is loaded: load_civetweb_openssl() must run before a TLS server starts");
  }
  const bool ours = dlsym(loaded, kShimMarker) != nullptr;
  const bool complete = dlsym(loaded, "SSL_get_peer_certificate") != nullptr;
  dlclose(loaded);  // drops only the reference taken above
  if (!ours || !complete) {
    throw std::logic_error(
        "the libssl.so CivetWeb would use is not hwperf_exporter's OpenSSL shim "
        "(web/openssl_shim/): another libssl.so was loaded first, and CivetWeb would crash on "
        "its first HTTPS connection");
  }
}

}  // namespace hwperf
