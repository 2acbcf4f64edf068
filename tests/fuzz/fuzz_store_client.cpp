// libFuzzer target: the store client's side of the wire, i.e. what a PE parses from a
// store (or from whatever answers at the store's address). A fake store on loopback
// accepts one connection, reads the client's hello and sends the input as its answers;
// the real client (TcpStoreClient) connects and runs one call of each kind. Byte 0:
//   0  plain mode: the input starts with the answer to the hello
//   1  TLS (psk): the fake store sends kOk in clear and completes the TLS handshake with
//      the job's key; the input (encrypted) starts with the TLS confirmation frame
// Every call must return (an error is fine) without crash, hang, leak or sanitizer report.
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "bootstrap/tcp_store.hpp"
#include "fuzz_store_common.hpp"

using namespace symmem;

namespace {

constexpr double kDeadlineS = 20.0;

void fake_store(int lfd, StoreSecurity sec, const uint8_t* data, size_t size) {
  Deadline d = deadline_after(kDeadlineS);
  pollfd p{lfd, POLLIN, 0};
  if (::poll(&p, 1, poll_ms_until(d)) != 1) fuzz::die("the client did not connect");
  int fd = ::accept(lfd, nullptr, nullptr);
  if (fd < 0) fuzz::die("accept");
  std::unique_ptr<Channel> ch = make_socket_channel(fd, "client");
  char hello[4 + 20];
  if (!ch->recv_all(hello, sizeof(hello), d).ok()) fuzz::die("no hello from the client");
  if (sec.mode != StoreSecurity::Mode::kPlain) {
    std::string ok = wire::Writer(wire::Op::kOk).frame();
    if (!ch->send_all(ok.data(), ok.size(), d).ok()) fuzz::die("send kOk");
    // Never freed: OpenSSL must not be called after its atexit cleanup.
    static auto* server_tls = new Result<std::shared_ptr<TlsContext>>(TlsContext::create(sec, true));
    if (!server_tls->ok()) fuzz::die("TLS context", server_tls->status().message());
    auto t = (**server_tls)->wrap(std::move(ch));
    if (!t.ok()) fuzz::die("TLS wrap", t.status().message());
    if (!(*t)->handshake(d).ok()) fuzz::die("TLS handshake with the job key failed");
    ch = std::move(t).value();
  }
  (void)ch->send_all(data, size, d);  // the client may hang up early
  ::shutdown(ch->fd(), SHUT_WR);
  if (!fuzz::drain_until_closed(ch->fd(), d)) fuzz::die("the client neither finished nor closed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto mode = data[0] % 2 ? StoreSecurity::Mode::kPsk : StoreSecurity::Mode::kPlain;
  const StoreSecurity sec = fuzz::security(mode);
  uint16_t port = 0;
  auto lfd = tcp_listen("127.0.0.1", 0, &port);
  if (!lfd.ok()) fuzz::die("listen", lfd.status().message());
  std::thread store(fake_store, *lfd, sec, data + 1, size - 1);
  {
    auto c = TcpStoreClient::connect(StoreAddress{"127.0.0.1", port}, sec, 0, 5.0);
    if (c.ok()) {
      Store& s = **c;
      (void)s.set("key", "value");
      (void)s.get("key", 0.5);
      (void)s.wait({"a", "b"}, 0.5);
      (void)s.add("counter", 1);
      (void)s.check({"a", "b", "c"});
      (void)s.erase("key");
    }
  }  // the client hangs up here
  store.join();
  ::close(*lfd);
  return 0;
}
