/* An outside program: built against an installed symmem with pkg-config or find_package. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* box = shmem_malloc(sizeof(long));
  *box = -1;
  shmem_barrier_all();
  shmem_long_p(box, me, (me + 1) % n);
  shmem_barrier_all();
  int ok = *box == (me + n - 1) % n;
  printf("hello from PE %d of %d: %s\n", me, n, ok ? "ok" : "WRONG");
  shmem_free(box);
  shmem_finalize();
  return ok ? 0 : 1;
}
