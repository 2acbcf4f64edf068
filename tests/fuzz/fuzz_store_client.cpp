// libFuzzer target: the store client's side of the wire, i.e. what a PE parses from a
// store (or from whatever answers at the store's address). The real client
// (TcpStoreClient::on_channel) runs on a memory channel whose input is the fuzzer's bytes
// as the store's answers, and makes one call of each kind. Byte 0:
//   0  plain mode: the input starts with the answer to the hello
//   1  TLS (psk): the answer to the hello, then what should be the store's side of the TLS
//      handshake (OpenSSL's client reads it through the channel)
//   2  after the hello and the TLS handshake: the answers as TLS decrypted them
// Every call must return (an error is fine) without crash, hang, leak or sanitizer report.
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "fuzz_store_common.hpp"

using namespace symmem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int where = data[0] % 3;
  const auto mode = where == 1 ? StoreSecurity::Mode::kPsk : StoreSecurity::Mode::kPlain;
  std::string sent;  // what the client sent: not looked at
  auto ch = make_memory_channel(std::string(reinterpret_cast<const char*>(data) + 1, size - 1), &sent, "store:1");
  auto c = TcpStoreClient::on_channel(std::move(ch), fuzz::security(mode), 0, 5.0, where == 2);
  if (c.ok()) {
    Store& s = **c;
    (void)s.set("key", "value");
    (void)s.get("key", 0.5);
    (void)s.wait({"a", "b"}, 0.5);
    (void)s.add("counter", 1);
    (void)s.check({"a", "b", "c"});
    (void)s.erase("key");
  }
  return 0;
}
