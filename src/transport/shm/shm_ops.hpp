// The on-node route: a peer's heap is mapped in this process, so RMA is a copy into or out
// of it and ordering is a CPU fence. Everything here is inline, lock-free and syscall-free;
// the route is chosen once per PE at init and never through a virtual call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>

namespace symmem::shm {

inline void put(void* remote, const void* src, size_t n) { std::memcpy(remote, src, n); }
inline void get(void* dst, const void* remote, size_t n) { std::memcpy(dst, remote, n); }

// Orders this thread's earlier stores before its later ones, as seen by every other core:
// shmem_fence. On x86 ordinary stores are already ordered (TSO); what needs the SFENCE is
// the weakly ordered ones: the non-temporal stores memcpy uses for large copies (and the
// fast-string stores of rep movsb, which the manuals order less plainly). asm with a
// "memory" clobber so that the compiler does not move stores across it either.
inline void fence() {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("sfence" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Completes (makes globally visible) every earlier load and store of this thread before
// any later one: shmem_quiet. MFENCE, not the LOCK-prefixed instruction a C++ seq_cst
// fence compiles to: locked instructions are full barriers for ordinary write-back
// stores, but the vendors' manuals are not plain about non-temporal stores (Linux keeps
// mfence in mb() for that reason). See docs/memory-model.md.
inline void quiet() {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("mfence" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace symmem::shm
