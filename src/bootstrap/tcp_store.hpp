// TCP implementation of the Store: a server (hosted by symmem-run, or by PE 0 when another
// launcher started the job) and a client per PE. Every connection starts with a handshake
// in which the client presents the job's 64-bit magic; a wrong magic is refused with a
// message on both sides. Socket I/O is isolated in a byte-stream Channel so that TLS can
// wrap it without touching the protocol.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/store.hpp"

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
                                                       uint64_t magic);
  virtual ~TcpStoreServer() = default;
  virtual uint16_t port() const = 0;
  virtual void stop() = 0;
};

class TcpStoreClient : public Store {
 public:
  // Connects (retrying until timeout_s) and performs the magic handshake. `rank` is for
  // messages only.
  static Result<std::unique_ptr<TcpStoreClient>> connect(const StoreAddress& addr, uint64_t magic,
                                                         int rank, double timeout_s);
};

}  // namespace symmem
