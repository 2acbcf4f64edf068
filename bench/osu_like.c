/* osu_like.c: OSU-style point-to-point micro-benchmarks written against the standard
 * OpenSHMEM API only, so the same source runs on symmem and on Open MPI's OSHMEM (see
 * run_oshmem.sh) and the two can be compared line by line.
 *
 *   put_lat       8-byte putmem from PE 0 to PE 1 followed by quiet, per operation
 *   put_pingpong  PE 0 puts a flag to PE 1, PE 1 answers with a put; half a round trip
 *   get_lat       8-byte getmem by PE 0 from PE 1
 *   barrier_all   barrier_all over all PEs (the others only take part in this one)
 *   put_bw        putmem bandwidth PE 0 -> PE 1, 8 B .. 16 MiB: a window of puts, then quiet
 *   memcpy_bw     the same pattern as put_bw with memcpy into private memory on PE 0: the
 *                 machine's limit, for reading put_bw as a ratio
 *
 * Output: '#' comment lines, then CSV rows "bench,size,value,unit" (times in us, bandwidth
 * in GB/s = 1e9 B/s). Each value is the median over samples taken after a warm-up. Every
 * benchmark checks the data it moved; wrong data gives a message and a non-zero exit.
 * `--smoke` runs tiny sizes and few repetitions (a validation run, not a measurement). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxBw = 16 << 20, kMaxSamples = 15 };

static int me, npes, failures;
static int samples = 11;     /* odd, so the median is one of them */
static size_t max_bw = kMaxBw;
static long lat_iters = 10000;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void fail(const char *bench, const char *fmt, long a, long b) {
  char what[200];
  snprintf(what, sizeof what, fmt, a, b);
  fprintf(stderr, "osu_like [pe %d] %s: wrong data: %s\n", me, bench, what);
  ++failures;
}

static void row(const char *bench, size_t size, double value, const char *unit) {
  if (me == 0) printf("%s,%zu,%.3f,%s\n", bench, size, value, unit);
  fflush(stdout);
}

/* Spins until this PE's symmetric *flag equals value, reading it with a get from itself
 * (the standard API has no plain wait here, and the get lets the library make progress).
 * Ends the job after 30 s instead of hanging. */
static void wait_for(long *flag, long value) {
  const double deadline = now_us() + 30e6;
  unsigned spins = 0;
  while (shmem_long_g(flag, me) != value) {
    if ((++spins & 4095) == 0 && now_us() > deadline) {
      fprintf(stderr, "osu_like [pe %d]: timed out waiting for flag %ld\n", me, value);
      shmem_global_exit(2);
    }
  }
}

static void bench_put_lat(long *dst) {
  double t[kMaxSamples];
  long last = 0;
  for (int s = -1; s < samples; ++s) { /* sample -1 is the warm-up */
    shmem_barrier_all();
    if (me == 0) {
      const double t0 = now_us();
      for (long i = 0; i < lat_iters; ++i) {
        last = (long)(s + 2) * lat_iters + i;
        shmem_putmem(dst, &last, sizeof last, 1);
        shmem_quiet();
      }
      if (s >= 0) t[s] = (now_us() - t0) / (double)lat_iters;
    }
  }
  if (me == 0) shmem_long_p(dst + 1, last, 1); /* tell PE 1 what it must hold */
  shmem_barrier_all();
  if (me == 1 && dst[0] != dst[1]) fail("put_lat", "holds %ld, last put was %ld", dst[0], dst[1]);
  if (me == 0) row("put_lat", sizeof(long), median(t, samples), "us");
}

static void bench_pingpong(long *flag) {
  double t[kMaxSamples];
  long seq = 0;
  *flag = 0;
  shmem_barrier_all();
  for (int s = -1; s < samples; ++s) {
    shmem_barrier_all();
    const double t0 = now_us();
    for (long i = 0; i < lat_iters; ++i) {
      ++seq;
      if (me == 0) {
        shmem_long_p(flag, seq, 1);
        wait_for(flag, seq); /* the value itself is the check */
      } else if (me == 1) {
        wait_for(flag, seq);
        shmem_long_p(flag, seq, 0);
      }
    }
    if (s >= 0) t[s] = (now_us() - t0) / (double)lat_iters / 2;
  }
  if (me == 0) row("put_pingpong", sizeof(long), median(t, samples), "us");
}

static void bench_get_lat(long *src) {
  double t[kMaxSamples];
  src[0] = 0x5eed0000L + me;
  shmem_barrier_all();
  if (me == 0) {
    for (int s = -1; s < samples; ++s) {
      long v = 0;
      const double t0 = now_us();
      for (long i = 0; i < lat_iters; ++i) shmem_getmem(&v, src, sizeof v, 1);
      if (s >= 0) t[s] = (now_us() - t0) / (double)lat_iters;
      if (v != 0x5eed0001L) fail("get_lat", "got %#lx, expected %#lx", v, 0x5eed0001L);
    }
    row("get_lat", sizeof(long), median(t, samples), "us");
  }
  shmem_barrier_all();
}

static void bench_barrier(void) {
  double t[kMaxSamples];
  for (int s = -1; s < samples; ++s) {
    shmem_barrier_all();
    const double t0 = now_us();
    for (long i = 0; i < lat_iters; ++i) shmem_barrier_all();
    if (s >= 0) t[s] = (now_us() - t0) / (double)lat_iters;
  }
  if (me == 0) row("barrier_all", 0, median(t, samples), "us");
}

static unsigned char pattern(size_t i, size_t size) { return (unsigned char)(i * 29 + size * 7 + 1); }

static void bench_put_bw(unsigned char *dst, unsigned char *src, unsigned char *private_dst) {
  for (size_t size = 8; size <= max_bw; size *= 2) {
    /* Up to 64 puts per window, at most 64 MiB per window; enough windows per sample to
     * move 16 MiB or issue ~20000 puts, whichever comes first. */
    size_t window = (64u << 20) / size;
    if (window > 64) window = 64;
    if (window < 1) window = 1;
    size_t windows = (16u << 20) / (window * size);
    if (windows > 20000 / window) windows = 20000 / window;
    if (windows < 1) windows = 1;
    if (max_bw < kMaxBw) windows = 2; /* smoke run */

    for (size_t i = 0; i < size; ++i) src[i] = pattern(i, size);
    if (me == 1) memset(dst, 0, size);
    double t[kMaxSamples];
    for (int s = -1; s < samples; ++s) {
      shmem_barrier_all();
      if (me == 0) {
        const double t0 = now_us();
        for (size_t w = 0; w < windows; ++w) {
          for (size_t k = 0; k < window; ++k) shmem_putmem(dst, src, size, 1);
          shmem_quiet();
        }
        if (s >= 0) t[s] = now_us() - t0;
      }
    }
    shmem_barrier_all();
    if (me == 1) {
      for (size_t i = 0; i < size; ++i) {
        if (dst[i] != pattern(i, size)) {
          fail("put_bw", "byte %ld is wrong (message size %ld)", (long)i, (long)size);
          break;
        }
      }
    }
    const double bytes = (double)(windows * window * size);
    if (me == 0) row("put_bw", size, bytes / (median(t, samples) * 1e-6) / 1e9, "GB/s");

    if (me == 0) {
      for (int s = -1; s < samples; ++s) {
        const double t0 = now_us();
        for (size_t w = 0; w < windows; ++w) {
          for (size_t k = 0; k < window; ++k) memcpy(private_dst, src, size);
          __asm__ __volatile__("" ::: "memory"); /* keep the copies */
        }
        if (s >= 0) t[s] = now_us() - t0;
      }
      if (memcmp(private_dst, src, size) != 0) fail("memcpy_bw", "copy differs (%ld, %ld)", 0, 0);
      row("memcpy_bw", size, bytes / (median(t, samples) * 1e-6) / 1e9, "GB/s");
    }
    shmem_barrier_all();
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--smoke") == 0) {
    samples = 3;
    max_bw = 64 << 10;
    lat_iters = 100;
  }
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();

  long *words = shmem_malloc(4 * sizeof(long));
  unsigned char *dst = shmem_malloc(max_bw);
  unsigned char *src = malloc(max_bw);
  unsigned char *private_dst = malloc(max_bw);
  if (!words || !dst || !src || !private_dst) {
    fprintf(stderr, "osu_like [pe %d]: cannot allocate %zu bytes\n", me, max_bw);
    shmem_global_exit(1);
  }
  memset(words, 0, 4 * sizeof(long));

  if (me == 0) {
    char name[SHMEM_MAX_NAME_LEN];
    int major, minor;
    shmem_info_get_name(name);
    shmem_info_get_version(&major, &minor);
    printf("# osu_like: %s, OpenSHMEM %d.%d, %d PEs, median of %d samples\n", name, major, minor,
           npes, samples);
    printf("bench,size,value,unit\n");
  }

  if (npes >= 2) {
    bench_put_lat(&words[0]);
    bench_pingpong(&words[2]);
    bench_get_lat(&words[3]);
  } else if (me == 0) {
    printf("# point-to-point benchmarks need 2 PEs; barrier only\n");
  }
  bench_barrier();
  if (npes >= 2) bench_put_bw(dst, src, private_dst);

  shmem_barrier_all();
  free(private_dst);
  free(src);
  shmem_free(dst);
  shmem_free(words);
  shmem_finalize();
  return failures ? 1 : 0;
}
