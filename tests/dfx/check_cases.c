/* Programs that SYMMEM_CHECK=1 must stop with a report and exit code 2 (see CMakeLists.txt
 * for what each report must say). Usage: check_cases <case>; run with 4 PEs. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long target[8]; /* a global: symmetric, named "static 'target'" in reports */

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "";
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (me == 0) printf("job %s\n", getenv("SYMMEM_JOB_ID") ? getenv("SYMMEM_JOB_ID") : "?"); /* for the cleanup check */
  fflush(stdout);
  long src[32] = {0};
  static long bsrc[16], bdst[16];
  shmem_barrier_all();
  if (strcmp(c, "malloc-size") == 0) {
    void* p = shmem_malloc(me == 0 ? 1 << 20 : 2 << 20); /* PE 0 passes another size */
    (void)p;
  } else if (strcmp(c, "reordered") == 0) {
    if (me == n - 1)
      shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 16, 0); /* the others: barrier */
    else
      shmem_barrier_all();
  } else if (strcmp(c, "reordered-nodes") == 0) { /* the upper half (another node) differs */
    if (me >= n / 2)
      shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 16, 0);
    else
      shmem_barrier_all();
  } else if (strcmp(c, "root-nodes") == 0) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 16, me >= n / 2 ? 1 : 0);
  } else if (strcmp(c, "root") == 0) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 16, me == n - 1 ? 1 : 0); /* one PE names root 1 */
  } else if (strcmp(c, "reduce-op") == 0) {
    if (me == n - 1)
      shmem_long_max_reduce(SHMEM_TEAM_WORLD, bdst, bsrc, 16);
    else
      shmem_long_sum_reduce(SHMEM_TEAM_WORLD, bdst, bsrc, 16);
  } else if (strcmp(c, "bad-pe") == 0) {
    if (me == 0) shmem_putmem(target, src, 32, n); /* pe n is out of range */
  } else if (strcmp(c, "past-alloc") == 0) {
    char* a = shmem_malloc(4096);
    char* b = shmem_malloc(4096); /* the heap goes on after a: only the check sees this */
    shmemx_set_name(a, "halo");
    if (me == 0) shmem_putmem(a + 4000, src, 200, 1);
    shmem_barrier_all();
    shmem_free(b);
  } else if (strcmp(c, "use-after-free") == 0) {
    long* a = shmem_malloc(4096);
    shmem_free(a);
    if (me == 0) shmem_long_p(a, 1, 1);
  } else if (strcmp(c, "misaligned-atomic") == 0) {
    char* a = shmem_malloc(64);
    if (me == 0) shmem_long_atomic_add((long*)(a + 4), 1, 1);
  } else if (strcmp(c, "other-team") == 0) {
    /* PEs n-2 and n-1 form a team; PE n-1 syncs it while PE n-2 (and the rest) wait in a
     * world barrier: nobody can go on, and only the stall scan sees why. */
    shmem_team_t pair;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 2, 1, 2, NULL, 0, &pair);
    if (me == n - 1) shmem_team_sync(pair);
    shmem_barrier_all();
  } else if (strcmp(c, "slow-subteam") == 0) {
    /* Not a mismatch: PEs n-2 and n-1 sync their team while PE n-1 is slow to join it,
     * and the others wait longer than SYMMEM_CHECK_STALL in the world barrier meanwhile. */
    shmem_team_t pair;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 2, 1, 2, NULL, 0, &pair);
    if (me == n - 1) sleep(3);
    if (pair != SHMEM_TEAM_INVALID) shmem_team_sync(pair);
    shmem_barrier_all();
  } else if (strcmp(c, "ok") == 0) {
    /* Everything right: the check must stay silent. */
    long* a = shmem_malloc(4096);
    shmemx_set_name(a, "ok");
    shmem_putmem(a + 8, src, 32 * sizeof(long), (me + 1) % n);
    shmem_long_atomic_add(a, 1, (me + 1) % n);
    shmem_putmem(target, src, sizeof target, (me + 1) % n);
    shmem_barrier_all();
    shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 16, 0);
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, bdst, bsrc, 16);
    shmem_team_t pair;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &pair);
    if (pair != SHMEM_TEAM_INVALID) {
      shmem_team_sync(pair);
      shmem_team_destroy(pair);
    }
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1 % n, 1, n - 1 > 0 ? n - 1 : 1, NULL, 0, &pair); /* reuses the slot */
    if (pair != SHMEM_TEAM_INVALID) {
      shmem_team_sync(pair);
      shmem_long_sum_reduce(pair, bdst, bsrc, 16);
      shmem_team_destroy(pair);
    }
    shmem_free(a);
  } else {
    fprintf(stderr, "unknown case '%s'\n", c);
    return 99;
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
