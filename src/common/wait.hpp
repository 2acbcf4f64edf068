// Waiting that works when PEs outnumber cores: spin briefly (cheapest wake-up when the
// peer is running on another core), then yield the core, then sleep with growing backoff.
// Sleeps on a 32-bit word use a shared futex so that the writer can wake the waiter at
// once (futex_wake_shared); plain sleeps are bounded by max_sleep_us.
#pragma once

#include <atomic>
#include <cstdint>

namespace symmem {

struct WaitPolicy {
  int spin = 4000;
  int yield = 64;
  int max_sleep_us = 1000;
  int first_sleep_us = 1;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Blocks until *word != seen, a wake, or timeout_us passes (spurious returns allowed).
// Works across processes on MAP_SHARED memory.
void futex_wait_shared(const std::atomic<uint32_t>* word, uint32_t seen, int64_t timeout_us);
void futex_wake_shared(const std::atomic<uint32_t>* word);

// Asymmetric fences (Linux membarrier, global expedited). A writer that stores a word and
// then loads its sleeper count needs a store-load fence between the two, unless every
// sleeper runs heavy_fence() between announcing itself and its last look: that makes
// every CPU running a registered process execute a full barrier, so either the writer's
// store is visible to that look or the writer's load sees the announcement. The fast side
// then pays nothing, the side about to sleep a system call. heavy_fence_register() makes
// this process one of those (idempotent); false where the kernel does not offer it.
bool heavy_fence_register();
void heavy_fence();

class Backoff {
 public:
  explicit Backoff(const WaitPolicy& p) : p_(p), sleep_us_(p.first_sleep_us > 0 ? p.first_sleep_us : 1) {}
  // One failed poll: pause, yield or sleep depending on how long we have waited.
  void pause();
  // Same, but a sleep happens on `word` (woken early when its value changes from `seen`
  // and a writer calls futex_wake_shared).
  void pause_on(const std::atomic<uint32_t>* word, uint32_t seen);
  // True once the wait has reached its sleeping phase (writers must then be told to wake).
  bool sleeping() const { return n_ >= p_.spin + p_.yield; }
  void reset() {
    n_ = 0;
    sleep_us_ = p_.first_sleep_us > 0 ? p_.first_sleep_us : 1;
  }

 private:
  int64_t next_sleep_us();
  WaitPolicy p_;
  int n_ = 0;
  int64_t sleep_us_ = 1;
};

// Waits until pred() is true, with the backoff above.
template <class Pred>
inline void wait_until(const WaitPolicy& p, Pred pred) {
  if (pred()) return;
  Backoff b(p);
  while (!pred()) b.pause();
}

}  // namespace symmem
