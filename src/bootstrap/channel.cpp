// Plain TCP implementation of Channel plus the socket setup (listen, connect) of the
// bootstrap layer. Every descriptor is non-blocking and close-on-exec, every call retries
// on EINTR, and sends use MSG_NOSIGNAL so a vanished peer is an error, not a SIGPIPE.
#include "bootstrap/channel.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

namespace symmem {

Deadline deadline_after(double seconds) {
  constexpr double kMax = 365.0 * 24 * 3600;
  if (!(seconds > 0)) return Clock::now();
  if (seconds > kMax) seconds = kMax;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int poll_ms_until(Deadline d) {
  auto left = d - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1000000000 ? 1000000000 : static_cast<int>(ms);
}

Status Channel::wait_ready(IoState want, Deadline deadline, const char* what) {
  pollfd p{};
  p.fd = fd();
  p.events = want == IoState::kWantWrite ? POLLOUT : POLLIN;
  for (;;) {
    int ms = poll_ms_until(deadline);
    int r = ::poll(&p, 1, ms);
    if (r > 0) return {};
    if (r == 0)
      return Status(Errc::kTimeout, std::string("timed out ") + what + " " + peer_);
    if (errno != EINTR) return errno_status(Errc::kIo, std::string("poll while ") + what + " " + peer_, errno);
  }
}

Status Channel::io_error(const char* what, const Io& io) const {
  if (io.err != 0) return errno_status(Errc::kIo, what + peer_, io.err);
  return Status(in_handshake() ? Errc::kRefused : Errc::kIo, what + peer_ + ": " + last_error());
}

Status Channel::send_all(const void* buf, size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    Io io = write_some(p, len);
    switch (io.state) {
      case IoState::kOk:
        p += io.bytes;
        len -= io.bytes;
        break;
      case IoState::kWantRead:
      case IoState::kWantWrite:
        SYMMEM_RETURN_IF_ERROR(wait_ready(io.state, deadline, "sending to"));
        break;
      case IoState::kClosed:
        return Status(Errc::kIo, "connection closed by " + peer_);
      case IoState::kError:
        return io_error("send to ", io);
    }
  }
  return {};
}

Status Channel::recv_all(void* buf, size_t len, Deadline deadline) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    Io io = read_some(p, len);
    switch (io.state) {
      case IoState::kOk:
        p += io.bytes;
        len -= io.bytes;
        break;
      case IoState::kWantRead:
      case IoState::kWantWrite:
        SYMMEM_RETURN_IF_ERROR(wait_ready(io.state, deadline, "receiving from"));
        break;
      case IoState::kClosed:
        return Status(Errc::kIo, "connection closed by " + peer_);
      case IoState::kError:
        return io_error("receive from ", io);
    }
  }
  return {};
}

namespace {

class SocketChannel final : public Channel {
 public:
  SocketChannel(int fd, std::string peer) : Channel(std::move(peer)), fd_(fd) {
    int fl = ::fcntl(fd_, F_GETFL);
    if (fl >= 0 && !(fl & O_NONBLOCK)) ::fcntl(fd_, F_SETFL, fl | O_NONBLOCK);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~SocketChannel() override { ::close(fd_); }

  Io read_some(void* buf, size_t len) override {
    for (;;) {
      ssize_t n = ::recv(fd_, buf, len, 0);
      if (n > 0) return {IoState::kOk, static_cast<size_t>(n), 0};
      if (n == 0) return {IoState::kClosed, 0, 0};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoState::kWantRead, 0, 0};
      return {IoState::kError, 0, errno};
    }
  }

  Io write_some(const void* buf, size_t len) override {
    for (;;) {
      ssize_t n = ::send(fd_, buf, len, MSG_NOSIGNAL);
      if (n >= 0) return {IoState::kOk, static_cast<size_t>(n), 0};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoState::kWantWrite, 0, 0};
      return {IoState::kError, 0, errno};
    }
  }

  int fd() const override { return fd_; }

 private:
  int fd_;
};

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) ::freeaddrinfo(list);
  }
};

int resolve(const std::string& host, uint16_t port, bool passive, AddrInfo* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string service = std::to_string(port);
  const char* node = (host.empty() || host == "*") ? nullptr : host.c_str();
  return ::getaddrinfo(node, service.c_str(), &hints, &out->list);
}

}  // namespace

std::unique_ptr<Channel> make_socket_channel(int fd, std::string peer) {
  return std::make_unique<SocketChannel>(fd, std::move(peer));
}

namespace {

class MemoryChannel final : public Channel {
 public:
  MemoryChannel(std::string input, std::string* sink, std::string peer, size_t piece)
      : Channel(std::move(peer)), in_(std::move(input)), sink_(sink), piece_(piece) {}
  Io read_some(void* buf, size_t len) override {
    if (pos_ == in_.size()) return {IoState::kClosed, 0, 0};
    if (paused_) {
      paused_ = false;
      return {IoState::kWantRead, 0, 0};
    }
    size_t n = std::min(len, in_.size() - pos_);
    if (piece_) n = std::min(n, piece_ - in_piece_);
    std::memcpy(buf, in_.data() + pos_, n);
    pos_ += n;
    if (piece_ && (in_piece_ += n) == piece_) {
      in_piece_ = 0;
      paused_ = pos_ < in_.size();
    }
    return {IoState::kOk, n, 0};
  }
  Io write_some(const void* buf, size_t len) override {
    sink_->append(static_cast<const char*>(buf), len);
    return {IoState::kOk, len, 0};
  }
  int fd() const override { return -1; }

 private:
  std::string in_;
  size_t pos_ = 0;
  std::string* sink_;
  size_t piece_;
  size_t in_piece_ = 0;  // bytes of the current piece already read
  bool paused_ = false;
};

}  // namespace

std::unique_ptr<Channel> make_memory_channel(std::string input, std::string* sink, std::string peer, size_t piece) {
  return std::make_unique<MemoryChannel>(std::move(input), sink, std::move(peer), piece);
}

std::string sockaddr_to_string(const void* sa, size_t len) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (::getnameinfo(static_cast<const sockaddr*>(sa), static_cast<socklen_t>(len), host, sizeof(host), serv,
                    sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  if (std::strchr(host, ':')) return std::string("[") + host + "]:" + serv;
  return std::string(host) + ":" + serv;
}

Result<int> tcp_listen(const std::string& host, uint16_t port, uint16_t* bound_port) {
  AddrInfo ai;
  int rc = resolve(host, port, true, &ai);
  if (rc != 0)
    return Status(Errc::kInvalidArgument, "cannot resolve store bind address '" + host + "': " + gai_strerror(rc));
  // With no host, prefer the IPv6 wildcard (dual-stack) so both families can reach us.
  std::vector<addrinfo*> order;
  for (addrinfo* a = ai.list; a; a = a->ai_next)
    if (a->ai_family == AF_INET6) order.push_back(a);
  for (addrinfo* a = ai.list; a; a = a->ai_next)
    if (a->ai_family != AF_INET6) order.push_back(a);
  Status last(Errc::kIo, "no usable address for '" + host + "'");
  for (addrinfo* a : order) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = errno_status(Errc::kIo, "socket", errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (a->ai_family == AF_INET6) {
      int zero = 0;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
      last = errno_status(Errc::kIo, "bind " + sockaddr_to_string(a->ai_addr, a->ai_addrlen), errno);
      ::close(fd);
      continue;
    }
    if (::listen(fd, SOMAXCONN) != 0) {
      last = errno_status(Errc::kIo, "listen", errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage ss{};
    socklen_t sl = sizeof(ss);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) != 0) {
      last = errno_status(Errc::kIo, "getsockname", errno);
      ::close(fd);
      continue;
    }
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return fd;
  }
  return last;
}

Result<std::unique_ptr<Channel>> tcp_connect(const std::string& host, uint16_t port, Deadline deadline) {
  AddrInfo ai;
  int rc = resolve(host, port, false, &ai);
  if (rc == EAI_AGAIN) return Status(Errc::kIo, "cannot resolve '" + host + "' now: " + gai_strerror(rc));
  if (rc != 0) return Status(Errc::kInvalidArgument, "cannot resolve '" + host + "': " + gai_strerror(rc));
  Status last(Errc::kIo, "no address for '" + host + "'");
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    std::string peer = sockaddr_to_string(a->ai_addr, a->ai_addrlen);
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = errno_status(Errc::kIo, "socket", errno);
      continue;
    }
    int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (r != 0 && (errno == EINPROGRESS || errno == EINTR)) {
      // Wait for the non-blocking connect to finish, then read its verdict.
      pollfd p{fd, POLLOUT, 0};
      int pr;
      do {
        pr = ::poll(&p, 1, poll_ms_until(deadline));
      } while (pr < 0 && errno == EINTR);
      if (pr == 0) {
        ::close(fd);
        return Status(Errc::kTimeout, "connect to " + peer + " timed out");
      }
      int err = 0;
      socklen_t el = sizeof(err);
      if (pr < 0) {
        err = errno;
      } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0) {
        err = errno;
      }
      r = err == 0 ? 0 : -1;
      errno = err;
    }
    if (r != 0) {
      last = errno_status(Errc::kIo, "connect to " + peer, errno);
      ::close(fd);
      continue;
    }
    return make_socket_channel(fd, std::move(peer));
  }
  return last;
}

}  // namespace symmem
