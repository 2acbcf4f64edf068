// Reduction kernels, one pair per operation, instantiated per type by the C layer's table
// expansion (&op_sum<double>, &op_and<unsigned int>, ...): the engine only sees a ReduceOp.
//   acc:     acc[i] = acc[i] OP in[i]        (folds one more operand into a result)
//   combine: out[i] = a[i] OP b[i]           (the first two operands, without first copying
//                                             one of them: a whole pass saved in large
//                                             reductions; out overlaps neither input)
// Element-wise loops over independent elements vectorise without reassociating any sum, so
// results stay bit-identical everywhere (combine(a, b) computes exactly acc(copy of a, b)).
#pragma once

#include <complex>
#include <cstddef>

#include "symmem/typed.hpp"

namespace symmem::coll {

struct ReduceOp {
  void (*acc)(void* acc, const void* in, size_t n);
  void (*combine)(void* out, const void* a, const void* b, size_t n);
};

// The C types double _Complex / float _Complex have std::complex's layout: the kernels
// compute on the C++ type (the public C++ API's mapping).
template <class T>
using Arith = symmem::detail::CxxOf<T>;

#define SYMMEM_REDUCE_KERNEL(NAME, EXPR)                                          \
  template <class T0>                                                             \
  void NAME##_acc(void* acc, const void* in, size_t n) {                          \
    using T = typename Arith<T0>::type;                                           \
    T* __restrict a = static_cast<T*>(acc);                                       \
    const T* __restrict b = static_cast<const T*>(in);                            \
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(EXPR);                   \
  }                                                                               \
  template <class T0>                                                             \
  void NAME##_combine(void* out, const void* x, const void* y, size_t n) {        \
    using T = typename Arith<T0>::type;                                           \
    T* __restrict o = static_cast<T*>(out);                                       \
    const T* __restrict a = static_cast<const T*>(x);                             \
    const T* __restrict b = static_cast<const T*>(y);                             \
    for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(EXPR);                   \
  }                                                                               \
  template <class T0>                                                             \
  inline constexpr ReduceOp NAME{&NAME##_acc<T0>, &NAME##_combine<T0>};
SYMMEM_REDUCE_KERNEL(op_and, a[i] & b[i])
SYMMEM_REDUCE_KERNEL(op_or, a[i] | b[i])
SYMMEM_REDUCE_KERNEL(op_xor, a[i] ^ b[i])
SYMMEM_REDUCE_KERNEL(op_max, b[i] > a[i] ? b[i] : a[i])
SYMMEM_REDUCE_KERNEL(op_min, b[i] < a[i] ? b[i] : a[i])
SYMMEM_REDUCE_KERNEL(op_sum, a[i] + b[i])
SYMMEM_REDUCE_KERNEL(op_prod, a[i] * b[i])
#undef SYMMEM_REDUCE_KERNEL

}  // namespace symmem::coll
