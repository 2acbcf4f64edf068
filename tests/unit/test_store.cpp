// The bootstrap store: TCP server and clients in one process (threads) and across forked
// processes, the wire protocol's defences, the control-path collectives, store addresses
// and the launcher environment contract.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/wire.hpp"

namespace symmem {
namespace {

constexpr uint64_t kMagic = 0x0123456789abcdefULL;

// The job's magic and secret, with TLS (PSK) as every store uses by default.
StoreSecurity security(uint64_t magic, StoreSecurity::Mode mode = StoreSecurity::Mode::kPsk) {
  StoreSecurity s;
  s.mode = mode;
  s.magic = magic;
  for (size_t i = 0; i < s.secret.size(); ++i) s.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  return s;
}
const StoreSecurity kSec = security(kMagic);
using Ms = std::chrono::milliseconds;

// The value of a Result, or a failed expectation (and T{}) when it holds an error.
template <class T>
T val(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : T{};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The PEs that are other processes are this binary started afresh (posix_spawn), never a
// fork of it: the test process runs the server's threads, and a fork taken while one of them
// held a lock (a TLS handshake in progress) left a child blocked on it for good.
// SYMMEM_TEST_STORE_CHILD="<role> <port> <rank> <fd>" makes main() run child_main instead of
// the tests; the child's verdict is its exit code.
constexpr const char* kChildVar = "SYMMEM_TEST_STORE_CHILD";

pid_t spawn_child(const char* role, uint16_t port, int rank, int fd = -1) {
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, kChildVar, std::strlen(kChildVar)) != 0) env_s.emplace_back(*e);
  env_s.push_back(std::string(kChildVar) + "=" + role + " " + std::to_string(port) + " " + std::to_string(rank) +
                  " " + std::to_string(fd));
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  char arg0[] = "test_store";
  char* argv[] = {arg0, nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data());
  EXPECT_EQ(rc, 0) << std::strerror(rc);
  return rc == 0 ? pid : -1;
}

// What a child PE does, by role: "ag" (an allgather and a barrier), "killed" (rank 2 waits
// to be killed, the others see it named), "watch" (a watch, then a byte on fd, then wait to
// be killed).
int child_main(const char* spec) {
  char role[16] = {};
  int port = 0, rank = 0, fd = -1;
  if (std::sscanf(spec, "%15s %d %d %d", role, &port, &rank, &fd) != 4) return 2;
  ::alarm(120);  // never outlive the test
  StoreAddress addr;
  addr.host = "127.0.0.1";
  addr.port = static_cast<uint16_t>(port);
  const std::string r = role;
  if (r == "ag") {
    constexpr int kN = 5;
    auto c = TcpStoreClient::connect(addr, kSec, rank, 30);
    if (!c.ok()) return 10;
    const std::string mine = "pid" + std::to_string(getpid());
    auto all = store_allgather(**c, "fork/ag", rank, kN, mine, 30);
    if (!all.ok() || all->size() != size_t(kN) || (*all)[rank] != mine) return 11;
    return store_barrier(**c, "fork/bar", rank, kN, 30).ok() ? 0 : 12;
  }
  if (r == "killed") {
    constexpr int kN = 4;
    auto c = TcpStoreClient::connect(addr, kSec, rank, 5);
    if (!c.ok()) return 10;
    if (rank == 2) {
      (void)(*c)->set("victim/ready", "");
      for (;;) ::pause();  // killed by the parent before it arrives
    }
    auto all = store_allgather(**c, "job/ag", rank, kN, "", 1);
    if (all.ok()) return 11;
    return all.status().message() == "PE 2 of 4 did not arrive at 'job/ag' within 1 s" ? 0 : 12;
  }
  if (r == "watch") {
    auto c = TcpStoreClient::connect(addr, kSec, rank, 5);
    if (!c.ok() || !(*c)->watch("live/failing", "live/left/4", "PE 4 lost").ok()) return 10;
    char one = 1;
    if (::write(fd, &one, 1) != 1) return 11;
    for (;;) ::pause();
  }
  return 3;
}

class StoreTest : public ::testing::Test {
 protected:
  void restart(const StoreSecurity& sec) {
    server_.reset();
    sec_ = sec;
    SetUp();
  }
  void SetUp() override {
    auto s = TcpStoreServer::start("127.0.0.1", 0, sec_);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
    ASSERT_NE(server_->port(), 0);
    addr_.host = "127.0.0.1";
    addr_.port = server_->port();
  }

  std::unique_ptr<TcpStoreClient> client(int rank = 0) {
    auto c = TcpStoreClient::connect(addr_, sec_, rank, 5);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // A raw TCP connection to the server, for speaking garbage.
  int raw_socket() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(addr_.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0) << std::strerror(errno);
    timeval tv{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }

  // True when the server closes the raw connection (EOF or reset) within the receive timeout.
  static bool closed_by_server(int fd) {
    char buf[256];
    for (;;) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

  static void send_bytes(int fd, const std::string& s) {
    ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
  }

  StoreSecurity sec_ = kSec;
  std::unique_ptr<TcpStoreServer> server_;
  StoreAddress addr_;
};

TEST_F(StoreTest, SetGetOverwriteBinaryAndLargeValues) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->set("k", "v1").ok());
  auto v = c->get("k", 1);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(*v, "v1");
  ASSERT_TRUE(c->set("k", "v2").ok());
  EXPECT_EQ(val(c->get("k", 1)), "v2");

  std::string bin("a\0b\xff\n", 5);
  ASSERT_TRUE(c->set("bin", bin).ok());
  EXPECT_EQ(val(c->get("bin", 1)), bin);

  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4097) big[i] = static_cast<char>(i);
  ASSERT_TRUE(c->set("big", big).ok());
  EXPECT_EQ(val(c->get("big", 1)), big);

  ASSERT_TRUE(c->set("", "empty key").ok());
  EXPECT_EQ(val(c->get("", 1)), "empty key");

  // Another client sees the same data.
  auto d = client(1);
  ASSERT_TRUE(d);
  EXPECT_EQ(val(d->get("k", 1)), "v2");
}

TEST_F(StoreTest, GetBlocksUntilAnotherClientSets) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  auto t0 = std::chrono::steady_clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(Ms(150));
    EXPECT_TRUE(b->set("late", "here").ok());
  });
  auto v = a->get("late", 5);
  double dt = seconds_since(t0);
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(*v, "here");
  EXPECT_GE(dt, 0.1);
  EXPECT_LT(dt, 3.0);
}

TEST_F(StoreTest, WaitReturnsWhenAllKeysArrive) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(b->set("w1", "").ok());
  std::thread setter([&] {
    std::this_thread::sleep_for(Ms(50));
    EXPECT_TRUE(b->set("w2", "").ok());
    std::this_thread::sleep_for(Ms(50));
    EXPECT_TRUE(b->set("w3", "").ok());
  });
  Status st = a->wait({"w1", "w2", "w3", "w2"}, 5);
  setter.join();
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(a->wait({}, 0).ok());
}

TEST_F(StoreTest, GetAndWaitTimeOutNamingMissingKeys) {
  auto c = client();
  ASSERT_TRUE(c);
  auto t0 = std::chrono::steady_clock::now();
  auto v = c->get("never", 0.2);
  double dt = seconds_since(t0);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Errc::kTimeout);
  EXPECT_NE(v.status().message().find("'never'"), std::string::npos) << v.status().message();
  EXPECT_GE(dt, 0.15);
  EXPECT_LT(dt, 2.0);

  ASSERT_TRUE(c->set("there", "1").ok());
  Status st = c->wait({"there", "gone1", "gone2"}, 0.2);
  EXPECT_EQ(st.code(), Errc::kTimeout);
  EXPECT_NE(st.message().find("'gone1', 'gone2'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("2 of 3"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("'there'"), std::string::npos) << st.message();

  // A timed-out request leaves the connection usable.
  EXPECT_EQ(val(c->get("there", 1)), "1");
  // Zero timeout: a non-blocking probe.
  EXPECT_EQ(c->get("never", 0).status().code(), Errc::kTimeout);
}

TEST_F(StoreTest, ConcurrentAddsFromManyClientsAreExact) {
  constexpr int kThreads = 8, kAdds = 1000;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      auto c = client(t);
      ASSERT_TRUE(c);
      for (int i = 0; i < kAdds; ++i) {
        auto r = c->add("counter", 1);
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        seen[t].push_back(*r);
      }
    });
  }
  for (auto& t : ts) t.join();
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_EQ(val(c->add("counter", 0)), kThreads * kAdds);
  EXPECT_EQ(val(c->get("counter", 0)), std::to_string(kThreads * kAdds));
  // Every add saw a distinct value: they were atomic.
  std::set<int64_t> all;
  for (auto& v : seen) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t(kThreads * kAdds));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAdds);

  EXPECT_EQ(val(c->add("neg", -5)), -5);
  EXPECT_EQ(val(c->add("neg", 7)), 2);
}

TEST_F(StoreTest, OneClientSharedByThreads) {
  auto c = client();
  ASSERT_TRUE(c);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 500; ++i) ASSERT_TRUE(c->add("shared", 1).ok());
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(val(c->add("shared", 0)), 2000);
}

TEST_F(StoreTest, CheckEraseAndAddOnText) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->set("a", "1").ok());
  auto ck = c->check({"a", "b"});
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(*ck, (std::vector<bool>{true, false}));
  EXPECT_TRUE(c->check({})->empty());
  ASSERT_TRUE(c->erase("a").ok());
  EXPECT_EQ(val(c->check({"a"})), std::vector<bool>{false});
  EXPECT_EQ(c->get("a", 0).status().code(), Errc::kTimeout);
  EXPECT_TRUE(c->erase("not-there").ok());

  ASSERT_TRUE(c->set("text", "hello").ok());
  auto r = c->add("text", 1);
  EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'text'"), std::string::npos);
  // An error answer is not a broken connection.
  EXPECT_EQ(val(c->get("text", 0)), "hello");
}

TEST_F(StoreTest, WaitSeesKeysErasedBeforeItCompletes) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  std::atomic<bool> done{false};
  Status result;
  std::thread waiter([&] {
    result = a->wait({"x", "y"}, 5);
    done = true;
  });
  std::this_thread::sleep_for(Ms(50));
  ASSERT_TRUE(b->set("x", "").ok());
  ASSERT_TRUE(b->erase("x").ok());
  ASSERT_TRUE(b->set("y", "").ok());
  std::this_thread::sleep_for(Ms(100));
  EXPECT_FALSE(done.load()) << "wait returned although 'x' was erased";
  ASSERT_TRUE(b->set("x", "").ok());
  waiter.join();
  EXPECT_TRUE(result.ok()) << result.to_string();
}

TEST_F(StoreTest, PrefixStoresAreIsolated) {
  auto c = client();
  ASSERT_TRUE(c);
  PrefixStore t1("team1", *c), t2("team2", *c);
  ASSERT_TRUE(t1.set("x", "one").ok());
  ASSERT_TRUE(t2.set("x", "two").ok());
  EXPECT_EQ(val(t1.get("x", 1)), "one");
  EXPECT_EQ(val(t2.get("x", 1)), "two");
  EXPECT_EQ(val(c->get("team1/x", 1)), "one");
  ASSERT_TRUE(t1.set("y", "").ok());
  EXPECT_EQ(val(t2.check({"y", "x"})), (std::vector<bool>{false, true}));
  EXPECT_EQ(t2.wait({"y"}, 0.05).code(), Errc::kTimeout);
  EXPECT_TRUE(t1.wait({"x", "y"}, 1).ok());
  EXPECT_EQ(val(t1.add("n", 3)), 3);
  EXPECT_EQ(val(t2.add("n", 1)), 1);
  ASSERT_TRUE(t1.erase("x").ok());
  EXPECT_EQ(val(t2.get("x", 0)), "two");
  // Nested prefixes compose.
  PrefixStore inner("sub", t1);
  ASSERT_TRUE(inner.set("z", "deep").ok());
  EXPECT_EQ(val(c->get("team1/sub/z", 0)), "deep");
}

TEST_F(StoreTest, WrongMagicIsRefusedAndServerKeepsServing) {
  auto good = client(0);
  ASSERT_TRUE(good);
  ::testing::internal::CaptureStderr();
  auto bad = TcpStoreClient::connect(addr_, security(kMagic ^ 1), 7, 5);
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Errc::kRefused);
  EXPECT_NE(bad.status().message().find("store at " + addr_.to_url() + " refused us: wrong job magic"),
            std::string::npos)
      << bad.status().message();
  EXPECT_NE(log.find("claiming rank 7"), std::string::npos) << log;
  EXPECT_NE(log.find("127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong job magic"), std::string::npos) << log;

  ASSERT_TRUE(good->set("after", "ok").ok());
  auto again = client(1);
  ASSERT_TRUE(again);
  EXPECT_EQ(val(again->get("after", 1)), "ok");
}

TEST_F(StoreTest, GarbageAndBadFramesDoNotHurtTheServer) {
  // In clear, so that frames after the hello reach the protocol parser.
  restart(security(kMagic, StoreSecurity::Mode::kPlain));
  auto c = client(0);
  ASSERT_TRUE(c);
  ::testing::internal::CaptureStderr();

  // An HTTP client: its first four bytes read as a gigantic frame length.
  int http = raw_socket();
  send_bytes(http, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(closed_by_server(http));
  ::close(http);

  // A plausible length followed by noise instead of a hello.
  int noise = raw_socket();
  send_bytes(noise, std::string("\0\0\0\x10", 4) + std::string(16, '\x5a'));
  EXPECT_TRUE(closed_by_server(noise));
  ::close(noise);

  // A zero-length frame.
  int zero = raw_socket();
  send_bytes(zero, std::string(4, '\0'));
  EXPECT_TRUE(closed_by_server(zero));
  ::close(zero);

  // A valid hello, then an unknown op, then a frame over the size limit.
  std::string hello = wire::Writer(wire::Op::kHello)
                          .u32(wire::kProtocolId)
                          .u16(wire::kVersion)
                          .u64(kMagic)
                          .u32(9)
                          .u8(static_cast<uint8_t>(StoreSecurity::Mode::kPlain))
                          .frame();
  int rogue = raw_socket();
  send_bytes(rogue, hello);
  char ok_frame[5];
  ASSERT_EQ(::recv(rogue, ok_frame, 5, MSG_WAITALL), 5);
  EXPECT_EQ(static_cast<uint8_t>(ok_frame[4]), static_cast<uint8_t>(wire::Op::kOk));
  send_bytes(rogue, wire::Writer(static_cast<wire::Op>(0x42)).frame());
  EXPECT_TRUE(closed_by_server(rogue));
  ::close(rogue);

  int huge = raw_socket();
  send_bytes(huge, hello);
  ASSERT_EQ(::recv(huge, ok_frame, 5, MSG_WAITALL), 5);
  send_bytes(huge, "\xff\xff\xff\xff");
  EXPECT_TRUE(closed_by_server(huge));
  ::close(huge);

  // A truncated request (a set whose key length runs past the frame).
  int trunc = raw_socket();
  send_bytes(trunc, hello);
  ASSERT_EQ(::recv(trunc, ok_frame, 5, MSG_WAITALL), 5);
  send_bytes(trunc, wire::Writer(wire::Op::kSet).u32(1000).frame());
  EXPECT_TRUE(closed_by_server(trunc));
  ::close(trunc);

  // A silent connection and a half-sent frame stay open but block nobody.
  int silent = raw_socket();
  int half = raw_socket();
  send_bytes(half, std::string("\0\0", 2));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("not a symmem client"), std::string::npos) << log;

  ASSERT_TRUE(c->set("still", "alive").ok());
  auto d = client(1);
  ASSERT_TRUE(d);
  EXPECT_EQ(val(d->get("still", 1)), "alive");
  ::close(silent);
  ::close(half);
}

TEST_F(StoreTest, ManyClientsAtOnce) {
  constexpr int kN = 48;
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int r = 0; r < kN; ++r)
    ts.emplace_back([&, r] {
      auto c = client(r);
      if (!c) return;
      Status st = store_barrier(*c, "many", r, kN, 10);
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (st.ok()) ++ok;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), kN);
}

TEST_F(StoreTest, ClientFailsCleanlyWhenServerStops) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->set("a", "1").ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(Ms(100));
    server_->stop();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto v = c->get("never", 30);  // blocked in the server when it goes away
  stopper.join();
  EXPECT_LT(seconds_since(t0), 5.0);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Errc::kIo) << v.status().to_string();
  EXPECT_FALSE(c->set("b", "2").ok());
  server_->stop();  // idempotent
}

TEST_F(StoreTest, ConnectRetriesUntilTheServerIsUp) {
  uint16_t port = server_->port();
  server_.reset();  // port is now free
  std::unique_ptr<TcpStoreServer> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(Ms(300));
    auto s = TcpStoreServer::start("127.0.0.1", port, kSec);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    late = std::move(s).value();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto c = TcpStoreClient::connect(addr_, kSec, 0, 5);
  starter.join();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_GE(seconds_since(t0), 0.2);
  EXPECT_TRUE((*c)->set("x", "y").ok());
}

TEST(StoreConnect, TimesOutWhenNobodyListens) {
  // A port that was free a moment ago.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  socklen_t sl = sizeof(sa);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &sl), 0);
  ::close(fd);
  StoreAddress a{"127.0.0.1", ntohs(sa.sin_port)};
  auto t0 = std::chrono::steady_clock::now();
  auto c = TcpStoreClient::connect(a, kSec, 0, 0.3);
  double dt = seconds_since(t0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kTimeout);
  EXPECT_NE(c.status().message().find(a.to_url()), std::string::npos) << c.status().message();
  EXPECT_LT(dt, 2.0);
}

TEST(StoreConnect, Ipv6Loopback) {
  auto s = TcpStoreServer::start("::1", 0, kSec);
  if (!s.ok()) GTEST_SKIP() << "no IPv6 loopback: " << s.status().to_string();
  auto a = StoreAddress::parse("tcp6://[::1]:" + std::to_string((*s)->port()));
  ASSERT_TRUE(a.ok());
  auto c = TcpStoreClient::connect(*a, kSec, 0, 5);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE((*c)->set("v6", "yes").ok());
}

TEST_F(StoreTest, AllgatherAndBarrierAcrossThreads) {
  constexpr int kN = 6;
  std::vector<std::thread> ts;
  for (int r = 0; r < kN; ++r)
    ts.emplace_back([&, r] {
      auto c = client(r);
      ASSERT_TRUE(c);
      for (int round = 0; round < 10; ++round) {
        std::string tag = "ag/" + std::to_string(round);
        auto all = store_allgather(*c, tag, r, kN, "pe" + std::to_string(r) + "-" + std::to_string(round), 5);
        ASSERT_TRUE(all.ok()) << all.status().to_string();
        ASSERT_EQ(all->size(), size_t(kN));
        for (int i = 0; i < kN; ++i) EXPECT_EQ((*all)[i], "pe" + std::to_string(i) + "-" + std::to_string(round));
        Status st = store_barrier(*c, "bar/" + std::to_string(round), r, kN, 5);
        ASSERT_TRUE(st.ok()) << st.to_string();
      }
    });
  for (auto& t : ts) t.join();
}

TEST_F(StoreTest, CollectivesOverPrefixStoreAndOnePe) {
  auto c = client();
  ASSERT_TRUE(c);
  PrefixStore team("team7", *c);
  auto all = store_allgather(team, "solo", 0, 1, "me", 1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, std::vector<std::string>{"me"});
  EXPECT_TRUE(store_barrier(team, "solo-bar", 0, 1, 1).ok());
  EXPECT_EQ(store_barrier(team, "x", 3, 2, 1).code(), Errc::kInvalidArgument);
  EXPECT_EQ(store_allgather(team, "x", 0, 0, "", 1).status().code(), Errc::kInvalidArgument);
  // Reusing a barrier tag is caught, not a silent pass.
  EXPECT_EQ(store_barrier(team, "solo-bar", 0, 1, 1).code(), Errc::kMismatch);
}

TEST_F(StoreTest, TimeoutsNameExactlyTheAbsentPes) {
  constexpr int kN = 8;
  const std::set<int> absent = {3, 5};
  std::vector<std::thread> ts;
  for (int r = 0; r < kN; ++r) {
    if (absent.count(r)) continue;
    ts.emplace_back([&, r] {
      auto c = client(r);
      ASSERT_TRUE(c);
      auto all = store_allgather(*c, "init/heap", r, kN, "x", 0.3);
      ASSERT_FALSE(all.ok());
      EXPECT_EQ(all.status().code(), Errc::kTimeout);
      EXPECT_EQ(all.status().message(), "PEs 3, 5 of 8 did not arrive at 'init/heap' within 0.3 s");
      Status st = store_barrier(*c, "init/bar", r, kN, 0.3);
      EXPECT_EQ(st.code(), Errc::kTimeout);
      EXPECT_EQ(st.message(), "PEs 3, 5 of 8 did not arrive at 'init/bar' within 0.3 s");
    });
  }
  for (auto& t : ts) t.join();

  // One absent PE, and runs shown as ranges.
  auto c = client();
  ASSERT_TRUE(c);
  auto one = store_allgather(*c, "solo-missing", 0, 2, "", 0.05);
  EXPECT_EQ(one.status().message(), "PE 1 of 2 did not arrive at 'solo-missing' within 0.05 s");
  auto many = store_allgather(*c, "mostly-missing", 0, 6, "", 0.05);
  EXPECT_EQ(many.status().message(), "PEs 1-5 of 6 did not arrive at 'mostly-missing' within 0.05 s");
}

// Real processes: the parent hosts the store and is rank 0; each child is a PE that
// connects on its own. The children's verdict is their exit code.
TEST_F(StoreTest, ForkedProcessesAllgatherAndBarrier) {
  constexpr int kN = 5;
  // A sanitized child starts slowly on a loaded machine, so the waits allow 30 s.
  constexpr double kWait = 30;
  std::vector<pid_t> kids;
  struct Reaper {  // an early return (a failed ASSERT) leaves no child behind
    std::vector<pid_t>* kids;
    ~Reaper() {
      for (pid_t pid : *kids)
        if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
    }
  } reaper{&kids};
  for (int r = 1; r < kN; ++r) {
    pid_t pid = spawn_child("ag", addr_.port, r);
    ASSERT_GT(pid, 0);
    kids.push_back(pid);
  }
  auto c = client(0);
  ASSERT_TRUE(c);
  auto all = store_allgather(*c, "fork/ag", 0, kN, "pid" + std::to_string(getpid()), kWait);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  for (int r = 1; r < kN; ++r) EXPECT_EQ((*all)[r], "pid" + std::to_string(kids[r - 1]));
  EXPECT_TRUE(store_barrier(*c, "fork/bar", 0, kN, kWait).ok());
  for (pid_t pid : kids) {
    int ws = 0;
    ASSERT_EQ(::waitpid(pid, &ws, 0), pid);
    EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0) << "child exit status " << ws;
  }
  kids.clear();
}

TEST_F(StoreTest, KilledPeIsNamedByTheOthers) {
  constexpr int kN = 4;
  constexpr int kVictim = 2;
  std::vector<pid_t> kids;
  for (int r = 1; r < kN; ++r) {
    pid_t pid = spawn_child("killed", addr_.port, r);  // rank kVictim waits to be killed
    ASSERT_GT(pid, 0);
    kids.push_back(pid);
  }
  auto c = client(0);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->get("victim/ready", 5).ok());
  ::kill(kids[kVictim - 1], SIGKILL);
  auto all = store_allgather(*c, "job/ag", 0, kN, "", 1);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().message(), "PE 2 of 4 did not arrive at 'job/ag' within 1 s");
  for (size_t i = 0; i < kids.size(); ++i) {
    int ws = 0;
    ASSERT_EQ(::waitpid(kids[i], &ws, 0), kids[i]);
    if (int(i) + 1 == kVictim) {
      EXPECT_TRUE(WIFSIGNALED(ws));
    } else {
      EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0) << "rank " << i + 1 << " exit status " << ws;
    }
  }
  // The server dropped the dead PE's connection and still serves.
  EXPECT_TRUE(c->set("after", "").ok());
}

// kCreate: the first writer wins, and every caller learns the value that stays.
TEST_F(StoreTest, CreateKeepsTheFirstValue) {
  auto a = client(0), b = client(1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(val(a->create("job/failing", "first")), "first");
  EXPECT_EQ(val(b->create("job/failing", "second")), "first");
  EXPECT_EQ(val(b->get("job/failing", 1)), "first");
  // A get blocked on the key is answered by the create.
  std::thread t([&] { EXPECT_EQ(val(a->get("other", 5)), "x"); });
  std::this_thread::sleep_for(Ms(50));
  EXPECT_EQ(val(b->create("other", "x")), "x");
  t.join();
}

// kWatch, the liveness switch: a watch whose process dies (SIGKILL, its connection closes)
// before its left key exists creates the watched key, and every other watch receives it;
// a watch that leaves first (left key, then close) creates nothing.
TEST_F(StoreTest, WatchOfADeadProcessRaisesTheKeyForEveryWatcher) {
  auto w1 = client(1), w2 = client(2), leaver = client(3), main = client(0);
  ASSERT_TRUE(w1 && w2 && leaver && main);
  ASSERT_TRUE(w1->watch("live/failing", "live/left/1", "PE 1 lost").ok());
  ASSERT_TRUE(w2->watch("live/failing", "live/left/2", "PE 2 lost").ok());
  ASSERT_TRUE(leaver->watch("live/failing", "live/left/3", "PE 3 lost").ok());
  // PE 3 leaves properly: nothing is raised.
  ASSERT_TRUE(main->set("live/left/3", "1").ok());
  leaver->cancel_watch();
  EXPECT_FALSE(leaver->wait_watch().ok());
  leaver.reset();
  std::this_thread::sleep_for(Ms(100));
  EXPECT_FALSE(val(main->check({"live/failing"}))[0]);

  // PE 4, another process, watches and is killed.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = spawn_child("watch", addr_.port, 4, ready[1]);
  ASSERT_GT(pid, 0);
  char one = 0;
  ASSERT_EQ(::read(ready[0], &one, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ::kill(pid, SIGKILL);
  int ws = 0;
  ASSERT_EQ(::waitpid(pid, &ws, 0), pid);
  EXPECT_EQ(val(w1->wait_watch()), "PE 4 lost");
  EXPECT_EQ(val(w2->wait_watch()), "PE 4 lost");
  EXPECT_EQ(val(main->get("live/failing", 1)), "PE 4 lost");
  // A watch registered after the fact is answered at once.
  auto late = client(5);
  ASSERT_TRUE(late->watch("live/failing", "live/left/5", "PE 5 lost").ok());
  EXPECT_EQ(val(late->wait_watch()), "PE 4 lost");
}

// The store's host ends: every watch returns an error (the PEs then end themselves).
TEST_F(StoreTest, WatchEndsWhenTheStoreStops) {
  auto w = client(1);
  ASSERT_TRUE(w && w->watch("live/failing", "live/left/1", "PE 1 lost").ok());
  std::thread t([&] { EXPECT_FALSE(w->wait_watch().ok()); });
  std::this_thread::sleep_for(Ms(50));
  server_->stop();
  t.join();
}

// ------------------------------------------------------------------------------------------
// Store addresses

TEST(StoreAddress, ParsesTcpAndTcp6) {
  auto a = StoreAddress::parse("tcp://127.0.0.1:29500");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 29500);
  EXPECT_EQ(a->to_url(), "tcp://127.0.0.1:29500");

  auto h = StoreAddress::parse("tcp://node-07.cluster_a.local:1");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->host, "node-07.cluster_a.local");
  EXPECT_EQ(h->port, 1);

  auto v6 = StoreAddress::parse("tcp6://[::1]:65535");
  ASSERT_TRUE(v6.ok()) << v6.status().to_string();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 65535);
  EXPECT_EQ(v6->to_url(), "tcp6://[::1]:65535");

  auto full = StoreAddress::parse("tcp6://[fe80::1%eth0]:80");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->host, "fe80::1%eth0");
  EXPECT_EQ(StoreAddress::parse(full->to_url())->host, full->host);
}

TEST(StoreAddress, RejectsJunk) {
  for (const char* bad : {"", "tcp://", "tcp://host", "tcp://host:", "tcp://host:0", "tcp://host:65536",
                          "tcp://host:123456", "tcp://host:12x", "tcp://host:-1", "tcp://:5", "udp://h:1",
                          "http://h:80", "h:80", "tcp6://::1:5", "tcp://::1:5", "tcp6://[::1]5", "tcp6://[::1",
                          "tcp6://[]:5", "tcp6://host:5", "tcp://h h:5", "tcp://host:80/path", "TCP://h:1",
                          "tcp6://[1.2.3.4]:5"}) {
    auto a = StoreAddress::parse(bad);
    EXPECT_FALSE(a.ok()) << "accepted '" << bad << "'";
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), Errc::kInvalidArgument);
      EXPECT_NE(a.status().message().find(std::string("'") + bad + "'"), std::string::npos)
          << a.status().message();
    }
  }
}

// ------------------------------------------------------------------------------------------
// Launcher environment

class LaunchEnvTest : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {kEnvRank, kEnvNpes, kEnvStore, kEnvMagic, kEnvJobId, kEnvSecret, kEnvTls};
  void SetUp() override {
    for (const char* v : kVars) {
      const char* e = std::getenv(v);
      saved_.emplace_back(v, e ? std::optional<std::string>(e) : std::nullopt);
      ::unsetenv(v);
    }
  }
  void TearDown() override {
    for (auto& [k, v] : saved_) {
      if (v) ::setenv(k.c_str(), v->c_str(), 1);
      else ::unsetenv(k.c_str());
    }
  }
  static void set_launcher(const char* rank, const char* npes) {
    ::setenv(kEnvRank, rank, 1);
    ::setenv(kEnvNpes, npes, 1);
    ::setenv(kEnvStore, "tcp://10.1.2.3:29500", 1);
    ::setenv(kEnvMagic, "00ff00FF12345678", 1);
    ::setenv(kEnvJobId, "abc123", 1);
    ::setenv(kEnvSecret, std::string(64, 'a').c_str(), 1);
  }
  // The error names the variable and its value.
  static void expect_error_naming(const std::string& needle) {
    auto e = LaunchEnv::from_env();
    ASSERT_FALSE(e.ok()) << "accepted; expected an error naming " << needle;
    EXPECT_EQ(e.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(e.status().message().find(needle), std::string::npos) << e.status().message();
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(LaunchEnvTest, NoLauncherIsOnePeJob) {
  auto e = LaunchEnv::from_env();
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->rank, 0);
  EXPECT_EQ(e->npes, 1);
  EXPECT_FALSE(e->store.has_value());
  EXPECT_FALSE(e->from_launcher);
  EXPECT_EQ(e->job_id.size(), 12u);
  EXPECT_EQ(e->job_id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"), std::string::npos);
  EXPECT_NE(LaunchEnv::from_env()->job_id, e->job_id);  // random per call

  ::setenv(kEnvNpes, "4", 1);
  expect_error_naming("SYMMEM_NPES='4'");
}

TEST_F(LaunchEnvTest, ConsistentLauncherVariables) {
  set_launcher("3", "4");
  auto e = LaunchEnv::from_env();
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->npes, 4);
  ASSERT_TRUE(e->store.has_value());
  EXPECT_EQ(e->store->host, "10.1.2.3");
  EXPECT_EQ(e->store->port, 29500);
  EXPECT_EQ(e->magic, 0x00ff00ff12345678ULL);
  EXPECT_EQ(e->job_id, "abc123");
  EXPECT_TRUE(e->from_launcher);

  ::setenv(kEnvStore, "tcp6://[::1]:7", 1);
  e = LaunchEnv::from_env();
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->store->host, "::1");
}

TEST_F(LaunchEnvTest, InconsistentVariablesNameTheCulprit) {
  set_launcher("4", "4");
  expect_error_naming("SYMMEM_RANK='4'");
  set_launcher("-1", "4");
  expect_error_naming("SYMMEM_RANK='-1'");
  set_launcher("1x", "4");
  expect_error_naming("SYMMEM_RANK='1x'");
  set_launcher("0", "0");
  expect_error_naming("SYMMEM_NPES='0'");
  set_launcher("0", "many");
  expect_error_naming("SYMMEM_NPES='many'");

  set_launcher("0", "2");
  ::unsetenv(kEnvNpes);
  expect_error_naming("SYMMEM_NPES");

  set_launcher("0", "2");
  ::unsetenv(kEnvStore);
  expect_error_naming("SYMMEM_STORE");
  ::setenv(kEnvStore, "localhost:99", 1);
  expect_error_naming("SYMMEM_STORE");
  expect_error_naming("'localhost:99'");

  set_launcher("0", "2");
  ::unsetenv(kEnvMagic);
  expect_error_naming("SYMMEM_STORE_MAGIC");
  ::setenv(kEnvMagic, "12345", 1);
  expect_error_naming("SYMMEM_STORE_MAGIC='12345'");
  ::setenv(kEnvMagic, "000000000000000g", 1);
  expect_error_naming("SYMMEM_STORE_MAGIC='000000000000000g'");

  set_launcher("0", "2");
  ::setenv(kEnvJobId, "Job-1", 1);
  expect_error_naming("SYMMEM_JOB_ID='Job-1'");
  ::setenv(kEnvJobId, "a/../b", 1);
  expect_error_naming("SYMMEM_JOB_ID='a/../b'");
  ::unsetenv(kEnvJobId);
  expect_error_naming("SYMMEM_JOB_ID");
}

TEST(RandomIds, LookRandom) {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    std::string id = random_job_id();
    EXPECT_EQ(id.size(), 12u);
    EXPECT_EQ(id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
  std::set<uint64_t> nums;
  for (int i = 0; i < 100; ++i) nums.insert(random_u64());
  EXPECT_EQ(nums.size(), 100u);
}

// ---------------------------------------------------------------- the protocol on a buffer

std::string plain_hello(uint64_t magic) {
  return wire::Writer(wire::Op::kHello)
      .u32(wire::kProtocolId)
      .u16(wire::kVersion)
      .u64(magic)
      .u32(3)
      .u8(static_cast<uint8_t>(StoreSecurity::Mode::kPlain))
      .frame();
}

// The answers to kSessionRequests when the counter "n" reaches `n`.
std::string session_answers(int64_t n) {
  return wire::Writer(wire::Op::kOk).frame() + wire::Writer(wire::Op::kValue).str("v").frame() +
         wire::Writer(wire::Op::kInt).i64(n).frame() + wire::Writer(wire::Op::kBools).u32(2).u8(1).u8(0).frame();
}
const std::string kSessionRequests = wire::Writer(wire::Op::kSet).str("k").str("v").frame() +
                                     wire::Writer(wire::Op::kGet).str("k").u64(0).frame() +
                                     wire::Writer(wire::Op::kAdd).str("n").i64(41).frame() +
                                     wire::Writer(wire::Op::kCheck).strs({"k", "zz"}).frame();

// What the fuzzers run (BufferStoreServer): the server's own code on a memory channel
// answers a session exactly as a socket's peer sees it, whether the bytes arrive at once
// or one by one, and keeps its keys from one connection to the next.
TEST(BufferStore, ServesASessionAsTheSocketServerDoes) {
  const StoreSecurity plain = security(kMagic, StoreSecurity::Mode::kPlain);
  const std::string session = plain_hello(kMagic) + kSessionRequests;
  const std::string hello_ok = wire::Writer(wire::Op::kOk).frame();

  // The same bytes to a real store over a socket.
  auto real = val(TcpStoreServer::start("127.0.0.1", 0, plain));
  ASSERT_TRUE(real);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(real->port());
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::send(fd, session.data(), session.size(), MSG_NOSIGNAL), ssize_t(session.size()));
  ::shutdown(fd, SHUT_WR);
  std::string from_socket;
  char buf[256];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) from_socket.append(buf, size_t(n));
  ::close(fd);
  EXPECT_EQ(from_socket, hello_ok + session_answers(41));

  auto mem = val(BufferStoreServer::create(plain));
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->serve(session, BufferStoreServer::Start::kHello, 0), hello_ok + session_answers(41));
  EXPECT_EQ(mem->serve(session, BufferStoreServer::Start::kHello, 1), hello_ok + session_answers(82));
  EXPECT_EQ(mem->serve(kSessionRequests, BufferStoreServer::Start::kAfterHello, 5), session_answers(123));
  // Refusals and violations end the connection as on a socket: a wrong magic is answered,
  // garbage is not.
  std::string refused = mem->serve(plain_hello(kMagic ^ 1) + kSessionRequests, BufferStoreServer::Start::kHello, 0);
  ASSERT_GT(refused.size(), 5u);
  EXPECT_EQ(uint8_t(refused[4]), uint8_t(wire::Op::kRefused));
  EXPECT_EQ(mem->serve("GET / HTTP/1.0\r\n\r\n", BufferStoreServer::Start::kHello, 0), "");
}

// The client on a memory channel (TcpStoreClient::on_channel) reads a store's answers as
// over a socket, from the hello's answer on or after it.
TEST(BufferStore, ClientReadsAnswersFromAChannel) {
  const StoreSecurity plain = security(kMagic, StoreSecurity::Mode::kPlain);
  std::string sent;
  std::string answers = wire::Writer(wire::Op::kOk).frame() + wire::Writer(wire::Op::kOk).frame() +
                        wire::Writer(wire::Op::kValue).str("v").frame() + wire::Writer(wire::Op::kInt).i64(7).frame();
  auto c = val(TcpStoreClient::on_channel(make_memory_channel(answers, &sent, "store:1"), plain, 3, 5, false));
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->set("k", "v").ok());
  EXPECT_EQ(val(c->get("k", 1)), "v");
  EXPECT_EQ(val(c->add("n", 7)), 7);
  Status gone = c->erase("k");  // no answer left: the stream has ended
  EXPECT_EQ(gone.code(), Errc::kIo) << gone.to_string();
  EXPECT_EQ(sent.substr(0, plain_hello(kMagic).size()), plain_hello(kMagic));
  std::string none;
  auto refused = TcpStoreClient::on_channel(
      make_memory_channel(wire::Writer(wire::Op::kRefused).str("wrong job magic").frame(), &none, "store:1"), plain, 3,
      5, false);
  EXPECT_EQ(refused.status().code(), Errc::kRefused);
  EXPECT_NE(refused.status().message().find("wrong job magic"), std::string::npos);
}

}  // namespace
}  // namespace symmem

// The tests, or one child PE of them (spawn_child).
int main(int argc, char** argv) {
  if (const char* spec = std::getenv(symmem::kChildVar)) return symmem::child_main(spec);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
