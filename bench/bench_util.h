/* bench_util.h: what every benchmark program in bench/ shares, whatever library it
 * measures (symmem, Open MPI's OSHMEM, MPI, nothing): options, sizes, timing, medians,
 * data patterns for validation and the output format. Header-only C11, no library calls.
 *
 * Output of every program: '#' comment lines, then CSV rows "bench,size,value,unit".
 * Times are in us, bandwidths in GB/s (1e9 B/s), rates in M/s. A value is the median of
 * `samples` samples taken after a warm-up; one sample runs enough iterations to last about
 * `target_ms` (calibrated once per benchmark and size). A row whose data was wrong has the
 * unit "WRONG" and the program exits non-zero; "# note NAME: text" lines say how a
 * benchmark was done when the library lacked the routine it would normally use; the last
 * line before finalize is "# done: ..." so that a harness can tell results printed before a
 * crash in finalize from a complete run.
 *
 * Options (all programs):
 *   --smoke          tiny sizes, 3 samples, ~1 ms samples: a validation run, not a measurement
 *   --sizes A,B,...  message sizes in bytes (multiples of 8; K and M suffixes allowed)
 *   --samples N      samples per value (odd; default 7)
 *   --target-ms T    duration of one sample (default 10)
 *   --only A,B,...   run only the named benchmarks */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBenchMaxSizes = 32, kBenchMaxSamples = 31 };

typedef struct {
  int smoke;
  int samples;
  double target_us;
  long max_iters;
  size_t sizes[kBenchMaxSizes];
  int nsizes;
  const char *only;
} bench_opts;

static inline double bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). n is odd, so the median is one of the samples. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return v[n / 2];
}

static inline size_t bench_parse_size(const char *s, char **end) {
  size_t v = (size_t)strtoull(s, end, 10);
  if (**end == 'K' || **end == 'k') v <<= 10, ++*end;
  else if (**end == 'M' || **end == 'm') v <<= 20, ++*end;
  return v;
}

/* Default sizes: 8 B .. 256 KiB in steps of 8x, then 1 MiB and 16 MiB (the sizes that the
 * performance page quotes); the smoke run uses three small ones. */
static inline void bench_parse(int argc, char **argv, bench_opts *o) {
  static const size_t full[] = {8, 64, 512, 4096, 32768, 262144, 1 << 20, 16 << 20};
  static const size_t smoke[] = {8, 64, 4096};
  memset(o, 0, sizeof *o);
  o->samples = 7;
  o->target_us = 10e3;
  o->max_iters = 200000;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--smoke") == 0) {
      o->smoke = 1;
    } else if (strcmp(a, "--sizes") == 0 && v) {
      char *p = (char *)v;
      o->nsizes = 0;
      while (*p && o->nsizes < kBenchMaxSizes) {
        o->sizes[o->nsizes++] = bench_parse_size(p, &p);
        if (*p == ',') ++p;
        else if (*p) break;
      }
      ++i;
    } else if (strcmp(a, "--samples") == 0 && v) {
      o->samples = atoi(v) | 1;
      ++i;
    } else if (strcmp(a, "--target-ms") == 0 && v) {
      o->target_us = atof(v) * 1e3;
      ++i;
    } else if (strcmp(a, "--only") == 0 && v) {
      o->only = v;
      ++i;
    } else {
      fprintf(stderr, "%s: unknown option '%s' (see bench/bench_util.h)\n", argv[0], a);
      exit(2);
    }
  }
  if (o->smoke) {
    if (o->nsizes == 0) {
      memcpy(o->sizes, smoke, sizeof smoke);
      o->nsizes = (int)(sizeof smoke / sizeof smoke[0]);
    }
    o->samples = 3;
    o->target_us = 1e3;
    o->max_iters = 1000;
  }
  if (o->nsizes == 0) {
    memcpy(o->sizes, full, sizeof full);
    o->nsizes = (int)(sizeof full / sizeof full[0]);
  }
  if (o->samples < 1) o->samples = 1;
  if (o->samples > kBenchMaxSamples) o->samples = kBenchMaxSamples;
  for (int k = 0; k < o->nsizes; ++k) {
    if (o->sizes[k] == 0 || o->sizes[k] % 8 != 0) {
      fprintf(stderr, "%s: size %zu is not a positive multiple of 8\n", argv[0], o->sizes[k]);
      exit(2);
    }
  }
}

static inline size_t bench_max_size(const bench_opts *o) {
  size_t m = 8;
  for (int k = 0; k < o->nsizes; ++k)
    if (o->sizes[k] > m) m = o->sizes[k];
  return m;
}

/* Is benchmark `name` selected by --only (a comma-separated list)? */
static inline int bench_selected(const bench_opts *o, const char *name) {
  if (!o->only) return 1;
  const size_t n = strlen(name);
  for (const char *p = o->only; *p;) {
    const char *e = strchr(p, ',');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

/* Iterations for one sample, from the measured time of one iteration. */
static inline long bench_iters_for(const bench_opts *o, double us_per_iter) {
  if (us_per_iter <= 0) return o->max_iters;
  const double it = o->target_us / us_per_iter;
  if (it < 1) return 1;
  if (it > (double)o->max_iters) return o->max_iters;
  return (long)it;
}

/* Samples for one value: the requested number, fewer (odd, at least 1) when one sample
 * would take so long (an oversubscribed, busy-waiting library) that they would last more
 * than 50 sample targets. */
static inline int bench_samples_for(const bench_opts *o, double us_per_iter, long iters) {
  const double per_sample = us_per_iter * (double)iters;
  if (per_sample * o->samples <= 50 * o->target_us) return o->samples;
  int n = (int)(50 * o->target_us / per_sample);
  if (n < 1) return 1;
  return n % 2 ? n : n - 1;
}

/* Validation pattern: 64-bit words that depend on a seed (which changes every sample and
 * every sender) and on the word's index, so stale or misplaced data is caught. */
static inline uint64_t bench_word(uint64_t seed, size_t k) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)k * 0xBF58476D1CE4E5B9ull);
  return x ^ (x >> 29);
}

static inline void bench_fill(void *p, size_t bytes, uint64_t seed) {
  uint64_t *w = (uint64_t *)p;
  for (size_t k = 0; k < bytes / 8; ++k) w[k] = bench_word(seed, k);
}

/* Index of the first wrong 64-bit word, or -1 when all are right. */
static inline long bench_check(const void *p, size_t bytes, uint64_t seed) {
  const uint64_t *w = (const uint64_t *)p;
  for (size_t k = 0; k < bytes / 8; ++k)
    if (w[k] != bench_word(seed, k)) return (long)k;
  return -1;
}

static inline void bench_row(const char *bench, size_t size, double value, const char *unit,
                             int wrong) {
  printf("%s,%zu,%.6g,%s\n", bench, size, value, wrong ? "WRONG" : unit);
  fflush(stdout);
}

#endif /* BENCH_UTIL_H */
