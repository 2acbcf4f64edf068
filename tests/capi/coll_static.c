/* Collectives on static (global) symmetric data, the way most existing OpenSHMEM programs
 * write them: static pSync / pWrk arrays and global source and dest arrays, through the
 * active-set routines and the team routines. */
#include "capi_check.h"

enum { kN = 1000 };
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[kN / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long src[kN], dst[kN];
static long gathered[8 * kN];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) pSync[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < kN; ++i) src[i] = me * 10 + i;
  shmem_barrier_all();

  for (int rep = 0; rep < 3; ++rep) {
    shmem_long_sum_to_all(dst, src, kN, 0, 0, n, pWrk, pSync);
    for (int i = 0; i < kN; ++i)
      CHECK(dst[i] == 10L * n * (n - 1) / 2 + (long)i * n, "sum_to_all[%d] = %ld", i, dst[i]);
    shmem_broadcast64(dst, src, kN, n - 1, 0, 0, n, pSync);
    if (me != n - 1)
      for (int i = 0; i < kN; ++i) CHECK(dst[i] == (n - 1) * 10L + i, "broadcast64[%d] = %ld", i, dst[i]);
    shmem_barrier(0, 0, n, pSync);
  }
  if (n <= 8) {
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, gathered, src, kN) == 0, "fcollect");
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < kN; ++i)
        CHECK(gathered[p * kN + i] == p * 10L + i, "fcollect[%d][%d] = %ld", p, i, gathered[p * kN + i]);
    CHECK(shmem_long_max_reduce(SHMEM_TEAM_WORLD, dst, src, kN) == 0, "max_reduce");
    for (int i = 0; i < kN; ++i) CHECK(dst[i] == (n - 1) * 10L + i, "max[%d] = %ld", i, dst[i]);
  }
  shmem_barrier_all();
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) CHECK(pSync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld", i, pSync[i]);
  return capi_finish();
}
