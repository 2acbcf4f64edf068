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
 * what it moved after its timed part and reports mistakes with bench_wrong. */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <stdint.h>

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

/* One sample's time per this mode: PE 0's own, or the slowest PE's. */
static double bench_sample_time(double t) {
  return bench_program_mode == kBenchAllPEs ? bench_max_over_pes(t) : t;
}

/* One row: the median of the samples of fn at SIZE, if --only selects NAME. */
static void bench_measure(const char *name, size_t size, enum bench_kind kind, bench_fn fn) {
  if (!bench_selected(&O, name)) return;
  const long before = bench_sum_on_pe0(failures);
  double t[kBenchMaxSamples];
  /* data patterns: each mode keeps the seed series it always had */
  uint64_t seed = (uint64_t)size * (bench_program_mode == kBenchPairs ? 1000003u : 7919u);
  bench_barrier();
  /* warm-up (first touch, connections), also a first estimate; when one operation is
   * slower than a sample should last, it is estimate enough */
  double est = bench_sample_time(fn(size, 1, ++seed));
  bench_barrier();
  if (bench_agree(est < O.target_us)) est = bench_sample_time(fn(size, 3, ++seed)) / 3;
  const long iters = bench_agree(bench_iters_for(&O, est));
  const int samples = (int)bench_agree(bench_samples_for(&O, est, iters));
  for (int s = 0; s < samples; ++s) {
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
}

/* bench_measure at every --sizes size up to max_size. */
static void bench_measure_sizes(const char *name, size_t max_size, enum bench_kind kind,
                                bench_fn fn) {
  for (int k = 0; k < O.nsizes; ++k)
    if (O.sizes[k] <= max_size) bench_measure(name, O.sizes[k], kind, fn);
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
