/* symmem/aclshmem.h — Ascend aclshmem's host API on symmem.
 *
 * A program written for aclshmem's host interface (init with attributes or a unique id,
 * symmetric malloc, put/get, barriers, teams, store TLS, finalize) compiles unchanged
 * against this header and runs on symmem. It is a thin skin: every aclshmem name maps to
 * the symmem/OpenSHMEM call of the same meaning (docs/init.md, "aclshmem programs").
 *
 * What maps to what:
 *  - engines: ACLSHMEM_DATA_OP_MTE = symmem's on-node shared memory; ROCE/SDMA/UDMA ask
 *    for the network transport (not built yet: init fails and says so).
 *  - aclshmemx_init_attr: the same three modes. In DEFAULT mode an ip_port wins, else the
 *    unique id in comm_args (as in aclshmem), else the launcher's environment.
 *  - teams are small integers as in aclshmem (ACLSHMEM_TEAM_WORLD = 0).
 *  - the store is TLS 1.3 by default in symmem (aclshmem's current code ships with TLS
 *    off); aclshmemx_set_conf_store_tls(false, ...) switches it off.
 * Device-side (AICore) calls, streams and engine UB configuration have no meaning on a
 * host and are not provided. */
#ifndef SYMMEM_ACLSHMEM_H
#define SYMMEM_ACLSHMEM_H

#include <shmemx.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACLSHMEM_HOST_API
#define ACLSHMEM_MAX_PES 16384
#define ACLSHMEM_MAX_IP_PORT_LEN 64
#define ACLSHMEM_UNIQUE_ID_INNER_LEN 124
#define ACLSHMEM_MAX_NAME_LEN 256
#define ACLSHMEM_PAGE_SIZE (2UL * 1024UL * 1024UL)
#define ACLSHMEM_DEFAULT_TIMEOUT 120

/* ---- error codes ---- */
typedef int aclshmem_error_code_t;
enum {
  ACLSHMEM_SUCCESS = 0,
  ACLSHMEM_INVALID_PARAM = -1,
  ACLSHMEM_INVALID_VALUE = -2,
  ACLSHMEM_SMEM_ERROR = -3,
  ACLSHMEM_INNER_ERROR = -4,
  ACLSHMEM_NOT_INITED = -5,
  ACLSHMEM_BOOTSTRAP_ERROR = -6,
  ACLSHMEM_TIMEOUT_ERROR = -7,
  ACLSHMEM_MALLOC_FAILED = -8,
  ACLSHMEM_DL_FUNC_FAILED = -9,
  ACLSHMEM_INNER_TIMEOUT = -10,
  ACLSHMEM_UNDER_API_UNLOAD = -11,
  ACLSHMEM_NOT_SUPPORTED = -100
};

/* ---- init modes, engines, status ---- */
typedef unsigned int aclshmemx_bootstrap_t;
enum {
  ACLSHMEMX_INIT_WITH_DEFAULT = 1 << 0,
  ACLSHMEMX_INIT_WITH_MPI = 1 << 1,
  ACLSHMEMX_INIT_WITH_UNIQUEID = 1 << 3
};
#define ACLSHMEMX_INIT_MAX (1U << 31)

typedef int data_op_engine_type_t;
enum {
  ACLSHMEM_DATA_OP_MTE = 0x01,
  ACLSHMEM_DATA_OP_SDMA = 0x02,
  ACLSHMEM_DATA_OP_ROCE = 0x04,
  ACLSHMEM_DATA_OP_UDMA = 0x08,
  ACLSHMEM_DATA_OP_MAX = 0x08
};

typedef int aclshmemx_init_status_t;
enum {
  ACLSHMEM_STATUS_NOT_INITIALIZED = SHMEMX_STATUS_NOT_INITIALIZED,
  ACLSHMEM_STATUS_SHM_CREATED = SHMEMX_STATUS_SHM_CREATED,
  ACLSHMEM_STATUS_IS_INITIALIZED = SHMEMX_STATUS_IS_INITIALIZED,
  ACLSHMEM_STATUS_INVALID = SHMEMX_STATUS_INVALID
};

/* ---- attributes and unique id (same sizes and field order as aclshmem's) ---- */
typedef struct aclshmem_init_optional_attr_t { /* tagged: C++ default member initializers */
  int version;
  data_op_engine_type_t data_op_engine_type;
  uint32_t shm_init_timeout;          /* seconds */
  uint32_t shm_create_timeout;        /* seconds */
  uint32_t control_operation_timeout; /* seconds */
#ifdef __cplusplus
  int32_t sockFd = 0; /* accepted, unused; aclshmem's initializers leave it out */
#else
  int32_t sockFd;
#endif
} aclshmem_init_optional_attr_t;

typedef struct aclshmemx_init_attr_t {
  int my_pe;
  int n_pes;
  char ip_port[ACLSHMEM_MAX_IP_PORT_LEN];
  uint64_t local_mem_size;
#ifdef __cplusplus
  aclshmem_init_optional_attr_t option_attr = {(1 << 16) + (int)sizeof(aclshmem_init_optional_attr_t),
                                               ACLSHMEM_DATA_OP_MTE, ACLSHMEM_DEFAULT_TIMEOUT,
                                               ACLSHMEM_DEFAULT_TIMEOUT, ACLSHMEM_DEFAULT_TIMEOUT, 0};
  void* comm_args = nullptr;
  uint64_t instance_id = 0;
#else
  aclshmem_init_optional_attr_t option_attr;
  void* comm_args;
  uint64_t instance_id;
#endif
} aclshmemx_init_attr_t;

typedef shmemx_uniqueid_t aclshmemx_uniqueid_t;
#define ACLSHMEM_UNIQUEID_VERSION SHMEMX_UNIQUEID_VERSION
#define ACLSHMEM_UNIQUEID_INITIALIZER SHMEMX_UNIQUEID_INITIALIZER

/* ---- teams: integers, as in aclshmem ---- */
typedef int aclshmem_team_t;
enum { ACLSHMEM_TEAM_INVALID = -1, ACLSHMEM_TEAM_WORLD = 0 };

/* Implemented in libsymmem (capi/aclshmem.cpp): the integer <-> team handle table. */
SHMEM_API shmem_team_t symmem_aclshmem_team(aclshmem_team_t team);
SHMEM_API int aclshmem_team_split_strided(aclshmem_team_t parent, int pe_start, int pe_stride, int pe_size,
                                          aclshmem_team_t* new_team);
SHMEM_API int aclshmem_team_split_2d(aclshmem_team_t parent, int x_range, aclshmem_team_t* x_team,
                                     aclshmem_team_t* y_team);
SHMEM_API void aclshmem_team_destroy(aclshmem_team_t team);

static inline int aclshmem_team_my_pe(aclshmem_team_t team) { return shmem_team_my_pe(symmem_aclshmem_team(team)); }
static inline int aclshmem_team_n_pes(aclshmem_team_t team) { return shmem_team_n_pes(symmem_aclshmem_team(team)); }
static inline int aclshmem_team_translate_pe(aclshmem_team_t src_team, int src_pe, aclshmem_team_t dest_team) {
  return shmem_team_translate_pe(symmem_aclshmem_team(src_team), src_pe, symmem_aclshmem_team(dest_team));
}

/* ---- init / finalize ---- */
static inline int aclshmemx_init_attr(aclshmemx_bootstrap_t flags, aclshmemx_init_attr_t* a) {
  if (!a) return shmemx_init_attr((shmemx_bootstrap_t)flags, NULL);
  shmemx_init_attr_t s;
  memset(&s, 0, sizeof s);
  s.my_pe = a->my_pe;
  s.n_pes = a->n_pes;
  memcpy(s.ip_port, a->ip_port, sizeof s.ip_port);
  s.local_mem_size = a->local_mem_size;
  s.option_attr.version = SHMEMX_INIT_ATTR_VERSION;
  int engine = a->option_attr.data_op_engine_type;
  s.option_attr.transport = engine == 0 || engine == ACLSHMEM_DATA_OP_MTE ? SHMEMX_TRANSPORT_SHM : SHMEMX_TRANSPORT_UCX;
  s.option_attr.init_timeout = a->option_attr.shm_init_timeout;
  s.option_attr.create_timeout = a->option_attr.shm_create_timeout;
  s.option_attr.control_operation_timeout = a->option_attr.control_operation_timeout;
  s.comm_args = a->comm_args;
  s.instance_id = a->instance_id;
  shmemx_bootstrap_t mode = (shmemx_bootstrap_t)flags;
  /* aclshmem's DEFAULT: a valid ip_port wins, else the unique id in comm_args. */
  if (flags == ACLSHMEMX_INIT_WITH_DEFAULT && s.ip_port[0] == '\0' && s.comm_args) mode = SHMEMX_INIT_WITH_UNIQUEID;
  return shmemx_init_attr(mode, &s);
}
static inline int aclshmemx_get_uniqueid(aclshmemx_uniqueid_t* uid) { return shmemx_get_uniqueid(uid); }
static inline int aclshmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size,
                                                   aclshmemx_uniqueid_t* uid, aclshmemx_init_attr_t* attr) {
  if (!attr || !uid || n_pes < 1 || my_pe < 0 || my_pe >= n_pes || local_mem_size <= 0) return ACLSHMEM_INVALID_PARAM;
  attr->my_pe = my_pe;
  attr->n_pes = n_pes;
  attr->ip_port[0] = '\0';
  attr->local_mem_size = (uint64_t)local_mem_size;
  attr->option_attr.version = (1 << 16) + (int)sizeof(aclshmem_init_optional_attr_t);
  attr->option_attr.data_op_engine_type = ACLSHMEM_DATA_OP_MTE;
  attr->option_attr.shm_init_timeout = ACLSHMEM_DEFAULT_TIMEOUT;
  attr->option_attr.shm_create_timeout = ACLSHMEM_DEFAULT_TIMEOUT;
  attr->option_attr.control_operation_timeout = ACLSHMEM_DEFAULT_TIMEOUT;
  attr->option_attr.sockFd = 0;
  attr->comm_args = uid;
  attr->instance_id = 0;
  return ACLSHMEM_SUCCESS;
}
static inline int aclshmemx_init_status(void) { return shmemx_init_status(); }
static inline int aclshmem_finalize(void) {
  int on = 0;
  shmem_query_initialized(&on);
  if (!on) return ACLSHMEM_NOT_INITED;
  shmem_finalize();
  return ACLSHMEM_SUCCESS;
}
static inline int aclshmemx_finalize(uint64_t instance_id) { return shmemx_instance_finalize(instance_id); }
static inline int aclshmemx_instance_ctx_set(uint64_t instance_id) { return shmemx_instance_select(instance_id); }
static inline void aclshmem_global_exit(int status) { shmem_global_exit(status); }
static inline void aclshmem_info_get_version(int* major, int* minor) { shmem_info_get_version(major, minor); }
static inline void aclshmem_info_get_name(char* name) { shmem_info_get_name(name); }
static inline int32_t aclshmemx_set_conf_store_tls(bool enable, const char* tls_info, uint32_t tls_info_len) {
  return shmemx_set_conf_store_tls(enable, tls_info, tls_info_len);
}

/* ---- PE numbers, memory ---- */
static inline int aclshmem_my_pe(void) { return shmem_my_pe(); }
static inline int aclshmem_n_pes(void) { return shmem_n_pes(); }
static inline void* aclshmem_malloc(size_t size) { return shmem_malloc(size); }
static inline void* aclshmem_calloc(size_t nmemb, size_t size) { return shmem_calloc(nmemb, size); }
static inline void* aclshmem_align(size_t alignment, size_t size) { return shmem_align(alignment, size); }
static inline void aclshmem_free(void* ptr) { shmem_free(ptr); }
static inline void* aclshmem_ptr(void* ptr, int pe) { return shmem_ptr(ptr, pe); }

/* ---- RMA ---- */
static inline void aclshmem_putmem(void* dst, void* src, size_t n, int32_t pe) { shmem_putmem(dst, src, n, pe); }
static inline void aclshmem_getmem(void* dst, void* src, size_t n, int32_t pe) { shmem_getmem(dst, src, n, pe); }
static inline void aclshmem_putmem_nbi(void* dst, void* src, size_t n, int32_t pe) { shmem_putmem_nbi(dst, src, n, pe); }
static inline void aclshmem_getmem_nbi(void* dst, void* src, size_t n, int32_t pe) { shmem_getmem_nbi(dst, src, n, pe); }

/* aclshmem's host type list: X(TYPE, aclshmem name, OpenSHMEM name). */
#define SYMMEM_ACLSHMEM_TYPES(X)                                                              \
  X(float, float, float) X(double, double, double) X(int8_t, int8, int8) X(int16_t, int16, int16) \
  X(int32_t, int32, int32) X(int64_t, int64, int64) X(uint8_t, uint8, uint8)                  \
  X(uint16_t, uint16, uint16) X(uint32_t, uint32, uint32) X(uint64_t, uint64, uint64) X(char, char, char)

#define SYMMEM_ACLSHMEM_RMA(T, A, S)                                                                       \
  static inline void aclshmem_##A##_put(T* dest, T* source, size_t nelems, int pe) {                      \
    shmem_##S##_put(dest, source, nelems, pe);                                                             \
  }                                                                                                        \
  static inline void aclshmem_##A##_get(T* dest, T* source, size_t nelems, int pe) {                      \
    shmem_##S##_get(dest, source, nelems, pe);                                                             \
  }                                                                                                        \
  static inline void aclshmem_##A##_put_nbi(T* dest, T* source, size_t nelems, int pe) {                  \
    shmem_##S##_put_nbi(dest, source, nelems, pe);                                                         \
  }                                                                                                        \
  static inline void aclshmem_##A##_get_nbi(T* dest, T* source, size_t nelems, int pe) {                  \
    shmem_##S##_get_nbi(dest, source, nelems, pe);                                                         \
  }                                                                                                        \
  static inline void aclshmem_##A##_p(T* dst, const T value, int pe) { shmem_##S##_p(dst, value, pe); }   \
  static inline T aclshmem_##A##_g(T* src, int32_t pe) { return shmem_##S##_g(src, pe); }
SYMMEM_ACLSHMEM_TYPES(SYMMEM_ACLSHMEM_RMA)
#undef SYMMEM_ACLSHMEM_RMA

#define SYMMEM_ACLSHMEM_SIZED(BITS, BYTES)                                                            \
  static inline void aclshmem_put##BITS(void* dst, void* src, uint32_t nelems, int32_t pe) {         \
    shmem_put##BITS(dst, src, nelems, pe);                                                            \
  }                                                                                                   \
  static inline void aclshmem_get##BITS(void* dst, void* src, uint32_t nelems, int32_t pe) {         \
    shmem_get##BITS(dst, src, nelems, pe);                                                            \
  }                                                                                                   \
  static inline void aclshmem_put##BITS##_nbi(void* dst, void* src, uint32_t nelems, int32_t pe) {   \
    shmem_put##BITS##_nbi(dst, src, nelems, pe);                                                      \
  }                                                                                                   \
  static inline void aclshmem_get##BITS##_nbi(void* dst, void* src, uint32_t nelems, int32_t pe) {   \
    shmem_get##BITS##_nbi(dst, src, nelems, pe);                                                      \
  }
SHMEM_RMA_SIZES(SYMMEM_ACLSHMEM_SIZED)
#undef SYMMEM_ACLSHMEM_SIZED

/* ---- synchronisation (host: each is a full barrier, as in aclshmem) ---- */
static inline void aclshmem_barrier_all(void) { shmem_barrier_all(); }
static inline void aclshmem_sync_all(void) { shmem_barrier_all(); }
static inline void aclshmem_barrier(aclshmem_team_t team) {
  shmem_quiet();
  shmem_team_sync(symmem_aclshmem_team(team));
}
static inline void aclshmem_sync(aclshmem_team_t team) { aclshmem_barrier(team); }

#ifdef __cplusplus
}
#endif
#endif /* SYMMEM_ACLSHMEM_H */
