// main() of the multi-PE GoogleTest programs. Every PE runs the same tests in the same
// order; after each test the PEs combine their verdicts out of band, over the bootstrap
// store (never over the collectives under test). Only PE 0 prints; a test failed on any
// PE fails on all, and every PE exits with the combined verdict.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/tcp_store.hpp"
#include "mp_env.hpp"

namespace mp {

symmem::Runtime* g_rt = nullptr;
std::unique_ptr<symmem::Store> g_store;
static int g_seq = 0;

symmem::Runtime& rt() { return *g_rt; }

// Out-of-band all-reduce of a boolean (true = passed) over the store.
bool all_passed(bool mine, std::string* failing) {
  if (!g_store) return mine;
  auto all = symmem::store_allgather(*g_store, "mp/verdict/" + std::to_string(++g_seq), g_rt->my_pe(),
                                     g_rt->n_pes(), mine ? "1" : "0", 120);
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
      if (g_rt->my_pe() == 0)
        std::printf("[  FAILED  ] %s.%s on PE(s) %s of %d\n", info.test_suite_name(), info.name(), failing.c_str(),
                    g_rt->n_pes());
    } else if (g_rt->my_pe() == 0) {
      std::printf("[       OK ] %s.%s (%d PEs)\n", info.test_suite_name(), info.name(), g_rt->n_pes());
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
  auto* rt = new symmem::Runtime();
  mp::g_rt = rt;
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  // Each PE's own failure details still go to stderr; the summary is PE 0's.
  if (rt->my_pe() != 0) delete listeners.Release(listeners.default_result_printer());
  auto* verdicts = new mp::VerdictListener();
  listeners.Append(verdicts);
  int rc = RUN_ALL_TESTS();
  bool ok = mp::all_passed(rc == 0 && !verdicts->any_failed_, nullptr);
  delete rt;
  return ok ? 0 : 1;
}
