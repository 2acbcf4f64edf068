/* Programs written for Sandia OpenSHMEM call OpenSHMEM 1.6 routines by their older shmemx_
 * names: interleaved block puts and gets (typed, sized, context and generic forms), signal
 * set / add (typed, and the C11 generic with and without a context), the sum scans (typed
 * and generic) and shmemx_query_initialized. Strict C11: each name must be declared
 * by shmemx.h and do what the shmem_ routine does. */
#include <shmemx.h>
#include <stdint.h>

#include "check.h"

static int blocks_dst[16];
static int blocks_src[16];
static uint32_t w32[8];
static uint64_t sig;

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;

  /* ibput: two blocks of 2 ints, source stride 4, dest stride 3. */
  for (int i = 0; i < 16; ++i) blocks_src[i] = 1000 * me + i;
  shmem_barrier_all();
  shmemx_int_ibput(blocks_dst, blocks_src, 3, 4, 2, 2, right);
  shmem_barrier_all();
  CHECK(blocks_dst[0] == 1000 * left + 0 && blocks_dst[1] == 1000 * left + 1, "shmemx_int_ibput block 0");
  CHECK(blocks_dst[3] == 1000 * left + 4 && blocks_dst[4] == 1000 * left + 5, "shmemx_int_ibput block 1");
  int got[8] = {0};
  shmemx_ibget(got, blocks_src, 4, 2, 2, 2, right); /* generic: blocks 0-1 and 2-3 of right's source */
  CHECK(got[0] == 1000 * right && got[1] == 1000 * right + 1 && got[4] == 1000 * right + 2,
        "shmemx_ibget generic");
  uint32_t g32[4] = {0};
  for (int i = 0; i < 8; ++i) w32[i] = (uint32_t)(10 * me + i);
  shmem_barrier_all();
  shmemx_ibget32(g32, w32, 2, 4, 1, 2, right);
  CHECK(g32[0] == (uint32_t)(10 * right) && g32[2] == (uint32_t)(10 * right + 4), "shmemx_ibget32");
  shmemx_ctx_int_ibget(SHMEM_CTX_DEFAULT, got, blocks_src, 1, 1, 1, 1, left);
  CHECK(got[0] == 1000 * left, "shmemx_ctx_int_ibget");
  blocks_dst[0] = -1;
  shmem_barrier_all();
  shmemx_ibput(SHMEM_CTX_DEFAULT, blocks_dst, blocks_src, 1, 1, 1, 1, right); /* generic, context form */
  shmem_barrier_all();
  CHECK(blocks_dst[0] == 1000 * left, "shmemx_ibput generic with a context");

  /* Signals: set then add on the right neighbour's word. */
  shmemx_signal_set(&sig, 5, right);
  shmem_barrier_all();
  CHECK(shmem_signal_fetch(&sig) == 5, "shmemx_signal_set: %llu", (unsigned long long)shmem_signal_fetch(&sig));
  shmem_barrier_all();
  shmemx_signal_add(&sig, 2, right);
  shmemx_ctx_signal_add(SHMEM_CTX_DEFAULT, &sig, 3, right);
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 10);
  shmem_barrier_all();
  shmemx_ctx_signal_set(SHMEM_CTX_DEFAULT, &sig, 1, right);
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
  shmem_barrier_all();
  shmemx_signal_add(SHMEM_CTX_DEFAULT, &sig, 4, right); /* SOS's C11 generic, context form */
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 5);
  shmem_barrier_all();
  shmemx_signal_set(SHMEM_CTX_DEFAULT, &sig, 7, right);
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 7);

  int initialized = 0;
  shmemx_query_initialized(&initialized);
  CHECK(initialized == 1, "shmemx_query_initialized: %d", initialized);

  /* Scans over the world: inclusive and exclusive prefix sums of (pe + 1). */
  long* s = shmem_malloc(2 * sizeof(long));
  long* d = shmem_malloc(2 * sizeof(long));
  double* ds = shmem_malloc(sizeof(double));
  double* dd = shmem_malloc(sizeof(double));
  if (!s || !d || !ds || !dd) {
    CHECK(0, "allocation failed");
    shmem_global_exit(1);
  }
  s[0] = me + 1;
  s[1] = 1;
  *ds = 0.5;
  shmem_barrier_all();
  CHECK(shmemx_long_sum_inscan(SHMEM_TEAM_WORLD, d, s, 2) == 0, "shmemx_long_sum_inscan");
  CHECK(d[0] == (long)(me + 1) * (me + 2) / 2 && d[1] == me + 1, "inscan: %ld %ld", d[0], d[1]);
  CHECK(shmemx_long_sum_exscan(SHMEM_TEAM_WORLD, d, s, 2) == 0, "shmemx_long_sum_exscan");
  CHECK(d[0] == (long)me * (me + 1) / 2 && d[1] == me, "exscan: %ld %ld", d[0], d[1]);
  CHECK(shmemx_sum_inscan(SHMEM_TEAM_WORLD, dd, ds, 1) == 0 && *dd == 0.5 * (me + 1), "shmemx_sum_inscan generic");
  CHECK(shmemx_sum_exscan(SHMEM_TEAM_WORLD, dd, ds, 1) == 0 && *dd == 0.5 * me, "shmemx_sum_exscan generic");

  shmem_barrier_all();
  shmem_free(dd);
  shmem_free(ds);
  shmem_free(d);
  shmem_free(s);
  shmem_finalize();
  return failures ? 1 : 0;
}
