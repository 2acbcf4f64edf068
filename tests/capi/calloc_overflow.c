/* shmem_calloc with a count x size that overflows size_t returns NULL on every PE (with the
 * heap-exhausted warning), as C's calloc does, and the job goes on: the next calloc works
 * and is zeroed. The CTest checks the warning. */
#include <shmem.h>
#include <stdint.h>

#include "check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  void* p = shmem_calloc(SIZE_MAX / 2 + 1, 2);
  CHECK(p == NULL, "overflowing shmem_calloc returned %p", p);
  p = shmem_calloc((size_t)1 << 33, (size_t)1 << 33); /* 2^66 bytes */
  CHECK(p == NULL, "overflowing shmem_calloc returned %p", p);
  long* q = shmem_calloc(16, sizeof(long));
  CHECK(q != NULL, "shmem_calloc(16, 8) after the overflow returned NULL");
  if (q)
    for (int i = 0; i < 16; ++i) CHECK(q[i] == 0, "q[%d] = %ld", i, q[i]);
  shmem_free(q);
  if (me == 0 && !failures) printf("calloc_overflow: ok\n");
  shmem_finalize();
  return failures ? 1 : 0;
}
