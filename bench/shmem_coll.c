/* shmem_coll.c: collective benchmarks written against the standard OpenSHMEM API only, so
 * the same source builds against symmem and against Open MPI's OSHMEM (bench/compare.sh).
 * Output and options: bench_util.h. All PEs take part; SIZE is in bytes:
 *
 *   barrier     shmem_barrier_all                                         us / op (size 0)
 *   bcast       broadcast of SIZE bytes from PE 0                         us / op
 *   fcollect    every PE contributes SIZE bytes, every PE gets N * SIZE    us / op
 *   alltoall    SIZE bytes from every PE to every PE                      us / op
 *   reduce_sum  sum of SIZE/8 doubles, result on every PE                 us / op
 *
 * Each collective uses the team API of OpenSHMEM 1.5 on SHMEM_TEAM_WORLD when the library
 * declares it (shmem_broadcastmem, shmem_fcollectmem, shmem_alltoallmem,
 * shmem_double_sum_reduce), otherwise the active-set routines of 1.4 over all PEs
 * (shmem_broadcast64, shmem_fcollect64, shmem_alltoall64, shmem_double_sum_to_all, with two
 * pSync arrays used alternately), otherwise it is skipped; a "# api" line says which.
 * Built with BENCH_FORCE_ACTIVE_SET=1 (bench_coll_as), it calls the 1.4 routines even where
 * the team API exists: the calls Open MPI 4.1's OSHMEM runs, for a like-with-like
 * comparison (a team broadcast also fills the root's dest; an active-set one does not).
 *
 * One sample's time is the slowest PE's; the value is the median over samples. Every
 * sample is validated after its timed part: sources carry a pattern that changes every
 * sample and names the sending PE, and every received byte (every sum) is checked. The
 * barrier is checked by a put to a neighbour before a barrier and a read after it. */
#include "bench_features.h"
#if BENCH_FORCE_ACTIVE_SET
#undef BENCH_HAVE_BROADCASTMEM
#undef BENCH_HAVE_FCOLLECTMEM
#undef BENCH_HAVE_ALLTOALLMEM
#undef BENCH_HAVE_DOUBLE_SUM_REDUCE
#define BENCH_HAVE_BROADCASTMEM 0
#define BENCH_HAVE_FCOLLECTMEM 0
#define BENCH_HAVE_ALLTOALLMEM 0
#define BENCH_HAVE_DOUBLE_SUM_REDUCE 0
#endif
#include "bench_shmem.h"
#include "bench_coll.h"

static long *stamp;
static unsigned char *src, *dst;

#if BENCH_HAVE_BROADCAST64 || BENCH_HAVE_FCOLLECT64 || BENCH_HAVE_ALLTOALL64 || \
    BENCH_HAVE_DOUBLE_SUM_TO_ALL
#define BENCH_ACTIVE_SET 1
#define BENCH_MAX_(a, b) ((a) > (b) ? (a) : (b))
enum {
  kSyncSize = BENCH_MAX_(BENCH_MAX_(SHMEM_BCAST_SYNC_SIZE, SHMEM_COLLECT_SYNC_SIZE),
                         BENCH_MAX_(SHMEM_REDUCE_SYNC_SIZE, SHMEM_ALLTOALL_SYNC_SIZE))
};
static double *wrk;
static long *psync[2];
static long calls __attribute__((unused)); /* read by next_psync() only */
#define next_psync() (psync[calls++ & 1]) /* a macro: unused with the team API (clang -Wunused-function) */
#else
#define BENCH_ACTIVE_SET 0
#endif

static double barrier(size_t size, long iters, uint64_t seed) {
  (void)size;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) shmem_barrier_all();
  const double t = bench_now_us() - t0;
  /* check: a put issued before a barrier is visible after it */
  shmem_long_p(stamp, (long)seed * npes + me, (me + 1) % npes);
  shmem_barrier_all();
  const long from = (me + npes - 1) % npes;
  if (*stamp != (long)seed * npes + from)
    bench_wrong("barrier", 0, "stamp, expected", *stamp, (long)seed * npes + from);
  return t;
}

static inline double bcast(size_t size, long iters, uint64_t seed) {
  if (me == 0) bench_fill(src, size, seed);
  shmem_barrier_all();
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
#if BENCH_HAVE_BROADCASTMEM
    shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, size, 0);
#elif BENCH_HAVE_BROADCAST64
    shmem_broadcast64(dst, src, size / 8, 0, 0, 0, npes, next_psync());
#endif
  }
  const double t = bench_now_us() - t0;
  long k;
  if (me != 0 && (k = bench_check(dst, size, seed)) >= 0) bench_wrong("bcast", size, "word", k, 0);
  return t;
}

static inline double fcollect(size_t size, long iters, uint64_t seed) {
  bench_fcollect_fill(src, size, seed);
  shmem_barrier_all();
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
#if BENCH_HAVE_FCOLLECTMEM
    shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, size);
#elif BENCH_HAVE_FCOLLECT64
    shmem_fcollect64(dst, src, size / 8, 0, 0, npes, next_psync());
#endif
  }
  const double t = bench_now_us() - t0;
  bench_fcollect_check(dst, size, seed);
  return t;
}

static inline double alltoall(size_t size, long iters, uint64_t seed) {
  bench_alltoall_fill(src, size, seed);
  shmem_barrier_all();
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
#if BENCH_HAVE_ALLTOALLMEM
    shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, size);
#elif BENCH_HAVE_ALLTOALL64
    shmem_alltoall64(dst, src, size / 8, 0, 0, npes, next_psync());
#endif
  }
  const double t = bench_now_us() - t0;
  bench_alltoall_check(dst, size, seed);
  return t;
}

static inline double reduce_sum(size_t size, long iters, uint64_t seed) {
  const size_t n = size / 8;
  double *s = (double *)src, *d = (double *)dst;
  bench_reduce_fill(s, size, seed);
  shmem_barrier_all();
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
#if BENCH_HAVE_DOUBLE_SUM_REDUCE
    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, d, s, n);
#elif BENCH_HAVE_DOUBLE_SUM_TO_ALL
    shmem_double_sum_to_all(d, s, (int)n, 0, 0, npes, wrk, next_psync());
#endif
  }
  const double t = bench_now_us() - t0;
  bench_reduce_check(d, size, seed);
  return t;
}

static void api_line(const char *name, int team, int active, const char *team_fn,
                     const char *active_fn) {
  if (me != 0 || !bench_selected(&O, name)) return;
  if (team) printf("# api %s: %s (team API)\n", name, team_fn);
  else if (active) printf("# api %s: %s (active set, alternating pSync)\n", name, active_fn);
  else printf("# skipped %s: the library declares neither %s nor %s\n", name, team_fn, active_fn);
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv, "shmem_coll", kBenchAllPEs);
  const size_t max = bench_max_size(&O);
  const size_t big = max * (size_t)npes;
  stamp = shmem_calloc(1, sizeof(long));
  src = shmem_malloc(big);
  dst = shmem_malloc(big);
  int ok = stamp && src && dst;
#if BENCH_ACTIVE_SET
  size_t wrk_elems = max / 8 / 2 + 1;
  if (wrk_elems < SHMEM_REDUCE_MIN_WRKDATA_SIZE) wrk_elems = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
  wrk = shmem_malloc(wrk_elems * sizeof(double));
  for (int k = 0; k < 2; ++k) {
    psync[k] = shmem_malloc(kSyncSize * sizeof(long));
    ok = ok && psync[k];
    for (int i = 0; ok && i < kSyncSize; ++i) psync[k][i] = SHMEM_SYNC_VALUE;
  }
  ok = ok && wrk;
#endif
  if (!ok) {
    fprintf(stderr, "shmem_coll [pe %d]: cannot allocate 2 x %zu bytes\n", me, big);
    shmem_global_exit(1);
  }
  shmem_barrier_all();

  bench_banner();
  api_line("bcast", BENCH_HAVE_BROADCASTMEM, BENCH_HAVE_BROADCAST64, "shmem_broadcastmem",
           "shmem_broadcast64");
  api_line("fcollect", BENCH_HAVE_FCOLLECTMEM, BENCH_HAVE_FCOLLECT64, "shmem_fcollectmem",
           "shmem_fcollect64");
  api_line("alltoall", BENCH_HAVE_ALLTOALLMEM, BENCH_HAVE_ALLTOALL64, "shmem_alltoallmem",
           "shmem_alltoall64");
  api_line("reduce_sum", BENCH_HAVE_DOUBLE_SUM_REDUCE, BENCH_HAVE_DOUBLE_SUM_TO_ALL,
           "shmem_double_sum_reduce", "shmem_double_sum_to_all");
  bench_columns();

  bench_measure("barrier", 0, kLatency, barrier, kLine);
#if BENCH_HAVE_BROADCASTMEM || BENCH_HAVE_BROADCAST64
  bench_measure_sizes("bcast", SIZE_MAX, kLatency, bcast, kLine | kCopy1);
#endif
#if BENCH_HAVE_FCOLLECTMEM || BENCH_HAVE_FCOLLECT64
  bench_measure_sizes("fcollect", SIZE_MAX, kLatency, fcollect, kLine | kCopy2n);
#endif
#if BENCH_HAVE_ALLTOALLMEM || BENCH_HAVE_ALLTOALL64
  bench_measure_sizes("alltoall", SIZE_MAX, kLatency, alltoall, kLine | kCopy2n);
#endif
#if BENCH_HAVE_DOUBLE_SUM_REDUCE || BENCH_HAVE_DOUBLE_SUM_TO_ALL
  bench_measure_sizes("reduce_sum", SIZE_MAX, kLatency, reduce_sum, kLine | kCopy2);
#endif

  const int rc = bench_done();
#if BENCH_ACTIVE_SET
  shmem_free(psync[1]);
  shmem_free(psync[0]);
  shmem_free(wrk);
#endif
  shmem_free(dst);
  shmem_free(src);
  shmem_free(stamp);
  bench_finish();
  return rc;
}
