// symmem/coll_algos.hpp — the device collectives' algorithms, written once: compiled by
// nvcc for kernels (symmem/cuda_coll.cuh, BlockExec) and by the host compiler for the CI
// test that runs them over the host heap with threads (tests/device/algos_host_mp.cpp).
//
// What they are: barrier, broadcast, fcollect (all-gather), alltoall, reduce-scatter and
// all-reduce (one-shot: every PE reduces the whole vector from every peer; two-shot: PE i
// reduces chunk i, then every PE gathers the chunks) over memory every member maps (peers
// of one node). Each PE only *reads* peers' memory and writes its own (pull), so data
// never needs a flag per transfer: the syncs around a step are the only protocol.
//
// The sync protocol (per channel ch, between each pair of members): PE x keeps
// epochs[ch][y], how many syncs it did with y on ch; a sync increments it to e, stores e
// into y's pads[ch][x] (release, system scope) and waits until its own pads[ch][y] >= e
// (acquire). Thread i of the channel handles member i. The counters are pairwise, so any
// team of the same PEs shares them and teams need no slots or setup; a pad is written only
// by its one peer and only grows, and a peer can be at most one sync ahead. Every block
// barrier (sync_threads) before the signals and the release signal order the channel's
// earlier stores before the peer's acquire; the wait and the sync_threads after it order
// the peers' stores before the channel's later loads.
//
// Rules for callers: every member calls each collective with the same arguments, in the
// same order, on every channel ch < nch (each channel = one CUDA block, all its threads
// calling); a PE runs one collective at a time per channel (whatever the team; a kernel
// may use different channels concurrently); src and dest are symmetric (the same offset
// on every PE) and src is complete before the call in the calling channel or an earlier
// kernel. Each function returns when this PE's part of the result is in dest and no peer
// will read this PE's src or dest any more (a final sync), so the buffers may be reused.
// Between two collectives that split the same buffers differently (another nch or size),
// every channel of the first must have returned on this PE (a kernel boundary does it).
// World PEs must be < kMaxPes and nch <= kMaxChannels (not checked). Overlap of src and
// dest: see each function.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#ifndef SYMMEM_HD
#if defined(__CUDACC__)
#define SYMMEM_HD __host__ __device__
#else
#define SYMMEM_HD
#endif
#endif

#if defined(__CUDA_ARCH__)
#define SYMMEM_ALGO_UNROLL _Pragma("unroll")
#else
#define SYMMEM_ALGO_UNROLL
#endif

namespace symmem::algo {

enum class RedOp : int { kSum = 0, kProd, kMin, kMax };
enum class DType : int { kF32 = 0, kF16, kBF16, kI32, kI64 };

// Members are world PEs start + i * stride, i < size; me is this PE's index.
struct Team {
  int start, stride, size, me;
};
SYMMEM_HD inline int world_pe(const Team& t, int i) { return t.start + i * t.stride; }

inline constexpr int kMaxChannels = 32;
inline constexpr int kMaxPes = 256;  // world PEs the sync area can address

// One PE's sync area: pads (written by peers) then epochs (this PE's own counters).
struct SyncLayout {
  static constexpr size_t kPadsOffset = 0;
  static constexpr size_t kPadsBytes = sizeof(uint64_t) * kMaxChannels * kMaxPes;  // 64 KiB
  static constexpr size_t kEpochsOffset = kPadsOffset + kPadsBytes;
  static constexpr size_t kEpochsBytes = sizeof(uint64_t) * kMaxChannels * kMaxPes;
  static constexpr size_t kBytes = kEpochsOffset + kEpochsBytes;  // 128 KiB

  // pads[ch][q]: written by PE q on the owner's area.
  SYMMEM_HD static uint64_t* pad(char* base, int ch, int q) {
    return reinterpret_cast<uint64_t*>(base + kPadsOffset) + size_t(ch) * kMaxPes + q;
  }
  SYMMEM_HD static uint64_t* epoch(char* base, int ch, int q) {
    return reinterpret_cast<uint64_t*>(base + kEpochsOffset) + size_t(ch) * kMaxPes + q;
  }
};
// Where the sync area starts in a PE's device slot: after the WaitRecord (symmem/cuda.cuh),
// inside the library's part (DeviceHeap::kReserved, 2 MiB), zeroed when the heap is made.
inline constexpr size_t kDeviceSyncOffset = 4096;
static_assert(kDeviceSyncOffset + SyncLayout::kBytes <= (size_t(2) << 20), "sync area past the reserved part");

// One-shot reads (size - 1) * n remote bytes per PE against two-shot's 2 * (size - 1) / size
// * n, but needs two syncs instead of three. Over NVLink the extra sync (a few us) costs more
// than the extra traffic up to a few hundred KiB, where torch's symmetric-memory all-reduce
// also leaves one-shot. To be tuned on a GPU.
inline constexpr size_t kOneShotMaxBytes = 256 << 10;

// ---- element types ----

// Host storage for fp16 / bf16 (no toolkit headers on the host side): bits, with exact
// round-to-nearest-even conversions from float; NaN stays NaN (quiet).
struct f16 {
  uint16_t bits;
};
struct bf16 {
  uint16_t bits;
};

SYMMEM_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
SYMMEM_HD inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

SYMMEM_HD inline float f16_to_float(f16 h) {
  const uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    uint32_t e = 113;  // 2^-14, the subnormals' scale: normalise the mantissa
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    return bits_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

// F. Giesen's float_to_half_fast3_rtne: exact round-to-nearest-even.
SYMMEM_HD inline f16 float_to_f16(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t o;
  if (u >= (127u + 16) << 23) {  // >= 65536: Inf, or NaN
    o = u > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (u < 113u << 23) {  // subnormal or zero: let a float addition round
    const uint32_t magic = ((127u - 15) + (23 - 10) + 1) << 23;
    o = uint16_t(float_bits(bits_float(u) + bits_float(magic)) - magic);
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (uint32_t(15 - 127) << 23) + 0xfffu + odd;  // rebias, round (carries into Inf at 65520)
    o = uint16_t(u >> 13);
  }
  return f16{uint16_t(o | (sign >> 16))};
}

SYMMEM_HD inline float bf16_to_float(bf16 b) { return bits_float(uint32_t(b.bits) << 16); }
SYMMEM_HD inline bf16 float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x40u)};  // quiet NaN
  return bf16{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

// Arith<T>: the accumulator type (float for the 16-bit floats) and the conversions.
template <class T>
struct Arith {
  static_assert(std::is_same<T, float>::value || std::is_same<T, int32_t>::value || std::is_same<T, int64_t>::value,
                "symmem::algo: element types are float, f16, bf16, int32_t, int64_t");
  using Acc = T;
  SYMMEM_HD static Acc load(T v) { return v; }
  SYMMEM_HD static T store(Acc a) { return a; }
};
template <>
struct Arith<f16> {
  using Acc = float;
  SYMMEM_HD static float load(f16 v) { return f16_to_float(v); }
  SYMMEM_HD static f16 store(float a) { return float_to_f16(a); }
};
template <>
struct Arith<bf16> {
  using Acc = float;
  SYMMEM_HD static float load(bf16 v) { return bf16_to_float(v); }
  SYMMEM_HD static bf16 store(float a) { return float_to_bf16(a); }
};
#if defined(__CUDACC__)
template <>
struct Arith<__half> {
  using Acc = float;
  SYMMEM_HD static float load(__half v) { return __half2float(v); }
  SYMMEM_HD static __half store(float a) { return __float2half_rn(a); }
};
template <>
struct Arith<__nv_bfloat16> {
  using Acc = float;
  SYMMEM_HD static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  SYMMEM_HD static __nv_bfloat16 store(float a) { return __float2bfloat16_rn(a); }
};
#endif

// DType -> element type: the toolkit's types under nvcc, f16/bf16 on the host.
template <DType D>
struct DTypeTraits;
template <>
struct DTypeTraits<DType::kF32> {
  using type = float;
};
template <>
struct DTypeTraits<DType::kI32> {
  using type = int32_t;
};
template <>
struct DTypeTraits<DType::kI64> {
  using type = int64_t;
};
#if defined(__CUDACC__)
template <>
struct DTypeTraits<DType::kF16> {
  using type = __half;
};
template <>
struct DTypeTraits<DType::kBF16> {
  using type = __nv_bfloat16;
};
#else
template <>
struct DTypeTraits<DType::kF16> {
  using type = f16;
};
template <>
struct DTypeTraits<DType::kBF16> {
  using type = bf16;
};
#endif
template <DType D>
using elem_t = typename DTypeTraits<D>::type;

// Prod is for the integer types only.
template <class T, RedOp op>
inline constexpr bool kOpAllowed = op != RedOp::kProd || std::is_integral<T>::value;

// a op b; integers wrap (computed unsigned), floats in the accumulator type.
template <RedOp op, class A>
SYMMEM_HD inline A combine(A a, A b) {
  if constexpr (op == RedOp::kMin) {
    return b < a ? b : a;
  } else if constexpr (op == RedOp::kMax) {
    return a < b ? b : a;
  } else if constexpr (std::is_integral<A>::value) {
    using U = typename std::make_unsigned<A>::type;
    return op == RedOp::kSum ? A(U(a) + U(b)) : A(U(a) * U(b));
  } else {
    return op == RedOp::kSum ? a + b : a * b;
  }
}

namespace detail {

struct Range {
  size_t lo, hi;
  SYMMEM_HD size_t len() const { return hi - lo; }
};
// Part idx of `parts` contiguous parts of [0, total), each a multiple of `align` long
// (the last ones shorter or empty).
SYMMEM_HD inline Range part(size_t total, size_t parts, size_t idx, size_t align) {
  size_t per = (total + parts - 1) / parts;
  per = (per + align - 1) / align * align;
  const size_t lo = idx * per < total ? idx * per : total;
  return Range{lo, lo + per < total ? lo + per : total};
}

struct alignas(16) Bytes16 {
  unsigned char b[16];
};
SYMMEM_HD inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// 16-byte load/store at a 16-aligned address.
template <class P>
SYMMEM_HD inline P load16(const void* p) {
  static_assert(sizeof(P) == 16, "");
  P r;
#if defined(__CUDA_ARCH__)
  const uint4 u = *static_cast<const uint4*>(p);
  memcpy(&r, &u, 16);
#else
  memcpy(&r, __builtin_assume_aligned(p, 16), 16);
#endif
  return r;
}
template <class P>
SYMMEM_HD inline void store16(void* p, const P& v) {
#if defined(__CUDA_ARCH__)
  uint4 u;
  memcpy(&u, &v, 16);
  *static_cast<uint4*>(p) = u;
#else
  memcpy(__builtin_assume_aligned(p, 16), &v, 16);
#endif
}

// n bytes, threads [tid, tid + nth, ...]: 16-byte words where both ends are 16-aligned.
SYMMEM_HD inline void copy(void* dv, const void* sv, size_t n, unsigned tid, unsigned nth) {
  char* d = static_cast<char*>(dv);
  const char* s = static_cast<const char*>(sv);
  if (d == s || n == 0) return;
  size_t done = 0;
  if (aligned16(d) && aligned16(s)) {
    const size_t words = n / 16;
    for (size_t i = tid; i < words; i += nth) store16(d + 16 * i, load16<Bytes16>(s + 16 * i));
    done = words * 16;
  }
  for (size_t i = done + tid; i < n; i += nth) d[i] = s[i];
}

template <class T>
struct alignas(16) Pack {
  static constexpr int kN = int(16 / sizeof(T));
  T v[kN];
};

// Peers whose packs are loaded before they are combined: independent loads in flight.
// 4 keeps a reduction kernel under ~100 registers (sm_90: 512-thread blocks launch without
// __launch_bounds__); 8 took 132. To be tuned on a GPU.
inline constexpr int kLoadGroup = 4;

// out[k] = op over members j (in order 0..size-1) of member j's in[k], k < count; `in` is
// symmetric, out local. The threads of the channel share the elements.
template <class T, RedOp op, class X>
SYMMEM_HD void reduce_members(X& x, const Team& t, T* out, const T* in, size_t count) {
  using A = typename Arith<T>::Acc;
  constexpr int kN = Pack<T>::kN;
  const unsigned tid = x.tid(), nth = x.nthreads();
  bool packs_ok = aligned16(out);
  for (int j = 0; j < t.size && packs_ok; ++j) packs_ok = aligned16(x.peer(in, world_pe(t, j)));
  const size_t packs = packs_ok ? count / kN : 0;
  for (size_t p = tid; p < packs; p += nth) {
    A acc[kN];
    {
      const Pack<T> v0 = load16<Pack<T>>(x.peer(in, world_pe(t, 0)) + p * kN);
      SYMMEM_ALGO_UNROLL
      for (int e = 0; e < kN; ++e) acc[e] = Arith<T>::load(v0.v[e]);
    }
    for (int j0 = 1; j0 < t.size; j0 += kLoadGroup) {
      const int m = t.size - j0 < kLoadGroup ? t.size - j0 : kLoadGroup;
      Pack<T> v[kLoadGroup];
      SYMMEM_ALGO_UNROLL
      for (int k = 0; k < kLoadGroup; ++k)
        if (k < m) v[k] = load16<Pack<T>>(x.peer(in, world_pe(t, j0 + k)) + p * kN);
      SYMMEM_ALGO_UNROLL
      for (int k = 0; k < kLoadGroup; ++k) {
        if (k >= m) break;
        SYMMEM_ALGO_UNROLL
        for (int e = 0; e < kN; ++e) acc[e] = combine<op>(acc[e], Arith<T>::load(v[k].v[e]));
      }
    }
    Pack<T> o;
    SYMMEM_ALGO_UNROLL
    for (int e = 0; e < kN; ++e) o.v[e] = Arith<T>::store(acc[e]);
    store16(out + p * kN, o);
  }
  for (size_t i = packs * kN + tid; i < count; i += nth) {
    A acc = Arith<T>::load(x.peer(in, world_pe(t, 0))[i]);
    for (int j = 1; j < t.size; ++j) acc = combine<op>(acc, Arith<T>::load(x.peer(in, world_pe(t, j))[i]));
    out[i] = Arith<T>::store(acc);
  }
}

template <class X>
SYMMEM_HD void team_sync(X& x, const Team& t, int ch, bool fence) {
  x.sync_threads();  // the channel's earlier accesses are done before any signal
  const int mine = world_pe(t, t.me);
  char* base = x.sync_base(mine);
  bool fenced = !fence;
  for (int i = int(x.tid()); i < t.size; i += int(x.nthreads())) {
    if (i == t.me) continue;
    if (!fenced) {
      x.fence();
      fenced = true;
    }
    const int q = world_pe(t, i);
    uint64_t* e = SyncLayout::epoch(base, ch, q);
    *e += 1;
    x.signal_set(SyncLayout::pad(x.sync_base(q), ch, mine), *e);
  }
  for (int i = int(x.tid()); i < t.size; i += int(x.nthreads())) {
    if (i == t.me) continue;
    const int q = world_pe(t, i);
    x.wait_ge(SyncLayout::pad(base, ch, q), *SyncLayout::epoch(base, ch, q), q);
  }
  x.sync_threads();  // the peers' stores are visible to every thread of the channel
}

}  // namespace detail

// ---- the collectives (see the top of this file for who calls and when) ----

// Every earlier store of this channel is visible to the members (system-scope fence), and
// every member has reached the barrier on channel ch.
template <class X>
SYMMEM_HD void barrier(X& x, const Team& t, int ch) {
  detail::team_sync(x, t, ch, true);
}
// The barrier without the leading fence(). The signals are release stores, which order the
// channel's earlier plain stores anyway, so for data written with loads and stores it gives
// the same guarantee; kept as NVSHMEM's team_sync for callers that name it.
template <class X>
SYMMEM_HD void sync(X& x, const Team& t, int ch) {
  detail::team_sync(x, t, ch, false);
}

// dest on every member (root included) = root's src, nbytes. root is a team index.
// src == dest is allowed (on the root nothing moves); other overlap is not.
template <class X>
SYMMEM_HD void broadcast(X& x, const Team& t, int ch, int nch, void* dest, const void* src, size_t nbytes, int root) {
  detail::team_sync(x, t, ch, false);  // root's src is complete
  const detail::Range r = detail::part(nbytes, size_t(nch), size_t(ch), 16);
  const char* from = x.peer(static_cast<const char*>(src), world_pe(t, root));
  detail::copy(static_cast<char*>(dest) + r.lo, from + r.lo, r.len(), x.tid(), x.nthreads());
  detail::team_sync(x, t, ch, false);  // nobody reads root's src any more
}

// dest[i * nbytes ..] = member i's src (nbytes each). src and dest must not overlap.
template <class X>
SYMMEM_HD void fcollect(X& x, const Team& t, int ch, int nch, void* dest, const void* src, size_t nbytes) {
  detail::team_sync(x, t, ch, false);
  const detail::Range r = detail::part(nbytes, size_t(nch), size_t(ch), 16);
  for (int k = 0; k < t.size; ++k) {
    const int j = (t.me + k) % t.size;  // start at a different peer on each PE
    const char* from = x.peer(static_cast<const char*>(src), world_pe(t, j));
    detail::copy(static_cast<char*>(dest) + size_t(j) * nbytes + r.lo, from + r.lo, r.len(), x.tid(), x.nthreads());
  }
  detail::team_sync(x, t, ch, false);
}

// Block j of dest on member i = block i of member j's src (nbytes per block). src and dest
// must not overlap.
template <class X>
SYMMEM_HD void alltoall(X& x, const Team& t, int ch, int nch, void* dest, const void* src, size_t nbytes) {
  detail::team_sync(x, t, ch, false);
  const detail::Range r = detail::part(nbytes, size_t(nch), size_t(ch), 16);
  for (int k = 0; k < t.size; ++k) {
    const int j = (t.me + k) % t.size;
    const char* from = x.peer(static_cast<const char*>(src), world_pe(t, j)) + size_t(t.me) * nbytes;
    detail::copy(static_cast<char*>(dest) + size_t(j) * nbytes + r.lo, from + r.lo, r.len(), x.tid(), x.nthreads());
  }
  detail::team_sync(x, t, ch, false);
}

// Member i's dest[0, n) = op over members j (in team order) of member j's src[i*n, i*n + n).
// src holds size * n elements. src and dest must not overlap.
template <class T, RedOp op, class X>
SYMMEM_HD void reduce_scatter(X& x, const Team& t, int ch, int nch, T* dest, const T* src, size_t n) {
  static_assert(kOpAllowed<T, op>, "symmem::algo: prod is for integer types only");
  detail::team_sync(x, t, ch, false);
  const detail::Range r = detail::part(n, size_t(nch), size_t(ch), size_t(detail::Pack<T>::kN));
  detail::reduce_members<T, op>(x, t, dest + r.lo, src + size_t(t.me) * n + r.lo, r.len());
  detail::team_sync(x, t, ch, false);
}

// dest[0, n) = op over members (in team order) of src[0, n): every PE reads every peer's
// whole vector. src and dest must not overlap (allreduce() takes two-shot for src == dest).
template <class T, RedOp op, class X>
SYMMEM_HD void allreduce_one_shot(X& x, const Team& t, int ch, int nch, T* dest, const T* src, size_t n) {
  static_assert(kOpAllowed<T, op>, "symmem::algo: prod is for integer types only");
  detail::team_sync(x, t, ch, false);
  const detail::Range r = detail::part(n, size_t(nch), size_t(ch), size_t(detail::Pack<T>::kN));
  detail::reduce_members<T, op>(x, t, dest + r.lo, src + r.lo, r.len());
  detail::team_sync(x, t, ch, false);
}

// The same result (bit for bit: the same order of reduction) in two steps: member i
// reduces chunk i (about n / size elements, pack-aligned; the last ones may be short or
// empty) into its own dest, then every member copies chunk j from member j's dest.
// src == dest is allowed: in step one member i writes only its chunk i, which the others
// do not read (each reads its own chunk); step two writes the other chunks only after the
// middle sync, when every member's step-one reads are done.
template <class T, RedOp op, class X>
SYMMEM_HD void allreduce_two_shot(X& x, const Team& t, int ch, int nch, T* dest, const T* src, size_t n) {
  static_assert(kOpAllowed<T, op>, "symmem::algo: prod is for integer types only");
  constexpr size_t kN = size_t(detail::Pack<T>::kN);
  detail::team_sync(x, t, ch, false);
  {
    const detail::Range c = detail::part(n, size_t(t.size), size_t(t.me), kN);
    const detail::Range r = detail::part(c.len(), size_t(nch), size_t(ch), kN);
    detail::reduce_members<T, op>(x, t, dest + c.lo + r.lo, src + c.lo + r.lo, r.len());
  }
  detail::team_sync(x, t, ch, false);  // every chunk is reduced (on this channel's slices)
  for (int k = 1; k < t.size; ++k) {
    const int j = (t.me + k) % t.size;
    const detail::Range c = detail::part(n, size_t(t.size), size_t(j), kN);
    const detail::Range r = detail::part(c.len(), size_t(nch), size_t(ch), kN);
    const T* from = x.peer(static_cast<const T*>(dest), world_pe(t, j)) + c.lo + r.lo;
    detail::copy(dest + c.lo + r.lo, from, r.len() * sizeof(T), x.tid(), x.nthreads());
  }
  detail::team_sync(x, t, ch, false);  // nobody reads this PE's chunk any more
}

// All-reduce, one-shot up to kOneShotMaxBytes and when src != dest, two-shot otherwise
// (the same choice on every PE: n and the symmetric addresses agree). src == dest is
// allowed; other overlap is not.
template <class T, RedOp op, class X>
SYMMEM_HD void allreduce(X& x, const Team& t, int ch, int nch, T* dest, const T* src, size_t n) {
  if (n * sizeof(T) <= kOneShotMaxBytes && static_cast<const T*>(dest) != src)
    allreduce_one_shot<T, op>(x, t, ch, nch, dest, src, n);
  else
    allreduce_two_shot<T, op>(x, t, ch, nch, dest, src, n);
}

}  // namespace symmem::algo
