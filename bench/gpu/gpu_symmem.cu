// gpu_symmem.cu — symmem's side of the GPU benchmark (bench/gpu/README.md), P PEs on one GPU:
//
//   symmem-run -n P gpu_symmem [--ops all|put,pingpong,barrier,allreduce] [--max-put BYTES]
//
// Measures on the device heap (shmem_malloc_with_hints(..., SHMEMX_MALLOC_DEVICE)):
//   put        PE 0 -> PE 1, putmem_block over put_blocks() blocks, 1 KiB .. 256 MiB, GB/s
//   pingpong   putmem_signal of 8 B by one thread, PE 0 <-> PE 1, half a round trip, us
//              (timed inside the kernel with %globaltimer, after 100 warm-up rounds)
//   barrier    shmemx_barrier_all_on_stream, us per barrier          [SHMEMX_HAVE_STREAM_OPS]
//   allreduce  shmemx_float_sum_reduce_on_stream on SHMEM_TEAM_WORLD, 1 KiB .. 4 MiB per PE,
//              us per call                                            [SHMEMX_HAVE_STREAM_OPS]
// PE 0 prints `symmem,OP,SIZE,VALUE,UNIT` (its own timing; each op synchronises the PEs).
// Every result is checked (the put's bytes at the target, each ping-pong payload, every
// PE's view across each barrier, every sum); a wrong one is an error, exit 1, no figure.
// The pingpong, barrier and allreduce wait across processes on the GPU: run them under MPS.
#include <shmem.h>
#include <shmemx.h>

#include <symmem/cuda.cuh>

#include "gpu_common.cuh"

namespace sc = symmem::cuda;
using namespace gpubench;

namespace {

constexpr int kPingWarmup = 100;

__global__ void put_kernel(sc::Heap h, char* dst, const char* src, size_t bytes, int pe) {
  const size_t chunk = (bytes / gridDim.x + 15) & ~size_t(15);
  const size_t off = chunk * blockIdx.x;
  if (off >= bytes) return;
  sc::putmem_block(h, dst + off, src + off, off + chunk <= bytes ? chunk : bytes - off, pe);
}

// PE 0 starts each round, PE 1 answers; each checks that the payload it got is the round's.
__global__ void pingpong_kernel(sc::Heap h, unsigned long long* data, uint64_t* sig, unsigned long long* src,
                                int rounds, unsigned long long* elapsed_ns, unsigned long long* errors) {
  const int peer = 1 - h.me;
  unsigned long long t0 = 0;
  for (int i = 1; i <= kPingWarmup + rounds; ++i) {
    if (i == kPingWarmup + 1) t0 = sc::detail::globaltimer();
    if (h.me == 0) {
      *src = i;
      sc::putmem_signal(h, data, src, sizeof *data, sig, i, sc::SignalOp::kSet, peer);
      sc::signal_wait_until(h, sig, sc::Cmp::kGe, i, sc::kDefaultTimeoutNs, peer);
    } else {
      sc::signal_wait_until(h, sig, sc::Cmp::kGe, i, sc::kDefaultTimeoutNs, peer);
      if (*reinterpret_cast<volatile unsigned long long*>(data) != (unsigned long long)i) ++*errors;
      *src = i;
      sc::putmem_signal(h, data, src, sizeof *data, sig, i, sc::SignalOp::kSet, peer);
    }
    if (h.me == 0 && *reinterpret_cast<volatile unsigned long long*>(data) != (unsigned long long)i) ++*errors;
  }
  *elapsed_ns = sc::detail::globaltimer() - t0;
}

#if defined(SHMEMX_HAVE_STREAM_OPS)
// Barrier check: each PE writes `round` into its slot of every PE's array, the barrier, then
// each PE counts the slots of its own array that do not hold `round` yet.
__global__ void stamp_kernel(sc::Heap h, int* slots, int round) {
  for (int pe = threadIdx.x; pe < h.npes; pe += blockDim.x) sc::p(h, slots + h.me, round, pe);
  sc::quiet();
}
__global__ void check_stamps(sc::Heap h, const int* slots, int round, unsigned long long* errors) {
  for (int pe = threadIdx.x; pe < h.npes; pe += blockDim.x)
    if (reinterpret_cast<const volatile int*>(slots)[pe] != round) atomicAdd(errors, 1ull);
}
#endif

struct Bench {
  sc::Heap h;
  int me = 0, npes = 1, sms = 1;
  cudaStream_t s{};
  int* failed_pes = nullptr;  // host symmetric: how many PEs found a wrong result
  int bad = 0;

  bool fail(const std::string& what) {
    std::fprintf(stderr, "gpu_symmem: PE %d: %s\n", me, what.c_str());
    bad = 1;
    return false;
  }
  // Collective: whether any PE's check failed, answered on PE 0, the one that prints a
  // figure. Every PE makes the same calls either way: one PE's failure deadlocks no one.
  bool all_ok(bool mine) {
    if (!mine) shmem_int_atomic_add(failed_pes, 1, 0);
    shmem_barrier_all();
    const int failed = me == 0 ? *failed_pes : 0;
    if (me == 0) *failed_pes = 0;
    shmem_barrier_all();
    return failed == 0;
  }

  void put(size_t max_bytes) {
    char* dst = static_cast<char*>(shmem_malloc_with_hints(max_bytes, SHMEMX_MALLOC_DEVICE));
    if (!dst) return (void)fail("device allocation for the put failed");
    char* src = nullptr;
    GPUBENCH_CHECK(cudaMalloc(&src, max_bytes));
    fill_pattern<<<grid_for(max_bytes / 4), 256, 0, s>>>(reinterpret_cast<unsigned*>(src), max_bytes / 4, 11);
    for (size_t n : sizes_to(max_bytes)) {
      GPUBENCH_CHECK(cudaMemsetAsync(dst, 0, n, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      shmem_barrier_all();
      std::vector<double> gbps;
      if (me == 0) {
        const int blocks = put_blocks(n, sms), iters = n >= 16 * kMiB ? 20 : 200;
        for (int w = 0; w < 5; ++w) put_kernel<<<blocks, kPutThreads, 0, s>>>(h, dst, src, n, 1);
        for (int r = 0; r < kReps; ++r) {
          const float ms = time_ms(s, [&] {
            for (int i = 0; i < iters; ++i) put_kernel<<<blocks, kPutThreads, 0, s>>>(h, dst, src, n, 1);
          });
          gbps.push_back(double(n) * iters / (ms * 1e-3) / 1e9);
        }
        GPUBENCH_CHECK(cudaGetLastError());
        GPUBENCH_CHECK(cudaStreamSynchronize(s));
      }
      shmem_barrier_all();  // PE 0's kernels are complete: PE 1 checks what landed
      bool ok = true;
      if (me == 1) {
        const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
          count_pattern_errors<<<grid_for(n / 4), 256, 0, s>>>(reinterpret_cast<unsigned*>(dst), n / 4, 11, d);
        });
        if (e != 0) ok = fail("put of " + std::to_string(n) + " bytes: " + std::to_string(e) + " wrong words");
      }
      if (all_ok(ok) && me == 0) csv("symmem", "put", n, median(gbps), "GB/s");
    }
    GPUBENCH_CHECK(cudaFree(src));
    shmem_free(dst);
  }

  void pingpong() {
    auto* data = static_cast<unsigned long long*>(shmem_malloc_with_hints(64, SHMEMX_MALLOC_DEVICE));
    auto* sig = static_cast<uint64_t*>(shmem_malloc_with_hints(64, SHMEMX_MALLOC_DEVICE));
    if (!data || !sig) return (void)fail("device allocation for the ping-pong failed");
    unsigned long long* local = nullptr;  // [0] src, [1] elapsed, [2] errors
    GPUBENCH_CHECK(cudaMalloc(&local, 3 * sizeof *local));
    const int rounds = 2000;
    std::vector<double> us;
    bool ok = true;
    for (int r = 0; r < kReps; ++r) {
      GPUBENCH_CHECK(cudaMemsetAsync(sig, 0, 64, s));
      GPUBENCH_CHECK(cudaMemsetAsync(data, 0, 64, s));
      GPUBENCH_CHECK(cudaMemsetAsync(local, 0, 3 * sizeof *local, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      shmem_barrier_all();
      if (me < 2) pingpong_kernel<<<1, 1, 0, s>>>(h, data, sig, local, rounds, local + 1, local + 2);
      GPUBENCH_CHECK(cudaGetLastError());
      unsigned long long host[3];
      GPUBENCH_CHECK(cudaMemcpyAsync(host, local, sizeof host, cudaMemcpyDeviceToHost, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      shmem_barrier_all();
      if (host[2] != 0) ok = fail("ping-pong: " + std::to_string(host[2]) + " wrong payloads");
      us.push_back(double(host[1]) / 1e3 / rounds / 2);
    }
    if (all_ok(ok) && me == 0) csv("symmem", "pingpong", 8, median(us), "us");
    GPUBENCH_CHECK(cudaFree(local));
    shmem_free(sig);
    shmem_free(data);
  }

#if defined(SHMEMX_HAVE_STREAM_OPS)
  void barrier() {
    int* slots = static_cast<int*>(shmem_malloc_with_hints(sizeof(int) * size_t(npes), SHMEMX_MALLOC_DEVICE));
    if (!slots) return (void)fail("device allocation for the barrier failed");
    GPUBENCH_CHECK(cudaMemsetAsync(slots, 0, sizeof(int) * size_t(npes), s));
    GPUBENCH_CHECK(cudaStreamSynchronize(s));
    shmem_barrier_all();
    const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
      for (int round = 1; round <= 20; ++round) {
        stamp_kernel<<<1, 32, 0, s>>>(h, slots, round);
        shmemx_barrier_all_on_stream(s);
        check_stamps<<<1, 32, 0, s>>>(h, slots, round, d);
        shmemx_barrier_all_on_stream(s);
      }
    });
    const bool ok = e == 0 || fail("barrier: " + std::to_string(e) + " stamps not seen after the barrier");
    const int iters = 1000;
    for (int w = 0; w < 20; ++w) shmemx_barrier_all_on_stream(s);
    std::vector<double> us;
    for (int r = 0; r < kReps; ++r) {
      const float ms = time_ms(s, [&] {
        for (int i = 0; i < iters; ++i) shmemx_barrier_all_on_stream(s);
      });
      us.push_back(ms * 1e3 / iters);
    }
    GPUBENCH_CHECK(cudaGetLastError());
    if (all_ok(ok) && me == 0) csv("symmem", "barrier", 0, median(us), "us");
    shmem_free(slots);
  }

  void allreduce(size_t max_bytes) {
    float* src = static_cast<float*>(shmem_malloc_with_hints(max_bytes, SHMEMX_MALLOC_DEVICE));
    float* dst = static_cast<float*>(shmem_malloc_with_hints(max_bytes, SHMEMX_MALLOC_DEVICE));
    if (!src || !dst) return (void)fail("device allocation for the all-reduce failed");
    for (size_t bytes : sizes_to(max_bytes)) {
      const size_t n = bytes / sizeof(float);
      fill_reduce_input<<<grid_for(n), 256, 0, s>>>(src, n, me);
      GPUBENCH_CHECK(cudaMemsetAsync(dst, 0, bytes, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      shmem_barrier_all();
      bool ok = true;
      auto check = [&](const char* when) {
        const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
          count_sum_errors<<<grid_for(n), 256, 0, s>>>(dst, n, npes, d);
        });
        if (e != 0)
          ok = fail("all-reduce of " + std::to_string(bytes) + " bytes (" + when + "): " + std::to_string(e) +
                    " wrong sums");
      };
      if (shmemx_float_sum_reduce_on_stream(SHMEM_TEAM_WORLD, dst, src, n, s) != 0)
        ok = fail("shmemx_float_sum_reduce_on_stream returned non-zero");
      check("first call");
      const int iters = 200;
      for (int w = 0; w < 10; ++w) (void)shmemx_float_sum_reduce_on_stream(SHMEM_TEAM_WORLD, dst, src, n, s);
      std::vector<double> us;
      for (int r = 0; r < kReps; ++r) {
        const float ms = time_ms(s, [&] {
          for (int i = 0; i < iters; ++i) (void)shmemx_float_sum_reduce_on_stream(SHMEM_TEAM_WORLD, dst, src, n, s);
        });
        us.push_back(ms * 1e3 / iters);
      }
      GPUBENCH_CHECK(cudaGetLastError());
      check("after the timed calls");
      if (all_ok(ok) && me == 0) csv("symmem", "allreduce", bytes, median(us), "us");
    }
    shmem_free(dst);
    shmem_free(src);
  }
#endif
};

}  // namespace

int main(int argc, char** argv) {
  const std::string ops = arg(argc, argv, "--ops", "all");
  const size_t max_put = std::strtoull(arg(argc, argv, "--max-put", "268435456"), nullptr, 0);
  const size_t max_reduce = std::strtoull(arg(argc, argv, "--max-reduce", "4194304"), nullptr, 0);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("gpu_symmem: skipped: no GPU here\n");
    return 77;
  }
  shmem_init();
  Bench b;
  b.me = shmem_my_pe();
  b.npes = shmem_n_pes();
  if (b.npes < 2) {
    if (b.me == 0) std::fprintf(stderr, "gpu_symmem: needs 2 PEs or more\n");
    shmem_finalize();
    return 2;
  }
  // The first device allocation creates the heap; the query then describes it.
  void* first = shmem_malloc_with_hints(64, SHMEMX_MALLOC_DEVICE);
  shmemx_device_heap_t q;
  if (!first || shmemx_device_heap_query(&q) != 0) {
    std::fprintf(stderr, "gpu_symmem: PE %d: no device heap on a GPU machine (see the warning above)\n", b.me);
    return 1;
  }
  GPUBENCH_CHECK(cudaSetDevice(q.device));
  b.h = sc::Heap(q);
  GPUBENCH_CHECK(cudaDeviceGetAttribute(&b.sms, cudaDevAttrMultiProcessorCount, q.device));
  GPUBENCH_CHECK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
  b.failed_pes = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  if (b.me == 0)
    note("symmem", std::to_string(b.npes) + " PEs, device heap " + std::to_string(q.heap_size >> 20) + " MiB per PE");

  if (wants(ops, "put")) b.put(max_put);
  if (wants(ops, "pingpong")) b.pingpong();
#if defined(SHMEMX_HAVE_STREAM_OPS)
  if (wants(ops, "barrier")) b.barrier();
  if (wants(ops, "allreduce")) b.allreduce(max_reduce);
#else
  (void)max_reduce;
  if (b.me == 0 && (wants(ops, "barrier") || wants(ops, "allreduce")))
    note("symmem", "barrier and allreduce not measured: this build has no shmemx_*_on_stream (SHMEMX_HAVE_STREAM_OPS)");
#endif
  GPUBENCH_CHECK(cudaStreamDestroy(b.s));
  shmem_free(b.failed_pes);
  shmem_free(first);
  // One verdict: any PE's failure fails the run (symmem-run returns the worst exit code).
  shmem_barrier_all();
  shmem_finalize();
  return b.bad;
}
