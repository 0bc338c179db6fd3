// HTTPS for --web.config.file's tls_server_config, served by CivetWeb with OpenSSL. Only tls.cpp
// includes OpenSSL's headers.
//
// Debian's CivetWeb (1.15 in Debian 12, 1.16 in 13) does not link OpenSSL: it dlopens
// "libssl.so" and "libcrypto.so", names that only OpenSSL's development package provides, and on
// every TLS connection calls SSL_get_peer_certificate, which OpenSSL 3 no longer exports (a null
// function pointer: the first HTTPS request would crash the exporter). load_civetweb_openssl()
// loads two small libraries of ours under those sonames (exporter/civetweb_openssl/), so CivetWeb
// finds OpenSSL 3 and the missing function whether or not the development package is installed.
#pragma once

#include <memory>
#include <string>

#include "config/web_config.h"

namespace hwperf {

// Loads those libraries once per process (they stay loaded: CivetWeb keeps their symbols), from
// lib/hwperf_exporter/ beside the folder of the executable. Throws std::runtime_error naming the
// library, the loader's reason and the remedy.
void load_civetweb_openssl();

// The certificate and key of a tls_server_config, served and followed on disk: when either file
// changes (a renewed certificate, a Kubernetes secret swapped in), the next handshake reads both
// again, as exporter-toolkit re-reads them for every handshake. A pair that cannot be used (a
// file half written, a key that is not the certificate's, a file no longer readable after
// --runtime.user) is logged once per change and the previous pair kept.
class TlsCertificates {
 public:
  // Reads and checks both files; throws std::runtime_error naming the file and OpenSSL's reason.
  explicit TlsCertificates(TlsServerConfig config);
  ~TlsCertificates();
  TlsCertificates(const TlsCertificates&) = delete;
  TlsCertificates& operator=(const TlsCertificates&) = delete;

  // Sets certificate chain, private key, client certificate policy and CAs, and the lowest
  // protocol version on an OpenSSL SSL_CTX (CivetWeb's, passed as void* so that no OpenSSL type
  // leaves tls.cpp). The context calls back into this object on every handshake, so this object
  // must outlive it. Throws std::runtime_error naming the file and OpenSSL's reason.
  void configure(void* ssl_ctx);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Every file checked on a context of its own, before anything listens.
void check_tls_config(const TlsServerConfig& config);

// For the log: "TLS 1.2 or later, client certificates: NoClientCert".
std::string describe_tls(const TlsServerConfig& config);

}  // namespace hwperf
