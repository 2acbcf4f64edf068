// The trace tool's provoking program (docs/dfx.md, Timeline). Every PE sends a block with a
// put_signal to its right neighbour and waits for the signal from its left one, kIters
// times between barriers (in round 3 PE 0 first sleeps, so PE 1's wait goes to sleep).
//   ok:   then finalizes.
//   kill: PE n-1 then does kTailPuts puts to PE 0 and kills itself with SIGKILL while the
//         others wait in a barrier; its ring still holds those puts.
//   bench N: N 8-byte puts to the right neighbour in a tight loop; PE 0 prints ns per put.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "symmem/symmem.hpp"

namespace {
constexpr int kIters = 20;
double cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}
double wall_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}
constexpr int kTailPuts = 5;
}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "ok";
  symmem::Runtime rt;
  const int me = rt.my_pe(), n = rt.n_pes();
  const int right = (me + 1) % n;
  auto data = rt.alloc<char>(64);
  auto sig = rt.alloc<uint64_t>(1);
  rt.set_name(data.data(), "halo");
  rt.set_name(sig.data(), "flags");
  sig[0] = 0;
  char block[64];
  std::memset(block, me, sizeof block);
  rt.barrier_all();
  if (std::strcmp(mode, "bench") == 0) {
    const long iters = argc > 2 ? std::atol(argv[2]) : 1000000;
    auto* word = reinterpret_cast<uint64_t*>(data.data());
    uint64_t v = 1;
    for (int rep = 0; rep < 2; ++rep) {  // the first pass warms up
      rt.barrier_all();
      // CPU time of this thread: on a loaded machine wall time is mostly other processes.
      const double c0 = cpu_ns(), w0 = wall_ns();
      for (long i = 0; i < iters; ++i) rt.put(word, &v, 1, right);
      const double c1 = cpu_ns(), w1 = wall_ns();
      rt.barrier_all();
      if (rep == 1 && me == 0)
        std::printf("ns/put cpu %.2f wall %.2f\n", (c1 - c0) / double(iters), (w1 - w0) / double(iters));
    }
    rt.barrier_all();
    return 0;
  }
  for (int it = 1; it <= kIters; ++it) {
    rt.barrier_all();
    // Only PE 0: were every PE to sleep, each wait would last only the PEs' skew in waking.
    if (it == 3 && me == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rt.put_signal(data.data(), block, sizeof block, sig.data(), uint64_t(it), symmem::SignalOp::kSet, right);
    rt.signal_wait_until(sig.data(), symmem::Cmp::kGe, uint64_t(it));
  }
  rt.barrier_all();
  if (std::strcmp(mode, "kill") == 0) {
    if (me == n - 1) {
      for (int i = 0; i < kTailPuts; ++i) rt.put(data.data() + 8 * i, block, 8, 0);
      std::fflush(nullptr);
      kill(getpid(), SIGKILL);
    }
    rt.barrier_all();  // PE n-1 never arrives: symmem-run ends the job
  }
  rt.free(sig);
  rt.free(data);
  return 0;
}
