/* symmem/shmem_coll.h — included by shmem.h; see the header's comment. */
#ifndef SYMMEM_SHMEM_COLL_H
#define SYMMEM_SHMEM_COLL_H
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
