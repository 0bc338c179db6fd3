/* Loaded under the soname "libcrypto.so" (README.md in this folder): CivetWeb dlopens that name,
 * which only OpenSSL's development package provides as a file. This library defines nothing;
 * CivetWeb's dlsym finds every libcrypto symbol in the real library it depends on. */
__attribute__((visibility("default"))) const char hwperf_civetweb_libcrypto[] = "libcrypto.so.3";
