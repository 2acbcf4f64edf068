// Shared by the store fuzz targets: the job's security settings. Both targets run the
// store's real protocol and TLS code on memory channels (BufferStoreServer,
// TcpStoreClient::on_channel), the code that parses a socket's bytes.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/channel.hpp"
#include "bootstrap/tls_channel.hpp"
#include "bootstrap/wire.hpp"

namespace symmem::fuzz {

// The seeds in corpus/ are written for these (the magic is in their hello frames).
inline constexpr uint64_t kMagic = 0x53594d4d46555a5aull;  // "SYMMFUZZ"

inline StoreSecurity security(StoreSecurity::Mode mode) {
  StoreSecurity s;
  s.mode = mode;
  s.magic = kMagic;
  for (size_t i = 0; i < s.secret.size(); ++i) s.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  return s;
}

[[noreturn]] inline void die(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

}  // namespace symmem::fuzz
