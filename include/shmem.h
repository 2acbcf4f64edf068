/* shmem.h — the OpenSHMEM 1.5 C API of symmem.
 *
 * Programs written against the OpenSHMEM standard compile against this header unchanged
 * and link with -lsymmem (pkg-config --cflags --libs symmem). Semantics are those of the
 * standard; docs/ says what symmem adds (error reporting, environment variables).
 *
 * Completion: a blocking put returns when the source may be reused; shmem_quiet (and any
 * barrier) completes all outstanding puts and nbi operations; shmem_fence orders puts to
 * each PE. On one node a put is a store into the peer's mapped heap.
 * Errors: a call with an invalid PE, a non-symmetric address, or a size running past the
 * heap prints one line naming the call, the PE and the value, and ends the job with a
 * non-zero exit code; so does any call made before shmem_init or after shmem_finalize. */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "symmem/shmem_types.h"

#if defined(SYMMEM_BUILDING)
#define SHMEM_API __attribute__((visibility("default")))
#else
#define SHMEM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "symmem 0.1.0"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Opaque handles. */
typedef struct symmem_team_s* shmem_team_t;
typedef struct symmem_ctx_s* shmem_ctx_t;

/* ---- library setup, exit and query ---- */
SHMEM_API void shmem_init(void);
SHMEM_API void shmem_finalize(void);
SHMEM_API void shmem_global_exit(int status);
SHMEM_API int shmem_my_pe(void);
SHMEM_API int shmem_n_pes(void);
SHMEM_API int shmem_pe_accessible(int pe);
SHMEM_API int shmem_addr_accessible(const void* addr, int pe);
SHMEM_API void* shmem_ptr(const void* dest, int pe);
SHMEM_API void shmem_info_get_version(int* major, int* minor);
SHMEM_API void shmem_info_get_name(char* name);

/* ---- memory management (collective) ---- */
SHMEM_API void* shmem_malloc(size_t size);
SHMEM_API void* shmem_calloc(size_t count, size_t size);
SHMEM_API void* shmem_align(size_t alignment, size_t size);
SHMEM_API void* shmem_realloc(void* ptr, size_t size);
SHMEM_API void shmem_free(void* ptr);

/* ---- RMA ---- */
SHMEM_API void shmem_putmem(void* dest, const void* source, size_t nelems, int pe);
SHMEM_API void shmem_getmem(void* dest, const void* source, size_t nelems, int pe);
SHMEM_API void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe);
SHMEM_API void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe);

#define SYMMEM_DECL_RMA(T, N)                                                         \
  SHMEM_API void shmem_##N##_put(T* dest, const T* source, size_t nelems, int pe);    \
  SHMEM_API void shmem_##N##_get(T* dest, const T* source, size_t nelems, int pe);    \
  SHMEM_API void shmem_##N##_put_nbi(T* dest, const T* source, size_t nelems, int pe); \
  SHMEM_API void shmem_##N##_get_nbi(T* dest, const T* source, size_t nelems, int pe); \
  SHMEM_API void shmem_##N##_p(T* dest, T value, int pe);                             \
  SHMEM_API T shmem_##N##_g(const T* source, int pe);
SHMEM_RMA_TYPES(SYMMEM_DECL_RMA)
#undef SYMMEM_DECL_RMA

#define SYMMEM_DECL_SIZED(BITS, BYTES)                                                   \
  SHMEM_API void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe);     \
  SHMEM_API void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe);     \
  SHMEM_API void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe); \
  SHMEM_API void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe);
SHMEM_RMA_SIZES(SYMMEM_DECL_SIZED)
#undef SYMMEM_DECL_SIZED

/* ---- ordering and synchronisation ---- */
SHMEM_API void shmem_fence(void);
SHMEM_API void shmem_quiet(void);
SHMEM_API void shmem_barrier_all(void);
SHMEM_API void shmem_sync_all(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Point-to-point beyond the basics (typed/ctx RMA, atomics, signals, waits, contexts,
 * locks, threads) and teams / collectives, each in a header of its own. */
#include "symmem/shmem_p2p.h"
#include "symmem/shmem_coll.h"

#ifdef __cplusplus
/* C++ overloads of the generic names. */
#define SYMMEM_CXX_RMA(T, N)                                                                          \
  inline void shmem_put(T* d, const T* s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); }         \
  inline void shmem_get(T* d, const T* s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); }         \
  inline void shmem_put_nbi(T* d, const T* s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
  inline void shmem_get_nbi(T* d, const T* s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
  inline void shmem_p(T* d, T v, int pe) { shmem_##N##_p(d, v, pe); }                                 \
  inline T shmem_g(const T* s, int pe) { return shmem_##N##_g(s, pe); }
SHMEM_RMA_GENERIC_TYPES(SYMMEM_CXX_RMA)
#undef SYMMEM_CXX_RMA

/* The C11 generic selectors of put/get/p/g (with their context forms) are in
 * symmem/shmem_p2p.h. */
#endif

#endif /* SHMEM_H */
