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

#include <string>

#include "config/web_config.h"

namespace hwperf {

// Loads those libraries once per process (they stay loaded: CivetWeb keeps their symbols), from
// lib/hwperf_exporter/ beside the folder of the executable. Throws std::runtime_error naming the
// library, the loader's reason and the remedy.
void load_civetweb_openssl();

// Sets certificate chain, private key, client certificate policy and CAs, and the lowest protocol
// version on an OpenSSL SSL_CTX (CivetWeb's, passed as void* so that no OpenSSL type leaves
// tls.cpp). Throws std::runtime_error naming the file and OpenSSL's reason.
void configure_tls_context(void* ssl_ctx, const TlsServerConfig& config);

// The same, on a context of its own: every file is checked before anything listens.
void check_tls_config(const TlsServerConfig& config);

// For the log: "TLS 1.2 or later, client certificates: NoClientCert".
std::string describe_tls(const TlsServerConfig& config);

}  // namespace hwperf
