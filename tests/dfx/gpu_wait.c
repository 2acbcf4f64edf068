/* The hang-report tests of an expired device wait (hang_tests.py), without a GPU. PE 2
 * fills its record (shmemx_device_wait_record(): the host memory on its status page that its
 * GPU writes through the driver's mapping) as an expiring kernel does, through the same
 * struct: the fields, then state 1 with release. Then, while the other PEs wait in a barrier:
 *   exit   it exits with code 1, as a PE whose next device call failed does
 *   kill   it kills itself (SIGKILL)
 *   hang   it waits on a word nobody writes, as a host waiting on its trapped stream
 * N >= 3. What the record says: PE 2 waited 10 s in block 3 thread 0 for 'its' word at
 * 0x7f0000200018, written by PE 1, to be >= 7, and saw 6. */
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "exit") != 0 && strcmp(argv[1], "kill") != 0 && strcmp(argv[1], "hang") != 0)) {
    fprintf(stderr, "usage: gpu_wait exit|kill|hang\n");
    return 2;
  }
  shmem_init();
  const int me = shmem_my_pe();
  int* flag = shmem_calloc(1, sizeof(int));
  shmem_barrier_all();
  if (me == 2) {
    shmemx_device_wait_record_t* r = (shmemx_device_wait_record_t*)shmemx_device_wait_record();
    if (!r || r->state != 0) {
      fprintf(stderr, "PE 2: shmemx_device_wait_record() %s\n", r ? "is set before any wait expired" : "is NULL");
      return 1;
    }
    r->pe = 2;
    r->peer = 1;
    r->cmp = SHMEM_CMP_GE;
    r->addr = 0x7f0000200018ull;
    r->expected = 7;
    r->seen = 6;
    r->waited_ns = 10000000000ull;
    r->block = 3;
    r->thread = 0;
    __atomic_store_n(&r->state, 1u, __ATOMIC_RELEASE);
    /* symmem-run opens a PE's page within 0.1 s of its init (a real wait lives 10 s). */
    sleep(1);
    if (strcmp(argv[1], "exit") == 0) return 1;
    if (strcmp(argv[1], "kill") == 0) raise(SIGKILL);
    shmem_int_wait_until(flag, SHMEM_CMP_EQ, 1);
  } else {
    shmem_barrier_all();
  }
  shmem_free(flag);
  shmem_finalize();
  return 0;
}
