/* shmem_p2p.c: OSU-style point-to-point benchmarks written against the standard OpenSHMEM
 * API only, so the same source builds against symmem (bench/CMakeLists.txt) and against
 * Open MPI's OSHMEM (`oshcc`, see bench/compare.sh). Output and options: bench_util.h.
 *
 * With N PEs, PE i < N/2 is an initiator and PE i + N/2 its target; all pairs run at once
 * (with N > cores that is the oversubscribed case) and PE 0's pair is reported.
 *
 *   put_lat          putmem of SIZE + quiet, one at a time                        us / op
 *   get_lat          getmem of SIZE, one at a time                                us / op
 *   put_bw           windows of putmem of SIZE, quiet after each window           GB/s
 *   get_bw           windows of getmem of SIZE                                    GB/s
 *   put_mr           windows of 64 putmem of 8 B to distinct words + quiet        M msg/s
 *   put_pingpong     8-byte p, the target waits and answers; half a round trip     us
 *   signal_pingpong  putmem_signal of SIZE + signal_wait_until, answered the same
 *                    way; half a round trip (OpenSHMEM 1.4 libraries: putmem + fence
 *                    + p of the flag + wait_until, said in a note line)            us
 *   fadd_lat         long atomic_fetch_add, one at a time                          us / op
 *   cswap_lat        long atomic_compare_swap, one at a time                       us / op
 *   add_rate         windows of 64 long atomic_add + quiet                         M op/s
 *
 * Every transfer is checked: data carries a pattern that changes every sample, ping-pong
 * flags carry sequence numbers, fetched atomics must return the expected old values and
 * counters the expected totals. A routine the library does not declare is skipped with a
 * "# skipped" line (see bench_features.h). */
#include <sched.h>
#include <shmem.h>

#include "bench_features.h"
#include "bench_util.h"

enum { kWindow = 64 };

static bench_opts O;
static int me, npes, peer = -1, initiator, target;
static long failures;
static long *agree_slot;     /* symmetric: PE 0's decisions */
static long *fail_slots;     /* symmetric: failure counts gathered on PE 0 */
static unsigned char *sbuf;  /* symmetric: put destination, get source */
static unsigned char *lbuf;  /* private: put source, get destination */
static long *words;          /* symmetric: flags, counters, message-rate slots */
enum { kFlag = 0, kSigFlag = 1, kFaddCtr = 2, kCswapCtr = 3, kAddCtr = 4, kMrSlots = 8,
       kWords = kMrSlots + kWindow };
static uint64_t *sig_word;   /* symmetric: the signal of signal_pingpong */

static void wrong(const char *bench, size_t size, const char *what, long a, long b) {
  fprintf(stderr, "shmem_p2p [pe %d] %s size %zu: wrong data: %s (%ld, %ld)\n", me, bench,
          size, what, a, b);
  ++failures;
}

/* PE 0's value of v, on every PE (untimed control path). */
static long agree(long v) {
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe) shmem_long_p(agree_slot, v, pe);
  shmem_barrier_all();
  const long r = *agree_slot;
  shmem_barrier_all();
  return r;
}

/* Sum over all PEs of failures so far, on PE 0 (untimed). */
static long total_failures(void) {
  shmem_long_p(&fail_slots[me], failures, 0);
  shmem_barrier_all();
  long sum = 0;
  if (me == 0)
    for (int pe = 0; pe < npes; ++pe) sum += fail_slots[pe];
  shmem_barrier_all();
  return sum;
}

static void wait_eq(long *flag, long value) {
#if BENCH_HAVE_WAIT_UNTIL
  shmem_long_wait_until(flag, SHMEM_CMP_EQ, value);
#else
  /* The library has no wait_until yet: poll our own word, yielding the core now and then
   * so that an oversubscribed run still progresses. */
  const double deadline = bench_now_us() + 60e6;
  for (unsigned spins = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != value; ++spins) {
    if ((spins & 255) == 0) sched_yield();
    if ((spins & 65535) == 0 && bench_now_us() > deadline) {
      fprintf(stderr, "shmem_p2p [pe %d]: no flag %ld after 60 s\n", me, value);
      shmem_global_exit(3);
    }
  }
#endif
}

/* One benchmark: fn(size, iters, seed) runs `iters` iterations on every PE and returns the
 * initiator's elapsed time in us; it validates what it moved after its timed part. */
typedef double (*bench_fn)(size_t size, long iters, uint64_t seed);
enum kind { kLatency, kHalfRoundTrip, kBandwidth, kRate };

static void measure(const char *name, size_t size, enum kind kind, double per_iter, bench_fn fn) {
  const long before = total_failures();
  double t[kBenchMaxSamples];
  uint64_t seed = (uint64_t)size * 1000003u;
  shmem_barrier_all();
  /* warm-up (first touch, connections), also a first estimate; when one operation is
   * slower than a sample should last, it is estimate enough */
  double est = fn(size, 1, ++seed);
  shmem_barrier_all();
  if (agree(est < O.target_us)) est = fn(size, 3, ++seed) / 3;
  const long iters = agree(bench_iters_for(&O, est));
  const int samples = (int)agree(bench_samples_for(&O, est, iters));
  for (int s = 0; s < samples; ++s) {
    shmem_barrier_all();
    t[s] = fn(size, iters, ++seed) / (double)iters;
  }
  const long bad = total_failures() - before;
  if (me != 0) return;
  const double m = bench_median(t, samples);
  switch (kind) {
    case kLatency: bench_row(name, size, m, "us", bad != 0); break;
    case kHalfRoundTrip: bench_row(name, size, m / 2, "us", bad != 0); break;
    case kBandwidth: bench_row(name, size, per_iter / (m * 1e3), "GB/s", bad != 0); break;
    case kRate: bench_row(name, size, per_iter / m, "M/s", bad != 0); break;
  }
}

static size_t window_for(size_t size) {
  size_t w = (16u << 20) / size;
  return w > kWindow ? kWindow : w < 1 ? 1 : w;
}

/* ---- RMA ---- */

static double put_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  if (initiator) {
    bench_fill(lbuf, size, seed);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      shmem_putmem(sbuf, lbuf, size, peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
  }
  shmem_barrier_all();
  long k;
  if (target && (k = bench_check(sbuf, size, seed)) >= 0) wrong("put", size, "word", k, 0);
  return t;
}

static double get_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  if (target) bench_fill(sbuf, size, seed);
  shmem_barrier_all();
  if (initiator) {
    memset(lbuf, 0, size);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) shmem_getmem(lbuf, sbuf, size, peer);
    t = bench_now_us() - t0;
    long k;
    if ((k = bench_check(lbuf, size, seed)) >= 0) wrong("get", size, "word", k, 0);
  }
  return t;
}

static double put_bw(size_t size, long iters, uint64_t seed) {
  double t = 0;
  const size_t w = window_for(size);
  if (initiator) {
    bench_fill(lbuf, size, seed);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (size_t k = 0; k < w; ++k) shmem_putmem(sbuf, lbuf, size, peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
  }
  shmem_barrier_all();
  long k;
  if (target && (k = bench_check(sbuf, size, seed)) >= 0) wrong("put_bw", size, "word", k, 0);
  return t;
}

static double get_bw(size_t size, long iters, uint64_t seed) {
  double t = 0;
  const size_t w = window_for(size);
  if (target) bench_fill(sbuf, size, seed);
  shmem_barrier_all();
  if (initiator) {
    memset(lbuf, 0, size);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (size_t k = 0; k < w; ++k) shmem_getmem(lbuf, sbuf, size, peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
    long k;
    if ((k = bench_check(lbuf, size, seed)) >= 0) wrong("get_bw", size, "word", k, 0);
  }
  return t;
}

static double put_mr(size_t size, long iters, uint64_t seed) {
  double t = 0;
  long *slots = words + kMrSlots;
  long vals[kWindow];
  for (int k = 0; k < kWindow; ++k) vals[k] = (long)(seed * kWindow + (uint64_t)k);
  (void)size;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (int k = 0; k < kWindow; ++k) shmem_putmem(&slots[k], &vals[k], sizeof(long), peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
  }
  shmem_barrier_all();
  if (target)
    for (int k = 0; k < kWindow; ++k)
      if (slots[k] != vals[k]) wrong("put_mr", 8, "slot holds, expected", slots[k], vals[k]);
  return t;
}

/* ---- ping-pongs ---- */

static long seq; /* advances identically on every PE: each call runs the same iterations */

static double put_pingpong(size_t size, long iters, uint64_t seed) {
  double t = 0;
  long *flag = &words[kFlag];
  (void)size, (void)seed;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
    ++seq;
    if (initiator) {
      shmem_long_p(flag, seq, peer);
      wait_eq(flag, seq); /* the value itself is the check */
    } else if (target) {
      wait_eq(flag, seq);
      shmem_long_p(flag, seq, peer);
    }
  }
  t = bench_now_us() - t0;
  return t;
}

/* The payload's first and last words carry the sequence number (checked on every
 * arrival); the words between carry the sample's pattern (checked at the end). */
static void signal_send(size_t size) {
  long *w = (long *)lbuf;
  w[0] = seq;
  w[size / 8 - 1] = seq;
#if BENCH_HAVE_PUTMEM_SIGNAL && BENCH_HAVE_SIGNAL_WAIT_UNTIL
  shmem_putmem_signal(sbuf, lbuf, size, sig_word, (uint64_t)seq, SHMEM_SIGNAL_SET, peer);
#else
  shmem_putmem(sbuf, lbuf, size, peer);
  shmem_fence();
  shmem_long_p(&words[kSigFlag], seq, peer);
#endif
}

static void signal_recv(size_t size) {
#if BENCH_HAVE_PUTMEM_SIGNAL && BENCH_HAVE_SIGNAL_WAIT_UNTIL
  shmem_signal_wait_until(sig_word, SHMEM_CMP_EQ, (uint64_t)seq);
#else
  wait_eq(&words[kSigFlag], seq);
#endif
  const long *w = (const long *)sbuf;
  if (w[0] != seq || w[size / 8 - 1] != seq) wrong("signal_pingpong", size, "seq", w[0], seq);
}

static double signal_pingpong(size_t size, long iters, uint64_t seed) {
  double t = 0;
  if (initiator || target) bench_fill(lbuf, size, seed);
  shmem_barrier_all();
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
    ++seq;
    if (initiator) {
      signal_send(size);
      signal_recv(size);
    } else if (target) {
      signal_recv(size);
      signal_send(size);
    }
  }
  t = bench_now_us() - t0;
  shmem_barrier_all();
  if (initiator || target) {
    const uint64_t *w = (const uint64_t *)sbuf;
    for (size_t k = 1; k + 1 < size / 8; ++k)
      if (w[k] != bench_word(seed, k)) {
        wrong("signal_pingpong", size, "payload word", (long)k, 0);
        break;
      }
  }
  return t;
}

/* ---- atomics ---- */

#if BENCH_HAVE_ATOMIC_FETCH_ADD
static long fadd_next;

static double fadd_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  (void)size, (void)seed;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      const long v = shmem_long_atomic_fetch_add(&words[kFaddCtr], 1, peer);
      if (v != fadd_next) wrong("fadd_lat", 8, "fetched, expected", v, fadd_next);
      fadd_next = v + 1;
    }
    t = bench_now_us() - t0;
  }
  shmem_barrier_all();
  return t;
}
#endif

#if BENCH_HAVE_ATOMIC_COMPARE_SWAP
static long cswap_next;

static double cswap_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  (void)size, (void)seed;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      const long v =
          shmem_long_atomic_compare_swap(&words[kCswapCtr], cswap_next, cswap_next + 1, peer);
      if (v != cswap_next) wrong("cswap_lat", 8, "fetched, expected", v, cswap_next);
      cswap_next = v + 1;
    }
    t = bench_now_us() - t0;
  }
  shmem_barrier_all();
  return t;
}
#endif

#if BENCH_HAVE_ATOMIC_ADD
static long add_total;

static double add_rate(size_t size, long iters, uint64_t seed) {
  double t = 0;
  (void)size, (void)seed;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (int k = 0; k < kWindow; ++k) shmem_long_atomic_add(&words[kAddCtr], 1, peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
  }
  add_total += iters * kWindow;
  shmem_barrier_all();
  if (target && words[kAddCtr] != add_total)
    wrong("add_rate", 8, "counter, expected", words[kAddCtr], add_total);
  return t;
}
#endif

static inline void skipped(const char *name, const char *routine) {
  if (me == 0 && bench_selected(&O, name))
    printf("# skipped %s: the library does not declare %s\n", name, routine);
}

int main(int argc, char **argv) {
  bench_parse(argc, argv, &O);
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  const int half = npes / 2;
  initiator = me < half;
  target = me >= half && me < 2 * half;
  peer = initiator ? me + half : target ? me - half : -1;

  const size_t max = bench_max_size(&O);
  agree_slot = shmem_calloc(1, sizeof(long));
  fail_slots = shmem_calloc((size_t)npes, sizeof(long));
  words = shmem_calloc(kWords, sizeof(long));
  sig_word = shmem_calloc(1, sizeof(uint64_t));
  sbuf = shmem_malloc(max);
  lbuf = malloc(max);
  if (!agree_slot || !fail_slots || !words || !sig_word || !sbuf || !lbuf) {
    fprintf(stderr, "shmem_p2p [pe %d]: cannot allocate %zu bytes\n", me, max);
    shmem_global_exit(1);
  }
  shmem_barrier_all();

  if (me == 0) {
    char name[SHMEM_MAX_NAME_LEN];
    int major, minor;
    shmem_info_get_name(name);
    shmem_info_get_version(&major, &minor);
    printf("# shmem_p2p: %s, OpenSHMEM %d.%d, %d PEs (%d pairs), median of %d samples\n", name,
           major, minor, npes, half, O.samples);
#if !(BENCH_HAVE_PUTMEM_SIGNAL && BENCH_HAVE_SIGNAL_WAIT_UNTIL)
    printf("# note signal_pingpong: no shmem_putmem_signal/shmem_signal_wait_until; "
           "putmem + fence + long_p + long_wait_until instead\n");
#endif
#if !BENCH_HAVE_WAIT_UNTIL
    printf("# note put_pingpong: no shmem_long_wait_until; the benchmark polls the flag\n");
#endif
    printf("bench,size,value,unit\n");
    fflush(stdout);
  }

  if (half == 0) {
    if (me == 0) printf("# point-to-point benchmarks need 2 PEs\n");
  } else {
    const size_t small = 32768; /* latency-type benchmarks stop here */
    for (int k = 0; k < O.nsizes; ++k)
      if (O.sizes[k] <= small && bench_selected(&O, "put_lat"))
        measure("put_lat", O.sizes[k], kLatency, 0, put_lat);
    for (int k = 0; k < O.nsizes; ++k)
      if (O.sizes[k] <= small && bench_selected(&O, "get_lat"))
        measure("get_lat", O.sizes[k], kLatency, 0, get_lat);
    if (bench_selected(&O, "put_pingpong")) measure("put_pingpong", 8, kHalfRoundTrip, 0, put_pingpong);
    for (int k = 0; k < O.nsizes; ++k)
      if (O.sizes[k] <= small && bench_selected(&O, "signal_pingpong"))
        measure("signal_pingpong", O.sizes[k], kHalfRoundTrip, 0, signal_pingpong);
#if BENCH_HAVE_ATOMIC_FETCH_ADD
    if (bench_selected(&O, "fadd_lat")) measure("fadd_lat", 8, kLatency, 0, fadd_lat);
#else
    skipped("fadd_lat", "shmem_long_atomic_fetch_add");
#endif
#if BENCH_HAVE_ATOMIC_COMPARE_SWAP
    if (bench_selected(&O, "cswap_lat")) measure("cswap_lat", 8, kLatency, 0, cswap_lat);
#else
    skipped("cswap_lat", "shmem_long_atomic_compare_swap");
#endif
#if BENCH_HAVE_ATOMIC_ADD
    if (bench_selected(&O, "add_rate")) measure("add_rate", 8, kRate, kWindow, add_rate);
#else
    skipped("add_rate", "shmem_long_atomic_add");
#endif
    if (bench_selected(&O, "put_mr")) measure("put_mr", 8, kRate, kWindow, put_mr);
    for (int k = 0; k < O.nsizes; ++k)
      if (bench_selected(&O, "put_bw"))
        measure("put_bw", O.sizes[k], kBandwidth, (double)(window_for(O.sizes[k]) * O.sizes[k]), put_bw);
    for (int k = 0; k < O.nsizes; ++k)
      if (bench_selected(&O, "get_bw"))
        measure("get_bw", O.sizes[k], kBandwidth, (double)(window_for(O.sizes[k]) * O.sizes[k]), get_bw);
  }

  const long bad = total_failures();
  if (me == 0) {
    printf(bad ? "# done: %ld WRONG results\n" : "# done: all results validated\n", bad);
    fflush(stdout);
  }
  shmem_barrier_all();
  free(lbuf);
  shmem_free(sbuf);
  shmem_free(sig_word);
  shmem_free(words);
  shmem_free(fail_slots);
  shmem_free(agree_slot);
  shmem_finalize();
  return bad || failures ? 1 : 0;
}
