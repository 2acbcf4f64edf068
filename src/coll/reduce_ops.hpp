// Reduction kernels: acc[i] = acc[i] OP in[i], one template per operation, instantiated
// per type by the C layer's table expansion (op_and<unsigned int>, op_sum<double>, ...).
// The engine only sees them as ReduceFn. Element-wise loops over independent elements
// vectorise without reassociating any sum, so results stay bit-identical everywhere.
#pragma once

#include <complex>
#include <cstddef>

namespace symmem::coll {

// The C types double _Complex / float _Complex have std::complex's layout.
template <class T>
struct Arith {
  using type = T;
};
template <>
struct Arith<double _Complex> {
  using type = std::complex<double>;
};
template <>
struct Arith<float _Complex> {
  using type = std::complex<float>;
};

#define SYMMEM_REDUCE_KERNEL(NAME, EXPR)                                  \
  template <class T0>                                                     \
  void NAME(void* acc, const void* in, size_t n) {                        \
    using T = typename Arith<T0>::type;                                   \
    T* __restrict a = static_cast<T*>(acc);                               \
    const T* __restrict b = static_cast<const T*>(in);                    \
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(EXPR);           \
  }
SYMMEM_REDUCE_KERNEL(op_and, a[i] & b[i])
SYMMEM_REDUCE_KERNEL(op_or, a[i] | b[i])
SYMMEM_REDUCE_KERNEL(op_xor, a[i] ^ b[i])
SYMMEM_REDUCE_KERNEL(op_max, b[i] > a[i] ? b[i] : a[i])
SYMMEM_REDUCE_KERNEL(op_min, b[i] < a[i] ? b[i] : a[i])
SYMMEM_REDUCE_KERNEL(op_sum, a[i] + b[i])
SYMMEM_REDUCE_KERNEL(op_prod, a[i] * b[i])
#undef SYMMEM_REDUCE_KERNEL

}  // namespace symmem::coll
