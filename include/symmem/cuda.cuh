// symmem/cuda.cuh — symmem's device API: one-sided operations from CUDA kernels on the
// device heap (shmem_malloc_with_hints(size, SHMEMX_MALLOC_DEVICE); docs/device.md).
//
// Header-only: no device library, no -rdc. A kernel gets a symmem::cuda::Heap by value
// (made on the host from shmemx_device_heap_query) and calls the functions below, whose
// names follow NVSHMEM's (putmem, putmem_signal, signal_wait_until, atomic_fetch_add, ...).
//
// Addressing: PE p's copy of a symmetric device address `ptr` is ptr + (p - me) * size
// (every PE of the node is mapped in one range, PE p at slot p). Only PEs of this node are
// reachable; ptr() is the peer pointer, usable with any load or store.
//
// Scopes: the plain functions are for one thread; _warp and _block variants must be called
// by every thread of the warp / block with the same arguments and share the copy; they
// return in every thread once the whole copy is done (block: after a __syncthreads).
//
// Completion and ordering (memory scope: system, since peers are other processes):
//  - putmem/getmem/p/g are plain stores and loads: a put is complete (visible to the target
//    after the target's acquire) once fence() or quiet() has run after it; a get's data is
//    in dest when it returns.
//  - fence() orders this thread's earlier puts before its later ones to each PE; quiet()
//    completes them all. Both are __threadfence_system() here, as stores are issued inline.
//  - putmem_signal: the data, then a release fence, then the signal update (set or add),
//    so a PE that sees the signal with signal_wait_until (acquire) sees the data.
//  - atomics are system-scope read-modify-writes, relaxed (no ordering of other accesses).
//
// Deadlines: every wait has one (default kDefaultTimeoutNs; 0 waits forever is not offered).
// On expiry the waiter records who waited for what in the PE's WaitRecord (host memory on
// the PE's status page, mapped for the GPU: Heap::record) and executes __trap(): the hang
// report, symmem-run and the PE's next failing library call name the wait; a hang becomes a
// named failure, never silent.
//
// Several PEs on one GPU: waits across processes progress only when the GPU runs both
// kernels (MPS), or, without it, at context switches (slow; a wait may reach its deadline).
#pragma once

#include <cuda/atomic>
#include <stdint.h>

#include "symmem/shmemx_device.h"

namespace symmem::cuda {

// Where an expired wait writes what it waited for (symmem/device_wait.h): `state` is 0
// until a wait expires; the first expiring thread of the PE sets it to 1 and fills the rest.
using WaitRecord = shmemx_device_wait_record_t;

enum class Cmp : int { kEq = 0, kNe, kGt, kGe, kLt, kLe };  // as SHMEM_CMP_EQ..LE
enum class SignalOp : int { kSet = 0, kAdd };               // as SHMEM_SIGNAL_SET / _ADD

inline constexpr unsigned long long kDefaultTimeoutNs = 10ull * 1000 * 1000 * 1000;  // 10 s

// The device heap as a kernel sees it: pass by value.
struct Heap {
  char* base = nullptr;            // PE 0's slot
  unsigned long long size = 0;     // per PE
  int me = 0, npes = 1;
  // This PE's record: h.wait_record (host memory the hang report reads), or, where that is
  // NULL, the start of this PE's slot (only a peer's or this PE's cudaMemcpy reads it there).
  WaitRecord* record = nullptr;

  Heap() = default;
  __host__ __device__ explicit Heap(const shmemx_device_heap_t& h)
      : base(static_cast<char*>(h.base)), size(h.heap_size), me(h.my_pe), npes(h.n_pes),
        record(h.wait_record ? h.wait_record
                             : reinterpret_cast<WaitRecord*>(static_cast<char*>(h.base) +
                                                             (unsigned long long)h.my_pe * h.heap_size)) {}
};

// ---- addressing ----
template <class T>
__device__ __forceinline__ T* ptr(const Heap& h, T* p, int pe) {
  return reinterpret_cast<T*>(reinterpret_cast<char*>(p) + (long long)(pe - h.me) * (long long)h.size);
}
template <class T>
__device__ __forceinline__ const T* ptr(const Heap& h, const T* p, int pe) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + (long long)(pe - h.me) * (long long)h.size);
}

namespace detail {

// Copies n bytes with threads [tid, tid+stride, ...]: 16-byte words where both ends are
// 16-aligned, bytes otherwise.
__device__ __forceinline__ void copy(char* d, const char* s, size_t n, unsigned tid, unsigned stride) {
  if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    const size_t words = n / 16;
    auto* dv = reinterpret_cast<uint4*>(d);
    auto* sv = reinterpret_cast<const uint4*>(s);
    for (size_t i = tid; i < words; i += stride) dv[i] = sv[i];
    for (size_t i = words * 16 + tid; i < n; i += stride) d[i] = s[i];
  } else {
    for (size_t i = tid; i < n; i += stride) d[i] = s[i];
  }
}

__device__ __forceinline__ unsigned lane() { return threadIdx.x & 31u; }
__device__ __forceinline__ unsigned block_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <class T>
__device__ __forceinline__ bool compare(T v, Cmp c, T want) {
  switch (c) {
    case Cmp::kEq: return v == want;
    case Cmp::kNe: return v != want;
    case Cmp::kGt: return v > want;
    case Cmp::kGe: return v >= want;
    case Cmp::kLt: return v < want;
    case Cmp::kLe: return v <= want;
  }
  return false;
}

template <class T>
using sys_ref = ::cuda::atomic_ref<T, ::cuda::thread_scope_system>;

[[noreturn]] __device__ inline void expire(const Heap& h, const void* addr, int peer, Cmp c, unsigned long long want,
                                           unsigned long long seen, unsigned long long waited) {
  WaitRecord* r = h.record;
  if (r != nullptr && atomicCAS(&r->state, 0u, 2u) == 0u) {  // 2: being written
    r->pe = h.me;
    r->peer = peer;
    r->cmp = int(c);
    r->addr = reinterpret_cast<unsigned long long>(addr);
    r->expected = want;
    r->seen = seen;
    r->waited_ns = waited;
    r->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    r->thread = block_tid();
    __threadfence_system();
    sys_ref<unsigned int>(r->state).store(1u, ::cuda::std::memory_order_release);
  }
  printf("symmem: PE %d block %u thread %u: wait on %p (cmp %d, value %llu, written by PE %d) expired after %llu ns, "
         "last seen %llu\n", h.me, blockIdx.x, block_tid(), addr, int(c), want, peer, waited, seen);
  __trap();
  __builtin_unreachable();
}

}  // namespace detail

// ---- put / get: thread, warp, block ----
__device__ __forceinline__ void putmem(const Heap& h, void* dest, const void* src, size_t n, int pe) {
  detail::copy(static_cast<char*>(ptr(h, dest, pe)), static_cast<const char*>(src), n, 0, 1);
}
__device__ __forceinline__ void getmem(const Heap& h, void* dest, const void* src, size_t n, int pe) {
  detail::copy(static_cast<char*>(dest), static_cast<const char*>(ptr(h, src, pe)), n, 0, 1);
}
__device__ __forceinline__ void putmem_warp(const Heap& h, void* dest, const void* src, size_t n, int pe) {
  detail::copy(static_cast<char*>(ptr(h, dest, pe)), static_cast<const char*>(src), n, detail::lane(), 32);
  __syncwarp();
}
__device__ __forceinline__ void getmem_warp(const Heap& h, void* dest, const void* src, size_t n, int pe) {
  detail::copy(static_cast<char*>(dest), static_cast<const char*>(ptr(h, src, pe)), n, detail::lane(), 32);
  __syncwarp();
}
__device__ __forceinline__ void putmem_block(const Heap& h, void* dest, const void* src, size_t n, int pe) {
  detail::copy(static_cast<char*>(ptr(h, dest, pe)), static_cast<const char*>(src), n, detail::block_tid(),
               detail::block_threads());
  __syncthreads();
}
__device__ __forceinline__ void getmem_block(const Heap& h, void* dest, const void* src, size_t n, int pe) {
  detail::copy(static_cast<char*>(dest), static_cast<const char*>(ptr(h, src, pe)), n, detail::block_tid(),
               detail::block_threads());
  __syncthreads();
}
// Typed forms: nelems elements of T.
template <class T>
__device__ __forceinline__ void put(const Heap& h, T* dest, const T* src, size_t nelems, int pe) {
  putmem(h, dest, src, nelems * sizeof(T), pe);
}
template <class T>
__device__ __forceinline__ void get(const Heap& h, T* dest, const T* src, size_t nelems, int pe) {
  getmem(h, dest, src, nelems * sizeof(T), pe);
}
// One element.
template <class T>
__device__ __forceinline__ void p(const Heap& h, T* dest, T value, int pe) {
  *ptr(h, dest, pe) = value;
}
template <class T>
__device__ __forceinline__ T g(const Heap& h, const T* src, int pe) {
  return *ptr(h, src, pe);
}

// ---- ordering ----
__device__ __forceinline__ void fence() { __threadfence_system(); }
__device__ __forceinline__ void quiet() { __threadfence_system(); }

// ---- signals (uint64 words in the device heap) ----
__device__ __forceinline__ void signal_op(const Heap& h, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  detail::sys_ref<unsigned long long> s(*reinterpret_cast<unsigned long long*>(ptr(h, sig, pe)));
  if (op == SignalOp::kSet) s.store(value, ::cuda::std::memory_order_release);
  else s.fetch_add(value, ::cuda::std::memory_order_release);
}
__device__ __forceinline__ uint64_t signal_fetch(const uint64_t* sig) {
  return detail::sys_ref<unsigned long long>(*const_cast<unsigned long long*>(
                                                 reinterpret_cast<const unsigned long long*>(sig)))
      .load(::cuda::std::memory_order_acquire);
}
__device__ __forceinline__ void putmem_signal(const Heap& h, void* dest, const void* src, size_t n, uint64_t* sig,
                                              uint64_t value, SignalOp op, int pe) {
  putmem(h, dest, src, n, pe);
  __threadfence_system();
  signal_op(h, sig, value, op, pe);
}
__device__ __forceinline__ void putmem_signal_warp(const Heap& h, void* dest, const void* src, size_t n,
                                                   uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  putmem_warp(h, dest, src, n, pe);
  if (detail::lane() == 0) {
    __threadfence_system();
    signal_op(h, sig, value, op, pe);
  }
  __syncwarp();
}
__device__ __forceinline__ void putmem_signal_block(const Heap& h, void* dest, const void* src, size_t n,
                                                    uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  putmem_block(h, dest, src, n, pe);  // ends with __syncthreads: every thread's part is written
  if (detail::block_tid() == 0) {
    __threadfence_system();
    signal_op(h, sig, value, op, pe);
  }
  __syncthreads();
}

// Waits until `*sig cmp value` holds for this PE's signal word (acquire), and returns the
// word's value. `peer`: the PE expected to write it, for the record (-1: unknown). At the
// deadline: records and traps (see the top of this file).
__device__ inline uint64_t signal_wait_until(const Heap& h, uint64_t* sig, Cmp c, uint64_t value,
                                             unsigned long long timeout_ns = kDefaultTimeoutNs, int peer = -1) {
  detail::sys_ref<unsigned long long> s(*reinterpret_cast<unsigned long long*>(sig));
  unsigned long long v = s.load(::cuda::std::memory_order_acquire);
  if (detail::compare<unsigned long long>(v, c, value)) return v;
  const unsigned long long t0 = detail::globaltimer();
  for (unsigned spins = 0;; ++spins) {
    v = s.load(::cuda::std::memory_order_acquire);
    if (detail::compare<unsigned long long>(v, c, value)) return v;
    if ((spins & 63u) == 63u) {
      const unsigned long long waited = detail::globaltimer() - t0;
      if (waited > timeout_ns) detail::expire(h, sig, peer, c, value, v, waited);
      __nanosleep(128);
    }
  }
}

// ---- atomics on PE pe's copy (int, unsigned, long long, unsigned long long; system scope) ----
template <class T>
__device__ __forceinline__ T atomic_fetch_add(const Heap& h, T* dest, T value, int pe) {
  return detail::sys_ref<T>(*ptr(h, dest, pe)).fetch_add(value, ::cuda::std::memory_order_relaxed);
}
template <class T>
__device__ __forceinline__ void atomic_add(const Heap& h, T* dest, T value, int pe) {
  (void)atomic_fetch_add(h, dest, value, pe);
}
template <class T>
__device__ __forceinline__ T atomic_compare_swap(const Heap& h, T* dest, T cond, T value, int pe) {
  detail::sys_ref<T>(*ptr(h, dest, pe)).compare_exchange_strong(cond, value, ::cuda::std::memory_order_relaxed);
  return cond;  // the value before: equal to the old cond when the swap happened
}
template <class T>
__device__ __forceinline__ T atomic_swap(const Heap& h, T* dest, T value, int pe) {
  return detail::sys_ref<T>(*ptr(h, dest, pe)).exchange(value, ::cuda::std::memory_order_relaxed);
}
template <class T>
__device__ __forceinline__ T atomic_fetch(const Heap& h, const T* src, int pe) {
  return detail::sys_ref<T>(*const_cast<T*>(ptr(h, src, pe))).load(::cuda::std::memory_order_relaxed);
}
template <class T>
__device__ __forceinline__ void atomic_set(const Heap& h, T* dest, T value, int pe) {
  detail::sys_ref<T>(*ptr(h, dest, pe)).store(value, ::cuda::std::memory_order_relaxed);
}

}  // namespace symmem::cuda
