// The store's address: "tcp://host:port" or "tcp6://[addr]:port", parsed and printed.
// The server and the client are in tcp_store_server.cpp and tcp_store_client.cpp.
#include "bootstrap/tcp_store.hpp"

#include <cctype>
#include <charconv>
#include <string>

namespace symmem {
namespace {

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

}  // namespace symmem
