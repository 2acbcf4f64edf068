// Reduction kernels, one line per operation, instantiated per type by the C layer's table
// expansion (&op_sum<double>, &op_and<unsigned int>, ...): the engine only sees a ReduceOp,
// which holds one set of kernels per instruction set (Isa) and is indexed once per call.
//   acc:            acc[i] = acc[i] OP in[i]   (folds one more operand into a result)
//   combine:        out[i] = a[i] OP b[i]      (the first two operands, without first
//                                               copying one of them: a whole pass saved in
//                                               large reductions; out overlaps no input)
//   combine_stream: out_k[i] = a[i] OP b[i] for every k < nout, with non-temporal stores
//                   (the last step of a large reduction, stored straight into every
//                   member's dest: no pass through an L1 buffer, and the loads of the next
//                   line overlap the stores of this one). Every out_k is 64-byte aligned,
//                   n * sizeof(T) a multiple of 64; the caller fences. An out may be an
//                   input (in place): each 64-byte line is read before it is written.
// Every kernel applies OP element by element (vectorised without reassociating anything),
// so every instruction set and every kernel gives the same bits: combine(a, b) computes
// exactly acc(copy of a, b), and the AVX2 kernels exactly the baseline (SSE2) ones.
#pragma once

#include <complex>
#include <cstddef>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "common/cpu.hpp"
#include "symmem/typed.hpp"

namespace symmem::coll {

struct ReduceKernels {
  void (*acc)(void* acc, const void* in, size_t n);
  void (*combine)(void* out, const void* a, const void* b, size_t n);
  void (*combine_stream)(void* const* outs, int nout, const void* a, const void* b, size_t n);
};

struct ReduceOp {
  ReduceKernels isa[kIsaCount];
  // The same in every process: op << 16 | kind << 8 | element size (reduce_op_id below);
  // the DFX check compares it across PEs and names it in reports (dfx::redop_name).
  uint32_t id;
};

// kind: 0 unsigned, 1 signed, 2 floating, 3 complex.
template <class T>
constexpr uint32_t reduce_op_id(uint32_t op) {
  constexpr uint32_t kind = std::is_floating_point_v<T> ? 2 : std::is_signed_v<T> ? 1 : std::is_integral_v<T> ? 0 : 3;
  return op << 16 | kind << 8 | uint32_t(sizeof(T));
}

// The C types double _Complex / float _Complex have std::complex's layout: the kernels
// compute on the C++ type (the public C++ API's mapping).
template <class T>
using Arith = symmem::detail::CxxOf<T>;

namespace kernel {

// The loops, written once; each ISA's wrapper below inlines them into a function compiled
// for that ISA. The non-temporal stores are SSE2's (vmovntdq under AVX2): the arithmetic
// is what the wider vectors speed up, the stores are bound by memory either way.
template <class T, class Op>
[[gnu::always_inline]] inline void acc(void* acc, const void* in, size_t n) {
  T* __restrict a = static_cast<T*>(acc);
  const T* __restrict b = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = Op::apply(a[i], b[i]);
}
template <class T, class Op>
[[gnu::always_inline]] inline void combine(void* out, const void* x, const void* y, size_t n) {
  T* __restrict o = static_cast<T*>(out);
  const T* __restrict a = static_cast<const T*>(x);
  const T* __restrict b = static_cast<const T*>(y);
  for (size_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], b[i]);
}
template <class T, class Op>
[[gnu::always_inline]] inline void combine_stream(void* const* outs, int nout, const void* x, const void* y,
                                                  size_t n) {
  constexpr size_t kLine = 64 / sizeof(T);
  static_assert(64 % sizeof(T) == 0);
  // no __restrict: in place, an out is one of the inputs (each line is read before it is
  // written, and the stores may alias anything)
  const T* a = static_cast<const T*>(x);
  const T* b = static_cast<const T*>(y);
  for (size_t i = 0; i < n; i += kLine) {
    alignas(64) T r[kLine];
    for (size_t j = 0; j < kLine; ++j) r[j] = Op::apply(a[i + j], b[i + j]);
#if defined(__x86_64__)
    const __m128i* v = reinterpret_cast<const __m128i*>(r);
    const __m128i v0 = _mm_load_si128(v), v1 = _mm_load_si128(v + 1);
    const __m128i v2 = _mm_load_si128(v + 2), v3 = _mm_load_si128(v + 3);
    for (int k = 0; k < nout; ++k) {
      __m128i* d = reinterpret_cast<__m128i*>(static_cast<char*>(outs[k]) + i * sizeof(T));
      _mm_stream_si128(d, v0);
      _mm_stream_si128(d + 1, v1);
      _mm_stream_si128(d + 2, v2);
      _mm_stream_si128(d + 3, v3);
    }
#else
    for (int k = 0; k < nout; ++k) std::memcpy(static_cast<char*>(outs[k]) + i * sizeof(T), r, 64);
#endif
  }
}

template <class T, class Op>
void acc_base(void* acc, const void* in, size_t n) {
  kernel::acc<T, Op>(acc, in, n);
}
template <class T, class Op>
void combine_base(void* out, const void* a, const void* b, size_t n) {
  kernel::combine<T, Op>(out, a, b, n);
}
template <class T, class Op>
void combine_stream_base(void* const* outs, int nout, const void* a, const void* b, size_t n) {
  kernel::combine_stream<T, Op>(outs, nout, a, b, n);
}

#if defined(__x86_64__)
#define SYMMEM_AVX2 [[gnu::target("avx2")]]
#else
#define SYMMEM_AVX2
#endif
// Elsewhere than x86-64 these are the baseline again (never selected there).
template <class T, class Op>
SYMMEM_AVX2 void acc_avx2(void* acc, const void* in, size_t n) {
  kernel::acc<T, Op>(acc, in, n);
}
template <class T, class Op>
SYMMEM_AVX2 void combine_avx2(void* out, const void* a, const void* b, size_t n) {
  kernel::combine<T, Op>(out, a, b, n);
}
template <class T, class Op>
SYMMEM_AVX2 void combine_stream_avx2(void* const* outs, int nout, const void* a, const void* b, size_t n) {
  kernel::combine_stream<T, Op>(outs, nout, a, b, n);
}
#undef SYMMEM_AVX2

template <class T, class Op>
inline constexpr ReduceOp kernels{{{&acc_base<T, Op>, &combine_base<T, Op>, &combine_stream_base<T, Op>},
                                   {&acc_avx2<T, Op>, &combine_avx2<T, Op>, &combine_stream_avx2<T, Op>}},
                                  reduce_op_id<T>(Op::kId)};

}  // namespace kernel

#define SYMMEM_REDUCE_OP(NAME, ID, EXPR)                          \
  struct NAME##_fn {                                              \
    static constexpr uint32_t kId = ID;                           \
    template <class T>                                            \
    [[gnu::always_inline]] static T apply(T a, T b) {             \
      return static_cast<T>(EXPR);                                \
    }                                                             \
  };                                                              \
  template <class T0>                                             \
  inline constexpr const ReduceOp& NAME = kernel::kernels<typename Arith<T0>::type, NAME##_fn>;
SYMMEM_REDUCE_OP(op_and, 1, a & b)
SYMMEM_REDUCE_OP(op_or, 2, a | b)
SYMMEM_REDUCE_OP(op_xor, 3, a ^ b)
SYMMEM_REDUCE_OP(op_max, 4, b > a ? b : a)
SYMMEM_REDUCE_OP(op_min, 5, b < a ? b : a)
SYMMEM_REDUCE_OP(op_sum, 6, a + b)
SYMMEM_REDUCE_OP(op_prod, 7, a * b)
#undef SYMMEM_REDUCE_OP

}  // namespace symmem::coll
