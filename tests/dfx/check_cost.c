/* What SYMMEM_CHECK costs on the smallest calls: ns per 8-byte shmem_putmem to the next PE
 * and per shmem_barrier_all, best of 40 short rounds (short, so that some run without being preempted on a loaded machine). Run the same binary with SYMMEM_CHECK=0 and
 * =1 in one session (docs/dfx.md "Checks" gives the figures). Not a test: timings vary. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char** argv) {
  const int puts = argc > 1 ? atoi(argv[1]) : 20000, bars = argc > 2 ? atoi(argv[2]) : 1000;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* dst = shmem_malloc(64);
  long v = me;
  double best_put = 1e30, best_bar = 1e30;
  for (int round = 0; round < 40; ++round) {
    shmem_barrier_all();
    double t0 = now_ns();
    for (int i = 0; i < puts; ++i) shmem_putmem(dst, &v, 8, (me + 1) % n);
    double t1 = now_ns();
    shmem_barrier_all();
    double t2 = now_ns();
    for (int i = 0; i < bars; ++i) shmem_barrier_all();
    double t3 = now_ns();
    if ((t1 - t0) / puts < best_put) best_put = (t1 - t0) / puts;
    if ((t3 - t2) / bars < best_bar) best_bar = (t3 - t2) / bars;
  }
  if (me == 0) printf("put8 %.1f ns  barrier %.1f ns  (%d PEs, SYMMEM_CHECK=%s)\n", best_put, best_bar, n,
                      getenv("SYMMEM_CHECK") ? getenv("SYMMEM_CHECK") : "0");
  shmem_free(dst);
  shmem_finalize();
  return 0;
}
