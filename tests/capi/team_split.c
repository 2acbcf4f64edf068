/* Teams from C: the example of the standard (split_strided of the even PEs), the issue's
 * examples at 8 PEs, a team barrier that orders puts, collectives on a team through the
 * C11 generic names, and invalid splits, which must return nonzero with
 * SHMEM_TEAM_INVALID on every PE (the CTest also checks the one log line each prints). */
#include "capi_check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();

  shmem_team_t even = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0, "split evens");
  if (me % 2 == 0) {
    CHECK(even != SHMEM_TEAM_INVALID, "even PE %d got no team", me);
    CHECK(shmem_team_my_pe(even) == me / 2, "team PE %d, expected %d", shmem_team_my_pe(even), me / 2);
    CHECK(shmem_team_n_pes(even) == (n + 1) / 2, "team size %d", shmem_team_n_pes(even));
  } else {
    CHECK(even == SHMEM_TEAM_INVALID, "odd PE %d got a team", me);
  }

  if (n == 8) {
    shmem_team_t t135 = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 3, NULL, 0, &t135) == 0, "split (1,2,3)");
    const int want = (me == 1 || me == 3 || me == 5) ? (me - 1) / 2 : -1;
    CHECK(shmem_team_my_pe(t135) == want, "(1,2,3): PE %d is team PE %d, expected %d", me,
          shmem_team_my_pe(t135), want);
    shmem_team_destroy(t135);
  }

  /* A sum over the even team with the generic name; odd PEs do not take part. */
  long *src = shmem_malloc(4 * sizeof(long)), *dst = shmem_malloc(4 * sizeof(long));
  if (!src || !dst) FATAL("allocation failed");
  if (even != SHMEM_TEAM_INVALID) {
    for (int i = 0; i < 4; ++i) src[i] = me + i;
    CHECK(shmem_sum_reduce(even, dst, src, 4) == 0, "shmem_sum_reduce");
    long evens = 0;
    for (int pe = 0; pe < n; pe += 2) evens += pe;
    for (int i = 0; i < 4; ++i)
      CHECK(dst[i] == evens + (long)i * ((n + 1) / 2), "sum[%d] = %ld", i, dst[i]);
    CHECK(shmem_broadcast(even, dst, src, 4, 0) == 0, "shmem_broadcast");
    for (int i = 0; i < 4; ++i) CHECK(dst[i] == i, "broadcast[%d] = %ld", i, dst[i]);
    CHECK(shmem_sync(even) == 0, "shmem_sync(team)");
  }
  shmem_team_destroy(even);

  /* Invalid arguments: nonzero and SHMEM_TEAM_INVALID on every PE. */
  shmem_team_t bad = SHMEM_TEAM_WORLD;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &bad) != 0, "stride 0 accepted");
  CHECK(bad == SHMEM_TEAM_INVALID, "stride 0 gave a team");
  bad = SHMEM_TEAM_WORLD;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &bad) != 0, "size past parent accepted");
  CHECK(bad == SHMEM_TEAM_INVALID, "size past the parent gave a team");
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  return capi_finish();
}
