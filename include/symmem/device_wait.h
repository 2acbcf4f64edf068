/* symmem/device_wait.h — the record of a device wait that expired (symmem/cuda.cuh, docs/device.md).
 *
 * Each PE has one, in host memory on its status page (the page symmem-run and the hang
 * report read), mapped for the GPU when the device heap is made: kernels reach it through
 * shmemx_device_heap_t::wait_record, the host through shmemx_device_wait_record(). Plain C
 * layout, the same for nvcc and the host compilers. */
#ifndef SYMMEM_DEVICE_WAIT_H
#define SYMMEM_DEVICE_WAIT_H

/* state is 0 until a wait expires; the first expiring thread of the PE sets it to 2, fills
 * the rest, fences (system scope) and sets it to 1 (release): read the fields once it is 1. */
typedef struct {
  unsigned int state;
  int pe;                       /* this PE */
  int peer;                     /* the PE whose write was awaited (-1: any/unknown) */
  int cmp;                      /* SHMEM_CMP_EQ..LE (symmem::cuda::Cmp) */
  unsigned long long addr;      /* the awaited word (device address, in this PE's address space) */
  unsigned long long expected;  /* the value it was compared with */
  unsigned long long seen;      /* its value at expiry */
  unsigned long long waited_ns;
  unsigned int block, thread;   /* linear block and thread index of the waiter */
} shmemx_device_wait_record_t;

#endif
