/* mpp/shmemx.h — the deprecated SGI SHMEM header path of shmemx.h. */
#include <shmemx.h>
