/* mpp/shmem.h — the deprecated SGI SHMEM header path (OpenSHMEM "Deprecated API"). */
#include <shmem.h>
