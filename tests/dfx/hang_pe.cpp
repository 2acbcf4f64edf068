// The provoking program of the hang-report tests (hang_tests.py): each mode makes a job of
// N >= 3 PEs hang one way.
//   skip   PEs 0..N-2 enter a barrier that PE N-1 skips: it waits on 'flags'+12 for 1,
//          which nobody writes (a deadlock)
//   wait   every PE waits on its own 'flags'+8 for 5, which nobody writes
//   stall  PE 1 computes (spins in its own code) for S seconds while the others wait in a
//          barrier
//   live   PE 1 sleeps in its own code until the file $HANG_GO exists (at most S seconds)
//          while the others wait in a barrier; then every PE finishes normally. PE 1 creates
//          $HANG_READY first, so the driver knows the others are about to wait.
//   writer PE 0 atomically sets PE N-1's 'flags'+12 to 2, then as in skip (N-1 waits for 1)
//   nearby PE 1 puts 1 into PE N-1's 'flags'+8 (the word beside the waited one), then as in skip
//   nbi    PE 0 put_nbi's 2 into PE N-1's 'flags'+12 and, never quieting, waits on its own
//          'flags'+16; the others as in skip (on two emulated nodes: the put is on UCX)
//   die    PE 2 adds 1 to PE 0's 'flags'+0, sleeps a second and kills itself (SIGKILL)
//          while the others wait in a barrier
//   bcast  on a team split from the world (every PE), PEs 0..N-2 broadcast 16 bytes from
//          root N-1, which skips it: it waits on 'flags'+12 for 1 (a deadlock)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <thread>

#include "symmem/symmem.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hang_pe skip|wait|stall|live|writer|nearby|nbi|die|bcast [seconds]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const double secs = argc > 2 ? std::atof(argv[2]) : 30;
  symmem::Runtime rt;
  const int me = rt.my_pe(), n = rt.n_pes();
  auto flags = rt.alloc<int>(16);
  for (int i = 0; i < 16; ++i) flags[i] = 0;
  rt.set_name(flags.data(), "flags");
  rt.barrier_all();
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
  if (mode == "skip" || mode == "writer" || mode == "nearby" || mode == "nbi") {
    if (mode == "writer" && me == 0) rt.atomic_set(flags.data() + 3, 2, n - 1);
    if (mode == "nearby" && me == 1) rt.p(flags.data() + 2, 1, n - 1);
    const int two = 2;
    if (mode == "nbi" && me == 0) {
      rt.put_nbi(flags.data() + 3, &two, sizeof two, n - 1);
      rt.wait_until(flags.data() + 4, symmem::Cmp::kEq, 1);  // no barrier: it would quiet the put
    } else if (me == n - 1) {
      rt.wait_until(flags.data() + 3, symmem::Cmp::kEq, 1);
    } else {
      rt.barrier_all();
    }
  } else if (mode == "bcast") {
    symmem::Team t = rt.team_world().split_strided(0, 1, n);
    if (me == n - 1) {
      rt.wait_until(flags.data() + 3, symmem::Cmp::kEq, 1);
    } else {
      t.broadcast(std::span<int>(flags.data() + 8, 4), std::span<const int>(flags.data() + 12, 4), n - 1);
    }
  } else if (mode == "die") {
    if (me == 2) {
      rt.atomic_add(flags.data(), 1, 0);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      raise(SIGKILL);
    }
    rt.barrier_all();
  } else if (mode == "wait") {
    rt.wait_until(flags.data() + 2, symmem::Cmp::kEq, 5);
  } else if (mode == "stall") {
    if (me == 1) {
      volatile uint64_t x = 0;
      while (std::chrono::steady_clock::now() < end) x = x + 1;
    }
    rt.barrier_all();
  } else if (mode == "live") {
    if (me == 1) {
      const char* ready = std::getenv("HANG_READY");
      const char* go = std::getenv("HANG_GO");
      if (ready) std::fclose(std::fopen(ready, "w"));
      while (std::chrono::steady_clock::now() < end && !(go && access(go, F_OK) == 0))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    rt.barrier_all();
  } else {
    std::fprintf(stderr, "hang_pe: unknown mode %s\n", mode.c_str());
    return 2;
  }
  rt.free(flags);
  std::printf("hang_pe: PE %d done\n", me);
  return 0;
}
