/* mpi_p2p.c: the MPI equivalents of shmem_p2p.c, for the side-by-side comparison
 * (bench/compare.sh builds it with mpicc). Same pairs (rank i < N/2 with i + N/2), same
 * sizes, calibration, medians, validation and output (bench_util.h). One-sided operations
 * use passive-target RMA on a window from MPI_Win_allocate, inside one MPI_Win_lock_all
 * epoch; completion is MPI_Win_flush:
 *
 *   put_lat / get_lat    MPI_Put / MPI_Get of SIZE + flush, one at a time        us / op
 *   put_bw / get_bw      windows of MPI_Put / MPI_Get of SIZE, flush per window  GB/s
 *   put_mr               windows of 64 MPI_Put of 8 B to distinct words + flush  M msg/s
 *   sendrecv_pingpong    MPI_Send / MPI_Recv of SIZE, half a round trip          us
 *                        (the counterpart of put_pingpong and signal_pingpong)
 *   fadd_lat             MPI_Fetch_and_op(MPI_SUM) on a long + flush             us / op
 *   cswap_lat            MPI_Compare_and_swap on a long + flush                  us / op
 *   add_rate             windows of 64 MPI_Accumulate(MPI_SUM) + flush           M op/s */
#include <mpi.h>

#include "bench_util.h"

enum { kWindow = 64, kHeader = 4096 };
enum { kFaddCtr = 0, kCswapCtr = 1, kAddCtr = 2, kMrSlots = 8 };

static bench_opts O;
static int me, npes, peer = -1, initiator, target;
static long failures;
static MPI_Win win;
static unsigned char *base; /* window: kHeader bytes of counters, then data */
static unsigned char *lbuf;

#define WDATA (base + kHeader)
#define WLONG(i) (((long *)base)[i])
#define DATA_DISP ((MPI_Aint)kHeader)

static void wrong(const char *bench, size_t size, const char *what, long a, long b) {
  fprintf(stderr, "mpi_p2p [rank %d] %s size %zu: wrong data: %s (%ld, %ld)\n", me, bench, size,
          what, a, b);
  ++failures;
}

static long agree(long v) {
  MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return v;
}

static long total_failures(void) {
  long sum = 0;
  MPI_Reduce(&failures, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  return sum;
}

/* After this, window memory written by remote RMA is visible to local loads and local
 * stores are visible to remote RMA (unified model). */
static void sync_window(void) {
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_sync(win);
}

typedef double (*bench_fn)(size_t size, long iters, uint64_t seed);
enum kind { kLatency, kHalfRoundTrip, kBandwidth, kRate };

static void measure(const char *name, size_t size, enum kind kind, double per_iter, bench_fn fn) {
  const long before = total_failures();
  double t[kBenchMaxSamples];
  uint64_t seed = (uint64_t)size * 1000003u;
  MPI_Barrier(MPI_COMM_WORLD);
  /* warm-up (first touch, connections), also a first estimate; when one operation is
   * slower than a sample should last, it is estimate enough */
  double est = fn(size, 1, ++seed);
  MPI_Barrier(MPI_COMM_WORLD);
  if (agree(est < O.target_us)) est = fn(size, 3, ++seed) / 3;
  const long iters = agree(bench_iters_for(&O, est));
  const int samples = (int)agree(bench_samples_for(&O, est, iters));
  for (int s = 0; s < samples; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
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

static double put_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  if (initiator) {
    bench_fill(lbuf, size, seed);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      MPI_Put(lbuf, (int)size, MPI_BYTE, peer, DATA_DISP, (int)size, MPI_BYTE, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  sync_window();
  long k;
  if (target && (k = bench_check(WDATA, size, seed)) >= 0) wrong("put", size, "word", k, 0);
  return t;
}

static double get_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  if (target) bench_fill(WDATA, size, seed);
  sync_window();
  if (initiator) {
    memset(lbuf, 0, size);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      MPI_Get(lbuf, (int)size, MPI_BYTE, peer, DATA_DISP, (int)size, MPI_BYTE, win);
      MPI_Win_flush(peer, win);
    }
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
      for (size_t k = 0; k < w; ++k)
        MPI_Put(lbuf, (int)size, MPI_BYTE, peer, DATA_DISP, (int)size, MPI_BYTE, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  sync_window();
  long k;
  if (target && (k = bench_check(WDATA, size, seed)) >= 0) wrong("put_bw", size, "word", k, 0);
  return t;
}

static double get_bw(size_t size, long iters, uint64_t seed) {
  double t = 0;
  const size_t w = window_for(size);
  if (target) bench_fill(WDATA, size, seed);
  sync_window();
  if (initiator) {
    memset(lbuf, 0, size);
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (size_t k = 0; k < w; ++k)
        MPI_Get(lbuf, (int)size, MPI_BYTE, peer, DATA_DISP, (int)size, MPI_BYTE, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
    long k;
    if ((k = bench_check(lbuf, size, seed)) >= 0) wrong("get_bw", size, "word", k, 0);
  }
  return t;
}

static double put_mr(size_t size, long iters, uint64_t seed) {
  double t = 0;
  long vals[kWindow];
  for (int k = 0; k < kWindow; ++k) vals[k] = (long)(seed * kWindow + (uint64_t)k);
  (void)size;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (int k = 0; k < kWindow; ++k)
        MPI_Put(&vals[k], 1, MPI_LONG, peer, (MPI_Aint)((kMrSlots + k) * sizeof(long)), 1,
                MPI_LONG, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  sync_window();
  if (target)
    for (int k = 0; k < kWindow; ++k)
      if (WLONG(kMrSlots + k) != vals[k]) wrong("put_mr", 8, "slot", WLONG(kMrSlots + k), vals[k]);
  return t;
}

static long seq;

static double sendrecv_pingpong(size_t size, long iters, uint64_t seed) {
  double t = 0;
  if (initiator || target) bench_fill(lbuf, size, seed);
  long *w = (long *)lbuf;
  const double t0 = bench_now_us();
  for (long i = 0; i < iters; ++i) {
    ++seq;
    if (initiator) {
      w[0] = seq;
      MPI_Send(lbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(lbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (w[0] != seq) wrong("sendrecv_pingpong", size, "seq", w[0], seq);
    } else if (target) {
      MPI_Recv(lbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (w[0] != seq) wrong("sendrecv_pingpong", size, "seq", w[0], seq);
      MPI_Send(lbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
  }
  t = bench_now_us() - t0;
  if (initiator || target) {
    const uint64_t *u = (const uint64_t *)lbuf;
    for (size_t k = 1; k < size / 8; ++k)
      if (u[k] != bench_word(seed, k)) {
        wrong("sendrecv_pingpong", size, "payload word", (long)k, 0);
        break;
      }
  }
  return t;
}

static long fadd_next, cswap_next, add_total;

static double fadd_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  (void)size, (void)seed;
  if (initiator) {
    const long one = 1;
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      long v;
      MPI_Fetch_and_op(&one, &v, MPI_LONG, peer, kFaddCtr * sizeof(long), MPI_SUM, win);
      MPI_Win_flush(peer, win);
      if (v != fadd_next) wrong("fadd_lat", 8, "fetched, expected", v, fadd_next);
      fadd_next = v + 1;
    }
    t = bench_now_us() - t0;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return t;
}

static double cswap_lat(size_t size, long iters, uint64_t seed) {
  double t = 0;
  (void)size, (void)seed;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      long v;
      const long want = cswap_next, next = cswap_next + 1;
      MPI_Compare_and_swap(&next, &want, &v, MPI_LONG, peer, kCswapCtr * sizeof(long), win);
      MPI_Win_flush(peer, win);
      if (v != cswap_next) wrong("cswap_lat", 8, "fetched, expected", v, cswap_next);
      cswap_next = v + 1;
    }
    t = bench_now_us() - t0;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return t;
}

static double add_rate(size_t size, long iters, uint64_t seed) {
  double t = 0;
  (void)size, (void)seed;
  if (initiator) {
    const long one = 1;
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (int k = 0; k < kWindow; ++k)
        MPI_Accumulate(&one, 1, MPI_LONG, peer, kAddCtr * sizeof(long), 1, MPI_LONG, MPI_SUM, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  add_total += iters * kWindow;
  sync_window();
  if (target) {
    /* read the counter atomically, as the standard requires next to accumulates */
    long v, zero = 0;
    MPI_Fetch_and_op(&zero, &v, MPI_LONG, me, kAddCtr * sizeof(long), MPI_NO_OP, win);
    MPI_Win_flush(me, win);
    if (v != add_total) wrong("add_rate", 8, "counter, expected", v, add_total);
  }
  return t;
}

int main(int argc, char **argv) {
  bench_parse(argc, argv, &O);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &npes);
  const int half = npes / 2;
  initiator = me < half;
  target = me >= half && me < 2 * half;
  peer = initiator ? me + half : target ? me - half : -1;

  const size_t max = bench_max_size(&O);
  if (MPI_Win_allocate((MPI_Aint)(kHeader + max), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win) !=
          MPI_SUCCESS ||
      !(lbuf = malloc(max))) {
    fprintf(stderr, "mpi_p2p [rank %d]: cannot allocate %zu bytes\n", me, max);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(base, 0, kHeader);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  sync_window();

  if (me == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    char *nl = strchr(version, '\n');
    if (nl) *nl = 0;
    printf("# mpi_p2p: %s, %d ranks (%d pairs), median of %d samples\n", version, npes, half,
           O.samples);
    printf("bench,size,value,unit\n");
    fflush(stdout);
  }

  if (half == 0) {
    if (me == 0) printf("# point-to-point benchmarks need 2 ranks\n");
  } else {
    const size_t small = 32768;
    for (int k = 0; k < O.nsizes; ++k)
      if (O.sizes[k] <= small && bench_selected(&O, "put_lat"))
        measure("put_lat", O.sizes[k], kLatency, 0, put_lat);
    for (int k = 0; k < O.nsizes; ++k)
      if (O.sizes[k] <= small && bench_selected(&O, "get_lat"))
        measure("get_lat", O.sizes[k], kLatency, 0, get_lat);
    for (int k = 0; k < O.nsizes; ++k)
      if (O.sizes[k] <= small && bench_selected(&O, "sendrecv_pingpong"))
        measure("sendrecv_pingpong", O.sizes[k], kHalfRoundTrip, 0, sendrecv_pingpong);
    if (bench_selected(&O, "fadd_lat")) measure("fadd_lat", 8, kLatency, 0, fadd_lat);
    if (bench_selected(&O, "cswap_lat")) measure("cswap_lat", 8, kLatency, 0, cswap_lat);
    if (bench_selected(&O, "add_rate")) measure("add_rate", 8, kRate, kWindow, add_rate);
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
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  free(lbuf);
  MPI_Finalize();
  return bad || failures ? 1 : 0;
}
