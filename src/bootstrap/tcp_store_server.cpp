// The TCP store's server: one thread, poll() over every connection (or one buffer, for
// the fuzzers: BufferStoreServer), the hello and the TLS upgrade of each, then requests
// framed as wire.hpp says; blocking gets and waits are kept as pending requests with
// deadlines and answered when their keys appear. All byte I/O goes through Channel.
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
#include "bootstrap/tcp_store_text.hpp"

namespace symmem {

using store_text::seconds_str;
using wire::Op;

namespace {

constexpr double kHelloTimeoutS = 10.0;     // a new connection must say hello within this
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadPerRound = 1 << 20;  // fairness between busy connections
constexpr size_t kOutHighWater = 4 << 20;  // stop reading requests while replies pile up
// Warnings about clients that have not authenticated: at most one per peer host per
// interval, for at most kMaxStrangerHosts hosts at once; the rest go to debug level.
constexpr double kStrangerWarnEveryS = 60.0;
constexpr size_t kMaxStrangerHosts = 256;

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

}  // namespace

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

}  // namespace symmem
