/* symmem/shmem_p2p.h — included by shmem.h: the point-to-point API beyond plain put/get.
 *
 * Contexts, strided and context RMA, atomics, put-with-signal, point-to-point waits and
 * tests, locks and thread levels, as in OpenSHMEM 1.5. Every typed family is stamped from
 * the type tables of symmem/shmem_types.h; see docs/p2p.md for completion, ordering and
 * wake-up semantics.
 *
 * Completion (every route symmem has today completes operations before they return):
 *  - blocking puts, iput, put_signal: return when the source may be reused; the data (and
 *    the signal) are delivered by the next quiet / barrier, ordered by fence.
 *  - gets, iget, g, fetching atomics: return with the value.
 *  - _nbi forms: buffers may be touched only after shmem_quiet / shmem_ctx_quiet on the
 *    context used.
 *  - put_signal: the signal update is visible only after the data it covers; it says
 *    nothing about other puts unless a fence or quiet separates them.
 *  - atomics: atomic with respect to every other atomic on the same word from any PE or
 *    thread (real hardware atomics on the peer's mapped memory). Atomic addresses must be
 *    naturally aligned.
 * Waits and tests read the calling PE's own symmetric variables. A waiter that has slept
 * is woken at once by a signal update or atomic on memory of its PE; a plain put to the
 * variable is seen at the next poll (a sleeping waiter polls at least every few ms).
 * Thread safety: every routine here may be called from several threads at once
 * (SHMEM_THREAD_MULTIPLE), except that a SHMEM_CTX_PRIVATE context belongs to the thread
 * that created it. */
#ifndef SYMMEM_SHMEM_P2P_H
#define SYMMEM_SHMEM_P2P_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants ---- */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Sessions (OpenSHMEM 1.6): an option of shmem_ctx_session_start, and the config_mask bit
 * that selects shmem_ctx_session_config_t.total_ops. */
#define SHMEM_CTX_SESSION_BATCH (1L << 0)
#define SHMEM_CTX_SESSION_TOTAL_OPS (1L << 0)
typedef struct {
  size_t total_ops; /* expected number of RMA calls in the session (default SIZE_MAX) */
} shmem_ctx_session_config_t;

/* The default context is a fixed object of the library (an address constant, usable in
 * static initializers); SHMEM_CTX_INVALID is the null handle. */
SHMEM_API extern struct symmem_ctx_s symmem_ctx_default;
#define SHMEM_CTX_DEFAULT (&symmem_ctx_default)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* ---- threads ---- */
/* Initializes like shmem_init; *provided is `requested` (every level is supported).
 * Returns 0, or nonzero for a level that is not one of SHMEM_THREAD_*. */
SHMEM_API int shmem_init_thread(int requested, int* provided);
/* The level given by shmem_init_thread, or SHMEM_THREAD_MULTIPLE after shmem_init. */
SHMEM_API void shmem_query_thread(int* provided);

/* ---- contexts ---- */
/* Not collective. Returns 0 and a valid handle, or nonzero and SHMEM_CTX_INVALID. The
 * context spans the world team; options are a bitwise or of SHMEM_CTX_SERIALIZED,
 * SHMEM_CTX_PRIVATE (only the creating thread may use it) and SHMEM_CTX_NOSTORE. */
SHMEM_API int shmem_ctx_create(long options, shmem_ctx_t* ctx);
/* Completes the context's operations (a quiet), then releases it. Not SHMEM_CTX_DEFAULT. */
SHMEM_API void shmem_ctx_destroy(shmem_ctx_t ctx);
/* Per-context ordering / completion of the operations issued on `ctx` only. */
SHMEM_API void shmem_ctx_fence(shmem_ctx_t ctx);
SHMEM_API void shmem_ctx_quiet(shmem_ctx_t ctx);
/* OpenSHMEM 1.6: completes the operations issued to the PEs target_pes[0..npes) (numbered
 * in the context's team; the default context: world PEs), with the guarantees of quiet.
 * npes 0 returns at once. Every PE listed must be valid for the context. On the
 * shared-memory route this is a quiet (every operation is complete when it returns; only
 * weakly ordered stores need the fence, and that fence is not per target). */
SHMEM_API void shmem_pe_quiet(const int* target_pes, size_t npes);
SHMEM_API void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes);
/* Sessions (OpenSHMEM 1.6): hints that the operations on `ctx` until session_stop may be
 * batched. Not collective; they change no completion or ordering guarantee. symmem checks
 * the context (SHMEM_CTX_INVALID: no action) and that config is not NULL when config_mask
 * selects one of its fields, then applies nothing: on the shared-memory route every
 * operation is a load or store done when it returns, so there is nothing to batch.
 * Unknown option and mask bits are allowed (the standard gives every combination a
 * meaning: none); a stop without a start does nothing. */
SHMEM_API void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_ctx_session_config_t* config,
                                       long config_mask);
SHMEM_API void shmem_ctx_session_stop(shmem_ctx_t ctx);

/* ---- RMA: context, strided and signal forms ---- */
SHMEM_API void shmem_ctx_putmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
SHMEM_API void shmem_ctx_getmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
SHMEM_API void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
SHMEM_API void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);

/* Put-with-signal: copies nelems elements to dest on `pe`, then updates the 64-bit
 * signal word sig_addr on `pe` (sig_op SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD) so that a
 * PE seeing the new signal value also sees the data. */
#define SYMMEM_SIGNAL_PARAMS uint64_t *sig_addr, uint64_t signal, int sig_op, int pe
SHMEM_API void shmem_putmem_signal(void* dest, const void* source, size_t nelems, SYMMEM_SIGNAL_PARAMS);
SHMEM_API void shmem_putmem_signal_nbi(void* dest, const void* source, size_t nelems, SYMMEM_SIGNAL_PARAMS);
SHMEM_API void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,
                                       SYMMEM_SIGNAL_PARAMS);
SHMEM_API void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,
                                           SYMMEM_SIGNAL_PARAMS);

#define SYMMEM_DECL_CTX_RMA(T, N)                                                                               \
  SHMEM_API void shmem_ctx_##N##_put(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);         \
  SHMEM_API void shmem_ctx_##N##_get(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);         \
  SHMEM_API void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);     \
  SHMEM_API void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);     \
  SHMEM_API void shmem_ctx_##N##_p(shmem_ctx_t ctx, T* dest, T value, int pe);                                  \
  SHMEM_API T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T* source, int pe);                                      \
  SHMEM_API void shmem_##N##_iput(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
  SHMEM_API void shmem_##N##_iget(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
  SHMEM_API void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,  \
                                      size_t nelems, int pe);                                                   \
  SHMEM_API void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,  \
                                      size_t nelems, int pe);                                                   \
  SHMEM_API void shmem_##N##_put_signal(T* dest, const T* source, size_t nelems, SYMMEM_SIGNAL_PARAMS);         \
  SHMEM_API void shmem_##N##_put_signal_nbi(T* dest, const T* source, size_t nelems, SYMMEM_SIGNAL_PARAMS);     \
  SHMEM_API void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,           \
                                            SYMMEM_SIGNAL_PARAMS);                                              \
  SHMEM_API void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,       \
                                                SYMMEM_SIGNAL_PARAMS);
SHMEM_RMA_TYPES(SYMMEM_DECL_CTX_RMA)
#undef SYMMEM_DECL_CTX_RMA

#define SYMMEM_DECL_CTX_SIZED(BITS, BYTES)                                                                      \
  SHMEM_API void shmem_ctx_put##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);   \
  SHMEM_API void shmem_ctx_get##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);   \
  SHMEM_API void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,      \
                                           int pe);                                                             \
  SHMEM_API void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,      \
                                           int pe);                                                             \
  SHMEM_API void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                                  int pe);                                                                      \
  SHMEM_API void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                                  int pe);                                                                      \
  SHMEM_API void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,           \
                                      ptrdiff_t sst, size_t nelems, int pe);                                    \
  SHMEM_API void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,           \
                                      ptrdiff_t sst, size_t nelems, int pe);                                    \
  SHMEM_API void shmem_put##BITS##_signal(void* dest, const void* source, size_t nelems, SYMMEM_SIGNAL_PARAMS); \
  SHMEM_API void shmem_put##BITS##_signal_nbi(void* dest, const void* source, size_t nelems,                    \
                                              SYMMEM_SIGNAL_PARAMS);                                            \
  SHMEM_API void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,   \
                                              SYMMEM_SIGNAL_PARAMS);                                            \
  SHMEM_API void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source,              \
                                                  size_t nelems, SYMMEM_SIGNAL_PARAMS);
SHMEM_RMA_SIZES(SYMMEM_DECL_CTX_SIZED)
#undef SYMMEM_DECL_CTX_SIZED

/* Interleaved block transfers (OpenSHMEM 1.6): nblocks blocks of bsize elements; block b
 * goes from source + b*sst to dest + b*dst (strides in elements, each at least bsize;
 * bsize 1 is iput / iget). ibput's dest and ibget's source are symmetric; completion is
 * that of iput / iget. A stride below bsize ends the job with one line. */
#define SYMMEM_IB_PARAMS ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe
#define SYMMEM_DECL_IB(T, N)                                                                                    \
  SHMEM_API void shmem_##N##_ibput(T* dest, const T* source, SYMMEM_IB_PARAMS);                                 \
  SHMEM_API void shmem_##N##_ibget(T* dest, const T* source, SYMMEM_IB_PARAMS);                                 \
  SHMEM_API void shmem_ctx_##N##_ibput(shmem_ctx_t ctx, T* dest, const T* source, SYMMEM_IB_PARAMS);            \
  SHMEM_API void shmem_ctx_##N##_ibget(shmem_ctx_t ctx, T* dest, const T* source, SYMMEM_IB_PARAMS);
SHMEM_RMA_TYPES(SYMMEM_DECL_IB)
#undef SYMMEM_DECL_IB
#define SYMMEM_DECL_IB_SIZED(BITS, BYTES)                                                                       \
  SHMEM_API void shmem_ibput##BITS(void* dest, const void* source, SYMMEM_IB_PARAMS);                           \
  SHMEM_API void shmem_ibget##BITS(void* dest, const void* source, SYMMEM_IB_PARAMS);                           \
  SHMEM_API void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void* dest, const void* source, SYMMEM_IB_PARAMS);      \
  SHMEM_API void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void* dest, const void* source, SYMMEM_IB_PARAMS);
SHMEM_RMA_SIZES(SYMMEM_DECL_IB_SIZED)
#undef SYMMEM_DECL_IB_SIZED

/* ---- signals ---- */
/* Atomic read of the calling PE's signal word. */
SHMEM_API uint64_t shmem_signal_fetch(const uint64_t* sig_addr);
/* Blocks until the calling PE's signal word satisfies `cmp cmp_value`; returns its value. */
SHMEM_API uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
/* Atomic set / add on pe's signal word (OpenSHMEM 1.6; wakes a waiter like put_signal). */
SHMEM_API void shmem_signal_set(uint64_t* sig_addr, uint64_t signal, int pe);
SHMEM_API void shmem_signal_add(uint64_t* sig_addr, uint64_t signal, int pe);
SHMEM_API void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);
SHMEM_API void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);

/* ---- atomics ---- */
#define SYMMEM_DECL_AMO_EXT(T, N)                                                                        \
  SHMEM_API T shmem_##N##_atomic_fetch(const T* source, int pe);                                         \
  SHMEM_API T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T* source, int pe);                    \
  SHMEM_API void shmem_##N##_atomic_set(T* dest, T value, int pe);                                       \
  SHMEM_API void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T* dest, T value, int pe);                  \
  SHMEM_API T shmem_##N##_atomic_swap(T* dest, T value, int pe);                                         \
  SHMEM_API T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T* dest, T value, int pe);                    \
  SHMEM_API void shmem_##N##_atomic_fetch_nbi(T* fetch, const T* source, int pe);                        \
  SHMEM_API void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T* fetch, const T* source, int pe);   \
  SHMEM_API void shmem_##N##_atomic_swap_nbi(T* fetch, T* dest, T value, int pe);                        \
  SHMEM_API void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe);
SHMEM_AMO_EXT_TYPES(SYMMEM_DECL_AMO_EXT)
#undef SYMMEM_DECL_AMO_EXT

#define SYMMEM_DECL_AMO_STD(T, N)                                                                               \
  SHMEM_API T shmem_##N##_atomic_compare_swap(T* dest, T cond, T value, int pe);                                \
  SHMEM_API T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T* dest, T cond, T value, int pe);           \
  SHMEM_API T shmem_##N##_atomic_fetch_inc(T* dest, int pe);                                                    \
  SHMEM_API T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T* dest, int pe);                               \
  SHMEM_API void shmem_##N##_atomic_inc(T* dest, int pe);                                                       \
  SHMEM_API void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T* dest, int pe);                                  \
  SHMEM_API T shmem_##N##_atomic_fetch_add(T* dest, T value, int pe);                                           \
  SHMEM_API T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T* dest, T value, int pe);                      \
  SHMEM_API void shmem_##N##_atomic_add(T* dest, T value, int pe);                                              \
  SHMEM_API void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T* dest, T value, int pe);                         \
  SHMEM_API void shmem_##N##_atomic_compare_swap_nbi(T* fetch, T* dest, T cond, T value, int pe);               \
  SHMEM_API void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T cond, T value,   \
                                                         int pe);                                               \
  SHMEM_API void shmem_##N##_atomic_fetch_inc_nbi(T* fetch, T* dest, int pe);                                   \
  SHMEM_API void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T* fetch, T* dest, int pe);              \
  SHMEM_API void shmem_##N##_atomic_fetch_add_nbi(T* fetch, T* dest, T value, int pe);                          \
  SHMEM_API void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe);
SHMEM_AMO_STD_TYPES(SYMMEM_DECL_AMO_STD)
#undef SYMMEM_DECL_AMO_STD

#define SYMMEM_DECL_AMO_BIT_OP(T, N, OP)                                                                     \
  SHMEM_API void shmem_##N##_atomic_##OP(T* dest, T value, int pe);                                          \
  SHMEM_API void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T* dest, T value, int pe);                     \
  SHMEM_API T shmem_##N##_atomic_fetch_##OP(T* dest, T value, int pe);                                       \
  SHMEM_API T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T* dest, T value, int pe);                  \
  SHMEM_API void shmem_##N##_atomic_fetch_##OP##_nbi(T* fetch, T* dest, T value, int pe);                    \
  SHMEM_API void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe);
#define SYMMEM_DECL_AMO_BIT(T, N) \
  SYMMEM_DECL_AMO_BIT_OP(T, N, and) SYMMEM_DECL_AMO_BIT_OP(T, N, or) SYMMEM_DECL_AMO_BIT_OP(T, N, xor)
SHMEM_AMO_BITWISE_TYPES(SYMMEM_DECL_AMO_BIT)
#undef SYMMEM_DECL_AMO_BIT

/* Deprecated (pre-1.4) names of the same atomics. */
#define SYMMEM_DECL_AMO_DEPR_EXT(T, N)                          \
  SHMEM_API T shmem_##N##_fetch(const T* source, int pe);      \
  SHMEM_API void shmem_##N##_set(T* dest, T value, int pe);    \
  SHMEM_API T shmem_##N##_swap(T* dest, T value, int pe);
SHMEM_AMO_DEPR_EXT_TYPES(SYMMEM_DECL_AMO_DEPR_EXT)
#undef SYMMEM_DECL_AMO_DEPR_EXT
#define SYMMEM_DECL_AMO_DEPR(T, N)                                 \
  SHMEM_API T shmem_##N##_cswap(T* dest, T cond, T value, int pe); \
  SHMEM_API T shmem_##N##_finc(T* dest, int pe);                   \
  SHMEM_API void shmem_##N##_inc(T* dest, int pe);                 \
  SHMEM_API T shmem_##N##_fadd(T* dest, T value, int pe);          \
  SHMEM_API void shmem_##N##_add(T* dest, T value, int pe);
SHMEM_AMO_DEPR_TYPES(SYMMEM_DECL_AMO_DEPR)
#undef SYMMEM_DECL_AMO_DEPR

/* ---- point-to-point synchronization (on the calling PE's own symmetric variables) ---- */
#define SYMMEM_DECL_SYNC(T, N)                                                  \
  SHMEM_API void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value);         \
  SHMEM_API int shmem_##N##_test(T* ivar, int cmp, T cmp_value);
SHMEM_P2P_SYNC_TYPES(SYMMEM_DECL_SYNC)
#undef SYMMEM_DECL_SYNC

#define SYMMEM_DECL_SYNC_SET(T, N)                                                                             \
  SHMEM_API void shmem_##N##_wait_until_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);  \
  SHMEM_API size_t shmem_##N##_wait_until_any(T* ivars, size_t nelems, const int* status, int cmp,             \
                                              T cmp_value);                                                    \
  SHMEM_API size_t shmem_##N##_wait_until_some(T* ivars, size_t nelems, size_t* indices, const int* status,    \
                                               int cmp, T cmp_value);                                          \
  SHMEM_API void shmem_##N##_wait_until_all_vector(T* ivars, size_t nelems, const int* status, int cmp,        \
                                                   const T* cmp_values);                                       \
  SHMEM_API size_t shmem_##N##_wait_until_any_vector(T* ivars, size_t nelems, const int* status, int cmp,      \
                                                     const T* cmp_values);                                     \
  SHMEM_API size_t shmem_##N##_wait_until_some_vector(T* ivars, size_t nelems, size_t* indices,                \
                                                      const int* status, int cmp, const T* cmp_values);        \
  SHMEM_API int shmem_##N##_test_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);        \
  SHMEM_API size_t shmem_##N##_test_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);     \
  SHMEM_API size_t shmem_##N##_test_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp, \
                                         T cmp_value);                                                         \
  SHMEM_API int shmem_##N##_test_all_vector(T* ivars, size_t nelems, const int* status, int cmp,               \
                                            const T* cmp_values);                                              \
  SHMEM_API size_t shmem_##N##_test_any_vector(T* ivars, size_t nelems, const int* status, int cmp,            \
                                               const T* cmp_values);                                           \
  SHMEM_API size_t shmem_##N##_test_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status,   \
                                                int cmp, const T* cmp_values);
SHMEM_P2P_SYNC_SET_TYPES(SYMMEM_DECL_SYNC_SET)
#undef SYMMEM_DECL_SYNC_SET

/* Deprecated: wait while *ivar == cmp_value. */
SHMEM_API void shmem_wait(long* ivar, long cmp_value);
#ifndef __cplusplus
/* Deprecated pre-C11 form of shmem_long_wait_until. In C11 the generic shmem_wait_until
 * below hides it (call it as (shmem_wait_until)(...)); C++ has the overloads. */
SHMEM_API void shmem_wait_until(long* ivar, int cmp, long cmp_value);
#endif
#define SYMMEM_DECL_WAIT_DEPR(T, N) SHMEM_API void shmem_##N##_wait(T* ivar, T cmp_value);
SHMEM_WAIT_DEPR_TYPES(SYMMEM_DECL_WAIT_DEPR)
#undef SYMMEM_DECL_WAIT_DEPR

/* ---- distributed locks on a symmetric long (initialised to 0, same object on every PE) ---- */
/* Waits for and takes the lock; waiting PEs get it first come, first served. */
SHMEM_API void shmem_set_lock(long* lock);
/* Takes the lock if it is free: returns 0 when taken, 1 when another PE holds it. */
SHMEM_API int shmem_test_lock(long* lock);
/* Quiet on the default context, then releases the lock to the next waiter. */
SHMEM_API void shmem_clear_lock(long* lock);

#ifdef __cplusplus
} /* extern "C" */
#endif

#ifdef __cplusplus
/* ---- C++ overloads of the generic names (same table, one overload per distinct type) ---- */
#define SYMMEM_CXX_RMA_CTX(T, N)                                                                                   \
  inline void shmem_put(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) { shmem_ctx_##N##_put(c, d, s, n, pe); } \
  inline void shmem_get(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) { shmem_ctx_##N##_get(c, d, s, n, pe); } \
  inline void shmem_put_nbi(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) {                                  \
    shmem_ctx_##N##_put_nbi(c, d, s, n, pe);                                                                      \
  }                                                                                                               \
  inline void shmem_get_nbi(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) {                                  \
    shmem_ctx_##N##_get_nbi(c, d, s, n, pe);                                                                      \
  }                                                                                                               \
  inline void shmem_p(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); }                       \
  inline T shmem_g(shmem_ctx_t c, const T* s, int pe) { return shmem_ctx_##N##_g(c, s, pe); }                     \
  inline void shmem_iput(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {                      \
    shmem_##N##_iput(d, s, dst, sst, n, pe);                                                                      \
  }                                                                                                               \
  inline void shmem_iget(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {                      \
    shmem_##N##_iget(d, s, dst, sst, n, pe);                                                                      \
  }                                                                                                               \
  inline void shmem_iput(shmem_ctx_t c, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {       \
    shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe);                                                               \
  }                                                                                                               \
  inline void shmem_iget(shmem_ctx_t c, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {       \
    shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe);                                                               \
  }                                                                                                               \
  inline void shmem_put_signal(T* d, const T* s, size_t n, SYMMEM_SIGNAL_PARAMS) {                                \
    shmem_##N##_put_signal(d, s, n, sig_addr, signal, sig_op, pe);                                                \
  }                                                                                                               \
  inline void shmem_put_signal_nbi(T* d, const T* s, size_t n, SYMMEM_SIGNAL_PARAMS) {                            \
    shmem_##N##_put_signal_nbi(d, s, n, sig_addr, signal, sig_op, pe);                                            \
  }                                                                                                               \
  inline void shmem_put_signal(shmem_ctx_t c, T* d, const T* s, size_t n, SYMMEM_SIGNAL_PARAMS) {                 \
    shmem_ctx_##N##_put_signal(c, d, s, n, sig_addr, signal, sig_op, pe);                                         \
  }                                                                                                               \
  inline void shmem_put_signal_nbi(shmem_ctx_t c, T* d, const T* s, size_t n, SYMMEM_SIGNAL_PARAMS) {             \
    shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig_addr, signal, sig_op, pe);                                     \
  }
SHMEM_RMA_GENERIC_TYPES(SYMMEM_CXX_RMA_CTX)
#undef SYMMEM_CXX_RMA_CTX

#define SYMMEM_CXX_AMO_EXT(T, N)                                                                                 \
  inline T shmem_atomic_fetch(const T* s, int pe) { return shmem_##N##_atomic_fetch(s, pe); }                    \
  inline T shmem_atomic_fetch(shmem_ctx_t c, const T* s, int pe) { return shmem_ctx_##N##_atomic_fetch(c, s, pe); } \
  inline void shmem_atomic_set(T* d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }                          \
  inline void shmem_atomic_set(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_set(c, d, v, pe); }     \
  inline T shmem_atomic_swap(T* d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); }                    \
  inline T shmem_atomic_swap(shmem_ctx_t c, T* d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(c, d, v, pe); } \
  inline void shmem_atomic_fetch_nbi(T* f, const T* s, int pe) { shmem_##N##_atomic_fetch_nbi(f, s, pe); }       \
  inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T* f, const T* s, int pe) {                                  \
    shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe);                                                               \
  }                                                                                                              \
  inline void shmem_atomic_swap_nbi(T* f, T* d, T v, int pe) { shmem_##N##_atomic_swap_nbi(f, d, v, pe); }       \
  inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T* f, T* d, T v, int pe) {                                    \
    shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe);                                                             \
  }
SHMEM_AMO_EXT_GENERIC_TYPES(SYMMEM_CXX_AMO_EXT)
#undef SYMMEM_CXX_AMO_EXT

#define SYMMEM_CXX_AMO_STD(T, N)                                                                                  \
  inline T shmem_atomic_compare_swap(T* d, T c, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, c, v, pe); } \
  inline T shmem_atomic_compare_swap(shmem_ctx_t x, T* d, T c, T v, int pe) {                                     \
    return shmem_ctx_##N##_atomic_compare_swap(x, d, c, v, pe);                                                   \
  }                                                                                                               \
  inline T shmem_atomic_fetch_inc(T* d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); }                   \
  inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T* d, int pe) { return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe); } \
  inline void shmem_atomic_inc(T* d, int pe) { shmem_##N##_atomic_inc(d, pe); }                                   \
  inline void shmem_atomic_inc(shmem_ctx_t c, T* d, int pe) { shmem_ctx_##N##_atomic_inc(c, d, pe); }             \
  inline T shmem_atomic_fetch_add(T* d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); }           \
  inline T shmem_atomic_fetch_add(shmem_ctx_t c, T* d, T v, int pe) {                                             \
    return shmem_ctx_##N##_atomic_fetch_add(c, d, v, pe);                                                         \
  }                                                                                                               \
  inline void shmem_atomic_add(T* d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); }                           \
  inline void shmem_atomic_add(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_add(c, d, v, pe); }     \
  inline void shmem_atomic_compare_swap_nbi(T* f, T* d, T c, T v, int pe) {                                       \
    shmem_##N##_atomic_compare_swap_nbi(f, d, c, v, pe);                                                          \
  }                                                                                                               \
  inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t x, T* f, T* d, T c, T v, int pe) {                        \
    shmem_ctx_##N##_atomic_compare_swap_nbi(x, f, d, c, v, pe);                                                   \
  }                                                                                                               \
  inline void shmem_atomic_fetch_inc_nbi(T* f, T* d, int pe) { shmem_##N##_atomic_fetch_inc_nbi(f, d, pe); }      \
  inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t c, T* f, T* d, int pe) {                                     \
    shmem_ctx_##N##_atomic_fetch_inc_nbi(c, f, d, pe);                                                            \
  }                                                                                                               \
  inline void shmem_atomic_fetch_add_nbi(T* f, T* d, T v, int pe) { shmem_##N##_atomic_fetch_add_nbi(f, d, v, pe); } \
  inline void shmem_atomic_fetch_add_nbi(shmem_ctx_t c, T* f, T* d, T v, int pe) {                                \
    shmem_ctx_##N##_atomic_fetch_add_nbi(c, f, d, v, pe);                                                         \
  }
SHMEM_AMO_STD_GENERIC_TYPES(SYMMEM_CXX_AMO_STD)
#undef SYMMEM_CXX_AMO_STD

#define SYMMEM_CXX_AMO_BIT_OP(T, N, OP)                                                                        \
  inline void shmem_atomic_##OP(T* d, T v, int pe) { shmem_##N##_atomic_##OP(d, v, pe); }                      \
  inline void shmem_atomic_##OP(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_##OP(c, d, v, pe); } \
  inline T shmem_atomic_fetch_##OP(T* d, T v, int pe) { return shmem_##N##_atomic_fetch_##OP(d, v, pe); }      \
  inline T shmem_atomic_fetch_##OP(shmem_ctx_t c, T* d, T v, int pe) {                                         \
    return shmem_ctx_##N##_atomic_fetch_##OP(c, d, v, pe);                                                     \
  }                                                                                                            \
  inline void shmem_atomic_fetch_##OP##_nbi(T* f, T* d, T v, int pe) {                                         \
    shmem_##N##_atomic_fetch_##OP##_nbi(f, d, v, pe);                                                          \
  }                                                                                                            \
  inline void shmem_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T* f, T* d, T v, int pe) {                          \
    shmem_ctx_##N##_atomic_fetch_##OP##_nbi(c, f, d, v, pe);                                                   \
  }
#define SYMMEM_CXX_AMO_BIT(T, N) \
  SYMMEM_CXX_AMO_BIT_OP(T, N, and) SYMMEM_CXX_AMO_BIT_OP(T, N, or) SYMMEM_CXX_AMO_BIT_OP(T, N, xor)
SHMEM_AMO_BITWISE_GENERIC_TYPES(SYMMEM_CXX_AMO_BIT)
#undef SYMMEM_CXX_AMO_BIT
#undef SYMMEM_CXX_AMO_BIT_OP

#define SYMMEM_CXX_SYNC(T, N)                                                                              \
  inline void shmem_wait_until(T* v, int cmp, T x) { shmem_##N##_wait_until(v, cmp, x); }                   \
  inline int shmem_test(T* v, int cmp, T x) { return shmem_##N##_test(v, cmp, x); }                        \
  inline void shmem_wait_until(volatile T* v, int cmp, T x) { shmem_##N##_wait_until(const_cast<T*>(v), cmp, x); } \
  inline int shmem_test(volatile T* v, int cmp, T x) { return shmem_##N##_test(const_cast<T*>(v), cmp, x); }
SHMEM_P2P_SYNC_GENERIC_TYPES(SYMMEM_CXX_SYNC)
#undef SYMMEM_CXX_SYNC

/* The multi-variable waits and tests (short / unsigned short too: an extension). */
#define SYMMEM_CXX_SYNC_SET(T, N)                                                                               \
  inline void shmem_wait_until_all(T* v, size_t n, const int* st, int cmp, T x) {                                 \
    shmem_##N##_wait_until_all(v, n, st, cmp, x);                                                                 \
  }                                                                                                               \
  inline size_t shmem_wait_until_any(T* v, size_t n, const int* st, int cmp, T x) {                               \
    return shmem_##N##_wait_until_any(v, n, st, cmp, x);                                                          \
  }                                                                                                               \
  inline size_t shmem_wait_until_some(T* v, size_t n, size_t* ix, const int* st, int cmp, T x) {                  \
    return shmem_##N##_wait_until_some(v, n, ix, st, cmp, x);                                                     \
  }                                                                                                               \
  inline void shmem_wait_until_all_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                   \
    shmem_##N##_wait_until_all_vector(v, n, st, cmp, x);                                                          \
  }                                                                                                               \
  inline size_t shmem_wait_until_any_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                 \
    return shmem_##N##_wait_until_any_vector(v, n, st, cmp, x);                                                   \
  }                                                                                                               \
  inline size_t shmem_wait_until_some_vector(T* v, size_t n, size_t* ix, const int* st, int cmp, const T* x) {    \
    return shmem_##N##_wait_until_some_vector(v, n, ix, st, cmp, x);                                              \
  }                                                                                                               \
  inline int shmem_test_all(T* v, size_t n, const int* st, int cmp, T x) {                                        \
    return shmem_##N##_test_all(v, n, st, cmp, x);                                                                \
  }                                                                                                               \
  inline size_t shmem_test_any(T* v, size_t n, const int* st, int cmp, T x) {                                     \
    return shmem_##N##_test_any(v, n, st, cmp, x);                                                                \
  }                                                                                                               \
  inline size_t shmem_test_some(T* v, size_t n, size_t* ix, const int* st, int cmp, T x) {                        \
    return shmem_##N##_test_some(v, n, ix, st, cmp, x);                                                           \
  }                                                                                                               \
  inline int shmem_test_all_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                          \
    return shmem_##N##_test_all_vector(v, n, st, cmp, x);                                                         \
  }                                                                                                               \
  inline size_t shmem_test_any_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                       \
    return shmem_##N##_test_any_vector(v, n, st, cmp, x);                                                         \
  }                                                                                                               \
  inline size_t shmem_test_some_vector(T* v, size_t n, size_t* ix, const int* st, int cmp, const T* x) {          \
    return shmem_##N##_test_some_vector(v, n, ix, st, cmp, x);                                                    \
  }
SHMEM_P2P_SYNC_SET_GENERIC_TYPES(SYMMEM_CXX_SYNC_SET)
#undef SYMMEM_CXX_SYNC_SET

/* The set forms on volatile ivars: the same calls. */
#define SYMMEM_CXX_SYNC_SET_VOL(T, N)                                                                              \
  inline void shmem_wait_until_all(volatile T* v, size_t n, const int* st, int cmp, T x) {                        \
    shmem_##N##_wait_until_all(const_cast<T*>(v), n, st, cmp, x);                                               \
  }                                                                                                               \
  inline size_t shmem_wait_until_any(volatile T* v, size_t n, const int* st, int cmp, T x) {                      \
    return shmem_##N##_wait_until_any(const_cast<T*>(v), n, st, cmp, x);                                        \
  }                                                                                                               \
  inline size_t shmem_wait_until_some(volatile T* v, size_t n, size_t* ix, const int* st, int cmp, T x) {         \
    return shmem_##N##_wait_until_some(const_cast<T*>(v), n, ix, st, cmp, x);                                   \
  }                                                                                                               \
  inline void shmem_wait_until_all_vector(volatile T* v, size_t n, const int* st, int cmp, const T* x) {          \
    shmem_##N##_wait_until_all_vector(const_cast<T*>(v), n, st, cmp, x);                                        \
  }                                                                                                               \
  inline size_t shmem_wait_until_any_vector(volatile T* v, size_t n, const int* st, int cmp, const T* x) {        \
    return shmem_##N##_wait_until_any_vector(const_cast<T*>(v), n, st, cmp, x);                                 \
  }                                                                                                               \
  inline size_t shmem_wait_until_some_vector(volatile T* v, size_t n, size_t* ix, const int* st, int cmp,         \
                                             const T* x) {                                                        \
    return shmem_##N##_wait_until_some_vector(const_cast<T*>(v), n, ix, st, cmp, x);                            \
  }                                                                                                               \
  inline int shmem_test_all(volatile T* v, size_t n, const int* st, int cmp, T x) {                               \
    return shmem_##N##_test_all(const_cast<T*>(v), n, st, cmp, x);                                              \
  }                                                                                                               \
  inline size_t shmem_test_any(volatile T* v, size_t n, const int* st, int cmp, T x) {                            \
    return shmem_##N##_test_any(const_cast<T*>(v), n, st, cmp, x);                                              \
  }                                                                                                               \
  inline size_t shmem_test_some(volatile T* v, size_t n, size_t* ix, const int* st, int cmp, T x) {               \
    return shmem_##N##_test_some(const_cast<T*>(v), n, ix, st, cmp, x);                                         \
  }                                                                                                               \
  inline int shmem_test_all_vector(volatile T* v, size_t n, const int* st, int cmp, const T* x) {                 \
    return shmem_##N##_test_all_vector(const_cast<T*>(v), n, st, cmp, x);                                       \
  }                                                                                                               \
  inline size_t shmem_test_any_vector(volatile T* v, size_t n, const int* st, int cmp, const T* x) {              \
    return shmem_##N##_test_any_vector(const_cast<T*>(v), n, st, cmp, x);                                       \
  }                                                                                                               \
  inline size_t shmem_test_some_vector(volatile T* v, size_t n, size_t* ix, const int* st, int cmp, const T* x) { \
    return shmem_##N##_test_some_vector(const_cast<T*>(v), n, ix, st, cmp, x);                                  \
  }
SHMEM_P2P_SYNC_SET_GENERIC_TYPES(SYMMEM_CXX_SYNC_SET_VOL)
#undef SYMMEM_CXX_SYNC_SET_VOL

#define SYMMEM_CXX_IB(T, N)                                                                                        \
  inline void shmem_ibput(T* d, const T* s, SYMMEM_IB_PARAMS) { shmem_##N##_ibput(d, s, dst, sst, bsize, nblocks, pe); } \
  inline void shmem_ibget(T* d, const T* s, SYMMEM_IB_PARAMS) { shmem_##N##_ibget(d, s, dst, sst, bsize, nblocks, pe); } \
  inline void shmem_ibput(shmem_ctx_t c, T* d, const T* s, SYMMEM_IB_PARAMS) {                                   \
    shmem_ctx_##N##_ibput(c, d, s, dst, sst, bsize, nblocks, pe);                                                 \
  }                                                                                                               \
  inline void shmem_ibget(shmem_ctx_t c, T* d, const T* s, SYMMEM_IB_PARAMS) {                                   \
    shmem_ctx_##N##_ibget(c, d, s, dst, sst, bsize, nblocks, pe);                                                 \
  }
SHMEM_RMA_GENERIC_TYPES(SYMMEM_CXX_IB)
#undef SYMMEM_CXX_IB

/* Deprecated generic names (shmem_fetch, shmem_finc, ...), over the deprecated typed forms. */
#define SYMMEM_CXX_AMO_DEPR_EXT(T, N)                                                   \
  inline T shmem_fetch(const T* s, int pe) { return shmem_##N##_fetch(s, pe); }        \
  inline void shmem_set(T* d, T v, int pe) { shmem_##N##_set(d, v, pe); }              \
  inline T shmem_swap(T* d, T v, int pe) { return shmem_##N##_swap(d, v, pe); }
SHMEM_AMO_DEPR_EXT_TYPES(SYMMEM_CXX_AMO_DEPR_EXT)
#undef SYMMEM_CXX_AMO_DEPR_EXT
#define SYMMEM_CXX_AMO_DEPR(T, N)                                                           \
  inline T shmem_cswap(T* d, T c, T v, int pe) { return shmem_##N##_cswap(d, c, v, pe); }  \
  inline T shmem_finc(T* d, int pe) { return shmem_##N##_finc(d, pe); }                    \
  inline void shmem_inc(T* d, int pe) { shmem_##N##_inc(d, pe); }                          \
  inline T shmem_fadd(T* d, T v, int pe) { return shmem_##N##_fadd(d, v, pe); }            \
  inline void shmem_add(T* d, T v, int pe) { shmem_##N##_add(d, v, pe); }
SHMEM_AMO_DEPR_TYPES(SYMMEM_CXX_AMO_DEPR)
#undef SYMMEM_CXX_AMO_DEPR

#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* ---- C11 generic selection: the first argument picks the context form ---- */

/* Never defined: a generic call with a type outside the tables fails to compile. */
SHMEM_API void symmem_c11_type_not_supported(void);

#define SYMMEM_ARG0_(a, ...) a
#define SYMMEM_ARG1_(a, b, ...) b
/* Selects on the type of the first argument (`what`, usually the destination), or on the
 * second one when the first is a context. */
#define SYMMEM_GENERIC_CTX_(LIST, SEL, SEL_CTX, ...)                                                          \
  _Generic(SYMMEM_ARG0_(__VA_ARGS__, 0),                                                                      \
      shmem_ctx_t: _Generic(SYMMEM_ARG1_(__VA_ARGS__, 0, 0) LIST(SEL_CTX), default: symmem_c11_type_not_supported), \
      default: _Generic(SYMMEM_ARG0_(__VA_ARGS__, 0) LIST(SEL), default: symmem_c11_type_not_supported))(__VA_ARGS__)
#define SYMMEM_GENERIC_(LIST, SEL, ...) \
  _Generic(SYMMEM_ARG0_(__VA_ARGS__, 0) LIST(SEL), default: symmem_c11_type_not_supported)(__VA_ARGS__)

#define SYMMEM_SEL_(T, F) , T*: F
#define SYMMEM_SELC_(T, F) , T*: F, const T*: F
/* RMA */
#define SYMMEM_S_PUT(T, N) SYMMEM_SEL_(T, shmem_##N##_put)
#define SYMMEM_S_PUT_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_put)
#define SYMMEM_S_GET(T, N) SYMMEM_SEL_(T, shmem_##N##_get)
#define SYMMEM_S_GET_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_get)
#define SYMMEM_S_PUT_NBI(T, N) SYMMEM_SEL_(T, shmem_##N##_put_nbi)
#define SYMMEM_S_PUT_NBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_put_nbi)
#define SYMMEM_S_GET_NBI(T, N) SYMMEM_SEL_(T, shmem_##N##_get_nbi)
#define SYMMEM_S_GET_NBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_get_nbi)
#define SYMMEM_S_P(T, N) SYMMEM_SEL_(T, shmem_##N##_p)
#define SYMMEM_S_P_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_p)
#define SYMMEM_S_G(T, N) SYMMEM_SELC_(T, shmem_##N##_g)
#define SYMMEM_S_G_C(T, N) SYMMEM_SELC_(T, shmem_ctx_##N##_g)
#define SYMMEM_S_IPUT(T, N) SYMMEM_SEL_(T, shmem_##N##_iput)
#define SYMMEM_S_IPUT_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_iput)
#define SYMMEM_S_IGET(T, N) SYMMEM_SEL_(T, shmem_##N##_iget)
#define SYMMEM_S_IGET_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_iget)
#define SYMMEM_S_PUT_SIG(T, N) SYMMEM_SEL_(T, shmem_##N##_put_signal)
#define SYMMEM_S_PUT_SIG_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_put_signal)
#define SYMMEM_S_PUT_SIG_NBI(T, N) SYMMEM_SEL_(T, shmem_##N##_put_signal_nbi)
#define SYMMEM_S_PUT_SIG_NBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_put_signal_nbi)
#define shmem_put(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_PUT, SYMMEM_S_PUT_C, __VA_ARGS__)
#define shmem_get(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_GET, SYMMEM_S_GET_C, __VA_ARGS__)
#define shmem_put_nbi(...) \
  SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_PUT_NBI, SYMMEM_S_PUT_NBI_C, __VA_ARGS__)
#define shmem_get_nbi(...) \
  SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_GET_NBI, SYMMEM_S_GET_NBI_C, __VA_ARGS__)
#define shmem_p(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_P, SYMMEM_S_P_C, __VA_ARGS__)
#define shmem_g(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_G, SYMMEM_S_G_C, __VA_ARGS__)
#define shmem_iput(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_IPUT, SYMMEM_S_IPUT_C, __VA_ARGS__)
#define shmem_iget(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_IGET, SYMMEM_S_IGET_C, __VA_ARGS__)
#define shmem_put_signal(...) \
  SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_PUT_SIG, SYMMEM_S_PUT_SIG_C, __VA_ARGS__)
#define shmem_put_signal_nbi(...) \
  SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_PUT_SIG_NBI, SYMMEM_S_PUT_SIG_NBI_C, __VA_ARGS__)
#define SYMMEM_S_IBPUT(T, N) SYMMEM_SEL_(T, shmem_##N##_ibput)
#define SYMMEM_S_IBPUT_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_ibput)
#define SYMMEM_S_IBGET(T, N) SYMMEM_SEL_(T, shmem_##N##_ibget)
#define SYMMEM_S_IBGET_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_ibget)
#define shmem_ibput(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_IBPUT, SYMMEM_S_IBPUT_C, __VA_ARGS__)
#define shmem_ibget(...) SYMMEM_GENERIC_CTX_(SHMEM_RMA_GENERIC_TYPES, SYMMEM_S_IBGET, SYMMEM_S_IBGET_C, __VA_ARGS__)

/* Atomics: SYMMEM_S_A(OP) makes the pair of selectors of shmem_atomic_OP. */
#define SYMMEM_S_AF(T, N) SYMMEM_SELC_(T, shmem_##N##_atomic_fetch)
#define SYMMEM_S_AF_C(T, N) SYMMEM_SELC_(T, shmem_ctx_##N##_atomic_fetch)
#define SYMMEM_S_ASET(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_set)
#define SYMMEM_S_ASET_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_set)
#define SYMMEM_S_ASWAP(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_swap)
#define SYMMEM_S_ASWAP_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_swap)
#define SYMMEM_S_AFNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_nbi)
#define SYMMEM_S_AFNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_nbi)
#define SYMMEM_S_ASWAPNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_swap_nbi)
#define SYMMEM_S_ASWAPNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_swap_nbi)
#define SYMMEM_S_ACSWAP(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_compare_swap)
#define SYMMEM_S_ACSWAP_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_compare_swap)
#define SYMMEM_S_AFINC(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_inc)
#define SYMMEM_S_AFINC_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_inc)
#define SYMMEM_S_AINC(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_inc)
#define SYMMEM_S_AINC_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_inc)
#define SYMMEM_S_AFADD(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_add)
#define SYMMEM_S_AFADD_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_add)
#define SYMMEM_S_AADD(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_add)
#define SYMMEM_S_AADD_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_add)
#define SYMMEM_S_ACSWAPNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_compare_swap_nbi)
#define SYMMEM_S_ACSWAPNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_compare_swap_nbi)
#define SYMMEM_S_AFINCNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_inc_nbi)
#define SYMMEM_S_AFINCNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_inc_nbi)
#define SYMMEM_S_AFADDNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_add_nbi)
#define SYMMEM_S_AFADDNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_add_nbi)
#define SYMMEM_S_AAND(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_and)
#define SYMMEM_S_AAND_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_and)
#define SYMMEM_S_AOR(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_or)
#define SYMMEM_S_AOR_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_or)
#define SYMMEM_S_AXOR(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_xor)
#define SYMMEM_S_AXOR_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_xor)
#define SYMMEM_S_AFAND(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_and)
#define SYMMEM_S_AFAND_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_and)
#define SYMMEM_S_AFOR(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_or)
#define SYMMEM_S_AFOR_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_or)
#define SYMMEM_S_AFXOR(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_xor)
#define SYMMEM_S_AFXOR_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_xor)
#define SYMMEM_S_AFANDNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_and_nbi)
#define SYMMEM_S_AFANDNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_and_nbi)
#define SYMMEM_S_AFORNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_or_nbi)
#define SYMMEM_S_AFORNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_or_nbi)
#define SYMMEM_S_AFXORNBI(T, N) SYMMEM_SEL_(T, shmem_##N##_atomic_fetch_xor_nbi)
#define SYMMEM_S_AFXORNBI_C(T, N) SYMMEM_SEL_(T, shmem_ctx_##N##_atomic_fetch_xor_nbi)
#define SYMMEM_EXT_ SHMEM_AMO_EXT_GENERIC_TYPES
#define SYMMEM_STD_ SHMEM_AMO_STD_GENERIC_TYPES
#define SYMMEM_BIT_ SHMEM_AMO_BITWISE_GENERIC_TYPES
#define shmem_atomic_fetch(...) SYMMEM_GENERIC_CTX_(SYMMEM_EXT_, SYMMEM_S_AF, SYMMEM_S_AF_C, __VA_ARGS__)
#define shmem_atomic_set(...) SYMMEM_GENERIC_CTX_(SYMMEM_EXT_, SYMMEM_S_ASET, SYMMEM_S_ASET_C, __VA_ARGS__)
#define shmem_atomic_swap(...) SYMMEM_GENERIC_CTX_(SYMMEM_EXT_, SYMMEM_S_ASWAP, SYMMEM_S_ASWAP_C, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SYMMEM_GENERIC_CTX_(SYMMEM_EXT_, SYMMEM_S_AFNBI, SYMMEM_S_AFNBI_C, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_EXT_, SYMMEM_S_ASWAPNBI, SYMMEM_S_ASWAPNBI_C, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_ACSWAP, SYMMEM_S_ACSWAP_C, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_AFINC, SYMMEM_S_AFINC_C, __VA_ARGS__)
#define shmem_atomic_inc(...) SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_AINC, SYMMEM_S_AINC_C, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_AFADD, SYMMEM_S_AFADD_C, __VA_ARGS__)
#define shmem_atomic_add(...) SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_AADD, SYMMEM_S_AADD_C, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_ACSWAPNBI, SYMMEM_S_ACSWAPNBI_C, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_AFINCNBI, SYMMEM_S_AFINCNBI_C, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_STD_, SYMMEM_S_AFADDNBI, SYMMEM_S_AFADDNBI_C, __VA_ARGS__)
#define shmem_atomic_and(...) SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AAND, SYMMEM_S_AAND_C, __VA_ARGS__)
#define shmem_atomic_or(...) SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AOR, SYMMEM_S_AOR_C, __VA_ARGS__)
#define shmem_atomic_xor(...) SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AXOR, SYMMEM_S_AXOR_C, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AFAND, SYMMEM_S_AFAND_C, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AFOR, SYMMEM_S_AFOR_C, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AFXOR, SYMMEM_S_AFXOR_C, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AFANDNBI, SYMMEM_S_AFANDNBI_C, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AFORNBI, SYMMEM_S_AFORNBI_C, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) \
  SYMMEM_GENERIC_CTX_(SYMMEM_BIT_, SYMMEM_S_AFXORNBI, SYMMEM_S_AFXORNBI_C, __VA_ARGS__)

/* Deprecated generic atomics (before 1.4), over the deprecated typed forms. */
#define SYMMEM_S_DFETCH(T, N) SYMMEM_SELC_(T, shmem_##N##_fetch)
#define SYMMEM_S_DSET(T, N) SYMMEM_SEL_(T, shmem_##N##_set)
#define SYMMEM_S_DSWAP(T, N) SYMMEM_SEL_(T, shmem_##N##_swap)
#define SYMMEM_S_DCSWAP(T, N) SYMMEM_SEL_(T, shmem_##N##_cswap)
#define SYMMEM_S_DFINC(T, N) SYMMEM_SEL_(T, shmem_##N##_finc)
#define SYMMEM_S_DINC(T, N) SYMMEM_SEL_(T, shmem_##N##_inc)
#define SYMMEM_S_DFADD(T, N) SYMMEM_SEL_(T, shmem_##N##_fadd)
#define SYMMEM_S_DADD(T, N) SYMMEM_SEL_(T, shmem_##N##_add)
#define shmem_fetch(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_EXT_TYPES, SYMMEM_S_DFETCH, __VA_ARGS__)
#define shmem_set(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_EXT_TYPES, SYMMEM_S_DSET, __VA_ARGS__)
#define shmem_swap(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_EXT_TYPES, SYMMEM_S_DSWAP, __VA_ARGS__)
#define shmem_cswap(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_TYPES, SYMMEM_S_DCSWAP, __VA_ARGS__)
#define shmem_finc(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_TYPES, SYMMEM_S_DFINC, __VA_ARGS__)
#define shmem_inc(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_TYPES, SYMMEM_S_DINC, __VA_ARGS__)
#define shmem_fadd(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_TYPES, SYMMEM_S_DFADD, __VA_ARGS__)
#define shmem_add(...) SYMMEM_GENERIC_(SHMEM_AMO_DEPR_TYPES, SYMMEM_S_DADD, __VA_ARGS__)

/* Point-to-point synchronization. An ivar may be `T*` or `volatile T*` (programs often
 * declare `static volatile long flag;`): the volatile entry selects a shim that passes the
 * same address on (the library reads ivars with atomic loads, never cached). */
#define SYMMEM_VOL_(T) (T*)(uintptr_t)
#define SYMMEM_C11_VOL_SYNC(T, N)                                                                     \
  static inline void symmem_vol_##N##_wait_until(volatile T* v, int cmp, T x) {                       \
    shmem_##N##_wait_until(SYMMEM_VOL_(T) v, cmp, x);                                                 \
  }                                                                                                   \
  static inline int symmem_vol_##N##_test(volatile T* v, int cmp, T x) {                              \
    return shmem_##N##_test(SYMMEM_VOL_(T) v, cmp, x);                                                \
  }
SHMEM_P2P_SYNC_GENERIC_TYPES(SYMMEM_C11_VOL_SYNC)
#undef SYMMEM_C11_VOL_SYNC
#define SYMMEM_C11_VOL_SET(T, N)                                                                                  \
  static inline void symmem_vol_##N##_wait_until_all(volatile T* v, size_t n, const int* st, int cmp, T x) {     \
    shmem_##N##_wait_until_all(SYMMEM_VOL_(T) v, n, st, cmp, x);                                                 \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_wait_until_any(volatile T* v, size_t n, const int* st, int cmp, T x) {   \
    return shmem_##N##_wait_until_any(SYMMEM_VOL_(T) v, n, st, cmp, x);                                          \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_wait_until_some(volatile T* v, size_t n, size_t* ix, const int* st,      \
                                                        int cmp, T x) {                                           \
    return shmem_##N##_wait_until_some(SYMMEM_VOL_(T) v, n, ix, st, cmp, x);                                     \
  }                                                                                                               \
  static inline void symmem_vol_##N##_wait_until_all_vector(volatile T* v, size_t n, const int* st, int cmp,     \
                                                            const T* x) {                                         \
    shmem_##N##_wait_until_all_vector(SYMMEM_VOL_(T) v, n, st, cmp, x);                                          \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_wait_until_any_vector(volatile T* v, size_t n, const int* st, int cmp,   \
                                                              const T* x) {                                       \
    return shmem_##N##_wait_until_any_vector(SYMMEM_VOL_(T) v, n, st, cmp, x);                                   \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_wait_until_some_vector(volatile T* v, size_t n, size_t* ix,              \
                                                               const int* st, int cmp, const T* x) {              \
    return shmem_##N##_wait_until_some_vector(SYMMEM_VOL_(T) v, n, ix, st, cmp, x);                              \
  }                                                                                                               \
  static inline int symmem_vol_##N##_test_all(volatile T* v, size_t n, const int* st, int cmp, T x) {            \
    return shmem_##N##_test_all(SYMMEM_VOL_(T) v, n, st, cmp, x);                                                \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_test_any(volatile T* v, size_t n, const int* st, int cmp, T x) {         \
    return shmem_##N##_test_any(SYMMEM_VOL_(T) v, n, st, cmp, x);                                                \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_test_some(volatile T* v, size_t n, size_t* ix, const int* st, int cmp,   \
                                                  T x) {                                                          \
    return shmem_##N##_test_some(SYMMEM_VOL_(T) v, n, ix, st, cmp, x);                                           \
  }                                                                                                               \
  static inline int symmem_vol_##N##_test_all_vector(volatile T* v, size_t n, const int* st, int cmp,            \
                                                     const T* x) {                                                \
    return shmem_##N##_test_all_vector(SYMMEM_VOL_(T) v, n, st, cmp, x);                                         \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_test_any_vector(volatile T* v, size_t n, const int* st, int cmp,         \
                                                        const T* x) {                                             \
    return shmem_##N##_test_any_vector(SYMMEM_VOL_(T) v, n, st, cmp, x);                                         \
  }                                                                                                               \
  static inline size_t symmem_vol_##N##_test_some_vector(volatile T* v, size_t n, size_t* ix, const int* st,     \
                                                         int cmp, const T* x) {                                   \
    return shmem_##N##_test_some_vector(SYMMEM_VOL_(T) v, n, ix, st, cmp, x);                                    \
  }
SHMEM_P2P_SYNC_SET_GENERIC_TYPES(SYMMEM_C11_VOL_SET)
#undef SYMMEM_C11_VOL_SET
/* SYMMEM_SELV_(T, N, F): T* selects shmem_N_F, volatile T* its shim. */
#define SYMMEM_SELV_(T, N, F) , T*: shmem_##N##_##F, volatile T*: symmem_vol_##N##_##F
#define SYMMEM_S_WU(T, N) SYMMEM_SELV_(T, N, wait_until)
#define SYMMEM_S_TEST(T, N) SYMMEM_SELV_(T, N, test)
#define SYMMEM_S_WUALL(T, N) SYMMEM_SELV_(T, N, wait_until_all)
#define SYMMEM_S_WUANY(T, N) SYMMEM_SELV_(T, N, wait_until_any)
#define SYMMEM_S_WUSOME(T, N) SYMMEM_SELV_(T, N, wait_until_some)
#define SYMMEM_S_WUALLV(T, N) SYMMEM_SELV_(T, N, wait_until_all_vector)
#define SYMMEM_S_WUANYV(T, N) SYMMEM_SELV_(T, N, wait_until_any_vector)
#define SYMMEM_S_WUSOMEV(T, N) SYMMEM_SELV_(T, N, wait_until_some_vector)
#define SYMMEM_S_TALL(T, N) SYMMEM_SELV_(T, N, test_all)
#define SYMMEM_S_TANY(T, N) SYMMEM_SELV_(T, N, test_any)
#define SYMMEM_S_TSOME(T, N) SYMMEM_SELV_(T, N, test_some)
#define SYMMEM_S_TALLV(T, N) SYMMEM_SELV_(T, N, test_all_vector)
#define SYMMEM_S_TANYV(T, N) SYMMEM_SELV_(T, N, test_any_vector)
#define SYMMEM_S_TSOMEV(T, N) SYMMEM_SELV_(T, N, test_some_vector)
#define shmem_wait_until(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_GENERIC_TYPES, SYMMEM_S_WU, __VA_ARGS__)
#define shmem_test(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_GENERIC_TYPES, SYMMEM_S_TEST, __VA_ARGS__)
#define shmem_wait_until_all(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_WUALL, __VA_ARGS__)
#define shmem_wait_until_any(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_WUANY, __VA_ARGS__)
#define shmem_wait_until_some(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_WUSOME, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_WUALLV, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_WUANYV, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_WUSOMEV, __VA_ARGS__)
#define shmem_test_all(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_TALL, __VA_ARGS__)
#define shmem_test_any(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_TANY, __VA_ARGS__)
#define shmem_test_some(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_TSOME, __VA_ARGS__)
#define shmem_test_all_vector(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_TALLV, __VA_ARGS__)
#define shmem_test_any_vector(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_TANYV, __VA_ARGS__)
#define shmem_test_some_vector(...) SYMMEM_GENERIC_(SHMEM_P2P_SYNC_SET_GENERIC_TYPES, SYMMEM_S_TSOMEV, __VA_ARGS__)

#endif /* C11 */

#endif /* SYMMEM_SHMEM_P2P_H */
