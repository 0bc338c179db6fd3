#include "exporter/tls.h"

#include <dlfcn.h>
#include <sys/auxv.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace hwperf {
namespace {

namespace fs = std::filesystem;

// OpenSSL's reason for the last failure, and its queue emptied for the next call.
std::string openssl_reason() {
  std::string reason;
  while (const unsigned long error = ERR_get_error()) {
    const char* text = ERR_reason_error_string(error);
    if (!reason.empty()) reason += "; ";
    if (text != nullptr) {
      reason += text;
    } else {
      char buffer[256];
      ERR_error_string_n(error, buffer, sizeof buffer);
      reason += buffer;
    }
  }
  return reason.empty() ? "no reason given" : reason;
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("tls_server_config: " + what + ": " + openssl_reason());
}

// RequestClientCert and RequireAnyClientCert ask for a certificate but, as Go's crypto/tls does
// for them, do not verify it.
int accept_any_certificate(int /*preverified*/, X509_STORE_CTX* /*store*/) { return 1; }

int protocol_version(TlsVersion version) {
  switch (version) {
    case TlsVersion::tls10: return TLS1_VERSION;
    case TlsVersion::tls11: return TLS1_1_VERSION;
    case TlsVersion::tls12: return TLS1_2_VERSION;
    case TlsVersion::tls13: return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

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
        directory = (fs::path(resolved).parent_path().parent_path() / "lib" / "hwperf_exporter")
                        .string();
        std::free(resolved);
      }
    }
    // Crypto first: the ssl library depends on it.
    for (const char* library : {"libhwperf_civetweb_libcrypto.so", "libhwperf_civetweb_libssl.so"}) {
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

void configure_tls_context(void* ssl_ctx, const TlsServerConfig& config) {
  auto* context = static_cast<SSL_CTX*>(ssl_ctx);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(context, config.cert_file.c_str()) != 1) {
    fail("cert_file " + config.cert_file + " holds no usable PEM certificate");
  }
  const std::string mismatch =
      "key_file " + config.key_file + " is not the key of the certificate in " + config.cert_file;
  if (SSL_CTX_use_PrivateKey_file(context, config.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL compares the key with the certificate as it loads it.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) fail(mismatch);
    fail("key_file " + config.key_file + " holds no usable PEM private key");
  }
  if (SSL_CTX_check_private_key(context) != 1) fail(mismatch);

  // CivetWeb switched protocol versions off through options (its ssl_protocol_version); the lowest
  // version is set here alone, over the system's default (Debian's openssl.cnf says TLS 1.2).
  SSL_CTX_clear_options(context, SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 | SSL_OP_NO_TLSv1_2 |
                                     SSL_OP_NO_TLSv1_3);
  if (SSL_CTX_set_min_proto_version(context, protocol_version(config.min_version)) != 1) {
    fail("min_version " + std::string(name_of(kTlsVersionNames, config.min_version)) +
         " is not available in this OpenSSL");
  }

  if (!config.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(context, config.client_ca_file.c_str(), nullptr) != 1) {
      fail("client_ca_file " + config.client_ca_file + " holds no usable PEM certificate");
    }
    // The CAs a client is told to choose its certificate from.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.client_ca_file.c_str());
    if (names == nullptr) {
      fail("client_ca_file " + config.client_ca_file + " holds no usable PEM certificate");
    }
    SSL_CTX_set_client_CA_list(context, names);
  }
  switch (config.client_auth) {
    case ClientAuth::none:
      SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuth::request:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER, accept_any_certificate);
      break;
    case ClientAuth::require_any:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                         accept_any_certificate);
      break;
    case ClientAuth::verify_if_given:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::require_and_verify:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  // A server that asks for client certificates must name its session cache, or OpenSSL refuses
  // every resumed session ("session id context uninitialized").
  static const unsigned char kSessionContext[] = "hwperf_exporter";
  SSL_CTX_set_session_id_context(context, kSessionContext, sizeof kSessionContext - 1);
}

void check_tls_config(const TlsServerConfig& config) {
  const std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context(SSL_CTX_new(TLS_server_method()),
                                                                  &SSL_CTX_free);
  if (!context) fail("cannot create an OpenSSL context");
  configure_tls_context(context.get(), config);
}

std::string describe_tls(const TlsServerConfig& config) {
  std::string version = name_of(kTlsVersionNames, config.min_version);  // "TLS12"
  version = "TLS " + version.substr(3, 1) + "." + version.substr(4);
  return version + " or later, client certificates: " +
         name_of(kClientAuthNames, config.client_auth);
}

}  // namespace hwperf
