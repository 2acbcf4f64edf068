/* One PE of the symmem-info / SHMEM_INFO tests (tests/info/info_tests.py):
 *   info_pe           shmem_init
 *   info_pe attr      shmemx_init_attr(DEFAULT) with a 32 MiB heap (the table's "api" source)
 * then a barrier; prints "PE <me> of <n> ok" and "job <SYMMEM_JOB_ID>" (the test looks for
 * /dev/shm objects of that job after it). */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "attr") == 0) {
    shmemx_init_attr_t a = SHMEMX_INIT_ATTR_INITIALIZER;
    a.local_mem_size = 32u << 20;
    if (shmemx_init_attr(SHMEMX_INIT_WITH_DEFAULT, &a) != SHMEMX_SUCCESS) return 3;
  } else {
    shmem_init();
  }
  shmem_barrier_all();
  const char* job = getenv("SYMMEM_JOB_ID");
  printf("PE %d of %d ok\njob %s\n", shmem_my_pe(), shmem_n_pes(), job ? job : "?");
  fflush(stdout);
  shmem_finalize();
  return 0;
}
