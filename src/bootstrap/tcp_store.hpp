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
  // Liveness, on a connection used for nothing else: registers this connection as a watch
  // of `key` (wire.hpp, kWatch) and returns once the store has it. If this connection
  // closes (the process ended) while `left_key` does not exist, the store creates `key` =
  // `on_drop`, which every other watch of `key` receives.
  virtual Status watch(const std::string& key, const std::string& left_key, const std::string& on_drop) = 0;
  // Blocks until the watched key exists and returns its value; an error when the
  // connection ends first (the store is gone) or cancel_watch() was called.
  virtual Result<std::string> wait_watch() = 0;
  // From any thread: makes wait_watch() return (shuts the socket down, so the store sees
  // the connection close).
  virtual void cancel_watch() = 0;
  // In a child forked by this process: lets go of the child's copy of the socket (the
  // descriptor then refers to /dev/null), so that the connection still closes when the
  // parent dies. Touches nothing else.
  virtual void release_in_child() = 0;
};

}  // namespace symmem
