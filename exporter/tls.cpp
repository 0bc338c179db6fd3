#include "exporter/tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/files.h"
#include "common/log.h"
#include "common/text.h"

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

int protocol_version(TlsVersion version) {
  switch (version) {
    case TlsVersion::tls10: return TLS1_VERSION;
    case TlsVersion::tls11: return TLS1_1_VERSION;
    case TlsVersion::tls12: return TLS1_2_VERSION;
    case TlsVersion::tls13: return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

bool allows_legacy_versions(const TlsServerConfig& config) {
  return config.min_version == TlsVersion::tls10 || config.min_version == TlsVersion::tls11;
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

namespace {

template <typename T, void (*Free)(T*)>
struct OpenSslFree {
  void operator()(T* pointer) const noexcept { Free(pointer); }
};
void free_chain(STACK_OF(X509) * chain) { sk_X509_pop_free(chain, X509_free); }
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

using StorePtr = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE, X509_STORE_free>>;
void free_names(STACK_OF(X509_NAME) * names) { sk_X509_NAME_pop_free(names, X509_NAME_free); }
using NamesPtr = std::unique_ptr<STACK_OF(X509_NAME), OpenSslFree<STACK_OF(X509_NAME), free_names>>;

// The CAs client certificates are verified against, and their names, which the server sends so
// that a client can choose its certificate.
struct ClientCas {
  StorePtr store;
  NamesPtr names;
};

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

}  // namespace

struct TlsCertificates::State {
  TlsServerConfig config;
  // Guards the fields below for a moment at a time; never held while a file is read, so that a
  // handshake never waits on another's reading.
  std::mutex mutex;
  FileStamp certificate_stamp;  // as they were when last read (or tried)
  FileStamp key_stamp;
  FileStamp client_ca_stamp;
  std::shared_ptr<const KeyPair> pair;  // what every handshake gets
  std::shared_ptr<const ClientCas> client_cas;
  // The contexts hold what was read at startup until a file changes.
  bool pair_reloaded = false;
  bool client_cas_reloaded = false;
  bool reloading = false;  // one handshake reads the files; the others serve what was read before

  struct Served {
    std::shared_ptr<const KeyPair> pair;  // null: the context's own
    std::shared_ptr<const ClientCas> client_cas;
  };
  Served served() const {
    return {pair_reloaded ? pair : nullptr, client_cas_reloaded ? client_cas : nullptr};
  }

  // A changed file is read by the first handshake that sees the change, outside the lock.
  Served current() {
    const FileStamp certificate = stamp_of(config.cert_file);
    const FileStamp key = stamp_of(config.key_file);
    const FileStamp client_ca = stamp_of(config.client_ca_file);
    bool pair_changed = false;
    bool client_ca_changed = false;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      pair_changed = !(certificate == certificate_stamp) || !(key == key_stamp);
      client_ca_changed = !(client_ca == client_ca_stamp);
      if ((!pair_changed && !client_ca_changed) || reloading) return served();
      // Recorded first: files that cannot be used are tried (and logged) once per change.
      certificate_stamp = certificate;
      key_stamp = key;
      client_ca_stamp = client_ca;
      reloading = true;
    }
    std::shared_ptr<const KeyPair> fresh_pair;
    std::shared_ptr<const ClientCas> fresh_cas;
    if (pair_changed) {
      try {
        fresh_pair = std::make_shared<const KeyPair>(read_pair(config));
        log::info("tls: " + config.cert_file + " or " + config.key_file +
                  " changed: serving the certificate read from them now");
      } catch (const std::exception& e) {
        log::warn(std::string("tls: ") + e.what() + "; still serving the previous certificate");
      }
    }
    if (client_ca_changed) {
      try {
        fresh_cas = std::make_shared<const ClientCas>(read_client_cas(config));
        log::info("tls: " + config.client_ca_file +
                  " changed: verifying client certificates with the CAs read from it now");
      } catch (const std::exception& e) {
        log::warn(std::string("tls: ") + e.what() + "; still verifying with the previous CAs");
      }
    }
    const std::lock_guard<std::mutex> lock(mutex);
    reloading = false;
    if (fresh_pair) {
      pair = std::move(fresh_pair);
      pair_reloaded = true;
    }
    if (fresh_cas) {
      client_cas = std::move(fresh_cas);
      client_cas_reloaded = true;
    }
    return served();
  }

  // OpenSSL calls this on every handshake, after the ClientHello and before it chooses the
  // server's certificate or asks for the client's: early enough for both.
  static int on_handshake(SSL* ssl, void* argument) {
    auto* self = static_cast<State*>(argument);
    const Served now = self->current();
    // The handshake fails rather than go on with files half replaced.
    if (now.pair && SSL_use_cert_and_key(ssl, now.pair->certificate.get(), now.pair->key.get(),
                                         now.pair->chain.get(), 1) != 1) {
      ERR_clear_error();
      return 0;
    }
    if (now.client_cas) {
      STACK_OF(X509_NAME)* names = SSL_dup_CA_list(now.client_cas->names.get());
      if (names == nullptr || SSL_set1_verify_cert_store(ssl, now.client_cas->store.get()) != 1) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        ERR_clear_error();
        return 0;
      }
      SSL_set_client_CA_list(ssl, names);
    }
    return 1;
  }
};

namespace {

// Where a context keeps its tls_server_config, for the verify callback, which gets no argument
// of its own.
int config_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The names a certificate's subject alternative names give, as Go's x509 prints them: DNS names,
// email addresses, IP addresses and URIs.
std::vector<std::string> subject_alternative_names(X509* certificate) {
  std::vector<std::string> names;
  auto* all = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (all == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(all); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(all, i);
    if (name->type == GEN_DNS || name->type == GEN_EMAIL || name->type == GEN_URI) {
      const ASN1_IA5STRING* text = name->d.ia5;
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                         static_cast<std::size_t>(ASN1_STRING_length(text)));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* address = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      const int family = ASN1_STRING_length(address) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(address), text, sizeof text) != nullptr) {
        names.emplace_back(text);
      }
    }
  }
  GENERAL_NAMES_free(all);
  return names;
}

// Every client certificate passes through here. VerifyClientCertIfGiven and
// RequireAndVerifyClientCert keep OpenSSL's verdict on the chain; RequestClientCert and
// RequireAnyClientCert accept any chain, as Go's crypto/tls does. Then, as exporter-toolkit's
// VerifyPeerCertificate does after Go's verification, the client's own certificate (depth 0) must
// name one of client_allowed_sans.
int verify_client(int preverified, X509_STORE_CTX* store) {
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* config = static_cast<const TlsServerConfig*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), config_index()));
  if (config == nullptr) return 0;
  const bool verifies = config->client_auth == ClientAuth::verify_if_given ||
                        config->client_auth == ClientAuth::require_and_verify;
  if (verifies && preverified != 1) return 0;
  if (X509_STORE_CTX_get_error_depth(store) != 0 || config->client_allowed_sans.empty()) {
    return 1;
  }
  for (const auto& name : subject_alternative_names(X509_STORE_CTX_get_current_cert(store))) {
    for (const auto& allowed : config->client_allowed_sans) {
      if (name == allowed) {
        // Accepting a chain OpenSSL could not verify leaves its error set; this is the verdict.
        X509_STORE_CTX_set_error(store, X509_V_OK);
        return 1;
      }
    }
  }
  X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED);
  return 0;
}

}  // namespace

TlsCertificates::TlsCertificates(TlsServerConfig config) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->certificate_stamp = stamp_of(state_->config.cert_file);
  state_->key_stamp = stamp_of(state_->config.key_file);
  state_->client_ca_stamp = stamp_of(state_->config.client_ca_file);
  state_->pair = std::make_shared<const KeyPair>(read_pair(state_->config));
  if (!state_->config.client_ca_file.empty() || !state_->config.client_ca_pem.empty()) {
    state_->client_cas = std::make_shared<const ClientCas>(read_client_cas(state_->config));
  }
}

TlsCertificates::~TlsCertificates() = default;

void TlsCertificates::configure(void* ssl_ctx) {
  auto* context = static_cast<SSL_CTX*>(ssl_ctx);
  const TlsServerConfig& config = state_->config;
  ERR_clear_error();
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    if (SSL_CTX_use_cert_and_key(context, state_->pair->certificate.get(), state_->pair->key.get(),
                                 state_->pair->chain.get(), 1) != 1) {
      fail("cannot use the certificate in " + config.cert_file + " with the key in " +
           config.key_file);
    }
  }
  SSL_CTX_set_cert_cb(context, &State::on_handshake, state_.get());

  // CivetWeb switched protocol versions off through options (its ssl_protocol_version); the lowest
  // version is set here alone, over the system's default (Debian's openssl.cnf says TLS 1.2).
  SSL_CTX_clear_options(
      context, SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 | SSL_OP_NO_TLSv1_2 | SSL_OP_NO_TLSv1_3);
  if (SSL_CTX_set_min_proto_version(context, protocol_version(config.min_version)) != 1) {
    fail("min_version " + std::string(name_of(kTlsVersionNames, config.min_version)) +
         " is not available in this OpenSSL");
  }

  if (state_->client_cas) {
    X509_STORE* store = state_->client_cas->store.get();
    STACK_OF(X509_NAME)* names = SSL_dup_CA_list(state_->client_cas->names.get());
    if (names == nullptr || X509_STORE_up_ref(store) != 1) {
      sk_X509_NAME_pop_free(names, X509_NAME_free);
      fail("out of memory");
    }
    SSL_CTX_set_cert_store(context, store);
    SSL_CTX_set_client_CA_list(context, names);
  }
  if (config.max_version &&
      SSL_CTX_set_max_proto_version(context, protocol_version(*config.max_version)) != 1) {
    fail("max_version " + std::string(name_of(kTlsVersionNames, *config.max_version)) +
         " is not available in this OpenSSL");
  }
  if (!config.cipher_suites.empty() &&
      SSL_CTX_set_cipher_list(context, join(config.cipher_suites, ":").c_str()) != 1) {
    fail("none of cipher_suites is available in this OpenSSL");
  }
  // OpenSSL 3 refuses TLS 1.0 and 1.1 above security level 0 (their handshake signs with SHA-1
  // and MD5), so a min_version that allows them would otherwise be a claim, not a fact.
  if (allows_legacy_versions(config)) SSL_CTX_set_security_level(context, 0);
  if (config.prefer_server_cipher_suites) {
    SSL_CTX_set_options(context, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_CTX_clear_options(context, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  if (!config.curve_groups.empty() &&
      SSL_CTX_set1_groups_list(context, join(config.curve_groups, ":").c_str()) != 1) {
    fail("curve_preferences names a curve this OpenSSL does not have");
  }
  SSL_CTX_set_ex_data(context, config_index(), const_cast<TlsServerConfig*>(&config));
  // Go lets a client without a certificate through VerifyClientCertIfGiven and
  // RequestClientCert; exporter-toolkit's SAN check then fails the handshake (it reads the first
  // certificate of none), so with client_allowed_sans a certificate is required.
  const int required = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  const int if_given = config.client_allowed_sans.empty() ? SSL_VERIFY_PEER : required;
  switch (config.client_auth) {
    case ClientAuth::none: SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::request:
    case ClientAuth::verify_if_given: SSL_CTX_set_verify(context, if_given, verify_client); break;
    case ClientAuth::require_any:
    case ClientAuth::require_and_verify:
      SSL_CTX_set_verify(context, required, verify_client);
      break;
  }
  // A server that asks for client certificates must name its session cache, or OpenSSL refuses
  // every resumed session ("session id context uninitialized").
  static const unsigned char kSessionContext[] = "hwperf_exporter";
  SSL_CTX_set_session_id_context(context, kSessionContext, sizeof kSessionContext - 1);
}

void check_tls_config(const TlsServerConfig& config) {
  TlsCertificates certificates(config);
  const std::unique_ptr<SSL_CTX, OpenSslFree<SSL_CTX, SSL_CTX_free>> context(
      SSL_CTX_new(TLS_server_method()));
  if (!context) fail("cannot create an OpenSSL context");
  certificates.configure(context.get());
}

std::string describe_tls(const TlsServerConfig& config) {
  const auto spelled = [](TlsVersion version) {
    const std::string name = name_of(kTlsVersionNames, version);  // "TLS12"
    return "TLS " + name.substr(3, 1) + "." + name.substr(4);
  };
  std::string versions = spelled(config.min_version);
  if (config.max_version == config.min_version) {
    versions += " only";
  } else if (config.max_version) {
    versions += " to " + spelled(*config.max_version);
  } else {
    versions += " or later";
  }
  if (allows_legacy_versions(config)) {
    versions += " (at OpenSSL security level 0, which TLS 1.0 and 1.1 need)";
  }
  return versions + ", client certificates: " + name_of(kClientAuthNames, config.client_auth);
}

}  // namespace hwperf
