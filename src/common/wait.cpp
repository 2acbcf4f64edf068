#include "common/wait.hpp"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace symmem {

void futex_wait_shared(const std::atomic<uint32_t>* word, uint32_t seen, int64_t timeout_us) {
  struct timespec ts;
  ts.tv_sec = timeout_us / 1000000;
  ts.tv_nsec = (timeout_us % 1000000) * 1000;
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  syscall(SYS_futex, reinterpret_cast<const uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake_shared(const std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<const uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool heavy_fence_register() {
  const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) || !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
    return false;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

void heavy_fence() { syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0); }

int64_t Backoff::next_sleep_us() {
  int64_t s = sleep_us_;
  sleep_us_ = sleep_us_ * 2;
  if (sleep_us_ > p_.max_sleep_us) sleep_us_ = p_.max_sleep_us > 0 ? p_.max_sleep_us : 1;
  return s;
}

void Backoff::pause() {
  if (n_ < p_.spin) {
    ++n_;
    cpu_relax();
  } else if (n_ < p_.spin + p_.yield) {
    ++n_;
    sched_yield();
  } else {
    struct timespec ts = {0, static_cast<long>(next_sleep_us() * 1000)};
    nanosleep(&ts, nullptr);
  }
}

void Backoff::pause_on(const std::atomic<uint32_t>* word, uint32_t seen) {
  if (n_ < p_.spin + p_.yield) {
    pause();
  } else {
    futex_wait_shared(word, seen, next_sleep_us() * 4 + 100);
  }
}

}  // namespace symmem
