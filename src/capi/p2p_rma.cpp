// The C API's context, strided, interleaved-block and signal forms of RMA, stamped from the
// type table.
#include "capi/p2p_common.hpp"

using symmem::p2p::ibget;
using symmem::p2p::ibput;
using symmem::p2p::iget;
using symmem::p2p::iput;
using symmem::p2p::put_signal;

extern "C" {

// The default context: a fixed object, recognised by its address (see resolve()).
symmem_ctx_s symmem_ctx_default;

SYMMEM_CFN(void, shmem_ctx_putmem, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),
           r.put(call, d, s, n, pe))
SYMMEM_CFN(void, shmem_ctx_getmem, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),
           r.get(call, d, s, n, pe))
SYMMEM_CFN(void, shmem_ctx_putmem_nbi, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),
           r.put_nbi(call, d, s, n, pe))
SYMMEM_CFN(void, shmem_ctx_getmem_nbi, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),
           r.get_nbi(call, d, s, n, pe))

#define SIG uint64_t *sig, uint64_t sv, int op, int pe
SYMMEM_FN(void, shmem_putmem_signal, (void* d, const void* s, size_t n, SIG), put_signal(r, call, d, s, n, sig, sv, op, pe))
SYMMEM_FN(void, shmem_putmem_signal_nbi, (void* d, const void* s, size_t n, SIG),
          put_signal(r, call, d, s, n, sig, sv, op, pe))
SYMMEM_CFN(void, shmem_ctx_putmem_signal, (shmem_ctx_t ctx, void* d, const void* s, size_t n, SIG),
           put_signal(r, call, d, s, n, sig, sv, op, pe))
SYMMEM_CFN(void, shmem_ctx_putmem_signal_nbi, (shmem_ctx_t ctx, void* d, const void* s, size_t n, SIG),
           put_signal(r, call, d, s, n, sig, sv, op, pe))

#define STRIDED ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe
#define SYMMEM_DEF_CTX_RMA(T, N)                                                                                    \
  SYMMEM_CFN(void, shmem_ctx_##N##_put, (shmem_ctx_t ctx, T * d, const T* s, size_t n, int pe),                    \
             r.put(call, d, s, n * sizeof(T), pe))                                                                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_get, (shmem_ctx_t ctx, T * d, const T* s, size_t n, int pe),                    \
             r.get(call, d, s, n * sizeof(T), pe))                                                                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_put_nbi, (shmem_ctx_t ctx, T * d, const T* s, size_t n, int pe),                \
             r.put_nbi(call, d, s, n * sizeof(T), pe))                                                                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_get_nbi, (shmem_ctx_t ctx, T * d, const T* s, size_t n, int pe),                \
             r.get_nbi(call, d, s, n * sizeof(T), pe))                                                                  \
  SYMMEM_CFN(void, shmem_ctx_##N##_p, (shmem_ctx_t ctx, T * d, T v, int pe), r.p(call, d, v, pe))                   \
  SYMMEM_CFN(T, shmem_ctx_##N##_g, (shmem_ctx_t ctx, const T* s, int pe), r.g(call, s, pe))                         \
  SYMMEM_FN(void, shmem_##N##_iput, (T * d, const T* s, STRIDED), iput<sizeof(T)>(r, call, d, s, dst, sst, n, pe)) \
  SYMMEM_FN(void, shmem_##N##_iget, (T * d, const T* s, STRIDED), iget<sizeof(T)>(r, call, d, s, dst, sst, n, pe)) \
  SYMMEM_CFN(void, shmem_ctx_##N##_iput, (shmem_ctx_t ctx, T * d, const T* s, STRIDED),                            \
             iput<sizeof(T)>(r, call, d, s, dst, sst, n, pe))                                                       \
  SYMMEM_CFN(void, shmem_ctx_##N##_iget, (shmem_ctx_t ctx, T * d, const T* s, STRIDED),                            \
             iget<sizeof(T)>(r, call, d, s, dst, sst, n, pe))                                                       \
  SYMMEM_FN(void, shmem_##N##_put_signal, (T * d, const T* s, size_t n, SIG),                                       \
            put_signal(r, call, d, s, n * sizeof(T), sig, sv, op, pe))                                              \
  SYMMEM_FN(void, shmem_##N##_put_signal_nbi, (T * d, const T* s, size_t n, SIG),                                   \
            put_signal(r, call, d, s, n * sizeof(T), sig, sv, op, pe))                                              \
  SYMMEM_CFN(void, shmem_ctx_##N##_put_signal, (shmem_ctx_t ctx, T * d, const T* s, size_t n, SIG),                \
             put_signal(r, call, d, s, n * sizeof(T), sig, sv, op, pe))                                             \
  SYMMEM_CFN(void, shmem_ctx_##N##_put_signal_nbi, (shmem_ctx_t ctx, T * d, const T* s, size_t n, SIG),            \
             put_signal(r, call, d, s, n * sizeof(T), sig, sv, op, pe))
SHMEM_RMA_TYPES(SYMMEM_DEF_CTX_RMA)
#undef SYMMEM_DEF_CTX_RMA

#define SYMMEM_DEF_CTX_SIZED(BITS, BYTES)                                                                           \
  SYMMEM_CFN(void, shmem_ctx_put##BITS, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),               \
             r.put(call, d, s, n * BYTES, pe))                                                                      \
  SYMMEM_CFN(void, shmem_ctx_get##BITS, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),               \
             r.get(call, d, s, n * BYTES, pe))                                                                      \
  SYMMEM_CFN(void, shmem_ctx_put##BITS##_nbi, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),         \
             r.put_nbi(call, d, s, n * BYTES, pe))                                                                      \
  SYMMEM_CFN(void, shmem_ctx_get##BITS##_nbi, (shmem_ctx_t ctx, void* d, const void* s, size_t n, int pe),         \
             r.get_nbi(call, d, s, n * BYTES, pe))                                                                      \
  SYMMEM_FN(void, shmem_iput##BITS, (void* d, const void* s, STRIDED), iput<BYTES>(r, call, d, s, dst, sst, n, pe)) \
  SYMMEM_FN(void, shmem_iget##BITS, (void* d, const void* s, STRIDED), iget<BYTES>(r, call, d, s, dst, sst, n, pe)) \
  SYMMEM_CFN(void, shmem_ctx_iput##BITS, (shmem_ctx_t ctx, void* d, const void* s, STRIDED),                       \
             iput<BYTES>(r, call, d, s, dst, sst, n, pe))                                                           \
  SYMMEM_CFN(void, shmem_ctx_iget##BITS, (shmem_ctx_t ctx, void* d, const void* s, STRIDED),                       \
             iget<BYTES>(r, call, d, s, dst, sst, n, pe))                                                           \
  SYMMEM_FN(void, shmem_put##BITS##_signal, (void* d, const void* s, size_t n, SIG),                                \
            put_signal(r, call, d, s, n * BYTES, sig, sv, op, pe))                                                  \
  SYMMEM_FN(void, shmem_put##BITS##_signal_nbi, (void* d, const void* s, size_t n, SIG),                            \
            put_signal(r, call, d, s, n * BYTES, sig, sv, op, pe))                                                  \
  SYMMEM_CFN(void, shmem_ctx_put##BITS##_signal, (shmem_ctx_t ctx, void* d, const void* s, size_t n, SIG),         \
             put_signal(r, call, d, s, n * BYTES, sig, sv, op, pe))                                                 \
  SYMMEM_CFN(void, shmem_ctx_put##BITS##_signal_nbi, (shmem_ctx_t ctx, void* d, const void* s, size_t n, SIG),     \
             put_signal(r, call, d, s, n * BYTES, sig, sv, op, pe))
SHMEM_RMA_SIZES(SYMMEM_DEF_CTX_SIZED)
#undef SYMMEM_DEF_CTX_SIZED

#define BLOCKS ptrdiff_t dst, ptrdiff_t sst, size_t bs, size_t nb, int pe
#define SYMMEM_DEF_IB(T, N)                                                                                   \
  SYMMEM_FN(void, shmem_##N##_ibput, (T * d, const T* s, BLOCKS), ibput<sizeof(T)>(r, call, d, s, dst, sst, bs, nb, pe)) \
  SYMMEM_FN(void, shmem_##N##_ibget, (T * d, const T* s, BLOCKS), ibget<sizeof(T)>(r, call, d, s, dst, sst, bs, nb, pe)) \
  SYMMEM_CFN(void, shmem_ctx_##N##_ibput, (shmem_ctx_t ctx, T * d, const T* s, BLOCKS),                      \
             ibput<sizeof(T)>(r, call, d, s, dst, sst, bs, nb, pe))                                           \
  SYMMEM_CFN(void, shmem_ctx_##N##_ibget, (shmem_ctx_t ctx, T * d, const T* s, BLOCKS),                      \
             ibget<sizeof(T)>(r, call, d, s, dst, sst, bs, nb, pe))
SHMEM_RMA_TYPES(SYMMEM_DEF_IB)
#undef SYMMEM_DEF_IB
#define SYMMEM_DEF_IB_SIZED(BITS, BYTES)                                                                      \
  SYMMEM_FN(void, shmem_ibput##BITS, (void* d, const void* s, BLOCKS), ibput<BYTES>(r, call, d, s, dst, sst, bs, nb, pe)) \
  SYMMEM_FN(void, shmem_ibget##BITS, (void* d, const void* s, BLOCKS), ibget<BYTES>(r, call, d, s, dst, sst, bs, nb, pe)) \
  SYMMEM_CFN(void, shmem_ctx_ibput##BITS, (shmem_ctx_t ctx, void* d, const void* s, BLOCKS),                 \
             ibput<BYTES>(r, call, d, s, dst, sst, bs, nb, pe))                                               \
  SYMMEM_CFN(void, shmem_ctx_ibget##BITS, (shmem_ctx_t ctx, void* d, const void* s, BLOCKS),                 \
             ibget<BYTES>(r, call, d, s, dst, sst, bs, nb, pe))
SHMEM_RMA_SIZES(SYMMEM_DEF_IB_SIZED)
#undef SYMMEM_DEF_IB_SIZED

}  // extern "C"
