// The TCP store's client: connect (retrying until the deadline), the hello and the TLS
// handshake, then one request in flight per connection, serialized by a mutex; the
// liveness watch runs on a connection of its own. The wire format is in wire.hpp; all
// byte I/O goes through Channel.
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

constexpr double kRequestTimeoutS = 300.0;  // answer time for requests that never block
constexpr double kClientGraceS = 10.0;      // beyond a server-side timeout, in case it died
constexpr double kMinHandshakeS = 2.0;

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
    Result<std::string> resp =
        call(wire::Writer(Op::kWait).strs(keys).u64(timeout_ms(timeout_s)).frame(), timeout_s + kClientGraceS, what);
    if (!resp.ok()) return resp.status();  // read in place: see call_ok
    wire::Reader r(resp.value().data(), resp.value().size());
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
    Result<std::string> resp = call(wire::Writer(Op::kCheck).strs(keys).frame(), kRequestTimeoutS, what);
    if (!resp.ok()) return resp.status();  // read in place: see call_ok
    wire::Reader r(resp.value().data(), resp.value().size());
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
  int watch_fd() const override { return ch_->fd(); }
  bool watch_buffered() const override { return ch_->has_buffered(); }

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

}  // namespace

// ------------------------------------------------------------------------------------------
// Factories

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
