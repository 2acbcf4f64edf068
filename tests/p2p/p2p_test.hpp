// Helpers shared by the point-to-point tests (C API, default instance).
#pragma once

#include <gtest/gtest.h>
#include <shmem.h>

#include <cstring>

namespace p2pt {

inline int me() { return shmem_my_pe(); }
inline int npes() { return shmem_n_pes(); }
inline int right(int k = 1) { return (me() + k) % npes(); }
inline int left(int k = 1) { return (me() - k % npes() + npes()) % npes(); }

// A zeroed symmetric array that peers may write to once this returns (collective).
template <class T>
T* zalloc(size_t n) {
  T* p = static_cast<T*>(shmem_align(64, n * sizeof(T) < 64 ? 64 : n * sizeof(T)));
  if (p) std::memset(static_cast<void*>(p), 0, n * sizeof(T));
  shmem_barrier_all();
  return p;
}

}  // namespace p2pt
