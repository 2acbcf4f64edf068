// Foundation over the C++ API: symmetric allocation, put/get, p/g, nbi + quiet, fence,
// barriers, ptr, exhaustion. Runs at every PE count under symmem-run.
#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <numeric>
#include <vector>

#include "mp_env.hpp"

using mp::rt;

namespace {

int right(int k = 1) { return (rt().my_pe() + k) % rt().n_pes(); }
int left(int k = 1) { return (rt().my_pe() - k % rt().n_pes() + rt().n_pes()) % rt().n_pes(); }

TEST(Foundation, PeNumbering) {
  EXPECT_GE(rt().my_pe(), 0);
  EXPECT_LT(rt().my_pe(), rt().n_pes());
  for (int pe = 0; pe < rt().n_pes(); ++pe) EXPECT_TRUE(rt().pe_accessible(pe));
  EXPECT_FALSE(rt().pe_accessible(-1));
  EXPECT_FALSE(rt().pe_accessible(rt().n_pes()));
}

TEST(Foundation, AllocationIsSymmetricAndAligned) {
  auto a = rt().alloc<long>(100);
  auto b = rt().alloc<char>(3);
  auto c = rt().alloc<double>(1000);
  for (auto* p : {static_cast<void*>(a.data()), static_cast<void*>(b.data()), static_cast<void*>(c.data())})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  // Every PE tells its right neighbour where its block is. Symmetric means the same offset
  // in every PE's heap: PE p's heap sits at G + p*H in every process.
  auto addrs = rt().alloc<uintptr_t>(3);
  uintptr_t mine[3] = {reinterpret_cast<uintptr_t>(a.data()), reinterpret_cast<uintptr_t>(b.data()),
                       reinterpret_cast<uintptr_t>(c.data())};
  rt().put(addrs.data(), mine, 3, right());
  rt().barrier_all();
  const intptr_t shift = (intptr_t(left()) - rt().my_pe()) * intptr_t(rt().heap_size());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(intptr_t(addrs[i]) - intptr_t(mine[i]), shift);
  rt().free(addrs);
  rt().free(c);
  rt().free(b);
  rt().free(a);
}

TEST(Foundation, PutGetRingAllSizes) {
  const size_t max = 8 << 20;
  auto buf = rt().alloc<unsigned char>(max + 64);
  std::vector<unsigned char> src(max + 64), back(max + 64);
  for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(63), size_t(64), size_t(65), size_t(4096),
                   size_t(100003), max}) {
    for (size_t off : {size_t(0), size_t(3)}) {
      for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(rt().my_pe() * 31 + i * 7 + n);
      rt().put(buf.data() + off, src.data(), n, right());
      rt().barrier_all();
      int from = left();
      bool ok = true;
      for (size_t i = 0; i < n && ok; ++i)
        ok = buf[off + i] == static_cast<unsigned char>(from * 31 + i * 7 + n);
      EXPECT_TRUE(ok) << "put of " << n << " bytes at offset " << off << " from PE " << from;
      // Get it back from the right neighbour: it holds what I put there.
      rt().get(back.data(), buf.data() + off, n, right());
      EXPECT_EQ(std::memcmp(back.data(), src.data(), n), 0) << "get of " << n << " bytes";
      rt().barrier_all();
    }
  }
  rt().free(buf);
}

TEST(Foundation, TypedPAndG) {
  auto l = rt().alloc<long>(1);
  auto i = rt().alloc<int>(1);
  auto d = rt().alloc<double>(1);
  rt().p(l.data(), 1000L + rt().my_pe(), right());
  rt().p(i.data(), -7 * rt().my_pe(), right());
  rt().p(d.data(), 0.5 + rt().my_pe(), right());
  rt().barrier_all();
  EXPECT_EQ(l[0], 1000L + left());
  EXPECT_EQ(i[0], -7 * left());
  EXPECT_EQ(d[0], 0.5 + left());
  EXPECT_EQ(rt().g(l.data(), right()), 1000L + rt().my_pe());
  EXPECT_EQ(rt().g(d.data(), right()), 0.5 + rt().my_pe());
  rt().barrier_all();
  rt().free(d);
  rt().free(i);
  rt().free(l);
}

TEST(Foundation, NbiCompletesAtQuiet) {
  const size_t n = 1 << 16;
  auto buf = rt().alloc<int>(n);
  std::vector<int> src(n, rt().my_pe() + 1), dst(n, -1);
  rt().put_nbi(buf.data(), src.data(), n * sizeof(int), right());
  rt().quiet();
  rt().barrier_all();
  EXPECT_EQ(buf[0], left() + 1);
  EXPECT_EQ(buf[n - 1], left() + 1);
  rt().get_nbi(dst.data(), buf.data(), n * sizeof(int), right());
  rt().quiet();
  EXPECT_EQ(dst[n / 2], rt().my_pe() + 1);
  rt().barrier_all();
  rt().free(buf);
}

// Message passing: data, fence, flag. The receiver must never see the flag without the data.
TEST(Foundation, FenceOrdersDataBeforeFlag) {
  const int iters = 200;
  auto data = rt().alloc<long>(512);
  auto flag = rt().alloc<long>(1);
  flag[0] = 0;
  rt().barrier_all();
  std::vector<long> src(512);
  int bad = 0;
  for (int it = 1; it <= iters; ++it) {
    for (auto& x : src) x = it * 1000 + rt().my_pe();
    rt().put(data.data(), src.data(), 512, right());
    rt().fence();
    rt().p(flag.data(), long(it), right());
    // Wait for my left neighbour's flag, then check its data.
    while (__atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) < it) sched_yield();  // PEs may outnumber cores
    for (int k = 0; k < 512; ++k) bad += data[k] != it * 1000 + left();
    rt().barrier_all();
  }
  EXPECT_EQ(bad, 0);
  rt().free(flag);
  rt().free(data);
}

TEST(Foundation, BarrierLoopCountsEveryIteration) {
  auto counter = rt().alloc<long>(1);
  counter[0] = 0;
  rt().barrier_all();
  const int iters = 10000;
  for (int it = 1; it <= iters; ++it) {
    rt().p(counter.data(), long(it), right());
    rt().barrier_all();
    ASSERT_EQ(counter[0], it) << "barrier let PE " << rt().my_pe() << " through early";
    rt().sync_all();
  }
  rt().free(counter);
}

TEST(Foundation, PtrGivesLoadStoreAccess) {
  auto v = rt().alloc<int>(4);
  v[0] = rt().my_pe() * 10;
  rt().barrier_all();
  for (int pe = 0; pe < rt().n_pes(); ++pe) {
    int* p = static_cast<int*>(rt().ptr(v.data(), pe));
    EXPECT_TRUE(rt().addr_accessible(v.data(), pe));  // reachable by RMA on any node
    if (!mp::on_my_node(pe)) {
      EXPECT_EQ(p, nullptr) << "ptr() to PE " << pe << " of another node";
      continue;
    }
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, pe * 10);
  }
  int local = 0;
  EXPECT_FALSE(rt().addr_accessible(&local, 0));
  EXPECT_EQ(rt().ptr(&local, 0), nullptr);
  rt().barrier_all();
  rt().free(v);
}

TEST(Foundation, CallocZeroesAndReallocKeepsContents) {
  int* z = static_cast<int*>(rt().calloc(1000, sizeof(int)));
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(std::count(z, z + 1000, 0), 1000);
  for (int i = 0; i < 1000; ++i) z[i] = i + rt().my_pe();
  // Block right after z so that growing must move.
  void* blocker = rt().malloc(64);
  int* g = static_cast<int*>(rt().realloc(z, 100000 * sizeof(int)));
  ASSERT_NE(g, nullptr);
  bool ok = true;
  for (int i = 0; i < 1000; ++i) ok &= g[i] == i + rt().my_pe();
  EXPECT_TRUE(ok);
  // The moved block is symmetric: put into the neighbour's copy.
  rt().p(&g[99999], rt().my_pe(), right());
  rt().barrier_all();
  EXPECT_EQ(g[99999], left());
  int* s = static_cast<int*>(rt().realloc(g, 10 * sizeof(int)));
  ASSERT_EQ(s, g);
  EXPECT_EQ(s[9], 9 + rt().my_pe());
  rt().free(blocker);
  rt().free(s);
  EXPECT_EQ(rt().malloc(0), nullptr);
}

// An allocation's initialiser (alloc(n, value), align(.., init), calloc) runs before the
// closing barrier: the neighbour's put issued as soon as its own call returns survives. The
// block is dirtied first (freed and handed back), sizes up to 4 MiB (the commit path too).
TEST(Foundation, InitialisedAllocationKeepsAPutRightAfterIt) {
  const int me = rt().my_pe();
  int lost = 0, reused = 0, made = 0;
  for (int round = 0; round < 4; ++round) {
    for (size_t n = 1; n <= (size_t(4) << 20) / sizeof(int64_t); n *= 8) {
      for (int how = 0; how < 3; ++how) {
        void* d = rt().malloc(n * sizeof(int64_t));
        std::memset(d, 0x5A, n * sizeof(int64_t));
        const auto dirty_at = reinterpret_cast<uintptr_t>(d);
        rt().free(d);
        int64_t* a = nullptr;
        int64_t fill = how == 2 ? 0 : -7;
        if (how == 0) {
          a = rt().alloc<int64_t>(n, fill).data();
        } else if (how == 1) {
          a = static_cast<int64_t*>(rt().align(64, n * sizeof(int64_t), [](void* p, size_t bytes) {
            std::fill_n(static_cast<int64_t*>(p), bytes / sizeof(int64_t), int64_t(-7));
          }));
        } else {
          a = static_cast<int64_t*>(rt().calloc(n, sizeof(int64_t)));
        }
        reused += reinterpret_cast<uintptr_t>(a) == dirty_at;
        ++made;
        if (rt().n_pes() > 1) rt().p(&a[n - 1], int64_t(1000 + me), right());
        rt().barrier_all();
        for (size_t i = 0; i + 1 < n; ++i) lost += a[i] != fill;
        if (rt().n_pes() > 1) lost += a[n - 1] != 1000 + left();
        rt().free(a);
      }
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_GT(reused * 2, made);  // mostly dirty blocks, not fresh zero pages
}

TEST(Foundation, ThrowingInitFailsTheAllocationOnEveryPe) {
  const bool thrower = rt().my_pe() == rt().n_pes() - 1;
  bool caught = false;
  void* p = reinterpret_cast<void*>(1);
  try {
    p = rt().align(64, 4096, [thrower](void*, size_t) {
      if (thrower) throw std::runtime_error("init failed");
    });
  } catch (const std::runtime_error&) {
    caught = true;
  }
  EXPECT_EQ(caught, thrower);
  if (!thrower) {
    EXPECT_EQ(p, nullptr);
  }
  void* q = rt().malloc(4096);  // the heap still works, every PE in step
  EXPECT_NE(q, nullptr);
  rt().free(q);
}

TEST(Foundation, ExhaustionReturnsNullOnEveryPe) {
  void* p = rt().malloc(rt().heap_size() + 4096);
  EXPECT_EQ(p, nullptr);
  // The heap still works afterwards.
  void* q = rt().malloc(1 << 20);
  EXPECT_NE(q, nullptr);
  rt().free(q);
}

TEST(Foundation, ManyAllocationsAndFreesStayConsistent) {
  std::vector<void*> blocks;
  for (int i = 0; i < 200; ++i) blocks.push_back(rt().malloc(size_t(64 + (i * 977) % 5000)));
  for (size_t i = 0; i < blocks.size(); i += 2) rt().free(blocks[i]);
  for (size_t i = 1; i < blocks.size(); i += 2) {
    *static_cast<int*>(blocks[i]) = int(i);
  }
  rt().barrier_all();
  for (size_t i = 1; i < blocks.size(); i += 2) {
    EXPECT_EQ(rt().g(static_cast<int*>(blocks[i]), right()), int(i));
  }
  rt().barrier_all();
  for (size_t i = 1; i < blocks.size(); i += 2) rt().free(blocks[i]);
}

}  // namespace
