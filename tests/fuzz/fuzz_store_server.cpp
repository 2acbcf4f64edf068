// libFuzzer target: the store server's side of the wire, before and after the TLS hello.
// Each input is one connection to a store (tcp_store.cpp, wire.hpp, tls_channel.cpp)
// on loopback. Byte 0 says where the input starts:
//   0  a plain-mode store; the input is the whole byte stream (hello first)
//   1  a TLS (psk) store; the input is the whole stream: a hello, then what should be a
//      TLS ClientHello
//   2  a plain-mode store; the fuzzer sends a valid hello, the input is the request frames
//   3  a TLS store; the fuzzer sends a valid hello and completes the TLS handshake with
//      the job's key; the input is the request frames, encrypted
// The connection is then half-closed; the store must answer and close it within the
// deadline, and must not crash, leak or trip a sanitizer.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "common/log.hpp"
#include "fuzz_store_common.hpp"

using namespace symmem;

namespace {

constexpr double kDeadlineS = 20.0;

bool read_ok(Channel& ch, Deadline d) {
  char b[5];
  return ch.recv_all(b, sizeof(b), d).ok() && wire::load_u32(b) == 1 && static_cast<wire::Op>(b[4]) == wire::Op::kOk;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int where = data[0] % 4;
  const auto mode = (where == 1 || where == 3) ? StoreSecurity::Mode::kPsk : StoreSecurity::Mode::kPlain;
  const StoreSecurity sec = fuzz::security(mode);
  // One store per mode for the whole run: starting one per input costs a thread and (TLS)
  // a context each time, which made the run ten times slower. What one input stored is
  // still there for the next ones, as for a real store.
  static std::unique_ptr<TcpStoreServer> stores[2];
  const int which = mode == StoreSecurity::Mode::kPsk;
  if (!stores[which]) {
    auto server = TcpStoreServer::start("127.0.0.1", 0, sec);
    if (!server.ok()) fuzz::die("cannot start the store", server.status().message());
    stores[which] = std::move(server).value();
    // Stopped at exit before OpenSSL's atexit cleanup, which start() registered (TLS) or
    // which comes later: a store thread that ends after that cleanup leaves its OpenSSL
    // thread state behind, and LeakSanitizer reports it.
    std::atexit(which ? +[] { stores[1].reset(); } : +[] { stores[0].reset(); });
  }
  Deadline d = deadline_after(kDeadlineS);
  auto conn = tcp_connect("127.0.0.1", stores[which]->port(), d);
  if (!conn.ok()) fuzz::die("cannot connect", conn.status().message());
  std::unique_ptr<Channel> ch = std::move(conn).value();

  if (where >= 2) {
    std::string hello = fuzz::hello_frame(mode);
    if (!ch->send_all(hello.data(), hello.size(), d).ok() || !read_ok(*ch, d)) fuzz::die("valid hello refused");
    if (where == 3) {
      // Kept for the whole run and never freed: OpenSSL must not be called after its
      // atexit cleanup.
      static auto* client_tls = new Result<std::shared_ptr<TlsContext>>(TlsContext::create(sec, false));
      if (!client_tls->ok()) fuzz::die("TLS context", client_tls->status().message());
      auto t = (**client_tls)->wrap(std::move(ch));
      if (!t.ok()) fuzz::die("TLS wrap", t.status().message());
      Status hs = (*t)->handshake(d);
      if (!hs.ok()) fuzz::die("TLS handshake with the job key failed", hs.message());
      if (!read_ok(**t, d)) fuzz::die("no TLS confirmation");
      ch = std::move(t).value();
    }
  }
  // A request the store refuses may close the connection while we still send: fine.
  (void)ch->send_all(data + 1, size - 1, d);
  ::shutdown(ch->fd(), SHUT_WR);
  if (!fuzz::drain_until_closed(ch->fd(), d)) fuzz::die("the store neither answered nor closed the connection");
  return 0;
}
