/* mpi_coll.c: the MPI equivalents of shmem_coll.c (bench/compare.sh builds it with mpicc),
 * with the same sizes, calibration, medians (slowest rank per sample), validation and
 * output (bench_util.h):
 *
 *   barrier     MPI_Barrier
 *   bcast       MPI_Bcast of SIZE bytes from rank 0
 *   fcollect    MPI_Allgather of SIZE bytes per rank
 *   alltoall    MPI_Alltoall of SIZE bytes per pair of ranks
 *   reduce_sum  MPI_Allreduce(MPI_SUM) of SIZE/8 doubles */
#include <mpi.h>

#include "bench_util.h"

static bench_opts O;
static int me, npes;
static long failures;
static unsigned char *src, *dst;

static void wrong(const char *bench, size_t size, const char *what, long a, long b) {
  fprintf(stderr, "mpi_coll [rank %d] %s size %zu: wrong data: %s (%ld, %ld)\n", me, bench, size,
          what, a, b);
  ++failures;
}

static long agree(long v) {
  MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return v;
}

static double max_over_pes(double t) {
  double m;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

static long total_failures(void) {
  long sum = 0;
  MPI_Reduce(&failures, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  return sum;
}

typedef double (*coll_fn)(size_t size, long iters, uint64_t seed);

static void measure(const char *name, size_t size, coll_fn fn) {
  const long before = total_failures();
  double t[kBenchMaxSamples];
  uint64_t seed = (uint64_t)size * 7919u;
  MPI_Barrier(MPI_COMM_WORLD);
  /* warm-up (first touch, connections), also a first estimate; when one operation is
   * slower than a sample should last, it is estimate enough */
  double est = max_over_pes(fn(size, 1, ++seed));
  MPI_Barrier(MPI_COMM_WORLD);
  if (agree(est < O.target_us)) est = max_over_pes(fn(size, 3, ++seed)) / 3;
  const long iters = agree(bench_iters_for(&O, est));
  const int samples = (int)agree(bench_samples_for(&O, est, iters));
  for (int s = 0; s < samples; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    t[s] = max_over_pes(fn(size, iters, ++seed)) / (double)iters;
  }
  const long bad = total_failures() - before;
  if (me == 0) bench_row(name, size, bench_median(t, samples), "us", bad != 0);
}


static double barrier(size_t size, long iters, uint64_t seed) {
  (void)size;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) MPI_Barrier(MPI_COMM_WORLD);
  const double t = bench_now_us() - t0;
  /* check: a message sent before a barrier has arrived after it (ring exchange) */
  long out = (long)seed * npes + me, in = -1;
  MPI_Sendrecv(&out, 1, MPI_LONG, (me + 1) % npes, 2, &in, 1, MPI_LONG, (me + npes - 1) % npes, 2,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  const long from = (me + npes - 1) % npes;
  if (in != (long)seed * npes + from) wrong("barrier", 0, "stamp, expected", in, (long)seed * npes + from);
  return t;
}

static double bcast(size_t size, long iters, uint64_t seed) {
  if (me == 0) bench_fill(src, size, seed);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i)
    MPI_Bcast(me == 0 ? src : dst, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
  const double t = bench_now_us() - t0;
  long k;
  if (me != 0 && (k = bench_check(dst, size, seed)) >= 0) wrong("bcast", size, "word", k, 0);
  return t;
}

static double fcollect(size_t size, long iters, uint64_t seed) {
  bench_fill(src, size, seed * 64 + (uint64_t)me);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i)
    MPI_Allgather(src, (int)size, MPI_BYTE, dst, (int)size, MPI_BYTE, MPI_COMM_WORLD);
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

static double alltoall(size_t size, long iters, uint64_t seed) {
  for (int j = 0; j < npes; ++j)
    bench_fill(src + (size_t)j * size, size, seed * 4096 + (uint64_t)(me * 64 + j));
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i)
    MPI_Alltoall(src, (int)size, MPI_BYTE, dst, (int)size, MPI_BYTE, MPI_COMM_WORLD);
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

static double term(uint64_t seed, size_t i, int pe) {
  return (double)((pe + 1) * (int)((i + seed) % 13 + 1));
}

static double reduce_sum(size_t size, long iters, uint64_t seed) {
  const size_t n = size / 8;
  double *s = (double *)src, *d = (double *)dst;
  for (size_t i = 0; i < n; ++i) s[i] = term(seed, i, me);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
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

int main(int argc, char **argv) {
  bench_parse(argc, argv, &O);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &npes);

  const size_t big = bench_max_size(&O) * (size_t)npes;
  src = malloc(big);
  dst = malloc(big);
  if (!src || !dst) {
    fprintf(stderr, "mpi_coll [rank %d]: cannot allocate 2 x %zu bytes\n", me, big);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (me == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    char *nl = strchr(version, '\n');
    if (nl) *nl = 0;
    printf("# mpi_coll: %s, %d ranks, median of %d samples (slowest rank)\n", version, npes,
           O.samples);
    printf("bench,size,value,unit\n");
    fflush(stdout);
  }

  if (bench_selected(&O, "barrier")) measure("barrier", 0, barrier);
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "bcast")) measure("bcast", O.sizes[k], bcast);
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "fcollect")) measure("fcollect", O.sizes[k], fcollect);
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "alltoall")) measure("alltoall", O.sizes[k], alltoall);
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "reduce_sum")) measure("reduce_sum", O.sizes[k], reduce_sum);

  const long bad = total_failures();
  if (me == 0) {
    printf(bad ? "# done: %ld WRONG results\n" : "# done: all results validated\n", bad);
    fflush(stdout);
  }
  free(dst);
  free(src);
  MPI_Finalize();
  return bad || failures ? 1 : 0;
}
