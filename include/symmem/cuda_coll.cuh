// symmem/cuda_coll.cuh — collectives on the device heap from CUDA kernels, block scope:
// barrier_block, sync_block, broadcast_block, fcollect_block, alltoall_block,
// reduce_scatter_block<T, op>, allreduce_block<T, op> (NVSHMEM's names, on a Team).
// Include it after (or instead of) symmem/cuda.cuh; header-only like it.
//
// The algorithms are symmem/coll_algos.hpp's (the same code the CI runs on the host heap);
// BlockExec is their executor on a GPU: the channel is the CUDA block, peers are reached
// through the mapped device heap, signals are system-scope atomics in the sync area at
// kDeviceSyncOffset of each PE's slot (inside the library's reserved part, zeroed when the
// heap is made).
//
// Who calls: every thread of the block, on every member of the team, with the same
// arguments; the grid's blocks split the data (block ch of nch takes slice ch of every
// buffer and synchronises only with block ch on the peers). ch and nch default to
// blockIdx.x and gridDim.x: launch the same grid on every PE. One collective at a time per
// block index on a PE (whatever the team), in the same order on every member. Buffers are
// symmetric device-heap addresses; src must be complete before the call (written by an
// earlier kernel, or by this block before the call). Each call returns in every thread of
// the block when this PE's result is in dest and no peer reads this PE's buffers any more.
// Overlap of src and dest: as in coll_algos.hpp (in place: broadcast, allreduce).
//
// Registers: the reductions take up to ~100 per thread (sm_90), so blocks of up to 512
// threads launch as they are; for 1024, give the kernel __launch_bounds__(1024).
//
// Waits have the deadline of signal_wait_until (kDefaultTimeoutNs): at expiry the PE's
// WaitRecord names the peer, the pad and the values, and the kernel traps.
//
// Example:
//   __global__ void k(symmem::cuda::Heap h, float* buf, float* out, size_t n) {
//     auto team = symmem::cuda::world_team(h);
//     symmem::cuda::allreduce_block<float, symmem::algo::RedOp::kSum>(h, team, out, buf, n);
//   }
#pragma once

#include "symmem/coll_algos.hpp"
#include "symmem/cuda.cuh"

namespace symmem::cuda {

using algo::RedOp;
using algo::Team;

// The executor of symmem::algo on one CUDA block (the channel).
class BlockExec {
 public:
  __device__ explicit BlockExec(const Heap& h, unsigned long long timeout_ns = kDefaultTimeoutNs)
      : h_(h), timeout_ns_(timeout_ns) {}

  __device__ unsigned tid() const { return detail::block_tid(); }
  __device__ unsigned nthreads() const { return detail::block_threads(); }
  __device__ void sync_threads() { __syncthreads(); }
  __device__ char* sync_base(int world_pe) {
    return h_.base + (unsigned long long)world_pe * h_.size + algo::kDeviceSyncOffset;
  }
  template <class T>
  __device__ T* peer(T* p, int world_pe) {
    return ptr(h_, p, world_pe);
  }
  __device__ void signal_set(uint64_t* remote, uint64_t v) {
    detail::sys_ref<unsigned long long>(*reinterpret_cast<unsigned long long*>(remote))
        .store(v, ::cuda::std::memory_order_release);
  }
  __device__ void wait_ge(uint64_t* local, uint64_t v, int peer_world_pe) {
    detail::sys_ref<unsigned long long> s(*reinterpret_cast<unsigned long long*>(local));
    unsigned long long seen = s.load(::cuda::std::memory_order_acquire);
    if (seen >= v) return;
    const unsigned long long t0 = detail::globaltimer();
    for (unsigned spins = 0;; ++spins) {
      seen = s.load(::cuda::std::memory_order_acquire);
      if (seen >= v) return;
      if ((spins & 63u) == 63u) {
        const unsigned long long waited = detail::globaltimer() - t0;
        if (waited > timeout_ns_) detail::expire(h_, local, peer_world_pe, Cmp::kGe, v, seen, waited);
        __nanosleep(64);
      }
    }
  }
  __device__ void fence() { __threadfence_system(); }

 private:
  Heap h_;
  unsigned long long timeout_ns_;
};

// Every PE of the heap (the node's PEs), this one at index h.me.
__host__ __device__ inline Team world_team(const Heap& h) { return Team{0, 1, h.npes, h.me}; }

// ---- block scope: every thread of the block calls; see the top of this file ----

// Earlier stores of the block are visible to the team's members (system-scope fence), and
// every member's block ch has arrived.
__device__ inline void barrier_block(const Heap& h, const Team& team, int ch = int(blockIdx.x)) {
  BlockExec x(h);
  algo::barrier(x, team, ch);
}
// The barrier without the leading fence (the signals are release stores, so the block's
// earlier stores are ordered anyway; see algo::sync).
__device__ inline void sync_block(const Heap& h, const Team& team, int ch = int(blockIdx.x)) {
  BlockExec x(h);
  algo::sync(x, team, ch);
}

// dest = root's src on every member (root: a team index).
__device__ inline void broadcast_block(const Heap& h, const Team& team, void* dest, const void* src, size_t nbytes,
                                       int root, int ch = int(blockIdx.x), int nch = int(gridDim.x)) {
  BlockExec x(h);
  algo::broadcast(x, team, ch, nch, dest, src, nbytes, root);
}
// dest[i * nbytes ..] = member i's src.
__device__ inline void fcollect_block(const Heap& h, const Team& team, void* dest, const void* src, size_t nbytes,
                                      int ch = int(blockIdx.x), int nch = int(gridDim.x)) {
  BlockExec x(h);
  algo::fcollect(x, team, ch, nch, dest, src, nbytes);
}
// Block j of dest on member i = block i of member j's src (nbytes per block).
__device__ inline void alltoall_block(const Heap& h, const Team& team, void* dest, const void* src, size_t nbytes,
                                      int ch = int(blockIdx.x), int nch = int(gridDim.x)) {
  BlockExec x(h);
  algo::alltoall(x, team, ch, nch, dest, src, nbytes);
}
// Member i's dest[0, n) = op over members of src[i * n, i * n + n).
template <class T, RedOp op>
__device__ inline void reduce_scatter_block(const Heap& h, const Team& team, T* dest, const T* src, size_t n,
                                            int ch = int(blockIdx.x), int nch = int(gridDim.x)) {
  BlockExec x(h);
  algo::reduce_scatter<T, op>(x, team, ch, nch, dest, src, n);
}
// dest[0, n) = op over members of src[0, n); one-shot or two-shot by size (algo::allreduce).
template <class T, RedOp op>
__device__ inline void allreduce_block(const Heap& h, const Team& team, T* dest, const T* src, size_t n,
                                       int ch = int(blockIdx.x), int nch = int(gridDim.x)) {
  BlockExec x(h);
  algo::allreduce<T, op>(x, team, ch, nch, dest, src, n);
}

}  // namespace symmem::cuda
