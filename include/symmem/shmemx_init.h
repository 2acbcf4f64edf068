/* symmem/shmemx_init.h — init modes, unique ids, store security and instances (included
 * by shmemx.h). The shapes and values follow Ascend's aclshmem (symmem/aclshmem.h maps its
 * names onto these); docs/init.md describes every mode and variable.
 *
 * Thread safety: init, finalize, instance selection and the store-TLS setting are called
 * by one thread of the process at a time. */
#ifndef SYMMEM_SHMEMX_INIT_H
#define SYMMEM_SHMEMX_INIT_H
#include <shmem.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Return values of the calls below (0 = success). */
#define SHMEMX_SUCCESS 0
#define SHMEMX_INVALID_PARAM (-1)    /* a bad argument or attribute */
#define SHMEMX_INVALID_VALUE (-2)    /* the call is not valid now (already initialized, ...) */
#define SHMEMX_INNER_ERROR (-4)
#define SHMEMX_NOT_INITED (-5)
#define SHMEMX_BOOTSTRAP_ERROR (-6)  /* the store refused us, or PEs disagree */
#define SHMEMX_TIMEOUT_ERROR (-7)    /* a PE did not arrive within the init timeout */
#define SHMEMX_MALLOC_FAILED (-8)    /* the heap cannot be reserved or backed */
#define SHMEMX_NOT_SUPPORTED (-100)

/* How shmemx_init_attr finds the job. */
typedef enum {
  SHMEMX_INIT_WITH_DEFAULT = 1 << 0,  /* the launcher's environment (or 1 PE) */
  SHMEMX_INIT_WITH_MPI = 1 << 1,      /* ranks and id exchange through MPI (comm_args: MPI_Comm*) */
  SHMEMX_INIT_WITH_UNIQUEID = 1 << 3  /* an id from shmemx_get_uniqueid (comm_args: shmemx_uniqueid_t*) */
} shmemx_bootstrap_t;

/* A job's unique id: 136 bytes, copy it whole. It contains the job's secret. */
#define SHMEMX_UNIQUEID_INNER_LEN 124
typedef struct {
  int32_t version;
  int my_pe;
  int n_pes;
  char internal[SHMEMX_UNIQUEID_INNER_LEN];
} shmemx_uniqueid_t;
#define SHMEMX_UNIQUEID_VERSION ((1 << 16) + 136)
#define SHMEMX_UNIQUEID_INITIALIZER {SHMEMX_UNIQUEID_VERSION, -1, 0, {0}}
/* Text form for files and environment variables: "symmem-uid1:" + 272 hex digits. */
#define SHMEMX_UNIQUEID_TEXT_LEN 285 /* including the terminating NUL */

typedef enum {
  SHMEMX_TRANSPORT_AUTO = 0,
  SHMEMX_TRANSPORT_SHM = 1, /* on-node shared memory (aclshmem's MTE) */
  SHMEMX_TRANSPORT_UCX = 2  /* network (aclshmem's ROCE); not built yet */
} shmemx_transport_t;

typedef struct {
  int version;                        /* 0 or SHMEMX_INIT_ATTR_VERSION */
  int transport;                      /* shmemx_transport_t */
  uint32_t init_timeout;              /* seconds; 0 = SYMMEM_INIT_TIMEOUT */
  uint32_t create_timeout;            /* seconds; accepted, same as init_timeout */
  uint32_t control_operation_timeout; /* seconds; 0 = SYMMEM_OP_TIMEOUT */
  int32_t reserved;
} shmemx_init_optional_attr_t;

#define SHMEMX_MAX_IP_PORT_LEN 64
typedef struct {
  int my_pe;   /* UNIQUEID: this PE; DEFAULT: overrides the launcher's when n_pes > 0 */
  int n_pes;   /* UNIQUEID: the job's PE count; DEFAULT: 0 or -1 = the launcher's */
  char ip_port[SHMEMX_MAX_IP_PORT_LEN]; /* "" or tcp://host:port / tcp6://[addr]:port: DEFAULT:
                                           the store (PE 0 hosts it); UNIQUEID: where PEs
                                           other than the id's creator connect */
  uint64_t local_mem_size;              /* symmetric heap bytes; 0 = SHMEM_SYMMETRIC_SIZE */
  shmemx_init_optional_attr_t option_attr;
  void* comm_args;      /* UNIQUEID: shmemx_uniqueid_t*; MPI: MPI_Comm* (NULL = MPI_COMM_WORLD) */
  uint64_t instance_id; /* 0 = the default instance */
} shmemx_init_attr_t;
#define SHMEMX_INIT_ATTR_VERSION 1
#define SHMEMX_INIT_ATTR_INITIALIZER {-1, -1, "", 0, {SHMEMX_INIT_ATTR_VERSION, 0, 0, 0, 0, 0}, NULL, 0}

/* Collective over the job's PEs. Initializes instance attr->instance_id (attr may be NULL
 * with SHMEMX_INIT_WITH_DEFAULT) and selects it for the OpenSHMEM calls. Returns
 * SHMEMX_SUCCESS or a negative code after logging one line that says what is wrong (the
 * PEs that differ, the one that did not arrive, ...). Initializing an instance that is
 * already up is a no-op that returns SHMEMX_SUCCESS. */
SHMEM_API int shmemx_init_attr(shmemx_bootstrap_t flags, shmemx_init_attr_t* attr);
/* Creates a new job hosted by this process (it starts the job's store) and fills *uid. Call
 * it on one PE (PE 0) and give the id to every PE. The store uses the TLS mode set by
 * shmemx_set_conf_store_tls / SYMMEM_STORE_TLS at this moment. */
SHMEM_API int shmemx_get_uniqueid(shmemx_uniqueid_t* uid);
/* attr = {my_pe, n_pes, local_mem_size, comm_args = uid}, other fields default. */
SHMEM_API int shmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size, shmemx_uniqueid_t* uid,
                                  shmemx_init_attr_t* attr);
SHMEM_API int shmemx_uniqueid_to_string(const shmemx_uniqueid_t* uid, char* text, size_t len);
SHMEM_API int shmemx_uniqueid_from_string(const char* text, shmemx_uniqueid_t* uid);

/* Store security for the inits (and ids) that follow. enable=false switches TLS off (a
 * warning is logged at init); enable=true with tls_info NULL/empty is TLS with the
 * pre-shared key (the default); tls_info "tlsCaFile: ca.pem; tlsCert: me.pem; tlsPk:
 * me.key; tlsCrlFile: crl.pem" selects certificates. */
SHMEM_API int shmemx_set_conf_store_tls(bool enable, const char* tls_info, uint32_t tls_info_len);

typedef enum {
  SHMEMX_STATUS_NOT_INITIALIZED = 0,
  SHMEMX_STATUS_SHM_CREATED = 1, /* inside init, the heap exists */
  SHMEMX_STATUS_IS_INITIALIZED = 2,
  SHMEMX_STATUS_INVALID = 0x7fffffff
} shmemx_init_status_t;
/* State of the selected instance. */
SHMEM_API int shmemx_init_status(void);
/* Extension (the standard has shmem_query_initialized only, in shmem.h): *finalized = 1
 * once shmem_finalize has ended the last instance. Returns SHMEMX_SUCCESS, or
 * SHMEMX_INVALID_PARAM when finalized is NULL. */
SHMEM_API int shmem_query_finalized(int* finalized);

/* Instances: independent runtimes of one process, each with its PEs, heap and store. Every
 * OpenSHMEM call acts on the selected instance (instance 0 after shmem_init). */
SHMEM_API int shmemx_instance_select(uint64_t instance_id);
SHMEM_API uint64_t shmemx_instance_current(void);
/* Finalizes one instance (collective over its PEs). shmem_finalize finalizes the selected
 * one; afterwards instance 0 is selected again if it is up. */
SHMEM_API int shmemx_instance_finalize(uint64_t instance_id);

#ifdef __cplusplus
}
#endif
#endif
