// symmem/ctx.hpp — communication contexts of the C++ API (included by symmem.hpp).
//
// A symmem::Ctx is an ordering and completion stream of one Runtime, bound to a team, as
// OpenSHMEM's shmem_ctx_t: its operations take PE numbers of that team, its fence()
// orders only the puts issued on it, its quiet() completes only the operations issued on
// it (a context's quiet never has to wait for another context's traffic). Make one with
// Runtime::ctx_create (the world team) or Team::ctx_create. Not collective.
//
// Completion is as for the Runtime's calls (symmem.hpp): put returns when src may be
// reused, put_nbi / get_nbi may return before completion and their buffers must not be
// touched until this context's quiet(); atomics are complete on return. The Runtime's
// quiet() and barrier_all() complete every context's operations too.
//
// Options are the OpenSHMEM ones (kSerialized, kPrivate, kNostore); they are hints.
// Errors throw symmem::Error: a PE outside the context's team, an address outside
// symmetric memory, a call on an invalid (destroyed or moved-from) context (kState).
// Thread safety: a kPrivate context is used by the thread that made it; others as the
// Runtime's. Destroy every Ctx before its Runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "symmem/symmem.hpp"

struct symmem_ctx_s;  // the library's context (also the C API's shmem_ctx_t)

namespace symmem {

class SYMMEM_API Ctx {
 public:
  static constexpr long kSerialized = 1L << 0;
  static constexpr long kPrivate = 1L << 1;
  static constexpr long kNostore = 1L << 2;

  Ctx() = default;  // invalid
  Ctx(Ctx&& o) noexcept : rt_(o.rt_), c_(o.c_), start_(o.start_), stride_(o.stride_), size_(o.size_) { o.c_ = nullptr; }
  Ctx& operator=(Ctx&& o) noexcept;
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  // destroy(); never throws.
  ~Ctx();

  bool valid() const noexcept { return c_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  long options() const;
  // The size of the context's team (PEs are numbered 0 .. n_pes()-1); -1 when invalid.
  int n_pes() const noexcept { return c_ ? size_ : -1; }
  // The world PE number of team PE `pe`; throws kInvalidArgument when out of range.
  int world_pe(int pe) const;

  void put(void* dest, const void* src, size_t bytes, int pe);
  void get(void* dest, const void* src, size_t bytes, int pe);
  void put_nbi(void* dest, const void* src, size_t bytes, int pe);
  void get_nbi(void* dest, const void* src, size_t bytes, int pe);
  void put_signal(void* dest, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op, int pe);
  // Puts issued on this context before fence() reach each PE before those issued after.
  void fence();
  // Every operation issued on this context is complete (delivered at its target).
  void quiet();
  // quiet(), then the context is released (invalid). Not collective.
  void destroy();

  // Atomics on this context (types as Runtime's; complete on return).
  template <AmoType T>
  T atomic_fetch_add(T* dest, std::type_identity_t<T> value, int pe) {
    return need()->atomic_fetch_add(dest, value, world_pe(pe));
  }
  template <AmoType T>
  void atomic_add(T* dest, std::type_identity_t<T> value, int pe) {
    need()->atomic_add(dest, value, world_pe(pe));
  }
  template <AmoType T>
  T atomic_fetch_inc(T* dest, int pe) {
    return need()->atomic_fetch_inc(dest, world_pe(pe));
  }
  template <AmoType T>
  void atomic_inc(T* dest, int pe) {
    need()->atomic_inc(dest, world_pe(pe));
  }
  template <AmoType T>
  T atomic_compare_swap(T* dest, std::type_identity_t<T> cond, std::type_identity_t<T> value, int pe) {
    return need()->atomic_compare_swap(dest, cond, value, world_pe(pe));
  }
  template <AmoExtType T>
  T atomic_fetch(const T* src, int pe) {
    return need()->atomic_fetch(src, world_pe(pe));
  }
  template <AmoExtType T>
  void atomic_set(T* dest, std::type_identity_t<T> value, int pe) {
    need()->atomic_set(dest, value, world_pe(pe));
  }
  template <AmoExtType T>
  T atomic_swap(T* dest, std::type_identity_t<T> value, int pe) {
    return need()->atomic_swap(dest, value, world_pe(pe));
  }
  template <AmoBitwiseType T>
  T atomic_fetch_and(T* dest, std::type_identity_t<T> value, int pe) {
    return need()->atomic_fetch_and(dest, value, world_pe(pe));
  }
  template <AmoBitwiseType T>
  T atomic_fetch_or(T* dest, std::type_identity_t<T> value, int pe) {
    return need()->atomic_fetch_or(dest, value, world_pe(pe));
  }
  template <AmoBitwiseType T>
  T atomic_fetch_xor(T* dest, std::type_identity_t<T> value, int pe) {
    return need()->atomic_fetch_xor(dest, value, world_pe(pe));
  }
  template <AmoBitwiseType T>
  void atomic_and(T* dest, std::type_identity_t<T> value, int pe) {
    need()->atomic_and(dest, value, world_pe(pe));
  }
  template <AmoBitwiseType T>
  void atomic_or(T* dest, std::type_identity_t<T> value, int pe) {
    need()->atomic_or(dest, value, world_pe(pe));
  }
  template <AmoBitwiseType T>
  void atomic_xor(T* dest, std::type_identity_t<T> value, int pe) {
    need()->atomic_xor(dest, value, world_pe(pe));
  }

 private:
  friend class Runtime;
  friend class Team;
  Ctx(Runtime* rt, symmem_ctx_s* c, int start, int stride, int size)
      : rt_(rt), c_(c), start_(start), stride_(stride), size_(size) {}
  Runtime* need() const;

  Runtime* rt_ = nullptr;
  symmem_ctx_s* c_ = nullptr;
  int start_ = 0, stride_ = 1, size_ = 0;  // team PE p is world PE start_ + p * stride_
};

}  // namespace symmem
