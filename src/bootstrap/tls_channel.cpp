// TLS 1.3 over a Channel with OpenSSL: the PSK derivation, the SSL_CTX setup for the
// PSK and certificate modes, a BIO that moves bytes through the inner Channel, and the
// translation of OpenSSL's errors into messages that say what to change.
#include "bootstrap/tls_channel.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <strings.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace symmem {
namespace {

// Both ends name the same external PSK; the key itself comes from the secret.
constexpr char kPskIdentity[] = "symmem-store-psk-v1";
constexpr char kHkdfSalt[] = "symmem bootstrap store psk";
// TLS_AES_128_GCM_SHA256: every TLS 1.3 implementation has it, and its hash fixes the
// PSK's hash (SHA-256).
constexpr unsigned char kPskCipher[2] = {0x13, 0x01};

SSL_CTX* as_ctx(void* p) { return static_cast<SSL_CTX*>(p); }
SSL* as_ssl(void* p) { return static_cast<SSL*>(p); }

// Drains OpenSSL's error queue into one line.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown TLS error" : out;
}

Result<std::array<uint8_t, 32>> derive_psk(const std::array<uint8_t, 32>& secret, uint64_t magic) {
  std::array<uint8_t, 32> out{};
  unsigned char info[8];
  for (int i = 0; i < 8; ++i) info[i] = static_cast<unsigned char>(magic >> (56 - 8 * i));
  EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t len = out.size();
  bool ok = pctx && EVP_PKEY_derive_init(pctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) > 0 &&
            EVP_PKEY_CTX_set1_hkdf_salt(pctx, reinterpret_cast<const unsigned char*>(kHkdfSalt),
                                        sizeof(kHkdfSalt) - 1) > 0 &&
            EVP_PKEY_CTX_set1_hkdf_key(pctx, secret.data(), static_cast<int>(secret.size())) > 0 &&
            EVP_PKEY_CTX_add1_hkdf_info(pctx, info, sizeof(info)) > 0 && EVP_PKEY_derive(pctx, out.data(), &len) > 0;
  EVP_PKEY_CTX_free(pctx);
  if (!ok || len != out.size()) return Status(Errc::kInternal, "deriving the store's TLS key: " + openssl_errors());
  return out;
}

TlsContext* context_of(SSL* ssl) { return static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl))); }

SSL_SESSION* psk_session(SSL* ssl, const std::array<uint8_t, 32>& psk) {
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kPskCipher);
  if (!cipher) return nullptr;
  SSL_SESSION* s = SSL_SESSION_new();
  if (!s) return nullptr;
  if (!SSL_SESSION_set1_master_key(s, psk.data(), psk.size()) || !SSL_SESSION_set_cipher(s, cipher) ||
      !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

BIO_METHOD* channel_bio_method();

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// StoreSecurity and helpers

const char* StoreSecurity::mode_name(Mode m) {
  switch (m) {
    case Mode::kPlain: return "off";
    case Mode::kPsk: return "psk";
    case Mode::kCert: return "cert";
  }
  return "?";
}

Result<StoreSecurity::Mode> StoreSecurity::parse_mode(const std::string& t) {
  for (const char* y : {"psk", "1", "on", "yes", "true", ""})
    if (strcasecmp(t.c_str(), y) == 0) return Mode::kPsk;
  for (const char* n : {"off", "plain", "0", "no", "false", "none"})
    if (strcasecmp(t.c_str(), n) == 0) return Mode::kPlain;
  if (strcasecmp(t.c_str(), "cert") == 0) return Mode::kCert;
  return Status(Errc::kInvalidArgument, "'" + t + "' is not a store security mode (psk, cert or off)");
}

void StoreSecurity::cert_paths_from_env() {
  auto fill = [](std::string* field, const char* env) {
    if (field->empty())
      if (const char* v = env_or_null(env)) *field = v;
  };
  fill(&ca_file, "SYMMEM_TLS_CA");
  fill(&ca_path, "SYMMEM_TLS_CA_PATH");
  fill(&cert_file, "SYMMEM_TLS_CERT");
  fill(&key_file, "SYMMEM_TLS_KEY");
  fill(&crl_file, "SYMMEM_TLS_CRL");
}

Status StoreSecurity::parse_tls_info(const std::string& info) {
  size_t pos = 0;
  while (pos < info.size()) {
    size_t end = info.find(';', pos);
    if (end == std::string::npos) end = info.size();
    std::string item = info.substr(pos, end - pos);
    pos = end + 1;
    if (trim(item).empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string::npos)
      return Status(Errc::kInvalidArgument, "TLS setting '" + trim(item) + "' is not 'key: value'");
    std::string key = trim(item.substr(0, colon)), value = trim(item.substr(colon + 1));
    // aclshmem lists files with commas; one CA file / CRL file is what OpenSSL loads
    // directly, so the first is used and a directory covers the rest.
    std::string first = trim(value.substr(0, value.find(',')));
    if (key == "tlsCaPath") ca_path = value;
    else if (key == "tlsCaFile") ca_file = first;
    else if (key == "tlsCert") cert_file = value;
    else if (key == "tlsPk" || key == "tlsKey") key_file = value;
    else if (key == "tlsCrlFile") crl_file = first;
    else if (key == "tlsCrlPath" && crl_file.empty()) crl_file = value;
  }
  return {};
}

std::array<uint8_t, 32> random_secret() {
  std::array<uint8_t, 32> s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = ::getrandom(s.data() + got, s.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::abort();  // getrandom cannot fail once the pool is initialised
    }
    got += static_cast<size_t>(n);
  }
  return s;
}

std::string to_hex(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}

bool from_hex(const std::string& t, uint8_t* out, size_t n) {
  if (t.size() != 2 * n) return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    int hi = digit(t[2 * i]), lo = digit(t[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

// ------------------------------------------------------------------------------------------
// TlsContext

Result<std::shared_ptr<TlsContext>> TlsContext::create(const StoreSecurity& sec, bool server) {
  if (sec.mode == StoreSecurity::Mode::kPlain)
    return Status(Errc::kInternal, "TlsContext::create called for a plain store connection");
  std::shared_ptr<TlsContext> c(new TlsContext());
  c->server_ = server;
  c->mode_ = sec.mode;
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!ctx) return Status(Errc::kInternal, "SSL_CTX_new: " + openssl_errors());
  c->ctx_ = ctx;
  SSL_CTX_set_app_data(ctx, c.get());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx, 0);  // every connection authenticates afresh

  if (sec.mode == StoreSecurity::Mode::kPsk) {
    SYMMEM_ASSIGN_OR_RETURN(c->psk_, derive_psk(sec.secret, sec.magic));
    // The PSK is bound to SHA-256: offer only the suites that use it, or a server that
    // prefers AES-256/SHA-384 would pass over the key and look for a certificate.
    if (SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256") != 1)
      return Status(Errc::kInternal, "SSL_CTX_set_ciphersuites: " + openssl_errors());
    if (server) {
      SSL_CTX_set_psk_find_session_callback(
          ctx, [](SSL* ssl, const unsigned char* id, size_t len, SSL_SESSION** sess) -> int {
            *sess = nullptr;
            if (len != sizeof(kPskIdentity) - 1 || std::memcmp(id, kPskIdentity, len) != 0) return 1;
            *sess = psk_session(ssl, context_of(ssl)->psk_);
            return *sess ? 1 : 0;
          });
    } else {
      SSL_CTX_set_psk_use_session_callback(
          ctx, [](SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* idlen, SSL_SESSION** sess) -> int {
            *sess = nullptr;
            const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kPskCipher);
            // Called again once the server chose its cipher: our key only fits SHA-256 suites.
            if (md && cipher && md != SSL_CIPHER_get_handshake_digest(cipher)) return 1;
            *sess = psk_session(ssl, context_of(ssl)->psk_);
            if (!*sess) return 0;
            *id = reinterpret_cast<const unsigned char*>(kPskIdentity);
            *idlen = sizeof(kPskIdentity) - 1;
            return 1;
          });
    }
    return c;
  }

  // Certificates, both ways.
  if (sec.cert_file.empty() || sec.key_file.empty())
    return Status(Errc::kInvalidArgument,
                  "store TLS in certificate mode needs a certificate and a key (SYMMEM_TLS_CERT, SYMMEM_TLS_KEY)");
  if (sec.ca_file.empty() && sec.ca_path.empty())
    return Status(Errc::kInvalidArgument,
                  "store TLS in certificate mode needs a CA to verify peers (SYMMEM_TLS_CA or SYMMEM_TLS_CA_PATH)");
  if (SSL_CTX_use_certificate_chain_file(ctx, sec.cert_file.c_str()) != 1)
    return Status(Errc::kInvalidArgument, "cannot load the TLS certificate '" + sec.cert_file + "': " + openssl_errors());
  if (SSL_CTX_use_PrivateKey_file(ctx, sec.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return Status(Errc::kInvalidArgument, "cannot load the TLS key '" + sec.key_file + "': " + openssl_errors());
  if (SSL_CTX_check_private_key(ctx) != 1)
    return Status(Errc::kInvalidArgument,
                  "the TLS key '" + sec.key_file + "' does not match the certificate '" + sec.cert_file + "'");
  if (SSL_CTX_load_verify_locations(ctx, sec.ca_file.empty() ? nullptr : sec.ca_file.c_str(),
                                    sec.ca_path.empty() ? nullptr : sec.ca_path.c_str()) != 1)
    return Status(Errc::kInvalidArgument, "cannot load the TLS CA '" + (sec.ca_file.empty() ? sec.ca_path : sec.ca_file) +
                                              "': " + openssl_errors());
  if (!sec.crl_file.empty()) {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    X509_LOOKUP* lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());
    if (!lookup || X509_load_crl_file(lookup, sec.crl_file.c_str(), X509_FILETYPE_PEM) <= 0)
      return Status(Errc::kInvalidArgument, "cannot load the CRL '" + sec.crl_file + "': " + openssl_errors());
    X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), nullptr);
  return c;
}

TlsContext::~TlsContext() {
  if (ctx_) SSL_CTX_free(as_ctx(ctx_));
}

Result<std::unique_ptr<TlsChannel>> TlsContext::wrap(std::unique_ptr<Channel> inner) {
  // The channel keeps the context (and the key its callbacks read) alive.
  std::unique_ptr<TlsChannel> ch(new TlsChannel(shared_from_this(), std::move(inner)));
  SSL* ssl = SSL_new(as_ctx(ctx_));
  if (!ssl) return Status(Errc::kInternal, "SSL_new: " + openssl_errors());
  ch->ssl_ = ssl;
  BIO* bio = BIO_new(channel_bio_method());
  if (!bio) return Status(Errc::kInternal, "BIO_new: " + openssl_errors());
  BIO_set_data(bio, ch.get());
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);
  if (server_) SSL_set_accept_state(ssl);
  else SSL_set_connect_state(ssl);
  return ch;
}

// ------------------------------------------------------------------------------------------
// TlsChannel

namespace {

BIO_METHOD* channel_bio_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "symmem channel");
    BIO_meth_set_read_ex(m, [](BIO* b, char* buf, size_t len, size_t* got) {
      return TlsChannel::bio_read_thunk(b, buf, len, got);
    });
    BIO_meth_set_write_ex(m, [](BIO* b, const char* buf, size_t len, size_t* put) {
      return TlsChannel::bio_write_thunk(b, buf, len, put);
    });
    BIO_meth_set_ctrl(m, [](BIO*, int cmd, long, void*) -> long { return cmd == BIO_CTRL_FLUSH ? 1 : 0; });
    return m;
  }();
  return method;
}

}  // namespace

TlsChannel::TlsChannel(std::shared_ptr<TlsContext> ctx, std::unique_ptr<Channel> inner)
    : Channel(inner->peer()), ctx_(std::move(ctx)), inner_(std::move(inner)) {}

TlsChannel::~TlsChannel() {
  if (ssl_) SSL_free(as_ssl(ssl_));  // frees the BIO too
}

int TlsChannel::bio_read_thunk(void* bio, char* buf, size_t len, size_t* got) {
  BIO* b = static_cast<BIO*>(bio);
  auto* self = static_cast<TlsChannel*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  Io io = self->inner_->read_some(buf, len);
  switch (io.state) {
    case IoState::kOk: *got = io.bytes; return 1;
    case IoState::kWantRead: BIO_set_retry_read(b); return 0;
    case IoState::kWantWrite: BIO_set_retry_write(b); return 0;
    case IoState::kClosed: self->inner_closed_ = true; return 0;
    case IoState::kError: self->inner_errno_ = io.err; return 0;
  }
  return 0;
}

int TlsChannel::bio_write_thunk(void* bio, const char* buf, size_t len, size_t* put) {
  BIO* b = static_cast<BIO*>(bio);
  auto* self = static_cast<TlsChannel*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  Io io = self->inner_->write_some(buf, len);
  switch (io.state) {
    case IoState::kOk: *put = io.bytes; return 1;
    case IoState::kWantRead: BIO_set_retry_read(b); return 0;
    case IoState::kWantWrite: BIO_set_retry_write(b); return 0;
    case IoState::kClosed: self->inner_closed_ = true; return 0;
    case IoState::kError: self->inner_errno_ = io.err; return 0;
  }
  return 0;
}

bool TlsChannel::has_buffered() const { return SSL_pending(as_ssl(ssl_)) > 0; }

// Turns the result of an SSL_* call into an Io, keeping a readable reason for errors.
Io TlsChannel::finish(int ret, const char* op) {
  SSL* ssl = as_ssl(ssl_);
  int e = SSL_get_error(ssl, ret);
  bool was_handshake = !handshake_done_;
  if (SSL_is_init_finished(ssl)) handshake_done_ = true;
  switch (e) {
    case SSL_ERROR_WANT_READ: return {IoState::kWantRead, 0, 0};
    case SSL_ERROR_WANT_WRITE: return {IoState::kWantWrite, 0, 0};
    case SSL_ERROR_ZERO_RETURN: ERR_clear_error(); return {IoState::kClosed, 0, 0};
    default: break;
  }
  unsigned long first = ERR_peek_error();
  int reason = ERR_GET_REASON(first);
  std::string detail;
  switch (reason) {
    case SSL_R_BINDER_DOES_NOT_VERIFY:
      detail = "the peer's pre-shared key is not this job's: wrong secret (a unique id or SYMMEM_STORE_SECRET of "
               "another job?)";
      break;
    case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
    case SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER:
      if (ctx_->mode_ != StoreSecurity::Mode::kPsk) break;
      detail = "the store rejected our pre-shared key: wrong secret (this process holds a unique id or "
               "SYMMEM_STORE_SECRET that is not the job's)";
      break;
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      detail = std::string("the peer's certificate did not verify: ") +
               X509_verify_cert_error_string(SSL_get_verify_result(ssl));
      break;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      detail = "the peer sent no certificate (it does not use SYMMEM_STORE_TLS=cert?)";
      break;
    default: break;
  }
  // Alerts are reported as 1000 + the alert's number: the peer refused us.
  if (detail.empty() && reason >= SSL_AD_REASON_OFFSET && ERR_reason_error_string(first))
    detail = "the peer refused us (" + std::string(ERR_reason_error_string(first)) +
             "): it does not accept our " + (ctx_->mode_ == StoreSecurity::Mode::kPsk ? "key" : "certificate");
  if (inner_closed_ && detail.empty()) {
    ERR_clear_error();
    if (!was_handshake) return {IoState::kClosed, 0, 0};
    error_ = "TLS handshake failed: the peer closed the connection (it refused our key or certificate?)";
    return {IoState::kError, 0, 0};
  }
  if (inner_errno_ != 0 && detail.empty()) {
    ERR_clear_error();
    int err = inner_errno_;
    inner_errno_ = 0;
    return {IoState::kError, 0, err};
  }
  std::string all = openssl_errors();
  error_ = std::string(was_handshake ? "TLS handshake failed: " : "TLS ") + (detail.empty() ? all : detail);
  if (detail.empty() && !was_handshake) error_ += std::string(" (in ") + op + ")";
  return {IoState::kError, 0, 0};
}

Io TlsChannel::read_some(void* buf, size_t len) {
  size_t got = 0;
  ERR_clear_error();
  int r = SSL_read_ex(as_ssl(ssl_), buf, len, &got);
  if (r == 1) {
    handshake_done_ = true;
    return {IoState::kOk, got, 0};
  }
  return finish(r, "read");
}

Io TlsChannel::write_some(const void* buf, size_t len) {
  size_t put = 0;
  ERR_clear_error();
  int r = SSL_write_ex(as_ssl(ssl_), buf, len, &put);
  if (r == 1) {
    handshake_done_ = true;
    return {IoState::kOk, put, 0};
  }
  return finish(r, "write");
}

Status TlsChannel::handshake(Deadline deadline) {
  for (;;) {
    ERR_clear_error();
    int r = SSL_do_handshake(as_ssl(ssl_));
    if (r == 1) {
      handshake_done_ = true;
      return {};
    }
    Io io = finish(r, "handshake");
    if (io.state == IoState::kWantRead || io.state == IoState::kWantWrite) {
      Status st = wait_ready(io.state, deadline, "in the TLS handshake with");
      if (!st.ok()) return st;
      continue;
    }
    if (io.state == IoState::kClosed)
      return Status(Errc::kRefused, "TLS handshake with " + peer() + " failed: the peer closed the connection");
    if (io.err != 0) return errno_status(Errc::kIo, "TLS handshake with " + peer(), io.err);
    return Status(Errc::kRefused, error_);
  }
}

}  // namespace symmem
