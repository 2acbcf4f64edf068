/* Bad input to the point-to-point routines: each case makes one invalid call, which must
 * end the job with one line naming the routine, the PE and the bad value. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  shmem_init();
  long *x = shmem_malloc(64);
  uint64_t *sig = shmem_malloc(8);
  long src[4] = {0, 0, 0, 0}, local = 0;
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  shmem_barrier_all();
  if (shmem_my_pe() == 0) {
    if (!strcmp(c, "bad-cmp")) shmem_long_wait_until(x, 99, 0);
    if (!strcmp(c, "misaligned")) shmem_long_atomic_inc((long *)((char *)x + 4), 0);
    if (!strcmp(c, "invalid-ctx")) shmem_ctx_putmem(SHMEM_CTX_INVALID, x, src, 8, 0);
    if (!strcmp(c, "destroyed-ctx")) {
      shmem_ctx_create(0, &ctx);
      shmem_ctx_destroy(ctx);
      shmem_ctx_long_p(ctx, x, 1, 0);
    }
    if (!strcmp(c, "destroy-default")) shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    if (!strcmp(c, "bad-stride")) shmem_long_iput(x, src, 0, 1, 4, 0);
    if (!strcmp(c, "bad-sig-op")) shmem_putmem_signal(x, src, 8, sig, 1, 7, 0);
    if (!strcmp(c, "amo-bad-pe")) shmem_long_atomic_fetch_add(x, 1, shmem_n_pes());
    if (!strcmp(c, "lock-not-symmetric")) shmem_set_lock(&local);
    if (!strcmp(c, "ib-bad-stride")) shmem_ctx_int_ibput(SHMEM_CTX_DEFAULT, (int *)x, (int *)src, 2, 4, 3, 2, 0);
    if (!strcmp(c, "ib-past-heap")) shmem_ibget64(src, x, 1, 1 << 20, 1, 1 << 30, 1);
    if (!strcmp(c, "pe-quiet-bad-pe")) {
      int pes[2] = {0, 5};
      shmem_pe_quiet(pes, 2);
    }
    if (!strcmp(c, "pe-quiet-null")) {
      shmem_ctx_create(0, &ctx);
      shmem_ctx_pe_quiet(ctx, NULL, 2);
    }
    if (!strcmp(c, "session-null-config")) shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_CTX_SESSION_BATCH, NULL, SHMEM_CTX_SESSION_TOTAL_OPS);
    fprintf(stderr, "p2p_bad_input: case '%s' was not reported\n", c);
    shmem_global_exit(3);
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
