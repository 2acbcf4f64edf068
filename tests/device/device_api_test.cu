// The device API (symmem/cuda.cuh) on a GPU, run under symmem-run -n N (N >= 2) with every
// PE on the node. Without a GPU it exits 77 (skipped) before shmem_init, saying why.
// Cases (argv[1]):
//   api (default): ring put with signal (block scope) of 1 MiB, p/g, warp get, every atomic
//                  on PE 0's counters, each checked against the expected values.
//   deadline:      the last PE waits 50 ms on a signal nobody sets: its kernel traps; that
//                  PE's host then reads its WaitRecord from host memory (its status page,
//                  shmemx_device_wait_record(); its CUDA context is dead) and checks it.
//   deadline-call: as deadline, then the trapped PE makes a host call on device memory: the
//                  driver fails it, and the job ends with an error that names the wait.
// The kernel at the end instantiates every template for every type and scope: nvcc checks
// them all here, in every build with SYMMEM_CUDA on, GPU or not.
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

#include <symmem/cuda.cuh>

namespace sc = symmem::cuda;

#define CHECK_CUDA(x)                                                                    \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "PE %d: %s: %s\n", shmem_my_pe(), #x, cudaGetErrorString(e_));     \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

struct Buffers {
  unsigned char* data;          // 1 MiB, written by the left neighbour
  uint64_t* sig;                // signal word
  unsigned long long* counter;  // PE 0's: atomics from every PE
  int* scalar;                  // p/g target
};

constexpr size_t kBytes = 1 << 20;

__global__ void ring_put(sc::Heap h, Buffers b, unsigned char* src, int* errors) {
  const int right = (h.me + 1) % h.npes, left = (h.me + h.npes - 1) % h.npes;
  sc::putmem_signal_block(h, b.data, src, kBytes, b.sig, 1, sc::SignalOp::kAdd, right);
  if (threadIdx.x == 0) sc::signal_wait_until(h, b.sig, sc::Cmp::kGe, 1, sc::kDefaultTimeoutNs, left);
  __syncthreads();
  for (size_t i = threadIdx.x; i < kBytes; i += blockDim.x)
    if (b.data[i] != (unsigned char)(left * 31 + i)) atomicAdd(errors, 1);
}

__global__ void amo_and_pg(sc::Heap h, Buffers b, int* errors) {
  if (threadIdx.x != 0) return;
  sc::atomic_add(h, b.counter, 1ull, 0);
  (void)sc::atomic_fetch_add(h, b.counter + 1, 2ull, 0);
  sc::p(h, b.scalar, 1000 + h.me, (h.me + 1) % h.npes);
  sc::quiet();
}

__global__ void amo_check(sc::Heap h, Buffers b, int* errors) {
  if (threadIdx.x != 0) return;
  const int left = (h.me + h.npes - 1) % h.npes;
  if (sc::atomic_fetch(h, b.counter, 0) != (unsigned long long)h.npes) atomicAdd(errors, 1);
  if (sc::atomic_fetch(h, b.counter + 1, 0) != 2ull * h.npes) atomicAdd(errors, 1);
  if (*b.scalar != 1000 + left) atomicAdd(errors, 1);
  if (sc::g(h, b.scalar, left) != 1000 + (left + h.npes - 1) % h.npes) atomicAdd(errors, 1);
}

__global__ void amo_pe0(sc::Heap h, Buffers b, int* errors) {  // PE 0 alone, on its own counters
  if (threadIdx.x != 0) return;
  unsigned long long* c = b.counter + 2;
  sc::atomic_set(h, c, 5ull, 0);
  if (sc::atomic_swap(h, c, 7ull, 0) != 5ull) atomicAdd(errors, 1);
  if (sc::atomic_compare_swap(h, c, 7ull, 9ull, 0) != 7ull) atomicAdd(errors, 1);
  if (sc::atomic_compare_swap(h, c, 7ull, 11ull, 0) != 9ull) atomicAdd(errors, 1);
  if (sc::atomic_fetch(h, c, 0) != 9ull) atomicAdd(errors, 1);
}

__global__ void warp_get(sc::Heap h, Buffers b, unsigned char* out, int* errors) {
  const int right = (h.me + 1) % h.npes;
  sc::getmem_warp(h, out, b.data, 4096, right);  // right's data came from me
  for (int i = threadIdx.x; i < 4096; i += 32)
    if (out[i] != (unsigned char)(h.me * 31 + i)) atomicAdd(errors, 1);
}

__global__ void wait_forever(sc::Heap h, Buffers b) {
  sc::signal_wait_until(h, b.sig, sc::Cmp::kEq, 12345, 50ull * 1000 * 1000, 0);
}

// ---- compile coverage: every template, every type, every scope ----
template <class T>
__device__ void instantiate(sc::Heap h, T* d, const T* s, uint64_t* sig) {
  sc::put(h, d, s, 4, 1);
  sc::get(h, d, s, 4, 1);
  sc::p(h, d, T(1), 1);
  (void)sc::g(h, s, 1);
  (void)sc::ptr(h, d, 1);
  (void)sc::ptr(h, s, 1);
}
template <class T>
__device__ void instantiate_amo(sc::Heap h, T* d) {
  (void)sc::atomic_fetch_add(h, d, T(1), 1);
  sc::atomic_add(h, d, T(1), 1);
  (void)sc::atomic_compare_swap(h, d, T(1), T(2), 1);
  (void)sc::atomic_swap(h, d, T(3), 1);
  (void)sc::atomic_fetch(h, static_cast<const T*>(d), 1);
  sc::atomic_set(h, d, T(4), 1);
}
__global__ void compile_all(sc::Heap h, void* d, const void* s, uint64_t* sig) {
  instantiate(h, (char*)d, (const char*)s, sig);
  instantiate(h, (short*)d, (const short*)s, sig);
  instantiate(h, (int*)d, (const int*)s, sig);
  instantiate(h, (long long*)d, (const long long*)s, sig);
  instantiate(h, (float*)d, (const float*)s, sig);
  instantiate(h, (double*)d, (const double*)s, sig);
  instantiate_amo(h, (int*)d);
  instantiate_amo(h, (unsigned int*)d);
  instantiate_amo(h, (long long*)d);
  instantiate_amo(h, (unsigned long long*)d);
  sc::putmem(h, d, s, 8, 1);
  sc::getmem(h, d, s, 8, 1);
  sc::putmem_warp(h, d, s, 8, 1);
  sc::getmem_warp(h, d, s, 8, 1);
  sc::putmem_block(h, d, s, 8, 1);
  sc::getmem_block(h, d, s, 8, 1);
  sc::putmem_signal(h, d, s, 8, sig, 1, sc::SignalOp::kSet, 1);
  sc::putmem_signal_warp(h, d, s, 8, sig, 1, sc::SignalOp::kAdd, 1);
  sc::putmem_signal_block(h, d, s, 8, sig, 1, sc::SignalOp::kAdd, 1);
  sc::signal_op(h, sig, 1, sc::SignalOp::kSet, 1);
  (void)sc::signal_fetch(sig);
  (void)sc::signal_wait_until(h, sig, sc::Cmp::kNe, 0);
  sc::fence();
  sc::quiet();
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "api";
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("device_api_test: skipped: no GPU here (cudaGetDeviceCount: %s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (n < 2) {
    if (me == 0) printf("device_api_test: skipped: needs 2 PEs or more\n");
    shmem_finalize();
    return 77;
  }
  Buffers b;
  b.data = (unsigned char*)shmem_malloc_with_hints(kBytes, SHMEMX_MALLOC_DEVICE);
  b.sig = (uint64_t*)shmem_malloc_with_hints(64, SHMEMX_MALLOC_DEVICE);
  b.counter = (unsigned long long*)shmem_malloc_with_hints(64, SHMEMX_MALLOC_DEVICE);
  b.scalar = (int*)shmem_malloc_with_hints(64, SHMEMX_MALLOC_DEVICE);
  if (!b.data || !b.sig || !b.counter || !b.scalar) {
    fprintf(stderr, "PE %d: device allocation returned NULL on a GPU machine (see the warning above)\n", me);
    return 1;
  }
  shmemx_device_heap_t q;
  if (shmemx_device_heap_query(&q) != 0) {
    fprintf(stderr, "PE %d: shmemx_device_heap_query failed after a device allocation\n", me);
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(q.device));
  sc::Heap h(q);
  // Host-side check of the layout: PE p's copy is p * size away, and shmem_ptr agrees.
  if ((char*)shmem_ptr(b.data, (me + 1) % n) != (char*)b.data + ((long long)((me + 1) % n) - me) * (long long)q.heap_size) {
    fprintf(stderr, "PE %d: shmem_ptr of a device address disagrees with ptr + (pe - me) * size\n", me);
    return 1;
  }
  CHECK_CUDA(cudaMemset(b.sig, 0, 64));
  CHECK_CUDA(cudaMemset(b.counter, 0, 64));
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();
  int* errors;
  unsigned char *src, *out;
  CHECK_CUDA(cudaMalloc(&errors, sizeof(int)));
  CHECK_CUDA(cudaMemset(errors, 0, sizeof(int)));
  CHECK_CUDA(cudaMalloc(&src, kBytes));
  CHECK_CUDA(cudaMalloc(&out, 4096));
  unsigned char* host = (unsigned char*)malloc(kBytes);
  for (size_t i = 0; i < kBytes; ++i) host[i] = (unsigned char)(me * 31 + i);
  CHECK_CUDA(cudaMemcpy(src, host, kBytes, cudaMemcpyHostToDevice));

  if (strcmp(mode, "deadline") == 0 || strcmp(mode, "deadline-call") == 0) {
    int bad = 0;
    if (me == n - 1) {
      if (!q.wait_record) {
        fprintf(stderr, "PE %d: the device heap has no wait record in host memory (see the warning above)\n", me);
        bad++;
      }
      wait_forever<<<1, 1>>>(h, b);
      e = cudaDeviceSynchronize();
      if (e == cudaSuccess) {
        fprintf(stderr, "PE %d: the expired wait did not trap\n", me);
        bad++;
      }
      // Host memory: readable with the context gone, as the hang report reads it.
      const shmemx_device_wait_record_t* r = shmemx_device_wait_record();
      if (!r || r->state != 1 || r->pe != me || r->peer != 0 || r->cmp != SHMEM_CMP_EQ || r->expected != 12345 ||
          r->seen != 0 || r->waited_ns < 50ull * 1000 * 1000 || r->addr != (unsigned long long)b.sig) {
        if (r)
          fprintf(stderr, "PE %d: its wait record: state %u pe %d peer %d cmp %d expected %llu seen %llu waited %llu\n",
                  me, r->state, r->pe, r->peer, r->cmp, r->expected, r->seen, r->waited_ns);
        bad++;
      } else {
        printf("device_api_test deadline: PE %d's expired wait was recorded in host memory (%llu ns) and trapped\n",
               me, r->waited_ns);
      }
      fflush(stdout);
      // A host call on device memory now fails in the driver; the error names the wait.
      if (!bad && strcmp(mode, "deadline-call") == 0) shmem_uint64_atomic_set(b.sig, 1, 0);
    }
    shmem_barrier_all();  // host barrier: the trapped PE's context is gone, its host memory is not
    shmem_finalize();
    return bad ? 1 : 0;
  }

  ring_put<<<1, 256>>>(h, b, src, errors);
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();
  amo_and_pg<<<1, 32>>>(h, b, errors);
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();
  amo_check<<<1, 32>>>(h, b, errors);
  warp_get<<<1, 32>>>(h, b, out, errors);
  if (me == 0) amo_pe0<<<1, 32>>>(h, b, errors);
  CHECK_CUDA(cudaDeviceSynchronize());
  int nerr = 0;
  CHECK_CUDA(cudaMemcpy(&nerr, errors, sizeof nerr, cudaMemcpyDeviceToHost));
  if (nerr) fprintf(stderr, "PE %d: %d device-side check(s) failed\n", me, nerr);
  shmem_barrier_all();
  if (me == 0 && nerr == 0) printf("device_api_test: put/signal/wait, p/g, warp get and atomics on %d PEs: ok\n", n);
  shmem_free(b.scalar);
  shmem_free(b.counter);
  shmem_free(b.sig);
  shmem_free(b.data);
  shmem_finalize();
  return nerr ? 1 : 0;
}
