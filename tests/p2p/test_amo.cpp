// Atomics: every operation of every AMO type (named routines, context and _nbi forms,
// deprecated names), exact totals of concurrent updates from all PEs onto one word, and
// mutual exclusion built on compare_swap.
#include <sched.h>

#include <algorithm>
#include <vector>

#include "p2p_test.hpp"

using namespace p2pt;

namespace {

template <class T>
struct Ext {
  T (*fetch)(const T*, int);
  T (*ctx_fetch)(shmem_ctx_t, const T*, int);
  void (*set)(T*, T, int);
  void (*ctx_set)(shmem_ctx_t, T*, T, int);
  T (*swap)(T*, T, int);
  T (*ctx_swap)(shmem_ctx_t, T*, T, int);
  void (*fetch_nbi)(T*, const T*, int);
  void (*ctx_fetch_nbi)(shmem_ctx_t, T*, const T*, int);
  void (*swap_nbi)(T*, T*, T, int);
  void (*ctx_swap_nbi)(shmem_ctx_t, T*, T*, T, int);
};

template <class T>
T v(int pe, int k) {
  return static_cast<T>(pe * 8 + k + 1);
}

// Each PE works on its right neighbour's word; every step is checked on both sides.
template <class T>
void check_ext(const char* name, const Ext<T>& f, shmem_ctx_t ctx) {
  SCOPED_TRACE(name);
  T* x = zalloc<T>(1);
  const int r = right();
  f.set(x, v<T>(me(), 1), r);
  shmem_barrier_all();
  EXPECT_EQ(*x, v<T>(left(), 1));
  shmem_barrier_all();  // my left neighbour changes my word next
  EXPECT_EQ(f.fetch(x, r), v<T>(me(), 1));
  EXPECT_EQ(f.ctx_fetch(ctx, x, r), v<T>(me(), 1));
  EXPECT_EQ(f.swap(x, v<T>(me(), 2), r), v<T>(me(), 1));
  EXPECT_EQ(f.ctx_swap(ctx, x, v<T>(me(), 3), r), v<T>(me(), 2));
  f.ctx_set(ctx, x, v<T>(me(), 4), r);
  T got = T(0);
  f.fetch_nbi(&got, x, r);
  shmem_quiet();
  EXPECT_EQ(got, v<T>(me(), 4));
  f.ctx_fetch_nbi(ctx, &got, x, r);
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(got, v<T>(me(), 4));
  f.swap_nbi(&got, x, v<T>(me(), 5), r);
  shmem_quiet();
  EXPECT_EQ(got, v<T>(me(), 4));
  f.ctx_swap_nbi(ctx, &got, x, v<T>(me(), 6), r);
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(got, v<T>(me(), 5));
  shmem_barrier_all();
  EXPECT_EQ(*x, v<T>(left(), 6));
  shmem_barrier_all();
  shmem_free(x);
}

template <class T>
struct Std {
  T (*cswap)(T*, T, T, int);
  T (*ctx_cswap)(shmem_ctx_t, T*, T, T, int);
  T (*finc)(T*, int);
  T (*ctx_finc)(shmem_ctx_t, T*, int);
  void (*inc)(T*, int);
  void (*ctx_inc)(shmem_ctx_t, T*, int);
  T (*fadd)(T*, T, int);
  T (*ctx_fadd)(shmem_ctx_t, T*, T, int);
  void (*add)(T*, T, int);
  void (*ctx_add)(shmem_ctx_t, T*, T, int);
  void (*cswap_nbi)(T*, T*, T, T, int);
  void (*ctx_cswap_nbi)(shmem_ctx_t, T*, T*, T, T, int);
  void (*finc_nbi)(T*, T*, int);
  void (*ctx_finc_nbi)(shmem_ctx_t, T*, T*, int);
  void (*fadd_nbi)(T*, T*, T, int);
  void (*ctx_fadd_nbi)(shmem_ctx_t, T*, T*, T, int);
};

template <class T>
void check_std(const char* name, const Std<T>& f, shmem_ctx_t ctx) {
  SCOPED_TRACE(name);
  T* x = zalloc<T>(1);
  const int r = right();
  // Sequential semantics on the right neighbour's word (only I touch it). Two contexts are
  // not ordered with each other: a posted atomic on ctx is complete for the default
  // context's next one only after shmem_ctx_quiet (over UCX each context has its worker).
  EXPECT_EQ(f.cswap(x, T(1), T(9), r), T(0));  // fails: 0 != 1
  EXPECT_EQ(f.cswap(x, T(0), T(10), r), T(0));  // succeeds
  EXPECT_EQ(f.ctx_cswap(ctx, x, T(10), T(11), r), T(10));
  EXPECT_EQ(f.finc(x, r), T(11));
  EXPECT_EQ(f.ctx_finc(ctx, x, r), T(12));
  f.inc(x, r);
  f.ctx_inc(ctx, x, r);  // 15
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(f.fadd(x, T(5), r), T(15));
  EXPECT_EQ(f.ctx_fadd(ctx, x, T(3), r), T(20));
  f.add(x, T(2), r);
  f.ctx_add(ctx, x, T(1), r);  // 26
  shmem_ctx_quiet(ctx);
  T got = T(0);
  f.cswap_nbi(&got, x, T(26), T(30), r);
  shmem_quiet();
  EXPECT_EQ(got, T(26));
  f.ctx_cswap_nbi(ctx, &got, x, T(29), T(31), r);  // fails
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(got, T(30));
  f.finc_nbi(&got, x, r);
  shmem_quiet();
  EXPECT_EQ(got, T(30));
  f.ctx_finc_nbi(ctx, &got, x, r);
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(got, T(31));
  f.fadd_nbi(&got, x, T(4), r);
  shmem_quiet();
  EXPECT_EQ(got, T(32));
  f.ctx_fadd_nbi(ctx, &got, x, T(4), r);
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(got, T(36));
  shmem_barrier_all();
  EXPECT_EQ(*x, T(40));
  // Concurrent: every PE adds onto PE 0's word with every adding form at once.
  *x = T(0);
  shmem_barrier_all();
  const int k = 50;
  for (int i = 0; i < k; ++i) {
    f.inc(x, 0);
    (void)f.finc(x, 0);
    f.add(x, T(2), 0);
    (void)f.ctx_fadd(ctx, x, T(3), 0);
  }
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(*x, static_cast<T>(npes() * k * 7)); }
  shmem_barrier_all();
  shmem_free(x);
}

template <class T>
struct Bit {
  void (*op[3])(T*, T, int);
  void (*ctx_op[3])(shmem_ctx_t, T*, T, int);
  T (*fop[3])(T*, T, int);
  T (*ctx_fop[3])(shmem_ctx_t, T*, T, int);
  void (*fop_nbi[3])(T*, T*, T, int);
  void (*ctx_fop_nbi[3])(shmem_ctx_t, T*, T*, T, int);
};
enum { kAnd, kOr, kXor };

template <class T>
void check_bit(const char* name, const Bit<T>& f, shmem_ctx_t ctx) {
  SCOPED_TRACE(name);
  T* x = zalloc<T>(4);
  const int n = std::min(npes(), 16);
  const bool active = me() < n;
  const T mine = static_cast<T>(T(1) << me() % 16);
  const T all = static_cast<T>((T(1) << n) - 1);
  // or: every PE sets its bit in word 0..3 of PE 0 through one of the four or-forms.
  if (active) {
    f.op[kOr](x + 0, mine, 0);
    f.ctx_op[kOr](ctx, x + 1, mine, 0);
    (void)f.fop[kOr](x + 2, mine, 0);
    T got;
    f.fop_nbi[kOr](&got, x + 3, mine, 0);
    shmem_quiet();
    EXPECT_EQ(got & mine, T(0));  // my bit was not set before
  }
  shmem_barrier_all();
  if (me() == 0)
    for (int i = 0; i < 4; ++i) { EXPECT_EQ(x[i], all) << "or into word " << i; }
  shmem_barrier_all();
  // xor: every PE flips its bit back off.
  if (active) {
    f.op[kXor](x + 0, mine, 0);
    f.ctx_op[kXor](ctx, x + 1, mine, 0);
    EXPECT_NE(f.ctx_fop[kXor](ctx, x + 2, mine, 0) & mine, T(0));
    T got;
    f.ctx_fop_nbi[kXor](ctx, &got, x + 3, mine, 0);
    shmem_ctx_quiet(ctx);
    EXPECT_NE(got & mine, T(0));
  }
  shmem_barrier_all();
  if (me() == 0)
    for (int i = 0; i < 4; ++i) { EXPECT_EQ(x[i], T(0)) << "xor of word " << i; }
  shmem_barrier_all();
  // and: start from all ones; every PE clears its bit.
  if (me() == 0)
    for (int i = 0; i < 4; ++i) x[i] = static_cast<T>(~T(0));
  shmem_barrier_all();
  if (active) {
    const T clear = static_cast<T>(~mine);
    f.op[kAnd](x + 0, clear, 0);
    f.ctx_op[kAnd](ctx, x + 1, clear, 0);
    EXPECT_NE(f.fop[kAnd](x + 2, clear, 0) & mine, T(0));
    T got;
    f.fop_nbi[kAnd](&got, x + 3, clear, 0);
    shmem_quiet();
    EXPECT_NE(got & mine, T(0));
  }
  shmem_barrier_all();
  if (me() == 0)
    for (int i = 0; i < 4; ++i) { EXPECT_EQ(x[i], static_cast<T>(~all)) << "and of word " << i; }
  // The fetching forms not used above, once each on my own word.
  x[3] = T(6);
  EXPECT_EQ(f.ctx_fop[kAnd](ctx, x + 3, T(3), me()), T(6));
  EXPECT_EQ(f.ctx_fop[kOr](ctx, x + 3, T(8), me()), T(2));
  EXPECT_EQ(f.fop[kXor](x + 3, T(1), me()), T(10));
  T got;
  f.ctx_fop_nbi[kAnd](ctx, &got, x + 3, T(1), me());
  EXPECT_EQ(got, T(11));
  f.ctx_fop_nbi[kOr](ctx, &got, x + 3, T(4), me());
  EXPECT_EQ(got, T(1));
  f.fop_nbi[kXor](&got, x + 3, T(5), me());
  shmem_quiet();
  EXPECT_EQ(got, T(5));
  EXPECT_EQ(x[3], T(0));
  shmem_barrier_all();
  shmem_free(x);
}

#define EXT(T, N)                                                                                       \
  Ext<T>{shmem_##N##_atomic_fetch,     shmem_ctx_##N##_atomic_fetch,    shmem_##N##_atomic_set,         \
         shmem_ctx_##N##_atomic_set,   shmem_##N##_atomic_swap,         shmem_ctx_##N##_atomic_swap,    \
         shmem_##N##_atomic_fetch_nbi, shmem_ctx_##N##_atomic_fetch_nbi, shmem_##N##_atomic_swap_nbi,   \
         shmem_ctx_##N##_atomic_swap_nbi}
#define STD(T, N)                                                                                             \
  Std<T>{shmem_##N##_atomic_compare_swap,      shmem_ctx_##N##_atomic_compare_swap,                            \
         shmem_##N##_atomic_fetch_inc,         shmem_ctx_##N##_atomic_fetch_inc,                               \
         shmem_##N##_atomic_inc,               shmem_ctx_##N##_atomic_inc,                                     \
         shmem_##N##_atomic_fetch_add,         shmem_ctx_##N##_atomic_fetch_add,                               \
         shmem_##N##_atomic_add,               shmem_ctx_##N##_atomic_add,                                     \
         shmem_##N##_atomic_compare_swap_nbi,  shmem_ctx_##N##_atomic_compare_swap_nbi,                        \
         shmem_##N##_atomic_fetch_inc_nbi,     shmem_ctx_##N##_atomic_fetch_inc_nbi,                           \
         shmem_##N##_atomic_fetch_add_nbi,     shmem_ctx_##N##_atomic_fetch_add_nbi}
#define BIT(T, N)                                                                                              \
  Bit<T>{{shmem_##N##_atomic_and, shmem_##N##_atomic_or, shmem_##N##_atomic_xor},                              \
         {shmem_ctx_##N##_atomic_and, shmem_ctx_##N##_atomic_or, shmem_ctx_##N##_atomic_xor},                  \
         {shmem_##N##_atomic_fetch_and, shmem_##N##_atomic_fetch_or, shmem_##N##_atomic_fetch_xor},            \
         {shmem_ctx_##N##_atomic_fetch_and, shmem_ctx_##N##_atomic_fetch_or, shmem_ctx_##N##_atomic_fetch_xor}, \
         {shmem_##N##_atomic_fetch_and_nbi, shmem_##N##_atomic_fetch_or_nbi, shmem_##N##_atomic_fetch_xor_nbi}, \
         {shmem_ctx_##N##_atomic_fetch_and_nbi, shmem_ctx_##N##_atomic_fetch_or_nbi,                           \
          shmem_ctx_##N##_atomic_fetch_xor_nbi}}

class Amo : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(shmem_ctx_create(0, &ctx_), 0); }
  void TearDown() override { shmem_ctx_destroy(ctx_); }
  shmem_ctx_t ctx_ = SHMEM_CTX_INVALID;
};

TEST_F(Amo, ExtendedTypesFetchSetSwap) {
#define RUN(T, N) check_ext<T>(#N, EXT(T, N), ctx_);
  SHMEM_AMO_EXT_TYPES(RUN)
#undef RUN
}

TEST_F(Amo, StandardTypesArithmetic) {
#define RUN(T, N) check_std<T>(#N, STD(T, N), ctx_);
  SHMEM_AMO_STD_TYPES(RUN)
#undef RUN
}

TEST_F(Amo, BitwiseTypes) {
#define RUN(T, N) check_bit<T>(#N, BIT(T, N), ctx_);
  SHMEM_AMO_BITWISE_TYPES(RUN)
#undef RUN
}

// Every PE fetch-increments one word on PE 0 many times: the total is exact and the
// fetched values are all distinct (each increment saw its own predecessor).
TEST(AmoContention, FetchIncGivesEveryValueOnce) {
  const int k = 20000;
  long* word = zalloc<long>(1);
  long* seen = zalloc<long>(size_t(k) * npes());
  std::vector<long> mine(k);
  for (int i = 0; i < k; ++i) mine[i] = shmem_long_atomic_fetch_inc(word, 0);
  shmem_long_put(seen + size_t(me()) * k, mine.data(), k, 0);
  shmem_barrier_all();
  if (me() == 0) {
    EXPECT_EQ(*word, long(k) * npes());
    std::vector<long> all(seen, seen + size_t(k) * npes());
    std::sort(all.begin(), all.end());
    bool perm = true;
    for (size_t i = 0; i < all.size() && perm; ++i) perm = all[i] == long(i);
    EXPECT_TRUE(perm) << "fetched values are not 0..n-1 exactly once";
  }
  shmem_barrier_all();
  shmem_free(seen);
  shmem_free(word);
}

TEST(AmoContention, MixedAddsOnOneWordOfEveryPe) {
  // Every PE adds to every PE's word (4- and 8-byte), all at once.
  const int k = 3000;
  int* w32 = zalloc<int>(1);
  unsigned long long* w64 = zalloc<unsigned long long>(1);
  for (int i = 0; i < k; ++i) {
    for (int pe = 0; pe < npes(); ++pe) {
      shmem_int_atomic_add(w32, 1, pe);
      shmem_atomic_inc(w64, pe);  // C++ overload
    }
  }
  shmem_barrier_all();
  EXPECT_EQ(*w32, k * npes());
  EXPECT_EQ(*w64, static_cast<unsigned long long>(k) * npes());
  shmem_barrier_all();
  shmem_free(w64);
  shmem_free(w32);
}

// A spin lock made of compare_swap protects a non-atomic read-modify-write on PE 0.
TEST(AmoContention, CompareSwapMutualExclusion) {
  const int k = 300;
  int* lock = zalloc<int>(1);
  long* counter = zalloc<long>(1);
  for (int i = 0; i < k; ++i) {
    unsigned spins = 0;
    while (shmem_int_atomic_compare_swap(lock, 0, me() + 1, 0) != 0)
      if (++spins > 16) sched_yield();
    long c = shmem_long_g(counter, 0);
    shmem_long_p(counter, c + 1, 0);
    shmem_quiet();
    EXPECT_EQ(shmem_int_atomic_swap(lock, 0, 0), me() + 1);
  }
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(*counter, long(k) * npes()); }
  shmem_barrier_all();
  shmem_free(counter);
  shmem_free(lock);
}

TEST(AmoDeprecated, DeprecatedNames) {
  long* l = zalloc<long>(1);
  int* i = zalloc<int>(1);
  double* d = zalloc<double>(1);
  if (me() == 0) {
    shmem_long_set(l, 5, right());
    EXPECT_EQ(shmem_long_fetch(l, right()), 5);
    EXPECT_EQ(shmem_long_swap(l, 6, right()), 5);
    EXPECT_EQ(shmem_long_cswap(l, 6, 7, right()), 6);
    EXPECT_EQ(shmem_long_finc(l, right()), 7);
    shmem_long_inc(l, right());
    EXPECT_EQ(shmem_long_fadd(l, 10, right()), 9);
    shmem_long_add(l, 1, right());
    EXPECT_EQ(shmem_long_fetch(l, right()), 20);
    shmem_int_add(i, 3, right());
    EXPECT_EQ(shmem_int_finc(i, right()), 3);
    shmem_double_set(d, 1.5, right());
    EXPECT_EQ(shmem_double_swap(d, 2.5, right()), 1.5);
    EXPECT_EQ(shmem_double_fetch(d, right()), 2.5);
  }
  shmem_barrier_all();
  shmem_free(d);
  shmem_free(i);
  shmem_free(l);
}

}  // namespace
