/* The vector waits of the hang-report tests (hang_tests.py): PEs 0..N-2 enter a barrier
 * that PE N-1 skips to wait on its 'vflags' (10 ints), which nobody completes.
 *   all   shmem_int_wait_until_all_vector on elements 0-5 but 4 (status), expecting
 *         element i to equal i+1; PE 0 has set elements 0 and 2 (to 1 and 3) beforehand,
 *         so PE N-1 sleeps on element 1
 *   any   shmem_int_wait_until_any on all 10 elements == 7; nobody writes them */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "all") != 0 && strcmp(argv[1], "any") != 0)) {
    fprintf(stderr, "usage: hang_vec all|any\n");
    return 2;
  }
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  int* v = shmem_calloc(10, sizeof(int));
  shmemx_set_name(v, "vflags");
  shmem_barrier_all();
  if (strcmp(argv[1], "all") == 0) {
    if (me == 0) {
      shmem_int_atomic_set(v + 0, 1, n - 1);
      shmem_int_atomic_set(v + 2, 3, n - 1);
      shmem_quiet();
    }
    if (me == n - 1) {
      const int status[6] = {0, 0, 0, 0, 1, 0};
      const int want[6] = {1, 2, 3, 4, 5, 6};
      shmem_int_wait_until_all_vector(v, 6, status, SHMEM_CMP_EQ, want);
    } else {
      shmem_barrier_all();
    }
  } else {
    if (me == n - 1) (void)shmem_int_wait_until_any(v, 10, NULL, SHMEM_CMP_EQ, 7);
    else shmem_barrier_all();
  }
  shmem_free(v);
  shmem_finalize();
  printf("hang_vec: PE %d done\n", me);
  return 0;
}
