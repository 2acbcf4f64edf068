/* A program written for the old API (OpenSHMEM "Deprecated API" table): the mpp/ header
 * path, start_pes with implicit finalization, _my_pe / _num_pes, shmalloc / shrealloc /
 * shmemalign / shfree, the cache routines and the _SHMEM_ constants. It never calls
 * shmem_finalize: the library is finalized at exit. */
#include <mpp/shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK_MY_PE _my_pe()
#include "check.h"

static long pSync[_SHMEM_BARRIER_SYNC_SIZE];
static long counter;

/* Registered before start_pes, so it runs after the library's own exit handler: by then
 * the implicit finalization must have happened. */
static void check_finalized(void) {
  int init = -1;
  shmem_query_initialized(&init);
  if (init != 0) {
    fprintf(stderr, "FAIL: the library is still initialized at exit (no implicit finalization)\n");
    fflush(stderr);
    _Exit(3);
  }
}

int main(void) {
  int init = -1;
  shmem_query_initialized(&init);
  if (init != 0) return 2;
  atexit(check_finalized);
  start_pes(0);
  start_pes(0); /* a second call has no effect */
  shmem_query_initialized(&init);
  const int me = _my_pe(), n = _num_pes();
  CHECK(init != 0, "shmem_query_initialized after start_pes: %d", init);
  CHECK(me == shmem_my_pe() && n == shmem_n_pes(), "_my_pe %d / _num_pes %d", me, n);
  CHECK(_SHMEM_MAJOR_VERSION == SHMEM_MAJOR_VERSION && _SHMEM_CMP_EQ == SHMEM_CMP_EQ &&
            _SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE && _SHMEM_MAX_NAME_LEN == SHMEM_MAX_NAME_LEN,
        "_SHMEM_ constants differ");
  for (int i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; ++i) pSync[i] = _SHMEM_SYNC_VALUE;

  shmem_set_cache_inv();
  shmem_clear_cache_inv();
  shmem_udcflush();

  int *a = shmalloc(16 * sizeof(int));
  double *b = shmemalign(256, 8 * sizeof(double));
  if (!a || !b) {
    fprintf(stderr, "FAIL [pe %d] shmalloc / shmemalign returned NULL\n", me);
    shmem_global_exit(1);
  }
  CHECK((uintptr_t)b % 256 == 0, "shmemalign(256) returned %p", (void *)b);
  shmem_set_cache_line_inv(a);
  shmem_clear_cache_line_inv(a);
  shmem_udcflush_line(a);
  for (int i = 0; i < 16; ++i) a[i] = -1;
  shmem_barrier_all();
  int v[16];
  for (int i = 0; i < 16; ++i) v[i] = me * 100 + i;
  shmem_int_put(a, v, 16, (me + 1) % n);
  shmem_barrier(0, 0, n, pSync);
  for (int i = 0; i < 16; ++i) CHECK(a[i] == ((me + n - 1) % n) * 100 + i, "a[%d] = %d", i, a[i]);

  a = shrealloc(a, 1024 * sizeof(int)); /* keeps the first 16 */
  if (!a) {
    fprintf(stderr, "FAIL [pe %d] shrealloc returned NULL\n", me);
    shmem_global_exit(1);
  }
  for (int i = 0; i < 16; ++i) CHECK(a[i] == ((me + n - 1) % n) * 100 + i, "after shrealloc a[%d] = %d", i, a[i]);
  a[1023] = me;
  shmem_barrier_all();
  CHECK(shmem_int_g(&a[1023], (me + 1) % n) == (me + 1) % n, "shrealloc'd block is not symmetric");
  shmem_long_finc(&counter, 0);
  shmem_barrier_all();
  if (me == 0) CHECK(counter == n, "counter %ld, want %d", counter, n);
  shmem_barrier_all();
  shfree(b);
  shfree(a);
  if (me == 0) printf("deprecated: %s\n", failures ? "FAILED" : "ok");
  /* No shmem_finalize: implicit finalization at exit. */
  return failures ? 1 : 0;
}
