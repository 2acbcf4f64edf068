/* symmem/shmem_coll.h — teams and collectives of the OpenSHMEM 1.5 C API (plus the 1.6
 * scans); included by shmem.h.
 *
 * Teams. A team is an ordered set of PEs; every team symmem creates is an arithmetic
 * progression of world PEs (start, stride, size), as split_strided and split_2d produce.
 * SHMEM_TEAM_WORLD holds every PE; SHMEM_TEAM_SHARED the PEs that share memory with the
 * caller (on one node: the world). Team creation (split_*) is collective over the parent
 * team; every PE of the parent calls it with the same arguments. PEs that are not members
 * of the new team get SHMEM_TEAM_INVALID and a zero return. An invalid triplet, or no free
 * team slot (each team owns a slot of the metadata region; at most
 * shmemx_team_max_teams() teams exist at once, the predefined ones included), returns
 * nonzero on every PE of the parent with SHMEM_TEAM_INVALID, and logs one line saying why.
 * shmem_team_destroy is collective over the team's members.
 *
 * Team-based collectives (shmem_sync, broadcast, collect, fcollect, alltoall(s),
 * reductions, scans): every member of the team calls them with the same arguments (except
 * collect's nelems, which may differ). The caller need not synchronise before: the call
 * waits until every member's source is ready. On return the local dest holds the result
 * and the local source may be reused. Source and dest are symmetric; they must not overlap
 * except that reductions and scans may run in place (dest == source). They return 0, or
 * nonzero for SHMEM_TEAM_INVALID. Floating-point reductions and scans combine operands in
 * team PE order (0, 1, ..., n-1) for every element, so every PE of every run gets the same
 * bits. Algorithms: docs/collectives.md.
 *
 * Active-set collectives (deprecated by the standard, kept for existing code): the set is
 * PE_start, PE_start + 2^logPE_stride, ... (PE_size PEs); only its members call. pSync
 * must hold SHMEM_*_SYNC_SIZE longs initialised to SHMEM_SYNC_VALUE on every member before
 * the first use; the call leaves it so again. A pSync may be reused at once by the same
 * active set; pWrk is not used by symmem. 32/64 name the element size in bits.
 *
 * Thread safety: collectives on one team are called by one thread of each PE at a time.
 * Errors: a call the library cannot carry out (a PE outside the team, a bad team handle on
 * a void call) prints one line naming the call and ends the job. */
#ifndef SYMMEM_SHMEM_COLL_H
#define SYMMEM_SHMEM_COLL_H
#ifdef __cplusplus
extern "C" {
#endif

/* ---- teams ---- */
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_WORLD ((shmem_team_t)1)
#define SHMEM_TEAM_SHARED ((shmem_team_t)2)
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

typedef struct {
  int num_contexts; /* contexts the program means to create from the team (default 0) */
} shmem_team_config_t;

SHMEM_API int shmem_team_my_pe(shmem_team_t team);  /* -1 for SHMEM_TEAM_INVALID */
SHMEM_API int shmem_team_n_pes(shmem_team_t team);  /* -1 for SHMEM_TEAM_INVALID */
SHMEM_API int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config);
/* `src_pe` of src_team as a PE number of dest_team, or -1 if it is not in both. */
SHMEM_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
SHMEM_API int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                                       const shmem_team_config_t* config, long config_mask,
                                       shmem_team_t* new_team);
SHMEM_API int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                                  long xaxis_mask, shmem_team_t* xaxis_team,
                                  const shmem_team_config_t* yaxis_config, long yaxis_mask,
                                  shmem_team_t* yaxis_team);
SHMEM_API void shmem_team_destroy(shmem_team_t team);
/* Local address of `pe`'s (team PE number) copy of dest, or NULL if not load/store reachable. */
SHMEM_API void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe);
/* A context whose point-to-point calls number PEs within `team` (not collective). Returns
 * 0, or nonzero with SHMEM_CTX_INVALID for SHMEM_TEAM_INVALID or unknown options. Destroy
 * it with shmem_ctx_destroy before the team. shmem_ctx_get_team gives the team back
 * (SHMEM_TEAM_WORLD for SHMEM_CTX_DEFAULT and shmem_ctx_create's contexts; nonzero and
 * SHMEM_TEAM_INVALID for SHMEM_CTX_INVALID). */
SHMEM_API int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx);
SHMEM_API int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team);

/* ---- synchronisation ----
 * shmem_team_sync: every member has arrived (no memory completion implied). The active-set
 * shmem_barrier also completes this PE's outstanding puts (quiet) first; shmem_sync
 * (active set) does not. shmem_sync(team) and shmem_sync(start, logstride, size, pSync)
 * are told apart by their argument count. */
SHMEM_API int shmem_team_sync(shmem_team_t team);
SHMEM_API void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync);
SHMEM_API void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync);
#define SYMMEM_SYNC_PICK(a, b, c, d, f, ...) f
#define shmem_sync(...) \
  SYMMEM_SYNC_PICK(__VA_ARGS__, shmem_sync, shmem_sync, shmem_sync, shmem_team_sync, none)(__VA_ARGS__)

/* ---- active-set constants ---- */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 34
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- data collectives over teams ----
 * broadcast: PE_root's (team PE number) source into every member's dest, the root's
 *   included. collect: members' sources concatenated in team PE order (nelems may differ
 *   per PE). fcollect: same, nelems equal everywhere. alltoall: block j of PE i's source
 *   goes to block i of PE j's dest (blocks of nelems). alltoalls: the same with element
 *   strides dst / sst (>= 1, in elements). *mem forms count bytes. */
SHMEM_API int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root);
SHMEM_API int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
SHMEM_API int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
SHMEM_API int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
SHMEM_API int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                                 size_t nelems);

#define SYMMEM_DECL_COLL(T, N)                                                                               \
  SHMEM_API int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root); \
  SHMEM_API int shmem_##N##_collect(shmem_team_t team, T* dest, const T* source, size_t nelems);               \
  SHMEM_API int shmem_##N##_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems);              \
  SHMEM_API int shmem_##N##_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems);              \
  SHMEM_API int shmem_##N##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst,             \
                                      ptrdiff_t sst, size_t nelems);
SHMEM_RMA_TYPES(SYMMEM_DECL_COLL)
#undef SYMMEM_DECL_COLL

/* ---- reductions and scans over teams ----
 * dest[j] = source_0[j] OP source_1[j] OP ... on every member (team PE order). Scans:
 * inscan dest[j] on team PE i = sum of source_k[j], k = 0..i; exscan k = 0..i-1 (0 on PE 0). */
#define SYMMEM_DECL_REDUCE(T, N, OP) \
  SHMEM_API int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce);
SHMEM_REDUCE_TABLE(SYMMEM_DECL_REDUCE)
#undef SYMMEM_DECL_REDUCE
#define SYMMEM_DECL_SCAN(T, N, OP)                                                                        \
  SHMEM_API int shmem_##N##_sum_inscan(shmem_team_t team, T* dest, const T* source, size_t nelems);       \
  SHMEM_API int shmem_##N##_sum_exscan(shmem_team_t team, T* dest, const T* source, size_t nelems);
SHMEM_REDUCE_ARITH_TYPES(SYMMEM_DECL_SCAN, sum)
#undef SYMMEM_DECL_SCAN

/* ---- active-set collectives ---- */
SHMEM_API void shmem_broadcast32(void* dest, const void* source, size_t nelems, int PE_root, int PE_start,
                                 int logPE_stride, int PE_size, long* pSync);
SHMEM_API void shmem_broadcast64(void* dest, const void* source, size_t nelems, int PE_root, int PE_start,
                                 int logPE_stride, int PE_size, long* pSync);
SHMEM_API void shmem_collect32(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,
                               int PE_size, long* pSync);
SHMEM_API void shmem_collect64(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,
                               int PE_size, long* pSync);
SHMEM_API void shmem_fcollect32(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,
                                int PE_size, long* pSync);
SHMEM_API void shmem_fcollect64(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,
                                int PE_size, long* pSync);
SHMEM_API void shmem_alltoall32(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,
                                int PE_size, long* pSync);
SHMEM_API void shmem_alltoall64(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,
                                int PE_size, long* pSync);
SHMEM_API void shmem_alltoalls32(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                                 int PE_start, int logPE_stride, int PE_size, long* pSync);
SHMEM_API void shmem_alltoalls64(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                                 int PE_start, int logPE_stride, int PE_size, long* pSync);
#define SYMMEM_DECL_TO_ALL(T, N, OP)                                                                        \
  SHMEM_API void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce, int PE_start,             \
                                           int logPE_stride, int PE_size, T* pWrk, long* pSync);
SHMEM_TO_ALL_TABLE(SYMMEM_DECL_TO_ALL)
#undef SYMMEM_DECL_TO_ALL

#ifdef __cplusplus
} /* extern "C" */

/* C++ overloads of the generic names. */
#define SYMMEM_CXX_COLL(T, N)                                                                           \
  inline int shmem_broadcast(shmem_team_t t, T* d, const T* s, size_t n, int root) {                    \
    return shmem_##N##_broadcast(t, d, s, n, root);                                                     \
  }                                                                                                     \
  inline int shmem_collect(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_collect(t, d, s, n); } \
  inline int shmem_fcollect(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_fcollect(t, d, s, n); } \
  inline int shmem_alltoall(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_alltoall(t, d, s, n); } \
  inline int shmem_alltoalls(shmem_team_t t, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n) { \
    return shmem_##N##_alltoalls(t, d, s, dst, sst, n);                                                 \
  }
SHMEM_RMA_GENERIC_TYPES(SYMMEM_CXX_COLL)
#undef SYMMEM_CXX_COLL
#define SYMMEM_CXX_REDUCE(T, N, OP)                                        \
  inline int shmem_##OP##_reduce(shmem_team_t t, T* d, const T* s, size_t n) { \
    return shmem_##N##_##OP##_reduce(t, d, s, n);                           \
  }
SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_CXX_REDUCE, and)
SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_CXX_REDUCE, or)
SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_CXX_REDUCE, xor)
SHMEM_REDUCE_GENERIC_MINMAX_TYPES(SYMMEM_CXX_REDUCE, max)
SHMEM_REDUCE_GENERIC_MINMAX_TYPES(SYMMEM_CXX_REDUCE, min)
SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_CXX_REDUCE, sum)
SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_CXX_REDUCE, prod)
#undef SYMMEM_CXX_REDUCE
#define SYMMEM_CXX_SCAN(T, N, OP)                                                                               \
  inline int shmem_sum_inscan(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_sum_inscan(t, d, s, n); } \
  inline int shmem_sum_exscan(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_sum_exscan(t, d, s, n); }
SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_CXX_SCAN, sum)
#undef SYMMEM_CXX_SCAN

#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* C11 generic selection over the same tables, on the type of dest. */
#define SYMMEM_GEN_BCAST(T, N) , T*: shmem_##N##_broadcast
#define SYMMEM_GEN_COLLECT(T, N) , T*: shmem_##N##_collect
#define SYMMEM_GEN_FCOLLECT(T, N) , T*: shmem_##N##_fcollect
#define SYMMEM_GEN_ALLTOALL(T, N) , T*: shmem_##N##_alltoall
#define SYMMEM_GEN_ALLTOALLS(T, N) , T*: shmem_##N##_alltoalls
#define SYMMEM_GEN_REDUCE(T, N, OP) , T*: shmem_##N##_##OP##_reduce
#define SYMMEM_GEN_INSCAN(T, N, OP) , T*: shmem_##N##_sum_inscan
#define SYMMEM_GEN_EXSCAN(T, N, OP) , T*: shmem_##N##_sum_exscan
#define shmem_broadcast(team, dest, ...) \
  _Generic((dest) SHMEM_RMA_GENERIC_TYPES(SYMMEM_GEN_BCAST))(team, dest, __VA_ARGS__)
#define shmem_collect(team, dest, ...) \
  _Generic((dest) SHMEM_RMA_GENERIC_TYPES(SYMMEM_GEN_COLLECT))(team, dest, __VA_ARGS__)
#define shmem_fcollect(team, dest, ...) \
  _Generic((dest) SHMEM_RMA_GENERIC_TYPES(SYMMEM_GEN_FCOLLECT))(team, dest, __VA_ARGS__)
#define shmem_alltoall(team, dest, ...) \
  _Generic((dest) SHMEM_RMA_GENERIC_TYPES(SYMMEM_GEN_ALLTOALL))(team, dest, __VA_ARGS__)
#define shmem_alltoalls(team, dest, ...) \
  _Generic((dest) SHMEM_RMA_GENERIC_TYPES(SYMMEM_GEN_ALLTOALLS))(team, dest, __VA_ARGS__)
#define shmem_and_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_GEN_REDUCE, and))(team, dest, __VA_ARGS__)
#define shmem_or_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_GEN_REDUCE, or))(team, dest, __VA_ARGS__)
#define shmem_xor_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_GEN_REDUCE, xor))(team, dest, __VA_ARGS__)
#define shmem_max_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_MINMAX_TYPES(SYMMEM_GEN_REDUCE, max))(team, dest, __VA_ARGS__)
#define shmem_min_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_MINMAX_TYPES(SYMMEM_GEN_REDUCE, min))(team, dest, __VA_ARGS__)
#define shmem_sum_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_GEN_REDUCE, sum))(team, dest, __VA_ARGS__)
#define shmem_prod_reduce(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_GEN_REDUCE, prod))(team, dest, __VA_ARGS__)
#define shmem_sum_inscan(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_GEN_INSCAN, sum))(team, dest, __VA_ARGS__)
#define shmem_sum_exscan(team, dest, ...) \
  _Generic((dest) SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_GEN_EXSCAN, sum))(team, dest, __VA_ARGS__)

#endif
#endif
