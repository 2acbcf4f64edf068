/* Failure path: one PE calls shmem_global_exit(7) while the others wait in a barrier that
 * can never complete. The whole job must end with exit status 7 (checked by
 * expect_exit.sh). The exiting PE leaves a line in its stdout buffer, unflushed: the
 * standard says global_exit flushes I/O as normal termination does, and the wrapper
 * looks for it. */
#include <unistd.h>

#include "capi_check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int victim = n == 1 ? 0 : 1;
  shmem_barrier_all();

  if (me == victim) {
    usleep(100 * 1000); /* let the others block in the barrier first */
    printf("global_exit: PE %d calls shmem_global_exit(7)\n", me);
    shmem_global_exit(7);
    fprintf(stderr, "FAIL [pe %d] shmem_global_exit returned\n", me);
    return 3;
  }
  shmem_barrier_all();
  fprintf(stderr, "FAIL [pe %d] shmem_barrier_all completed without PE %d\n", me, victim);
  shmem_finalize();
  return 1;
}
