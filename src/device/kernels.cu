// The kernels the library itself launches: host calls on device memory (signal updates,
// atomics), the stream-ordered forms (shmemx_*_on_stream) and the collectives on device
// memory. Compiled by nvcc into a fatbin (sm_90 code + compute_90 PTX) that is embedded in
// the library and loaded through the driver at the first use (device_ops.cpp): the library
// links no CUDA runtime. Each kernel takes one KernelArgs by value (kernel_args.hpp).
#include <symmem/cuda.cuh>
#include <symmem/cuda_coll.cuh>

#include "device/kernel_args.hpp"

namespace sc = symmem::cuda;
using symmem::device::AmoKind;
using symmem::device::KernelArgs;

namespace {

__device__ sc::Heap heap_of(const KernelArgs& a) {
  sc::Heap h;
  h.base = a.base;
  h.size = a.heap_size;
  h.me = a.me;
  h.npes = a.npes;
  h.record = a.wait_record ? static_cast<sc::WaitRecord*>(a.wait_record)
                           : reinterpret_cast<sc::WaitRecord*>(a.base + (unsigned long long)a.me * a.heap_size);
  return h;
}

template <class T>
__device__ T amo(const sc::Heap& h, const KernelArgs& a) {
  T* d = static_cast<T*>(a.dest);
  const T v = T(a.value), c = T(a.cond);
  switch (AmoKind(a.kind)) {
    case AmoKind::kFetch: return sc::atomic_fetch(h, d, a.pe);
    case AmoKind::kSet: sc::atomic_set(h, d, v, a.pe); return T(0);
    case AmoKind::kSwap: return sc::atomic_swap(h, d, v, a.pe);
    case AmoKind::kCswap: return sc::atomic_compare_swap(h, d, c, v, a.pe);
    case AmoKind::kFetchAdd: return sc::atomic_fetch_add(h, d, v, a.pe);
    case AmoKind::kFetchAnd: return sc::detail::sys_ref<T>(*sc::ptr(h, d, a.pe)).fetch_and(v);
    case AmoKind::kFetchOr: return sc::detail::sys_ref<T>(*sc::ptr(h, d, a.pe)).fetch_or(v);
    case AmoKind::kFetchXor: return sc::detail::sys_ref<T>(*sc::ptr(h, d, a.pe)).fetch_xor(v);
  }
  return T(0);
}

}  // namespace

// A signal update of PE a.pe's word a.dest, ordered after everything before it on the stream
// (a system-scope fence first).
extern "C" __global__ void symmem_k_signal(KernelArgs a) {
  const sc::Heap h = heap_of(a);
  __threadfence_system();
  sc::signal_op(h, static_cast<uint64_t*>(a.dest), a.value, sc::SignalOp(a.kind), a.pe);
}

// Holds the stream until this PE's signal word a.dest compares as asked (deadline: records
// and traps, symmem/cuda.cuh).
extern "C" __global__ void symmem_k_wait(KernelArgs a) {
  const sc::Heap h = heap_of(a);
  (void)sc::signal_wait_until(h, static_cast<uint64_t*>(a.dest), sc::Cmp(a.kind), a.value, a.timeout_ns);
}

// One atomic on PE a.pe's word (4 or 8 bytes); the old value to *a.result.
extern "C" __global__ void symmem_k_amo(KernelArgs a) {
  const sc::Heap h = heap_of(a);
  if (a.n == 4) *a.result = (unsigned int)amo<unsigned int>(h, a);
  else *a.result = amo<unsigned long long>(h, a);
}

// ---- collectives: the shared algorithms (symmem/coll_algos.hpp) with BlockExec; each
// block is a channel and syncs with the same block of every member.

namespace {

using symmem::algo::DType;
using symmem::algo::RedOp;
using symmem::device::CollKind;

__device__ symmem::algo::Team team_of(const KernelArgs& a) {
  return symmem::algo::Team{a.t_start, a.t_stride, a.t_size, a.t_me};
}

template <DType D, RedOp op>
__device__ void reduce(const KernelArgs& a) {
  using T = symmem::algo::elem_t<D>;
  const sc::Heap h = heap_of(a);
  sc::BlockExec x(h, a.timeout_ns);
  const symmem::algo::Team t = team_of(a);
  T* dest = static_cast<T*>(a.dest);
  const T* src = static_cast<const T*>(a.src);
  if (CollKind(a.kind) == CollKind::kReduceScatter)
    symmem::algo::reduce_scatter<T, op>(x, t, int(blockIdx.x), int(gridDim.x), dest, src, a.n);
  else
    symmem::algo::allreduce<T, op>(x, t, int(blockIdx.x), int(gridDim.x), dest, src, a.n);
}

}  // namespace

extern "C" __global__ void symmem_k_coll(KernelArgs a) {
  const sc::Heap h = heap_of(a);
  sc::BlockExec x(h, a.timeout_ns);
  const symmem::algo::Team t = team_of(a);
  const int ch = int(blockIdx.x), nch = int(gridDim.x);
  switch (CollKind(a.kind)) {
    case CollKind::kBarrier: symmem::algo::barrier(x, t, ch); break;
    case CollKind::kBroadcast: symmem::algo::broadcast(x, t, ch, nch, a.dest, a.src, a.n, a.pe); break;
    case CollKind::kFcollect: symmem::algo::fcollect(x, t, ch, nch, a.dest, a.src, a.n); break;
    case CollKind::kAlltoall: symmem::algo::alltoall(x, t, ch, nch, a.dest, a.src, a.n); break;
    default: break;  // the reductions have their own kernels
  }
}

#define SYMMEM_REDUCE_KERNEL(NAME, D, OP) \
  extern "C" __global__ void symmem_k_reduce_##NAME(KernelArgs a) { reduce<DType::D, RedOp::OP>(a); }
SYMMEM_REDUCE_KERNEL(f32_sum, kF32, kSum)
SYMMEM_REDUCE_KERNEL(f32_min, kF32, kMin)
SYMMEM_REDUCE_KERNEL(f32_max, kF32, kMax)
SYMMEM_REDUCE_KERNEL(f16_sum, kF16, kSum)
SYMMEM_REDUCE_KERNEL(f16_min, kF16, kMin)
SYMMEM_REDUCE_KERNEL(f16_max, kF16, kMax)
SYMMEM_REDUCE_KERNEL(bf16_sum, kBF16, kSum)
SYMMEM_REDUCE_KERNEL(bf16_min, kBF16, kMin)
SYMMEM_REDUCE_KERNEL(bf16_max, kBF16, kMax)
SYMMEM_REDUCE_KERNEL(i32_sum, kI32, kSum)
SYMMEM_REDUCE_KERNEL(i32_min, kI32, kMin)
SYMMEM_REDUCE_KERNEL(i32_max, kI32, kMax)
SYMMEM_REDUCE_KERNEL(i32_prod, kI32, kProd)
SYMMEM_REDUCE_KERNEL(i64_sum, kI64, kSum)
SYMMEM_REDUCE_KERNEL(i64_min, kI64, kMin)
SYMMEM_REDUCE_KERNEL(i64_max, kI64, kMax)
SYMMEM_REDUCE_KERNEL(i64_prod, kI64, kProd)
