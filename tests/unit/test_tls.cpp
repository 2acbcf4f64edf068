// TLS on the store's connections, with real sockets and a real OpenSSL handshake: who is
// refused (wrong magic, wrong secret, TLS off on one side only, a certificate of another CA
// or a revoked one) and with which message on each side; and what a relay between client
// and store can read (nothing of the values exchanged, unless TLS is switched off).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tls_channel.hpp"

namespace symmem {
namespace {

using Mode = StoreSecurity::Mode;
constexpr uint64_t kMagic = 0x5eed5eed0badcafeULL;

StoreSecurity security(Mode mode, uint8_t secret_seed = 1, uint64_t magic = kMagic) {
  StoreSecurity s;
  s.mode = mode;
  s.magic = magic;
  for (size_t i = 0; i < s.secret.size(); ++i) s.secret[i] = static_cast<uint8_t>(secret_seed + 13 * i);
  return s;
}

struct Server {
  std::unique_ptr<TcpStoreServer> server;
  StoreAddress addr;
};

Server start(const StoreSecurity& sec) {
  auto s = TcpStoreServer::start("127.0.0.1", 0, sec);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  Server out;
  out.server = std::move(s).value();
  out.addr = {"127.0.0.1", out.server->port()};
  return out;
}

// Connects with `client`; expects a refusal whose message contains `client_says`, and a
// warning of the store that contains `store_says`.
void expect_refused(const StoreSecurity& store_sec, const StoreSecurity& client, const std::string& client_says,
                    const std::string& store_says) {
  Server s = start(store_sec);
  ASSERT_TRUE(s.server);
  ::testing::internal::CaptureStderr();
  auto c = TcpStoreClient::connect(s.addr, client, 3, 5);
  // The store logs from its own thread; stop it so that its last line is written.
  s.server->stop();
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(c.ok()) << "the store accepted a client it should refuse";
  EXPECT_EQ(c.status().code(), Errc::kRefused) << c.status().to_string();
  EXPECT_NE(c.status().message().find(client_says), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find(s.addr.to_url()), std::string::npos) << c.status().message();
  EXPECT_NE(log.find(store_says), std::string::npos) << "store log: " << log;
}

TEST(StoreTls, PskRoundTrip) {
  Server s = start(security(Mode::kPsk));
  ASSERT_TRUE(s.server);
  auto a = TcpStoreClient::connect(s.addr, security(Mode::kPsk), 0, 5);
  auto b = TcpStoreClient::connect(s.addr, security(Mode::kPsk), 1, 5);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string() << b.status().to_string();
  std::string big(3 << 20, 'x');  // several TLS records, more than one socket buffer
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>(i);
  std::thread t([&] { EXPECT_TRUE((*a)->set("big", big).ok()); });
  auto got = (*b)->get("big", 10);
  t.join();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(*got == big);
  auto n = (*b)->add("n", 5);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5);
}

TEST(StoreTls, WrongSecretIsRefusedOnBothSides) {
  expect_refused(security(Mode::kPsk, 1), security(Mode::kPsk, 2), "wrong secret", "wrong secret");
}

TEST(StoreTls, WrongMagicIsRefusedOnBothSides) {
  expect_refused(security(Mode::kPsk), security(Mode::kPsk, 1, kMagic + 1), "wrong job magic", "wrong job magic");
}

TEST(StoreTls, PlainClientAgainstTlsStoreIsRefusedOnBothSides) {
  expect_refused(security(Mode::kPsk), security(Mode::kPlain), "this store requires TLS",
                 "this store requires TLS");
}

TEST(StoreTls, TlsClientAgainstPlainStoreIsRefusedOnBothSides) {
  expect_refused(security(Mode::kPlain), security(Mode::kPsk), "this store runs without TLS",
                 "this store runs without TLS");
}

TEST(StoreTls, SecurityModesParse) {
  EXPECT_EQ(StoreSecurity::parse_mode("psk").value(), Mode::kPsk);
  EXPECT_EQ(StoreSecurity::parse_mode("ON").value(), Mode::kPsk);
  EXPECT_EQ(StoreSecurity::parse_mode("off").value(), Mode::kPlain);
  EXPECT_EQ(StoreSecurity::parse_mode("0").value(), Mode::kPlain);
  EXPECT_EQ(StoreSecurity::parse_mode("cert").value(), Mode::kCert);
  EXPECT_FALSE(StoreSecurity::parse_mode("maybe").ok());
  StoreSecurity s;
  ASSERT_TRUE(s.parse_tls_info("tlsCaFile: /a/ca.pem, /b/ca2.pem; tlsCert: /c.pem ;tlsPk:/k.pem; other: x; "
                               "tlsCrlFile: /crl.pem").ok());
  EXPECT_EQ(s.ca_file, "/a/ca.pem");
  EXPECT_EQ(s.cert_file, "/c.pem");
  EXPECT_EQ(s.key_file, "/k.pem");
  EXPECT_EQ(s.crl_file, "/crl.pem");
  EXPECT_FALSE(s.parse_tls_info("tlsCert /c.pem").ok());
}

// ------------------------------------------------------------------------------------------
// A relay: accepts one connection and forwards it to the store, keeping every byte.

class Relay {
 public:
  explicit Relay(const StoreAddress& to) : to_(to) {
    lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(lfd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    EXPECT_EQ(::listen(lfd_, 4), 0);
    socklen_t sl = sizeof(sa);
    ::getsockname(lfd_, reinterpret_cast<sockaddr*>(&sa), &sl);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    ::close(lfd_);
  }
  StoreAddress address() const { return {"127.0.0.1", port_}; }
  std::string recorded() {
    std::lock_guard<std::mutex> lk(mu_);
    return bytes_;
  }

 private:
  void run() {
    pollfd p{lfd_, POLLIN, 0};
    while (!stop_ && ::poll(&p, 1, 50) == 0) {
    }
    if (stop_) return;
    int a = ::accept(lfd_, nullptr, nullptr);
    int b = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(to_.port);
    ::inet_pton(AF_INET, to_.host.c_str(), &sa.sin_addr);
    if (a < 0 || ::connect(b, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return;
    char buf[65536];
    while (!stop_) {
      pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (::poll(fds, 2, 50) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!fds[i].revents) continue;
        ssize_t n = ::recv(fds[i].fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          ::close(a);
          ::close(b);
          return;
        }
        {
          std::lock_guard<std::mutex> lk(mu_);
          bytes_.append(buf, static_cast<size_t>(n));
        }
        ssize_t off = 0;
        while (off < n) {
          ssize_t w = ::send(fds[1 - i].fd, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) return;
          off += w;
        }
      }
    }
    ::close(a);
    ::close(b);
  }

  StoreAddress to_;
  int lfd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string bytes_;
};

// What a relay sees of a set, a get and a wait.
std::string relay_view(Mode mode, const std::string& key, const std::string& value) {
  Server s = start(security(mode));
  if (!s.server) return {};
  Relay relay(s.addr);
  auto c = TcpStoreClient::connect(relay.address(), security(mode), 0, 5);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return {};
  EXPECT_TRUE((*c)->set(key, value).ok());
  auto v = (*c)->get(key, 5);
  EXPECT_TRUE(v.ok() && *v == value);
  EXPECT_TRUE((*c)->wait({key}, 5).ok());
  return relay.recorded();
}

TEST(StoreTls, RelaySeesNothingInClear) {
  const std::string key = "init/heap_base/7", value = "distinctive-value-0x7f3a9c000000";
  std::string seen = relay_view(Mode::kPsk, key, value);
  ASSERT_GT(seen.size(), 200u) << "the relay recorded nothing: the test would prove nothing";
  EXPECT_EQ(seen.find(value), std::string::npos);
  EXPECT_EQ(seen.find(key), std::string::npos);
  EXPECT_EQ(seen.find("distinctive"), std::string::npos);
  // The control: the same exchange with TLS off is readable, so the relay does see the bytes.
  std::string clear = relay_view(Mode::kPlain, key, value);
  EXPECT_NE(clear.find(value), std::string::npos);
}

// ------------------------------------------------------------------------------------------
// Certificates, made with the openssl tool in a temporary directory.

class StoreTlsCert : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("symmem-tls-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "ca.cnf") << "[ca]\ndefault_ca=d\n[d]\ndatabase=" << (dir_ / "index.txt").string()
                                   << "\ncrlnumber=" << (dir_ / "crlnumber").string()
                                   << "\ndefault_md=sha256\ndefault_crl_days=1\n";
    std::ofstream(dir_ / "index.txt").flush();
    std::ofstream(dir_ / "crlnumber") << "01\n";
    std::string d = dir_.string();
    std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    std::string script =
        "cd " + d + " && " +
        "openssl req -x509" + ec + "-keyout ca.key -out ca.pem -subj /CN=symmem-ca -days 1 && " +
        "openssl req -x509" + ec + "-keyout other.key -out other.pem -subj /CN=other-ca -days 1 && " +
        "for n in a b revoked; do openssl req" + ec + "-keyout $n.key -out $n.csr -subj /CN=$n && "
        "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.pem -days 1 || exit 1; done && "
        "openssl req" + ec + "-keyout rogue.key -out rogue.csr -subj /CN=rogue && "
        "openssl x509 -req -in rogue.csr -CA other.pem -CAkey other.key -CAcreateserial -out rogue.pem -days 1 && "
        "openssl ca -config ca.cnf -keyfile ca.key -cert ca.pem -revoke revoked.pem && "
        "openssl ca -config ca.cnf -keyfile ca.key -cert ca.pem -gencrl -out crl.pem";
    if (std::system(("(" + script + ") >/dev/null 2>&1").c_str()) != 0)
      GTEST_SKIP() << "the openssl tool could not make test certificates";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  StoreSecurity cert(const std::string& who, bool crl = true) {
    StoreSecurity s = security(Mode::kCert);
    s.ca_file = (dir_ / "ca.pem").string();
    s.cert_file = (dir_ / (who + ".pem")).string();
    s.key_file = (dir_ / (who + ".key")).string();
    if (crl) s.crl_file = (dir_ / "crl.pem").string();
    return s;
  }
  std::filesystem::path dir_;
};

TEST_F(StoreTlsCert, MutualCertificatesWork) {
  Server s = start(cert("a"));
  ASSERT_TRUE(s.server);
  auto c = TcpStoreClient::connect(s.addr, cert("b"), 0, 5);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE((*c)->set("k", "v").ok());
  EXPECT_EQ((*c)->get("k", 1).value(), "v");
}

TEST_F(StoreTlsCert, CertificateOfAnotherCaIsRefusedOnBothSides) {
  expect_refused(cert("a"), cert("rogue"), "TLS handshake failed", "certificate did not verify");
}

TEST_F(StoreTlsCert, RevokedCertificateIsRefused) {
  expect_refused(cert("a"), cert("revoked"), "TLS handshake failed", "certificate revoked");
}

TEST_F(StoreTlsCert, MissingFilesAreNamed) {
  StoreSecurity s = cert("a");
  s.key_file = (dir_ / "nope.key").string();
  auto srv = TcpStoreServer::start("127.0.0.1", 0, s);
  ASSERT_FALSE(srv.ok());
  EXPECT_NE(srv.status().message().find("nope.key"), std::string::npos) << srv.status().message();
  StoreSecurity none = security(Mode::kCert);
  auto c = TcpStoreClient::connect({"127.0.0.1", 1}, none, 0, 1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("SYMMEM_TLS_CERT"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace symmem
