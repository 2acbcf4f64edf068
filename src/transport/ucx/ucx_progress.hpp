// How a thread waits on the UCX route: the one waiting loop (drive) behind requests, quiet
// and the runtime's cross-node waits. The waiting thread drives the worker itself while
// the progress thread stands aside (app_driving), so a reply is handled by the thread that
// waits for it, with no wake-up of another thread in between; once idle it sleeps on the
// workers' event fds. A template, inline into each wait (ucx_ops.cpp); the progress
// thread is ucx_progress.cpp.
#pragma once

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>

#include "transport/ucx/ucx_impl.hpp"

namespace symmem {

// Polls until spin_ns have passed since it last found work, yielding the core every few
// empty polls where this host has more PEs than cores (the peer it waits for may need
// it), then sleeps on the event fds, armed, woken by the next event. Ends the job naming
// `pe` once the deadline passes.
template <class Done>
inline void UcxTransport::Impl::drive(UcxLane& l, Done done, const char* what, int pe) {
  if (done()) return;
  app_driving.fetch_add(1, std::memory_order_seq_cst);
  enter();
  const Clock::time_point start = Clock::now();
  Clock::time_point busy = start;  // the last progress that did something
  Clock::time_point seen = start;  // the clock when last read
  Clock::time_point next_nap = start + std::chrono::nanoseconds(kWorkNapEveryNs);
  unsigned idle = 0;
  unsigned worked = 0;
  unsigned fruitless = 0;  // sleeps in a row that did not block
  for (;;) {
    if (progress(l)) {
      idle = 0;
      fruitless = 0;
      if (p.after_progress) p.after_progress();
      if (done()) break;
      busy = Clock::time_point{};  // read the clock at the next empty poll
      // A worker that always has something to do (connection retries) still meets
      // the deadline, and still lets the threads of its CPU run (what it waits for may
      // be theirs to do: UCX's async thread accepts connections): a nap after every
      // kWorkNapEveryNs of such work, not after every few pieces of it, which a PE
      // serving a stream of requests while it waits would pay a wake-up for each time.
      if ((++worked & 255) == 0) {
        const Clock::time_point now = seen = Clock::now();
        if (now - start > std::chrono::nanoseconds(timeout_ns)) {
          app_driving.fetch_sub(1, std::memory_order_seq_cst);
          timed_out(what, pe);
        }
        if (now >= next_nap) {
          nap(kNapFloorNs);
          next_nap = Clock::now() + std::chrono::nanoseconds(kWorkNapEveryNs);
        }
      }
      continue;
    }
    if (done()) break;
    if (++idle % 8) continue;
    const Clock::time_point now = seen = Clock::now();
    if (busy == Clock::time_point{}) busy = now;
    if (now - start > std::chrono::nanoseconds(timeout_ns)) {
      app_driving.fetch_sub(1, std::memory_order_seq_cst);
      timed_out(what, pe);
    }
    // Spinning again after each piece of work: a PE that serves a stream of requests
    // (or waits for a quick reply) keeps polling; an idle one sleeps.
    if (now - busy < std::chrono::nanoseconds(spin_ns)) {
      if (p.spin_yields) sched_yield();
    } else if (sleep_on_efd(l, done)) {
      fruitless = 0;
    } else if (++fruitless >= 2) {
      // It could not sleep twice in a row (another thread sleeps on the fd, UCX keeps
      // reporting events, or the fd is ready with nothing to progress: a connection
      // UCX's async thread has yet to accept). A yield would not do: under SCHED_FIFO
      // it hands the CPU to no lower class, under EEVDF to every other task first.
      // Blocking a while lets whoever has the work run, on any scheduler.
      nap(std::min<long>(kNapCapNs, kNapFloorNs << std::min(fruitless - 2, 5u)));
    }
  }
  app_driving.fetch_sub(1, std::memory_order_seq_cst);
  // A thread that leaves a long wait may go and compute: the progress thread serves again
  // (a short one, e.g. a fetch-add's round trip, leaves it parked: its park is bounded).
  if (seen - start >= std::chrono::nanoseconds(kLongWaitNs) && parked.load(std::memory_order_seq_cst)) wake_progress();
}

// Takes lane x's event fd for one sleep: false when another thread sleeps there or
// events are pending (then the caller progresses again).
inline bool UcxTransport::Impl::arm(UcxLane& x, bool* busy) {
  bool mine = false;
  if (x.efd < 0 || !x.efd_owner.compare_exchange_strong(mine, true, std::memory_order_acq_rel)) return false;
  if (ucp_worker_arm(x.worker) != UCS_OK) {
    x.efd_owner.store(false, std::memory_order_release);
    *busy = true;
    return false;
  }
  return true;
}

// One sleep of a waiting thread, on the armed event fds of its lane and of the service
// worker (those no other thread sleeps on). Bounded: the condition may also be met by
// another thread's progress or by an on-node store. False when it did not block: nothing
// to arm, events pending, or an fd ready at once.
template <class Done>
inline bool UcxTransport::Impl::sleep_on_efd(UcxLane& l, Done& done) {
  bool busy = false;
  pollfd pf[2];
  UcxLane* held[2];
  int n = 0;
  bool blocked = false;
  if (arm(l, &busy)) held[n] = &l, pf[n++] = pollfd{l.efd, POLLIN, 0};
  if (!busy && &l != &svc && arm(svc, &busy)) held[n] = &svc, pf[n++] = pollfd{svc.efd, POLLIN, 0};
  if (n > 0 && !busy) {
    if (done()) {
      blocked = true;
    } else {
      timespec ts{0, kSleepNs};  // Linux leaves the time not slept here
      blocked = ppoll(pf, nfds_t(n), &ts, nullptr) <= 0 || ts.tv_sec != 0 || ts.tv_nsec < kSleepNs - kNapFloorNs;
    }
  }
  for (int i = 0; i < n; ++i) held[i]->efd_owner.store(false, std::memory_order_release);
  return blocked;
}

inline void UcxTransport::Impl::nap(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

}  // namespace symmem
