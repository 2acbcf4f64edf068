/* symmem/shmemx_device.h — GPU device memory (docs/device.md); included by shmemx.h. */
#ifndef SYMMEM_SHMEMX_DEVICE_H
#define SYMMEM_SHMEMX_DEVICE_H
#include <stddef.h>
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Hint of shmem_malloc_with_hints: the block lives in the device heap, in the memory of the
 * GPU this PE is bound to (SYMMEM_DEVICE; by default its index on the node modulo the
 * visible GPUs), SYMMEM_DEVICE_HEAP_SIZE bytes per PE. Collective as shmem_malloc, and
 * checked the same way. The first such call creates the device heap (every PE of the node
 * maps every other's: remote = ptr + (pe - my_pe) * heap_size, in kernels too). Returns
 * NULL on every PE, with the reason logged, when any PE has no usable GPU (no driver, no
 * device, a CUDA-less build, a job spanning nodes) or the device heap is full; the job goes
 * on. Free with shmem_free. Host RMA/AMO calls do not accept device addresses yet; kernels
 * use symmem/cuda.cuh, shmem_ptr gives a node peer's device address. */
#define SHMEMX_MALLOC_DEVICE (1L << 16)

/* The device heap as kernels address it (symmem::cuda::Heap in symmem/cuda.cuh). */
typedef struct {
  void* base;        /* PE 0's slot; PE p's is base + p * heap_size (node peers only mapped) */
  size_t heap_size;  /* per PE */
  int my_pe, n_pes;
  int device;        /* the GPU ordinal of this PE's heap */
} shmemx_device_heap_t;
/* Local. Fills *out and returns 0 once a device allocation has created the heap; -1 before
 * that or when there is none. */
SHMEM_API int shmemx_device_heap_query(shmemx_device_heap_t* out);

#ifdef __cplusplus
}
#endif
#endif
