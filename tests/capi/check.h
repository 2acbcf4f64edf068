/* The failure check of the C conformance programs written for this suite (p2p_workqueue.c
 * keeps its own: it stands for a program written without knowledge of symmem). Counts
 * failures in `failures` and prints the first one with its PE and line. A program that
 * must not call shmem_my_pe (the deprecated API's) defines CHECK_MY_PE first. */
#ifndef SYMMEM_TESTS_CAPI_CHECK_H
#define SYMMEM_TESTS_CAPI_CHECK_H
#include <stdio.h>

#ifndef CHECK_MY_PE
#define CHECK_MY_PE shmem_my_pe()
#endif

static int failures;
#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond) && failures++ == 0) {                                       \
      fprintf(stderr, "FAIL [pe %d] line %d: ", CHECK_MY_PE, __LINE__);     \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
    }                                                                       \
  } while (0)

#endif
