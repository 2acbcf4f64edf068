/* shmemx.h — symmem's extensions to OpenSHMEM (init attributes, unique ids, node teams,
 * team barrier, names for reports) and Sandia OpenSHMEM's shmemx_ names of 1.6 routines. Includes shmem.h. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#include "symmem/shmemx_init.h"
#include "symmem/shmemx_coll.h"
#include "symmem/shmemx_sos.h"
#include "symmem/shmemx_dfx.h"
#include "symmem/shmemx_device.h"

#endif
