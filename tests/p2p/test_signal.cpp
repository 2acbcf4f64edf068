// Put-with-signal: SET and ADD, every form (typed, sized, mem, nbi, context), signal
// fetch / set / add / wait_until, and a ring of many round trips at several sizes where
// every message's data is checked as soon as its signal is seen.
#include <thread>
#include <vector>

#include "p2p_test.hpp"

using namespace p2pt;

namespace {

unsigned char pat(int pe, uint64_t k, size_t i) { return static_cast<unsigned char>(pe * 131 + k * 17 + i * 7); }

TEST(Signal, SetAddFetch) {
  uint64_t* sig = zalloc<uint64_t>(2);
  long* data = zalloc<long>(4);
  long src[4] = {me() * 1L, me() * 2L, me() * 3L, me() * 4L};
  // SET from my left neighbour's point of view: everyone signals its right neighbour.
  shmem_long_put_signal(data, src, 4, sig, 42 + me(), SHMEM_SIGNAL_SET, right());
  EXPECT_EQ(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, uint64_t(42 + left())), uint64_t(42 + left()));
  for (int i = 0; i < 4; ++i) { EXPECT_EQ(data[i], left() * long(i + 1)); }
  EXPECT_EQ(shmem_signal_fetch(sig), uint64_t(42 + left()));
  shmem_barrier_all();
  // ADD from every PE onto PE 0's second signal word, through every adding routine.
  shmem_signal_add(sig + 1, 1, 0);
  shmem_ctx_signal_add(SHMEM_CTX_DEFAULT, sig + 1, 2, 0);
  shmem_putmem_signal(data, src, 0, sig + 1, 4, SHMEM_SIGNAL_ADD, 0);  // zero bytes, still signals
  if (me() == 0) { EXPECT_EQ(shmem_signal_wait_until(sig + 1, SHMEM_CMP_GE, uint64_t(7 * npes())), uint64_t(7 * npes())); }
  shmem_barrier_all();
  // signal_set overwrites.
  shmem_signal_set(sig, 7, right());
  shmem_ctx_signal_set(SHMEM_CTX_DEFAULT, sig, 8, right());
  shmem_barrier_all();
  EXPECT_EQ(shmem_signal_fetch(sig), uint64_t(8));
  shmem_barrier_all();
  shmem_free(data);
  shmem_free(sig);
}

// One message of `bytes` through form number `form` (cycling through every routine).
void send(int form, shmem_ctx_t ctx, void* dst, const void* src, size_t bytes, uint64_t* sig, uint64_t k, int pe) {
  const int op = SHMEM_SIGNAL_SET;
  switch (form % 12) {
    case 0: shmem_putmem_signal(dst, src, bytes, sig, k, op, pe); break;
    case 1: shmem_putmem_signal_nbi(dst, src, bytes, sig, k, op, pe); shmem_quiet(); break;
    case 2: shmem_ctx_putmem_signal(ctx, dst, src, bytes, sig, k, op, pe); break;
    case 3: shmem_ctx_putmem_signal_nbi(ctx, dst, src, bytes, sig, k, op, pe); shmem_ctx_quiet(ctx); break;
    case 4: shmem_put8_signal(dst, src, bytes, sig, k, op, pe); break;
    case 5: shmem_put64_signal_nbi(dst, src, bytes / 8, sig, k, op, pe); shmem_quiet(); break;
    case 6: shmem_ctx_put32_signal(ctx, dst, src, bytes / 4, sig, k, op, pe); break;
    case 7: shmem_ctx_put128_signal_nbi(ctx, dst, src, bytes / 16, sig, k, op, pe); shmem_ctx_quiet(ctx); break;
    case 8: shmem_put16_signal(dst, src, bytes / 2, sig, k, op, pe); break;
    case 9: shmem_uchar_put_signal(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes,
                                   sig, k, op, pe); break;
    case 10: shmem_ctx_uint64_put_signal(ctx, static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src),
                                         bytes / 8, sig, k, op, pe); break;
    default: shmem_put_signal(static_cast<char*>(dst), static_cast<const char*>(src), bytes, sig, k, op, pe);
  }
}

// A ring: every PE sends message k to its right neighbour, waits for message k from its
// left one, checks all of it, and acknowledges it (a signal ADD) so that the sender may
// overwrite the buffer with message k+1.
void ring(const std::vector<size_t>& sizes, int rounds) {
  size_t max = 0;
  for (size_t s : sizes) max = std::max(max, s);
  unsigned char* buf = zalloc<unsigned char>(max);
  uint64_t* sig = zalloc<uint64_t>(2);  // [0] data signal, [1] acks from my right neighbour
  std::vector<unsigned char> src(max);
  shmem_ctx_t ctx;
  ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
  size_t bad = 0;
  for (uint64_t k = 1; k <= uint64_t(rounds); ++k) {
    const size_t bytes = sizes[k % sizes.size()];
    shmem_signal_wait_until(sig + 1, SHMEM_CMP_GE, k - 1);
    for (size_t i = 0; i < bytes; ++i) src[i] = pat(me(), k, i);
    send(int(k), ctx, buf, src.data(), bytes, sig, k, right());
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, k);
    for (size_t i = 0; i < bytes; ++i) bad += buf[i] != pat(left(), k, i);
    shmem_signal_add(sig + 1, 1, left());
  }
  EXPECT_EQ(bad, 0u) << "bytes seen stale after their signal";
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
  shmem_free(sig);
  shmem_free(buf);
}

TEST(Signal, RingSmallMessages) { ring({16, 32, 64, 128, 256}, 3000); }
TEST(Signal, RingLargeMessages) { ring({4096, 65536, 1 << 20, 4 << 20}, 48); }

// A waiter that has gone to sleep is woken by the signal (the writer first lets it fall
// asleep). Run with SYMMEM_WAIT_MAX_SLEEP_US large, a lost wake-up hangs the test.
TEST(Signal, SleepingWaiterIsWoken) {
  uint64_t* sig = zalloc<uint64_t>(1);
  for (uint64_t k = 1; k <= 5; ++k) {
    if (me() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (int pe = 1; pe < npes(); ++pe) shmem_signal_set(sig, k, pe);
    } else {
      EXPECT_GE(shmem_signal_wait_until(sig, SHMEM_CMP_GE, k), k);  // a late waiter may see a later k
    }
  }
  shmem_barrier_all();
  shmem_free(sig);
}

}  // namespace
