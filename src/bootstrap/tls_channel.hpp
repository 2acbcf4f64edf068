// TLS for the store's connections (OpenSSL, TLS 1.3 only).
//
// A store connection starts with a short hello in clear (protocol, version, the job's
// magic, the rank, and the security mode the client insists on); once the server has
// accepted it, both ends run a TLS 1.3 handshake over the same byte stream and every
// later byte is encrypted. Two ways to authenticate:
//
//  - kPsk (default): an external pre-shared key, HKDF-SHA256 of the job's 32-byte secret
//    (salt: a fixed label, info: the magic). Only holders of the unique id / the launcher's
//    secret can complete the handshake; a wrong secret fails it on both sides with a
//    message saying so. No certificates are involved.
//  - kCert: mutual X.509 authentication against a CA (file or directory), with the
//    peer's own certificate and key and optional CRLs. Peers are not checked by host
//    name: whoever holds a certificate of that CA is trusted.
//  - kPlain: no TLS at all. Only by explicit choice, and warned about at init.
//
// TlsChannel wraps another Channel (the plain socket one) through a custom BIO, so
// sockets are still touched only in channel.cpp, and it keeps the Channel contract:
// non-blocking, kWantRead / kWantWrite when the record layer needs the other direction.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/channel.hpp"
#include "common/status.hpp"

namespace symmem {

struct StoreSecurity {
  enum class Mode : uint8_t { kPlain = 0, kPsk = 1, kCert = 2 };
  Mode mode = Mode::kPsk;
  uint64_t magic = 0;
  std::array<uint8_t, 32> secret{};
  // kCert only. ca_file or ca_path is required, and cert_file + key_file.
  std::string ca_file, ca_path, cert_file, key_file, crl_file;

  static const char* mode_name(Mode m);
  // "psk", "cert", "off"/"plain" (also 1/on/true = psk, 0/false/no = off).
  static Result<Mode> parse_mode(const std::string& text);
  // Fills the certificate paths from SYMMEM_TLS_CA, SYMMEM_TLS_CA_PATH, SYMMEM_TLS_CERT,
  // SYMMEM_TLS_KEY, SYMMEM_TLS_CRL when they are set and the fields are empty.
  void cert_paths_from_env();
  // Parses aclshmem's "key: value;" list (tlsCaPath, tlsCaFile, tlsCert, tlsPk,
  // tlsCrlPath, tlsCrlFile); unknown keys are ignored as in aclshmem.
  Status parse_tls_info(const std::string& info);
};

// 32 random bytes from the kernel.
std::array<uint8_t, 32> random_secret();
std::string to_hex(const uint8_t* p, size_t n);
// Exactly 2*n hex digits into out[n].
bool from_hex(const std::string& text, uint8_t* out, size_t n);

class TlsChannel;

// One SSL_CTX, for the server side (one per store) or the client side (one per
// connection attempt).
class TlsContext : public std::enable_shared_from_this<TlsContext> {
 public:
  static Result<std::shared_ptr<TlsContext>> create(const StoreSecurity& sec, bool server);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  // Wraps a connected channel. The handshake happens on first use (server) or in
  // TlsChannel::handshake (client).
  Result<std::unique_ptr<TlsChannel>> wrap(std::unique_ptr<Channel> inner);

 private:
  TlsContext() = default;
  friend class TlsChannel;
  void* ctx_ = nullptr;  // SSL_CTX
  bool server_ = false;
  StoreSecurity::Mode mode_ = StoreSecurity::Mode::kPsk;
  std::array<uint8_t, 32> psk_{};
};

class TlsChannel final : public Channel {
 public:
  ~TlsChannel() override;
  Io read_some(void* buf, size_t len) override;
  Io write_some(const void* buf, size_t len) override;
  int fd() const override { return inner_->fd(); }
  std::string last_error() const override { return error_; }
  bool in_handshake() const override { return !handshake_done_; }
  bool has_buffered() const override;

  // Client side: completes the handshake by the deadline. kRefused with a message that
  // names the likely cause (wrong secret, certificate rejected) when the peer refuses.
  Status handshake(Deadline deadline);

  // The BIO's read and write (OpenSSL calls them through plain function pointers).
  static int bio_read_thunk(void* bio, char* buf, size_t len, size_t* got);
  static int bio_write_thunk(void* bio, const char* buf, size_t len, size_t* put);

 private:
  friend class TlsContext;
  TlsChannel(std::shared_ptr<TlsContext> ctx, std::unique_ptr<Channel> inner);
  Io finish(int ret, const char* op);

  std::shared_ptr<TlsContext> ctx_;
  std::unique_ptr<Channel> inner_;
  void* ssl_ = nullptr;  // SSL
  bool handshake_done_ = false;
  bool inner_closed_ = false;
  int inner_errno_ = 0;
  std::string error_;
};

}  // namespace symmem
