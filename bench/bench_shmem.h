/* bench_shmem.h: the OpenSHMEM backend of bench_harness.h (shmem_p2p.c, shmem_coll.c):
 * the harness's agreements and sums go through small symmetric arrays, with puts to or
 * from PE 0 and barriers (untimed control path, standard API only). */
#ifndef BENCH_SHMEM_H
#define BENCH_SHMEM_H

#include <shmem.h>

#define BENCH_PE_TAG "pe"
#define BENCH_PE_NAME "PE"
#include "bench_harness.h"

static long *bench_agree_slot; /* PE 0's decision */
static double *bench_slots;    /* one per PE, gathered on PE 0 */

static void bench_backend_init(int *argc, char ***argv) {
  (void)argc, (void)argv;
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  bench_agree_slot = shmem_calloc(1, sizeof(long));
  bench_slots = shmem_calloc((size_t)npes, sizeof(double));
  if (!bench_agree_slot || !bench_slots) {
    fprintf(stderr, "%s [pe %d]: cannot allocate the harness's slots\n", bench_prog, me);
    shmem_global_exit(1);
  }
}

static void bench_finish(void) {
  shmem_barrier_all();
  shmem_free(bench_slots);
  shmem_free(bench_agree_slot);
  shmem_finalize();
}

static const char *bench_library(void) {
  static char line[SHMEM_MAX_NAME_LEN + 32];
  char name[SHMEM_MAX_NAME_LEN];
  int major, minor;
  shmem_info_get_name(name);
  shmem_info_get_version(&major, &minor);
  snprintf(line, sizeof line, "%s, OpenSHMEM %d.%d", name, major, minor);
  return line;
}

static void bench_barrier(void) { shmem_barrier_all(); }

static long bench_agree(long v) {
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe) shmem_long_p(bench_agree_slot, v, pe);
  shmem_barrier_all();
  const long r = *bench_agree_slot;
  shmem_barrier_all();
  return r;
}

/* PE 0: the largest (max) or the sum of every PE's v; the other PEs: 0. Failure counts
 * travel as doubles too, exact far beyond any count here. */
static double bench_reduce_on_pe0(double v, int max) {
  shmem_double_p(&bench_slots[me], v, 0);
  shmem_barrier_all();
  double r = 0;
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe)
      r = max ? (bench_slots[pe] > r ? bench_slots[pe] : r) : r + bench_slots[pe];
  shmem_barrier_all();
  return r;
}

static double bench_max_over_pes(double t) { return bench_reduce_on_pe0(t, 1); }

static long bench_sum_on_pe0(long v) { return (long)bench_reduce_on_pe0((double)v, 0); }

#endif /* BENCH_SHMEM_H */
