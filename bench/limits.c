/* limits.c: the machine's limits that the performance page measures every library against,
 * with no communication library at all. Output and options: bench_util.h.
 *
 *   cacheline_pingpong  two threads pinned to two different cores pass one 64-byte line
 *                       back and forth (each waits for the other's store, then stores);
 *                       one-way time, i.e. half a round trip                         us
 *   memcpy_1stream      memcpy of SIZE between two private buffers, one thread        GB/s
 *   memcpy_2stream      the same in two threads on two cores at once, each with its
 *                       own buffers; per-stream bandwidth over the slower thread     GB/s
 *
 * Every figure is the median of its samples, sampled as the benchmarks are (--samples of
 * about --target-ms each), so that a ratio to a limit compares like with like. (The
 * cache-line figure used to be the best of 31 1-ms samples: on this shared VM the best
 * sample catches a minute in which the host runs the two vCPUs on one core's two threads,
 * 2-5x faster than the median, which the benchmarks' medians cannot match.)
 *
 * memcpy is measured at each SIZE and at 2 x SIZE: in a 2-PE fcollect or alltoall every PE
 * writes 2 x SIZE bytes, so that is the copy the page compares them with.
 *
 * A memcpy sample repeats the copy of the same buffers, as the benchmarks repeat their
 * transfers, so small sizes run from cache in both. Copies are checked against the source
 * after every sample, the ping-pong by the values passed. With one core online the second
 * thread shares it, and a "# note" line says so. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "bench_util.h"

static bench_opts O;
static int ncpu, failures;
static int cpu_of[2];

static void pin(int which) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu_of[which], &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* ---- cache-line ping-pong ---- */

static _Alignas(64) _Atomic long line[8];
static long pp_iters;
static int pp_bad;

static _Atomic int pong_ready;

static void *pong(void *arg) {
  (void)arg;
  pin(1);
  atomic_store(&pong_ready, 1);
  for (long i = 0; i < pp_iters; ++i) {
    const long want = 2 * i + 1;
    long v;
    while ((v = atomic_load_explicit(&line[0], memory_order_acquire)) != want)
      if (v < 0) return NULL;
    atomic_store_explicit(&line[0], want + 1, memory_order_release);
  }
  return NULL;
}

/* Returns the one-way time in us for `iters` round trips. */
static double pingpong(long iters) {
  pthread_t th;
  pp_iters = iters;
  atomic_store(&line[0], 0);
  atomic_store(&pong_ready, 0);
  pthread_create(&th, NULL, pong, NULL);
  pin(0);
  /* the clock starts once the partner runs on its core: waking an idle (virtual) CPU and
   * migrating a new thread take far longer than a round trip, and would be timed too */
  while (!atomic_load(&pong_ready)) {
  }
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
    atomic_store_explicit(&line[0], 2 * i + 1, memory_order_release);
    while (atomic_load_explicit(&line[0], memory_order_acquire) != 2 * i + 2) {
    }
  }
  const double t = bench_now_us() - t0;
  pthread_join(th, NULL);
  if (atomic_load(&line[0]) != 2 * iters) ++pp_bad;
  return t / (double)iters / 2;
}

/* ---- memcpy ---- */

typedef struct {
  int which;
  size_t size;
  long iters;
  unsigned char *src, *dst;
  double us;
} stream;

static _Atomic int go, ready;

static void copy_loop(stream *s) {
  const double t0 = bench_now_us();
  for (long i = 0; i < s->iters; ++i) {
    memcpy(s->dst, s->src, s->size);
    __asm__ __volatile__("" ::"r"(s->dst) : "memory");
  }
  s->us = bench_now_us() - t0;
}

static void *stream_thread(void *arg) {
  stream *s = arg;
  pin(s->which);
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&go)) {
  }
  copy_loop(s);
  return NULL;
}

/* Runs `n` streams (1 or 2) of `iters` copies at once; returns the slower one's us. */
static double copies(stream *st, int n, long iters, uint64_t seed) {
  pthread_t t[2];
  for (int k = 0; k < n; ++k) {
    st[k].iters = iters;
    bench_fill(st[k].src, st[k].size, seed + (uint64_t)k);
  }
  if (n == 1) {
    pin(0);
    copy_loop(&st[0]);
  } else {
    atomic_store(&go, 0);
    atomic_store(&ready, 0);
    for (int k = 0; k < n; ++k) pthread_create(&t[k], NULL, stream_thread, &st[k]);
    while (atomic_load(&ready) != n) {
    }
    atomic_store(&go, 1);
    for (int k = 0; k < n; ++k) pthread_join(t[k], NULL);
  }
  double worst = 0;
  for (int k = 0; k < n; ++k) {
    if (bench_check(st[k].dst, st[k].size, seed + (uint64_t)k) >= 0) {
      fprintf(stderr, "limits: memcpy of %zu bytes (stream %d) copied wrong data\n", st[k].size, k);
      ++failures;
    }
    worst = st[k].us > worst ? st[k].us : worst;
  }
  return worst;
}

static void memcpy_bench(const char *name, int n, size_t size) {
  stream st[2];
  memset(st, 0, sizeof st);
  for (int k = 0; k < n; ++k) {
    st[k].which = k;
    st[k].size = size;
    st[k].src = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    st[k].dst = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!st[k].src || !st[k].dst) {
      fprintf(stderr, "limits: cannot allocate %zu bytes\n", size);
      exit(1);
    }
    memset(st[k].dst, 0, size);
  }
  const int before = failures;
  uint64_t seed = size * 31;
  copies(st, n, 1, ++seed);
  const double est = copies(st, n, 3, ++seed) / 3;
  const long iters = bench_iters_for(&O, est);
  const int samples = bench_samples_for(&O, est, iters);
  double t[kBenchMaxSamples];
  for (int s = 0; s < samples; ++s) t[s] = copies(st, n, iters, ++seed) / (double)iters;
  /* the median, the statistic every benchmark reports, so that a ratio to this limit
   * compares like with like (the best sample would flatter the limit on a shared VM) */
  const double us = bench_median(t, samples);
  bench_row(name, size, (double)size / (us * 1e3), "GB/s", failures != before);
  for (int k = 0; k < n; ++k) {
    free(st[k].src);
    free(st[k].dst);
  }
}

int main(int argc, char **argv) {
  bench_parse(argc, argv, &O);
  /* add 2 x SIZE for every SIZE (see the top of the file), in ascending order, no repeats */
  for (int k = 0, n = O.nsizes; k < n && O.nsizes < kBenchMaxSizes; ++k) {
    int seen = 0;
    for (int j = 0; j < O.nsizes; ++j) seen |= O.sizes[j] == 2 * O.sizes[k];
    if (!seen) O.sizes[O.nsizes++] = 2 * O.sizes[k];
  }
  for (int k = 1; k < O.nsizes; ++k)
    for (int j = k; j > 0 && O.sizes[j - 1] > O.sizes[j]; --j) {
      const size_t x = O.sizes[j];
      O.sizes[j] = O.sizes[j - 1];
      O.sizes[j - 1] = x;
    }
  ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  cpu_of[0] = 0;
  cpu_of[1] = ncpu > 1 ? 1 : 0;
  printf("# limits: %d cores online; median of %d samples\n", ncpu, O.samples);
  if (ncpu < 2) printf("# note limits: one core online, the two threads share it\n");
  printf("bench,size,value,unit\n");
  fflush(stdout);

  if (bench_selected(&O, "cacheline_pingpong")) {
    /* sampled like the benchmarks' ping-pongs: O.samples samples of about O.target_us */
    pingpong(1000);
    const double est = pingpong(10000) * 2;
    const long iters = bench_iters_for(&O, est);
    const int samples = bench_samples_for(&O, est, iters);
    double t[kBenchMaxSamples];
    for (int s = 0; s < samples; ++s) t[s] = pingpong(iters);
    bench_row("cacheline_pingpong", 64, bench_median(t, samples), "us", pp_bad != 0);
    failures += pp_bad;
  }
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "memcpy_1stream")) memcpy_bench("memcpy_1stream", 1, O.sizes[k]);
  for (int k = 0; k < O.nsizes; ++k)
    if (bench_selected(&O, "memcpy_2stream")) memcpy_bench("memcpy_2stream", 2, O.sizes[k]);

  printf(failures ? "# done: %d WRONG results\n" : "# done: all results validated\n", failures);
  return failures ? 1 : 0;
}
