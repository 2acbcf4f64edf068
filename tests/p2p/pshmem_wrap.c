/* The profiling interface at work: this program defines its own shmem_putmem and
 * shmem_long_atomic_fetch_inc, which count their calls and do the work through the
 * pshmem_ names. Its calls reach the wrappers, and the data and the increments arrive. */
#include <pshmem.h>
#include <stdio.h>
#include <string.h>

static int putmem_calls, finc_calls;

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
  ++putmem_calls;
  pshmem_putmem(dest, source, nelems, pe);
}

long shmem_long_atomic_fetch_inc(long *dest, int pe) {
  ++finc_calls;
  return pshmem_long_atomic_fetch_inc(dest, pe);
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  char *buf = shmem_malloc(64);
  long *count = shmem_malloc(sizeof(long));
  memset(buf, 0, 64);
  *count = 0;
  shmem_barrier_all();
  char msg[64];
  snprintf(msg, sizeof msg, "hello from PE %d", me);
  shmem_putmem(buf, msg, sizeof msg, (me + 1) % n);
  long before = shmem_long_atomic_fetch_inc(count, 0);
  shmem_barrier_all();
  char want[64];
  snprintf(want, sizeof want, "hello from PE %d", (me + n - 1) % n);
  int bad = 0;
  if (strcmp(buf, want) != 0) fprintf(stderr, "PE %d: got '%s', want '%s'\n", me, buf, want), bad = 1;
  if (putmem_calls != 1 || finc_calls != 1)
    fprintf(stderr, "PE %d: wrappers called %d and %d times, want 1 and 1\n", me, putmem_calls, finc_calls), bad = 1;
  if (before < 0 || before >= n) fprintf(stderr, "PE %d: fetch_inc returned %ld\n", me, before), bad = 1;
  if (me == 0 && *count != n) fprintf(stderr, "PE 0: count is %ld, want %d\n", *count, n), bad = 1;
  shmem_barrier_all();
  shmem_free(count);
  shmem_free(buf);
  shmem_finalize();
  return bad;
}
