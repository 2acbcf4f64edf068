/* symmem/shmemx_dfx.h — naming symmetric memory for symmem's reports (docs/dfx.md);
 * included by shmemx.h. */
#ifndef SYMMEM_SHMEMX_DFX_H
#define SYMMEM_SHMEMX_DFX_H
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Gives the live symmetric allocation that contains `ptr` a name; SYMMEM_CHECK reports and
 * the other DFX reports then say "'halo' (allocation #3, 64K) +4096" instead of the bare
 * number. Local (no communication): call it on every PE whose reports should use it. The
 * name is copied; it goes away when the block is freed. Returns 0, or -1 when `ptr` is in no
 * live allocation (global and static variables need no name: reports use their symbol). */
SHMEM_API int shmemx_set_name(const void* ptr, const char* name);

#ifdef __cplusplus
}
#endif
#endif
