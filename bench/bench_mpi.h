/* bench_mpi.h: the MPI backend of bench_harness.h (mpi_p2p.c, mpi_coll.c): the harness's
 * agreements and sums are MPI collectives on MPI_COMM_WORLD (untimed control path). */
#ifndef BENCH_MPI_H
#define BENCH_MPI_H

#include <mpi.h>

#define BENCH_PE_TAG "rank"
#define BENCH_PE_NAME "rank"
#include "bench_harness.h"

static void bench_backend_init(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &npes);
}

static void bench_finish(void) { MPI_Finalize(); }

/* The first line of MPI_Get_library_version. */
static const char *bench_library(void) {
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len;
  MPI_Get_library_version(version, &len);
  char *nl = strchr(version, '\n');
  if (nl) *nl = 0;
  return version;
}

static void bench_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static long bench_agree(long v) {
  MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return v;
}

static double bench_max_over_pes(double t) {
  double m;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

static long bench_sum_on_pe0(long v) {
  long sum = 0;
  MPI_Reduce(&v, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  return sum;
}

#endif /* BENCH_MPI_H */
