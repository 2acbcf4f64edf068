/* The multi-variable waits and tests on short and unsigned short (an extension, as in
 * Sandia OpenSHMEM; tests-sos c11_shmem_wait_until_all_any_some and
 * c11_shmem_test_all_any_some use it): typed names and C11 generic names, single value
 * and _vector forms, with the values arriving from the left neighbour. Strict C11. */
#include <shmem.h>
#include <stddef.h>

#include "check.h"

#define N 4
static short sv[N];
static unsigned short uv[N];
static volatile short vsv[N];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n;
  size_t idx[N];
  int status[N] = {0, 0, 0, 0};

  /* Values 1..N into sv and N+1.. into uv of the right neighbour, one at a time. */
  for (int i = 0; i < N; ++i) {
    shmem_short_p(&sv[i], (short)(i + 1), right);
    shmem_ushort_p(&uv[i], (unsigned short)(N + i + 1), right);
    shmem_short_p((short *)&vsv[i], (short)(-i - 1), right);
  }
  shmem_wait_until_all(sv, N, NULL, SHMEM_CMP_GT, 0);
  shmem_ushort_wait_until_all(uv, N, status, SHMEM_CMP_GT, (unsigned short)N);
  shmem_wait_until_all(vsv, N, NULL, SHMEM_CMP_LT, 0);
  CHECK(shmem_test_all(sv, N, NULL, SHMEM_CMP_GT, 0) == 1, "test_all short");
  CHECK(shmem_short_test_all(sv, N, NULL, SHMEM_CMP_GT, 1) == 0, "short_test_all: sv[0] is 1");
  CHECK(shmem_test_all(uv, N, NULL, SHMEM_CMP_GE, (unsigned short)(N + 1)) == 1, "test_all ushort");

  /* any: the first index satisfied; the status array masks index 0 off. */
  CHECK(shmem_wait_until_any(sv, N, NULL, SHMEM_CMP_EQ, 3) == 2, "wait_until_any short");
  int skip0[N] = {1, 0, 0, 0};
  CHECK(shmem_short_wait_until_any(sv, N, skip0, SHMEM_CMP_GE, 1) >= 1, "short_wait_until_any with status");
  CHECK(shmem_test_any(uv, N, NULL, SHMEM_CMP_EQ, (unsigned short)(N + 2)) == 1, "test_any ushort");
  CHECK(shmem_ushort_test_any(uv, N, NULL, SHMEM_CMP_EQ, 0) == SIZE_MAX, "ushort_test_any of nothing");

  /* some: every index satisfied. */
  CHECK(shmem_wait_until_some(sv, N, idx, NULL, SHMEM_CMP_GE, 3) == 2 && idx[0] == 2 && idx[1] == 3,
        "wait_until_some short");
  CHECK(shmem_ushort_test_some(uv, N, idx, NULL, SHMEM_CMP_LE, (unsigned short)(N + 2)) == 2 && idx[1] == 1,
        "ushort_test_some");
  CHECK(shmem_test_some(vsv, N, idx, NULL, SHMEM_CMP_LT, -2) == 2, "test_some volatile short");

  /* vector forms: one comparison value per element. */
  const short want_s[N] = {1, 2, 3, 4};
  const unsigned short want_u[N] = {N + 1, N + 2, N + 3, N + 4};
  shmem_wait_until_all_vector(sv, N, NULL, SHMEM_CMP_EQ, want_s);
  shmem_ushort_wait_until_all_vector(uv, N, NULL, SHMEM_CMP_EQ, want_u);
  CHECK(shmem_wait_until_any_vector(uv, N, NULL, SHMEM_CMP_EQ, want_u) == 0, "wait_until_any_vector ushort");
  CHECK(shmem_short_wait_until_some_vector(sv, N, idx, NULL, SHMEM_CMP_EQ, want_s) == N, "wait_until_some_vector");
  CHECK(shmem_test_all_vector(sv, N, NULL, SHMEM_CMP_EQ, want_s) == 1, "test_all_vector short");
  CHECK(shmem_ushort_test_any_vector(uv, N, NULL, SHMEM_CMP_NE, want_u) == SIZE_MAX, "test_any_vector ushort");
  CHECK(shmem_test_some_vector(uv, N, idx, NULL, SHMEM_CMP_EQ, want_u) == N, "test_some_vector ushort");

  shmem_barrier_all();
  shmem_finalize();
  return failures ? 1 : 0;
}
