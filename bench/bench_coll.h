/* bench_coll.h: the data of the collective benchmarks (shmem_coll.c, mpi_coll.c), what
 * each PE sends and what it must then hold, so that both check the same thing. Every
 * source carries a pattern that changes every sample (seed) and names the sender.
 * Include after the backend (bench_shmem.h or bench_mpi.h). */
#ifndef BENCH_COLL_H
#define BENCH_COLL_H

#include "bench_harness.h"

/* fcollect: this PE's SIZE bytes; afterwards block p of dst is PE p's. */
static void bench_fcollect_fill(unsigned char *src, size_t size, uint64_t seed) {
  bench_fill(src, size, seed * 64 + (uint64_t)me);
}

static void bench_fcollect_check(const unsigned char *dst, size_t size, uint64_t seed) {
  for (int pe = 0; pe < npes; ++pe) {
    const long k = bench_check(dst + (size_t)pe * size, size, seed * 64 + (uint64_t)pe);
    if (k >= 0) {
      bench_wrong("fcollect", size, "block, word", pe, k);
      break;
    }
  }
}

/* alltoall: block j of this PE's source goes to PE j and names (me, j); afterwards block p
 * of dst names (p, me). */
static void bench_alltoall_fill(unsigned char *src, size_t size, uint64_t seed) {
  for (int j = 0; j < npes; ++j)
    bench_fill(src + (size_t)j * size, size, seed * 4096 + (uint64_t)(me * 64 + j));
}

static void bench_alltoall_check(const unsigned char *dst, size_t size, uint64_t seed) {
  for (int pe = 0; pe < npes; ++pe) {
    const long k =
        bench_check(dst + (size_t)pe * size, size, seed * 4096 + (uint64_t)(pe * 64 + me));
    if (k >= 0) {
      bench_wrong("alltoall", size, "block, word", pe, k);
      break;
    }
  }
}

/* reduce_sum: SIZE/8 doubles, small integers so that the sum is exact in any order of
 * addition. */
static double bench_term(uint64_t seed, size_t i, int pe) {
  return (double)((pe + 1) * (int)((i + seed) % 13 + 1));
}

static void bench_reduce_fill(double *s, size_t size, uint64_t seed) {
  for (size_t i = 0; i < size / 8; ++i) s[i] = bench_term(seed, i, me);
}

static void bench_reduce_check(const double *d, size_t size, uint64_t seed) {
  const double scale = (double)npes * (npes + 1) / 2;
  for (size_t i = 0; i < size / 8; ++i) {
    if (d[i] != bench_term(seed, i, 0) * scale) {
      bench_wrong("reduce_sum", size, "element, value", (long)i, (long)d[i]);
      break;
    }
  }
}

#endif /* BENCH_COLL_H */
