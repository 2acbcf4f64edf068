// Global and static variables of the executable are symmetric (docs/static-data.md): put,
// get, p/g and ptr work on them at any size and offset, the program's own loads and stores
// go to the shared copy, initial values survive the remap, atomics through ptr() are
// atomic across PEs, a fork()ed child gets a private copy, and a second runtime of the
// process (which does not own the data segment) says so clearly. Also: shmem_align with
// more alignment than every PE's heap base has is refused (Runtime::align).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "mp_env.hpp"

using mp::rt;

namespace {

int right(int k = 1) { return (rt().my_pe() + k) % rt().n_pes(); }
int left(int k = 1) { return (rt().my_pe() - k % rt().n_pes() + rt().n_pes()) % rt().n_pes(); }

constexpr size_t kBig = size_t(1) << 20;
unsigned char g_bytes[kBig + 64];  // .bss

struct Pod {
  int a;
  double b;
  char c[5];
};

char g_char;
short g_short;
int g_int;
long g_long;
long long g_llong;
float g_float;
double g_double;
Pod g_pod;

// .data: initial values must survive the move into shared memory.
long g_init_long = 0x1234567890L;
int g_init_arr[4] = {1, 2, 3, 4};
Pod g_init_pod = {42, 2.5, "abcd"};

long* counter() {
  static long c;  // a function-local static, the standard's classic example
  return &c;
}

TEST(StaticData, InitialValuesSurviveTheRemap) {
  EXPECT_EQ(g_init_long, 0x1234567890L);
  EXPECT_EQ(g_init_arr[3], 4);
  EXPECT_EQ(g_init_pod.a, 42);
  EXPECT_STREQ(g_init_pod.c, "abcd");
  // A peer reads the same initial values out of this PE's copy.
  rt().barrier_all();
  EXPECT_EQ(rt().g(&g_init_long, right()), 0x1234567890L);
  int arr[4] = {0, 0, 0, 0};
  rt().get(arr, g_init_arr, 4, right());
  EXPECT_EQ(arr[0] + arr[1] + arr[2] + arr[3], 10);
  Pod pod{};
  rt().get(&pod, &g_init_pod, 1, right());
  EXPECT_EQ(pod.b, 2.5);
  rt().barrier_all();
}

TEST(StaticData, PutGetAllSizesAndOffsets) {
  std::vector<unsigned char> src(kBig + 64), back(kBig + 64);
  for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(63), size_t(64), size_t(65), size_t(4096),
                   size_t(100003), kBig}) {
    for (size_t off : {size_t(0), size_t(3), size_t(61)}) {
      for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(rt().my_pe() * 31 + i * 7 + n + off);
      rt().put(g_bytes + off, src.data(), n, right());
      rt().barrier_all();
      const int from = left();
      bool ok = true;
      size_t bad = 0;
      for (size_t i = 0; i < n && ok; ++i)
        if (g_bytes[off + i] != static_cast<unsigned char>(from * 31 + i * 7 + n + off)) ok = false, bad = i;
      EXPECT_TRUE(ok) << "put of " << n << " bytes at offset " << off << " from PE " << from << ": byte " << bad;
      rt().get(back.data(), g_bytes + off, n, right());
      EXPECT_EQ(std::memcmp(back.data(), src.data(), n), 0) << "get of " << n << " bytes at offset " << off;
      rt().barrier_all();
    }
  }
}

TEST(StaticData, GlobalsOfSeveralTypes) {
  const int me = rt().my_pe(), from = left();
  rt().p(&g_char, char('a' + me), right());
  rt().p(&g_short, short(-300 - me), right());
  rt().p(&g_int, 70000 + me, right());
  rt().p(&g_long, -(1L << 40) - me, right());
  rt().p(&g_llong, (1LL << 50) + me, right());
  rt().p(&g_float, 0.25f + float(me), right());
  rt().p(&g_double, 1e300 / (me + 1), right());
  Pod pod{me, me * 0.5, "pod"};
  rt().put(&g_pod, &pod, 1, right());
  rt().p(counter(), 1000L + me, right());
  rt().barrier_all();
  EXPECT_EQ(g_char, char('a' + from));
  EXPECT_EQ(g_short, short(-300 - from));
  EXPECT_EQ(g_int, 70000 + from);
  EXPECT_EQ(g_long, -(1L << 40) - from);
  EXPECT_EQ(g_llong, (1LL << 50) + from);
  EXPECT_EQ(g_float, 0.25f + float(from));
  EXPECT_EQ(g_double, 1e300 / (from + 1));
  EXPECT_EQ(g_pod.a, from);
  EXPECT_EQ(g_pod.b, from * 0.5);
  EXPECT_STREQ(g_pod.c, "pod");
  EXPECT_EQ(*counter(), 1000L + from);
  EXPECT_EQ(rt().g(&g_int, right()), 70000 + me);
  rt().barrier_all();
}

// The program's own stores to its globals land in the shared copy that peers read.
TEST(StaticData, LocalStoresAreSeenByPeers) {
  g_long = 555L * rt().my_pe();
  std::memset(g_bytes, rt().my_pe() + 1, 4096);
  rt().barrier_all();
  EXPECT_EQ(rt().g(&g_long, right()), 555L * right());
  unsigned char b[4096];
  rt().get(b, g_bytes, sizeof b, right());
  EXPECT_EQ(b[0], right() + 1);
  EXPECT_EQ(b[4095], right() + 1);
  rt().barrier_all();
}

// Every PE increments PE 0's counter through its mapped copy: the copies are the same
// memory, so hardware atomics on them are atomic across PEs.
TEST(StaticData, AtomicCounterIncrementedByEveryPe) {
  *counter() = 0;
  rt().barrier_all();
  auto* c = static_cast<long*>(rt().ptr(counter(), 0));
  EXPECT_EQ(c != nullptr, mp::on_my_node(0));
  const int iters = 2000;
  for (int i = 0; i < iters; ++i) {
    // Off PE 0's node the same counter through UCX atomics, which must be atomic with the
    // hardware atomics of PE 0's node.
    if (c) __atomic_fetch_add(c, 1, __ATOMIC_SEQ_CST);
    else rt().atomic_add(counter(), 1L, 0);
    if (i % 64 == 0) sched_yield();  // interleave the PEs even when they outnumber cores
  }
  rt().barrier_all();
  if (rt().my_pe() == 0) {
    EXPECT_EQ(*counter(), long(iters) * rt().n_pes());
  }
  EXPECT_EQ(rt().g(counter(), 0), long(iters) * rt().n_pes());
  rt().barrier_all();
}

TEST(StaticData, PtrAndAccessibility) {
  for (int pe = 0; pe < rt().n_pes(); ++pe) {
    EXPECT_TRUE(rt().addr_accessible(&g_int, pe));
    EXPECT_TRUE(rt().addr_accessible(g_bytes + kBig, pe));
    EXPECT_EQ(rt().ptr(&g_double, pe) != nullptr, mp::on_my_node(pe));
  }
  EXPECT_EQ(rt().ptr(&g_int, rt().my_pe()), &g_int);
  int local = 0;
  EXPECT_FALSE(rt().addr_accessible(&local, 0));
  EXPECT_EQ(rt().ptr(&local, 0), nullptr);
  // A store through ptr() is the peer's global.
  if (mp::on_my_node(right())) *static_cast<int*>(rt().ptr(&g_int, right())) = -5 - rt().my_pe();
  else rt().p(&g_int, -5 - rt().my_pe(), right());
  rt().barrier_all();
  EXPECT_EQ(g_int, -5 - left());
  rt().barrier_all();
}

TEST(StaticData, RangePastTheEndIsReported) {
  try {
    rt().put(g_bytes, g_bytes, size_t(1) << 30, right());
    ADD_FAILURE() << "a 1 GiB put into a 1 MiB global did not throw";
  } catch (const symmem::Error& e) {
    EXPECT_EQ(e.code(), symmem::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("run past the end of the program's static data"), std::string::npos)
        << e.what();
  }
}

// After fork() the child has a private copy: its stores do not reach the parent.
TEST(StaticData, ForkedChildGetsPrivateGlobals) {
  g_long = 77;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = g_long == 77 ? 0 : 2;
    g_long = 99;
    std::memset(g_bytes, 0xee, 64);
    _exit(rc);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not see the parent's value";
  EXPECT_EQ(g_long, 77) << "the child's store reached the parent's global";
  EXPECT_NE(g_bytes[0], 0xee);
  // And the parent's copy is still the symmetric one.
  rt().barrier_all();
  EXPECT_EQ(rt().g(&g_long, right()), 77);
  rt().barrier_all();
}

// A second runtime of the same process: the first owns the data segment, so this one's
// globals are not symmetric, and it says so. Its small heap also shows the alignment
// limit: H = 6 MiB puts PE 1's heap at G + 6 MiB, so only 2 MiB alignment holds on
// every PE.
TEST(StaticData, SecondRuntimeAndAlignmentLimit) {
  symmem::InitOptions o;
  o.heap_size = 6ull << 20;
  o.instance = 1;
  symmem::Runtime r2(o);
  EXPECT_EQ(r2.n_pes(), rt().n_pes());
  try {
    r2.put(&g_long, &g_long, 1, (r2.my_pe() + 1) % r2.n_pes());
    ADD_FAILURE() << "put to a global through a runtime that does not own them did not throw";
  } catch (const symmem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("global variables are not symmetric in this runtime"), std::string::npos)
        << e.what();
  }
  void* a = r2.align(2u << 20, 100);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (2u << 20), 0u);
  // The same block on every PE is aligned too (local address of each peer's copy).
  for (int pe = 0; pe < r2.n_pes(); ++pe)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r2.ptr(a, pe)) % (2u << 20), 0u) << "PE " << pe;
  try {
    r2.align(4u << 20, 100);
    ADD_FAILURE() << "4 MiB alignment with a 6 MiB heap did not throw";
  } catch (const symmem::Error& e) {
    EXPECT_EQ(e.code(), symmem::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("alignment 4194304 is more than the symmetric heap can give on every PE "
                                         "(at most 2097152"),
              std::string::npos)
        << e.what();
  }
  r2.free(a);
}

}  // namespace
