/* shmem_pe_quiet / shmem_ctx_pe_quiet and sessions (OpenSHMEM 1.6). Each PE writes a block
 * to its right neighbour with non-blocking puts, completes them with a per-PE quiet, then
 * raises a flag there with an atomic; the neighbour checks the block once it sees the
 * flag. The context round does the same inside a session on a created context. */
#include "capi_check.h"

enum { kN = 4096 };

static long flag[2];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  long *buf = shmem_calloc(2 * kN, sizeof(long));
  long *src = malloc(2 * kN * sizeof(long));
  if (!buf || !src) FATAL("allocation failed");
  for (int i = 0; i < 2 * kN; ++i) src[i] = me * 1000003L + i;
  shmem_barrier_all();

  /* Round 1: default context. */
  shmem_long_put_nbi(buf, src, kN, right);
  shmem_pe_quiet(&right, 1);
  shmem_long_atomic_set(&flag[0], 1, right);
  shmem_long_wait_until(&flag[0], SHMEM_CMP_EQ, 1);
  for (int i = 0; i < kN; ++i) CHECK(buf[i] == left * 1000003L + i, "round 1: buf[%d] = %ld", i, buf[i]);
  shmem_pe_quiet(NULL, 0); /* npes 0: target_pes is ignored */

  /* Round 2: a created context, inside a session; every PE listed (all of them). */
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create failed");
  shmem_ctx_session_config_t cfg = {kN};
  shmem_ctx_session_start(ctx, SHMEM_CTX_SESSION_BATCH, &cfg, SHMEM_CTX_SESSION_TOTAL_OPS);
  shmem_ctx_session_start(ctx, 0, NULL, 0); /* a second start combines options: allowed */
  for (int i = 0; i < kN; ++i) shmem_ctx_long_p(ctx, buf + kN + i, src[kN + i], right);
  int *all = malloc(n * sizeof(int));
  for (int p = 0; p < n; ++p) all[p] = (me + p) % n;
  shmem_ctx_pe_quiet(ctx, all, (size_t)n);
  shmem_ctx_session_stop(ctx);
  shmem_ctx_session_stop(ctx); /* a stop without a session: no effect */
  shmem_ctx_long_atomic_set(ctx, &flag[1], 1, right);
  shmem_ctx_quiet(ctx);
  shmem_long_wait_until(&flag[1], SHMEM_CMP_EQ, 1);
  for (int i = kN; i < 2 * kN; ++i) CHECK(buf[i] == left * 1000003L + i, "round 2: buf[%d] = %ld", i, buf[i]);
  shmem_ctx_destroy(ctx);
  /* SHMEM_CTX_INVALID: no action. */
  shmem_ctx_pe_quiet(SHMEM_CTX_INVALID, all, (size_t)n);
  shmem_ctx_session_start(SHMEM_CTX_INVALID, SHMEM_CTX_SESSION_BATCH, NULL, SHMEM_CTX_SESSION_TOTAL_OPS);
  shmem_ctx_session_stop(SHMEM_CTX_INVALID);

  shmem_barrier_all();
  free(all);
  free(src);
  shmem_free(buf);
  shmem_finalize();
  return capi_failures ? 1 : 0;
}
