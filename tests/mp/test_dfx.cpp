// The status page (runtime/dfx_page.hpp) as a peer reads it through Runtime::pe_status:
// a sleeping wait describes itself, collectives are numbered per team, addresses get names.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <thread>

#include "mp_env.hpp"

using mp::rt;

namespace {

// Polls `pe`'s page until pred(status) holds; fails after 20 s.
template <class Pred>
symmem::Runtime::PeStatus poll_until(int pe, Pred pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  symmem::Runtime::PeStatus st = rt().pe_status(pe);
  while (!pred(st) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    st = rt().pe_status(pe);
  }
  return st;
}

TEST(StatusPage, OwnPageBetweenCalls) {
  auto st = rt().pe_status(rt().my_pe());
  ASSERT_TRUE(st.available);
  EXPECT_EQ(st.state, "user code");
  EXPECT_EQ(st.call, "");
}

TEST(StatusPage, SleepingWaitIsDescribed) {
  if (rt().n_pes() < 2 || !mp::same_node(0, 1)) return;  // needs PEs 0 and 1 on one node
  auto flag = rt().alloc<int>(1);
  flag[0] = 0;
  rt().barrier_all();
  if (rt().my_pe() == 1) {
    rt().wait_until(flag.data(), symmem::Cmp::kEq, 7);
  } else if (rt().my_pe() == 0) {
    // (PE 1 may still be asleep in the barrier above for a moment.)
    auto st = poll_until(1, [](const auto& s) { return s.state == "waiting" && s.wait_call == "wait_until"; });
    EXPECT_EQ(st.state, "waiting");
    EXPECT_EQ(st.wait_call, "wait_until");
    EXPECT_EQ(st.wait_owner, 1);
    EXPECT_EQ(st.wait_addr, reinterpret_cast<uintptr_t>(rt().ptr(flag.data(), 1)));
    EXPECT_EQ(st.wait_width, sizeof(int));
    EXPECT_EQ(st.wait_cmp, int(symmem::Cmp::kEq));
    EXPECT_EQ(st.wait_expect, 7u);
    EXPECT_GE(st.waiting_s, 0.0);
    const uint64_t before = st.progress;
    rt().p(flag.data(), 7, 1);
    // The wait ends and says so: the page leaves "waiting" and the progress count moves.
    st = poll_until(1, [&](const auto& s) { return s.progress > before; });
    EXPECT_GT(st.progress, before);
  }
  rt().barrier_all();
  rt().free(flag);
}

// A thread of a PE reads its own PE's page while another thread of it sleeps in a wait
// (the record is written and read by two threads of one process: under ThreadSanitizer,
// mp.dfx_threads). The watcher makes no symmem call: it raises a word of its own PE's
// heap once it has seen the wait, and PE 0 ends the wait only then.
TEST(StatusPage, OwnWaitSeenByAnotherThread) {
  if (rt().n_pes() < 2 || !mp::same_node(0, 1)) return;  // needs PEs 0 and 1 on one node
  auto flag = rt().alloc<int>(2);  // [0]: the wait's word, [1]: PE 1's watcher has seen it
  flag[0] = flag[1] = 0;
  rt().barrier_all();
  if (rt().my_pe() == 1) {
    symmem::Runtime::PeStatus seen;
    std::thread watcher([&] {
      seen = poll_until(1, [](const auto& s) { return s.state == "waiting" && s.wait_call == "wait_until"; });
      std::atomic_ref<int>(flag[1]).store(1, std::memory_order_release);
    });
    rt().wait_until(flag.data(), symmem::Cmp::kEq, 9);
    watcher.join();
    EXPECT_EQ(seen.state, "waiting");
    EXPECT_EQ(seen.wait_call, "wait_until");
    EXPECT_EQ(seen.wait_owner, 1);
    EXPECT_EQ(seen.wait_addr, reinterpret_cast<uintptr_t>(rt().ptr(flag.data(), 1)));
    EXPECT_EQ(seen.wait_expect, 9u);
  } else if (rt().my_pe() == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (rt().g(flag.data() + 1, 1) == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rt().p(flag.data(), 9, 1);
  }
  rt().barrier_all();
  rt().free(flag);
}

TEST(StatusPage, PeerInBarrierIsSeen) {
  if (rt().n_pes() < 2 || !mp::same_node(0, 1)) return;  // needs PEs 0 and 1 on one node
  rt().barrier_all();
  const uint32_t mine = rt().pe_status(rt().my_pe()).world_collectives;
  if (rt().my_pe() == 1) {
    // PE 0 enters barrier number mine+1 and sleeps there until this PE arrives.
    auto st = poll_until(0, [&](const auto& s) { return s.world_collectives == mine + 1 && s.state == "waiting"; });
    EXPECT_EQ(st.world_collectives, mine + 1);
    EXPECT_EQ(st.state, "waiting");
    EXPECT_EQ(st.call, "barrier");
    EXPECT_EQ(st.last_collective, "barrier");
    EXPECT_FALSE(st.last_collective_done);
  }
  rt().barrier_all();
  auto st = rt().pe_status(rt().my_pe());
  EXPECT_EQ(st.world_collectives, mine + 1);
  EXPECT_EQ(st.last_collective, "barrier");
  EXPECT_TRUE(st.last_collective_done);
}

TEST(StatusPage, CollectivesAreNumberedOnTheWorldLane) {
  const uint32_t n0 = rt().pe_status(rt().my_pe()).world_collectives;
  auto a = rt().alloc<long>(8);  // one collective: malloc
  rt().barrier_all();
  rt().team_world().broadcast(a, a, 0);
  auto st = rt().pe_status(rt().my_pe());
  EXPECT_EQ(st.world_collectives, n0 + 3);
  EXPECT_EQ(st.last_collective, "broadcast");
  rt().free(a);
  EXPECT_EQ(rt().pe_status(rt().my_pe()).world_collectives, n0 + 4);
}

TEST(StatusPage, AddressesHaveNames) {
  auto a = rt().alloc<char>(65536);
  EXPECT_TRUE(std::regex_match(rt().describe(a.data() + 4096), std::regex("allocation #[0-9]+ \\(64K\\) \\+4096")))
      << rt().describe(a.data() + 4096);
  EXPECT_TRUE(rt().set_name(a.data() + 10, "halo"));
  EXPECT_TRUE(std::regex_match(rt().describe(a.data() + 100), std::regex("'halo' \\(allocation #[0-9]+, 64K\\) \\+100")))
      << rt().describe(a.data() + 100);
  char local = 0;
  EXPECT_NE(rt().describe(&local).find("not symmetric"), std::string::npos) << rt().describe(&local);
  rt().free(a);
}

}  // namespace
