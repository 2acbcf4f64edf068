// The progress thread (SYMMEM_UCX_PROGRESS=thread): over TCP the *target* performs a put,
// get or atomic inside ucp_worker_progress, so this thread serves the remote operations
// aimed at this PE while the PE computes, sleeps or waits elsewhere. It stays off the
// worker (and off the CPU) whenever an application thread is inside the transport
// (app_driving, app_ops in ucx_impl.hpp): that thread serves then.
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "transport/ucx/ucx_impl.hpp"

namespace symmem {
namespace {

void drain(int fd) {
  uint64_t n;
  ssize_t r = ::read(fd, &n, sizeof n);
  (void)r;
}

// While an application thread makes short calls this thread looks again after 50 us,
// doubling to 0.8 ms (a PE that leaves the library is served soon after). While one waits
// it parks: 1 ms, then 16, then 32 ms while it finds a thread inside at every look (a
// wait that goes on, or a stream of operations), back to 1 ms once a look finds nobody; a
// thread that leaves a wait of 1 ms or more, or goes to sleep in one, wakes it
// (wake_progress). So a PE that computes after a short wait is served within 1 ms, after
// a stream of them within 32 ms. Each look takes the waiting thread's core for a wake-up:
// tens of microseconds of a fetch-add's round trip on a VM.
constexpr long kLookNs = 50000, kLookMaxNs = 800000;
constexpr long kParkNs = 1000000, kParkMaxNs = 32000000;

}  // namespace

void UcxTransport::Impl::start_progress_thread() {
  wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread = std::thread([this] { progress_loop(); });
}

void UcxTransport::Impl::stop_progress_thread() {
  if (!thread.joinable()) return;
  stop.store(true, std::memory_order_release);
  wake_progress();
  thread.join();
}

// One UCX call of the progress thread, marked (thread_in_ucx) and made only while no
// application thread is inside: its result, or -1 when one is.
template <class Call>
inline int UcxTransport::Impl::serve(Call call) {
  thread_in_ucx.store(true, std::memory_order_seq_cst);
  int r = -1;
  if (app_driving.load(std::memory_order_seq_cst) + app_ops.load(std::memory_order_seq_cst) == 0) r = int(call());
  thread_in_ucx.store(false, std::memory_order_release);
  return r;
}

// It sleeps in ppoll, not in an epoll set of its own: a fd in an epoll set stays
// registered while the thread naps, and every packet that reaches the worker would then
// also run that set's wake-up callback, a locked path, in the sender's softirq.
void UcxTransport::Impl::progress_loop() {
  const int efd = svc.efd;
  pollfd pf[2] = {{wake_fd, POLLIN, 0}, {efd, POLLIN, 0}};
  const timespec bound{0, efd >= 0 ? 20000000 : 1000000};
  auto inside = [this] {
    return app_driving.load(std::memory_order_seq_cst) + app_ops.load(std::memory_order_seq_cst) > 0;
  };
  timespec pause{0, 0};
  long look = kLookNs;
  long park = kParkNs;
  while (!stop.load(std::memory_order_acquire)) {
    if (app_driving.load(std::memory_order_seq_cst) > 0) {
      parked.store(true, std::memory_order_seq_cst);
      const timespec bound_park{0, park};
      if (app_driving.load(std::memory_order_seq_cst) > 0) (void)ppoll(pf, 1, &bound_park, nullptr);
      parked.store(false, std::memory_order_relaxed);
      drain(wake_fd);
      park = std::min(kParkMaxNs, park * 16);
      continue;
    }
    if (app_ops.load(std::memory_order_seq_cst) > 0) {
      pause.tv_nsec = look;
      nanosleep(&pause, nullptr);
      look = std::min(kLookMaxNs, look * 2);
      continue;
    }
    look = kLookNs;
    park = kParkNs;
    // Stops as soon as an application thread is inside: while a stream of replies keeps
    // this loop busy it would otherwise take every other one from the thread that waits
    // for it, both spinning on UCX's worker lock (a second busy thread per PE).
    unsigned n = 0;
    for (int r; (r = serve([this] { return progress_worker(svc.worker); })) > 0;) ++n;
    if (n && p.after_progress) p.after_progress();
    if (inside()) continue;  // the branch above waits
    if (efd >= 0) {
      const int armed = serve([this] { return ucp_worker_arm(svc.worker) == UCS_ERR_BUSY ? 1 : 0; });
      if (armed != 0) continue;  // busy (progress again), or an application thread came in
    }
    // Bounded: a wake-up consumed by another thread's progress costs at most this.
    if (ppoll(pf, efd >= 0 ? 2 : 1, &bound, nullptr) > 0 && (pf[0].revents & POLLIN)) drain(wake_fd);
  }
}

void UcxTransport::Impl::wake_progress() {
  uint64_t one = 1;
  ssize_t w = ::write(wake_fd, &one, sizeof one);
  (void)w;
}

// A thread polling progress() on its own (a wait on this PE's memory) counts as driving.
void UcxTransport::polling(bool on, bool hand_over) {
  if (on) {
    impl_->app_driving.fetch_add(1, std::memory_order_seq_cst);
    impl_->enter();
  } else {
    impl_->app_driving.fetch_sub(1, std::memory_order_seq_cst);
    if (hand_over && impl_->parked.load(std::memory_order_seq_cst)) impl_->wake_progress();
  }
}

}  // namespace symmem
