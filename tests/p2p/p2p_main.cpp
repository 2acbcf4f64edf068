// main() of the point-to-point test programs: GoogleTest over the OpenSHMEM C API (the
// default instance, started with shmem_init_thread(SHMEM_THREAD_MULTIPLE)). As in
// tests/mp: every PE runs the same tests in the same order, the verdict of each test is
// combined across PEs out of band over the bootstrap store, only PE 0 prints the summary
// (other PEs print their own failures), and every PE exits with the combined verdict.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/tcp_store.hpp"

namespace {

std::unique_ptr<symmem::Store> g_store;
int g_seq = 0;

bool all_passed(bool mine, std::string* failing) {
  if (!g_store) return mine;
  auto all = symmem::store_allgather(*g_store, "p2p/verdict/" + std::to_string(++g_seq), shmem_my_pe(),
                                     shmem_n_pes(), mine ? "1" : "0", 120);
  if (!all.ok()) {
    std::fprintf(stderr, "p2p: verdict exchange failed: %s\n", all.status().message().c_str());
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

class Verdicts : public testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed() && shmem_my_pe() != 0)
      std::fprintf(stderr, "[pe %d] %s:%d: %s\n", shmem_my_pe(), r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    std::string failing;
    bool ok = all_passed(info.result()->Passed(), &failing);
    if (!ok) any_failed_ = true;
    if (shmem_my_pe() == 0) {
      if (!ok)
        std::printf("[  FAILED  ] %s.%s on PE(s) %s of %d\n", info.test_suite_name(), info.name(), failing.c_str(),
                    shmem_n_pes());
      else
        std::printf("[       OK ] %s.%s (%d PEs)\n", info.test_suite_name(), info.name(), shmem_n_pes());
      std::fflush(stdout);
    }
  }
  bool any_failed_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto env = symmem::LaunchEnv::from_env();
  if (!env.ok()) {
    std::fprintf(stderr, "p2p: %s\n", env.status().message().c_str());
    return 2;
  }
  if (env->store) {
    auto c = symmem::TcpStoreClient::connect(*env->store, env->security, env->rank, 60);
    if (!c.ok()) {
      std::fprintf(stderr, "p2p: %s\n", c.status().message().c_str());
      return 2;
    }
    g_store = std::move(c).value();
  }
  int provided = -1;
  if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0 || provided != SHMEM_THREAD_MULTIPLE) {
    std::fprintf(stderr, "p2p: shmem_init_thread did not provide SHMEM_THREAD_MULTIPLE (%d)\n", provided);
    return 2;
  }
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (shmem_my_pe() != 0) delete listeners.Release(listeners.default_result_printer());
  auto* verdicts = new Verdicts();
  listeners.Append(verdicts);
  int rc = RUN_ALL_TESTS();
  bool ok = all_passed(rc == 0 && !verdicts->any_failed_, nullptr);
  shmem_finalize();
  return ok ? 0 : 1;
}
