// HTTPS for --web.config.file's tls_server_config, served by CivetWeb with OpenSSL (which CivetWeb
// reaches through web/openssl_shim/). Only tls.cpp and tls_files.cpp include OpenSSL's headers.
#pragma once

#include <memory>
#include <string>

#include "config/web_config.h"

namespace hwperf {

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
  // configure() on a context of its own: whatever OpenSSL refuses (a version, suites, curves) is
  // an error before anything listens. Throws as configure() does.
  void check();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The files read, then TlsCertificates::check().
void check_tls_config(const TlsServerConfig& config);

// For the log: "TLS 1.2 or later, client certificates: NoClientCert".
std::string describe_tls(const TlsServerConfig& config);

}  // namespace hwperf
