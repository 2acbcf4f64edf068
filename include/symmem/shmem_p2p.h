/* symmem/shmem_p2p.h — included by shmem.h; see the header's comment. */
#ifndef SYMMEM_SHMEM_P2P_H
#define SYMMEM_SHMEM_P2P_H
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
