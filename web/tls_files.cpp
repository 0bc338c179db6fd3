#include "web/tls_files.h"

#include <cerrno>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "common/files.h"
#include "common/text.h"

namespace hwperf::tls_files {

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

namespace {

// The PEM text of `file_key` (a path in the config) or of `inline_key` (the PEM itself), and
// how messages name it.
struct PemSource {
  std::string text;
  std::string name;   // "cert_file PATH", "cert (in the web config)"
  std::string place;  // "PATH", "the web config's cert"
};

// Far above any certificate chain; a bound, so that a file named by mistake is not read whole.
constexpr std::size_t kMaxPemBytes = 1 << 20;

// A file is read only if it is a regular file, opened without blocking: a FIFO or device swapped
// in for a certificate would otherwise hang the handshake that reads it.
PemSource read_pem(const std::string& file_key, const std::string& path,
                   const std::string& inline_key, const std::string& pem, const char* holds) {
  if (path.empty())
    return {pem, inline_key + " (in the web config)", "the web config's " + inline_key};
  const auto text = read_regular_file(path, kMaxPemBytes);
  if (!text.ok()) {
    const std::string reason = text.error == ENOTSUP
                                   ? "it is not a regular file (a FIFO, device or directory)"
                               : text.error == EFBIG ? "it is larger than 1 MiB"
                                                     : errno_text(text.error);
    throw std::runtime_error("tls_server_config: " + file_key + " " + path +
                             " cannot be read (it should hold " + holds + "): " + reason);
  }
  return {text.value, file_key + " " + path, path};
}

BioPtr memory_bio(const std::string& text) {
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) fail("out of memory");
  return bio;
}

// OpenSSL's default would ask for a pass phrase on the terminal, and wait there for ever.
int refuse_pass_phrase(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*user*/) {
  return -1;
}

}  // namespace

KeyPair read_pair(const TlsServerConfig& config) {
  ERR_clear_error();
  KeyPair pair;
  const PemSource certificates =
      read_pem("cert_file", config.cert_file, "cert", config.cert_pem, "a PEM certificate");
  const BioPtr certificate_bio = memory_bio(certificates.text);
  const std::string no_certificate = certificates.name + " holds no usable PEM certificate";
  pair.certificate.reset(
      PEM_read_bio_X509_AUX(certificate_bio.get(), nullptr, refuse_pass_phrase, nullptr));
  if (!pair.certificate) fail(no_certificate);
  // The rest is the chain, up to the end (which PEM reports as "no start line").
  pair.chain.reset(sk_X509_new_null());
  if (!pair.chain) fail("out of memory");
  while (X509* next =
             PEM_read_bio_X509(certificate_bio.get(), nullptr, refuse_pass_phrase, nullptr)) {
    if (sk_X509_push(pair.chain.get(), next) == 0) {
      X509_free(next);
      fail("out of memory");
    }
  }
  if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE) fail(no_certificate);
  ERR_clear_error();

  const PemSource key =
      read_pem("key_file", config.key_file, "key", config.key_pem, "a PEM private key");
  const BioPtr key_bio = memory_bio(key.text);
  pair.key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, refuse_pass_phrase, nullptr));
  if (!pair.key) {
    if (key.text.find("ENCRYPTED") != std::string::npos) {
      ERR_clear_error();
      throw std::runtime_error("tls_server_config: " + key.name +
                               " holds an encrypted private key, which would need a pass phrase "
                               "(exporter-toolkit takes none either): give the key unencrypted, "
                               "e.g. `openssl pkey -in KEY -out KEY.plain`, readable by the "
                               "exporter only");
    }
    fail(key.name + " holds no usable PEM private key");
  }
  if (X509_check_private_key(pair.certificate.get(), pair.key.get()) != 1) {
    fail(key.name + " is not the key of the certificate in " + certificates.place);
  }
  return pair;
}

ClientCas read_client_cas(const TlsServerConfig& config) {
  ERR_clear_error();
  const PemSource source = read_pem("client_ca_file", config.client_ca_file, "client_ca",
                                    config.client_ca_pem, "PEM CA certificates");
  const BioPtr bio = memory_bio(source.text);
  ClientCas cas{StorePtr(X509_STORE_new()), NamesPtr(sk_X509_NAME_new_null())};
  if (!cas.store || !cas.names) fail("out of memory");
  int count = 0;
  while (X509* read = PEM_read_bio_X509(bio.get(), nullptr, refuse_pass_phrase, nullptr)) {
    const X509Ptr certificate(read);
    X509_NAME* name = X509_NAME_dup(X509_get_subject_name(certificate.get()));
    if (X509_STORE_add_cert(cas.store.get(), certificate.get()) != 1 || name == nullptr ||
        sk_X509_NAME_push(cas.names.get(), name) == 0) {
      X509_NAME_free(name);
      fail(source.name + ": cannot use certificate " + std::to_string(count + 1));
    }
    ++count;
  }
  if (count == 0 || ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE) {
    fail(source.name + " holds no usable PEM certificate");
  }
  ERR_clear_error();
  return cas;
}

FileStamp stamp_of(const std::string& path) {
  struct stat status {};
  FileStamp stamp;
  if (::stat(path.c_str(), &status) != 0) return stamp;  // gone: size -1 differs from any file
  stamp.device = status.st_dev;
  stamp.inode = status.st_ino;
  stamp.size = status.st_size;
  stamp.modified = status.st_mtim;
  return stamp;
}

}  // namespace hwperf::tls_files
