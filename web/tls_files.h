// Reading what tls_server_config names: the certificate with its chain and key, and the client
// CAs, from files or inline PEM, never blocking (regular files only, no pass phrase prompt); and
// what tells that a file changed. Private to web/tls*.cpp (OpenSSL types).
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "config/web_config.h"

namespace hwperf::tls_files {

template <typename T, void (*Free)(T*)>
struct OpenSslFree {
  void operator()(T* pointer) const noexcept { Free(pointer); }
};
inline void free_chain(STACK_OF(X509) * chain) { sk_X509_pop_free(chain, X509_free); }
using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY, EVP_PKEY_free>>;
using ChainPtr = std::unique_ptr<STACK_OF(X509), OpenSslFree<STACK_OF(X509), free_chain>>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree<BIO, BIO_free_all>>;

// A certificate with its chain, and its key, as read from the files.
struct KeyPair {
  X509Ptr certificate;
  ChainPtr chain;
  KeyPtr key;
};

using StorePtr = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE, X509_STORE_free>>;
inline void free_names(STACK_OF(X509_NAME) * names) {
  sk_X509_NAME_pop_free(names, X509_NAME_free);
}
using NamesPtr = std::unique_ptr<STACK_OF(X509_NAME), OpenSslFree<STACK_OF(X509_NAME), free_names>>;

// The CAs client certificates are verified against, and their names, which the server sends so
// that a client can choose its certificate.
struct ClientCas {
  StorePtr store;
  NamesPtr names;
};

// What identifies a file's content without reading it: a rewrite in place changes the
// modification time (or size), a swapped symlink or a renamed-over file the inode.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = -1;
  timespec modified{};
  bool operator==(const FileStamp& other) const {
    return device == other.device && inode == other.inode && size == other.size &&
           modified.tv_sec == other.modified.tv_sec && modified.tv_nsec == other.modified.tv_nsec;
  }
};

FileStamp stamp_of(const std::string& path);

// Each throws std::runtime_error naming the file (or inline key) and OpenSSL's reason.
KeyPair read_pair(const TlsServerConfig& config);
ClientCas read_client_cas(const TlsServerConfig& config);

// OpenSSL's reason for the last failure, and its queue emptied for the next call.
std::string openssl_reason();
// Throws std::runtime_error "tls_server_config: WHAT: OpenSSL's reason".
[[noreturn]] void fail(const std::string& what);

}  // namespace hwperf::tls_files
