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
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "symmem/error.hpp"
#include "symmem/init.hpp"
#include "symmem/typed.hpp"

namespace symmem {

class Team;  // symmem/team.hpp
class Ctx;   // symmem/ctx.hpp

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
  // This PE's use of its symmetric heap (the same on every PE, allocation being collective).
  struct HeapStats {
    uint64_t size = 0;          // heap_size()
    uint64_t used = 0;          // bytes in live blocks (rounded as allocated)
    uint64_t largest_free = 0;  // the largest block an allocation can still get
    size_t blocks = 0;          // live blocks
  };
  HeapStats heap_stats() const;

  // A check every blocking wait of this Runtime calls (barriers, syncs, collectives,
  // wait_until, signal_wait_until, allocation's barrier) before each sleep, once the wait
  // has spun and yielded: at most about 1 ms apart while it waits, never on the fast path.
  // When check() throws, the wait ends by that exception. The interrupted call has then
  // left its collective half done: use the Runtime only to end the job (its destructor
  // waits for the other PEs; a program that leaves on a timeout need not destroy it). An
  // empty function removes the check. The Python module uses it for Ctrl-C and timeouts.
  void set_wait_check(std::function<void()> check);

  // ---- seeing inside the job (docs/dfx.md) ----
  // What PE `pe` is doing now, read from its status page in shared memory, without its
  // help (it may be computing, stuck or stopped). Only PEs of this node have a page here.
  // Any thread may call it, also while another thread of this PE is in a call (a watchdog
  // of its own PE).
  struct PeStatus {
    bool available = false;  // false: `pe` is on another node
    std::string state;       // "init", "user code", "in call", "waiting", "finalized"
    std::string call;        // the blocking call it is in, "" in user code
    uint64_t progress = 0;   // blocking calls (and waits that slept) it has completed
    // The wait it sleeps in, when state is "waiting": the word's symmetric address on PE
    // wait_owner, its width, the comparison (OpenSHMEM SHMEM_CMP_*; -1: a sync word that
    // must reach wait_expect) and how long it has slept.
    std::string wait_call;
    int wait_owner = -1;
    int wait_cmp = -1;
    uint64_t wait_addr = 0;
    uint32_t wait_width = 0;
    uint64_t wait_expect = 0;
    double waiting_s = 0;
    // Its collectives on the world team: how many it has entered; the latest one.
    uint32_t world_collectives = 0;
    std::string last_collective;
    bool last_collective_done = false;
  };
  PeStatus pe_status(int pe) const;
  // A symmetric address as reports name it: "'halo' (allocation #3, 64 KiB) +4096",
  // "static data +0x40". Local: no communication.
  std::string describe(const void* addr) const;
  // Gives the live allocation containing `addr` a name that reports use from now on
  // (local; call it on every PE for reports from every PE). False when addr is in none.
  bool set_name(const void* addr, const std::string& name);

  // ---- symmetric memory (collective: same sizes, same order on every PE) ----
  // Returns nullptr when the heap (or /dev/shm) cannot satisfy the request, on every PE.
  void* malloc(size_t bytes);
  void* calloc(size_t count, size_t size);
  void* align(size_t alignment, size_t bytes);
  // As align(), and init(local, bytes) fills this PE's new block before the allocation's
  // closing barrier (one barrier, as calloc): a peer may put or signal into the block as soon
  // as its own call returns. Not called when the allocation fails; if it throws, the call
  // fails on every PE (nullptr there) and the exception goes on from this PE.
  void* align(size_t alignment, size_t bytes, const std::function<void(void* local, size_t bytes)>& init);
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
  // Typed allocation with every element `value` before any peer can write into it.
  template <class T>
  SymSpan<T> alloc(size_t n, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "symmetric objects are copied bytewise");
    void* p = align(alignof(T) > 64 ? alignof(T) : 64, n * sizeof(T), [&value](void* local, size_t bytes) {
      T* t = static_cast<T*>(local);
      for (size_t i = 0, k = bytes / sizeof(T); i < k; ++i) t[i] = value;
    });
    if (!p && n) throw Error(Errc::kNoMemory, "symmetric allocation of " + std::to_string(n * sizeof(T)) + " bytes failed");
    return {static_cast<T*>(p), n};
  }
  template <class T>
  void free(SymSpan<T> s) { free(static_cast<void*>(s.data())); }

  // ---- device memory (docs/device.md; collective as align(), freed with free()) ----
  // `bytes` in the device heap: memory of the GPU this PE is bound to (InitAttr::device,
  // SYMMEM_DEVICE, symmem-run --gpus; by default its index on the node modulo the visible
  // GPUs), which kernels reach through symmem/cuda.cuh; host calls (put, get, atomics,
  // signals) take device addresses too (the GPU does them; symmem/shmemx_device.h). The first such call creates the device heap
  // (InitAttr::device_heap_size / SYMMEM_DEVICE_HEAP_SIZE per PE). Returns nullptr on every
  // PE, with the reason logged and kept in device_error(), when any PE has no usable GPU (no
  // driver, no device, a build without the CUDA route, a job spanning nodes) or the device
  // heap cannot hold the block; the job goes on. A PE asking for device memory while another
  // asks for host memory is a mismatch (Error, kMismatch). alignment: a power of two, at
  // most 2 MiB. pattern: when not null, its pattern_bytes bytes repeat over this PE's block,
  // written through the CUDA driver before the call's closing barrier (a peer's kernel may
  // write into the block as soon as its own call returns).
  void* align_device(size_t alignment, size_t bytes, const void* pattern = nullptr, size_t pattern_bytes = 0);
  // Why the latest device allocation of this Runtime returned nullptr; "" after one that
  // succeeded (or before any).
  std::string device_error() const;
  // The device heap once a device allocation has created it: PE p's copy of a device
  // address x is x + (p - my_pe()) * heap_size (ptr() computes it for node peers).
  struct DeviceHeapInfo {
    uintptr_t base = 0;      // PE 0's slot
    uint64_t heap_size = 0;  // per PE
    int device = -1;         // the GPU ordinal, as CUDA numbers the visible devices
  };
  // False (and *out untouched) while there is no device heap.
  bool device_heap(DeviceHeapInfo* out) const;
  // Typed device allocation; throws Error(kNoMemory) with device_error()'s reason where
  // align_device returns nullptr (on every PE alike).
  template <class T>
  SymSpan<T> alloc_device(size_t n) {
    static_assert(std::is_trivially_copyable_v<T>, "symmetric objects are copied bytewise");
    return device_span_<T>(align_device(alignof(T) > 64 ? alignof(T) : 64, n * sizeof(T)), n);
  }
  // Typed device allocation with every element `value` (written through the driver) before
  // any peer can write into it.
  template <class T>
  SymSpan<T> alloc_device(size_t n, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "symmetric objects are copied bytewise");
    return device_span_<T>(align_device(alignof(T) > 64 ? alignof(T) : 64, n * sizeof(T), &value, sizeof(T)), n);
  }

  // ---- RMA ----
  void put(void* dest, const void* src, size_t bytes, int pe);
  void get(void* dest, const void* src, size_t bytes, int pe);
  // put / get whose symmetric side (dest of a put, src of a get) must be in the device heap
  // (Error kInvalidArgument "... is not in the device heap" otherwise, never a host copy);
  // the local side is any memory the GPU reaches, host or device. The GPU copies; complete
  // at the target on return, as put/get (which take device addresses too, but cannot tell a
  // mistaken device address from a bad host one).
  void put_device(void* dest, const void* src, size_t bytes, int pe);
  void get_device(void* dest, const void* src, size_t bytes, int pe);
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

  // ---- teams and collectives (symmem/team.hpp) ----
  Team team_world();   // every PE of this Runtime
  Team team_shared();  // the PEs that share memory with this one

  // ---- contexts (symmem/ctx.hpp) ----
  // A context on the world team. Options: Ctx::kSerialized, kPrivate, kNostore; unknown
  // bits throw kInvalidArgument. Not collective.
  Ctx ctx_create(long options = 0);

  // ---- objects that outlive the Runtime ----
  // Keeps the pages holding [addr, addr + bytes) -- in this PE's heap or an on-node
  // peer's -- mapped after this Runtime is destroyed, as private memory holding what they
  // held then (a copy, made by the destructor): for objects that may outlive the job, such
  // as the Python module's arrays, which then stay readable and writable (no longer
  // symmetric) instead of pointing into unmapped memory. The pages stay until the process
  // exits or the caller munmap(2)s them (whole pages: neighbouring objects share them).
  // Local, not collective. Throws kInvalidArgument for a range not in a mapped heap.
  void keep_after_finalize(const void* addr, size_t bytes);

  // ---- atomics (complete on return; `dest` symmetric, naturally aligned) ----
  // Types: AmoType (fetch_add, add, inc, compare_swap), AmoExtType (fetch, set, swap) and
  // AmoBitwiseType (and / or / xor) from the OpenSHMEM tables (symmem/typed.hpp).
  template <AmoType T>
  T atomic_fetch_add(T* dest, std::type_identity_t<T> value, int pe) {
    return amo_(kAmoFetchAdd, dest, value, T{}, pe);
  }
  template <AmoType T>
  void atomic_add(T* dest, std::type_identity_t<T> value, int pe) {
    amo_(kAmoAdd, dest, value, T{}, pe);
  }
  template <AmoType T>
  T atomic_fetch_inc(T* dest, int pe) {
    return amo_(kAmoFetchAdd, dest, T(1), T{}, pe);
  }
  template <AmoType T>
  void atomic_inc(T* dest, int pe) {
    amo_(kAmoAdd, dest, T(1), T{}, pe);
  }
  template <AmoType T>
  T atomic_compare_swap(T* dest, std::type_identity_t<T> cond, std::type_identity_t<T> value, int pe) {
    return amo_(kAmoCompareSwap, dest, value, cond, pe);
  }
  template <AmoExtType T>
  T atomic_fetch(const T* src, int pe) {
    return amo_(kAmoFetch, const_cast<T*>(src), T{}, T{}, pe);
  }
  template <AmoExtType T>
  void atomic_set(T* dest, std::type_identity_t<T> value, int pe) {
    amo_(kAmoSet, dest, value, T{}, pe);
  }
  template <AmoExtType T>
  T atomic_swap(T* dest, std::type_identity_t<T> value, int pe) {
    return amo_(kAmoSwap, dest, value, T{}, pe);
  }
  template <AmoBitwiseType T>
  T atomic_fetch_and(T* dest, std::type_identity_t<T> value, int pe) {
    return amo_(kAmoFetchAnd, dest, value, T{}, pe);
  }
  template <AmoBitwiseType T>
  T atomic_fetch_or(T* dest, std::type_identity_t<T> value, int pe) {
    return amo_(kAmoFetchOr, dest, value, T{}, pe);
  }
  template <AmoBitwiseType T>
  T atomic_fetch_xor(T* dest, std::type_identity_t<T> value, int pe) {
    return amo_(kAmoFetchXor, dest, value, T{}, pe);
  }
  template <AmoBitwiseType T>
  void atomic_and(T* dest, std::type_identity_t<T> value, int pe) {
    amo_(kAmoFetchAnd, dest, value, T{}, pe);
  }
  template <AmoBitwiseType T>
  void atomic_or(T* dest, std::type_identity_t<T> value, int pe) {
    amo_(kAmoFetchOr, dest, value, T{}, pe);
  }
  template <AmoBitwiseType T>
  void atomic_xor(T* dest, std::type_identity_t<T> value, int pe) {
    amo_(kAmoFetchXor, dest, value, T{}, pe);
  }

  // ---- signals and waits ----
  // Puts `bytes` from src to dest on `pe`, then updates pe's signal word `sig` (set or add
  // `value`): a PE that sees the signal sees the data. Returns when src may be reused.
  void put_signal(void* dest, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op, int pe);
  template <class T>
  void put_signal(T* dest, const T* src, size_t n, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
    put_signal(static_cast<void*>(dest), src, n * sizeof(T), sig, value, op, pe);
  }
  template <class T>
  void put_signal(SymSpan<T> dest, std::type_identity_t<std::span<const T>> src, uint64_t* sig, uint64_t value,
                  SignalOp op, int pe) {
    if (src.size() > dest.size())
      throw Error(Errc::kInvalidArgument, "put_signal: src has " + std::to_string(src.size()) +
                                              " elements, dest only " + std::to_string(dest.size()));
    put_signal(dest.data(), src.data(), src.size(), sig, value, op, pe);
  }
  uint64_t signal_fetch(const uint64_t* sig);
  // Blocks until *sig (this PE's signal word) compares true with value; returns it.
  uint64_t signal_wait_until(uint64_t* sig, Cmp cmp, uint64_t value);
  // Blocks until this PE's *ivar compares true with value (it is updated by other PEs'
  // puts or atomics); returns the value that satisfied it. test(): the same, not blocking.
  template <WaitType T>
  T wait_until(T* ivar, Cmp cmp, std::type_identity_t<T> value) {
    T out;
    wait_(ivar, cmp, &value, &out, int(detail::num_of<T>()), true);
    return out;
  }
  template <WaitType T>
  bool test(T* ivar, Cmp cmp, std::type_identity_t<T> value) {
    return wait_(ivar, cmp, &value, nullptr, int(detail::num_of<T>()), false);
  }

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  // The type-erased calls behind the typed atomics and waits (src/capi/cxx_p2p.cpp).
  enum AmoKind : int {
    kAmoFetch,
    kAmoSet,
    kAmoSwap,
    kAmoCompareSwap,
    kAmoFetchAdd,
    kAmoAdd,
    kAmoFetchAnd,
    kAmoFetchOr,
    kAmoFetchXor
  };
  void amo_bytes(AmoKind kind, void* dest, const void* value, const void* cond, void* fetched, int num, int pe);
  bool wait_(void* ivar, Cmp cmp, const void* value, void* out, int num, bool block);
  template <class T>
  T amo_(AmoKind kind, T* dest, T value, T cond, int pe) {
    T fetched{};
    amo_bytes(kind, dest, &value, &cond, &fetched, int(detail::num_of<T>()), pe);
    return fetched;
  }

  template <class T>
  SymSpan<T> device_span_(void* p, size_t n) {
    if (!p && n)
      throw Error(Errc::kNoMemory, "device allocation of " + std::to_string(n * sizeof(T)) +
                                       " bytes failed on every PE: " + device_error());
    return {static_cast<T*>(p), n};
  }

  std::unique_ptr<Impl> impl_;
};

}  // namespace symmem

#include "symmem/team.hpp"
#include "symmem/ctx.hpp"
