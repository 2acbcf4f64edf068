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

#include "bench_features.h"
#include "bench_shmem.h"

static unsigned char *sbuf;  /* symmetric: put destination, get source */
static unsigned char *lbuf;  /* private: put source, get destination */
static long *words;          /* symmetric: flags, counters, message-rate slots */
enum { kFlag = 0, kSigFlag = 1, kFaddCtr = 2, kCswapCtr = 3, kAddCtr = 4, kMrSlots = 8,
       kWords = kMrSlots + kBenchWindow };
static uint64_t *sig_word;   /* symmetric: the signal of signal_pingpong */

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
  if (target && (k = bench_check(sbuf, size, seed)) >= 0) bench_wrong("put", size, "word", k, 0);
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
    if ((k = bench_check(lbuf, size, seed)) >= 0) bench_wrong("get", size, "word", k, 0);
  }
  return t;
}

static double put_bw(size_t size, long iters, uint64_t seed) {
  double t = 0;
  const size_t w = bench_window_for(size);
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
  if (target && (k = bench_check(sbuf, size, seed)) >= 0) bench_wrong("put_bw", size, "word", k, 0);
  return t;
}

static double get_bw(size_t size, long iters, uint64_t seed) {
  double t = 0;
  const size_t w = bench_window_for(size);
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
    if ((k = bench_check(lbuf, size, seed)) >= 0) bench_wrong("get_bw", size, "word", k, 0);
  }
  return t;
}

static double put_mr(size_t size, long iters, uint64_t seed) {
  double t = 0;
  long *slots = words + kMrSlots;
  long vals[kBenchWindow];
  for (int k = 0; k < kBenchWindow; ++k) vals[k] = (long)(seed * kBenchWindow + (uint64_t)k);
  (void)size;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (int k = 0; k < kBenchWindow; ++k) shmem_putmem(&slots[k], &vals[k], sizeof(long), peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
  }
  shmem_barrier_all();
  if (target)
    for (int k = 0; k < kBenchWindow; ++k)
      if (slots[k] != vals[k]) bench_wrong("put_mr", 8, "slot holds, expected", slots[k], vals[k]);
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
  if (w[0] != seq || w[size / 8 - 1] != seq) bench_wrong("signal_pingpong", size, "seq", w[0], seq);
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
        bench_wrong("signal_pingpong", size, "payload word", (long)k, 0);
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
      if (v != fadd_next) bench_wrong("fadd_lat", 8, "fetched, expected", v, fadd_next);
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
      if (v != cswap_next) bench_wrong("cswap_lat", 8, "fetched, expected", v, cswap_next);
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
      for (int k = 0; k < kBenchWindow; ++k) shmem_long_atomic_add(&words[kAddCtr], 1, peer);
      shmem_quiet();
    }
    t = bench_now_us() - t0;
  }
  add_total += iters * kBenchWindow;
  shmem_barrier_all();
  if (target && words[kAddCtr] != add_total)
    bench_wrong("add_rate", 8, "counter, expected", words[kAddCtr], add_total);
  return t;
}
#endif

#if !BENCH_HAVE_ATOMIC_FETCH_ADD || !BENCH_HAVE_ATOMIC_COMPARE_SWAP || !BENCH_HAVE_ATOMIC_ADD
static inline void skipped(const char *name, const char *routine) {
  if (me == 0 && bench_selected(&O, name))
    printf("# skipped %s: the library does not declare %s\n", name, routine);
}
#endif

int main(int argc, char **argv) {
  bench_start(&argc, &argv, "shmem_p2p", kBenchPairs);
  const size_t max = bench_max_size(&O);
  words = shmem_calloc(kWords, sizeof(long));
  sig_word = shmem_calloc(1, sizeof(uint64_t));
  sbuf = shmem_malloc(max);
  /* page-aligned like the limits' buffers: a large malloc is 16 bytes past a page, and
   * a source misaligned against its destination costs memcpy 5-10% here */
  lbuf = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
  if (!words || !sig_word || !sbuf || !lbuf) {
    fprintf(stderr, "shmem_p2p [pe %d]: cannot allocate %zu bytes\n", me, max);
    shmem_global_exit(1);
  }
  shmem_barrier_all();

  bench_banner();
  if (me == 0) {
#if !(BENCH_HAVE_PUTMEM_SIGNAL && BENCH_HAVE_SIGNAL_WAIT_UNTIL)
    printf("# note signal_pingpong: no shmem_putmem_signal/shmem_signal_wait_until; "
           "putmem + fence + long_p + long_wait_until instead\n");
#endif
#if !BENCH_HAVE_WAIT_UNTIL
    printf("# note put_pingpong: no shmem_long_wait_until; the benchmark polls the flag\n");
#endif
  }
  if (bench_columns()) {
    const size_t small = 32768; /* latency-type benchmarks stop here */
    bench_measure_sizes("put_lat", small, kLatency, put_lat, kCopy1);
    bench_measure_sizes("get_lat", small, kLatency, get_lat, kCopy1);
    bench_measure("put_pingpong", 8, kHalfRoundTrip, put_pingpong, kLine);
    bench_measure_sizes("signal_pingpong", small, kHalfRoundTrip, signal_pingpong, kLine | kCopy1 | kLine2);
#if BENCH_HAVE_ATOMIC_FETCH_ADD
    bench_measure("fadd_lat", 8, kLatency, fadd_lat, kLine);
#else
    skipped("fadd_lat", "shmem_long_atomic_fetch_add");
#endif
#if BENCH_HAVE_ATOMIC_COMPARE_SWAP
    bench_measure("cswap_lat", 8, kLatency, cswap_lat, kLine);
#else
    skipped("cswap_lat", "shmem_long_atomic_compare_swap");
#endif
#if BENCH_HAVE_ATOMIC_ADD
    bench_measure("add_rate", 8, kRate, add_rate, kNoLimit);
#else
    skipped("add_rate", "shmem_long_atomic_add");
#endif
    bench_measure("put_mr", 8, kRate, put_mr, kNoLimit);
    bench_measure_sizes("put_bw", SIZE_MAX, kBandwidth, put_bw, kCopy1);
    bench_measure_sizes("get_bw", SIZE_MAX, kBandwidth, get_bw, kCopy1);
  }

  const int rc = bench_done();
  free(lbuf);
  shmem_free(sbuf);
  shmem_free(sig_word);
  shmem_free(words);
  bench_finish();
  return rc;
}
