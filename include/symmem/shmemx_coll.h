/* symmem/shmemx_coll.h — symmem's team extensions; included by shmemx.h. */
#ifndef SYMMEM_SHMEMX_COLL_H
#define SYMMEM_SHMEMX_COLL_H
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The PEs on the caller's node (same members as SHMEM_TEAM_SHARED). Predefined: never
 * destroyed. */
#define SHMEMX_TEAM_NODE ((shmem_team_t)3)

/* Team barrier: completes this PE's outstanding puts and nbi operations (quiet), then
 * synchronises the team's members, so every member sees every put issued before the
 * barrier. Collective over the team. Returns 0, or nonzero for SHMEM_TEAM_INVALID. */
SHMEM_API int shmemx_team_barrier(shmem_team_t team);

/* How many teams may exist at once on a PE, the predefined ones included (team state lives
 * in fixed slots of the metadata region; SYMMEM_METADATA_SIZE sets how many fit). */
SHMEM_API int shmemx_team_max_teams(void);

#ifdef __cplusplus
}
#endif
#endif
