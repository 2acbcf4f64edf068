/* Compile test: every shmemx_ name that Sandia OpenSHMEM declares for a routine that
 * OpenSHMEM 1.6 later standardised, redeclared here exactly as SOS writes it
 * (Sandia-OpenSHMEM/SOS mpp/shmemx_c_func.h4 and mpp/shmemx.h4, with SOS's type lists
 * SHMEM_BIND_C_RMA, SHMEM_BIND_C_SIZES and SHMEM_BIND_C_COLL_SUM_PROD from
 * mpp/shmem_bind_c.m4), after #include <shmemx.h>. A missing name or a different
 * signature fails to compile (in C++ a redeclaration that differs is a second extern "C"
 * function of the same name, also an error). Then the generic forms SOS offers are called
 * the way SOS programs call them: C11 _Generic macros in C, overloads in C++.
 * Built by the CTest capi.sos_shmemx_decls as C11 and as C++17 with -Werror. */
#include <shmemx.h>
#include <stddef.h>
#include <stdint.h>

/* SOS's SHMEM_BIND_C_RMA (24 types), as X(TYPENAME, TYPE). */
#define SOS_RMA(X)                                                                                      \
  X(float, float) X(double, double) X(longdouble, long double) X(char, char) X(schar, signed char)     \
  X(short, short) X(int, int) X(long, long) X(longlong, long long) X(uchar, unsigned char)             \
  X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)                              \
  X(ulonglong, unsigned long long) X(int8, int8_t) X(int16, int16_t) X(int32, int32_t)                 \
  X(int64, int64_t) X(uint8, uint8_t) X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t)      \
  X(size, size_t) X(ptrdiff, ptrdiff_t)
/* SHMEM_BIND_C_SIZES. */
#define SOS_SIZES(X) X(8) X(16) X(32) X(64) X(128)
/* SHMEM_BIND_C_COLL_SUM_PROD (13 types; the complex ones where the compiler has them). */
#if !defined(__STDC_NO_COMPLEX__)
#define SOS_SUM_COMPLEX(X) X(complexd, double _Complex) X(complexf, float _Complex)
#else
#define SOS_SUM_COMPLEX(X)
#endif
#define SOS_SUM_PROD(X)                                                                                 \
  X(short, short) X(ushort, unsigned short) X(int, int) X(uint, unsigned int) X(long, long)            \
  X(ulong, unsigned long) X(longlong, long long) X(ulonglong, unsigned long long) X(float, float)      \
  X(double, double) X(longdouble, long double) SOS_SUM_COMPLEX(X)

#ifdef __cplusplus
extern "C" {
#endif

/* Block-strided RMA. */
#define SOS_IB(N, T)                                                                                    \
  void shmemx_##N##_ibput(T* target, const T* source, ptrdiff_t tst, ptrdiff_t sst, size_t bsize,      \
                          size_t nblocks, int pe);                                                      \
  void shmemx_ctx_##N##_ibput(shmem_ctx_t ctx, T* target, const T* source, ptrdiff_t tst,              \
                              ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);                     \
  void shmemx_##N##_ibget(T* target, const T* source, ptrdiff_t tst, ptrdiff_t sst, size_t bsize,      \
                          size_t nblocks, int pe);                                                      \
  void shmemx_ctx_##N##_ibget(shmem_ctx_t ctx, T* target, const T* source, ptrdiff_t tst,              \
                              ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);
SOS_RMA(SOS_IB)
#define SOS_IB_N(S)                                                                                     \
  void shmemx_ibput##S(void* target, const void* source, ptrdiff_t tst, ptrdiff_t sst, size_t bsize,   \
                       size_t nblocks, int pe);                                                         \
  void shmemx_ctx_ibput##S(shmem_ctx_t ctx, void* target, const void* source, ptrdiff_t tst,           \
                           ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);                        \
  void shmemx_ibget##S(void* target, const void* source, ptrdiff_t tst, ptrdiff_t sst, size_t bsize,   \
                       size_t nblocks, int pe);                                                         \
  void shmemx_ctx_ibget##S(shmem_ctx_t ctx, void* target, const void* source, ptrdiff_t tst,           \
                           ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);
SOS_SIZES(SOS_IB_N)

/* Scans. */
#define SOS_SCAN(N, T)                                                                                  \
  int shmemx_##N##_sum_exscan(shmem_team_t team, T* dest, const T* source, size_t nelems);             \
  int shmemx_##N##_sum_inscan(shmem_team_t team, T* dest, const T* source, size_t nelems);
SOS_SUM_PROD(SOS_SCAN)

/* Signals (parenthesised: in C11 the names are also generic macros). */
void(shmemx_signal_add)(uint64_t* sig_addr, uint64_t signal, int pe);
void(shmemx_ctx_signal_add)(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);
void(shmemx_signal_set)(uint64_t* sig_addr, uint64_t signal, int pe);
void(shmemx_ctx_signal_set)(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);

/* Initialisation status. */
void shmemx_query_initialized(int* initialized);

#ifdef __cplusplus
}
#endif

/* The generic forms, called as SOS's shmemx.h allows (never run: compiling is the test). */
void sos_generic_forms(shmem_ctx_t ctx, shmem_team_t team, int* ia, long* la, double* da, uint64_t* sig);
void sos_generic_forms(shmem_ctx_t ctx, shmem_team_t team, int* ia, long* la, double* da, uint64_t* sig) {
  shmemx_ibput(ia, ia + 4, 2, 2, 1, 2, 1);
  shmemx_ibput(ctx, la, la + 4, 2, 2, 1, 2, 1);
  shmemx_ibget(da, da + 4, 2, 2, 1, 2, 1);
  shmemx_ibget(ctx, ia, ia + 4, 2, 2, 1, 2, 1);
  (void)shmemx_sum_exscan(team, la, la + 4, 2);
  (void)shmemx_sum_inscan(team, da, da + 4, 2);
  shmemx_signal_set(sig, 1, 0);
  shmemx_signal_add(sig, 1, 0);
#ifndef __cplusplus /* SOS's C11 shmemx_signal_set / _add also take a context first */
  shmemx_signal_set(ctx, sig, 1, 0);
  shmemx_signal_add(ctx, sig, 1, 0);
#endif
}
