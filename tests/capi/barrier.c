/* barrier_all and sync_all in a long loop. In each iteration every PE puts the iteration
 * number to the next PE, then synchronises, then checks what the previous PE put. Two
 * slots alternate so that a fast neighbour's next put cannot overwrite a value before it
 * is checked. barrier_all completes the puts itself; sync_all does not (it only
 * synchronises), so that loop calls quiet first. */
#include <unistd.h>

#include "capi_check.h"

enum { kIters = 10000 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  long *ctr = capi_zalloc(2, sizeof(long));
  if (!ctr) FATAL("allocation failed");

  for (long i = 1; i <= kIters; ++i) {
    if (i % 10 == 0) {
      const long v = i; /* stays valid until the barrier completes the nbi put */
      shmem_putmem_nbi(&ctr[i % 2], &v, sizeof v, next);
      shmem_barrier_all();
    } else {
      shmem_long_p(&ctr[i % 2], i, next);
      shmem_barrier_all();
    }
    CHECK(ctr[i % 2] == i, "shmem_barrier_all iteration %ld: value from PE %d is %ld", i, prev,
          ctr[i % 2]);
  }

  for (long i = kIters + 1; i <= 2 * kIters; ++i) {
    shmem_long_p(&ctr[i % 2], i, next);
    shmem_quiet();
    shmem_sync_all();
    CHECK(ctr[i % 2] == i, "shmem_sync_all iteration %ld: value from PE %d is %ld", i, prev,
          ctr[i % 2]);
  }

  /* Nobody leaves a barrier before the last PE has arrived: the last PE arrives late and
   * only then writes to everyone. */
  long *late = capi_zalloc(2, sizeof(long));
  if (!late) FATAL("allocation failed");
  if (me == n - 1) {
    usleep(200 * 1000);
    for (int pe = 0; pe < n; ++pe) shmem_long_p(&late[0], 1, pe);
  }
  shmem_barrier_all();
  CHECK(late[0] == 1, "left shmem_barrier_all before PE %d arrived", n - 1);
  shmem_barrier_all();
  if (me == n - 1) {
    usleep(200 * 1000);
    for (int pe = 0; pe < n; ++pe) shmem_long_p(&late[1], 1, pe);
    shmem_quiet();
  }
  shmem_sync_all();
  CHECK(late[1] == 1, "left shmem_sync_all before PE %d arrived", n - 1);

  shmem_free(late);
  shmem_free(ctr);
  return capi_finish();
}
