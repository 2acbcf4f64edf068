/* Shared by the C conformance programs in tests/capi: failure reporting and small helpers.
 *
 * A program's verdict is its exit code. CHECK records a failure and keeps going, so that
 * every PE still reaches the same collective calls (an early return on one PE would hang
 * the others); only the first failure on each PE is printed, as one line. FATAL is for
 * the cases where going on makes no sense (an allocation returned NULL): it ends the whole
 * job with shmem_global_exit(1).
 *
 * Written against the OpenSHMEM standard only, so the same files build with oshcc. */
#ifndef CAPI_CHECK_H
#define CAPI_CHECK_H

#include <sched.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int capi_failures;

#define CAPI_REPORT_(...)                                                        \
  do {                                                                           \
    fprintf(stderr, "FAIL [pe %d] %s:%d: ", shmem_my_pe(), __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                                                \
    fputc('\n', stderr);                                                         \
    fflush(stderr);                                                              \
  } while (0)

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond) && capi_failures++ == 0) CAPI_REPORT_(__VA_ARGS__); \
  } while (0)

#define FATAL(...)                  \
  do {                              \
    CAPI_REPORT_(__VA_ARGS__);      \
    shmem_global_exit(1);           \
  } while (0)

/* Open MPI's OSHMEM (the reference we validate against) departs from the standard in
 * two ways the programs here can see: shmem_calloc zeroes the block *after* its exit
 * barrier (a peer's put issued right after the call can be wiped), and shmem_malloc(0) /
 * shmem_align(a, 0) return non-NULL. malloc.c checks both and skips those checks, with a
 * note, when built against OSHMEM; the other programs use capi_zalloc instead. */
#ifdef OSHMEM_MAJOR_VERSION
#define CAPI_OSHMEM 1
#else
#define CAPI_OSHMEM 0
#endif

/* A zeroed symmetric array that peers may write to as soon as this returns. */
static inline void *capi_zalloc(size_t count, size_t size) {
  void *p = shmem_malloc(count * size);
  if (p) memset(p, 0, count * size);
  shmem_barrier_all();
  return p;
}

/* Ends the program: finalize, then the exit code is the verdict. */
static inline int capi_finish(void) {
  shmem_finalize();
  return capi_failures ? 1 : 0;
}

static inline double capi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits until the local symmetric word *flag equals value, reading it with a get from
 * this PE (which also gives a library that needs it a chance to make progress). After
 * 30 s it ends the job with a message rather than hanging until the test's timeout. */
static inline void capi_wait_long(long *flag, long value, const char *what) {
  const int me = shmem_my_pe();
  const double deadline = capi_now() + 30.0;
  long seen;
  unsigned spins = 0;
  while ((seen = shmem_long_g(flag, me)) != value) {
    /* Yield once spinning has not paid off: tests run with more PEs than cores, and
     * the PE we wait for may need this core. */
    if (++spins > 64) sched_yield();
    if ((spins & 1023) == 0 && capi_now() > deadline)
      FATAL("timed out waiting for %s == %ld (it is %ld)", what, value, seen);
  }
}

#endif /* CAPI_CHECK_H */
