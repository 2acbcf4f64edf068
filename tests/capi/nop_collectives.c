/* Zero-length collectives are no-ops that accept NULL buffers (tests-sos nop_collectives):
 * collect on a team and on active sets (the world set and a smaller one, which runs on its
 * pSync) with every PE contributing nothing, the other collectives likewise, then a collect
 * where some PEs contribute nothing with NULL sources while others contribute data (small,
 * and large enough to be read from the others' sources rather than staged), and an
 * ordinary collect afterwards (the size exchange of the no-op left nothing behind). */
#include <shmem.h>
#include <stdint.h>

#include "capi_check.h"

static long psync[SHMEM_COLLECT_SYNC_SIZE];
static long psync2[SHMEM_COLLECT_SYNC_SIZE];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; ++i) psync[i] = psync2[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();

  CHECK(shmem_int_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "shmem_int_collect of 0");
  CHECK(shmem_collectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "shmem_collectmem of 0");
  CHECK(shmem_int_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "shmem_int_fcollect of 0");
  CHECK(shmem_int_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0) == 0, "shmem_int_broadcast of 0");
  CHECK(shmem_int_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "shmem_int_alltoall of 0");
  CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "shmem_int_sum_reduce of 0");
  shmem_collect32(NULL, NULL, 0, 0, 0, n, psync);
  shmem_collect64(NULL, NULL, 0, 0, 0, n, psync);
  shmem_fcollect64(NULL, NULL, 0, 0, 0, n, psync);
  /* A set smaller than the world synchronises through pSync. */
  if (n >= 3 && me < n - 1) {
    shmem_collect32(NULL, NULL, 0, 0, 0, n - 1, psync2);
    shmem_collect64(NULL, NULL, 0, 0, 0, n - 1, psync2);
  }
  shmem_barrier_all();

  /* Mixed: even PEs contribute one long, odd PEs nothing (with a NULL source). */
  const int total = (n + 1) / 2;
  long* src = shmem_malloc(sizeof(long));
  long* dst = shmem_malloc((size_t)n * sizeof(long));
  if (!src || !dst) FATAL("allocation failed");
  *src = 100 + me;
  for (int i = 0; i < n; ++i) dst[i] = -1;
  shmem_barrier_all();
  CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, me % 2 ? NULL : src, me % 2 ? 0 : 1) == 0, "mixed collect");
  for (int k = 0; k < total; ++k) CHECK(dst[k] == 100 + 2 * k, "mixed collect: dst[%d] = %ld", k, dst[k]);
  CHECK(total == n || dst[total] == -1, "mixed collect wrote past its %d elements", total);
  shmem_barrier_all();
  for (int i = 0; i < n; ++i) dst[i] = -1;
  shmem_barrier_all();
  shmem_collect64(dst, me % 2 ? NULL : src, me % 2 ? 0 : 1, 0, 0, n, psync);
  for (int k = 0; k < total; ++k) CHECK(dst[k] == 100 + 2 * k, "mixed collect64: dst[%d] = %ld", k, dst[k]);

  /* Mixed and large (read from the contributors' sources, not staged): even PEs give 8192
   * longs, odd PEs nothing with a NULL source; on a team and on the world's active set. */
  enum { kBig = 8192 };
  long* bsrc = shmem_malloc(kBig * sizeof(long));
  long* bdst = shmem_malloc((size_t)n * kBig * sizeof(long));
  if (!bsrc || !bdst) FATAL("allocation failed");
  for (int j = 0; j < kBig; ++j) bsrc[j] = me * 100000L + j;
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < (size_t)n * kBig; ++i) bdst[i] = -1;
    shmem_barrier_all();
    if (round == 0)
      CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, bdst, me % 2 ? NULL : bsrc, me % 2 ? 0 : kBig) == 0, "big collect");
    else
      shmem_collect64(bdst, me % 2 ? NULL : bsrc, me % 2 ? 0 : kBig, 0, 0, n, psync);
    long bad = 0;
    for (int k = 0; k < total; ++k)
      for (int j = 0; j < kBig; ++j) bad += bdst[(size_t)k * kBig + (size_t)j] != 2L * k * 100000L + j;
    CHECK(bad == 0, "mixed big collect (%s): %ld longs wrong", round ? "active set" : "team", bad);
    CHECK(total == n || bdst[(size_t)total * kBig] == -1, "mixed big collect wrote past its part");
  }
  shmem_barrier_all();
  shmem_free(bdst);
  shmem_free(bsrc);

  /* And an ordinary collect after it all. */
  shmem_barrier_all();
  CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "collect");
  for (int k = 0; k < n; ++k) CHECK(dst[k] == 100 + k, "collect: dst[%d] = %ld", k, dst[k]);

  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  return capi_finish();
}
