/* One PE of the symmem-info / SHMEM_INFO tests (tests/info/info_tests.py):
 *   info_pe           shmem_init
 *   info_pe attr      shmemx_init_attr(DEFAULT) with a 32 MiB heap (the table's "api" source)
 * then a barrier; prints "PE <me> of <n> ok". */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
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
  printf("PE %d of %d ok\n", shmem_my_pe(), shmem_n_pes());
  fflush(stdout);
  shmem_finalize();
  return 0;
}
