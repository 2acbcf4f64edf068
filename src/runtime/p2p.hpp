// Point-to-point semantics beyond put/get: strided RMA, atomics, signals, waits and tests,
// locks. One template per operation; the C API stamps typed names over these.
//
// On the shm route a peer's heap is mapped here, so an atomic is a hardware atomic on the
// peer's word (__atomic_* on the translated address), and every operation is complete
// when it returns. All atomic updates are seq_cst: that orders them with the sleeper
// check below and makes them usable for synchronisation without extra fences.
//
// Wake-ups. Waits on user memory (wait_until, signal_wait_until, locks) spin, yield, then
// sleep. A sleeper registers in the owner PE's MetaFixed::user_wake (sleepers += 1), reads
// its generation, re-checks its condition, and futex-waits on the generation. A writer
// that updated the owner's memory through an atomic or a signal loads sleepers afterwards
// and, when nonzero, bumps the generation and wakes. Both sides do a seq_cst write, then a
// seq_cst read (Dekker): either the writer sees the sleeper, or the sleeper's re-check sees
// the update. One word per PE (not one per variable) is what lets a sleeper wait on a
// whole vector of variables, on 16- and 64-bit ones, and on changes in any of their bytes.
// Plain puts do not wake: their target sleeps at most wait_max_sleep_us x 4 between polls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "device/kernel_args.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem::p2p {

using Impl = Runtime::Impl;

// Comparison operators of the waits and tests (the C API's SHMEM_CMP_* values).
enum Cmp : int { kCmpEq = 0, kCmpNe = 1, kCmpGt = 2, kCmpGe = 3, kCmpLt = 4, kCmpLe = 5 };
enum SignalOp : int { kSignalSet = 0, kSignalAdd = 1 };

[[noreturn]] void bad_cmp(Impl& r, const char* call, int cmp);
[[noreturn]] void bad_signal_op(Impl& r, const char* call, int op);
[[noreturn]] void misaligned(Impl& r, const char* call, const void* addr, size_t size, int pe);
[[noreturn]] void bad_stride(Impl& r, const char* call, ptrdiff_t dst, ptrdiff_t sst);
[[noreturn]] void bad_block_stride(Impl& r, const char* call, ptrdiff_t dst, ptrdiff_t sst, size_t bsize);
void wake_slow(WaitWord& w);

// Wakes the sleepers of `pe`'s user memory, if any, after an update of that memory.
inline void wake(Impl& r, int pe) {
  WaitWord& w = r.meta(pe)->user_wake;
  if (SYMMEM_UNLIKELY(w.sleepers.load(std::memory_order_seq_cst) != 0)) wake_slow(w);
}

// ---------------------------------------------------------------- strided RMA

// Copies nelems elements of S bytes: dest[i*dst] <- src[i*sst] (strides in elements).
template <size_t S>
inline void iput(Impl& r, const char* call, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                 int pe) {
  if (SYMMEM_UNLIKELY(dst < 1 || sst < 1)) bad_stride(r, call, dst, sst);
  size_t span;  // bytes from the first to the end of the last destination element
  if (__builtin_mul_overflow(n ? n - 1 : 0, size_t(dst), &span) || __builtin_add_overflow(span, 1, &span) ||
      __builtin_mul_overflow(span, S, &span))
    span = SIZE_MAX;
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kPut, call, dest, n ? span : 0, pe, src);
  char* rd = r.translate(call, dest, n ? span : 0, pe);
  if (!n) return;
  if (SYMMEM_UNLIKELY(!rd)) return r.device_put_strided(call, dest, src, size_t(dst) * S, size_t(sst) * S, S, n, pe);
  r.dfx_write(dfx::Op::kPut, call, dest, span, pe, dfx_op_.on());
  const char* s = static_cast<const char*>(src);
  if (r.off_node(pe)) {
    for (size_t i = 0; i < n; ++i) r.ucx_put(rd + i * size_t(dst) * S, s + i * size_t(sst) * S, S, pe, true);
    return;
  }
  for (size_t i = 0; i < n; ++i) std::memcpy(rd + i * size_t(dst) * S, s + i * size_t(sst) * S, S);
}

template <size_t S>
inline void iget(Impl& r, const char* call, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                 int pe) {
  if (SYMMEM_UNLIKELY(dst < 1 || sst < 1)) bad_stride(r, call, dst, sst);
  size_t span;
  if (__builtin_mul_overflow(n ? n - 1 : 0, size_t(sst), &span) || __builtin_add_overflow(span, 1, &span) ||
      __builtin_mul_overflow(span, S, &span))
    span = SIZE_MAX;
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kGet, call, src, n ? span : 0, pe, dest);
  const char* rs = r.translate(call, src, n ? span : 0, pe);
  if (!n) return;
  if (SYMMEM_UNLIKELY(!rs)) return r.device_get_strided(call, dest, src, size_t(dst) * S, size_t(sst) * S, S, n, pe);
  char* d = static_cast<char*>(dest);
  if (r.off_node(pe)) {  // all in flight at once, then complete
    for (size_t i = 0; i < n; ++i) r.ucx_get(d + i * size_t(dst) * S, rs + i * size_t(sst) * S, S, pe, false);
    return r.ucx_quiet(false);
  }
  for (size_t i = 0; i < n; ++i) std::memcpy(d + i * size_t(dst) * S, rs + i * size_t(sst) * S, S);
}

// Interleaved blocks: nblocks blocks of bsize elements of S bytes, block b from
// src + b*sst to dest + b*dst (strides in elements, each >= bsize, so blocks never overlap).
// The remote range checked is from the first element to the end of the last block.
inline size_t block_span(size_t stride, size_t bsize, size_t nblocks, size_t S) {
  size_t span;
  if (!nblocks || !bsize) return 0;
  if (__builtin_mul_overflow(nblocks - 1, stride, &span) || __builtin_add_overflow(span, bsize, &span) ||
      __builtin_mul_overflow(span, S, &span))
    return SIZE_MAX;
  return span;
}

inline bool block_strides_ok(ptrdiff_t dst, ptrdiff_t sst, size_t bsize) {
  return dst >= 0 && sst >= 0 && size_t(dst) >= bsize && size_t(sst) >= bsize;
}

template <size_t S>
inline void ibput(Impl& r, const char* call, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                  size_t nblocks, int pe) {
  if (SYMMEM_UNLIKELY(!block_strides_ok(dst, sst, bsize))) bad_block_stride(r, call, dst, sst, bsize);
  const size_t span = block_span(size_t(dst), bsize, nblocks, S);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kPut, call, dest, span, pe, src);
  char* rd = r.translate(call, dest, span, pe);
  if (!span) return;
  if (SYMMEM_UNLIKELY(!rd))
    return r.device_put_strided(call, dest, src, size_t(dst) * S, size_t(sst) * S, bsize * S, nblocks, pe);
  r.dfx_write(dfx::Op::kPut, call, dest, span, pe, dfx_op_.on());
  const char* s = static_cast<const char*>(src);
  if (r.off_node(pe)) {
    for (size_t b = 0; b < nblocks; ++b) r.ucx_put(rd + b * size_t(dst) * S, s + b * size_t(sst) * S, bsize * S, pe, true);
    return;
  }
  for (size_t b = 0; b < nblocks; ++b) shm::put(rd + b * size_t(dst) * S, s + b * size_t(sst) * S, bsize * S);
}

template <size_t S>
inline void ibget(Impl& r, const char* call, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                  size_t nblocks, int pe) {
  if (SYMMEM_UNLIKELY(!block_strides_ok(dst, sst, bsize))) bad_block_stride(r, call, dst, sst, bsize);
  const size_t span = block_span(size_t(sst), bsize, nblocks, S);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kGet, call, src, span, pe, dest);
  const char* rs = r.translate(call, src, span, pe);
  if (!span) return;
  if (SYMMEM_UNLIKELY(!rs))
    return r.device_get_strided(call, dest, src, size_t(dst) * S, size_t(sst) * S, bsize * S, nblocks, pe);
  char* d = static_cast<char*>(dest);
  if (r.off_node(pe)) {
    for (size_t b = 0; b < nblocks; ++b)
      r.ucx_get(d + b * size_t(dst) * S, rs + b * size_t(sst) * S, bsize * S, pe, false);
    return r.ucx_quiet(false);
  }
  for (size_t b = 0; b < nblocks; ++b) shm::get(d + b * size_t(dst) * S, rs + b * size_t(sst) * S, bsize * S);
}

// ---------------------------------------------------------------- atomics

// pe's copy of the atomic object at `addr`, checked for range and natural alignment;
// nullptr for an object in device memory (the callers then take device_amo).
template <class T>
inline T* amo_addr(Impl& r, const char* call, const T* addr, int pe) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics are on 4- and 8-byte words");
  T* a = reinterpret_cast<T*>(r.translate(call, addr, sizeof(T), pe));
  if (SYMMEM_UNLIKELY(reinterpret_cast<uintptr_t>(a) % sizeof(T) != 0)) misaligned(r, call, addr, sizeof(T), pe);
  return a;
}

// Off the node an atomic is a UCX atomic on the object's bits (4 or 8 bytes, float and
// double included: fetch, set, swap and compare-swap move bits), performed by the target's
// CPU (UCX_ATOMIC_MODE=cpu), so it is atomic with the on-node PEs' atomics on that word.
template <class T>
inline uint64_t to_bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

// An atomic on an object in device memory, done by the GPU (runtime/device_ops.cpp).
// (K a template argument: six arguments, all in registers, so the caller's frame is kept.)
template <device::AmoKind K, class T>
[[gnu::cold, gnu::noinline]] T device_amo(Impl& r, const char* call, const T* addr, T value, T cond, int pe) {
  return from_bits<T>(r.device_amo(call, int(K), const_cast<T*>(addr), sizeof(T), to_bits(value), to_bits(cond), pe));
}

template <class T>
inline T atomic_fetch(Impl& r, const char* call, const T* src, int pe) {
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kAmoFetch, call, src, sizeof(T), pe);
  T v;
  const T* a = amo_addr(r, call, src, pe);
  if (SYMMEM_UNLIKELY(!a)) return device_amo<device::AmoKind::kFetch>(r, call, src, T(), T(), pe);
  if (r.off_node(pe)) return from_bits<T>(r.ucx_->amo(UcxAmo::kFetch, const_cast<T*>(a), 0, 0, sizeof(T), pe, true));
  __atomic_load(a, &v, __ATOMIC_SEQ_CST);
  return v;
}

template <class T>
inline void atomic_set(Impl& r, const char* call, T* dest, T value, int pe) {
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kAmo, call, dest, sizeof(T), pe);
  T* a = amo_addr(r, call, dest, pe);
  if (SYMMEM_UNLIKELY(!a)) return (void)device_amo<device::AmoKind::kSet>(r, call, dest, value, T(), pe);
  r.dfx_write(dfx::Op::kAmo, call, dest, sizeof(T), pe, dfx_op_.on());
  if (r.off_node(pe)) return (void)r.ucx_->amo(UcxAmo::kSwap, a, to_bits(value), 0, sizeof(T), pe, true);
  __atomic_store(a, &value, __ATOMIC_SEQ_CST);
  wake(r, pe);
}

template <class T>
inline T atomic_swap(Impl& r, const char* call, T* dest, T value, int pe) {
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kAmoFetch, call, dest, sizeof(T), pe);
  T old;
  T* a = amo_addr(r, call, dest, pe);
  if (SYMMEM_UNLIKELY(!a)) return device_amo<device::AmoKind::kSwap>(r, call, dest, value, T(), pe);
  r.dfx_write(dfx::Op::kAmoFetch, call, dest, sizeof(T), pe, dfx_op_.on());
  if (r.off_node(pe)) return from_bits<T>(r.ucx_->amo(UcxAmo::kSwap, a, to_bits(value), 0, sizeof(T), pe, true));
  __atomic_exchange(a, &value, &old, __ATOMIC_SEQ_CST);
  wake(r, pe);
  return old;
}

template <class T>
inline T atomic_compare_swap(Impl& r, const char* call, T* dest, T cond, T value, int pe) {
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kAmoFetch, call, dest, sizeof(T), pe);
  T expected = cond;
  T* a = amo_addr(r, call, dest, pe);
  if (SYMMEM_UNLIKELY(!a)) return device_amo<device::AmoKind::kCswap>(r, call, dest, value, cond, pe);
  r.dfx_write(dfx::Op::kAmoFetch, call, dest, sizeof(T), pe, dfx_op_.on());
  if (r.off_node(pe))
    return from_bits<T>(r.ucx_->amo(UcxAmo::kCswap, a, to_bits(value), to_bits(cond), sizeof(T), pe, true));
  __atomic_compare_exchange_n(a, &expected, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  wake(r, pe);
  return expected;
}

enum class Rmw { kAdd, kAnd, kOr, kXor };

constexpr device::AmoKind device_op(Rmw op) {
  return op == Rmw::kAdd ? device::AmoKind::kFetchAdd
         : op == Rmw::kAnd ? device::AmoKind::kFetchAnd
         : op == Rmw::kOr  ? device::AmoKind::kFetchOr
                           : device::AmoKind::kFetchXor;
}

constexpr UcxAmo ucx_op(Rmw op) {
  return op == Rmw::kAdd ? UcxAmo::kAdd : op == Rmw::kAnd ? UcxAmo::kAnd : op == Rmw::kOr ? UcxAmo::kOr : UcxAmo::kXor;
}

template <Rmw Op, class T>
inline T atomic_fetch_op(Impl& r, const char* call, T* dest, T value, int pe) {
  static_assert(std::is_integral_v<T>);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kAmoFetch, call, dest, sizeof(T), pe);
  T* a = amo_addr(r, call, dest, pe);
  if (SYMMEM_UNLIKELY(!a)) return device_amo<device_op(Op)>(r, call, dest, value, T(), pe);
  r.dfx_write(dfx::Op::kAmoFetch, call, dest, sizeof(T), pe, dfx_op_.on());
  if (r.off_node(pe)) return from_bits<T>(r.ucx_->amo(ucx_op(Op), a, to_bits(value), 0, sizeof(T), pe, true));
  T old;
  if constexpr (Op == Rmw::kAdd) old = __atomic_fetch_add(a, value, __ATOMIC_SEQ_CST);
  else if constexpr (Op == Rmw::kAnd) old = __atomic_fetch_and(a, value, __ATOMIC_SEQ_CST);
  else if constexpr (Op == Rmw::kOr) old = __atomic_fetch_or(a, value, __ATOMIC_SEQ_CST);
  else old = __atomic_fetch_xor(a, value, __ATOMIC_SEQ_CST);
  wake(r, pe);
  return old;
}

// The non-fetching forms (atomic_add, _inc, _and, _or, _xor): posted off the node,
// complete at quiet.
template <Rmw Op, class T>
inline void atomic_post(Impl& r, const char* call, T* dest, T value, int pe) {
  if (r.off_node(pe)) {
    if (SYMMEM_UNLIKELY(static_cast<unsigned>(pe) >= static_cast<unsigned>(r.npes_))) r.bad_pe(call, pe);
    dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kAmo, call, dest, sizeof(T), pe);
    T* a = amo_addr(r, call, dest, pe);
    r.dfx_write(dfx::Op::kAmo, call, dest, sizeof(T), pe, dfx_op_.on());
    (void)r.ucx_->amo(ucx_op(Op), a, to_bits(value), 0, sizeof(T), pe, false);
    return;
  }
  (void)atomic_fetch_op<Op>(r, call, dest, value, pe);
}

// ---------------------------------------------------------------- signals

// Applies a signal operation to pe's signal word `remote` (already translated).
inline void signal_update(Impl& r, const char* call, uint64_t* remote, uint64_t value, int op, int pe) {
  if (r.off_node(pe)) {
    if (op == kSignalSet) (void)r.ucx_->amo(UcxAmo::kSwap, remote, value, 0, 8, pe, true);
    else if (op == kSignalAdd) (void)r.ucx_->amo(UcxAmo::kAdd, remote, value, 0, 8, pe, false);
    else bad_signal_op(r, call, op);
    return;
  }
  if (op == kSignalSet) {
    // A release store, then a seq_cst fence (for wake's load), rather than one seq_cst
    // store: that is an `xchg`, a locked instruction, which asks for the signal's line only
    // once the data's stores have completed; after a plain store the CPU fetches both lines
    // at once (docs/memory-model.md).
    __atomic_store_n(remote, value, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  } else if (op == kSignalAdd) __atomic_fetch_add(remote, value, __ATOMIC_SEQ_CST);
  else bad_signal_op(r, call, op);
  wake(r, pe);
}

inline uint64_t* signal_addr(Impl& r, const char* call, const uint64_t* sig, int pe) {
  return amo_addr(r, call, sig, pe);
}

// shmem_signal_set / _add: a signal update on its own.
inline void signal_op(Impl& r, const char* call, uint64_t* sig, uint64_t value, int op, int pe) {
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kSignal, call, sig, sizeof(uint64_t), pe);
  uint64_t* rs = signal_addr(r, call, sig, pe);
  if (SYMMEM_UNLIKELY(!rs)) return r.device_signal_now(call, sig, value, op, pe);
  r.dfx_write(dfx::Op::kSignal, call, sig, sizeof(uint64_t), pe, dfx_op_.on());
  signal_update(r, call, rs, value, op, pe);
}

// From this size on a copy may use weakly ordered stores (glibc switches to `rep movsb`
// at 2048 bytes or more, to non-temporal stores far above): the signal's locked update is
// not relied on to order them (docs/memory-model.md), a store fence does. Below it the
// copy is ordinary stores, which x86 keeps in order before the signal.
inline constexpr size_t kWeakCopyMin = 2048;

inline void put_signal(Impl& r, const char* call, void* dest, const void* src, size_t n, uint64_t* sig,
                       uint64_t value, int op, int pe) {
  if (SYMMEM_UNLIKELY(op != kSignalSet && op != kSignalAdd)) bad_signal_op(r, call, op);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kPutSignal, call, dest, n, pe, src, sig);
  uint64_t* rs = signal_addr(r, call, sig, pe);
  char* rd = r.translate(call, dest, n, pe);
  if (SYMMEM_UNLIKELY(!rs || (!rd && n))) return r.device_put_signal(call, dest, src, n, sig, value, op, pe, nullptr);
  // The signal word (what a wait waits on), and the data when there is any.
  r.dfx_write(dfx::Op::kPutSignal, call, sig, sizeof(uint64_t), pe, dfx_op_.on());
  if (n) r.dfx_write(dfx::Op::kPutSignal, call, dest, n, pe, dfx_op_.on());
  if (r.off_node(pe)) {
    // The data is delivered before the signal: fence between (ordered on the endpoint).
    r.ucx_put(rd, src, n, pe, true);
    r.ucx_->fence();
    return signal_update(r, call, rs, value, op, pe);
  }
  if (n) shm::put(rd, src, n);
  if (n >= kWeakCopyMin) shm::fence();
  signal_update(r, call, rs, value, op, pe);
}

// ---------------------------------------------------------------- waits and tests

inline void check_cmp(Impl& r, const char* call, int cmp) {
  if (SYMMEM_UNLIKELY(static_cast<unsigned>(cmp) > kCmpLe)) bad_cmp(r, call, cmp);
}

template <class T>
inline bool compare(T v, int cmp, T x) {
  switch (cmp) {
    case kCmpEq: return v == x;
    case kCmpNe: return v != x;
    case kCmpGt: return v > x;
    case kCmpGe: return v >= x;
    case kCmpLt: return v < x;
    default: return v <= x;
  }
}

// The user variable's current value. seq_cst: the sleeper's re-check must not move before
// its registration (free on x86, where it is a plain load).
template <class T>
inline T load(const T* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

// Blocks until done() holds: spin, yield, then sleep on `owner`'s user_wake generation
// (Impl::wait_adaptive; the spin budget is shared with the syncs' waits).
// `call`, `ivars` (n of them), `cmp` and `x` describe the wait on the status page.
// `vec` adds what a vector wait waits for (WaitDesc::vec_*), at sleep only.
template <class T, class Done, class Vec>
inline void wait_for(Impl& r, int owner, Done done, const char* call, const T* ivars, size_t n, int cmp, T x, Vec vec) {
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kWait, call, ivars, n * sizeof(T), owner);
  WaitWord& w = r.meta(owner)->user_wake;
  r.wait_adaptive(
      done,
      [&](Backoff& b) {
        w.sleepers.fetch_add(1, std::memory_order_seq_cst);
        const uint32_t gen = w.v.load(std::memory_order_seq_cst);
        if (!done()) b.pause_on(&w.v, gen);
        w.sleepers.fetch_sub(1, std::memory_order_release);
      },
      [&](dfx::WaitDesc& d) {
        d.call = call;
        d.owner = owner;
        d.cmp = cmp;
        d.width = sizeof(T);
        d.nwords = uint32_t(n);
        d.addr = ivars;
        d.expect = to_bits(x);
        vec(d);
      });
}

template <class T, class Done>
inline void wait_for(Impl& r, int owner, Done done, const char* call, const T* ivars, size_t n, int cmp, T x) {
  wait_for(r, owner, done, call, ivars, n, cmp, x, [](dfx::WaitDesc&) {});
}

// This PE's word in device memory, polled through the GPU's copy engine (the host has no
// mapping of device memory).
template <class T>
[[gnu::cold, gnu::noinline]] T device_wait_until(Impl& r, const char* call, const T* ivar, int cmp, T x) {
  Backoff b(r.wait_);
  for (;;) {
    T v;
    r.device_get(call, &v, ivar, sizeof(T), r.rank_, nullptr);
    if (compare(v, cmp, x)) return v;
    b.pause();
  }
}

// Vector waits and tests, and locks, are host-memory only.
[[noreturn, gnu::cold]] void device_unsupported(Impl& r, const char* call, const void* addr);
inline void host_only(Impl& r, const char* call, const void* addr) {
  if (SYMMEM_UNLIKELY(r.in_device_heap(addr))) device_unsupported(r, call, addr);
}

template <class T>
inline T wait_until(Impl& r, const char* call, T* ivar, int cmp, T x) {
  check_cmp(r, call, cmp);
  if (SYMMEM_UNLIKELY(r.in_device_heap(ivar))) return device_wait_until(r, call, ivar, cmp, x);
  T v;
  wait_for(r, r.rank_, [&] { return compare(v = load(ivar), cmp, x); }, call, ivar, 1, cmp, x);
  return v;
}

template <class T>
inline bool test(Impl& r, const char* call, T* ivar, int cmp, T x) {
  check_cmp(r, call, cmp);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kTest, call, ivar, sizeof(T), r.rank_);
  if (SYMMEM_UNLIKELY(r.in_device_heap(ivar))) {
    T v;
    r.device_get(call, &v, ivar, sizeof(T), r.rank_, nullptr);
    return compare(v, cmp, x);
  }
  return compare(load(ivar), cmp, x);
}

// The vector forms. `xs(i)` is the comparison value of element i; status[i] != 0 leaves
// element i out.
inline bool included(const int* status, size_t i) { return !status || status[i] == 0; }

// The page's view of a vector wait: the first elements taking part, with their values.
template <class T, class Xs>
inline void describe_vector(dfx::WaitDesc& d, uint32_t kind, const T* ivars, size_t n, const int* status, Xs xs) {
  d.vec_kind = kind;
  d.vec_base = ivars;
  d.vec_n = uint32_t(n);
  d.vec_count = 0;
  d.vec_shown = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!included(status, i)) continue;
    if (d.vec_shown < uint32_t(dfx::kWaitWords)) {
      d.vec_index[d.vec_shown] = uint32_t(i);
      d.vec_expect[d.vec_shown] = to_bits(T(xs(i)));
      ++d.vec_shown;
    }
    ++d.vec_count;
  }
}

// First element taking part (its value stands for the vector on the page).
inline size_t first_included(const int* status, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (included(status, i)) return i;
  return 0;
}

template <class T, class Xs>
inline bool test_all(Impl& r, const char* call, T* ivars, size_t n, const int* status, int cmp, Xs xs) {
  check_cmp(r, call, cmp);
  host_only(r, call, ivars);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kTest, call, ivars, n * sizeof(T), r.rank_);
  for (size_t i = 0; i < n; ++i)
    if (included(status, i) && !compare(load(ivars + i), cmp, xs(i))) return false;
  return true;
}

// Index of one satisfied element or SIZE_MAX. The scan starts after the last index this
// thread returned, so that every satisfied element is eventually reported.
template <class T, class Xs>
inline size_t test_any(Impl& r, const char* call, T* ivars, size_t n, const int* status, int cmp, Xs xs) {
  check_cmp(r, call, cmp);
  host_only(r, call, ivars);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kTest, call, ivars, n * sizeof(T), r.rank_);
  static thread_local size_t start = 0;
  for (size_t k = 0; k < n; ++k) {
    size_t i = (start + k) % n;
    if (included(status, i) && compare(load(ivars + i), cmp, xs(i))) {
      start = i + 1;
      return i;
    }
  }
  return SIZE_MAX;
}

template <class T, class Xs>
inline size_t test_some(Impl& r, const char* call, T* ivars, size_t n, size_t* indices, const int* status, int cmp,
                        Xs xs) {
  check_cmp(r, call, cmp);
  host_only(r, call, ivars);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kTest, call, ivars, n * sizeof(T), r.rank_);
  size_t m = 0;
  for (size_t i = 0; i < n; ++i)
    if (included(status, i) && compare(load(ivars + i), cmp, xs(i))) indices[m++] = i;
  return m;
}

inline bool any_included(const int* status, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (included(status, i)) return true;
  return false;
}

template <class T, class Xs>
inline void wait_until_all(Impl& r, const char* call, T* ivars, size_t n, const int* status, int cmp, Xs xs) {
  check_cmp(r, call, cmp);
  host_only(r, call, ivars);
  // One element at a time, as the standard's reference implementations do: an element
  // that has satisfied the condition is not looked at again.
  for (size_t i = 0; i < n; ++i)
    if (included(status, i))
      wait_for(r, r.rank_, [&] { return compare(load(ivars + i), cmp, xs(i)); }, call, ivars + i, 1, cmp, T(xs(i)),
               [&](dfx::WaitDesc& d) { describe_vector(d, 1, ivars, n, status, xs); });
}

template <class T, class Xs>
inline size_t wait_until_any(Impl& r, const char* call, T* ivars, size_t n, const int* status, int cmp, Xs xs) {
  check_cmp(r, call, cmp);
  host_only(r, call, ivars);
  if (!any_included(status, n)) return SIZE_MAX;
  size_t found = SIZE_MAX;
  wait_for(r, r.rank_, [&] { return (found = test_any(r, call, ivars, n, status, cmp, xs)) != SIZE_MAX; }, call, ivars,
           n, cmp, T(xs(first_included(status, n))),
           [&](dfx::WaitDesc& d) { describe_vector(d, 2, ivars, n, status, xs); });
  return found;
}

template <class T, class Xs>
inline size_t wait_until_some(Impl& r, const char* call, T* ivars, size_t n, size_t* indices, const int* status,
                              int cmp, Xs xs) {
  check_cmp(r, call, cmp);
  host_only(r, call, ivars);
  if (!any_included(status, n)) return 0;
  size_t m = 0;
  wait_for(r, r.rank_, [&] { return (m = test_some(r, call, ivars, n, indices, status, cmp, xs)) != 0; }, call, ivars,
           n, cmp, T(xs(first_included(status, n))),
           [&](dfx::WaitDesc& d) { describe_vector(d, 3, ivars, n, status, xs); });
  return m;
}

// ---------------------------------------------------------------- locks

// A ticket lock in PE 0's copy of the lock word: high 32 bits = next ticket, low 32 bits
// = ticket being served. Waiters sleep on PE 0's user_wake; a release wakes them.
void set_lock(Impl& r, const char* call, long* lock);
bool test_lock(Impl& r, const char* call, long* lock);  // true: taken
void clear_lock(Impl& r, const char* call, long* lock);

}  // namespace symmem::p2p
