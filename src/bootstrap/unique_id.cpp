// Unique ids: the 136-byte encoding, its text form, the choice of the store's address
// and the hand-over of the store a process started when it created an id.
//
// Layout of the 124 opaque bytes (big-endian integers):
//   0  "SYMU"   4  format (1)   5  security mode   6  address family (4 or 6)   7  0
//   8  port (u16)   10  address (16 bytes; IPv4 in the first 4)   26  magic (u64)
//   34 secret (32 bytes)   66  job id (12 characters)   78..123  zero
#include "bootstrap/unique_id.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "bootstrap/launch_env.hpp"
#include "common/log.hpp"

namespace symmem {
namespace {

constexpr char kTag[4] = {'S', 'Y', 'M', 'U'};
constexpr char kTextPrefix[] = "symmem-uid1:";
constexpr size_t kHeader = 12;  // version, my_pe, n_pes

std::mutex g_hosted_mu;
std::map<uint64_t, std::unique_ptr<TcpStoreServer>>& hosted() {
  static auto* m = new std::map<uint64_t, std::unique_ptr<TcpStoreServer>>();
  return *m;
}

void put_be(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}
uint64_t get_be(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

// Resolves a host name or literal to one numeric address.
Result<std::string> numeric_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return Status(Errc::kInvalidArgument, "cannot resolve '" + host + "': " + gai_strerror(rc));
  char buf[INET6_ADDRSTRLEN] = {0};
  const void* a = res->ai_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr)
                                             : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr);
  ::inet_ntop(res->ai_family, a, buf, sizeof(buf));
  ::freeaddrinfo(res);
  return std::string(buf);
}

}  // namespace

uint64_t hash64(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void encode_unique_id(const UniqueIdInfo& info, uint8_t out[kUniqueIdSize]) {
  std::memset(out, 0, kUniqueIdSize);
  int32_t version = kUniqueIdVersion, my_pe = -1, n_pes = 0;
  std::memcpy(out, &version, 4);
  std::memcpy(out + 4, &my_pe, 4);
  std::memcpy(out + 8, &n_pes, 4);
  uint8_t* p = out + kHeader;
  std::memcpy(p, kTag, 4);
  p[4] = 1;
  p[5] = static_cast<uint8_t>(info.security.mode);
  bool v6 = info.store.host.find(':') != std::string::npos;
  p[6] = v6 ? 6 : 4;
  put_be(p + 8, info.store.port, 2);
  ::inet_pton(v6 ? AF_INET6 : AF_INET, info.store.host.c_str(), p + 10);
  put_be(p + 26, info.security.magic, 8);
  std::memcpy(p + 34, info.security.secret.data(), 32);
  std::memcpy(p + 66, info.job_id.data(), std::min<size_t>(info.job_id.size(), 12));
}

Result<UniqueIdInfo> decode_unique_id(const uint8_t in[kUniqueIdSize]) {
  int32_t version;
  std::memcpy(&version, in, 4);
  const uint8_t* p = in + kHeader;
  auto bad = [](const std::string& why) {
    return Status(Errc::kInvalidArgument, "not a valid symmem unique id: " + why +
                                              " (was it filled by shmemx_get_uniqueid on PE 0 and copied whole?)");
  };
  if (version != kUniqueIdVersion)
    return bad("version " + std::to_string(version) + ", expected " + std::to_string(kUniqueIdVersion));
  if (std::memcmp(p, kTag, 4) != 0 || p[4] != 1) return bad("unknown format");
  if (p[5] > 2) return bad("unknown security mode");
  if (p[6] != 4 && p[6] != 6) return bad("unknown address family");
  UniqueIdInfo info;
  info.security.mode = static_cast<StoreSecurity::Mode>(p[5]);
  char buf[INET6_ADDRSTRLEN] = {0};
  ::inet_ntop(p[6] == 6 ? AF_INET6 : AF_INET, p + 10, buf, sizeof(buf));
  info.store.host = buf;
  info.store.port = static_cast<uint16_t>(get_be(p + 8, 2));
  if (info.store.port == 0) return bad("port 0");
  info.security.magic = get_be(p + 26, 8);
  std::memcpy(info.security.secret.data(), p + 34, 32);
  info.job_id.assign(reinterpret_cast<const char*>(p + 66), 12);
  for (char c : info.job_id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return bad("bad job id");
  return info;
}

std::string unique_id_to_text(const uint8_t id[kUniqueIdSize]) { return kTextPrefix + to_hex(id, kUniqueIdSize); }

Status unique_id_from_text(const std::string& text, uint8_t out[kUniqueIdSize]) {
  const size_t n = sizeof(kTextPrefix) - 1;
  if (text.compare(0, n, kTextPrefix) != 0 || !from_hex(text.substr(n), out, kUniqueIdSize))
    return Status(Errc::kInvalidArgument, "not a symmem unique id in text form (expected '" + std::string(kTextPrefix) +
                                              "' and " + std::to_string(2 * kUniqueIdSize) + " hex digits)");
  return {};
}

Result<StoreAddress> choose_store_address(const std::string& spec, const std::string& ifname) {
  StoreAddress a;
  if (!spec.empty()) {
    std::string url = spec;
    if (url.find("://") == std::string::npos) {
      if (url[0] == '[') url = "tcp6://" + url + (url.find("]:") == std::string::npos ? ":0" : "");
      else if (std::count(url.begin(), url.end(), ':') > 1) url = "tcp6://[" + url + "]:0";
      else url = "tcp://" + url + (url.find(':') == std::string::npos ? ":0" : "");
    }
    // Port 0 (let the OS pick) is fine here though not in a store address to connect to.
    bool any_port = url.size() > 2 && url.compare(url.size() - 2, 2, ":0") == 0;
    auto parsed = StoreAddress::parse(any_port ? url.substr(0, url.size() - 2) + ":1" : url);
    if (!parsed.ok()) return Status(Errc::kInvalidArgument, "SYMMEM_BOOTSTRAP_ADDR: " + parsed.status().message());
    a = *parsed;
    if (any_port) a.port = 0;
    SYMMEM_ASSIGN_OR_RETURN(a.host, numeric_host(a.host));
    return a;
  }
  std::string want_if = ifname, family;
  if (size_t c = ifname.find(':'); c != std::string::npos) {
    want_if = ifname.substr(0, c);
    family = ifname.substr(c + 1);
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (int pass = 0; pass < 2 && a.host.empty(); ++pass) {  // IPv4 first unless asked
      int fam = (family == "inet6") == (pass == 0) ? AF_INET6 : AF_INET;
      if (family.empty()) fam = pass == 0 ? AF_INET : AF_INET6;
      for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != fam || !(i->ifa_flags & IFF_UP)) continue;
        if (want_if.empty() ? (i->ifa_flags & IFF_LOOPBACK) != 0 : want_if != i->ifa_name) continue;
        char buf[INET6_ADDRSTRLEN] = {0};
        const void* addr = fam == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr)
                                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr);
        if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(static_cast<const in6_addr*>(addr))) continue;
        ::inet_ntop(fam, addr, buf, sizeof(buf));
        a.host = buf;
        break;
      }
    }
    ::freeifaddrs(list);
  }
  if (a.host.empty()) {
    if (!want_if.empty())
      return Status(Errc::kInvalidArgument, "SYMMEM_BOOTSTRAP_IFNAME: no usable address on interface '" + ifname + "'");
    a.host = "127.0.0.1";  // one node only
  }
  return a;
}

Result<UniqueIdInfo> create_unique_id(const StoreAddress& where, StoreSecurity security) {
  UniqueIdInfo info;
  security.magic = random_u64();
  security.secret = random_secret();
  SYMMEM_ASSIGN_OR_RETURN(auto server, TcpStoreServer::start(where.host, where.port, security));
  info.store = {where.host, server->port()};
  info.security = security;
  info.job_id = random_job_id();
  std::lock_guard<std::mutex> lk(g_hosted_mu);
  hosted()[security.magic] = std::move(server);
  SYMMEM_LOG(kDebug, "unique id: store at %s (%s), job %s", info.store.to_url().c_str(),
             StoreSecurity::mode_name(security.mode), info.job_id.c_str());
  return info;
}

std::unique_ptr<TcpStoreServer> adopt_hosted_store(uint64_t magic) {
  std::lock_guard<std::mutex> lk(g_hosted_mu);
  auto it = hosted().find(magic);
  if (it == hosted().end()) return nullptr;
  auto s = std::move(it->second);
  hosted().erase(it);
  return s;
}

}  // namespace symmem
