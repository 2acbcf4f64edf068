// TCP implementation of the Store: a server (hosted by symmem-run, or by PE 0 when another
// launcher started the job) and a client per PE. Every connection starts with a hello in
// clear in which the client presents the job's 64-bit magic and the security mode it
// insists on; a wrong magic or a different mode is refused with a message on both sides.
// Then (unless TLS was switched off explicitly) both ends run a TLS 1.3 handshake
// authenticated by the job's secret (tls_channel.hpp), and everything after it is
// encrypted. Socket I/O is isolated in a byte-stream Channel that TLS wraps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/store.hpp"
#include "bootstrap/tls_channel.hpp"

namespace symmem {

struct StoreAddress {
  std::string host;  // "127.0.0.1", "::1", a hostname
  uint16_t port = 0;
  // "tcp://host:port" or "tcp6://[addr]:port"
  static Result<StoreAddress> parse(const std::string& url);
  std::string to_url() const;
};

class TcpStoreServer {
 public:
  // Binds host:port (port 0 = the OS picks) and serves on a thread of its own until
  // stop() or destruction.
  static Result<std::unique_ptr<TcpStoreServer>> start(const std::string& bind_host, uint16_t port,
                                                       const StoreSecurity& security);
  virtual ~TcpStoreServer() = default;
  virtual uint16_t port() const = 0;
  virtual void stop() = 0;
  // Connections open now (for a host that waits for its clients to leave).
  virtual int connections() const = 0;
};

class TcpStoreClient : public Store {
 public:
  // Connects (retrying until timeout_s), presents the magic, and runs the TLS handshake
  // the security mode asks for. `rank` is for messages only.
  static Result<std::unique_ptr<TcpStoreClient>> connect(const StoreAddress& addr, const StoreSecurity& security,
                                                         int rank, double timeout_s);
};

}  // namespace symmem
