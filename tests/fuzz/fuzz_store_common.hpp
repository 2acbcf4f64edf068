// Shared by the store fuzz targets: the job's security settings and small socket helpers.
// Everything runs over real loopback TCP and the real TLS code: the store's wire format is
// only ever parsed from a socket, and the fuzzers reach it the way a stranger on the
// network would.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

inline std::string hello_frame(StoreSecurity::Mode mode) {
  return wire::Writer(wire::Op::kHello)
      .u32(wire::kProtocolId)
      .u16(wire::kVersion)
      .u64(kMagic)
      .u32(0)
      .u8(static_cast<uint8_t>(mode))
      .frame();
}

[[noreturn]] inline void die(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

// Reads and drops everything until the peer closes (or errs); false if it is still open at
// the deadline: a store or client that neither answers nor hangs up is a hang.
inline bool drain_until_closed(int fd, Deadline deadline) {
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, poll_ms_until(deadline));
    if (r == 0) return false;
    if (r < 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;
  }
}

}  // namespace symmem::fuzz
