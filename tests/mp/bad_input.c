/* Bad-input programs: each case must end the job with one clear line and a non-zero exit.
 * Usage: bad_input <case>; the CTest driver checks the exit code and the message. */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "";
  long local = 0;
  if (strcmp(c, "before-init") == 0) {
    shmem_long_p(&local, 1, 0);
    return 0;
  }
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* sym = shmem_malloc(64);
  if (strcmp(c, "bad-pe") == 0) {
    if (me == 0) shmem_long_p(sym, 1, n + 3);
  } else if (strcmp(c, "negative-pe") == 0) {
    if (me == 0) shmem_putmem(sym, &local, 8, -1);
  } else if (strcmp(c, "bad-addr") == 0) {
    if (me == 0) shmem_putmem(&local, &local, 8, 0);
  } else if (strcmp(c, "past-heap") == 0) {
    static char big[64];
    if (me == 0) shmem_getmem(big, sym, (size_t)1 << 40, 0);
  } else if (strcmp(c, "malloc-size-mismatch") == 0) {
    void* p = shmem_malloc(me == 0 ? 128 : 256);
    (void)p;
  } else if (strcmp(c, "malloc-order-mismatch") == 0) {
    if (me == 0) {
      void* p = shmem_malloc(128);
      (void)p;
    } else {
      shmem_free(sym);
    }
  } else if (strcmp(c, "sigkill") == 0) {
    /* A PE dies hard in the middle of a job; the others are blocked in a barrier. */
    if (me == n - 1) raise(SIGKILL);
  } else if (strcmp(c, "static-off") == 0) { /* run with SYMMEM_STATIC_DATA=0 */
    static long global;
    if (me == 0) shmem_long_p(&global, 1, 1 % n);
  } else if (strcmp(c, "align-too-large") == 0) {
    void* p = shmem_align((size_t)1 << 40, 64); /* more than G and H (16 GiB) share */
    (void)p;
  } else if (strcmp(c, "after-finalize") == 0) {
    shmem_finalize();
    shmem_barrier_all();
    return 0;
  } else {
    fprintf(stderr, "unknown case '%s'\n", c);
    return 99;
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
