// HostExec: the executor of symmem::algo (symmem/coll_algos.hpp) over the host heap, so the
// device collectives' algorithms run in CI without a GPU. A channel is a group of
// std::threads (the CUDA block's threads), sync_threads a barrier of the group; peers are
// reached through the host heap's peer addresses (Runtime::ptr), signals are release
// stores and waits acquire loads that spin a little and then yield (tests run more PEs than
// cores), with a deadline that aborts the PE naming what it waited for.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "symmem/coll_algos.hpp"
#include "symmem/symmem.hpp"

namespace symmem::test {

// A reusable barrier of n threads that spins briefly, then yields.
class SpinBarrier {
 public:
  explicit SpinBarrier(unsigned n) : n_(n) {}
  void arrive_and_wait() {
    if (n_ <= 1) return;
    const unsigned g = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      count_.store(0, std::memory_order_relaxed);
      gen_.store(g + 1, std::memory_order_release);
      return;
    }
    for (unsigned s = 0; gen_.load(std::memory_order_acquire) == g; ++s)
      if (s >= 16) sched_yield();
  }

 private:
  const unsigned n_;
  std::atomic<unsigned> count_{0}, gen_{0};
};

// This PE's view: its sync area (a symmetric block of SyncLayout::kBytes, zeroed) and the
// distance to each world PE's copy of a heap address.
struct HostPe {
  symmem::Runtime* rt = nullptr;
  char* sync = nullptr;
  int me = 0, npes = 1;
  std::vector<ptrdiff_t> delta;  // PE q's copy of a heap address p is p + delta[q]
  double timeout_s = 30;

  HostPe(symmem::Runtime& r, char* sync_area) : rt(&r), sync(sync_area), me(r.my_pe()), npes(r.n_pes()) {
    for (int q = 0; q < npes; ++q) {
      char* p = static_cast<char*>(r.ptr(sync, q));
      if (p == nullptr) {
        std::fprintf(stderr, "HostPe: PE %d is not reachable by load/store from PE %d\n", q, me);
        std::abort();
      }
      delta.push_back(p - sync);
    }
  }
};

class HostExec {
 public:
  HostExec(HostPe& pe, SpinBarrier& bar, unsigned tid, unsigned nthreads)
      : pe_(&pe), bar_(&bar), tid_(tid), nth_(nthreads) {}

  unsigned tid() const { return tid_; }
  unsigned nthreads() const { return nth_; }
  void sync_threads() { bar_->arrive_and_wait(); }
  char* sync_base(int world_pe) { return pe_->sync + pe_->delta[size_t(world_pe)]; }
  template <class T>
  T* peer(T* p, int world_pe) {
    using C = std::conditional_t<std::is_const_v<T>, const char, char>;
    return reinterpret_cast<T*>(reinterpret_cast<C*>(p) + pe_->delta[size_t(world_pe)]);
  }
  void signal_set(uint64_t* remote, uint64_t v) { __atomic_store_n(remote, v, __ATOMIC_RELEASE); }
  void wait_ge(uint64_t* local, uint64_t v, int peer_world_pe) {
    uint64_t seen = __atomic_load_n(local, __ATOMIC_ACQUIRE);
    if (seen >= v) return;
    const auto t0 = std::chrono::steady_clock::now();
    for (unsigned s = 1;; ++s) {
      seen = __atomic_load_n(local, __ATOMIC_ACQUIRE);
      if (seen >= v) return;
      if (s < 32) continue;
      sched_yield();
      if ((s & 255u) == 0) {
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (waited > pe_->timeout_s) expire(local, v, seen, peer_world_pe, waited);
      }
    }
  }
  void fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

 private:
  [[noreturn]] void expire(uint64_t* local, uint64_t want, uint64_t seen, int peer, double waited) {
    const auto idx = size_t(local - symmem::algo::SyncLayout::pad(pe_->sync, 0, 0));
    std::fprintf(stderr,
                 "algos host: PE %d channel %zu thread %u: wait for PE %d's pad %p to reach %llu expired after "
                 "%.1f s, seen %llu\n",
                 pe_->me, idx / symmem::algo::kMaxPes, tid_, peer, static_cast<void*>(local),
                 static_cast<unsigned long long>(want), waited, static_cast<unsigned long long>(seen));
    std::fflush(stderr);
    std::abort();
  }

  HostPe* pe_;
  SpinBarrier* bar_;
  unsigned tid_, nth_;
};

// What each thread of run_channels gets: its executor, its channel, and the PE-wide
// thread index and barrier (to model a kernel boundary between collectives).
struct Worker {
  HostExec& x;
  int ch, nch;
  unsigned gtid, gthreads;
  SpinBarrier& all;
};

// Runs f(Worker&) on nch channels of nth threads each, and joins them (a kernel's grid).
template <class F>
void run_channels(HostPe& pe, int nch, unsigned nth, F&& f) {
  std::vector<std::unique_ptr<SpinBarrier>> bars;
  for (int c = 0; c < nch; ++c) bars.push_back(std::make_unique<SpinBarrier>(nth));
  SpinBarrier all(unsigned(nch) * nth);
  std::vector<std::thread> threads;
  for (int c = 0; c < nch; ++c)
    for (unsigned t = 0; t < nth; ++t)
      threads.emplace_back([&, c, t] {
        HostExec x(pe, *bars[size_t(c)], t, nth);
        Worker w{x, c, nch, unsigned(c) * nth + t, unsigned(nch) * nth, all};
        f(w);
      });
  for (auto& th : threads) th.join();
}

}  // namespace symmem::test
