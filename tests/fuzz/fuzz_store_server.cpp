// libFuzzer target: the store server's side of the wire, before and after the TLS hello.
// Each input is one connection to a store, on a buffer: BufferStoreServer runs the server's
// own reading, framing, hello, TLS and request code (tcp_store_server.cpp, wire.hpp,
// tls_channel.cpp) on a memory channel, without a socket or a thread, so that one input
// costs microseconds, not a loopback connection. Byte 0 says where the input starts:
//   0  a plain-mode store; the input is the whole byte stream (hello first)
//   1  a TLS (psk) store; the input is the whole stream: a hello, then what should be a
//      TLS ClientHello (OpenSSL's server reads it through the store's channel)
//   2  a plain-mode store, after an accepted hello: request frames
//   3  a TLS store, after the hello and the handshake: request frames as TLS decrypted them
// Byte 1 is how the stream arrives: 0 all at once, n in pieces of n bytes, each read on its
// own (a client waits for the hello's answer before its ClientHello: 24, a hello's size,
// lets the handshake start). The stream then ends, as when the client hangs up; the store
// must close the connection without crash, hang, leak or sanitizer report.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "fuzz_store_common.hpp"

using namespace symmem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int where = data[0] % 4;
  const auto mode = (where == 1 || where == 3) ? StoreSecurity::Mode::kPsk : StoreSecurity::Mode::kPlain;
  // One store per mode for the whole run: what one input stored is still there for the
  // next ones, as for a real store.
  static std::unique_ptr<BufferStoreServer> stores[2];
  const int which = mode == StoreSecurity::Mode::kPsk;
  if (!stores[which]) {
    auto server = BufferStoreServer::create(fuzz::security(mode));
    if (!server.ok()) fuzz::die("cannot create the store", server.status().message());
    stores[which] = std::move(server).value();
    // Destroyed at exit before OpenSSL's atexit cleanup, which create() registered (TLS) or
    // which comes later.
    std::atexit(which ? +[] { stores[1].reset(); } : +[] { stores[0].reset(); });
  }
  const auto start = where >= 2 ? BufferStoreServer::Start::kAfterHello : BufferStoreServer::Start::kHello;
  (void)stores[which]->serve(std::string(reinterpret_cast<const char*>(data) + 2, size - 2), start, data[1]);
  return 0;
}
