// Loading the two libraries of this folder (README.md says why they exist and when to delete
// them) before CivetWeb first initialises TLS.
#pragma once

namespace hwperf {

// Loads them once per process (they stay loaded: CivetWeb keeps their symbols), from
// lib/hwperf_exporter/ beside the folder of the executable, then by name. Throws
// std::runtime_error naming the library, the loader's reason and the remedy.
void load_civetweb_openssl();

// Throws std::logic_error unless the object the dynamic loader hands out for "libssl.so" (what
// CivetWeb dlopens) is this folder's library, with SSL_get_peer_certificate: anything else would
// make the first HTTPS connection call a null pointer. Call it right before a TLS server starts.
void assert_civetweb_openssl_loaded();

}  // namespace hwperf
