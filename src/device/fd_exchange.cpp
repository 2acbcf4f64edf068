// The node's descriptor exchange (fd_exchange.hpp): datagrams with SCM_RIGHTS.
#include "device/fd_exchange.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "common/log.hpp"

namespace symmem::device {

namespace {

constexpr uint64_t kMagic = 0x73796d6d66647831ull;  // "symmfdx1"

struct Msg {
  uint64_t magic;
  uint64_t round;
  int32_t rank;
  int32_t has_fd;
  FdExchange::Words words;
};

sockaddr_un abstract_addr(const std::string& tag, int rank, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = "symmem-" + tag + "-" + std::to_string(rank);
  const size_t n = std::min(name.size(), sizeof(a.sun_path) - 1);
  std::memcpy(a.sun_path + 1, name.data(), n);  // sun_path[0] == 0: the abstract namespace
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string fd_socket_display(const std::string& tag, int rank) {
  return "@symmem-" + tag + "-" + std::to_string(rank);
}

Result<std::unique_ptr<FdExchange>> FdExchange::open(const std::string& tag, int rank, std::vector<int> members,
                                                     double timeout_s) {
  if (tag.size() > 80) return Status(Errc::kInvalidArgument, "descriptor exchange: tag longer than 80 characters");
  if (std::find(members.begin(), members.end(), rank) == members.end())
    return Status(Errc::kInvalidArgument, "descriptor exchange: PE " + std::to_string(rank) + " is not a member");
  std::unique_ptr<FdExchange> x(new FdExchange());
  x->tag_ = tag;
  x->rank_ = rank;
  x->members_ = std::move(members);
  x->timeout_s_ = timeout_s;
  x->name_ = fd_socket_display(tag, rank);
  x->sock_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (x->sock_ < 0) return errno_status(Errc::kIo, "descriptor exchange: socket(AF_UNIX)", errno);
  int on = 1;
  if (::setsockopt(x->sock_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return errno_status(Errc::kIo, "descriptor exchange: SO_PASSCRED", errno);
  socklen_t len = 0;
  sockaddr_un a = abstract_addr(tag, rank, &len);
  if (::bind(x->sock_, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    const int e = errno;
    return errno_status(Errc::kIo, "descriptor exchange: PE " + std::to_string(rank) + " cannot bind " + x->name_ +
                                       (e == EADDRINUSE ? " (another process of this network namespace holds it)" : ""),
                        e);
  }
  return x;
}

FdExchange::~FdExchange() {
  for (auto& [k, r] : pending_)
    if (r.fd >= 0) ::close(r.fd);
  if (sock_ >= 0) ::close(sock_);
}

Status FdExchange::send_to(int peer, int fd, const Words& w, bool* sent) {
  Msg m{kMagic, round_, rank_, fd >= 0 ? 1 : 0, w};
  iovec iov{&m, sizeof m};
  socklen_t len = 0;
  sockaddr_un a = abstract_addr(tag_, peer, &len);
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  msghdr h{};
  h.msg_name = &a;
  h.msg_namelen = len;
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  if (fd >= 0) {
    h.msg_control = ctl;
    h.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (::sendmsg(sock_, &h, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(sizeof m)) {
    *sent = true;
    return Status::Ok();
  }
  const int e = errno;
  // Not bound yet (the peer has not reached this round's open) or its queue is full: retry.
  if (e == ECONNREFUSED || e == ENOENT || e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR)
    return Status::Ok();
  return errno_status(Errc::kIo, "descriptor exchange: PE " + std::to_string(rank_) + " sending to PE " +
                                     std::to_string(peer) + " (" + fd_socket_display(tag_, peer) + ")",
                      e);
}

Status FdExchange::drain() {
  for (;;) {
    Msg m{};
    iovec iov{&m, sizeof m};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4) + CMSG_SPACE(sizeof(ucred))] = {};
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = ctl;
    h.msg_controllen = sizeof ctl;
    const ssize_t n = ::recvmsg(sock_, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
      if (errno == EINTR) continue;
      return errno_status(Errc::kIo, "descriptor exchange: PE " + std::to_string(rank_) + " receiving", errno);
    }
    std::vector<int> fds;
    bool have_cred = false;
    ucred cred{};
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level != SOL_SOCKET) continue;
      if (c->cmsg_type == SCM_RIGHTS) {
        const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; ++i) {
          int f;
          std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
          fds.push_back(f);
        }
      } else if (c->cmsg_type == SCM_CREDENTIALS) {
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        have_cred = true;
      }
    }
    auto drop = [&](const char* why) {
      for (int f : fds) ::close(f);
      log_pe(LogLevel::kWarn, rank_, "descriptor exchange %s: dropped a message: %s", name_.c_str(), why);
    };
    if (size_t(n) != sizeof m || m.magic != kMagic) {
      drop("not a symmem descriptor message");
      continue;
    }
    if (!have_cred || cred.uid != ::getuid()) {
      drop("sent by another user");
      continue;
    }
    if ((h.msg_flags & MSG_CTRUNC) || fds.size() != size_t(m.has_fd)) {
      drop("wrong number of descriptors");
      continue;
    }
    if (std::find(members_.begin(), members_.end(), m.rank) == members_.end() || m.rank == rank_ ||
        m.round < round_) {
      drop("from a PE that is not a member, or for a past round");
      continue;
    }
    auto key = std::make_pair(m.round, int(m.rank));
    if (pending_.count(key)) {
      drop("a second message for the same round");
      continue;
    }
    pending_[key] = Received{fds.empty() ? -1 : fds[0], m.words};
  }
}

Status FdExchange::allgather(int fd, const Words& words, std::vector<Received>* out) {
  ++round_;
  const size_t n = members_.size();
  std::vector<uint8_t> sent(n, 0);
  const double deadline = now_s() + timeout_s_;
  auto fail = [&](Status s) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->first.first != round_) {
        ++it;
        continue;
      }
      if (it->second.fd >= 0) ::close(it->second.fd);
      it = pending_.erase(it);
    }
    return s;
  };
  for (;;) {
    bool all_sent = true, all_in = true;
    for (size_t i = 0; i < n; ++i) {
      if (members_[i] == rank_) continue;
      if (!sent[i]) {
        bool ok = false;
        Status s = send_to(members_[i], fd, words, &ok);
        if (!s.ok()) return fail(s);
        sent[i] = ok;
        all_sent = all_sent && ok;
      }
    }
    if (Status s = drain(); !s.ok()) return fail(s);
    for (size_t i = 0; i < n && all_in; ++i)
      if (members_[i] != rank_ && !pending_.count({round_, members_[i]})) all_in = false;
    if (all_sent && all_in) break;
    const double left = deadline - now_s();
    if (left <= 0) {
      std::string unsent, silent;
      for (size_t i = 0; i < n; ++i) {
        if (members_[i] == rank_) continue;
        if (!sent[i]) unsent += (unsent.empty() ? "PE " : ", PE ") + std::to_string(members_[i]);
        if (!pending_.count({round_, members_[i]}))
          silent += (silent.empty() ? "PE " : ", PE ") + std::to_string(members_[i]);
      }
      char t[32];
      std::snprintf(t, sizeof t, "%.3g s", timeout_s_);
      std::string msg = "descriptor exchange round " + std::to_string(round_) + " on PE " + std::to_string(rank_) +
                        " (" + name_ + ") timed out after " + t + ":";
      if (!silent.empty()) msg += " nothing received from " + silent;
      if (!unsent.empty())
        msg += std::string(silent.empty() ? "" : ";") + " could not reach " + unsent +
               " (socket not bound: the PE has not started the exchange, or is in another network namespace)";
      return fail(Status(Errc::kTimeout, msg));
    }
    // Short polls while something is unsent (the peer may bind at any moment).
    pollfd p{sock_, POLLIN, 0};
    const int ms = all_sent ? std::max(1, std::min(100, int(left * 1000))) : 1;
    (void)::poll(&p, 1, ms);
  }
  out->assign(n, Received{});
  for (size_t i = 0; i < n; ++i) {
    if (members_[i] == rank_) {
      (*out)[i].words = words;
      continue;
    }
    auto it = pending_.find({round_, members_[i]});
    (*out)[i] = it->second;
    pending_.erase(it);
  }
  return Status::Ok();
}

}  // namespace symmem::device
