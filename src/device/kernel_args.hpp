// What the library's own kernels (kernels.cu, loaded from the embedded fatbin by
// device_ops.cpp) take: one plain struct by value, the same layout for the host compiler
// that fills it and nvcc that reads it. Kernels are looked up by the names in kKernelNames.
#pragma once

#include <cstddef>
#include <cstdint>

namespace symmem::device {

// Every kernel the library launches. The reductions are one kernel per element type and
// operator (the algorithm, reduce-scatter or all-reduce, is KernelArgs::kind).
#define SYMMEM_DEVICE_KERNELS(X)                                                                      \
  X(signal) X(wait) X(amo) X(coll)                                                                   \
  X(reduce_f32_sum) X(reduce_f32_min) X(reduce_f32_max) X(reduce_f16_sum) X(reduce_f16_min)          \
  X(reduce_f16_max) X(reduce_bf16_sum) X(reduce_bf16_min) X(reduce_bf16_max) X(reduce_i32_sum)       \
  X(reduce_i32_min) X(reduce_i32_max) X(reduce_i32_prod) X(reduce_i64_sum) X(reduce_i64_min)         \
  X(reduce_i64_max) X(reduce_i64_prod)

enum class KernelId : int {
#define SYMMEM_KERNEL_ENUM(k) k,
  SYMMEM_DEVICE_KERNELS(SYMMEM_KERNEL_ENUM)
#undef SYMMEM_KERNEL_ENUM
  kCount
};

// KernelArgs::kind of the coll and reduce kernels.
enum class CollKind : int { kBarrier = 0, kBroadcast, kFcollect, kAlltoall, kReduceScatter, kAllreduce };
// KernelArgs::kind of the amo kernel (on 4- or 8-byte words: KernelArgs::n).
enum class AmoKind : int { kFetch = 0, kSet, kSwap, kCswap, kFetchAdd, kFetchAnd, kFetchOr, kFetchXor };

// How the collectives are launched: one block of kCollThreads per kCollBytesPerBlock of
// data, at most kCollMaxBlocks (each block syncs with the same block of every peer, so the
// blocks are the algorithms' channels); teams of at most kMaxCollPes (the sync area's size).
inline constexpr unsigned kCollThreads = 512;
inline constexpr size_t kCollBytesPerBlock = 256 << 10;
inline constexpr int kCollMaxBlocks = 32;
inline constexpr int kMaxCollPes = 256;

struct KernelArgs {
  char* base;            // the device heap: PE 0's slot (symmem::cuda::Heap)
  uint64_t heap_size;
  int me, npes;
  int t_start, t_stride, t_size, t_me;  // the team (symmem::algo::Team)
  int kind;              // SignalOp (signal), Cmp (wait), AmoKind, CollKind
  int pe;                // target PE (signal, amo); root's team index (broadcast)
  void* dest;
  const void* src;
  uint64_t n;            // bytes (coll, amo word size) or elements (reduce)
  uint64_t value, cond;  // signal / amo operands; the wait's comparison value
  uint64_t* result;      // amo: where the old value goes (device memory)
  uint64_t timeout_ns;   // waits
  void* wait_record;     // this PE's record of an expired wait (Heap::record; null: its slot's start)
};

}  // namespace symmem::device
