/* symmem/shmemx_device.h — GPU device memory (docs/device.md); included by shmemx.h. */
#ifndef SYMMEM_SHMEMX_DEVICE_H
#define SYMMEM_SHMEMX_DEVICE_H
#include <stddef.h>
#include <stdint.h>
#include <shmem.h>
#include "symmem/device_wait.h"
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
 * on. Free with shmem_free. Host RMA, atomic and signal calls accept device addresses (the
 * GPU does them: see "Host calls" below); kernels use symmem/cuda.cuh; shmem_ptr gives a
 * node peer's device address. */
#define SHMEMX_MALLOC_DEVICE (1L << 16)

/* The device heap as kernels address it (symmem::cuda::Heap in symmem/cuda.cuh). */
typedef struct {
  void* base;        /* PE 0's slot; PE p's is base + p * heap_size (node peers only mapped) */
  size_t heap_size;  /* per PE */
  int my_pe, n_pes;
  int device;        /* the GPU ordinal of this PE's heap */
  /* Where this PE's kernels record a wait that expired: the device address of its
   * shmemx_device_wait_record_t in host memory (the hang report reads it there, also after
   * the trap). NULL when the driver would not map it: kernels then use the slot's start. */
  shmemx_device_wait_record_t* wait_record;
} shmemx_device_heap_t;
/* Local. Fills *out and returns 0 once a device allocation has created the heap; -1 before
 * that or when there is none. */
SHMEM_API int shmemx_device_heap_query(shmemx_device_heap_t* out);
/* Local. This PE's record of an expired device wait (symmem/device_wait.h), as the host
 * reads it: on its status page, readable after a kernel trapped and the CUDA context is
 * gone (state 1 then). NULL before shmem_init and after shmem_finalize. */
SHMEM_API const shmemx_device_wait_record_t* shmemx_device_wait_record(void);

/* ---- Host calls on device memory ----
 * shmem_put/get (all sizes, _nbi, strided), shmem_p/g, the atomics, shmem_signal_* and
 * shmem_put_signal, shmem_wait_until/test on one word and shmem_signal_wait_until take
 * addresses in the device heap. The GPU does the work (copies by its copy engine, atomics
 * and signals by symmem's own kernels) and the call returns once it is complete at the
 * target, so the completion rules hold unchanged (quiet has nothing left to do). Host
 * collectives, vector waits and locks take host memory only (reported otherwise). */

/* ---- Stream-ordered forms (NVSHMEM's nvshmemx_*_on_stream) ----
 * Queued on `stream` (a cudaStream_t or CUstream) and done when the stream reaches them,
 * after the work queued before; the call returns at once. Buffers are symmetric addresses
 * in the device heap, except the local side of a put/get (any memory the GPU reaches).
 * Every wait inside these (signal waits, the collectives' syncs) has a deadline,
 * SYMMEM_DEVICE_WAIT_TIMEOUT seconds: on expiry it records what it waited for and traps
 * (the stream's context fails; a hang is named, never silent). Collectives: every member
 * calls, in the same order, one at a time per team; several PEs sharing one GPU need MPS
 * for the kernels to meet (docs/device.md). Teams of at most 256 PEs. */
#define SHMEMX_HAVE_STREAM_OPS 1
typedef struct CUstream_st* shmemx_stream_t;

SHMEM_API void shmemx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe, shmemx_stream_t stream);
SHMEM_API void shmemx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe, shmemx_stream_t stream);
/* The data, then the signal update (sig_op SHMEM_SIGNAL_SET / _ADD) once the data is complete. */
SHMEM_API void shmemx_putmem_signal_on_stream(void* dest, const void* source, size_t nelems, uint64_t* sig_addr,
                                              uint64_t signal, int sig_op, int pe, shmemx_stream_t stream);
SHMEM_API void shmemx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                          shmemx_stream_t stream);
/* The stream waits until this PE's sig_addr compares (SHMEM_CMP_*) with cmp_value. */
SHMEM_API void shmemx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value,
                                                  shmemx_stream_t stream);
/* Every operation queued before is complete when the stream reaches this point: the
 * forms above complete in stream order, so nothing is queued. */
SHMEM_API void shmemx_quiet_on_stream(shmemx_stream_t stream);
SHMEM_API void shmemx_barrier_all_on_stream(shmemx_stream_t stream);
SHMEM_API void shmemx_sync_all_on_stream(shmemx_stream_t stream);
SHMEM_API int shmemx_barrier_on_stream(shmem_team_t team, shmemx_stream_t stream);
SHMEM_API int shmemx_team_sync_on_stream(shmem_team_t team, shmemx_stream_t stream);
/* nelems in bytes; PE_root a team index. Semantics of the OpenSHMEM 1.5 team forms. */
SHMEM_API int shmemx_broadcastmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                            int PE_root, shmemx_stream_t stream);
SHMEM_API int shmemx_fcollectmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                           shmemx_stream_t stream);
SHMEM_API int shmemx_alltoallmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                           shmemx_stream_t stream);
/* Reductions: shmemx_<T>_<op>_reduce_on_stream (all-reduce of nreduce elements; one-shot or
 * two-shot by size) and shmemx_<T>_<op>_reducescatter_on_stream (member i gets the
 * reduction of element block i; nreduce elements per PE, source holds n_pes blocks).
 * T: float, half, bfloat16 (pointers to __half / __nv_bfloat16, taken as void*), int32,
 * int64; op: sum, min, max, and prod for int32 and int64. */
#define SHMEMX_DEVICE_REDUCE_DECL(NAME, TYPE, OP)                                                                  \
  SHMEM_API int shmemx_##NAME##_##OP##_reduce_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,         \
                                                        size_t nreduce, shmemx_stream_t stream);                   \
  SHMEM_API int shmemx_##NAME##_##OP##_reducescatter_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                                               size_t nreduce, shmemx_stream_t stream);
#define SHMEMX_DEVICE_REDUCE_TYPES(X)                                                                  \
  X(float, float, sum) X(float, float, min) X(float, float, max)                                      \
  X(half, void, sum) X(half, void, min) X(half, void, max)                                            \
  X(bfloat16, void, sum) X(bfloat16, void, min) X(bfloat16, void, max)                                \
  X(int32, int32_t, sum) X(int32, int32_t, min) X(int32, int32_t, max) X(int32, int32_t, prod)        \
  X(int64, int64_t, sum) X(int64, int64_t, min) X(int64, int64_t, max) X(int64, int64_t, prod)
SHMEMX_DEVICE_REDUCE_TYPES(SHMEMX_DEVICE_REDUCE_DECL)

#ifdef __cplusplus
}
#endif
#endif
