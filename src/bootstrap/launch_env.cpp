// Reading the launcher's environment contract (launch_env.hpp) and the job's random ids.
#include "bootstrap/launch_env.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.hpp"

namespace symmem {

namespace {

constexpr size_t kMaxJobId = 32;

void fill_random(void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // getrandom cannot fail on a supported kernel once the pool is ready; if it does
      // there is nothing sensible to return.
      SYMMEM_LOG(kError, "getrandom failed: %s", std::strerror(errno));
      std::abort();
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
}

Status bad(const char* name, const std::string& value, const std::string& why) {
  return Status(Errc::kInvalidArgument, std::string(name) + "='" + value + "': " + why);
}

// Decimal, no sign, no spaces, fits an int.
bool parse_int(const std::string& s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool valid_job_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxJobId) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

Result<std::string> read_job_id(const char* v) {
  if (!valid_job_id(v))
    return bad(kEnvJobId, v, "a job id is 1 to " + std::to_string(kMaxJobId) + " characters of [a-z0-9]");
  return std::string(v);
}

}  // namespace

uint64_t random_u64() {
  uint64_t v;
  fill_random(&v, sizeof(v));
  return v;
}

std::string random_job_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  constexpr unsigned kN = sizeof(kAlphabet) - 1;  // 36
  std::string id;
  while (id.size() < 12) {
    unsigned char buf[16];
    fill_random(buf, sizeof(buf));
    for (unsigned char b : buf) {
      // Rejection keeps the characters uniform: 252 = 7 * 36.
      if (b < 252 && id.size() < 12) id.push_back(kAlphabet[b % kN]);
    }
  }
  return id;
}

Result<StoreSecurity> security_from_env() {
  StoreSecurity sec;
  if (const char* t = std::getenv(kEnvTls)) {
    auto m = StoreSecurity::parse_mode(t);
    if (!m.ok()) return Status(Errc::kInvalidArgument, std::string(kEnvTls) + ": " + m.status().message());
    sec.mode = *m;
  }
  if (sec.mode == StoreSecurity::Mode::kCert) sec.cert_paths_from_env();
  return sec;
}

Result<LaunchEnv> LaunchEnv::from_env() {
  LaunchEnv e;
  const char* rank = std::getenv(kEnvRank);
  const char* npes = std::getenv(kEnvNpes);
  const char* store = std::getenv(kEnvStore);
  const char* magic = std::getenv(kEnvMagic);
  const char* job = std::getenv(kEnvJobId);

  if (!rank) {
    if (npes) {
      int n = 0;
      if (!parse_int(npes, &n) || n != 1)
        return bad(kEnvNpes, npes, std::string(kEnvRank) + " is not set (a launcher sets both)");
    }
    if (job) {
      SYMMEM_ASSIGN_OR_RETURN(e.job_id, read_job_id(job));
    } else {
      e.job_id = random_job_id();
    }
    return e;
  }

  if (!parse_int(rank, &e.rank)) return bad(kEnvRank, rank, "not a PE number");
  if (!npes)
    return Status(Errc::kInvalidArgument,
                  std::string(kEnvNpes) + " is not set but " + kEnvRank + "='" + rank + "' is");
  if (!parse_int(npes, &e.npes) || e.npes < 1) return bad(kEnvNpes, npes, "not a positive PE count");
  if (e.rank >= e.npes)
    return bad(kEnvRank, rank, "out of range for " + std::string(kEnvNpes) + "=" + std::to_string(e.npes));

  if (!store) return Status(Errc::kInvalidArgument, std::string(kEnvStore) + " is not set but " + kEnvRank + " is");
  auto addr = StoreAddress::parse(store);
  if (!addr.ok()) return Status(Errc::kInvalidArgument, std::string(kEnvStore) + ": " + addr.status().message());
  e.store = *addr;

  if (!magic) return Status(Errc::kInvalidArgument, std::string(kEnvMagic) + " is not set but " + kEnvRank + " is");
  std::string m = magic;
  if (m.size() != 16) return bad(kEnvMagic, m, "expected 16 hex digits");
  uint64_t mv = 0;
  for (char c : m) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return bad(kEnvMagic, m, "expected 16 hex digits");
    mv = (mv << 4) | static_cast<uint64_t>(d);
  }
  e.magic = mv;
  SYMMEM_ASSIGN_OR_RETURN(e.security, security_from_env());
  e.security.magic = mv;
  if (e.security.mode == StoreSecurity::Mode::kPsk) {
    const char* secret = std::getenv(kEnvSecret);
    if (!secret)
      return Status(Errc::kInvalidArgument,
                    std::string(kEnvSecret) + " is not set but " + kEnvRank + " is, and the store uses TLS: the "
                    "launcher must pass the job's secret (symmem-run does), or TLS must be switched off everywhere "
                    "with " + kEnvTls + "=off");
    if (!from_hex(secret, e.security.secret.data(), e.security.secret.size()))
      return Status(Errc::kInvalidArgument, std::string(kEnvSecret) + ": expected 64 hex digits");
  }

  // PEs name their shared-memory objects after the job id, so they must all see the same.
  if (!job) return Status(Errc::kInvalidArgument, std::string(kEnvJobId) + " is not set but " + kEnvRank + " is");
  SYMMEM_ASSIGN_OR_RETURN(e.job_id, read_job_id(job));
  e.from_launcher = true;
  return e;
}

}  // namespace symmem
