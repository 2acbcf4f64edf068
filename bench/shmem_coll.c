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
 *
 * One sample's time is the slowest PE's; the value is the median over samples. Every
 * sample is validated after its timed part: sources carry a pattern that changes every
 * sample and names the sending PE, and every received byte (every sum) is checked. The
 * barrier is checked by a put to a neighbour before a barrier and a read after it. */
#include <shmem.h>

#include "bench_features.h"
#include "bench_util.h"

static bench_opts O;
static int me, npes;
static long failures;
static long *agree_slot, *fail_slots, *stamp;
static double *time_slots;
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
static long calls;
static inline long *next_psync(void) { return psync[calls++ & 1]; }
#else
#define BENCH_ACTIVE_SET 0
#endif

static void wrong(const char *bench, size_t size, const char *what, long a, long b) {
  fprintf(stderr, "shmem_coll [pe %d] %s size %zu: wrong data: %s (%ld, %ld)\n", me, bench,
          size, what, a, b);
  ++failures;
}

static long agree(long v) {
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe) shmem_long_p(agree_slot, v, pe);
  shmem_barrier_all();
  const long r = *agree_slot;
  shmem_barrier_all();
  return r;
}

/* Largest t over all PEs, on every PE. */
static double max_over_pes(double t) {
  shmem_double_p(&time_slots[me], t, 0);
  shmem_barrier_all();
  double m = 0;
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe) m = time_slots[pe] > m ? time_slots[pe] : m;
  shmem_barrier_all();
  return m;
}

static long total_failures(void) {
  shmem_long_p(&fail_slots[me], failures, 0);
  shmem_barrier_all();
  long sum = 0;
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe) sum += fail_slots[pe];
  shmem_barrier_all();
  return sum;
}

/* fn(size, iters, seed): prepares, runs `iters` collectives (timed), validates; returns
 * this PE's elapsed us. */
typedef double (*coll_fn)(size_t size, long iters, uint64_t seed);

static void measure(const char *name, size_t size, coll_fn fn) {
  const long before = total_failures();
  double t[kBenchMaxSamples];
  uint64_t seed = (uint64_t)size * 7919u;
  shmem_barrier_all();
  /* warm-up (first touch, connections), also a first estimate; when one operation is
   * slower than a sample should last, it is estimate enough */
  double est = max_over_pes(fn(size, 1, ++seed));
  shmem_barrier_all();
  if (agree(est < O.target_us)) est = max_over_pes(fn(size, 3, ++seed)) / 3;
  const long iters = agree(bench_iters_for(&O, est));
  const int samples = (int)agree(bench_samples_for(&O, est, iters));
  for (int s = 0; s < samples; ++s) {
    shmem_barrier_all();
    t[s] = max_over_pes(fn(size, iters, ++seed)) / (double)iters;
  }
  const long bad = total_failures() - before;
  if (me == 0) bench_row(name, size, bench_median(t, samples), "us", bad != 0);
}

static double barrier(size_t size, long iters, uint64_t seed) {
  (void)size;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) shmem_barrier_all();
  const double t = bench_now_us() - t0;
  /* check: a put issued before a barrier is visible after it */
  shmem_long_p(stamp, (long)seed * npes + me, (me + 1) % npes);
  shmem_barrier_all();
  const long from = (me + npes - 1) % npes;
  if (*stamp != (long)seed * npes + from) wrong("barrier", 0, "stamp, expected", *stamp, (long)seed * npes + from);
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
  if (me != 0 && (k = bench_check(dst, size, seed)) >= 0) wrong("bcast", size, "word", k, 0);
  return t;
}

static inline double fcollect(size_t size, long iters, uint64_t seed) {
  bench_fill(src, size, seed * 64 + (uint64_t)me);
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
  for (int pe = 0; pe < npes; ++pe) {
    const long k = bench_check(dst + (size_t)pe * size, size, seed * 64 + (uint64_t)pe);
    if (k >= 0) {
      wrong("fcollect", size, "block, word", pe, k);
      break;
    }
  }
  return t;
}

static inline double alltoall(size_t size, long iters, uint64_t seed) {
  /* block j of my source goes to PE j and names (me, j) */
  for (int j = 0; j < npes; ++j)
    bench_fill(src + (size_t)j * size, size, seed * 4096 + (uint64_t)(me * 64 + j));
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
  for (int pe = 0; pe < npes; ++pe) {
    const long k =
        bench_check(dst + (size_t)pe * size, size, seed * 4096 + (uint64_t)(pe * 64 + me));
    if (k >= 0) {
      wrong("alltoall", size, "block, word", pe, k);
      break;
    }
  }
  return t;
}

/* Small integers, so that the sum is exact in any order of addition. */
static inline double term(uint64_t seed, size_t i, int pe) {
  return (double)((pe + 1) * (int)((i + seed) % 13 + 1));
}

static inline double reduce_sum(size_t size, long iters, uint64_t seed) {
  const size_t n = size / 8;
  double *s = (double *)src, *d = (double *)dst;
  for (size_t i = 0; i < n; ++i) s[i] = term(seed, i, me);
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
  const double scale = (double)npes * (npes + 1) / 2;
  for (size_t i = 0; i < n; ++i) {
    if (d[i] != term(seed, i, 0) * scale) {
      wrong("reduce_sum", size, "element, value", (long)i, (long)d[i]);
      break;
    }
  }
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
  bench_parse(argc, argv, &O);
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();

  const size_t max = bench_max_size(&O);
  const size_t big = max * (size_t)npes;
  agree_slot = shmem_calloc(1, sizeof(long));
  stamp = shmem_calloc(1, sizeof(long));
  fail_slots = shmem_calloc((size_t)npes, sizeof(long));
  time_slots = shmem_calloc((size_t)npes, sizeof(double));
  src = shmem_malloc(big);
  dst = shmem_malloc(big);
  int ok = agree_slot && stamp && fail_slots && time_slots && src && dst;
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

  if (me == 0) {
    char name[SHMEM_MAX_NAME_LEN];
    int major, minor;
    shmem_info_get_name(name);
    shmem_info_get_version(&major, &minor);
    printf("# shmem_coll: %s, OpenSHMEM %d.%d, %d PEs, median of %d samples (slowest PE)\n",
           name, major, minor, npes, O.samples);
    fflush(stdout);
  }
  api_line("bcast", BENCH_HAVE_BROADCASTMEM, BENCH_HAVE_BROADCAST64, "shmem_broadcastmem",
           "shmem_broadcast64");
  api_line("fcollect", BENCH_HAVE_FCOLLECTMEM, BENCH_HAVE_FCOLLECT64, "shmem_fcollectmem",
           "shmem_fcollect64");
  api_line("alltoall", BENCH_HAVE_ALLTOALLMEM, BENCH_HAVE_ALLTOALL64, "shmem_alltoallmem",
           "shmem_alltoall64");
  api_line("reduce_sum", BENCH_HAVE_DOUBLE_SUM_REDUCE, BENCH_HAVE_DOUBLE_SUM_TO_ALL,
           "shmem_double_sum_reduce", "shmem_double_sum_to_all");
  if (me == 0) {
    printf("bench,size,value,unit\n");
    fflush(stdout);
  }

  if (bench_selected(&O, "barrier")) measure("barrier", 0, barrier);
#if BENCH_HAVE_BROADCASTMEM || BENCH_HAVE_BROADCAST64
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "bcast")) measure("bcast", O.sizes[k], bcast);
#endif
#if BENCH_HAVE_FCOLLECTMEM || BENCH_HAVE_FCOLLECT64
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "fcollect")) measure("fcollect", O.sizes[k], fcollect);
#endif
#if BENCH_HAVE_ALLTOALLMEM || BENCH_HAVE_ALLTOALL64
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "alltoall")) measure("alltoall", O.sizes[k], alltoall);
#endif
#if BENCH_HAVE_DOUBLE_SUM_REDUCE || BENCH_HAVE_DOUBLE_SUM_TO_ALL
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "reduce_sum")) measure("reduce_sum", O.sizes[k], reduce_sum);
#endif

  const long bad = total_failures();
  if (me == 0) {
    printf(bad ? "# done: %ld WRONG results\n" : "# done: all results validated\n", bad);
    fflush(stdout);
  }
  shmem_barrier_all();
#if BENCH_ACTIVE_SET
  shmem_free(psync[1]);
  shmem_free(psync[0]);
  shmem_free(wrk);
#endif
  shmem_free(dst);
  shmem_free(src);
  shmem_free(time_slots);
  shmem_free(fail_slots);
  shmem_free(stamp);
  shmem_free(agree_slot);
  shmem_finalize();
  return bad || failures ? 1 : 0;
}
