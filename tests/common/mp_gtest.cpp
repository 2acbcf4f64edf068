// See mp_gtest.hpp.
#include "mp_gtest.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/tcp_store.hpp"

namespace mp {
namespace {

const Program* g_program = nullptr;
std::unique_ptr<symmem::Store> g_store;
int g_me = 0;
int g_npes = 1;
int g_seq = 0;

class VerdictListener : public testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (g_program->peer_failures_to_stderr && r.failed() && g_me != 0)
      std::fprintf(stderr, "[pe %d] %s:%d: %s\n", g_me, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    std::string failing;
    bool ok = all_passed(info.result()->Passed(), &failing);
    if (!ok) any_failed_ = true;
    if (g_me == 0) {
      if (!ok)
        std::printf("[  FAILED  ] %s.%s on PE(s) %s of %d\n", info.test_suite_name(), info.name(), failing.c_str(),
                    g_npes);
      else
        std::printf("[       OK ] %s.%s (%d PEs)\n", info.test_suite_name(), info.name(), g_npes);
    }
    std::fflush(stdout);
  }
  bool any_failed_ = false;
};

}  // namespace

bool all_passed(bool mine, std::string* failing) {
  if (!g_store) return mine;
  auto all = symmem::store_allgather(*g_store, std::string(g_program->name) + "/verdict/" + std::to_string(++g_seq),
                                     g_me, g_npes, mine ? "1" : "0", 120);
  if (!all.ok()) {
    std::fprintf(stderr, "%s: verdict exchange failed: %s\n", g_program->name, all.status().message().c_str());
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

int run_all_tests(int argc, char** argv, const Program& program) {
  g_program = &program;
  testing::InitGoogleTest(&argc, argv);
  auto env = symmem::LaunchEnv::from_env();
  if (!env.ok()) {
    std::fprintf(stderr, "%s: %s\n", program.name, env.status().message().c_str());
    return 2;
  }
  if (env->store) {
    auto c = symmem::TcpStoreClient::connect(*env->store, env->security, env->rank, 60);
    if (!c.ok()) {
      std::fprintf(stderr, "%s: %s\n", program.name, c.status().message().c_str());
      return 2;
    }
    g_store = std::move(c).value();
  }
  if (int rc = program.start(&g_me, &g_npes); rc != 0) return rc;
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  // PE 0's printer prints the summary and its own failures; the other PEs' are off.
  if (g_me != 0) delete listeners.Release(listeners.default_result_printer());
  auto* verdicts = new VerdictListener();
  listeners.Append(verdicts);
  int rc = RUN_ALL_TESTS();
  bool ok = all_passed(rc == 0 && !verdicts->any_failed_, nullptr);
  program.stop();
  return ok ? 0 : 1;
}

}  // namespace mp
