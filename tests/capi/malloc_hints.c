/* shmem_malloc_with_hints: every hint (and an unknown one) gives usable symmetric memory,
 * collective like shmem_malloc; atomics and signals work on it from every PE. */
#include "capi_check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                        SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE, 1L << 40};
  CHECK(SHMEM_MALLOC_ATOMICS_REMOTE != SHMEM_MALLOC_SIGNAL_REMOTE, "hint values collide");
  CHECK(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL, "size 0 must return NULL");
  for (size_t h = 0; h < sizeof(hints) / sizeof(hints[0]); ++h) {
    long *ctr = shmem_malloc_with_hints(4 * sizeof(long), hints[h]);
    uint64_t *sig = shmem_malloc_with_hints(sizeof(uint64_t), hints[h]);
    if (!ctr || !sig) FATAL("shmem_malloc_with_hints(hints 0x%lx) returned NULL", hints[h]);
    CHECK((uintptr_t)ctr % 16 == 0, "block %p is not suitably aligned", (void *)ctr);
    CHECK(shmem_addr_accessible(ctr, (me + 1) % n), "block not accessible on the next PE");
    ctr[0] = ctr[1] = 0;
    *sig = 0;
    shmem_barrier_all();
    /* Every PE adds to every PE's counter, and signals every PE once. */
    for (int p = 0; p < n; ++p) {
      shmem_long_atomic_add(&ctr[0], me + 1, p);
      (void)shmem_long_atomic_fetch_inc(&ctr[1], p);
      shmem_signal_add(sig, 1, p);
    }
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)n);
    shmem_barrier_all();
    CHECK(ctr[0] == (long)n * (n + 1) / 2, "hints 0x%lx: sum %ld, want %ld", hints[h], ctr[0], (long)n * (n + 1) / 2);
    CHECK(ctr[1] == n, "hints 0x%lx: count %ld, want %d", hints[h], ctr[1], n);
    long old = shmem_long_atomic_compare_swap(&ctr[2], 0, me + 1, 0); /* one PE wins on PE 0 */
    shmem_barrier_all();
    long winner = shmem_long_atomic_fetch(&ctr[2], 0);
    CHECK(winner >= 1 && winner <= n, "compare_swap winner %ld", winner);
    CHECK(old == 0 || old == winner, "compare_swap returned %ld (winner %ld)", old, winner);
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(ctr);
  }
  shmem_finalize();
  return capi_failures ? 1 : 0;
}
