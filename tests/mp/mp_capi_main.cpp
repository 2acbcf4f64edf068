// main() of the multi-PE GoogleTest programs that test the OpenSHMEM C API: the same
// protocol as mp_main.cpp (every PE runs every test; verdicts are combined out of band
// over the bootstrap store; only PE 0 prints), with shmem_init / shmem_finalize in place
// of a symmem::Runtime.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/tcp_store.hpp"

namespace mp {

static std::unique_ptr<symmem::Store> g_store;
static int g_seq = 0;

bool all_passed(bool mine, std::string* failing) {
  if (!g_store) return mine;
  auto all = symmem::store_allgather(*g_store, "mpc/verdict/" + std::to_string(++g_seq), shmem_my_pe(),
                                     shmem_n_pes(), mine ? "1" : "0", 120);
  if (!all.ok()) {
    std::fprintf(stderr, "mp: verdict exchange failed: %s\n", all.status().message().c_str());
    std::exit(3);
  }
  bool ok = true;
  for (size_t i = 0; i < all->size(); ++i)
    if ((*all)[i] != "1") {
      ok = false;
      if (failing) *failing += (failing->empty() ? "" : ", ") + std::to_string(i);
    }
  return ok;
}

class VerdictListener : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& info) override {
    std::string failing;
    bool ok = all_passed(info.result()->Passed(), &failing);
    if (!ok) {
      any_failed_ = true;
      if (shmem_my_pe() == 0)
        std::printf("[  FAILED  ] %s.%s on PE(s) %s of %d\n", info.test_suite_name(), info.name(), failing.c_str(),
                    shmem_n_pes());
    } else if (shmem_my_pe() == 0) {
      std::printf("[       OK ] %s.%s (%d PEs)\n", info.test_suite_name(), info.name(), shmem_n_pes());
    }
    std::fflush(stdout);
  }
  bool any_failed_ = false;
};

}  // namespace mp

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto env = symmem::LaunchEnv::from_env();
  if (!env.ok()) {
    std::fprintf(stderr, "mp: %s\n", env.status().message().c_str());
    return 2;
  }
  if (env->store) {
    auto c = symmem::TcpStoreClient::connect(*env->store, env->security, env->rank, 60);
    if (!c.ok()) {
      std::fprintf(stderr, "mp: %s\n", c.status().message().c_str());
      return 2;
    }
    mp::g_store = std::move(c).value();
  }
  shmem_init();
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (shmem_my_pe() != 0) delete listeners.Release(listeners.default_result_printer());
  auto* verdicts = new mp::VerdictListener();
  listeners.Append(verdicts);
  int rc = RUN_ALL_TESTS();
  bool ok = mp::all_passed(rc == 0 && !verdicts->any_failed_, nullptr);
  shmem_finalize();
  return ok ? 0 : 1;
}
