/* bench_features.h: which OpenSHMEM routines the library under test declares, so that one
 * benchmark source builds against any of them and measures what each one has.
 *
 * With BENCH_HAVE_CONFIG defined, the answers come from bench_have.h, written by
 * probe_features.cmake, which compiles a one-line use of each routine against the
 * library's shmem.h (bench/CMakeLists.txt does this for symmem, bench/compare.sh for
 * OSHMEM). Without it (a plain `oshcc shmem_p2p.c`), they follow from the specification
 * version the header announces. Every BENCH_HAVE_* is 0 or 1. */
#ifndef BENCH_FEATURES_H
#define BENCH_FEATURES_H

#include <shmem.h>

#ifdef BENCH_HAVE_CONFIG
#include "bench_have.h"
#else
#define BENCH_SPEC_ (SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION)
#define BENCH_HAVE_WAIT_UNTIL (BENCH_SPEC_ >= 104)
#define BENCH_HAVE_ATOMIC_FETCH_ADD (BENCH_SPEC_ >= 104)
#define BENCH_HAVE_ATOMIC_COMPARE_SWAP (BENCH_SPEC_ >= 104)
#define BENCH_HAVE_ATOMIC_ADD (BENCH_SPEC_ >= 104)
#define BENCH_HAVE_PUTMEM_SIGNAL (BENCH_SPEC_ >= 105)
#define BENCH_HAVE_SIGNAL_WAIT_UNTIL (BENCH_SPEC_ >= 105)
#define BENCH_HAVE_BROADCASTMEM (BENCH_SPEC_ >= 105)
#define BENCH_HAVE_FCOLLECTMEM (BENCH_SPEC_ >= 105)
#define BENCH_HAVE_ALLTOALLMEM (BENCH_SPEC_ >= 105)
#define BENCH_HAVE_DOUBLE_SUM_REDUCE (BENCH_SPEC_ >= 105)
#define BENCH_HAVE_BROADCAST64 1
#define BENCH_HAVE_FCOLLECT64 1
#define BENCH_HAVE_ALLTOALL64 (BENCH_SPEC_ >= 103)
#define BENCH_HAVE_DOUBLE_SUM_TO_ALL 1
#endif

#endif /* BENCH_FEATURES_H */
