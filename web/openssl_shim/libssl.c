/* Loaded under the soname "libssl.so" in place of OpenSSL's development symlink (README.md in
 * this folder). CivetWeb 1.15 and 1.16, as Debian builds them, look up
 * SSL_get_peer_certificate and call it for every TLS connection; OpenSSL 3 renamed it
 * SSL_get1_peer_certificate (same reference counting: the caller frees the certificate) and keeps
 * the old name only as a macro, so CivetWeb would call a null pointer. Every other symbol comes
 * from the real libssl this library depends on. */
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate
__attribute__((visibility("default"))) X509* SSL_get_peer_certificate(const SSL* ssl);

X509* SSL_get_peer_certificate(const SSL* ssl) { return SSL_get1_peer_certificate(ssl); }

/* Lets the exporter check that the "libssl.so" CivetWeb will get is this library. */
__attribute__((visibility("default"))) const char hwperf_civetweb_openssl_shim[] = "hwperf";
