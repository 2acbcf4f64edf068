// How the UCX route fails: an endpoint error (a peer killed, a connection reset) or a
// deadline that passes ends the job with one line naming the PE and its host, and at init
// the address it published, which this PE could not reach. The deadlines themselves are
// kept by the waiting loop (ucx_progress.hpp).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/log.hpp"
#include "transport/ucx/ucx_impl.hpp"

namespace symmem {

void UcxTransport::Impl::fatal(const std::string& msg, int pe) {
  if (p.fatal) p.fatal(pe, msg);
  log_pe(LogLevel::kError, p.rank, "%s", msg.c_str());
  _exit(1);
}

std::string UcxTransport::Impl::who(int pe) const {
  std::string h = size_t(pe) < p.hosts.size() ? p.hosts[size_t(pe)] : "?";
  return "PE " + std::to_string(pe) + " (" + h + ")";
}

// At init: the PE and the address it published, which this PE could not reach.
std::string UcxTransport::Impl::who_at(int pe) const {
  std::string w = who(pe);
  if (initializing.load(std::memory_order_relaxed) && size_t(pe) < where.size() && !where[size_t(pe)].empty())
    w += " at its UCX address " + where[size_t(pe)];
  return w;
}

void UcxTransport::Impl::on_ep_error(void* arg, ucp_ep_h, ucs_status_t st) {
  auto* peer = static_cast<UcxPeer*>(arg);
  peer->error.store(int(st));
  Impl* im = peer->lane->owner;
  if (im->closing.load()) return;  // peers close their endpoints at finalize
  // A peer that ended the job itself (global exit, its own error) drops its endpoints
  // too: give the launcher a moment to end this PE before blaming that peer.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  im->fatal("symmem: " + im->who_at(peer->pe) + " failed or became unreachable over UCX: " + ucs_status_string(st) +
                (im->initializing.load()
                     ? " (at init: check UCX_NET_DEVICES and that the nodes can reach each other there)"
                     : " (the PE was killed, crashed, or its node's network is down)"),
            peer->pe);
}

void UcxTransport::Impl::timed_out(const char* what, int pe) {
  char buf[96];
  std::snprintf(buf, sizeof buf, " did not complete within %.1f s (%s)", double(timeout_ns) / 1e9,
                initializing.load() ? "SYMMEM_INIT_TIMEOUT" : "SYMMEM_OP_TIMEOUT");
  fatal(std::string("symmem: ") + what + (pe >= 0 ? " to " + who_at(pe) : std::string(" (all peers)")) + buf +
            (initializing.load() ? ": unreachable from here (check UCX_NET_DEVICES on both nodes), or not started"
                                 : ": the peer is hung (stopped, or not scheduled) or its node unreachable"),
        pe);
}

void UcxTransport::Impl::no_region(uintptr_t a, size_t n, int pe) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "symmem: address 0x%" PRIxPTR " (%zu bytes) is in no registered region of PE %d", a,
                n, pe);
  fatal(buf);
}

Status UcxTransport::Impl::ucs_error(const std::string& what, ucs_status_t st) {
  return Status(Errc::kIo, what + ": " + ucs_status_string(st));
}

// The addresses of the network devices UCX may use here ("dev=addr,..."), as peers would
// connect to them: UCX_NET_DEVICES' netdevs (an InfiniBand port such as mlx5_0:1 by name
// only), or every interface that is up. Published at init for who_at's messages.
std::string UcxTransport::Impl::device_addresses() {
  const char* env = std::getenv("UCX_NET_DEVICES");
  std::string want = env && *env && std::string(env) != "all" ? std::string(",") + env + "," : "";
  std::string out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      const int fam = i->ifa_addr->sa_family;
      if (fam != AF_INET && fam != AF_INET6) continue;
      std::string name = ",";  // appended piece by piece: GCC 12 -O3 -Wrestrict false positive on "," + string
      name += i->ifa_name;
      name += ',';
      if (!want.empty() && want.find(name) == std::string::npos) continue;
      char buf[INET6_ADDRSTRLEN] = "";
      const void* a = fam == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
                                     : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr);
      if (!inet_ntop(fam, a, buf, sizeof buf)) continue;
      if (!out.empty()) out += ',';
      out += i->ifa_name;
      out += '=';
      out += buf;
    }
    freeifaddrs(ifs);
  }
  if (out.empty()) out = env && *env ? env : "?";
  return out;
}

}  // namespace symmem
