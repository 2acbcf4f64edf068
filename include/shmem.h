/* shmem.h — the OpenSHMEM 1.5 C API of symmem (with the 1.6 additions listed in docs/p2p.md).
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
/* OpenSHMEM 1.6: *initialized = nonzero between an init call and the matching
 * shmem_finalize, 0 otherwise. May be called at any time, from any thread. */
SHMEM_API void shmem_query_initialized(int* initialized);

/* Profiling control (OpenSHMEM 1.5 profiling interface): symmem itself does nothing with
 * it and returns at once; a profiling library that interposes shmem_pcontrol sees the
 * level (<= 0 off, 1 default, 2 flush, > 2 its own meaning) and any further arguments. */
SHMEM_API void shmem_pcontrol(const int level, ...);

/* ---- memory management (collective) ---- */
SHMEM_API void* shmem_malloc(size_t size);
SHMEM_API void* shmem_calloc(size_t count, size_t size);
SHMEM_API void* shmem_align(size_t alignment, size_t size);
SHMEM_API void* shmem_realloc(void* ptr, size_t size);
SHMEM_API void shmem_free(void* ptr);

/* Hints of shmem_malloc_with_hints (bitwise or). They are advice: on the shared-memory
 * route atomics and signal updates are CPU atomics on the peer's mapped memory wherever
 * the object lives, so every hint (known or not) gives the memory of shmem_malloc. */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0) /* mostly atomics, from PEs of other nodes */
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)  /* mostly signal words, from PEs of other nodes */
/* Collective like shmem_malloc (same size and hints on every PE): size 0 returns NULL with
 * no barrier, otherwise the block is suitably aligned for any type and every PE has left
 * the call's barrier when it returns. */
SHMEM_API void* shmem_malloc_with_hints(size_t size, long hints);

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

/* ---- deprecated API (OpenSHMEM "Deprecated API" table), kept for existing programs ----
 * Declared without a deprecation attribute, so that programs built with -Werror keep
 * building; docs/p2p.md lists the replacements. */
/* Initializes like shmem_init (npes is ignored); a second call does nothing. The library
 * is finalized implicitly at exit (a collective shmem_finalize run by atexit) unless the
 * program called shmem_finalize itself. */
SHMEM_API void start_pes(int npes);
SHMEM_API int _my_pe(void);   /* shmem_my_pe */
SHMEM_API int _num_pes(void); /* shmem_n_pes */
SHMEM_API void* shmalloc(size_t size);                     /* shmem_malloc */
SHMEM_API void shfree(void* ptr);                          /* shmem_free */
SHMEM_API void* shrealloc(void* ptr, size_t size);         /* shmem_realloc */
SHMEM_API void* shmemalign(size_t alignment, size_t size); /* shmem_align */
/* Cache management of SGI SHMEM (removed from the standard after 1.4): symmem runs on
 * cache-coherent hardware, where there is nothing to flush or invalidate, so these
 * return at once and need no initialized library. */
SHMEM_API void shmem_clear_cache_inv(void);
SHMEM_API void shmem_set_cache_inv(void);
SHMEM_API void shmem_clear_cache_line_inv(void* dest);
SHMEM_API void shmem_set_cache_line_inv(void* dest);
SHMEM_API void shmem_udcflush(void);
SHMEM_API void shmem_udcflush_line(void* dest);

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
