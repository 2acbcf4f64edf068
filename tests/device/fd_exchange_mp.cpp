// The descriptor exchange between real processes (run under symmem-run -n N): every PE
// passes a memfd to every other; each maps what it received and checks that it sees the
// sender's bytes, writes its mark into each peer's memory, and after a second round (a
// barrier) checks that its own memory holds every peer's mark: the same memory, shared.
// Exit 0 when every check passed on this PE. No symmem runtime: only the device layer.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/fd_exchange.hpp"

using symmem::device::FdExchange;

int main() {
  const char* r = std::getenv("SYMMEM_RANK");
  const char* n = std::getenv("SYMMEM_NPES");
  const char* job = std::getenv("SYMMEM_JOB_ID");
  if (!r || !n || !job) {
    std::fprintf(stderr, "fd_exchange_mp: run under symmem-run\n");
    return 2;
  }
  const int me = std::atoi(r), npes = std::atoi(n);
  std::vector<int> members;
  for (int i = 0; i < npes; ++i) members.push_back(i);
  constexpr size_t kSize = 1 << 16;
  int fd = ::memfd_create("fdx-mp", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, kSize) != 0) return 3;
  auto* mine = static_cast<char*>(::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (mine == MAP_FAILED) return 3;
  std::snprintf(mine, 64, "memory of PE %d", me);

  auto x = FdExchange::open(std::string(job) + "-mptest", me, members, 60);
  if (!x.ok()) {
    std::fprintf(stderr, "PE %d: %s\n", me, x.status().message().c_str());
    return 1;
  }
  std::vector<FdExchange::Received> got;
  auto s = (*x)->allgather(fd, FdExchange::Words{uint64_t(me), kSize, 0, 0, 0, 0}, &got);
  if (!s.ok()) {
    std::fprintf(stderr, "PE %d: %s\n", me, s.message().c_str());
    return 1;
  }
  int bad = 0;
  for (int p = 0; p < npes; ++p) {
    if (p == me) continue;
    if (got[p].words[0] != uint64_t(p) || got[p].words[1] != kSize) ++bad;
    auto* peer = static_cast<char*>(::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, got[p].fd, 0));
    ::close(got[p].fd);
    if (peer == MAP_FAILED) {
      std::fprintf(stderr, "PE %d: cannot map PE %d's descriptor\n", me, p);
      return 1;
    }
    const std::string want = "memory of PE " + std::to_string(p);
    if (want != peer) {
      std::fprintf(stderr, "PE %d: PE %d's memory reads '%.64s', want '%s'\n", me, p, peer, want.c_str());
      ++bad;
    }
    std::snprintf(peer + 1024 + 64 * me, 64, "mark of PE %d", me);
    ::munmap(peer, kSize);
  }
  // Second round: nobody checks its marks before every peer has written them.
  int dummy = ::memfd_create("fdx-mp-barrier", MFD_CLOEXEC);
  s = (*x)->allgather(dummy, FdExchange::Words{}, &got);
  ::close(dummy);
  if (!s.ok()) {
    std::fprintf(stderr, "PE %d: %s\n", me, s.message().c_str());
    return 1;
  }
  for (auto& g : got)
    if (g.fd >= 0) ::close(g.fd);
  for (int p = 0; p < npes; ++p) {
    if (p == me) continue;
    const std::string want = "mark of PE " + std::to_string(p);
    if (want != mine + 1024 + 64 * p) {
      std::fprintf(stderr, "PE %d: slot of PE %d reads '%.64s', want '%s'\n", me, p, mine + 1024 + 64 * p,
                   want.c_str());
      ++bad;
    }
  }
  if (me == 0 && !bad) std::printf("fd_exchange_mp: %d PEs shared their memfds and saw each other's writes\n", npes);
  return bad ? 1 : 0;
}
