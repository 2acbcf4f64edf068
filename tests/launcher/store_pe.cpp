// A PE that checks the launcher's environment contract and that the job's store works
// across processes: connect, barrier, allgather of the rank. Prints "pe R ok" and exits 0;
// exits 10.. with a message naming what failed otherwise.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store.hpp"

namespace {

int fail(int code, const std::string& what) {
  std::fprintf(stderr, "store_pe: %s\n", what.c_str());
  return code;
}

bool all_of(const char* s, const char* allowed) {
  if (s == nullptr || *s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (std::strchr(allowed, *s) == nullptr) return false;
  }
  return true;
}

}  // namespace

int main() {
  using namespace symmem;
  const char* rank_s = std::getenv(kEnvRank);
  const char* npes_s = std::getenv(kEnvNpes);
  const char* store_s = std::getenv(kEnvStore);
  const char* magic_s = std::getenv(kEnvMagic);
  const char* job_s = std::getenv(kEnvJobId);
  if (!all_of(rank_s, "0123456789") || !all_of(npes_s, "0123456789")) return fail(10, "bad SYMMEM_RANK/NPES");
  int rank = std::atoi(rank_s), npes = std::atoi(npes_s);
  if (rank < 0 || rank >= npes) return fail(10, "SYMMEM_RANK out of range");
  if (magic_s == nullptr || std::strlen(magic_s) != 16 || !all_of(magic_s, "0123456789abcdef")) {
    return fail(10, "SYMMEM_STORE_MAGIC is not 16 hex digits");
  }
  if (!all_of(job_s, "abcdefghijklmnopqrstuvwxyz0123456789")) return fail(10, "SYMMEM_JOB_ID is not [a-z0-9]+");
  if (store_s == nullptr || std::strncmp(store_s, "tcp://127.0.0.1:", 16) != 0) return fail(10, "bad SYMMEM_STORE");
  uint64_t magic = std::strtoull(magic_s, nullptr, 16);

  auto env = LaunchEnv::from_env();
  if (!env.ok()) return fail(11, "LaunchEnv::from_env: " + env.status().message());
  if (env->rank != rank || env->npes != npes || env->magic != magic || env->job_id != job_s || !env->from_launcher) {
    return fail(11, "LaunchEnv::from_env disagrees with the environment");
  }

  auto addr = StoreAddress::parse(store_s);
  if (!addr.ok()) return fail(12, "StoreAddress::parse: " + addr.status().message());
  auto client = TcpStoreClient::connect(*addr, env->security, rank, 30);
  if (!client.ok()) return fail(12, "connect: " + client.status().message());
  Store& store = **client;

  if (Status s = store_barrier(store, "launcher-test/barrier", rank, npes, 30); !s.ok()) {
    return fail(13, "barrier: " + s.message());
  }
  auto all = store_allgather(store, "launcher-test/ranks", rank, npes, std::to_string(rank), 30);
  if (!all.ok()) return fail(14, "allgather: " + all.status().message());
  if (static_cast<int>(all->size()) != npes) return fail(14, "allgather returned the wrong count");
  for (int i = 0; i < npes; ++i) {
    if ((*all)[static_cast<size_t>(i)] != std::to_string(i))
      return fail(14, "allgather: wrong value at " + std::to_string(i));
  }
  std::printf("pe %d ok npes %d job %s\n", rank, npes, job_s);
  return 0;
}
