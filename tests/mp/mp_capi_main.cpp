// main() of the multi-PE GoogleTest programs that test the OpenSHMEM C API (teams,
// collectives): each PE starts with shmem_init; the verdict harness is
// tests/common/mp_gtest.hpp.
#include <shmem.h>

#include "mp_gtest.hpp"

static int start(int* me, int* npes) {
  shmem_init();
  *me = shmem_my_pe();
  *npes = shmem_n_pes();
  return 0;
}

int main(int argc, char** argv) {
  return mp::run_all_tests(argc, argv,
                           {.name = "mp", .peer_failures_to_stderr = false, .start = start, .stop = shmem_finalize});
}
