/* Starting a job from a unique id broadcast with MPI (SHMEMX_INIT_WITH_UNIQUEID), the way
 * NVSHMEM and aclshmem programs do:
 *
 *   mpirun -np 4 uid_mpi
 *
 * Rank 0 creates the id (starting the job's store in rank 0), MPI_Bcast hands it to every
 * rank, and each joins with its MPI rank as PE number. Then a ring of puts is checked and
 * compared with an MPI_Allreduce of the same numbers. */
#include <mpi.h>
#include <shmemx.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  shmemx_uniqueid_t uid = SHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0 && shmemx_get_uniqueid(&uid) != SHMEMX_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Bcast(&uid, sizeof uid, MPI_BYTE, 0, MPI_COMM_WORLD);

  shmemx_init_attr_t attr;
  shmemx_set_attr_uniqueid_args(rank, size, 64 << 20, &uid, &attr);
  if (shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) != SHMEMX_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);

  int me = shmem_my_pe(), n = shmem_n_pes();
  long* box = shmem_malloc(sizeof(long));
  shmem_long_p(box, me * 10, (me + 1) % n);
  shmem_barrier_all();
  long mine = *box, sum = 0, expect = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) expect += i * 10;
  int ok = me == rank && n == size && mine == ((me + n - 1) % n) * 10 && sum == expect;
  if (me == 0) printf("%d PEs: ring over symmetric memory %s (sum %ld, expected %ld)\n", n, ok ? "ok" : "WRONG", sum, expect);
  shmem_free(box);
  shmem_finalize();
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
