/* symmem/shmemx_coll.h — included by shmemx.h. */
#ifndef SYMMEM_SHMEMX_COLL_H
#define SYMMEM_SHMEMX_COLL_H
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
