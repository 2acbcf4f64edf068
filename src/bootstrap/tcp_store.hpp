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

// The server's side of the protocol on a buffer instead of a socket (the fuzzers): each
// serve() is one connection whose whole byte stream is `input`, handled by the code that
// handles a socket's bytes (reading, framing, the hello, the TLS handshake, requests,
// blocked requests, the end of the connection), without poll() and without a thread. What
// one connection stored stays for the next, as in a real store.
class BufferStoreServer {
 public:
  enum class Start {
    kHello,       // the stream starts with the client's hello
    kAfterHello,  // the hello was accepted (and TLS, if on, established): requests in clear
  };
  static Result<std::unique_ptr<BufferStoreServer>> create(const StoreSecurity& security);
  virtual ~BufferStoreServer() = default;
  // What the server sent on the connection. `piece` > 0: the input arrives in pieces of
  // that many bytes, each read separately, as from a network (0: all at once).
  virtual std::string serve(std::string input, Start start, size_t piece) = 0;
};

class TcpStoreClient : public Store {
 public:
  // Connects (retrying until timeout_s), presents the magic, and runs the TLS handshake
  // the security mode asks for. `rank` is for messages only.
  static Result<std::unique_ptr<TcpStoreClient>> connect(const StoreAddress& addr, const StoreSecurity& security,
                                                         int rank, double timeout_s);
  // The client on a channel that is already connected (a memory channel, for the fuzzers):
  // the hello and TLS handshake as connect() runs them, or, with `after_hello`, none (the
  // channel then carries the answers as TLS would have decrypted them).
  static Result<std::unique_ptr<TcpStoreClient>> on_channel(std::unique_ptr<Channel> ch,
                                                            const StoreSecurity& security, int rank,
                                                            double timeout_s, bool after_hello);
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
  // For a caller's own poll loop: wait_watch() will not block once this descriptor is
  // readable or the answer is already buffered (TLS may have read it with the watch's OK).
  virtual int watch_fd() const = 0;
  virtual bool watch_buffered() const = 0;
  // In a child forked by this process: lets go of the child's copy of the socket (the
  // descriptor then refers to /dev/null), so that the connection still closes when the
  // parent dies. Touches nothing else.
  virtual void release_in_child() = 0;

 private:
  // connect()'s hello (and TLS handshake) on a connected channel.
  static Result<std::unique_ptr<TcpStoreClient>> hello_on(std::unique_ptr<Channel> ch, const std::string& url,
                                                          const StoreSecurity& security,
                                                          const std::shared_ptr<TlsContext>& tls, int rank,
                                                          Deadline hs);
};

}  // namespace symmem
