// main() of the point-to-point test programs: GoogleTest over the OpenSHMEM C API (the
// default instance, started with shmem_init_thread(SHMEM_THREAD_MULTIPLE)). The verdict
// harness is tests/common/mp_gtest.hpp; here the other PEs also print their own failures.
#include <shmem.h>

#include <cstdio>

#include "mp_gtest.hpp"

static int start(int* me, int* npes) {
  int provided = -1;
  if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0 || provided != SHMEM_THREAD_MULTIPLE) {
    std::fprintf(stderr, "p2p: shmem_init_thread did not provide SHMEM_THREAD_MULTIPLE (%d)\n", provided);
    return 2;
  }
  *me = shmem_my_pe();
  *npes = shmem_n_pes();
  return 0;
}

int main(int argc, char** argv) {
  return mp::run_all_tests(argc, argv,
                           {.name = "p2p", .peer_failures_to_stderr = true, .start = start, .stop = shmem_finalize});
}
