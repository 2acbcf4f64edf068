/* Device allocation where no PE has a usable GPU (run with CUDA_VISIBLE_DEVICES= so that
 * even a GPU machine takes this path, or in a build without the CUDA route):
 * shmem_malloc_with_hints(..., SHMEMX_MALLOC_DEVICE) returns NULL on every PE (the reason
 * is logged; the CTest checks it), twice, and the job goes on: host allocation, puts and
 * barriers work after it. Case "mismatch": PE 0 asks for device memory while the others
 * ask for host memory, which ends the job with the collective mismatch report. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "null";
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  if (strcmp(c, "mismatch") == 0) {
    void* p = me == 0 ? shmem_malloc_with_hints(4096, SHMEMX_MALLOC_DEVICE) : shmem_malloc(4096);
    (void)p;
    shmem_finalize();
    return 0;
  }
  int bad = 0;
  for (int i = 0; i < 2; ++i) {
    void* d = shmem_malloc_with_hints((size_t)1 << 20, SHMEMX_MALLOC_DEVICE);
    if (d != NULL) {
      fprintf(stderr, "PE %d: device allocation %d returned %p, want NULL\n", me, i, d);
      bad++;
    }
  }
  shmemx_device_heap_t h;
  if (shmemx_device_heap_query(&h) != -1) {
    fprintf(stderr, "PE %d: shmemx_device_heap_query found a device heap\n", me);
    bad++;
  }
  /* the job goes on: host memory, a put and a barrier */
  long* x = shmem_malloc(sizeof(long) * (size_t)n);
  if (!x) return 1;
  shmem_long_p(&x[me], me + 100, (me + 1) % n);
  shmem_barrier_all();
  int from = (me + n - 1) % n;
  if (x[from] != from + 100) {
    fprintf(stderr, "PE %d: x[%d] = %ld, want %d\n", me, from, x[from], from + 100);
    bad++;
  }
  shmem_free(x);
  if (me == 0 && !bad) printf("device_alloc: NULL on all %d PEs, the job went on\n", n);
  shmem_finalize();
  return bad ? 1 : 0;
}
