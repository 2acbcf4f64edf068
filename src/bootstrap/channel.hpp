// The byte stream under the store protocol. All socket reads and writes of the bootstrap
// layer happen behind Channel, so that a TLS channel can replace the plain socket one
// without the protocol above it knowing. One direction: channel <- tls_channel <- tcp_store_*.
//
// A Channel is always non-blocking underneath. The server drives it with read_some /
// write_some from its poll() loop; the client uses send_all / recv_all, which poll the
// descriptor until the bytes are through or the deadline passes. An implementation that
// needs to write in order to read (TLS) says so with kWantWrite, and vice versa.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.hpp"

namespace symmem {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// now + seconds, saturating (a negative or NaN timeout is "now", a huge one about a year).
Deadline deadline_after(double seconds);
// Milliseconds until d for poll(): 0 when past, rounded up so a wait never returns early.
int poll_ms_until(Deadline d);

enum class IoState {
  kOk,         // `bytes` > 0 bytes moved
  kWantRead,   // nothing moved; retry when the descriptor is readable
  kWantWrite,  // nothing moved; retry when the descriptor is writable
  kClosed,     // the peer closed the stream (read side)
  kError,      // `err` holds errno
};

struct Io {
  IoState state = IoState::kOk;
  size_t bytes = 0;
  int err = 0;
};

class Channel {
 public:
  virtual ~Channel() = default;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  virtual Io read_some(void* buf, size_t len) = 0;
  virtual Io write_some(const void* buf, size_t len) = 0;
  // The descriptor to poll (owned by the channel).
  virtual int fd() const = 0;
  // Why the last kError happened when Io::err is 0 (a TLS failure): one line.
  virtual std::string last_error() const { return {}; }
  // True while a security handshake is still running (its failures are worth a warning).
  virtual bool in_handshake() const { return false; }
  // Bytes already received and decoded but not yet read: poll() will not report them.
  virtual bool has_buffered() const { return false; }

  // The remote end, "host:port", for messages.
  const std::string& peer() const { return peer_; }

  // Blocking helpers with a deadline. kTimeout when it passes, kIo on errors and on a
  // closed stream (the message says which).
  Status send_all(const void* buf, size_t len, Deadline deadline);
  Status recv_all(void* buf, size_t len, Deadline deadline);

 protected:
  explicit Channel(std::string peer) : peer_(std::move(peer)) {}
  // Polls fd() for the direction `want` names until the deadline (kTimeout after it).
  Status wait_ready(IoState want, Deadline deadline, const char* what);

 private:
  Status io_error(const char* what, const Io& io) const;
  std::string peer_;
};

// A plain TCP channel over a connected socket; takes ownership of fd and makes it
// non-blocking.
std::unique_ptr<Channel> make_socket_channel(int fd, std::string peer);

// A byte stream in memory, for running the protocol code on a buffer (the fuzzers): reads
// return `input`, then the end of the stream; writes are appended to *sink; fd() is -1.
// With `piece` > 0 the input arrives in pieces of that many bytes, as from a network: after
// each piece one read says kWantRead (nothing more yet), so only non-blocking readers
// (read_some, as the server uses it) may use that; send_all / recv_all need piece 0.
std::unique_ptr<Channel> make_memory_channel(std::string input, std::string* sink, std::string peer,
                                             size_t piece = 0);

// "host:port" (or "[v6]:port") of a socket address.
std::string sockaddr_to_string(const void* sockaddr, size_t len);

// Listening socket on host:port (port 0 = the OS picks; host "" or "*" = every address).
// Returns the descriptor; *bound_port receives the port actually bound.
Result<int> tcp_listen(const std::string& host, uint16_t port, uint16_t* bound_port);

// One connection attempt to host:port, bounded by the deadline. kRefused-like transient
// failures (nobody listening yet, unreachable) come back as kIo so the caller can retry;
// a name that cannot resolve is kInvalidArgument.
Result<std::unique_ptr<Channel>> tcp_connect(const std::string& host, uint16_t port, Deadline deadline);

}  // namespace symmem
