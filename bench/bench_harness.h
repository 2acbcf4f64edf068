/* bench_harness.h: the frame of every benchmark program that runs on several PEs (or
 * ranks), written once over the few calls in which OpenSHMEM and MPI differ: start-up and
 * the first line, the calibrate-and-sample loop with its median, failure counting and the
 * "# done" line. Output format and options: bench_util.h.
 *
 * A program includes one backend, bench_shmem.h or bench_mpi.h, which includes this file
 * and defines the hooks declared below with its library's calls. One translation unit per
 * program: the program's state (options, this PE, failures) lives here.
 *
 * Two modes:
 *   kBenchPairs   PE i < N/2 (an initiator) drives PE i + N/2 (its target) and all pairs
 *                 run at once; a sample's time is PE 0's own (its pair is reported).
 *   kBenchAllPEs  every PE takes part; a sample's time is the slowest PE's.
 *
 * One value (bench_measure): a warm-up call that is also a first estimate (3 calls more
 * when one is shorter than a sample should last), then the number of iterations and of
 * samples PE 0 derives from it, then the samples; the value is their median. fn validates
 * what it moved after its timed part and reports mistakes with bench_wrong.
 *
 * Paired limits. This shared 2-vCPU machine changes speed from second to second (how the
 * host places the vCPUs: one cache line passed between the two PEs takes 0.03 us in one
 * minute and 0.2 us in the next), so a limit measured by limits.c a minute earlier is a
 * poor yardstick for one benchmark row. At 2 PEs, bench_measure therefore also measures the
 * row's limit with no communication library at all, between the same two processes on the
 * same CPUs, one limit sample right before every benchmark sample:
 *   line  one 64-byte line in a POSIX shared-memory page of the harness's own, passed back
 *         and forth between PE 0 and PE 1 (each waits for the other's store, then stores;
 *         as limits.c does); one way, us
 *   copy  memcpy between two private page-aligned buffers: SIZE on PE 0 alone (kCopy1),
 *         SIZE on both PEs at once (kCopy2), or 2 x SIZE on both at once (kCopy2n: what
 *         each PE writes in a 2-PE fcollect or alltoall); us per copy, the slower PE's, or
 *         GB/s for bandwidth rows
 *   line2 a data line and a signal line in each direction: the data word stored, then the
 *         signal (a release store: plain stores, ordered by x86 itself), the receiver reads
 *         the data once the signal arrived: the floor of a put-with-signal ping-pong whose
 *         signal does not share the data's line; one way, us
 * and prints them as rows NAME__line, NAME__copy and NAME__line2 beside the row itself
 * (line and line2 for sizes up to 4 KiB, copy from 4 KiB). bench/report.py divides a row by
 * the larger of its line and copy, round by round; line2 is shown beside it. */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_util.h"

#if !defined(BENCH_PE_TAG) || !defined(BENCH_PE_NAME)
#error "include a backend (bench_shmem.h or bench_mpi.h), not bench_harness.h"
#endif

enum bench_mode { kBenchPairs, kBenchAllPEs };
enum bench_kind {
  kLatency,       /* us per iteration */
  kHalfRoundTrip, /* us per iteration / 2 */
  kBandwidth,     /* GB/s; an iteration moves a window (bench_window_for) of SIZE bytes */
  kRate           /* M/s; an iteration is kBenchWindow operations */
};
enum { kBenchWindow = 64 };
/* the limit measured beside a row at 2 PEs (see "Paired limits" above) */
enum bench_limit {
  kNoLimit,
  kLine = 1,    /* one cache line between the two PEs */
  kCopy1 = 2,   /* memcpy of SIZE, PE 0 alone */
  kCopy2 = 4,   /* memcpy of SIZE, both PEs at once */
  kCopy2n = 8,  /* memcpy of 2 x SIZE, both PEs at once */
  kLine2 = 16,  /* a data line and a signal line (put-with-signal's floor; shown, not a limit) */
};
enum { kBenchPairLineMax = 4096, kBenchPairCopyMin = 4096 };

/* fn(size, iters, seed) runs `iters` iterations on every PE and returns this PE's elapsed
 * time in us. */
typedef double (*bench_fn)(size_t size, long iters, uint64_t seed);

static bench_opts O;
static int me, npes;
static int npairs, initiator, target, peer = -1; /* kBenchPairs */
static long failures;
static const char *bench_prog;
static enum bench_mode bench_program_mode;

/* ---- the backend's hooks ---- */
static void bench_backend_init(int *argc, char ***argv); /* starts this PE: sets me, npes */
static void bench_finish(void);             /* ends this PE, after the program freed its buffers */
static const char *bench_library(void);     /* library name and version, for the first line */
static void bench_barrier(void);
static long bench_agree(long v);            /* PE 0's v, on every PE */
static double bench_max_over_pes(double t); /* the largest t, on PE 0 at least */
static long bench_sum_on_pe0(long v);       /* the sum over PEs, on PE 0 */

static void bench_start(int *argc, char ***argv, const char *prog, enum bench_mode mode) {
  bench_parse(*argc, *argv, &O);
  bench_prog = prog;
  bench_program_mode = mode;
  bench_backend_init(argc, argv);
  if (mode == kBenchPairs) {
    npairs = npes / 2;
    initiator = me < npairs;
    target = me >= npairs && me < 2 * npairs;
    peer = initiator ? me + npairs : target ? me - npairs : -1;
  }
}

/* The first line: "# PROG: LIBRARY, N PEs (P pairs), median of S samples" (kBenchPairs),
 * "# PROG: LIBRARY, N PEs, median of S samples (slowest PE)" (kBenchAllPEs). PE 0. */
static void bench_banner(void) {
  if (me != 0) return;
  if (bench_program_mode == kBenchPairs)
    printf("# %s: %s, %d %ss (%d pairs), median of %d samples\n", bench_prog, bench_library(), npes,
           BENCH_PE_NAME, npairs, O.samples);
  else
    printf("# %s: %s, %d %ss, median of %d samples (slowest %s)\n", bench_prog, bench_library(),
           npes, BENCH_PE_NAME, O.samples, BENCH_PE_NAME);
  fflush(stdout);
}

/* The column line, after the program's "# note"/"# api" lines. Returns 0 when there is
 * nothing to measure (kBenchPairs on one PE; says so). */
static int bench_columns(void) {
  if (me == 0) {
    printf("bench,size,value,unit\n");
    fflush(stdout);
  }
  if (bench_program_mode == kBenchPairs && npairs == 0) {
    if (me == 0) printf("# point-to-point benchmarks need 2 %ss\n", BENCH_PE_NAME);
    return 0;
  }
  return 1;
}

static void bench_wrong(const char *bench, size_t size, const char *what, long a, long b) {
  fprintf(stderr, "%s [%s %d] %s size %zu: wrong data: %s (%ld, %ld)\n", bench_prog, BENCH_PE_TAG,
          me, bench, size, what, a, b);
  ++failures;
}

/* Messages of one bandwidth iteration: a window of kBenchWindow, at most 16 MiB. */
static size_t bench_window_for(size_t size) {
  size_t w = (16u << 20) / size;
  return w > kBenchWindow ? kBenchWindow : w < 1 ? 1 : w;
}

/* ---- paired limits ---- */

static _Atomic long *bench_line;  /* a shared page of PE 0's and PE 1's, the line at its start */
static long bench_line_seq;       /* advances identically on PE 0 and PE 1 */
static unsigned char *bench_copy_buf[2];
static size_t bench_copy_cap;

/* Maps the harness's own shared page on PE 0 and PE 1 (collective; once). The name dies as
 * soon as both have mapped it, so nothing is left in /dev/shm. */
static int bench_line_map(void) {
  static int state; /* 0 not tried, 1 mapped, -1 failed */
  if (state) return state > 0;
  char name[64];
  const long id = bench_agree((long)getpid());
  snprintf(name, sizeof name, "/bench-line-%ld", id);
  void *p = MAP_FAILED;
  if (me == 0) {
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0 && ftruncate(fd, 4096) == 0)
      p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0) close(fd);
  }
  bench_barrier();
  if (me == 1) {
    const int fd = shm_open(name, O_RDWR, 0);
    if (fd >= 0) p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0) close(fd);
  }
  bench_barrier();
  if (me == 0) shm_unlink(name);
  const long bad = bench_sum_on_pe0(me < 2 && p == MAP_FAILED);
  state = bench_agree(bad) ? -1 : 1;
  if (state < 0) {
    if (me == 0) printf("# note paired limits: no shared page between PE 0 and PE 1; not measured\n");
    if (p != MAP_FAILED) munmap(p, 4096);
    return 0;
  }
  bench_line = (_Atomic long *)p;
  return 1;
}

/* iters round trips of the line between PE 0 and PE 1 (the other PEs return at once). */
static double bench_line_pingpong(size_t size, long iters, uint64_t seed) {
  (void)size, (void)seed;
  if (me > 1) return 0;
  const long base = bench_line_seq;
  bench_line_seq += 2 * iters;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
    const long want = base + 2 * i + (me == 0 ? 2 : 1);
    if (me == 0) atomic_store_explicit(bench_line, want - 1, memory_order_release);
    while (atomic_load_explicit(bench_line, memory_order_acquire) != want) {
    }
    if (me == 1) atomic_store_explicit(bench_line, want + 1, memory_order_release);
  }
  return bench_now_us() - t0;
}

/* iters round trips of a data word and a signal word, each in its own line, per direction
 * (lines 1-4 of the shared page). */
static double bench_line2_pingpong(size_t size, long iters, uint64_t seed) {
  (void)size, (void)seed;
  if (me > 1) return 0;
  _Atomic long *data_to[2] = {bench_line + 8, bench_line + 16};
  _Atomic long *sig_to[2] = {bench_line + 24, bench_line + 32};
  const int other = 1 - me;
  const long base = bench_line_seq;
  bench_line_seq += iters;
  long bad = 0;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
    const long v = base + i + 1;
    if (me == 0) {
      atomic_store_explicit(data_to[other], v, memory_order_relaxed);
      atomic_store_explicit(sig_to[other], v, memory_order_release);
    }
    while (atomic_load_explicit(sig_to[me], memory_order_acquire) != v) {
    }
    bad += atomic_load_explicit(data_to[me], memory_order_relaxed) != v;
    if (me == 1) {
      atomic_store_explicit(data_to[other], v, memory_order_relaxed);
      atomic_store_explicit(sig_to[other], v, memory_order_release);
    }
  }
  const double t = bench_now_us() - t0;
  if (bad) bench_wrong("paired two-line ping-pong", 8, "data before signal, times", bad, 0);
  return t;
}

static int bench_copy_mode; /* the kCopy* being measured */

static size_t bench_copy_bytes(size_t size) { return bench_copy_mode == kCopy2n ? 2 * size : size; }

/* iters copies of the mode's bytes between this PE's two private buffers (PE 0 alone for
 * kCopy1); checked at the end. */
static double bench_copy(size_t size, long iters, uint64_t seed) {
  const size_t n = bench_copy_bytes(size);
  if (me > 1 || (bench_copy_mode == kCopy1 && me != 0)) return 0;
  if (n > bench_copy_cap) {
    for (int k = 0; k < 2; ++k) {
      free(bench_copy_buf[k]);
      bench_copy_buf[k] = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
      if (!bench_copy_buf[k]) {
        fprintf(stderr, "%s [%s %d]: cannot allocate %zu bytes\n", bench_prog, BENCH_PE_TAG, me, n);
        exit(1);
      }
      memset(bench_copy_buf[k], 0, n);
    }
    bench_copy_cap = n;
  }
  bench_fill(bench_copy_buf[0], n, seed);
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) memcpy(bench_copy_buf[1], bench_copy_buf[0], n);
  const double t = bench_now_us() - t0;
  if (bench_check(bench_copy_buf[1], n, seed) >= 0) bench_wrong("paired memcpy", n, "copy", 0, 0);
  return t;
}

/* One sample's time per this mode: PE 0's own, or the slowest PE's. */
static double bench_sample_time(double t) {
  return bench_program_mode == kBenchAllPEs ? bench_max_over_pes(t) : t;
}

/* Iterations and samples of fn at SIZE: a warm-up call that is also a first estimate, 3
 * calls more when one is shorter than a sample should last. */
static long bench_calibrate(bench_fn fn, size_t size, uint64_t *seed, int *samples) {
  bench_barrier();
  double est = bench_sample_time(fn(size, 1, ++*seed));
  bench_barrier();
  if (bench_agree(est < O.target_us)) est = bench_sample_time(fn(size, 3, ++*seed)) / 3;
  const long iters = bench_agree(bench_iters_for(&O, est));
  if (samples) *samples = (int)bench_agree(bench_samples_for(&O, est, iters));
  return iters;
}

/* One row: the median of the samples of fn at SIZE, if --only selects NAME; at 2 PEs also
 * the rows of its paired limits (see the top of this file). */
static void bench_measure(const char *name, size_t size, enum bench_kind kind, bench_fn fn,
                          enum bench_limit limit) {
  if (!bench_selected(&O, name)) return;
  const long before = bench_sum_on_pe0(failures);
  double t[kBenchMaxSamples], tl[3][kBenchMaxSamples];
  /* data patterns: each mode keeps the seed series it always had */
  uint64_t seed = (uint64_t)size * (bench_program_mode == kBenchPairs ? 1000003u : 7919u);
  int samples;
  const long iters = bench_calibrate(fn, size, &seed, &samples);
  /* the paired limits: [0] the line, [1] a copy, [2] two lines */
  int pair[3] = {0, 0, 0};
  long pair_iters[3] = {0, 0, 0};
  if (npes == 2 && limit != kNoLimit && bench_line_map()) {
    pair[0] = (limit & kLine) && size <= kBenchPairLineMax;
    pair[1] = (limit & (kCopy1 | kCopy2 | kCopy2n)) && size >= kBenchPairCopyMin;
    pair[2] = (limit & kLine2) && size <= kBenchPairLineMax;
    bench_copy_mode = limit & (kCopy1 | kCopy2 | kCopy2n);
  }
  static const bench_fn pair_fn[3] = {bench_line_pingpong, bench_copy, bench_line2_pingpong};
  uint64_t pair_seed = seed * 31 + 7;
  for (int p = 0; p < 3; ++p)
    if (pair[p]) pair_iters[p] = bench_calibrate(pair_fn[p], size, &pair_seed, NULL);
  for (int s = 0; s < samples; ++s) {
    for (int p = 0; p < 3; ++p) {
      if (!pair[p]) continue;
      bench_barrier();
      tl[p][s] = bench_sample_time(pair_fn[p](size, pair_iters[p], ++pair_seed)) / (double)pair_iters[p];
    }
    bench_barrier();
    t[s] = bench_sample_time(fn(size, iters, ++seed)) / (double)iters;
  }
  const int bad = (bench_sum_on_pe0(failures) - before) != 0;
  if (me != 0) return;
  const double m = bench_median(t, samples);
  switch (kind) {
    case kLatency: bench_row(name, size, m, "us", bad); break;
    case kHalfRoundTrip: bench_row(name, size, m / 2, "us", bad); break;
    case kBandwidth:
      bench_row(name, size, (double)(bench_window_for(size) * size) / (m * 1e3), "GB/s", bad);
      break;
    case kRate: bench_row(name, size, kBenchWindow / m, "M/s", bad); break;
  }
  char pname[96];
  if (pair[0]) {
    snprintf(pname, sizeof pname, "%s__line", name);
    bench_row(pname, size, bench_median(tl[0], samples) / 2, "us", bad);
  }
  if (pair[1]) {
    const double c = bench_median(tl[1], samples);
    snprintf(pname, sizeof pname, "%s__copy", name);
    if (kind == kBandwidth) bench_row(pname, size, (double)size / (c * 1e3), "GB/s", bad);
    else bench_row(pname, size, c, "us", bad);
  }
  if (pair[2]) {
    snprintf(pname, sizeof pname, "%s__line2", name);
    bench_row(pname, size, bench_median(tl[2], samples) / 2, "us", bad);
  }
}

/* bench_measure at every --sizes size up to max_size. */
static void bench_measure_sizes(const char *name, size_t max_size, enum bench_kind kind,
                                bench_fn fn, enum bench_limit limit) {
  for (int k = 0; k < O.nsizes; ++k)
    if (O.sizes[k] <= max_size) bench_measure(name, O.sizes[k], kind, fn, limit);
}

/* The last line, "# done: ..." once every PE's failures are counted; the exit code. The
 * program frees its buffers, then calls bench_finish. */
static int bench_done(void) {
  const long bad = bench_sum_on_pe0(failures);
  if (me == 0) {
    printf(bad ? "# done: %ld WRONG results\n" : "# done: all results validated\n", bad);
    fflush(stdout);
  }
  return bad || failures ? 1 : 0;
}

#endif /* BENCH_HARNESS_H */
