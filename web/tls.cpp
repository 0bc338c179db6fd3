#include "web/tls.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/files.h"
#include "common/log.h"
#include "common/text.h"
#include "web/tls_files.h"

namespace hwperf {
namespace {

using namespace tls_files;

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

namespace {

// Under TLS 1.2 and below a cipher suite names the key type that signs the handshake
// (ECDHE-RSA-... an RSA key, ECDHE-ECDSA-... an EC one), where any TLS 1.3 suite takes any key. A
// configuration whose versions stop below TLS 1.3 and whose suites all need another key type
// than the certificate's would start, and then fail every handshake ("no shared cipher").
void check_suites_fit_key(SSL_CTX* context, const TlsServerConfig& config, EVP_PKEY* key) {
  if (config.cipher_suites.empty() || key == nullptr) return;  // the defaults serve both types
  if (!config.max_version || *config.max_version == TlsVersion::tls13) return;
  int signs_with = NID_undef;
  const char* key_type = "";
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
    case EVP_PKEY_RSA_PSS:
      signs_with = NID_auth_rsa;
      key_type = "RSA";
      break;
    case EVP_PKEY_EC:
    case EVP_PKEY_ED25519:
    case EVP_PKEY_ED448:
      // RFC 8422: EdDSA keys sign TLS 1.2 handshakes under the ECDSA suites.
      signs_with = NID_auth_ecdsa;
      key_type = "EC";
      break;
    default: return;  // a key type this check does not know: the handshake will tell
  }
  STACK_OF(SSL_CIPHER)* suites = SSL_CTX_get_ciphers(context);
  for (int i = 0; i < sk_SSL_CIPHER_num(suites); ++i) {
    const SSL_CIPHER* suite = sk_SSL_CIPHER_value(suites, i);
    // The TLS 1.3 suites are always on the list; max_version keeps them from being used.
    if (std::string_view(SSL_CIPHER_get_version(suite)) == "TLSv1.3") continue;
    const int auth = SSL_CIPHER_get_auth_nid(suite);
    if (auth == signs_with || auth == NID_auth_any) return;
  }
  // Thrown rather than fail(): OpenSSL's error queue has nothing to add.
  const std::string certificate =
      config.cert_file.empty() ? "the certificate (cert)" : config.cert_file;
  throw std::runtime_error(
      "tls_server_config: cipher_suites (" + join(config.cipher_suites, ", ") +
      ") hold no suite that the " + key_type + " key of " + certificate +
      " can sign up to max_version " + name_of(kTlsVersionNames, *config.max_version) +
      ": every handshake would fail with \"no shared cipher\"; add a suite for " + key_type +
      " keys (ECDHE-" + (signs_with == NID_auth_rsa ? "RSA" : "ECDSA") + "-...) or allow TLS13");
}

}  // namespace

void TlsCertificates::check() {
  const std::unique_ptr<SSL_CTX, OpenSslFree<SSL_CTX, SSL_CTX_free>> context(
      SSL_CTX_new(TLS_server_method()));
  if (!context) fail("cannot create an OpenSSL context");
  configure(context.get());
  check_suites_fit_key(context.get(), state_->config,
                       state_->pair ? state_->pair->key.get() : nullptr);
}

void check_tls_config(const TlsServerConfig& config) { TlsCertificates(config).check(); }

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
