// The TCP store: address parsing, the server (one thread, poll() over every connection,
// blocking gets and waits kept as pending requests with deadlines) and the client (one
// request in flight per connection, serialized by a mutex). The wire format is in
// wire.hpp; all byte I/O goes through Channel.
#include "bootstrap/tcp_store.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "bootstrap/channel.hpp"
#include "bootstrap/wire.hpp"
#include "common/log.hpp"

namespace symmem {

using wire::Op;

namespace {

constexpr double kHelloTimeoutS = 10.0;     // a new connection must say hello within this
constexpr double kRequestTimeoutS = 300.0;  // answer time for requests that never block
constexpr double kClientGraceS = 10.0;      // beyond a server-side timeout, in case it died
constexpr double kMinHandshakeS = 2.0;
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadPerRound = 1 << 20;  // fairness between busy connections
constexpr size_t kOutHighWater = 4 << 20;  // stop reading requests while replies pile up
// Warnings about clients that have not authenticated: at most one per peer host per
// interval, for at most kMaxStrangerHosts hosts at once; the rest go to debug level.
constexpr double kStrangerWarnEveryS = 60.0;
constexpr size_t kMaxStrangerHosts = 256;

std::string seconds_str(double s) {
  char b[32];
  std::snprintf(b, sizeof(b), "%g", s);
  return b;
}

std::string quoted_list(const std::vector<std::string>& keys) {
  constexpr size_t kShow = 16;
  std::string out;
  for (size_t i = 0; i < keys.size() && i < kShow; ++i) {
    if (i) out += ", ";
    out += "'" + keys[i] + "'";
  }
  if (keys.size() > kShow) out += ", ... (" + std::to_string(keys.size()) + " in all)";
  return out;
}

uint64_t timeout_ms(double s) {
  if (!(s > 0)) return 0;
  constexpr double kMaxMs = 365.0 * 24 * 3600 * 1000;
  double ms = s * 1000.0;
  return ms > kMaxMs ? static_cast<uint64_t>(kMaxMs) : static_cast<uint64_t>(ms + 0.5);
}

bool parse_i64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// ------------------------------------------------------------------------------------------
// Server

class ServerImpl final : public TcpStoreServer {
 public:
  // Without `threaded`, no sockets and no thread: only serve_buffer() drives it.
  ServerImpl(int listen_fd, int wake_fd, uint16_t port, const StoreSecurity& sec, std::shared_ptr<TlsContext> tls,
             bool threaded = true)
      : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), sec_(sec), tls_(std::move(tls)) {
    if (threaded) thread_ = std::thread([this] { run(); });
  }
  ~ServerImpl() override {
    stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }
  uint16_t port() const override { return port_; }
  int connections() const override { return nconns_.load(); }
  void stop() override {
    std::lock_guard<std::mutex> lk(stop_mu_);
    if (!thread_.joinable()) return;
    stop_.store(true);
    uint64_t one = 1;
    ssize_t r;
    do {
      r = ::write(wake_fd_, &one, sizeof(one));
    } while (r < 0 && errno == EINTR);
    thread_.join();
    // Clients (even those blocked in a get) see the connection close at once.
    conns_.clear();
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  std::string serve_buffer(std::string input, BufferStoreServer::Start start, size_t piece);

 private:
  // Where a connection is in its set-up: after an accepted hello, the kOk goes out in
  // clear (kUpgrade), then the TLS handshake runs (kHandshake), then kOk again, encrypted.
  enum class Tls { kNone, kUpgrade, kHandshake, kDone };

  struct Conn {
    std::unique_ptr<Channel> ch;
    Tls tls = Tls::kNone;
    bool read_wants_write = false;  // the record layer must send before it can read
    std::string in;  // received, not yet parsed
    std::string out;  // to send, from out_pos
    size_t out_pos = 0;
    bool hello_done = false;
    bool closing = false;  // flush `out`, then close
    bool dead = false;
    bool hung_up = false;  // the peer finished sending: answer what it sent, then close
    int rank = -1;
    Deadline hello_deadline;
    uint64_t pending = 0;  // id of the request it is blocked in, 0 = none
    // A liveness watch (kWatch): when the connection ends while left_key is absent, the
    // server creates watch_key = on_drop.
    bool watching = false;
    std::string watch_key, left_key, on_drop;
    size_t unsent() const { return out.size() - out_pos; }
    std::string who() const {
      return rank >= 0 ? ch->peer() + " (rank " + std::to_string(rank) + ")" : ch->peer();
    }
    // It presented the job's magic and, unless TLS is off, completed the handshake.
    bool authenticated() const { return hello_done && (tls == Tls::kNone || tls == Tls::kDone); }
  };

  struct StrangerHost {
    Deadline last_warned;
    uint64_t suppressed = 0;
  };

  struct Pending {
    uint64_t conn = 0;
    bool is_get = false;
    std::vector<std::string> keys;
    size_t missing = 0;
    std::multimap<Deadline, uint64_t>::iterator deadline_it;
  };

  void run();
  void accept_all();
  void on_readable(uint64_t id, Conn& c);
  void flush(Conn& c);
  void process(uint64_t id, Conn& c);
  void handle_frame(uint64_t id, Conn& c, const char* p, size_t n);
  void handle_hello(Conn& c, wire::Reader& r);
  void reply(Conn& c, std::string frame);
  void reply_error(Conn& c, Errc code, const std::string& msg);
  void start_pending(uint64_t id, Conn& c, bool is_get, std::vector<std::string> keys, uint64_t ms);
  void notify(const std::string& key);
  // kCreate: sets key unless it exists; the value stored now.
  const std::string& create(const std::string& key, const std::string& value);
  void recount(uint64_t pid);
  void finish_pending(uint64_t pid, bool timed_out);
  void drop_pending(uint64_t pid);
  void expire(Deadline now);
  void reap();
  void protocol_violation(Conn& c, const std::string& why);
  void warn_about(const Conn& c, const std::string& line);
  void upgrade(Conn& c);

  int listen_fd_;
  int wake_fd_;
  uint16_t port_;
  StoreSecurity sec_;
  std::shared_ptr<TlsContext> tls_;  // null when TLS is off
  std::thread thread_;
  std::mutex stop_mu_;
  std::atomic<bool> stop_{false};
  std::atomic<int> nconns_{0};
  Deadline listen_paused_until_{};
  std::unordered_map<std::string, StrangerHost> strangers_;  // peer host -> its warnings

  // Everything below is touched by the server thread only.
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, std::string> kv_;
  std::map<uint64_t, Pending> pending_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;  // missing key -> pending ids
  std::multimap<Deadline, uint64_t> deadlines_;
  std::vector<uint64_t> ready_;
  std::vector<char> read_buf_ = std::vector<char>(kReadChunk);
  bool processing_ = false;  // inside process(): the input buffer is not consumed yet  // connections whose buffered requests may now proceed
};

void ServerImpl::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  while (!stop_.load()) {
    Deadline now = Clock::now();
    Deadline wake = now + std::chrono::seconds(1);
    if (!deadlines_.empty() && deadlines_.begin()->first < wake) wake = deadlines_.begin()->first;
    fds.clear();
    ids.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    bool listening = now >= listen_paused_until_;
    fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});
    if (!listening && listen_paused_until_ < wake) wake = listen_paused_until_;
    bool buffered = false;
    for (auto& [id, c] : conns_) {
      short ev = POLLRDHUP;
      bool reads = !c->closing && c->pending == 0 && c->unsent() < kOutHighWater && c->tls != Tls::kUpgrade;
      if (reads) ev |= POLLIN;
      if (reads && c->ch->has_buffered()) buffered = true;
      if (c->unsent() > 0 || c->read_wants_write) ev |= POLLOUT;
      bool setting_up = !c->hello_done || c->tls == Tls::kUpgrade || c->tls == Tls::kHandshake;
      if (setting_up && c->hello_deadline < wake) wake = c->hello_deadline;
      fds.push_back({c->ch->fd(), ev, 0});
      ids.push_back(id);
    }
    // Records TLS already decrypted do not make the socket readable: read them now.
    int n = ::poll(fds.data(), fds.size(), buffered || !ready_.empty() ? 0 : poll_ms_until(wake));
    if (n < 0) {
      if (errno == EINTR) continue;
      SYMMEM_LOG(kError, "store: poll failed: %s; the store stops serving", std::strerror(errno));
      break;
    }
    if (fds[0].revents) {
      uint64_t v;
      ssize_t r = ::read(wake_fd_, &v, sizeof(v));
      (void)r;
    }
    if (stop_.load()) break;
    if (fds[1].revents & POLLIN) accept_all();
    for (size_t i = 0; i < ids.size(); ++i) {
      short rev = fds[i + 2].revents;
      if (!rev) continue;
      auto it = conns_.find(ids[i]);
      if (it == conns_.end()) continue;
      Conn& c = *it->second;
      if (c.dead) continue;
      if (!(rev & POLLIN) && (fds[i + 2].events & POLLIN) && c.ch->has_buffered()) rev |= POLLIN;
      if (rev & POLLOUT) {
        flush(c);
        if (c.read_wants_write && !c.dead) {
          c.read_wants_write = false;
          rev |= POLLIN;
        }
      }
      if (c.dead) continue;
      if (rev & (POLLERR | POLLHUP)) {
        SYMMEM_LOG(kDebug, "store: connection from %s dropped", c.who().c_str());
        c.dead = true;
      } else if (rev & POLLIN) {
        on_readable(ids[i], c);
      } else if ((rev & POLLRDHUP) && !c.hung_up) {
        // The peer hung up while we were not reading from it (blocked in a wait).
        SYMMEM_LOG(kDebug, "store: %s closed its connection", c.who().c_str());
        c.dead = true;
      }
    }
    expire(Clock::now());
    while (!ready_.empty()) {
      uint64_t id = ready_.back();
      ready_.pop_back();
      auto it = conns_.find(id);
      if (it != conns_.end() && !it->second->dead) process(id, *it->second);
    }
    reap();
  }
}

void ServerImpl::accept_all() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t sl = sizeof(ss);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors: leave the backlog alone for a moment rather than spin on it.
      SYMMEM_LOG(kWarn, "store: accept failed: %s", std::strerror(errno));
      listen_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      return;
    }
    auto c = std::make_unique<Conn>();
    c->ch = make_socket_channel(fd, sockaddr_to_string(&ss, sl));
    c->hello_deadline = deadline_after(kHelloTimeoutS);
    SYMMEM_LOG(kDebug, "store: connection from %s", c->ch->peer().c_str());
    conns_.emplace(next_id_++, std::move(c));
    nconns_.store(static_cast<int>(conns_.size()));
  }
}

void ServerImpl::on_readable(uint64_t id, Conn& c) {
  size_t got = 0;
  while (got < kReadPerRound) {
    // Through a scratch buffer: growing `in` by a whole chunk per read zero-fills 64 KiB
    // each time, however few bytes arrive.
    Io io = c.ch->read_some(read_buf_.data(), read_buf_.size());
    if (io.state == IoState::kOk) {
      c.in.append(read_buf_.data(), io.bytes);
      got += io.bytes;
      continue;
    }
    // Requests that arrived before the end of the stream are still answered (process()
    // closes the connection after them), unless the stream ended in a TLS handshake.
    if (io.state == IoState::kClosed) {
      SYMMEM_LOG(kDebug, "store: %s closed its connection", c.who().c_str());
      c.hung_up = true;
      break;
    }
    if (io.state == IoState::kError) {
      std::string why = io.err ? std::strerror(io.err) : c.ch->last_error();
      if (c.ch->in_handshake()) {  // a refusal: worth saying at the store, as the client does
        warn_about(c, "store: refused " + c.who() + ": " + why);
        c.dead = true;
        return;
      }
      SYMMEM_LOG(kDebug, "store: reading from %s: %s", c.who().c_str(), why.c_str());
      c.hung_up = true;
      break;
    }
    if (io.state == IoState::kWantWrite) c.read_wants_write = true;
    break;  // would block
  }
  if (c.tls == Tls::kHandshake && !c.ch->in_handshake()) {
    c.tls = Tls::kDone;
    SYMMEM_LOG(kDebug, "store: TLS (%s) established with %s", StoreSecurity::mode_name(sec_.mode), c.who().c_str());
    reply(c, wire::Writer(Op::kOk).frame());
  }
  ready_.push_back(id);
}

void ServerImpl::flush(Conn& c) {
  while (c.unsent() > 0) {
    Io io = c.ch->write_some(c.out.data() + c.out_pos, c.unsent());
    if (io.state == IoState::kOk) {
      c.out_pos += io.bytes;
      continue;
    }
    if (io.state == IoState::kWantRead || io.state == IoState::kWantWrite) return;
    SYMMEM_LOG(kDebug, "store: sending to %s: %s", c.who().c_str(),
               io.state != IoState::kError ? "closed" : io.err ? std::strerror(io.err) : c.ch->last_error().c_str());
    c.dead = true;
    return;
  }
  c.out.clear();
  c.out_pos = 0;
  if (c.closing) c.dead = true;
  // Inside process() the hello is still in `in`; process() upgrades once it is consumed.
  if (c.tls == Tls::kUpgrade && !c.dead && !processing_) upgrade(c);
}

// The hello's kOk has left in clear: from here on the stream is TLS.
void ServerImpl::upgrade(Conn& c) {
  if (!c.in.empty()) {  // a client must wait for the kOk before its ClientHello
    protocol_violation(c, "sent data before the store accepted its hello");
    return;
  }
  auto w = tls_->wrap(std::move(c.ch));
  if (!w.ok()) {
    SYMMEM_LOG(kWarn, "store: cannot start TLS with rank %d: %s", c.rank, w.status().message().c_str());
    c.dead = true;
    return;
  }
  c.ch = std::move(w).value();
  c.tls = Tls::kHandshake;
}

void ServerImpl::reply(Conn& c, std::string frame) {
  if (c.out.empty()) {
    c.out = std::move(frame);
    c.out_pos = 0;
  } else {
    c.out += frame;
  }
  flush(c);
}

void ServerImpl::reply_error(Conn& c, Errc code, const std::string& msg) {
  reply(c, wire::Writer(Op::kError).u8(static_cast<uint8_t>(code)).str(msg).frame());
}

void ServerImpl::protocol_violation(Conn& c, const std::string& why) {
  warn_about(c, "store: closing the connection from " + c.who() + ": " + why);
  c.dead = true;
}

// Anyone who can reach the port can cause these lines: for a client that has not
// authenticated, only the first per host (and interval) is a warning.
void ServerImpl::warn_about(const Conn& c, const std::string& line) {
  if (c.authenticated()) {
    SYMMEM_LOG(kWarn, "%s", line.c_str());
    return;
  }
  const std::string& peer = c.ch->peer();
  std::string host = peer.substr(0, peer.rfind(':'));
  Deadline now = Clock::now();
  if (strangers_.size() >= kMaxStrangerHosts && !strangers_.count(host))
    std::erase_if(strangers_, [&](const auto& e) { return now - e.second.last_warned > std::chrono::duration<double>(kStrangerWarnEveryS); });
  auto it = strangers_.find(host);
  bool warn = false;
  if (it == strangers_.end()) {
    warn = strangers_.size() < kMaxStrangerHosts;
    if (warn) it = strangers_.emplace(host, StrangerHost{now, 0}).first;
  } else if (now - it->second.last_warned >= std::chrono::duration<double>(kStrangerWarnEveryS)) {
    warn = true;
  }
  if (!warn) {
    if (it != strangers_.end()) ++it->second.suppressed;
    SYMMEM_LOG(kDebug, "%s", line.c_str());
    return;
  }
  if (it->second.suppressed)
    SYMMEM_LOG(kWarn, "%s (and %llu more from %s since the last warning; those are logged at debug level)",
               line.c_str(), static_cast<unsigned long long>(it->second.suppressed), host.c_str());
  else
    SYMMEM_LOG(kWarn, "%s (more such lines from %s within %g s are logged at debug level)", line.c_str(), host.c_str(),
               kStrangerWarnEveryS);
  it->second.last_warned = now;
  it->second.suppressed = 0;
}

void ServerImpl::process(uint64_t id, Conn& c) {
  size_t pos = 0;
  processing_ = true;
  while (!c.dead && !c.closing && c.pending == 0 && c.unsent() < kOutHighWater &&
         (c.tls == Tls::kNone || c.tls == Tls::kDone) && c.in.size() - pos >= wire::kHeaderSize) {
    uint32_t len = wire::load_u32(c.in.data() + pos);
    uint32_t limit = c.hello_done ? wire::kMaxFrame : wire::kMaxHelloFrame;
    if (len > limit || len == 0) {
      protocol_violation(c, "frame of " + std::to_string(len) + " bytes" +
                                (c.hello_done ? " (limit " + std::to_string(limit) + ")"
                                              : " where a hello was expected (not a symmem client?)"));
      processing_ = false;
      return;
    }
    if (c.in.size() - pos < wire::kHeaderSize + len) break;
    handle_frame(id, c, c.in.data() + pos + wire::kHeaderSize, len);
    pos += wire::kHeaderSize + len;
  }
  c.in.erase(0, pos);
  processing_ = false;
  if (c.tls == Tls::kUpgrade && !c.dead && c.unsent() == 0) upgrade(c);
  if (c.hung_up && !c.dead) {
    // Nobody is left to answer a blocked request; otherwise flush the answers and close.
    c.closing = true;
    if (c.pending || c.unsent() == 0) c.dead = true;
  }
}

void ServerImpl::handle_hello(Conn& c, wire::Reader& r) {
  uint32_t proto = r.u32();
  uint16_t version = r.u16();
  if (!r.ok() || proto != wire::kProtocolId) {
    protocol_violation(c, "bad hello (not a symmem client?)");
    return;
  }
  auto refuse = [&](int rank, const std::string& why) {
    warn_about(c, "store: refused " + c.ch->peer() + " claiming rank " + std::to_string(rank) + ": " + why);
    c.closing = true;
    reply(c, wire::Writer(Op::kRefused).str(why).frame());
  };
  if (version != wire::kVersion) {
    refuse(-1, "protocol version " + std::to_string(version) + " is not supported (the store speaks version " +
                   std::to_string(wire::kVersion) + "; mixed symmem versions in one job?)");
    return;
  }
  uint64_t magic = r.u64();
  int32_t rank = static_cast<int32_t>(r.u32());
  uint8_t mode = r.u8();
  if (!r.at_end()) {
    protocol_violation(c, "bad hello (not a symmem client?)");
    return;
  }
  c.rank = rank;
  using Mode = StoreSecurity::Mode;
  auto theirs = static_cast<Mode>(mode);
  if (magic != sec_.magic) {
    refuse(rank, "wrong job magic (the client holds the unique id or SYMMEM_STORE_MAGIC of another job)");
    return;
  }
  if (theirs != sec_.mode) {
    std::string why;
    if (theirs == Mode::kPlain)
      why = "this store requires TLS (" + std::string(StoreSecurity::mode_name(sec_.mode)) +
            ") but the client connects without TLS; switch TLS off on every PE and the store, or on none "
            "(SYMMEM_STORE_TLS)";
    else if (sec_.mode == Mode::kPlain)
      why = "this store runs without TLS (switched off explicitly) but the client requires TLS (" +
            std::string(mode <= 2 ? StoreSecurity::mode_name(theirs) : "unknown mode") +
            "); use the same SYMMEM_STORE_TLS setting everywhere";
    else
      why = "the client uses TLS mode '" + std::string(mode <= 2 ? StoreSecurity::mode_name(theirs) : "?") +
            "' but this store uses '" + StoreSecurity::mode_name(sec_.mode) + "' (SYMMEM_STORE_TLS)";
    refuse(rank, why);
    return;
  }
  c.hello_done = true;
  SYMMEM_LOG(kDebug, "store: rank %d connected from %s", rank, c.ch->peer().c_str());
  // A fresh deadline for the TLS handshake that follows.
  c.hello_deadline = deadline_after(kHelloTimeoutS);
  if (tls_) c.tls = Tls::kUpgrade;
  reply(c, wire::Writer(Op::kOk).frame());
}

void ServerImpl::handle_frame(uint64_t id, Conn& c, const char* p, size_t n) {
  wire::Reader r(p, n);
  Op op = static_cast<Op>(r.u8());
  if (!c.hello_done) {
    if (op != Op::kHello) {
      protocol_violation(c, "first message is not a hello (not a symmem client?)");
      return;
    }
    handle_hello(c, r);
    return;
  }
  auto malformed = [&] { protocol_violation(c, "malformed request (op " + std::to_string(int(op)) + ")"); };
  switch (op) {
    case Op::kSet: {
      std::string key = r.str();
      std::string value = r.str();
      if (!r.at_end()) return malformed();
      auto [it, added] = kv_.insert_or_assign(std::move(key), std::move(value));
      if (added) notify(it->first);
      reply(c, wire::Writer(Op::kOk).frame());
      return;
    }
    case Op::kGet: {
      std::string key = r.str();
      uint64_t ms = r.u64();
      if (!r.at_end()) return malformed();
      auto it = kv_.find(key);
      if (it != kv_.end()) {
        reply(c, wire::Writer(Op::kValue).str(it->second).frame());
        return;
      }
      start_pending(id, c, true, {std::move(key)}, ms);
      return;
    }
    case Op::kWait: {
      std::vector<std::string> keys = r.strs();
      uint64_t ms = r.u64();
      if (!r.at_end()) return malformed();
      std::unordered_set<std::string> seen;
      std::vector<std::string> unique;
      for (auto& k : keys)
        if (seen.insert(k).second) unique.push_back(std::move(k));
      start_pending(id, c, false, std::move(unique), ms);
      return;
    }
    case Op::kAdd: {
      std::string key = r.str();
      int64_t delta = r.i64();
      if (!r.at_end()) return malformed();
      auto it = kv_.find(key);
      int64_t cur = 0;
      if (it != kv_.end() && !parse_i64(it->second, &cur)) {
        reply_error(c, Errc::kInvalidArgument, "add: key '" + key + "' holds a value that is not an integer");
        return;
      }
      int64_t next;
      if (__builtin_add_overflow(cur, delta, &next)) {
        reply_error(c, Errc::kInvalidArgument, "add: key '" + key + "' would overflow");
        return;
      }
      if (it != kv_.end()) {
        it->second = std::to_string(next);
      } else {
        auto ins = kv_.emplace(std::move(key), std::to_string(next));
        notify(ins.first->first);
      }
      reply(c, wire::Writer(Op::kInt).i64(next).frame());
      return;
    }
    case Op::kCheck: {
      std::vector<std::string> keys = r.strs();
      if (!r.at_end()) return malformed();
      wire::Writer w(Op::kBools);
      w.u32(static_cast<uint32_t>(keys.size()));
      for (const auto& k : keys) w.u8(kv_.count(k) ? 1 : 0);
      reply(c, w.frame());
      return;
    }
    case Op::kErase: {
      std::string key = r.str();
      if (!r.at_end()) return malformed();
      kv_.erase(key);
      reply(c, wire::Writer(Op::kOk).frame());
      return;
    }
    case Op::kCreate: {
      std::string key = r.str();
      std::string value = r.str();
      if (!r.at_end()) return malformed();
      reply(c, wire::Writer(Op::kValue).str(create(key, value)).frame());
      return;
    }
    case Op::kWatch: {
      std::string key = r.str();
      std::string left = r.str();
      std::string drop = r.str();
      if (!r.at_end() || c.watching) return malformed();
      c.watching = true;
      c.watch_key = key;
      c.left_key = std::move(left);
      c.on_drop = std::move(drop);
      reply(c, wire::Writer(Op::kOk).frame());
      auto it = kv_.find(key);
      if (it != kv_.end()) reply(c, wire::Writer(Op::kValue).str(it->second).frame());
      else start_pending(id, c, true, {std::move(key)}, ~uint64_t(0) >> 1);  // never times out
      return;
    }
    default:
      protocol_violation(c, "unknown request op " + std::to_string(int(op)));
      return;
  }
}

void ServerImpl::start_pending(uint64_t id, Conn& c, bool is_get, std::vector<std::string> keys, uint64_t ms) {
  uint64_t pid = next_id_++;
  Pending p;
  p.conn = id;
  p.is_get = is_get;
  p.keys = std::move(keys);
  Deadline d = deadline_after(static_cast<double>(ms) / 1000.0);
  p.deadline_it = deadlines_.emplace(d, pid);
  pending_.emplace(pid, std::move(p));
  c.pending = pid;
  recount(pid);
}

// Counts the keys of a pending request that are still absent and waits on each of them;
// when none is absent, the request is answered.
const std::string& ServerImpl::create(const std::string& key, const std::string& value) {
  auto [it, added] = kv_.try_emplace(key, value);
  if (added) notify(it->first);
  return it->second;
}

void ServerImpl::recount(uint64_t pid) {
  Pending& p = pending_.at(pid);
  p.missing = 0;
  for (const auto& k : p.keys) {
    if (!kv_.count(k)) {
      waiters_[k].push_back(pid);
      ++p.missing;
    }
  }
  if (p.missing == 0) finish_pending(pid, false);
}

void ServerImpl::notify(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  waiters_.erase(it);
  for (uint64_t pid : ids) {
    auto p = pending_.find(pid);
    if (p == pending_.end()) continue;
    // A key counted earlier may have been erased since: recount before answering.
    if (--p->second.missing == 0) recount(pid);
  }
}

void ServerImpl::finish_pending(uint64_t pid, bool timed_out) {
  Pending& p = pending_.at(pid);
  auto cit = conns_.find(p.conn);
  if (cit != conns_.end() && !cit->second->dead) {
    Conn& c = *cit->second;
    if (timed_out) {
      std::vector<std::string> missing;
      for (const auto& k : p.keys)
        if (!kv_.count(k)) missing.push_back(k);
      reply(c, wire::Writer(Op::kTimeout).strs(missing).frame());
    } else if (p.is_get) {
      reply(c, wire::Writer(Op::kValue).str(kv_.at(p.keys[0])).frame());
    } else {
      reply(c, wire::Writer(Op::kOk).frame());
    }
    c.pending = 0;
    ready_.push_back(p.conn);
  }
  drop_pending(pid);
}

void ServerImpl::drop_pending(uint64_t pid) {
  auto it = pending_.find(pid);
  if (it == pending_.end()) return;
  for (const auto& k : it->second.keys) {
    if (kv_.count(k)) continue;
    auto w = waiters_.find(k);
    if (w == waiters_.end()) continue;
    std::erase(w->second, pid);
    if (w->second.empty()) waiters_.erase(w);
  }
  deadlines_.erase(it->second.deadline_it);
  pending_.erase(it);
}

void ServerImpl::expire(Deadline now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) finish_pending(deadlines_.begin()->second, true);
  for (auto& [id, c] : conns_) {
    if (c->closing || c->dead || c->hello_deadline > now) continue;
    if (!c->hello_done)
      protocol_violation(*c, "no hello within " + seconds_str(kHelloTimeoutS) + " s (not a symmem client?)");
    else if (c->tls == Tls::kUpgrade || c->tls == Tls::kHandshake)
      protocol_violation(*c, "TLS handshake not completed within " + seconds_str(kHelloTimeoutS) + " s");
  }
}

void ServerImpl::reap() {
  std::vector<std::pair<std::string, std::string>> dropped;  // watches whose PE left without saying so
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (!it->second->dead) {
      ++it;
      continue;
    }
    Conn& c = *it->second;
    if (c.pending) drop_pending(c.pending);
    if (c.watching && !kv_.count(c.left_key)) {
      SYMMEM_LOG(kDebug, "store: the watch of %s ended before it left: '%s'", c.who().c_str(), c.on_drop.c_str());
      dropped.emplace_back(std::move(c.watch_key), std::move(c.on_drop));
    }
    it = conns_.erase(it);
  }
  nconns_.store(static_cast<int>(conns_.size()));
  for (auto& [key, value] : dropped) create(key, value);
}

// One connection on a memory channel, driven as run() drives a socket's, less poll(): the
// channel always has bytes or the end of the stream, and writes always go through. A
// connection that stops reading (a blocked request, or a store waiting for a flush) while
// its input is over ends as a socket does when its peer hangs up (POLLRDHUP).
std::string ServerImpl::serve_buffer(std::string input, BufferStoreServer::Start start, size_t piece) {
  std::string sent;
  auto conn = std::make_unique<Conn>();
  conn->ch = make_memory_channel(std::move(input), &sent, "buffer:0", piece);
  conn->hello_deadline = deadline_after(kHelloTimeoutS);
  if (start == BufferStoreServer::Start::kAfterHello) {
    conn->hello_done = true;
    conn->rank = 0;
    conn->tls = tls_ ? Tls::kDone : Tls::kNone;  // past the handshake: the frames as decrypted
  }
  const uint64_t id = next_id_++;
  conns_.emplace(id, std::move(conn));
  for (int round = 0;; ++round) {
    auto it = conns_.find(id);
    if (it == conns_.end()) break;
    Conn& c = *it->second;
    if (round > (1 << 20)) {  // every round consumes input or ends the connection
      SYMMEM_LOG(kError, "store: a buffered connection made no progress");
      std::abort();
    }
    if (!c.dead && (c.unsent() > 0 || c.read_wants_write)) {
      flush(c);
      c.read_wants_write = false;
    }
    bool reads = !c.closing && c.pending == 0 && c.unsent() < kOutHighWater && c.tls != Tls::kUpgrade;
    if (c.dead) {
    } else if (reads && !c.hung_up) {
      on_readable(id, c);
    } else if (!c.hung_up || c.pending || c.closing) {
      SYMMEM_LOG(kDebug, "store: %s closed its connection", c.who().c_str());
      c.dead = true;
    } else {
      ready_.push_back(id);
    }
    expire(Clock::now());
    while (!ready_.empty()) {
      uint64_t rid = ready_.back();
      ready_.pop_back();
      auto rit = conns_.find(rid);
      if (rit != conns_.end() && !rit->second->dead) process(rid, *rit->second);
    }
    reap();
  }
  return sent;
}

class BufferServerImpl final : public BufferStoreServer {
 public:
  explicit BufferServerImpl(std::unique_ptr<ServerImpl> s) : s_(std::move(s)) {}
  std::string serve(std::string input, Start start, size_t piece) override {
    return s_->serve_buffer(std::move(input), start, piece);
  }

 private:
  std::unique_ptr<ServerImpl> s_;
};

// ------------------------------------------------------------------------------------------
// Client

class ClientImpl final : public TcpStoreClient {
 public:
  ClientImpl(std::unique_ptr<Channel> ch, std::string url, int rank)
      : ch_(std::move(ch)), url_(std::move(url)), rank_(rank) {}

  Status set(const std::string& key, const std::string& value) override {
    std::string what = "set '" + key + "'";
    return call_ok(wire::Writer(Op::kSet).str(key).str(value).frame(), what);
  }

  Result<std::string> get(const std::string& key, double timeout_s) override {
    std::string what = "get '" + key + "'";
    SYMMEM_ASSIGN_OR_RETURN(
        std::string resp,
        call(wire::Writer(Op::kGet).str(key).u64(timeout_ms(timeout_s)).frame(), timeout_s + kClientGraceS, what));
    wire::Reader r(resp.data(), resp.size());
    Op op = static_cast<Op>(r.u8());
    if (op == Op::kValue) {
      std::string v = r.str();
      if (r.at_end()) return v;
    } else if (op == Op::kTimeout) {
      r.strs();
      if (r.at_end())
        return Status(Errc::kTimeout,
                      "key '" + key + "' was not set within " + seconds_str(timeout_s) + " s (store " + url_ + ")");
    } else if (op == Op::kError) {
      return remote_error(r, what);
    }
    return bad_response(what);
  }

  Status wait(const std::vector<std::string>& keys, double timeout_s) override {
    std::string what = "wait for " + std::to_string(keys.size()) + " keys";
    SYMMEM_ASSIGN_OR_RETURN(std::string resp,
                            call(wire::Writer(Op::kWait).strs(keys).u64(timeout_ms(timeout_s)).frame(),
                                 timeout_s + kClientGraceS, what));
    wire::Reader r(resp.data(), resp.size());
    Op op = static_cast<Op>(r.u8());
    if (op == Op::kOk && r.at_end()) return {};
    if (op == Op::kTimeout) {
      std::vector<std::string> missing = r.strs();
      if (r.at_end())
        return Status(Errc::kTimeout, std::to_string(missing.size()) + " of " + std::to_string(keys.size()) +
                                          " keys were not set within " + seconds_str(timeout_s) +
                                          " s: " + quoted_list(missing) + " (store " + url_ + ")");
    } else if (op == Op::kError) {
      return remote_error(r, what);
    }
    return bad_response(what);
  }

  Result<int64_t> add(const std::string& key, int64_t delta) override {
    std::string what = "add to '" + key + "'";
    Result<std::string> resp = call(wire::Writer(Op::kAdd).str(key).i64(delta).frame(), kRequestTimeoutS, what);
    if (!resp.ok()) return resp.status();  // read in place: see call_ok
    wire::Reader r(resp.value().data(), resp.value().size());
    Op op = static_cast<Op>(r.u8());
    if (op == Op::kInt) {
      int64_t v = r.i64();
      if (r.at_end()) return v;
    } else if (op == Op::kError) {
      return remote_error(r, what);
    }
    return bad_response(what);
  }

  Result<std::vector<bool>> check(const std::vector<std::string>& keys) override {
    std::string what = "check " + std::to_string(keys.size()) + " keys";
    SYMMEM_ASSIGN_OR_RETURN(std::string resp,
                            call(wire::Writer(Op::kCheck).strs(keys).frame(), kRequestTimeoutS, what));
    wire::Reader r(resp.data(), resp.size());
    Op op = static_cast<Op>(r.u8());
    if (op == Op::kBools) {
      uint32_t n = r.u32();
      std::vector<bool> out;
      if (n == keys.size()) {
        for (uint32_t i = 0; i < n; ++i) out.push_back(r.u8() != 0);
        if (r.at_end()) return out;
      }
    } else if (op == Op::kError) {
      return remote_error(r, what);
    }
    return bad_response(what);
  }

  Status erase(const std::string& key) override {
    std::string what = "erase '" + key + "'";
    return call_ok(wire::Writer(Op::kErase).str(key).frame(), what);
  }

  Result<std::string> create(const std::string& key, const std::string& value) override {
    std::string what = "create '" + key + "'";
    SYMMEM_ASSIGN_OR_RETURN(std::string resp,
                            call(wire::Writer(Op::kCreate).str(key).str(value).frame(), kRequestTimeoutS, what));
    return expect_value(resp, what);
  }

  Status watch(const std::string& key, const std::string& left_key, const std::string& on_drop) override {
    std::string what = "watch '" + key + "'";
    return call_ok(wire::Writer(Op::kWatch).str(key).str(left_key).str(on_drop).frame(), what);
  }

  Result<std::string> wait_watch() override {
    std::string what = "wait for the watched key";
    SYMMEM_ASSIGN_OR_RETURN(std::string resp, call({}, 1e12, what));
    return expect_value(resp, what);
  }

  void cancel_watch() override { ::shutdown(ch_->fd(), SHUT_RDWR); }

  void release_in_child() override {
    int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) return;
    ::dup3(null_fd, ch_->fd(), O_CLOEXEC);
    ::close(null_fd);
  }

 private:
  // One request, one response (its payload); an empty frame only receives (the second
  // answer of a watch). A failure in the middle leaves the stream out of step, so it
  // poisons the connection for later calls.
  Result<std::string> call(std::string frame, double timeout_s, const std::string& what) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!broken_.ok())
      return Status(broken_.code(), "store at " + url_ + ": cannot " + what +
                                        ": the connection failed earlier: " + broken_.message());
    if (frame.size() > wire::kHeaderSize + wire::kMaxFrame)
      return Status(Errc::kInvalidArgument, "store at " + url_ + ": " + what + ": request of " +
                                                std::to_string(frame.size()) + " bytes exceeds the frame limit");
    Deadline d = deadline_after(timeout_s);
    Status st = frame.empty() ? Status() : ch_->send_all(frame.data(), frame.size(), d);
    char hdr[wire::kHeaderSize];
    if (st.ok()) st = ch_->recv_all(hdr, sizeof(hdr), d);
    std::string payload;
    if (st.ok()) {
      uint32_t len = wire::load_u32(hdr);
      if (len == 0 || len > wire::kMaxFrame) {
        st = Status(Errc::kIo, "response frame of " + std::to_string(len) + " bytes");
      } else {
        // Grown as the bytes arrive, so that a length that lies costs no memory.
        constexpr size_t kStep = 64 << 10;
        while (st.ok() && payload.size() < len) {
          size_t old = payload.size(), n = std::min<size_t>(kStep, len - old);
          payload.resize(old + n);
          st = ch_->recv_all(payload.data() + old, n, d);
        }
      }
    }
    if (!st.ok()) {
      broken_ = st;
      SYMMEM_LOG(kDebug, "store client (rank %d): %s failed: %s", rank_, what.c_str(), st.message().c_str());
      return Status(st.code(), "store at " + url_ + ": " + what + ": " + st.message());
    }
    return payload;
  }

  Result<std::string> expect_value(const std::string& resp, const std::string& what) {
    wire::Reader r(resp.data(), resp.size());
    Op op = static_cast<Op>(r.u8());
    if (op == Op::kValue) {
      std::string v = r.str();
      if (r.at_end()) return v;
    } else if (op == Op::kError) {
      return remote_error(r, what);
    }
    return bad_response(what);
  }

  // A request answered with OK or an error. The answer is read in place: moving it out of
  // the Result first makes GCC 12 -O3 warn that the string's bytes may be uninitialized
  // (-Wmaybe-uninitialized, a false positive).
  Status call_ok(std::string frame, const std::string& what) {
    Result<std::string> resp = call(std::move(frame), kRequestTimeoutS, what);
    if (!resp.ok()) return resp.status();
    return expect_ok(resp.value(), what);
  }

  Status expect_ok(const std::string& resp, const std::string& what) {
    wire::Reader r(resp.data(), resp.size());
    Op op = static_cast<Op>(r.u8());
    if (op == Op::kOk && r.at_end()) return {};
    if (op == Op::kError) return remote_error(r, what);
    return bad_response(what);
  }

  Status remote_error(wire::Reader& r, const std::string& what) {
    uint8_t code = r.u8();
    std::string msg = r.str();
    if (!r.at_end()) return bad_response(what);
    Errc c = code <= static_cast<uint8_t>(Errc::kInternal) && code != 0 ? static_cast<Errc>(code) : Errc::kInternal;
    return Status(c, "store at " + url_ + ": " + msg);
  }

  Status bad_response(const std::string& what) {
    std::lock_guard<std::mutex> lk(mu_);
    broken_ = Status(Errc::kIo, "malformed response");
    return Status(Errc::kIo, "store at " + url_ + ": " + what + ": malformed response (protocol mismatch?)");
  }

  std::mutex mu_;
  std::unique_ptr<Channel> ch_;
  std::string url_;
  int rank_;
  Status broken_;
};

bool host_chars_ok(const std::string& h, bool v6) {
  for (char ch : h) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_' ||
              (v6 && (ch == ':' || ch == '%'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// StoreAddress

Result<StoreAddress> StoreAddress::parse(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return Status(Errc::kInvalidArgument,
                  "bad store address '" + url + "': " + why + " (expected tcp://host:port or tcp6://[addr]:port)");
  };
  std::string rest;
  bool v6_scheme = false;
  if (url.rfind("tcp://", 0) == 0) {
    rest = url.substr(6);
  } else if (url.rfind("tcp6://", 0) == 0) {
    rest = url.substr(7);
    v6_scheme = true;
  } else {
    return bad("unknown scheme");
  }
  StoreAddress a;
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) return bad("unclosed '['");
    a.host = rest.substr(1, close - 1);
    if (a.host.find(':') == std::string::npos || !host_chars_ok(a.host, true)) return bad("not an IPv6 address");
    if (close + 1 >= rest.size() || rest[close + 1] != ':') return bad("missing port");
    port = rest.substr(close + 2);
  } else {
    if (v6_scheme) return bad("tcp6 addresses are written [addr]:port");
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    a.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (a.host.empty()) return bad("missing host");
    if (a.host.find(':') != std::string::npos) return bad("IPv6 addresses are written tcp6://[addr]:port");
    if (!host_chars_ok(a.host, false)) return bad("bad character in host");
  }
  if (port.empty() || port.size() > 5) return bad("bad port");
  unsigned v = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9') return bad("bad port");
    v = v * 10 + static_cast<unsigned>(ch - '0');
  }
  if (v == 0 || v > 65535) return bad("port out of range");
  a.port = static_cast<uint16_t>(v);
  return a;
}

std::string StoreAddress::to_url() const {
  if (host.find(':') != std::string::npos) return "tcp6://[" + host + "]:" + std::to_string(port);
  return "tcp://" + host + ":" + std::to_string(port);
}

// ------------------------------------------------------------------------------------------
// Factories

Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::start(const std::string& bind_host, uint16_t port,
                                                              const StoreSecurity& security) {
  std::shared_ptr<TlsContext> tls;
  if (security.mode != StoreSecurity::Mode::kPlain) {
    SYMMEM_ASSIGN_OR_RETURN(tls, TlsContext::create(security, true));
  }
  uint16_t bound = 0;
  SYMMEM_ASSIGN_OR_RETURN(int lfd, tcp_listen(bind_host, port, &bound));
  int wfd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wfd < 0) {
    int err = errno;
    ::close(lfd);
    return errno_status(Errc::kIo, "store: eventfd", err);
  }
  SYMMEM_LOG(kDebug, "store: listening on %s port %u", bind_host.empty() ? "*" : bind_host.c_str(), unsigned(bound));
  return std::unique_ptr<TcpStoreServer>(new ServerImpl(lfd, wfd, bound, security, std::move(tls)));
}

Result<std::unique_ptr<BufferStoreServer>> BufferStoreServer::create(const StoreSecurity& security) {
  std::shared_ptr<TlsContext> tls;
  if (security.mode != StoreSecurity::Mode::kPlain) {
    SYMMEM_ASSIGN_OR_RETURN(tls, TlsContext::create(security, true));
  }
  return std::unique_ptr<BufferStoreServer>(
      new BufferServerImpl(std::make_unique<ServerImpl>(-1, -1, 0, security, std::move(tls), false)));
}

Result<std::unique_ptr<TcpStoreClient>> TcpStoreClient::connect(const StoreAddress& addr,
                                                                const StoreSecurity& security, int rank,
                                                                double timeout_s) {
  std::shared_ptr<TlsContext> tls;
  if (security.mode != StoreSecurity::Mode::kPlain) {
    SYMMEM_ASSIGN_OR_RETURN(tls, TlsContext::create(security, false));
  }
  const std::string url = addr.to_url();
  Deadline deadline = deadline_after(timeout_s);
  auto backoff = std::chrono::milliseconds(10);
  int attempts = 0;
  std::unique_ptr<Channel> ch;
  // The store may not be up yet (PEs can start before it): retry until the deadline.
  for (;;) {
    ++attempts;
    auto r = tcp_connect(addr.host, addr.port, deadline);
    if (r.ok()) {
      ch = std::move(r).value();
      break;
    }
    if (r.status().code() == Errc::kInvalidArgument)
      return Status(Errc::kInvalidArgument, "store at " + url + ": " + r.status().message());
    Deadline now = Clock::now();
    if (now >= deadline)
      return Status(Errc::kTimeout, "could not connect to the store at " + url + " within " + seconds_str(timeout_s) +
                                        " s (" + std::to_string(attempts) + " attempts): " + r.status().message());
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }

  return hello_on(std::move(ch), url, security, tls, rank, std::max(deadline, deadline_after(kMinHandshakeS)));
}

Result<std::unique_ptr<TcpStoreClient>> TcpStoreClient::on_channel(std::unique_ptr<Channel> ch,
                                                                   const StoreSecurity& security, int rank,
                                                                   double timeout_s, bool after_hello) {
  const std::string url = "buffer";
  if (after_hello) return std::unique_ptr<TcpStoreClient>(new ClientImpl(std::move(ch), url, rank));
  std::shared_ptr<TlsContext> tls;
  if (security.mode != StoreSecurity::Mode::kPlain) {
    SYMMEM_ASSIGN_OR_RETURN(tls, TlsContext::create(security, false));
  }
  return hello_on(std::move(ch), url, security, tls, rank, deadline_after(timeout_s));
}

Result<std::unique_ptr<TcpStoreClient>> TcpStoreClient::hello_on(std::unique_ptr<Channel> ch, const std::string& url,
                                                                 const StoreSecurity& security,
                                                                 const std::shared_ptr<TlsContext>& tls, int rank,
                                                                 Deadline hs) {
  std::string hello = wire::Writer(Op::kHello)
                          .u32(wire::kProtocolId)
                          .u16(wire::kVersion)
                          .u64(security.magic)
                          .u32(static_cast<uint32_t>(rank))
                          .u8(static_cast<uint8_t>(security.mode))
                          .frame();
  Status st = ch->send_all(hello.data(), hello.size(), hs);
  char hdr[wire::kHeaderSize];
  if (st.ok()) st = ch->recv_all(hdr, sizeof(hdr), hs);
  std::string payload;
  if (st.ok()) {
    uint32_t len = wire::load_u32(hdr);
    if (len == 0 || len > wire::kMaxHelloFrame)
      return Status(Errc::kIo, "store at " + url + " answered the handshake with garbage (not a symmem store?)");
    payload.resize(len);
    st = ch->recv_all(payload.data(), len, hs);
  }
  if (!st.ok()) {
    if (st.code() == Errc::kTimeout)
      return Status(Errc::kTimeout, "store at " + url + " did not answer the handshake (not a symmem store?)");
    return Status(st.code(), "store at " + url + ": handshake failed: " + st.message() +
                                 " (not a symmem store, or one of another protocol version?)");
  }
  wire::Reader r(payload.data(), payload.size());
  Op op = static_cast<Op>(r.u8());
  if (op == Op::kOk && r.at_end()) {
    if (tls) {
      SYMMEM_ASSIGN_OR_RETURN(std::unique_ptr<TlsChannel> t, tls->wrap(std::move(ch)));
      st = t->handshake(hs);
      // The store's encrypted kOk: it accepted our key or certificate too.
      if (st.ok()) st = t->recv_all(hdr, sizeof(hdr), hs);
      if (st.ok() && wire::load_u32(hdr) == 1) {
        char okb = 0;
        st = t->recv_all(&okb, 1, hs);
        if (st.ok() && static_cast<Op>(okb) != Op::kOk) st = Status(Errc::kIo, "unexpected TLS confirmation");
      } else if (st.ok()) {
        st = Status(Errc::kIo, "unexpected TLS confirmation");
      }
      if (!st.ok()) {
        std::string m = st.message();
        if (m.find("TLS handshake failed") == std::string::npos) m = "TLS handshake failed: " + m;
        return Status(st.code() == Errc::kIo ? Errc::kRefused : st.code(), "store at " + url + ": " + m);
      }
      ch = std::move(t);
    } else {
      SYMMEM_LOG(kDebug, "rank %d: the store connection to %s is not encrypted (TLS switched off)", rank,
                 url.c_str());
    }
    SYMMEM_LOG(kDebug, "rank %d connected to the store at %s (%s)", rank, url.c_str(),
               StoreSecurity::mode_name(security.mode));
    return std::unique_ptr<TcpStoreClient>(new ClientImpl(std::move(ch), url, rank));
  }
  if (op == Op::kRefused) {
    std::string reason = r.str();
    if (r.at_end()) return Status(Errc::kRefused, "store at " + url + " refused us: " + reason);
  }
  return Status(Errc::kIo, "store at " + url + " answered the handshake with garbage (not a symmem store?)");
}

}  // namespace symmem
