// What a stranger on the network can make the store write to its log: many garbage
// connections (not our protocol, a wrong magic, a hello and then no TLS) from one host
// produce one warning, not one each; a client that authenticated and then misbehaves is
// still warned about every time; and the store keeps serving its real clients. Also: what
// a client sent before it shut down its side of the connection is still answered.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <string>

#include "bootstrap/channel.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/wire.hpp"
#include "common/log.hpp"

namespace symmem {
namespace {

constexpr uint64_t kMagic = 0x57a4e5e4c0ffee11ULL;

StoreSecurity security(StoreSecurity::Mode mode, uint64_t magic = kMagic) {
  StoreSecurity s;
  s.mode = mode;
  s.magic = magic;
  for (size_t i = 0; i < s.secret.size(); ++i) s.secret[i] = static_cast<uint8_t>(3 * i + 5);
  return s;
}

std::string hello(uint64_t magic, StoreSecurity::Mode mode) {
  return wire::Writer(wire::Op::kHello)
      .u32(wire::kProtocolId)
      .u16(wire::kVersion)
      .u64(magic)
      .u32(7)
      .u8(static_cast<uint8_t>(mode))
      .frame();
}

// Sends `bytes` on a fresh connection, half-closes it and waits until the store closes
// it; false if the store kept it open past the deadline.
bool send_and_wait_close(uint16_t port, const std::string& bytes) {
  Deadline d = deadline_after(10);
  auto ch = tcp_connect("127.0.0.1", port, d);
  if (!ch.ok()) return false;
  (void)(*ch)->send_all(bytes.data(), bytes.size(), d);
  ::shutdown((*ch)->fd(), SHUT_WR);
  char buf[512];
  for (;;) {
    pollfd p{(*ch)->fd(), POLLIN, 0};
    if (::poll(&p, 1, poll_ms_until(d)) <= 0) return false;
    ssize_t n = ::recv((*ch)->fd(), buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class StoreStrangers : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = log_level();
    set_log_level(LogLevel::kWarn);
  }
  void TearDown() override { set_log_level(saved_); }
  LogLevel saved_ = LogLevel::kWarn;
};

TEST_F(StoreStrangers, ManyGarbageConnectionsMakeOneWarning) {
  const auto sec = security(StoreSecurity::Mode::kPsk);
  auto server = TcpStoreServer::start("127.0.0.1", 0, sec);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  const uint16_t port = (*server)->port();
  const std::string garbage[] = {
      "GET / HTTP/1.0\r\n\r\n",                                 // not our protocol
      std::string("\0\0\0\2\7\7", 6),                           // a frame that is not a hello
      hello(kMagic ^ 1, StoreSecurity::Mode::kPsk),             // another job's magic
      hello(kMagic, StoreSecurity::Mode::kPlain),               // no TLS against a TLS store
      hello(kMagic, StoreSecurity::Mode::kPsk) + "not a TLS ClientHello, just bytes",
  };
  constexpr int kRounds = 40;
  ::testing::internal::CaptureStderr();
  int closed = 0;
  for (int i = 0; i < kRounds; ++i)
    for (const auto& g : garbage) closed += send_and_wait_close(port, g);
  (*server)->stop();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(closed, kRounds * 5) << "the store left garbage connections open";
  // Without the limit: one warning per connection (200).
  EXPECT_EQ(count(log, "symmem warn:"), 1u) << log.substr(0, 4000);
  EXPECT_NE(log.find("127.0.0.1"), std::string::npos) << log;
  EXPECT_NE(log.find("logged at debug level"), std::string::npos) << log;
}

TEST_F(StoreStrangers, EverySuppressedLineIsThereAtDebugLevel) {
  set_log_level(LogLevel::kDebug);
  auto server = TcpStoreServer::start("127.0.0.1", 0, security(StoreSecurity::Mode::kPlain));
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(send_and_wait_close((*server)->port(), hello(kMagic + 1, StoreSecurity::Mode::kPlain)));
  (*server)->stop();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(log, "wrong job magic"), 10u) << log.substr(0, 4000);
  EXPECT_EQ(count(log, "symmem warn:"), 1u) << log.substr(0, 4000);
}

TEST_F(StoreStrangers, AuthenticatedClientsAreStillWarnedAboutEachTime) {
  const auto sec = security(StoreSecurity::Mode::kPlain);
  auto server = TcpStoreServer::start("127.0.0.1", 0, sec);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  // The right magic, then a request that is not one.
  std::string bad = hello(kMagic, StoreSecurity::Mode::kPlain) + std::string("\0\0\0\1\x70", 5);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(send_and_wait_close((*server)->port(), bad));
  // A real client is served as before.
  auto c = TcpStoreClient::connect({"127.0.0.1", (*server)->port()}, sec, 0, 5);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE((*c)->set("k", "v").ok());
  auto v = (*c)->get("k", 1);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(*v, "v");
  (*c).reset();
  (*server)->stop();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(log, "unknown request op 112"), 3u) << log;
}

TEST(StoreHalfClose, RequestsSentBeforeTheClientsShutdownAreAnswered) {
  const auto sec = security(StoreSecurity::Mode::kPlain);
  auto server = TcpStoreServer::start("127.0.0.1", 0, sec);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  Deadline d = deadline_after(10);
  auto ch = tcp_connect("127.0.0.1", (*server)->port(), d);
  ASSERT_TRUE(ch.ok()) << ch.status().to_string();
  std::string req = hello(kMagic, StoreSecurity::Mode::kPlain) +
                    wire::Writer(wire::Op::kSet).str("k").str("v").frame() +
                    wire::Writer(wire::Op::kGet).str("k").u64(0).frame();
  ASSERT_TRUE((*ch)->send_all(req.data(), req.size(), d).ok());
  ::shutdown((*ch)->fd(), SHUT_WR);  // all in one go, then the end of the stream
  std::string got;
  char buf[512];
  for (;;) {
    pollfd p{(*ch)->fd(), POLLIN, 0};
    ASSERT_GT(::poll(&p, 1, poll_ms_until(d)), 0) << "the store did not close the connection";
    ssize_t n = ::recv((*ch)->fd(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  std::string ok = wire::Writer(wire::Op::kOk).frame();
  std::string want = ok + ok + wire::Writer(wire::Op::kValue).str("v").frame();
  EXPECT_EQ(got, want) << "answers: " << got.size() << " bytes";
  (*server)->stop();
}

}  // namespace
}  // namespace symmem
