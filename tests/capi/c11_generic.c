/* C11 generic selection as existing programs use it, compiled with -std=c11 -Wall -Werror:
 * volatile flags and arrays with shmem_wait_until / shmem_test and their set forms, the
 * deprecated generic atomics (shmem_finc, shmem_fadd, ...) and the interleaved-block
 * generics shmem_ibput / shmem_ibget (plain and with a context). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

static volatile long flag;          /* the classic pattern */
static volatile int iflags[4];      /* a volatile array for the set forms */
static volatile unsigned short sflag;
static long ctr;
static int ictr;
static long long llv;
static double dv;
static float fv;
static short blocks[64];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;

  /* Volatile flags: the right neighbour is woken through a put, an atomic and a p. */
  shmem_long_p((long *)&flag, me + 1, right);
  shmem_wait_until(&flag, SHMEM_CMP_EQ, left + 1);
  CHECK(shmem_test(&flag, SHMEM_CMP_EQ, left + 1), "shmem_test on a volatile long");
  shmem_ushort_p((unsigned short *)&sflag, 7, right);
  shmem_wait_until(&sflag, SHMEM_CMP_NE, 0);
  CHECK(sflag == 7, "volatile unsigned short flag %u", (unsigned)sflag);
  for (int i = 0; i < 4; ++i) shmem_int_atomic_set((int *)&iflags[i], i + 1, right);
  shmem_wait_until_all(iflags, 4, NULL, SHMEM_CMP_GT, 0);
  CHECK(shmem_test_all(iflags, 4, NULL, SHMEM_CMP_GT, 0), "shmem_test_all on volatile ints");
  size_t idx[4];
  CHECK(shmem_test_some(iflags, 4, idx, NULL, SHMEM_CMP_GE, 3) == 2, "shmem_test_some on volatile ints");
  CHECK(shmem_wait_until_any(iflags, 4, NULL, SHMEM_CMP_EQ, 4) == 3, "shmem_wait_until_any on volatile ints");
  const int want[4] = {1, 2, 3, 4};
  shmem_wait_until_all_vector(iflags, 4, NULL, SHMEM_CMP_EQ, want);
  CHECK(shmem_test_any_vector(iflags, 4, NULL, SHMEM_CMP_EQ, want) != SIZE_MAX, "shmem_test_any_vector");
  CHECK(shmem_wait_until_some_vector(iflags, 4, idx, NULL, SHMEM_CMP_EQ, want) == 4, "wait_until_some_vector");
  /* Non-volatile ivars still select the typed routines, and the pre-C11 function form of
   * shmem_wait_until is there behind the macro. */
  (shmem_wait_until)((long *)&flag, SHMEM_CMP_EQ, left + 1);
  shmem_barrier_all();

  /* Deprecated generic atomics, on PE 0's counters. */
  long before = shmem_finc(&ctr, 0);
  CHECK(before >= 0 && before < 12L * n, "shmem_finc returned %ld", before);
  shmem_inc(&ctr, 0);
  shmem_add(&ctr, 10L, 0);
  (void)shmem_fadd(&ictr, 2, 0);
  shmem_barrier_all();
  if (me == 0) {
    CHECK(ctr == 12L * n, "ctr %ld, want %ld", ctr, 12L * n);
    CHECK(ictr == 2 * n, "ictr %d, want %d", ictr, 2 * n);
    shmem_set(&llv, 5LL, 0);
    CHECK(shmem_cswap(&llv, 5LL, 9LL, 0) == 5LL, "shmem_cswap");
    CHECK(shmem_swap(&llv, 11LL, 0) == 9LL, "shmem_swap");
    CHECK(shmem_fetch(&llv, 0) == 11LL, "shmem_fetch");
    shmem_set(&dv, 2.5, 0);
    CHECK(shmem_fetch(&dv, 0) == 2.5, "shmem_fetch(double)");
    CHECK(shmem_swap(&fv, 1.5f, 0) == 0.0f, "shmem_swap(float)");
  }
  shmem_barrier_all();

  /* Interleaved blocks: 4 blocks of 3 shorts, source stride 5, destination stride 8. */
  short src[20];
  for (int i = 0; i < 20; ++i) src[i] = (short)(me * 100 + i);
  shmem_ibput(blocks, src, 8, 5, 3, 4, right);
  shmem_barrier_all();
  for (int b = 0; b < 4; ++b)
    for (int e = 0; e < 8; ++e)
      CHECK(blocks[b * 8 + e] == (e < 3 ? (short)(left * 100 + b * 5 + e) : 0), "blocks[%d]", b * 8 + e);
  short back[20] = {0};
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(0, &ctx) == 0, "shmem_ctx_create");
  shmem_ibget(ctx, back, blocks, 5, 8, 3, 4, right);
  for (int i = 0; i < 20; ++i) CHECK(back[i] == (i % 5 < 3 ? src[i] : 0), "back[%d] = %d", i, back[i]);
  shmem_ctx_destroy(ctx);

  int inited = 0;
  shmem_query_initialized(&inited);
  CHECK(inited, "shmem_query_initialized");
  shmem_barrier_all();
  shmem_finalize();
  shmem_query_initialized(&inited);
  return failures || inited ? 1 : 0;
}
