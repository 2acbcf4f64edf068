/* symmem/shmemx_sos.h — Sandia OpenSHMEM's shmemx_ spellings of routines that OpenSHMEM
 * 1.6 later standardised; included by shmemx.h, so that programs written for SOS compile
 * and link unchanged. Each shmemx_X is shmem_X under its older name (same arguments, same
 * semantics: see the shmem_X declaration):
 *   shmemx_TYPENAME_ibput / _ibget, shmemx_ibputSIZE / ibgetSIZE and their shmemx_ctx_ forms
 *   shmemx_signal_set / _add, shmemx_ctx_signal_set / _add
 *   shmemx_TYPENAME_sum_inscan / _sum_exscan
 *   shmemx_query_initialized
 * and, in C11 and C++, the generic shmemx_ibput, shmemx_ibget, shmemx_sum_inscan and
 * shmemx_sum_exscan; in C11 also shmemx_signal_set / _add taking an optional context
 * first, as SOS's shmemx.h defines them. The list follows SOS's mpp/shmemx_c_func.h4 and
 * mpp/shmemx.h4 (tests/capi/sos_shmemx_decls.c redeclares each one as SOS writes it).
 * New code should call the shmem_ names. */
#ifndef SYMMEM_SHMEMX_SOS_H
#define SYMMEM_SHMEMX_SOS_H
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

#define SYMMEM_DECL_SOS_IB(T, N)                                                                     \
  SHMEM_API void shmemx_##N##_ibput(T* dest, const T* source, SYMMEM_IB_PARAMS);                      \
  SHMEM_API void shmemx_##N##_ibget(T* dest, const T* source, SYMMEM_IB_PARAMS);                      \
  SHMEM_API void shmemx_ctx_##N##_ibput(shmem_ctx_t ctx, T* dest, const T* source, SYMMEM_IB_PARAMS); \
  SHMEM_API void shmemx_ctx_##N##_ibget(shmem_ctx_t ctx, T* dest, const T* source, SYMMEM_IB_PARAMS);
SHMEM_RMA_TYPES(SYMMEM_DECL_SOS_IB)
#undef SYMMEM_DECL_SOS_IB
#define SYMMEM_DECL_SOS_IB_SIZED(BITS, BYTES)                                                            \
  SHMEM_API void shmemx_ibput##BITS(void* dest, const void* source, SYMMEM_IB_PARAMS);                    \
  SHMEM_API void shmemx_ibget##BITS(void* dest, const void* source, SYMMEM_IB_PARAMS);                    \
  SHMEM_API void shmemx_ctx_ibput##BITS(shmem_ctx_t ctx, void* dest, const void* source, SYMMEM_IB_PARAMS); \
  SHMEM_API void shmemx_ctx_ibget##BITS(shmem_ctx_t ctx, void* dest, const void* source, SYMMEM_IB_PARAMS);
SHMEM_RMA_SIZES(SYMMEM_DECL_SOS_IB_SIZED)
#undef SYMMEM_DECL_SOS_IB_SIZED

SHMEM_API void shmemx_signal_set(uint64_t* sig_addr, uint64_t signal, int pe);
SHMEM_API void shmemx_signal_add(uint64_t* sig_addr, uint64_t signal, int pe);
SHMEM_API void shmemx_ctx_signal_set(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);
SHMEM_API void shmemx_ctx_signal_add(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);

SHMEM_API void shmemx_query_initialized(int* initialized);

#define SYMMEM_DECL_SOS_SCAN(T, N, OP)                                                               \
  SHMEM_API int shmemx_##N##_sum_inscan(shmem_team_t team, T* dest, const T* source, size_t nelems); \
  SHMEM_API int shmemx_##N##_sum_exscan(shmem_team_t team, T* dest, const T* source, size_t nelems);
SHMEM_REDUCE_ARITH_TYPES(SYMMEM_DECL_SOS_SCAN, sum)
#undef SYMMEM_DECL_SOS_SCAN

#ifdef __cplusplus
}
#endif

/* The generic names: the standard generic selections (C11 macros, C++ overloads). */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#define shmemx_ibput shmem_ibput
#define shmemx_ibget shmem_ibget
#define shmemx_sum_inscan shmem_sum_inscan
#define shmemx_sum_exscan shmem_sum_exscan
#endif
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define shmemx_signal_set(...) \
  _Generic(SYMMEM_ARG0_(__VA_ARGS__, 0), shmem_ctx_t: shmemx_ctx_signal_set, default: shmemx_signal_set)(__VA_ARGS__)
#define shmemx_signal_add(...) \
  _Generic(SYMMEM_ARG0_(__VA_ARGS__, 0), shmem_ctx_t: shmemx_ctx_signal_add, default: shmemx_signal_add)(__VA_ARGS__)
#endif

#endif
