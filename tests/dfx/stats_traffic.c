// A known traffic pattern for SYMMEM_STATS (check_stats.py checks the report against it):
// every PE puts 10 x 1000 bytes to its right neighbour, gets 3 x 500 bytes from its left,
// increments a counter on PE 0 5 times, fetch-adds on its right 2 times, puts 100 bytes
// with a signal to its right 2 times, adds to a signal on its left once, waits until its
// right neighbour's signal reaches it; then 8 barriers to which PE 2 is 300 ms late; then PE
// 0 sends PE 3 a go (8-byte p) and waits until PE 3 answers with another.
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  char* buf = shmem_malloc(4096);
  long* ctr = shmem_malloc(2 * sizeof(long));
  uint64_t* sig = shmem_calloc(2, sizeof(uint64_t));
  static char src[1000];
  char dst[500];
  memset(src, me, sizeof src);
  if (!buf || !ctr || !sig) return 1;
  for (int i = 0; i < 10; ++i) shmem_putmem(buf, src, 1000, right);
  for (int i = 0; i < 3; ++i) shmem_getmem(dst, buf, 500, left);
  for (int i = 0; i < 5; ++i) shmem_long_atomic_inc(ctr, 0);
  for (int i = 0; i < 2; ++i) (void)shmem_long_atomic_fetch_add(ctr + 1, 1, right);
  for (int i = 0; i < 2; ++i) shmem_putmem_signal(buf, src, 100, &sig[0], 1, SHMEM_SIGNAL_SET, right);
  shmem_signal_add(&sig[1], 1, left);
  shmem_signal_wait_until(&sig[1], SHMEM_CMP_EQ, 1);  // the right neighbour's add
  for (int i = 0; i < 8; ++i) {
    if (me == 2) usleep(300000);  // a margin over scheduling delays on a loaded machine
    shmem_barrier_all();
  }
  // A wait that cannot hold at once: PE 3 answers PE 0's go 10 ms after seeing it.
  static long go, flag;
  if (me == 0) {
    shmem_long_p(&go, 1, 3);
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
  } else if (me == 3) {
    shmem_long_wait_until(&go, SHMEM_CMP_EQ, 1);
    usleep(10000);
    shmem_long_p(&flag, 1, 0);
  }
  shmem_finalize();
  return 0;
}
