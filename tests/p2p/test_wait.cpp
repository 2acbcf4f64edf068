// Point-to-point waits and tests: every sync type with every comparison operator, and the
// all / any / some forms with and without status masks and per-element (_vector) values.
// Variables are written by the left neighbour with plain puts (shmem_TYPE_p) or atomics.
#include <thread>
#include <vector>

#include "p2p_test.hpp"

using namespace p2pt;

namespace {

// One case per comparison operator: the variable starts at `init`, the writer stores
// `final`, the waiter compares with `value`; `init` fails the comparison, `final` passes.
struct CmpCase {
  int cmp;
  int init, value, final;
};
constexpr CmpCase kCases[] = {
    {SHMEM_CMP_EQ, 0, 5, 5}, {SHMEM_CMP_NE, 0, 0, 5}, {SHMEM_CMP_GT, 0, 4, 5},
    {SHMEM_CMP_GE, 0, 5, 5}, {SHMEM_CMP_LT, 10, 6, 5}, {SHMEM_CMP_LE, 10, 5, 5},
};

template <class T>
struct Single {
  void (*wait_until)(T*, int, T);
  int (*test)(T*, int, T);
  void (*p)(T*, T, int);
};

template <class T>
void check_single(const char* name, const Single<T>& f) {
  SCOPED_TRACE(name);
  T* x = zalloc<T>(1);
  for (const CmpCase& c : kCases) {
    SCOPED_TRACE(c.cmp);
    *x = static_cast<T>(c.init);
    shmem_barrier_all();
    EXPECT_EQ(f.test(x, c.cmp, static_cast<T>(c.value)), 0);
    shmem_barrier_all();  // nobody writes before every PE has tested
    f.p(x, static_cast<T>(c.final), right());
    f.wait_until(x, c.cmp, static_cast<T>(c.value));
    EXPECT_EQ(*x, static_cast<T>(c.final));
    EXPECT_EQ(f.test(x, c.cmp, static_cast<T>(c.value)), 1);
    shmem_barrier_all();
  }
  shmem_free(x);
}

template <class T>
struct Set {
  void (*all)(T*, size_t, const int*, int, T);
  size_t (*any)(T*, size_t, const int*, int, T);
  size_t (*some)(T*, size_t, size_t*, const int*, int, T);
  void (*all_v)(T*, size_t, const int*, int, const T*);
  size_t (*any_v)(T*, size_t, const int*, int, const T*);
  size_t (*some_v)(T*, size_t, size_t*, const int*, int, const T*);
  int (*t_all)(T*, size_t, const int*, int, T);
  size_t (*t_any)(T*, size_t, const int*, int, T);
  size_t (*t_some)(T*, size_t, size_t*, const int*, int, T);
  int (*t_all_v)(T*, size_t, const int*, int, const T*);
  size_t (*t_any_v)(T*, size_t, const int*, int, const T*);
  size_t (*t_some_v)(T*, size_t, size_t*, const int*, int, const T*);
  void (*atomic_set)(T*, T, int);
};

template <class T>
void check_set(const char* name, const Set<T>& f) {
  SCOPED_TRACE(name);
  constexpr size_t n = 6;
  T* v = zalloc<T>(n);
  size_t ix[n];
  const int st_none[n] = {0, 0, 0, 0, 0, 0};
  const int st_skip5[n] = {0, 0, 0, 0, 0, 1};  // element 5 is never written
  const int st_all[n] = {1, 1, 1, 1, 1, 1};
  const T want[n] = {T(1), T(2), T(3), T(4), T(5), T(6)};
  const T one = T(1);

  // Nothing written yet.
  EXPECT_EQ(f.t_all(v, n, nullptr, SHMEM_CMP_GE, one), 0);
  EXPECT_EQ(f.t_any(v, n, st_none, SHMEM_CMP_GE, one), SIZE_MAX);
  EXPECT_EQ(f.t_some(v, n, ix, nullptr, SHMEM_CMP_GE, one), 0u);
  EXPECT_EQ(f.t_all_v(v, n, nullptr, SHMEM_CMP_EQ, want), 0);
  EXPECT_EQ(f.t_any_v(v, n, nullptr, SHMEM_CMP_EQ, want), SIZE_MAX);
  EXPECT_EQ(f.t_some_v(v, n, ix, nullptr, SHMEM_CMP_EQ, want), 0u);
  // Empty sets: all is true, any finds nothing, some finds none, and the waits return.
  EXPECT_EQ(f.t_all(v, 0, nullptr, SHMEM_CMP_GE, one), 1);
  EXPECT_EQ(f.t_all(v, n, st_all, SHMEM_CMP_GE, one), 1);
  EXPECT_EQ(f.any(v, n, st_all, SHMEM_CMP_GE, one), SIZE_MAX);
  EXPECT_EQ(f.some(v, n, ix, st_all, SHMEM_CMP_GE, one), 0u);
  f.all(v, 0, nullptr, SHMEM_CMP_GE, one);
  shmem_barrier_all();

  // any: my left neighbour writes element 3 only.
  f.atomic_set(v + 3, T(4), right());
  EXPECT_EQ(f.any(v, n, nullptr, SHMEM_CMP_GE, one), 3u);
  EXPECT_EQ(f.any_v(v, n, nullptr, SHMEM_CMP_EQ, want), 3u);
  EXPECT_EQ(f.t_any(v, n, nullptr, SHMEM_CMP_GE, one), 3u);
  EXPECT_EQ(f.t_any_v(v, n, nullptr, SHMEM_CMP_EQ, want), 3u);
  shmem_barrier_all();
  // some: elements 1 and 4 as well.
  f.atomic_set(v + 1, T(2), right());
  f.atomic_set(v + 4, T(5), right());
  size_t m = 0;
  while (m < 3) m = f.some(v, n, ix, st_skip5, SHMEM_CMP_GE, one);  // the writes land in any order
  EXPECT_EQ(m, 3u);
  EXPECT_EQ(ix[0], 1u);
  EXPECT_EQ(ix[1], 3u);
  EXPECT_EQ(ix[2], 4u);
  EXPECT_EQ(f.some_v(v, n, ix, nullptr, SHMEM_CMP_EQ, want), 3u);
  EXPECT_EQ(f.t_some(v, n, ix, nullptr, SHMEM_CMP_GE, one), 3u);
  EXPECT_EQ(f.t_some_v(v, n, ix, st_none, SHMEM_CMP_EQ, want), 3u);
  shmem_barrier_all();
  // all: the rest but element 5, which the mask leaves out.
  f.atomic_set(v + 0, T(1), right());
  f.atomic_set(v + 2, T(3), right());
  f.all(v, n, st_skip5, SHMEM_CMP_GE, one);
  f.all_v(v, n, st_skip5, SHMEM_CMP_EQ, want);
  EXPECT_EQ(f.t_all(v, n, st_skip5, SHMEM_CMP_GE, one), 1);
  EXPECT_EQ(f.t_all_v(v, n, st_skip5, SHMEM_CMP_EQ, want), 1);
  EXPECT_EQ(f.t_all(v, n, nullptr, SHMEM_CMP_GE, one), 0);  // element 5 is still 0
  shmem_barrier_all();
  shmem_free(v);
}

#define SINGLE(T, N) Single<T>{shmem_##N##_wait_until, shmem_##N##_test, shmem_##N##_p}
#define SET(T, N)                                                                                              \
  Set<T>{shmem_##N##_wait_until_all,        shmem_##N##_wait_until_any,        shmem_##N##_wait_until_some,    \
         shmem_##N##_wait_until_all_vector, shmem_##N##_wait_until_any_vector, shmem_##N##_wait_until_some_vector, \
         shmem_##N##_test_all,              shmem_##N##_test_any,              shmem_##N##_test_some,          \
         shmem_##N##_test_all_vector,       shmem_##N##_test_any_vector,       shmem_##N##_test_some_vector,   \
         shmem_##N##_atomic_set}

TEST(Wait, EveryTypeEveryComparison) {
#define RUN(T, N) check_single<T>(#N, SINGLE(T, N));
  SHMEM_P2P_SYNC_TYPES(RUN)
#undef RUN
}

TEST(Wait, AllAnySomeEveryType) {
#define RUN(T, N) check_set<T>(#N, SET(T, N));
  SHMEM_AMO_STD_TYPES(RUN)
#undef RUN
}

// wait_until_any reports every satisfied element in turn, not always the first one.
TEST(Wait, AnyIsFair) {
  long* v = zalloc<long>(4);
  for (int i = 0; i < 4; ++i) v[i] = 1;
  bool seen[4] = {false, false, false, false};
  for (int k = 0; k < 8; ++k) seen[shmem_long_wait_until_any(v, 4, nullptr, SHMEM_CMP_EQ, 1L)] = true;
  for (int i = 0; i < 4; ++i) { EXPECT_TRUE(seen[i]) << "index " << i << " never returned"; }
  shmem_barrier_all();
  shmem_free(v);
}

TEST(Wait, GenericAndDeprecatedForms) {
  long* l = zalloc<long>(1);
  short* s = zalloc<short>(1);
  int* i = zalloc<int>(1);
  shmem_long_p(l, 3, right());
  shmem_short_p(s, 4, right());
  shmem_atomic_add(i, 5, right());  // C++ overload
  shmem_wait(l, 0);
  shmem_short_wait(s, 0);
  shmem_int_wait(i, 0);
  shmem_wait_until(l, SHMEM_CMP_EQ, 3L);  // C++ overloads
  EXPECT_EQ(shmem_test(s, SHMEM_CMP_EQ, short(4)), 1);
  EXPECT_EQ(*i, 5);
  shmem_barrier_all();
  shmem_free(i);
  shmem_free(s);
  shmem_free(l);
}

// A sleeping waiter is woken by an atomic on its variable (and, without a wake-up, by its
// bounded sleep for a plain put). With SYMMEM_WAIT_MAX_SLEEP_US large, a lost wake-up of
// the atomic case hangs the test.
TEST(Wait, SleepingWaiterIsWokenByAtomic) {
  int* x = zalloc<int>(1);
  for (int k = 1; k <= 5; ++k) {
    if (me() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (int pe = 1; pe < npes(); ++pe) shmem_int_atomic_inc(x, pe);
    } else {
      shmem_int_wait_until(x, SHMEM_CMP_GE, k);
      EXPECT_GE(*x, k);
    }
  }
  shmem_barrier_all();
  shmem_free(x);
}

}  // namespace
