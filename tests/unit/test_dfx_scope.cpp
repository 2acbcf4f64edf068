// The status page's record of collectives (runtime/dfx.hpp CollScope): numbered per lane,
// nested ones folded into the outer one, described in full only once a wait asks for it,
// and by the thread whose collective it is.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/dfx.hpp"
#include "dfx/hang.hpp"
#include "runtime/dfx_gpu.hpp"

namespace symmem::dfx {
namespace {

Brief newest(const Page& p, int lane) {
  const uint32_t n = p.lane_seq[lane].load();
  return brief_of(p.lane_hist[lane][n % kLaneHist].load());
}

// A wait going to sleep, some frames below its collective.
[[gnu::noinline]] int wait_sleeps(Dfx& d) {
  volatile char pad[256] = {};
  (void)pad;
  return d.coll_describe();
}

TEST(CollScope, NestedOnesAreThePartOfTheOuter) {
  Dfx d;
  const Page& p = *d.page();
  {
    CollScope bcast(d, Op::kBroadcast, 0, 0, 1, 4, 0, CollArgs{2, 64});
    EXPECT_FALSE(newest(p, 0).done);
    for (int i = 0; i < 3; ++i) CollScope sync(d, Op::kSync, 0, 0, 1, 4, 0);  // its syncs
    EXPECT_EQ(p.lane_seq[0].load(), 1u);
  }
  const Brief b = newest(p, 0);
  EXPECT_EQ(b.op, Op::kBroadcast);
  EXPECT_EQ(b.team_seq, 1u);
  EXPECT_TRUE(b.done);
  for (int i = 0; i < 20; ++i) CollScope barrier(d, Op::kBarrier, 0, 0, 1, 4, 0);
  EXPECT_EQ(p.lane_seq[0].load(), 21u);
  // The lane keeps its last kLaneHist, in brief; none waited, so none in full.
  for (uint32_t s = 21 - kLaneHist + 1; s <= 21; ++s) EXPECT_EQ(brief_of(p.lane_hist[0][s % kLaneHist].load()).team_seq, s);
  EXPECT_EQ(p.coll_count.load(), 0u);
}

TEST(CollScope, AWaitDescribesItsCollectiveInFull) {
  Dfx d;
  Page& p = *d.page();
  p.state.store(uint32_t(State::kUser));
  d.lane_geometry(3, 1, 2, 3);  // a split team: PEs 1, 3, 5
  {
    CollScope bcast(d, Op::kBroadcast, 3, 1, 2, 3, 1, CollArgs{5, 4096});
    EXPECT_EQ(p.state.load(), uint32_t(State::kUser));  // not yet: nobody could have looked
    EXPECT_EQ(wait_sleeps(d), 3);
    EXPECT_EQ(wait_sleeps(d), 3);  // once
    ASSERT_EQ(p.coll_count.load(), 1u);
    const CollRecord& r = p.colls[0];
    EXPECT_EQ(r.op, uint16_t(Op::kBroadcast));
    EXPECT_EQ(r.lane, 3);
    EXPECT_EQ(r.team_seq, 1u);
    EXPECT_EQ(r.root, 5);
    EXPECT_EQ(r.bytes, 4096u);
    EXPECT_EQ(r.team_start, 1);
    EXPECT_EQ(r.team_stride, 2);
    EXPECT_EQ(r.team_size, 3);
    EXPECT_EQ(r.done.load(), 0u);
    EXPECT_EQ(p.state.load(), uint32_t(State::kInCall));
    EXPECT_STREQ(p.names[p.call_id.load()], "broadcast");
  }
  EXPECT_EQ(p.colls[0].done.load(), 1u);
  EXPECT_EQ(p.state.load(), uint32_t(State::kUser));
  EXPECT_EQ(p.call_id.load(), 0u);
  EXPECT_EQ(wait_sleeps(d), -1);  // in no collective now
}

TEST(CollScope, AnotherThreadsWaitIsNotPutInIt) {
  Dfx d;
  Page& p = *d.page();
  std::atomic<int> step{0};
  int inner = -2;
  std::thread t([&] {
    CollScope barrier(d, Op::kBarrier, 0, 0, 1, 2, 0);
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    inner = wait_sleeps(d);
  });
  while (step.load() != 1) std::this_thread::yield();
  // This thread waits (a wait_until of its own) while the other is inside a barrier.
  EXPECT_EQ(wait_sleeps(d), -1);
  EXPECT_EQ(p.coll_count.load(), 0u);
  // Two threads, two teams: each wait finds its own.
  {
    CollScope sync(d, Op::kSync, 2, 0, 1, 2, 0);
    EXPECT_EQ(wait_sleeps(d), 2);
    step = 2;
    t.join();
  }
  EXPECT_EQ(inner, 0);
  EXPECT_EQ(p.coll_count.load(), 2u);
}

// A PE that entered a barrier and goes to sleep in it between the hang report's two looks
// (its collective described only then) has not moved: the report says STALL (PE 1 runs
// user code), not PROGRESS.
TEST(CollScope, DescribedBetweenTwoLooksIsNotProgress) {
  Dfx pe[2];
  for (int i = 0; i < 2; ++i) {
    Page& p = *pe[i].page();
    p.magic = kPageMagic;
    p.version = kPageVersion;
    p.rank = i;
    p.npes = 2;
    p.state.store(uint32_t(State::kUser));
  }
  std::atomic<int> step{0};
  std::thread t([&] {
    CollScope barrier(pe[0], Op::kBarrier, 0, 0, 1, 2, 0);
    step = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // during the look
    WaitDesc w;
    w.op = Op::kSync;
    w.owner = 0;
    w.expect = 1;
    const bool held = pe[0].wait_sleep(w);
    while (step.load() != 2) std::this_thread::yield();
    pe[0].wait_done(held);
  });
  while (step.load() != 1) std::this_thread::yield();
  hang::Source src;
  for (int i = 0; i < 2; ++i) {
    hang::PeInfo pi;
    pi.rank = i;
    pi.page = pe[i].page();
    src.pes.push_back(pi);
  }
  hang::Options opt;
  opt.trigger = "test";
  opt.look_s = 0.4;
  opt.json_path = "-";
  const hang::Report r = hang::build(src, opt);
  step = 2;
  t.join();
  EXPECT_EQ(r.verdict, "STALL") << r.text;
  EXPECT_NE(r.text.find("barrier #1 on TEAM_WORLD"), std::string::npos) << r.text;
}

// Threads of a PE in collectives on their own teams at once, each described in full (as
// with a tool on): each keeps its own ring slot while it is inside, also when the ring goes
// round under it, and never writes another's (each checks its record with every look).
TEST(CollScope, ThreadsInCollectivesAtOnceKeepTheirOwnRecords) {
  Dfx d;
  Page& p = *d.page();
  constexpr int kThreads = 4, kRounds = 5000;
  std::atomic<int> bad{0};
  // The records of `lane` open now, read as the page's readers do (the sequence word even
  // and unchanged around the fields).
  auto open_on = [&p](int lane, Op op, uint32_t seq) {
    int mine = 0;
    for (CollRecord& r : p.colls) {
      for (;;) {
        const uint32_t s0 = r.seq.load(std::memory_order_acquire);
        if (s0 & 1) continue;
        auto ld = [](auto& field) { return std::atomic_ref(field).load(std::memory_order_relaxed); };
        const bool open = s0 != 0 && r.done.load(std::memory_order_relaxed) == 0 && ld(r.lane) == lane;
        const bool same = ld(r.op) == uint16_t(op) && ld(r.team_seq) == seq;
        std::atomic_thread_fence(std::memory_order_acquire);
        if (r.seq.load(std::memory_order_relaxed) != s0) continue;
        if (open) mine += same ? 1 : 100;
        break;
      }
    }
    return mine;
  };
  auto run = [&](int lane, Op op) {
    for (int i = 1; i <= kRounds; ++i) {
      CollScope c(d, op, lane, 0, 1, 2, 0);
      if (wait_sleeps(d) != lane) bad++;
      for (int look = 0; look < 3; ++look) {
        if (open_on(lane, op, uint32_t(i)) != 1) bad++;
        std::this_thread::yield();
      }
    }
  };
  constexpr Op kOps[kThreads] = {Op::kSync, Op::kBroadcast, Op::kReduce, Op::kBarrier};
  std::vector<std::thread> ts;
  for (int t = 1; t < kThreads; ++t) ts.emplace_back(run, 2 + t, kOps[t]);
  run(2, kOps[0]);
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(p.coll_count.load(), uint64_t(kThreads) * kRounds);
  for (const CollRecord& r : p.colls) EXPECT_EQ(r.done.load(), 1u);
}

// More threads in collectives at once than the ring has records (one per lane, the threads
// entering one after the other): the ring's 64 are held, the next collective keeps its
// words but no record, and every one leaves cleanly.
TEST(CollScope, MoreThreadsInCollectivesThanTheRingHolds) {
  static_assert(kTeamLanes > kCollRing);
  Dfx d;
  Page& p = *d.page();
  p.state.store(uint32_t(State::kUser));
  std::atomic<int> entered{0}, go{0};
  std::vector<int> found(kTeamLanes, -2);
  std::vector<std::thread> ts;
  for (int lane = 0; lane < kTeamLanes; ++lane) {
    ts.emplace_back([&, lane] {
      CollScope c(d, Op::kBarrier, lane, 0, 1, 2, 0);
      found[size_t(lane)] = wait_sleeps(d);
      entered++;
      while (go.load() == 0) std::this_thread::yield();
    });
    while (entered.load() != lane + 1) std::this_thread::yield();
  }
  int described = 0, open = 0;
  for (int lane = 0; lane < kTeamLanes; ++lane) {
    EXPECT_EQ(found[size_t(lane)], lane);
    described += (p.lane_hist[lane][1].load() & kBriefDescribed) != 0;
  }
  for (const CollRecord& r : p.colls) open += r.seq.load() != 0 && r.done.load() == 0;
  EXPECT_EQ(described, kCollRing);
  EXPECT_EQ(open, kCollRing);
  EXPECT_EQ(p.lane_hist[kTeamLanes - 1][1].load() & kBriefDescribed, 0u);  // the last one in
  go = 1;
  for (auto& t : ts) t.join();
  for (const CollRecord& r : p.colls) EXPECT_EQ(r.done.load(), 1u);
  for (int lane = 0; lane < kTeamLanes; ++lane) EXPECT_TRUE(newest(p, lane).done);
  EXPECT_EQ(p.state.load(), uint32_t(State::kUser));
}

// An expired device wait's record (dfx_gpu.hpp) as every reader names it, for each kind of
// word, and only once its GPU has finished writing it (state 1).
TEST(GpuWait, NamedOnceWrittenWhole) {
  Dfx d;
  GpuWaitArea& a = d.page()->gpu;
  EXPECT_EQ(gpu_wait_text(a), "");
  a.heap_base = 0x7f0000000000ull;
  a.heap_size = 1ull << 30;
  a.sync_begin = 4096;
  a.sync_end = 4096 + (128 << 10);
  shmemx_device_wait_record_t& r = a.rec;
  r.pe = 2;
  r.peer = 1;
  r.cmp = 3;  // SHMEM_CMP_GE
  r.addr = a.heap_base + 2 * a.heap_size + 4096 + 8 * 33;
  r.expected = 7;
  r.seen = 6;
  r.waited_ns = 10000000000ull;
  r.block = 3;
  r.thread = 0;
  r.state = 2;  // being written
  EXPECT_EQ(gpu_wait_text(a), "");
  r.state = 1;
  EXPECT_EQ(gpu_wait_text(a),
            "PE 2: a GPU wait expired after 10.0 s in block 3 thread 0: waited for the word at 0x7f0080001108 (a sync "
            "pad of the device collectives, written by PE 1) to be >= 7, last seen 6");
  r.peer = -1;
  r.cmp = 0;
  r.addr = a.heap_base + 2 * a.heap_size + 0x200040;
  EXPECT_EQ(gpu_wait_text(a),
            "PE 2: a GPU wait expired after 10.0 s in block 3 thread 0: waited for the word at 0x7f0080200040 (a "
            "signal word at +0x200040 of its device heap slot) to be == 7, last seen 6");
  r.addr = a.heap_base + a.heap_size + 0x300000;
  EXPECT_NE(gpu_wait_text(a).find("(a signal word at +0x300000 of PE 1's device heap slot)"), std::string::npos);
}

// The hang report names it below the PEs' groups, and in the PE's JSON.
TEST(GpuWait, InTheHangReport) {
  Dfx pe[2];
  for (int i = 0; i < 2; ++i) {
    Page& p = *pe[i].page();
    p.magic = kPageMagic;
    p.version = kPageVersion;
    p.rank = i;
    p.npes = 2;
    p.state.store(uint32_t(State::kUser));
  }
  shmemx_device_wait_record_t& r = pe[1].page()->gpu.rec;
  r.pe = 1;
  r.peer = 0;
  r.cmp = 3;
  r.addr = 0x1000;
  r.expected = 1;
  r.waited_ns = 2500000000ull;
  r.state = 1;
  hang::Source src;
  for (int i = 0; i < 2; ++i) {
    hang::PeInfo pi;
    pi.rank = i;
    pi.page = pe[i].page();
    src.pes.push_back(pi);
  }
  hang::Options opt;
  opt.trigger = "test";
  opt.look_s = 0;
  opt.json_path = "-";
  const hang::Report rep = hang::build(src, opt);
  EXPECT_NE(rep.text.find("\n  PE 1: a GPU wait expired after 2.5 s in block 0 thread 0: waited for the word at 0x1000 "
                          "(not in the device heap, written by PE 0) to be >= 1, last seen 0\n"),
            std::string::npos)
      << rep.text;
  EXPECT_NE(rep.json.find("\"gpu_wait\":{\"peer\":0,\"addr\":\"0x1000\""), std::string::npos) << rep.json;
  EXPECT_EQ(rep.json.find("gpu_wait"), rep.json.rfind("gpu_wait"));  // PE 1's only
}

}  // namespace
}  // namespace symmem::dfx
