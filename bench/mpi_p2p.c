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
#include "bench_mpi.h"

enum { kHeader = 4096 };
enum { kFaddCtr = 0, kCswapCtr = 1, kAddCtr = 2, kMrSlots = 8 };

static MPI_Win win;
static unsigned char *base; /* window: kHeader bytes of counters, then data */
static unsigned char *lbuf;

#define WDATA (base + kHeader)
#define WLONG(i) (((long *)base)[i])
#define DATA_DISP ((MPI_Aint)kHeader)

/* After this, window memory written by remote RMA is visible to local loads and local
 * stores are visible to remote RMA (unified model). */
static void sync_window(void) {
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_sync(win);
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
  if (target && (k = bench_check(WDATA, size, seed)) >= 0) bench_wrong("put", size, "word", k, 0);
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
      for (size_t k = 0; k < w; ++k)
        MPI_Put(lbuf, (int)size, MPI_BYTE, peer, DATA_DISP, (int)size, MPI_BYTE, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  sync_window();
  long k;
  if (target && (k = bench_check(WDATA, size, seed)) >= 0)
    bench_wrong("put_bw", size, "word", k, 0);
  return t;
}

static double get_bw(size_t size, long iters, uint64_t seed) {
  double t = 0;
  const size_t w = bench_window_for(size);
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
    if ((k = bench_check(lbuf, size, seed)) >= 0) bench_wrong("get_bw", size, "word", k, 0);
  }
  return t;
}

static double put_mr(size_t size, long iters, uint64_t seed) {
  double t = 0;
  long vals[kBenchWindow];
  for (int k = 0; k < kBenchWindow; ++k) vals[k] = (long)(seed * kBenchWindow + (uint64_t)k);
  (void)size;
  if (initiator) {
    const double t0 = bench_now_us();
    for (long i = 0; i < iters; ++i) {
      for (int k = 0; k < kBenchWindow; ++k)
        MPI_Put(&vals[k], 1, MPI_LONG, peer, (MPI_Aint)((kMrSlots + k) * sizeof(long)), 1,
                MPI_LONG, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  sync_window();
  if (target)
    for (int k = 0; k < kBenchWindow; ++k)
      if (WLONG(kMrSlots + k) != vals[k])
        bench_wrong("put_mr", 8, "slot", WLONG(kMrSlots + k), vals[k]);
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
      if (w[0] != seq) bench_wrong("sendrecv_pingpong", size, "seq", w[0], seq);
    } else if (target) {
      MPI_Recv(lbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (w[0] != seq) bench_wrong("sendrecv_pingpong", size, "seq", w[0], seq);
      MPI_Send(lbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
  }
  t = bench_now_us() - t0;
  if (initiator || target) {
    const uint64_t *u = (const uint64_t *)lbuf;
    for (size_t k = 1; k < size / 8; ++k)
      if (u[k] != bench_word(seed, k)) {
        bench_wrong("sendrecv_pingpong", size, "payload word", (long)k, 0);
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
      if (v != fadd_next) bench_wrong("fadd_lat", 8, "fetched, expected", v, fadd_next);
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
      if (v != cswap_next) bench_wrong("cswap_lat", 8, "fetched, expected", v, cswap_next);
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
      for (int k = 0; k < kBenchWindow; ++k)
        MPI_Accumulate(&one, 1, MPI_LONG, peer, kAddCtr * sizeof(long), 1, MPI_LONG, MPI_SUM, win);
      MPI_Win_flush(peer, win);
    }
    t = bench_now_us() - t0;
  }
  add_total += iters * kBenchWindow;
  sync_window();
  if (target) {
    /* read the counter atomically, as the standard requires next to accumulates */
    long v, zero = 0;
    MPI_Fetch_and_op(&zero, &v, MPI_LONG, me, kAddCtr * sizeof(long), MPI_NO_OP, win);
    MPI_Win_flush(me, win);
    if (v != add_total) bench_wrong("add_rate", 8, "counter, expected", v, add_total);
  }
  return t;
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv, "mpi_p2p", kBenchPairs);
  const size_t max = bench_max_size(&O);
  if (MPI_Win_allocate((MPI_Aint)(kHeader + max), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win) !=
          MPI_SUCCESS ||
      !(lbuf = aligned_alloc(4096, (max + 4095) / 4096 * 4096))) { /* as shmem_p2p.c */
    fprintf(stderr, "mpi_p2p [rank %d]: cannot allocate %zu bytes\n", me, max);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(base, 0, kHeader);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  sync_window();

  bench_banner();
  if (bench_columns()) {
    const size_t small = 32768;
    bench_measure_sizes("put_lat", small, kLatency, put_lat, kCopy1);
    bench_measure_sizes("get_lat", small, kLatency, get_lat, kCopy1);
    bench_measure_sizes("sendrecv_pingpong", small, kHalfRoundTrip, sendrecv_pingpong, kLine | kCopy1);
    bench_measure("fadd_lat", 8, kLatency, fadd_lat, kLine);
    bench_measure("cswap_lat", 8, kLatency, cswap_lat, kLine);
    bench_measure("add_rate", 8, kRate, add_rate, kNoLimit);
    bench_measure("put_mr", 8, kRate, put_mr, kNoLimit);
    bench_measure_sizes("put_bw", SIZE_MAX, kBandwidth, put_bw, kCopy1);
    bench_measure_sizes("get_bw", SIZE_MAX, kBandwidth, get_bw, kCopy1);
  }

  const int rc = bench_done();
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  free(lbuf);
  bench_finish();
  return rc;
}
