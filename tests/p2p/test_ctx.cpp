// Contexts (options, per-context quiet and fence, destroy, invalid handles), locks (mutual
// exclusion, test_lock, no starvation) and SHMEM_THREAD_MULTIPLE (several threads per PE
// issuing RMA, atomics and quiet at once, each on its own context or the default one).
#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

#include "p2p_test.hpp"

using namespace p2pt;

namespace {

TEST(Ctx, CreateWithEveryOptionAndDestroy) {
  const long opts[] = {0, SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE,
                       SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE};
  std::vector<shmem_ctx_t> ctxs;
  for (long o : opts) {
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    EXPECT_EQ(shmem_ctx_create(o, &c), 0) << "options " << o;
    EXPECT_NE(c, SHMEM_CTX_INVALID);
    EXPECT_NE(c, SHMEM_CTX_DEFAULT);
    ctxs.push_back(c);
  }
  shmem_ctx_t bad = SHMEM_CTX_DEFAULT;
  EXPECT_NE(shmem_ctx_create(1L << 20, &bad), 0);  // unknown option: a failure, not an error
  EXPECT_EQ(bad, SHMEM_CTX_INVALID);
  // Operations on SHMEM_CTX_INVALID that the standard defines are no-ops.
  shmem_ctx_quiet(SHMEM_CTX_INVALID);
  shmem_ctx_fence(SHMEM_CTX_INVALID);
  shmem_ctx_destroy(SHMEM_CTX_INVALID);
  for (shmem_ctx_t c : ctxs) shmem_ctx_destroy(c);
  // Handles are recycled after destroy.
  shmem_ctx_t again = SHMEM_CTX_INVALID;
  EXPECT_EQ(shmem_ctx_create(0, &again), 0);
  shmem_ctx_destroy(again);
}

// Puts on each of several contexts, each completed by its own quiet: after the quiet, a
// get from the target sees the data (before any barrier).
TEST(Ctx, QuietCompletesThatContext) {
  const int nctx = 4;
  const size_t n = 4096;
  char* buf = zalloc<char>(nctx * n);
  shmem_ctx_t c[nctx];
  for (auto& x : c) ASSERT_EQ(shmem_ctx_create(0, &x), 0);
  std::vector<char> src(n), back(n);
  for (int i = 0; i < nctx; ++i) {
    for (size_t b = 0; b < n; ++b) src[b] = static_cast<char>(me() + i * 3 + b);
    shmem_ctx_putmem_nbi(c[i], buf + i * n, src.data(), n, right());
    shmem_ctx_fence(c[i]);
    shmem_ctx_char_p(c[i], buf + i * n, static_cast<char>(me() + i * 3), right());
    shmem_ctx_quiet(c[i]);
    shmem_ctx_getmem(c[i], back.data(), buf + i * n, n, right());
    EXPECT_EQ(std::memcmp(back.data(), src.data(), n), 0) << "context " << i;
  }
  // Destroy completes a context's outstanding operations too.
  for (size_t b = 0; b < n; ++b) src[b] = static_cast<char>(b ^ me());
  shmem_ctx_putmem_nbi(c[0], buf, src.data(), n, right());
  shmem_ctx_destroy(c[0]);
  shmem_getmem(back.data(), buf, n, right());
  EXPECT_EQ(std::memcmp(back.data(), src.data(), n), 0) << "after destroy";
  for (int i = 1; i < nctx; ++i) shmem_ctx_destroy(c[i]);
  shmem_barrier_all();
  shmem_free(buf);
}

// Quiet on one context returns while another thread keeps its own context busy.
TEST(Ctx, QuietDoesNotWaitForAnotherContext) {
  const size_t n = 1 << 20;
  char* buf = zalloc<char>(2 * n);
  shmem_ctx_t mine;
  ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &mine), 0);
  std::atomic<bool> stop{false};
  std::atomic<long> issued{0};
  std::thread t([&] {
    shmem_ctx_t b;
    EXPECT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &b), 0);
    std::vector<char> big(n, 'b');
    while (!stop.load()) {
      shmem_ctx_putmem_nbi(b, buf + n, big.data(), n, right());
      issued.fetch_add(1);
    }
    shmem_ctx_quiet(b);
    shmem_ctx_destroy(b);
  });
  while (issued.load() == 0) sched_yield();
  std::vector<char> src(4096, static_cast<char>('a' + me())), back(4096);
  for (int k = 0; k < 100; ++k) {
    shmem_ctx_putmem(mine, buf, src.data(), src.size(), right());
    shmem_ctx_quiet(mine);
    shmem_ctx_getmem(mine, back.data(), buf, back.size(), right());
    EXPECT_EQ(back, src);
  }
  stop = true;
  t.join();
  shmem_ctx_destroy(mine);
  shmem_barrier_all();
  shmem_free(buf);
}

// ---------------------------------------------------------------- locks

TEST(Lock, MutualExclusionOfNonAtomicUpdates) {
  const int k = 200;
  long* lock = zalloc<long>(1);
  long* counter = zalloc<long>(2);
  for (int i = 0; i < k; ++i) {
    shmem_set_lock(lock);
    // Read-modify-write with plain get and put: only correct under mutual exclusion.
    long c = shmem_long_g(counter, 0);
    long d = shmem_long_g(counter + 1, npes() - 1);
    shmem_long_p(counter, c + 1, 0);
    shmem_long_p(counter + 1, d + 2, npes() - 1);
    shmem_clear_lock(lock);  // quiets first: the puts are complete before the release
  }
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(counter[0], long(k) * npes()); }
  if (me() == npes() - 1) { EXPECT_EQ(counter[1], 2L * k * npes()); }
  shmem_barrier_all();
  shmem_free(counter);
  shmem_free(lock);
}

TEST(Lock, TestLock) {
  long* lock = zalloc<long>(1);
  long* owner = zalloc<long>(1);
  if (me() == 0) { EXPECT_EQ(shmem_test_lock(lock), 0); }
  shmem_barrier_all();
  if (me() != 0) { EXPECT_EQ(shmem_test_lock(lock), 1); }  // held by PE 0
  shmem_barrier_all();
  if (me() == 0) shmem_clear_lock(lock);
  shmem_barrier_all();
  // Everyone takes it in turn with test_lock only.
  for (;;) {
    if (shmem_test_lock(lock) == 0) break;
    sched_yield();
  }
  long prev = shmem_long_atomic_fetch_inc(owner, 0);
  shmem_clear_lock(lock);
  EXPECT_GE(prev, 0);
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(*owner, long(npes())); }
  shmem_barrier_all();
  shmem_free(owner);
  shmem_free(lock);
}

// First come, first served: while a PE waits for the lock, each other PE takes it at most
// once (it queues behind the waiter when it asks again). Each PE counts the acquisitions
// that happen between its request and its grant; more than npes-1 can only come from the
// PE being descheduled between reading the count and asking, which must stay rare. An
// unfair lock lets a releasing PE retake the lock again and again, which shows here.
TEST(Lock, FirstComeFirstServed) {
  const int k = 300;
  long* lock = zalloc<long>(1);
  long* total = zalloc<long>(1);  // on PE 0: acquisitions so far
  int excess = 0;
  long worst = 0;
  for (int i = 0; i < k; ++i) {
    long before = shmem_long_atomic_fetch(total, 0);
    shmem_set_lock(lock);
    long now = shmem_long_g(total, 0);
    shmem_long_p(total, now + 1, 0);
    shmem_clear_lock(lock);
    worst = std::max(worst, now - before);
    if (now - before > npes() - 1) ++excess;
  }
  EXPECT_LE(excess * 10, k) << excess << " of " << k << " acquisitions were overtaken by more than " << npes() - 1
                            << " others (worst " << worst << ")";
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(*total, long(k) * npes()); }
  shmem_barrier_all();
  shmem_free(total);
  shmem_free(lock);
}

// ---------------------------------------------------------------- threads

TEST(Threads, MultipleThreadsIssueRmaAtomicsAndQuiet) {
  int provided = -1;
  shmem_query_thread(&provided);
  EXPECT_EQ(provided, SHMEM_THREAD_MULTIPLE);
  const int nthreads = 4, k = 300;
  const size_t slot = 256;
  long* counter = zalloc<long>(2);  // [0] on PE 0: fetch_inc; [1] on the last PE: ctx add
  char* slots = zalloc<char>(size_t(nthreads) * slot);
  uint64_t* sig = zalloc<uint64_t>(2 * nthreads);  // per thread: data signal, ack
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < nthreads; ++t) {
    ts.emplace_back([&, t] {
      shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
      if (t % 2 == 1 && shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) failures++;
      std::vector<char> src(slot);
      uint64_t* data_sig = sig + 2 * t;
      uint64_t* ack = sig + 2 * t + 1;
      for (int i = 1; i <= k; ++i) {
        (void)shmem_ctx_long_atomic_fetch_inc(ctx, counter, 0);
        shmem_long_atomic_add(counter + 1, 3, npes() - 1);
        // Thread t of every PE talks to thread t of its neighbours through slot t: send
        // round i once the right neighbour has acknowledged round i-1, then wait for the
        // left neighbour's round i, check it and acknowledge it.
        shmem_signal_wait_until(ack, SHMEM_CMP_GE, uint64_t(i - 1));
        for (size_t b = 0; b < slot; ++b) src[b] = static_cast<char>(t * 31 + i + me() + b);
        shmem_ctx_putmem_signal_nbi(ctx, slots + t * slot, src.data(), slot, data_sig, uint64_t(i),
                                    SHMEM_SIGNAL_SET, right());
        shmem_ctx_quiet(ctx);
        shmem_signal_wait_until(data_sig, SHMEM_CMP_EQ, uint64_t(i));
        for (size_t b = 0; b < slot; ++b)
          if (slots[t * slot + b] != static_cast<char>(t * 31 + i + left() + b)) {
            failures++;
            break;
          }
        shmem_ctx_signal_add(ctx, ack, 1, left());
        shmem_quiet();
      }
      if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(failures.load(), 0);
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(counter[0], long(nthreads) * k * npes()); }
  if (me() == npes() - 1) { EXPECT_EQ(counter[1], 3L * nthreads * k * npes()); }
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(slots);
  shmem_free(counter);
}

// Two threads of every PE run collectives at the same time, each on its own team (both
// teams hold every PE): sum reductions, broadcasts from a moving root and syncs, checked
// every round.
TEST(Threads, CollectivesOnTwoTeamsAtOnce) {
  const int n = npes(), k = 200;
  shmem_team_t team[2];
  for (auto& t : team) ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, nullptr, 0, &t), 0);
  long* buf = zalloc<long>(8);  // per thread: sum source and result, broadcast source and result
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      long* src = buf + 4 * t;
      long* sum = src + 1;
      long* bsrc = src + 2;
      long* bdst = src + 3;
      for (int i = 1; i <= k; ++i) {
        *src = long(i) * (me() + 1) + t;
        if (shmem_long_sum_reduce(team[t], sum, src, 1) != 0) failures++;
        if (*sum != long(i) * n * (n + 1) / 2 + long(t) * n) failures++;
        *bsrc = 1000L * i + 100L * t + me();
        const int root = i % n;
        if (shmem_long_broadcast(team[t], bdst, bsrc, 1, root) != 0) failures++;
        if (*bdst != 1000L * i + 100L * t + root) failures++;
        shmem_team_sync(team[t]);
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto& t : team) shmem_team_destroy(t);
  shmem_barrier_all();
  shmem_free(buf);
}

}  // namespace
