/* allreduce.c: sum a float array across all PEs using nothing but put and barrier.
 *
 * Every PE fills `src` with its own PE number; after the all-reduce every element of
 * `dst` on every PE must be 0 + 1 + ... + (n-1). The algorithm is the classic two-step
 * one (reduce-scatter, then all-gather), written with one-sided puts:
 *
 *   1. The array is cut into n chunks; PE j owns chunk j. Every PE puts its copy of
 *      chunk j into slot [my_pe] of PE j's symmetric `scratch` area.   barrier
 *   2. Each PE adds up the n slots it received: that is its chunk of the result.
 *   3. Each PE puts its finished chunk into `dst` on every PE.          barrier
 *
 * Each PE sends and receives 2 * (n-1)/n of the array, whatever n is, and `scratch` is
 * the size of one array (n slots of one chunk), not n arrays.
 *
 * Run:  symmem-run -n 4 ./allreduce       (or oshrun -np 4 ./allreduce with Open MPI)
 * PE 0 prints, per size, the median time of one all-reduce and the algorithm bandwidth
 * (bytes of the array / time). Any wrong element ends the program with a non-zero code. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* First element and length of chunk `j` when `count` elements are cut into n chunks. */
static size_t chunk_begin(size_t count, int n, int j) { return count * (size_t)j / (size_t)n; }
static size_t chunk_len(size_t count, int n, int j) {
  return chunk_begin(count, n, j + 1) - chunk_begin(count, n, j);
}

/* dst[i] = sum over all PEs of src[i], for i < count. src, dst and scratch are symmetric;
 * scratch holds n slots of `slot` floats each (slot >= the largest chunk). Collective. */
static void allreduce_sum(const float *src, float *dst, float *scratch, size_t slot,
                          size_t count) {
  const int me = shmem_my_pe();
  const int n = shmem_n_pes();

  /* 1. reduce-scatter: chunk j of my array goes to PE j, into the slot named after me.
   *    Starting at me + 1 spreads the traffic: not everyone writes to PE 0 first. */
  for (int k = 1; k <= n; ++k) {
    const int pe = (me + k) % n;
    shmem_putmem(scratch + (size_t)me * slot, src + chunk_begin(count, n, pe),
                 chunk_len(count, n, pe) * sizeof(float), pe);
  }
  shmem_barrier_all(); /* all puts are complete: my slots are full */

  /* 2. add the n contributions to my chunk */
  const size_t begin = chunk_begin(count, n, me), len = chunk_len(count, n, me);
  float *out = dst + begin;
  memcpy(out, scratch, len * sizeof(float));
  for (int s = 1; s < n; ++s) {
    const float *in = scratch + (size_t)s * slot;
    for (size_t i = 0; i < len; ++i) out[i] += in[i];
  }

  /* 3. all-gather: my finished chunk goes to the same place in everyone's dst */
  for (int k = 1; k < n; ++k)
    shmem_putmem(out, out, len * sizeof(float), (me + k) % n);
  shmem_barrier_all(); /* dst is complete everywhere, and scratch may be reused */
}

/* Returns 1 if every dst[i] is the expected sum; otherwise prints the first bad one. */
static int verify(const float *dst, size_t count, float expected) {
  for (size_t i = 0; i < count; ++i) {
    if (dst[i] != expected) {
      fprintf(stderr, "PE %d: wrong result at index %zu of %zu: %g, expected %g\n",
              shmem_my_pe(), i, count, dst[i], expected);
      return 0;
    }
  }
  return 1;
}

int main(void) {
  static const size_t kCounts[] = {1024, 10240, 102400, 1024000, 10240000}; /* floats */
  enum { kSizes = sizeof kCounts / sizeof kCounts[0], kWarmup = 3, kReps = 15 };
  const size_t max_count = kCounts[kSizes - 1];

  shmem_init();
  const int me = shmem_my_pe();
  const int n = shmem_n_pes();

  /* Symmetric buffers, allocated once at the largest size. */
  const size_t slot = (max_count + (size_t)n - 1) / (size_t)n;
  float *src = shmem_malloc(max_count * sizeof(float));
  float *dst = shmem_malloc(max_count * sizeof(float));
  float *scratch = shmem_malloc((size_t)n * slot * sizeof(float));
  if (!src || !dst || !scratch) {
    fprintf(stderr, "PE %d: cannot allocate %zu MB of symmetric memory\n", me,
            (2 * max_count + (size_t)n * slot) * sizeof(float) >> 20);
    shmem_global_exit(1);
  }
  for (size_t i = 0; i < max_count; ++i) src[i] = (float)me;
  const float expected = (float)n * (float)(n - 1) / 2; /* 0 + 1 + ... + (n-1), exact */

  if (me == 0) {
    printf("all-reduce (sum of floats) with put + barrier, %d PEs\n", n);
    printf("%12s %14s %12s\n", "bytes", "time (us)", "algbw (GB/s)");
  }

  int ok = 1;
  for (int s = 0; s < kSizes; ++s) {
    const size_t count = kCounts[s];
    double times[kReps];
    for (int rep = -kWarmup; rep < kReps; ++rep) {
      memset(dst, 0xff, count * sizeof(float)); /* NaN: a result not written is caught */
      shmem_barrier_all();                      /* everyone starts together */
      const double t0 = now_us();
      allreduce_sum(src, dst, scratch, slot, count);
      const double t1 = now_us();
      if (rep >= 0) times[rep] = t1 - t0;
      if (ok) ok = verify(dst, count, expected); /* report only the first error */
    }
    if (me == 0) {
      qsort(times, kReps, sizeof times[0], cmp_double);
      const double median_us = times[kReps / 2];
      const double bytes = (double)(count * sizeof(float));
      printf("%12zu %14.1f %12.3f\n", count * sizeof(float), median_us,
             bytes / (median_us * 1e-6) / 1e9);
    }
  }

  /* Gather the verdicts on PE 0, so that it can say whether all PEs were right. */
  int *verdicts = shmem_malloc((size_t)n * sizeof(int));
  if (!verdicts) shmem_global_exit(1);
  shmem_int_p(&verdicts[me], ok, 0);
  shmem_barrier_all();
  if (me == 0) {
    int wrong = 0;
    for (int pe = 0; pe < n; ++pe) wrong += !verdicts[pe];
    if (wrong)
      printf("wrong results on %d of %d PEs\n", wrong, n);
    else
      printf("all results correct (%d PEs)\n", n);
  }

  shmem_free(verdicts);
  shmem_free(scratch);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return ok ? 0 : 1;
}
