/* py_calls.c: the calls of bench/python_calls.py from C, same loops, same sizes, so that
 * the Python module's cost per call is measured against C in the same run. PE 0 reports
 * "name us_per_call" lines; run under symmem-run -n 2. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define REPS 5
#define BEST(name, n, both, body)                                  \
  do {                                                             \
    double best = 1e30;                                            \
    for (int r = 0; r < REPS; ++r) {                               \
      shmem_barrier_all();                                         \
      if (both || me == 0) {                                       \
        double t0 = now();                                         \
        for (long i = 0; i < (n); ++i) { body; }                   \
        double t = (now() - t0) / (n);                             \
        if (t < best) best = t;                                    \
      }                                                            \
    }                                                              \
    shmem_barrier_all();                                           \
    if (me == 0) printf("%s %.4f\n", name, best * 1e6);            \
  } while (0)

int main(int argc, char** argv) {
  double scale = argc > 1 ? atof(argv[1]) : 1.0;
  shmem_init();
  int me = shmem_my_pe();
  const long small = (long)(20000 * scale), mid = (long)(2000 * scale), big = (long)(200 * scale) + 1;
  double* a = shmem_calloc(1, 8);
  char* b = shmem_calloc(1, 65536);
  long* c = shmem_calloc(1, 8);
  double* rs = shmem_calloc(131072, 8);
  double* rd = shmem_calloc(131072, 8);
  double one = 1.0, g;
  // page-aligned sources, as python_calls.py's: a copy's speed depends on the alignment
  char* src = aligned_alloc(4096, 1 << 20);
  memset(src, 1, 1 << 20);  // touched: untouched pages would all be the one zero page
  BEST("p", small, 0, shmem_double_p(a, one, 1));
  BEST("put_8B", small, 0, shmem_putmem(a, &one, 8, 1));
  BEST("put_64KiB", mid, 0, shmem_putmem(b, src, 65536, 1));
  BEST("put_1MiB", big, 0, shmem_putmem(rd, src, 1 << 20, 1));
  BEST("get_8B", small, 0, shmem_getmem(&g, a, 8, 1));
  BEST("atomic_fetch_add", small, 0, (void)shmem_long_atomic_fetch_add(c, 1, 1));
  BEST("barrier_all", mid, 1, shmem_barrier_all());
  BEST("allreduce_8B", mid, 1, shmem_double_sum_reduce(SHMEM_TEAM_WORLD, rd, rs, 1));
  BEST("allreduce_1MiB", big, 1, shmem_double_sum_reduce(SHMEM_TEAM_WORLD, rd, rs, 131072));
  free(src);
  shmem_free(rd);
  shmem_free(rs);
  shmem_free(c);
  shmem_free(b);
  shmem_free(a);
  shmem_finalize();
  return 0;
}
