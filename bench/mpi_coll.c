/* mpi_coll.c: the MPI equivalents of shmem_coll.c (bench/compare.sh builds it with mpicc),
 * with the same sizes, calibration, medians (slowest rank per sample), validation and
 * output (bench_util.h):
 *
 *   barrier     MPI_Barrier
 *   bcast       MPI_Bcast of SIZE bytes from rank 0
 *   fcollect    MPI_Allgather of SIZE bytes per rank
 *   alltoall    MPI_Alltoall of SIZE bytes per pair of ranks
 *   reduce_sum  MPI_Allreduce(MPI_SUM) of SIZE/8 doubles */
#include "bench_mpi.h"
#include "bench_coll.h"

static unsigned char *src, *dst;

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
  if (in != (long)seed * npes + from)
    bench_wrong("barrier", 0, "stamp, expected", in, (long)seed * npes + from);
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
  if (me != 0 && (k = bench_check(dst, size, seed)) >= 0) bench_wrong("bcast", size, "word", k, 0);
  return t;
}

static double fcollect(size_t size, long iters, uint64_t seed) {
  bench_fcollect_fill(src, size, seed);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i)
    MPI_Allgather(src, (int)size, MPI_BYTE, dst, (int)size, MPI_BYTE, MPI_COMM_WORLD);
  const double t = bench_now_us() - t0;
  bench_fcollect_check(dst, size, seed);
  return t;
}

static double alltoall(size_t size, long iters, uint64_t seed) {
  bench_alltoall_fill(src, size, seed);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i)
    MPI_Alltoall(src, (int)size, MPI_BYTE, dst, (int)size, MPI_BYTE, MPI_COMM_WORLD);
  const double t = bench_now_us() - t0;
  bench_alltoall_check(dst, size, seed);
  return t;
}

static double reduce_sum(size_t size, long iters, uint64_t seed) {
  const size_t n = size / 8;
  double *s = (double *)src, *d = (double *)dst;
  bench_reduce_fill(s, size, seed);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double t = bench_now_us() - t0;
  bench_reduce_check(d, size, seed);
  return t;
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv, "mpi_coll", kBenchAllPEs);
  const size_t big = bench_max_size(&O) * (size_t)npes;
  src = malloc(big);
  dst = malloc(big);
  if (!src || !dst) {
    fprintf(stderr, "mpi_coll [rank %d]: cannot allocate 2 x %zu bytes\n", me, big);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  bench_banner();
  bench_columns();

  bench_measure("barrier", 0, kLatency, barrier, kLine);
  bench_measure_sizes("bcast", SIZE_MAX, kLatency, bcast, kLine | kCopy1);
  bench_measure_sizes("fcollect", SIZE_MAX, kLatency, fcollect, kLine | kCopy2n);
  bench_measure_sizes("alltoall", SIZE_MAX, kLatency, alltoall, kLine | kCopy2n);
  bench_measure_sizes("reduce_sum", SIZE_MAX, kLatency, reduce_sum, kLine | kCopy2);

  const int rc = bench_done();
  free(dst);
  free(src);
  bench_finish();
  return rc;
}
