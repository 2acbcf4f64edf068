// symmem/symmem.hpp — the C++ API of symmem.
//
// A symmem::Runtime is one job instance: this process is one PE among n_pes(), with a
// symmetric heap that every PE of the job can read and write one-sidedly. Runtimes hold
// no process-wide state, so a process may own several side by side; the OpenSHMEM C API
// (shmem.h) uses a default one.
//
// Symmetric addresses. Every PE allocates the same sizes in the same order (allocation is
// collective), so an object has the same address on every PE. The global and static
// variables of the executable are symmetric too (docs/static-data.md), owned by the first
// Runtime of the process. Calls that target PE `pe`
// take the *local* address of a symmetric object and act on `pe`'s copy of it.
//
// Completion and ordering (same as OpenSHMEM):
//  - put / p: return when the source buffer may be reused. The data is delivered to the
//    target by the next quiet(), barrier_all(), or (between two puts to the same PE)
//    ordered by fence(). On one node puts are stores into the peer's mapped heap, so they
//    are in fact visible once quiet() returns on the issuing PE.
//  - get / g: return when the data has arrived in the local buffer.
//  - put_nbi / get_nbi: may return before completion; the buffers must not be touched
//    until quiet().
//  - fence(): puts issued before it to a given PE are delivered before puts after it.
//  - quiet(): every put, get and nbi operation this PE issued is complete.
//  - barrier_all(): quiet() on every PE, then a synchronisation of all PEs. sync_all():
//    synchronisation, after which this PE's own earlier stores are visible to all; it
//    does not complete puts. Details per call: docs/memory-model.md.
// Errors: invalid arguments (PE out of range, address outside the symmetric heap) throw
// symmem::Error; so do failures at construction. Thread safety: one thread per Runtime
// at a time unless stated otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "symmem/error.hpp"
#include "symmem/init.hpp"

namespace symmem {

// Options of a Runtime; unset fields come from the environment (SHMEM_SYMMETRIC_SIZE,
// the launcher's variables, ...). See docs/configuration.md.
struct InitOptions {
  uint64_t heap_size = 0;  // 0: SHMEM_SYMMETRIC_SIZE or the 16 GiB default
  int instance = 0;        // instance id: separates the shared-memory objects of runtimes
};

// A typed view of a symmetric allocation. It does not own the memory: free it with
// Runtime::free (collective) — a destructor cannot know that every PE frees together.
template <class T>
class SymSpan {
 public:
  SymSpan() = default;
  SymSpan(T* data, size_t n) : data_(data), size_(n) {}
  T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t size_bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) const { return data_[i]; }
  T* begin() const { return data_; }
  T* end() const { return data_ + size_; }
  operator std::span<T>() const { return {data_, size_}; }  // NOLINT
  SymSpan subspan(size_t off, size_t n) const { return {data_ + off, n}; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

class SYMMEM_API Runtime {
 public:
  // Joins the job described by the environment (symmem-run, or a 1-PE job without a
  // launcher). Collective: every PE of the job constructs its Runtime. Throws Error.
  explicit Runtime(const InitOptions& opts = {});
  // Joins the job the way `attr` says (symmem/init.hpp): the launcher's environment, a
  // unique id, or MPI. Collective. Throws Error naming what is wrong and which PEs.
  explicit Runtime(const InitAttr& attr);
  // Finalizes: a barrier with every PE, then the heap is unmapped. Collective.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int my_pe() const;
  int n_pes() const;
  uint64_t heap_size() const;

  // ---- symmetric memory (collective: same sizes, same order on every PE) ----
  // Returns nullptr when the heap (or /dev/shm) cannot satisfy the request, on every PE.
  void* malloc(size_t bytes);
  void* calloc(size_t count, size_t size);
  void* align(size_t alignment, size_t bytes);
  void* realloc(void* ptr, size_t bytes);
  void free(void* ptr);
  // Typed allocation; throws Error(kNoMemory) when it cannot be satisfied.
  template <class T>
  SymSpan<T> alloc(size_t n) {
    static_assert(std::is_trivially_copyable_v<T>, "symmetric objects are copied bytewise");
    void* p = align(alignof(T) > 64 ? alignof(T) : 64, n * sizeof(T));
    if (!p && n) throw Error(Errc::kNoMemory, "symmetric allocation of " + std::to_string(n * sizeof(T)) + " bytes failed");
    return {static_cast<T*>(p), n};
  }
  template <class T>
  void free(SymSpan<T> s) { free(static_cast<void*>(s.data())); }

  // ---- RMA ----
  void put(void* dest, const void* src, size_t bytes, int pe);
  void get(void* dest, const void* src, size_t bytes, int pe);
  void put_nbi(void* dest, const void* src, size_t bytes, int pe);
  void get_nbi(void* dest, const void* src, size_t bytes, int pe);
  template <class T>
  void put(T* dest, const T* src, size_t n, int pe) { put(static_cast<void*>(dest), src, n * sizeof(T), pe); }
  template <class T>
  void get(T* dest, const T* src, size_t n, int pe) { get(static_cast<void*>(dest), src, n * sizeof(T), pe); }
  template <class T>
  void put(SymSpan<T> dest, std::span<const T> src, int pe) { put(dest.data(), src.data(), src.size(), pe); }
  template <class T>
  void get(std::span<T> dest, SymSpan<T> src, int pe) { get(dest.data(), src.data(), dest.size(), pe); }
  template <class T>
  void p(T* dest, T value, int pe) { put(dest, &value, 1, pe); }
  template <class T>
  T g(const T* src, int pe) { T v; get(&v, src, 1, pe); return v; }

  // ---- ordering, completion, synchronisation ----
  void fence();
  void quiet();
  void barrier_all();
  void sync_all();

  // Local address through which `pe`'s copy of `dest` can be loaded/stored directly, or
  // nullptr when `pe` is not reachable by load/store (another node).
  void* ptr(const void* dest, int pe) const;
  bool addr_accessible(const void* addr, int pe) const;
  bool pe_accessible(int pe) const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace symmem
