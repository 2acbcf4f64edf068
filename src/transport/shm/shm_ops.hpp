// The on-node route: a peer's heap is mapped in this process, so RMA is a copy into or out
// of it and ordering is a CPU fence. Everything here is inline, lock-free and syscall-free;
// the route is chosen once per PE at init and never through a virtual call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace symmem::shm {

// Copies of at least this many bytes bypass the caches (non-temporal stores); set once at
// init (runtime: SYMMEM_STREAM_COPY, by default half the last-level cache). A copy whose
// source and destination do not both fit in that cache gains nothing from writing through
// it: each destination line would be read first (read-for-ownership) only to be evicted
// again, so streaming moves two bytes of memory traffic per byte instead of three. Smaller
// copies stay ordinary: their destination is likely read soon, from the cache.
inline size_t stream_copy_min = SIZE_MAX;

// Non-temporal stores of n bytes from src to dst (any alignment, any length), without the
// closing fence: for callers that stream many pieces and order them once (fence() below).
inline void stream_stores(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;  // align the stores
  if (head > n) head = n;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

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

// The non-temporal copy, ordered like ordinary stores before every later store of this
// thread (a flag published after a get, the signal of a put-with-signal): callers need not
// know which kind of copy ran.
inline void stream_copy(void* dst, const void* src, size_t n) {
  stream_stores(dst, src, n);
  fence();
}

// Every bulk copy between PEs (RMA and the collectives' direct copies) goes through here.
inline void copy(void* dst, const void* src, size_t n) {
  if (n >= stream_copy_min) stream_copy(dst, src, n);
  else std::memcpy(dst, src, n);
}

inline void put(void* remote, const void* src, size_t n) { copy(remote, src, n); }
inline void get(void* dst, const void* remote, size_t n) { copy(dst, remote, n); }

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
