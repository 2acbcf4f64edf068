/* libsymmem_mpi: the two MPI calls SHMEMX_INIT_WITH_MPI needs (rank/size of a communicator
 * and a broadcast of the unique id). A separate library, loaded by libsymmem only when a
 * program asks for MPI, so that libsymmem itself does not depend on any MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define SYMMEM_MPI_API __attribute__((visibility("default")))

static void finalize_at_exit(void) {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

static MPI_Comm comm_of(void* comm) { return comm ? *(MPI_Comm*)comm : MPI_COMM_WORLD; }

static int report(int rc, const char* what, char* err, size_t errlen) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  snprintf(err, errlen, "%s failed: %s", what, text);
  return 1;
}

SYMMEM_MPI_API int symmem_mpi_rank_size(void* comm, int* rank, int* size, char* err, size_t errlen) {
  int inited = 0, rc;
  MPI_Initialized(&inited);
  if (!inited) {
    /* The program did not initialize MPI: do it, and finalize at exit as MPI requires. */
    int provided = 0;
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return report(rc, "MPI_Init_thread", err, errlen);
    atexit(finalize_at_exit);
  }
  if ((rc = MPI_Comm_rank(comm_of(comm), rank)) != MPI_SUCCESS) return report(rc, "MPI_Comm_rank", err, errlen);
  if ((rc = MPI_Comm_size(comm_of(comm), size)) != MPI_SUCCESS) return report(rc, "MPI_Comm_size", err, errlen);
  return 0;
}

SYMMEM_MPI_API int symmem_mpi_bcast(void* comm, void* buf, size_t len, char* err, size_t errlen) {
  int rc = MPI_Bcast(buf, (int)len, MPI_BYTE, 0, comm_of(comm));
  return rc == MPI_SUCCESS ? 0 : report(rc, "MPI_Bcast of the unique id", err, errlen);
}
