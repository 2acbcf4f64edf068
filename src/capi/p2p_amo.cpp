// The C API's atomics, stamped from the AMO type tables. Semantics: runtime/p2p.hpp.
#include "capi/p2p_common.hpp"

namespace {
using namespace symmem::p2p;
// The fetching _nbi forms complete before they return on the shm route; the value is
// stored into `fetch` at once.
template <class T>
inline void store_fetched(T* fetch, T v) { *fetch = v; }
}  // namespace

extern "C" {

#define SYMMEM_DEF_AMO_EXT(T, N)                                                                              \
  SYMMEM_FN(T, shmem_##N##_atomic_fetch, (const T* s, int pe), atomic_fetch(r, call, s, pe))                  \
  SYMMEM_CFN(T, shmem_ctx_##N##_atomic_fetch, (shmem_ctx_t ctx, const T* s, int pe), atomic_fetch(r, call, s, pe)) \
  SYMMEM_FN(void, shmem_##N##_atomic_set, (T * d, T v, int pe), atomic_set(r, call, d, v, pe))                 \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_set, (shmem_ctx_t ctx, T * d, T v, int pe), atomic_set(r, call, d, v, pe)) \
  SYMMEM_FN(T, shmem_##N##_atomic_swap, (T * d, T v, int pe), atomic_swap(r, call, d, v, pe))                  \
  SYMMEM_CFN(T, shmem_ctx_##N##_atomic_swap, (shmem_ctx_t ctx, T * d, T v, int pe), atomic_swap(r, call, d, v, pe)) \
  SYMMEM_FN(void, shmem_##N##_atomic_fetch_nbi, (T * f, const T* s, int pe),                                   \
            store_fetched(f, atomic_fetch(r, call, s, pe)))                                                    \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_fetch_nbi, (shmem_ctx_t ctx, T * f, const T* s, int pe),             \
             store_fetched(f, atomic_fetch(r, call, s, pe)))                                                   \
  SYMMEM_FN(void, shmem_##N##_atomic_swap_nbi, (T * f, T * d, T v, int pe),                                    \
            store_fetched(f, atomic_swap(r, call, d, v, pe)))                                                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_swap_nbi, (shmem_ctx_t ctx, T * f, T * d, T v, int pe),              \
             store_fetched(f, atomic_swap(r, call, d, v, pe)))
SHMEM_AMO_EXT_TYPES(SYMMEM_DEF_AMO_EXT)
#undef SYMMEM_DEF_AMO_EXT

#define ADD atomic_fetch_op<Rmw::kAdd>
#define POST_ADD atomic_post<Rmw::kAdd>
#define SYMMEM_DEF_AMO_STD(T, N)                                                                               \
  SYMMEM_FN(T, shmem_##N##_atomic_compare_swap, (T * d, T c, T v, int pe), atomic_compare_swap(r, call, d, c, v, pe)) \
  SYMMEM_CFN(T, shmem_ctx_##N##_atomic_compare_swap, (shmem_ctx_t ctx, T * d, T c, T v, int pe),               \
             atomic_compare_swap(r, call, d, c, v, pe))                                                        \
  SYMMEM_FN(T, shmem_##N##_atomic_fetch_inc, (T * d, int pe), ADD(r, call, d, static_cast<T>(1), pe))                       \
  SYMMEM_CFN(T, shmem_ctx_##N##_atomic_fetch_inc, (shmem_ctx_t ctx, T * d, int pe), ADD(r, call, d, static_cast<T>(1), pe)) \
  SYMMEM_FN(void, shmem_##N##_atomic_inc, (T * d, int pe), POST_ADD(r, call, d, static_cast<T>(1), pe))                    \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_inc, (shmem_ctx_t ctx, T * d, int pe), POST_ADD(r, call, d, static_cast<T>(1), pe)) \
  SYMMEM_FN(T, shmem_##N##_atomic_fetch_add, (T * d, T v, int pe), ADD(r, call, d, v, pe))                     \
  SYMMEM_CFN(T, shmem_ctx_##N##_atomic_fetch_add, (shmem_ctx_t ctx, T * d, T v, int pe), ADD(r, call, d, v, pe)) \
  SYMMEM_FN(void, shmem_##N##_atomic_add, (T * d, T v, int pe), POST_ADD(r, call, d, v, pe))                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_add, (shmem_ctx_t ctx, T * d, T v, int pe),                          \
             POST_ADD(r, call, d, v, pe))                                                                     \
  SYMMEM_FN(void, shmem_##N##_atomic_compare_swap_nbi, (T * f, T * d, T c, T v, int pe),                       \
            store_fetched(f, atomic_compare_swap(r, call, d, c, v, pe)))                                       \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_compare_swap_nbi, (shmem_ctx_t ctx, T * f, T * d, T c, T v, int pe), \
             store_fetched(f, atomic_compare_swap(r, call, d, c, v, pe)))                                      \
  SYMMEM_FN(void, shmem_##N##_atomic_fetch_inc_nbi, (T * f, T * d, int pe),                                    \
            store_fetched(f, ADD(r, call, d, static_cast<T>(1), pe)))                                                       \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_fetch_inc_nbi, (shmem_ctx_t ctx, T * f, T * d, int pe),              \
             store_fetched(f, ADD(r, call, d, static_cast<T>(1), pe)))                                                      \
  SYMMEM_FN(void, shmem_##N##_atomic_fetch_add_nbi, (T * f, T * d, T v, int pe),                               \
            store_fetched(f, ADD(r, call, d, v, pe)))                                                          \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_fetch_add_nbi, (shmem_ctx_t ctx, T * f, T * d, T v, int pe),         \
             store_fetched(f, ADD(r, call, d, v, pe)))
SHMEM_AMO_STD_TYPES(SYMMEM_DEF_AMO_STD)
#undef SYMMEM_DEF_AMO_STD

#define SYMMEM_DEF_AMO_BIT_OP(T, N, OP, RMW)                                                                 \
  SYMMEM_FN(void, shmem_##N##_atomic_##OP, (T * d, T v, int pe),                                             \
            atomic_post<Rmw::RMW>(r, call, d, v, pe))                                              \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_##OP, (shmem_ctx_t ctx, T * d, T v, int pe),                       \
             atomic_post<Rmw::RMW>(r, call, d, v, pe))                                             \
  SYMMEM_FN(T, shmem_##N##_atomic_fetch_##OP, (T * d, T v, int pe), atomic_fetch_op<Rmw::RMW>(r, call, d, v, pe)) \
  SYMMEM_CFN(T, shmem_ctx_##N##_atomic_fetch_##OP, (shmem_ctx_t ctx, T * d, T v, int pe),                    \
             atomic_fetch_op<Rmw::RMW>(r, call, d, v, pe))                                                   \
  SYMMEM_FN(void, shmem_##N##_atomic_fetch_##OP##_nbi, (T * f, T * d, T v, int pe),                          \
            store_fetched(f, atomic_fetch_op<Rmw::RMW>(r, call, d, v, pe)))                                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_atomic_fetch_##OP##_nbi, (shmem_ctx_t ctx, T * f, T * d, T v, int pe),    \
             store_fetched(f, atomic_fetch_op<Rmw::RMW>(r, call, d, v, pe)))
#define SYMMEM_DEF_AMO_BIT(T, N) \
  SYMMEM_DEF_AMO_BIT_OP(T, N, and, kAnd) SYMMEM_DEF_AMO_BIT_OP(T, N, or, kOr) SYMMEM_DEF_AMO_BIT_OP(T, N, xor, kXor)
SHMEM_AMO_BITWISE_TYPES(SYMMEM_DEF_AMO_BIT)
#undef SYMMEM_DEF_AMO_BIT
#undef SYMMEM_DEF_AMO_BIT_OP

// Deprecated names.
#define SYMMEM_DEF_AMO_DEPR_EXT(T, N)                                                        \
  SYMMEM_FN(T, shmem_##N##_fetch, (const T* s, int pe), atomic_fetch(r, call, s, pe))        \
  SYMMEM_FN(void, shmem_##N##_set, (T * d, T v, int pe), atomic_set(r, call, d, v, pe))      \
  SYMMEM_FN(T, shmem_##N##_swap, (T * d, T v, int pe), atomic_swap(r, call, d, v, pe))
SHMEM_AMO_DEPR_EXT_TYPES(SYMMEM_DEF_AMO_DEPR_EXT)
#undef SYMMEM_DEF_AMO_DEPR_EXT
#define SYMMEM_DEF_AMO_DEPR(T, N)                                                                     \
  SYMMEM_FN(T, shmem_##N##_cswap, (T * d, T c, T v, int pe), atomic_compare_swap(r, call, d, c, v, pe)) \
  SYMMEM_FN(T, shmem_##N##_finc, (T * d, int pe), ADD(r, call, d, static_cast<T>(1), pe))                          \
  SYMMEM_FN(void, shmem_##N##_inc, (T * d, int pe), POST_ADD(r, call, d, static_cast<T>(1), pe))                  \
  SYMMEM_FN(T, shmem_##N##_fadd, (T * d, T v, int pe), ADD(r, call, d, v, pe))                        \
  SYMMEM_FN(void, shmem_##N##_add, (T * d, T v, int pe), POST_ADD(r, call, d, v, pe))
SHMEM_AMO_DEPR_TYPES(SYMMEM_DEF_AMO_DEPR)
#undef SYMMEM_DEF_AMO_DEPR

}  // extern "C"
