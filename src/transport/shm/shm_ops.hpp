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

// Orders this thread's earlier stores (including the non-temporal stores memcpy uses for
// large copies) before its later ones, as seen by every other core.
inline void fence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Completes (makes globally visible) every earlier load and store of this thread.
inline void quiet() { std::atomic_thread_fence(std::memory_order_seq_cst); }

}  // namespace symmem::shm
