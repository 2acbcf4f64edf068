/* symmem/shmemx_init.h — included by shmemx.h. */
#ifndef SYMMEM_SHMEMX_INIT_H
#define SYMMEM_SHMEMX_INIT_H
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
