// gpu_nvshmem.cu — NVSHMEM's side of the GPU benchmark, the anchor (bench/gpu/README.md):
// the same measurements as gpu_symmem.cu, in NVSHMEM's API, shaped like its perftests.
//
//   symmem-run -n P gpu_nvshmem --uid-file PATH [--ops all|put,pingpong,barrier,allreduce]
//   gpu_nvshmem --version        the NVSHMEM version compiled against (no GPU needed)
//
// Started without MPI or nvshmrun: any launcher that gives each process its rank and the
// count (SYMMEM_RANK / SYMMEM_NPES as symmem-run sets them, else RANK / WORLD_SIZE or
// PMI_RANK / PMI_SIZE). Rank 0 takes a unique id (nvshmemx_get_uniqueid) and writes it to
// PATH (written aside, then renamed); the others wait up to 60 s for the file; everyone
// calls nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID). Rank 0 removes the file after init.
//
//   put        PE 0 -> PE 1, nvshmemx_putmem_block over put_blocks() blocks, GB/s
//   pingpong   nvshmem_putmem_signal 8 B / nvshmem_signal_wait_until, one thread, PE 0 <-> 1,
//              half a round trip, us (%globaltimer inside the kernel, after 100 warm-up rounds)
//   barrier    nvshmemx_barrier_all_on_stream, us
//   allreduce  nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD), 1 KiB .. 4 MiB, us
// PE 0 prints `nvshmem,OP,SIZE,VALUE,UNIT`; every result is checked as in gpu_symmem.cu.
#include <nvshmem.h>
#include <nvshmemx.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "gpu_common.cuh"

using namespace gpubench;

namespace {

constexpr int kPingWarmup = 100;

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void put_kernel(char* dst, const char* src, size_t bytes, int pe) {
  const size_t chunk = (bytes / gridDim.x + 15) & ~size_t(15);
  const size_t off = chunk * blockIdx.x;
  if (off >= bytes) return;
  nvshmemx_putmem_block(dst + off, src + off, off + chunk <= bytes ? chunk : bytes - off, pe);
}

__global__ void pingpong_kernel(int me, unsigned long long* data, uint64_t* sig, unsigned long long* src, int rounds,
                                unsigned long long* elapsed_ns, unsigned long long* errors) {
  const int peer = 1 - me;
  unsigned long long t0 = 0;
  for (int i = 1; i <= kPingWarmup + rounds; ++i) {
    if (i == kPingWarmup + 1) t0 = globaltimer();
    if (me == 0) {
      *src = i;
      nvshmem_putmem_signal(data, src, sizeof *data, sig, i, NVSHMEM_SIGNAL_SET, peer);
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, i);
    } else {
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, i);
      if (*reinterpret_cast<volatile unsigned long long*>(data) != (unsigned long long)i) ++*errors;
      *src = i;
      nvshmem_putmem_signal(data, src, sizeof *data, sig, i, NVSHMEM_SIGNAL_SET, peer);
    }
    if (me == 0 && *reinterpret_cast<volatile unsigned long long*>(data) != (unsigned long long)i) ++*errors;
  }
  *elapsed_ns = globaltimer() - t0;
}

__global__ void stamp_kernel(int me, int npes, int* slots, int round) {
  for (int pe = threadIdx.x; pe < npes; pe += blockDim.x) nvshmem_int_p(slots + me, round, pe);
  nvshmem_quiet();
}
__global__ void check_stamps(int npes, const int* slots, int round, unsigned long long* errors) {
  for (int pe = threadIdx.x; pe < npes; pe += blockDim.x)
    if (reinterpret_cast<const volatile int*>(slots)[pe] != round) atomicAdd(errors, 1ull);
}

__global__ void add_failure(int* failed_pes) { nvshmem_int_atomic_add(failed_pes, 1, 0); }

int env_int(std::initializer_list<const char*> names, int dflt) {
  for (const char* n : names)
    if (const char* v = std::getenv(n)) return std::atoi(v);
  return dflt;
}

// The unique-id exchange through a file every rank names the same.
bool exchange_uid(int rank, const std::string& path, nvshmemx_uniqueid_t* uid) {
  if (rank == 0) {
    if (nvshmemx_get_uniqueid(uid) != 0) return false;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(uid), sizeof *uid);
      if (!f) return false;
    }
    return std::rename(tmp.c_str(), path.c_str()) == 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(reinterpret_cast<char*>(uid), sizeof *uid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "gpu_nvshmem: rank %d: no unique id in %s after 60 s\n", rank, path.c_str());
  return false;
}

struct Bench {
  int me = 0, npes = 1, sms = 1;
  cudaStream_t s{};
  int* failed_pes = nullptr;  // symmetric (device): how many PEs found a wrong result
  int bad = 0;

  bool fail(const std::string& what) {
    std::fprintf(stderr, "gpu_nvshmem: PE %d: %s\n", me, what.c_str());
    bad = 1;
    return false;
  }
  // Collective; the answer counts on PE 0, the one that prints (as in gpu_symmem.cu).
  bool all_ok(bool mine) {
    if (!mine) add_failure<<<1, 1, 0, s>>>(failed_pes);
    GPUBENCH_CHECK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    int failed = 0;
    if (me == 0) {
      GPUBENCH_CHECK(cudaMemcpy(&failed, failed_pes, sizeof failed, cudaMemcpyDeviceToHost));
      GPUBENCH_CHECK(cudaMemset(failed_pes, 0, sizeof failed));
      GPUBENCH_CHECK(cudaDeviceSynchronize());
    }
    nvshmem_barrier_all();
    return failed == 0;
  }

  void put(size_t max_bytes) {
    char* dst = static_cast<char*>(nvshmem_malloc(max_bytes));
    if (!dst) return (void)fail("nvshmem_malloc for the put failed");
    char* src = nullptr;
    GPUBENCH_CHECK(cudaMalloc(&src, max_bytes));
    fill_pattern<<<grid_for(max_bytes / 4), 256, 0, s>>>(reinterpret_cast<unsigned*>(src), max_bytes / 4, 11);
    for (size_t n : sizes_to(max_bytes)) {
      GPUBENCH_CHECK(cudaMemsetAsync(dst, 0, n, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      nvshmem_barrier_all();
      std::vector<double> gbps;
      if (me == 0) {
        const int blocks = put_blocks(n, sms), iters = n >= 16 * kMiB ? 20 : 200;
        for (int w = 0; w < 5; ++w) put_kernel<<<blocks, kPutThreads, 0, s>>>(dst, src, n, 1);
        for (int r = 0; r < kReps; ++r) {
          const float ms = time_ms(s, [&] {
            for (int i = 0; i < iters; ++i) put_kernel<<<blocks, kPutThreads, 0, s>>>(dst, src, n, 1);
          });
          gbps.push_back(double(n) * iters / (ms * 1e-3) / 1e9);
        }
        GPUBENCH_CHECK(cudaGetLastError());
        GPUBENCH_CHECK(cudaStreamSynchronize(s));
      }
      nvshmem_barrier_all();
      bool ok = true;
      if (me == 1) {
        const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
          count_pattern_errors<<<grid_for(n / 4), 256, 0, s>>>(reinterpret_cast<unsigned*>(dst), n / 4, 11, d);
        });
        if (e != 0) ok = fail("put of " + std::to_string(n) + " bytes: " + std::to_string(e) + " wrong words");
      }
      if (all_ok(ok) && me == 0) csv("nvshmem", "put", n, median(gbps), "GB/s");
    }
    GPUBENCH_CHECK(cudaFree(src));
    nvshmem_free(dst);
  }

  void pingpong() {
    auto* data = static_cast<unsigned long long*>(nvshmem_malloc(64));
    auto* sig = static_cast<uint64_t*>(nvshmem_malloc(64));
    if (!data || !sig) return (void)fail("nvshmem_malloc for the ping-pong failed");
    unsigned long long* local = nullptr;  // [0] src (symmetric not needed), [1] elapsed, [2] errors
    GPUBENCH_CHECK(cudaMalloc(&local, 3 * sizeof *local));
    const int rounds = 2000;
    std::vector<double> us;
    bool ok = true;
    for (int r = 0; r < kReps; ++r) {
      GPUBENCH_CHECK(cudaMemsetAsync(sig, 0, 64, s));
      GPUBENCH_CHECK(cudaMemsetAsync(data, 0, 64, s));
      GPUBENCH_CHECK(cudaMemsetAsync(local, 0, 3 * sizeof *local, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      nvshmem_barrier_all();
      if (me < 2) pingpong_kernel<<<1, 1, 0, s>>>(me, data, sig, local, rounds, local + 1, local + 2);
      GPUBENCH_CHECK(cudaGetLastError());
      unsigned long long host[3];
      GPUBENCH_CHECK(cudaMemcpyAsync(host, local, sizeof host, cudaMemcpyDeviceToHost, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      nvshmem_barrier_all();
      if (host[2] != 0) ok = fail("ping-pong: " + std::to_string(host[2]) + " wrong payloads");
      us.push_back(double(host[1]) / 1e3 / rounds / 2);
    }
    if (all_ok(ok) && me == 0) csv("nvshmem", "pingpong", 8, median(us), "us");
    GPUBENCH_CHECK(cudaFree(local));
    nvshmem_free(sig);
    nvshmem_free(data);
  }

  void barrier() {
    int* slots = static_cast<int*>(nvshmem_malloc(sizeof(int) * size_t(npes)));
    if (!slots) return (void)fail("nvshmem_malloc for the barrier failed");
    GPUBENCH_CHECK(cudaMemsetAsync(slots, 0, sizeof(int) * size_t(npes), s));
    GPUBENCH_CHECK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
      for (int round = 1; round <= 20; ++round) {
        stamp_kernel<<<1, 32, 0, s>>>(me, npes, slots, round);
        nvshmemx_barrier_all_on_stream(s);
        check_stamps<<<1, 32, 0, s>>>(npes, slots, round, d);
        nvshmemx_barrier_all_on_stream(s);
      }
    });
    const bool ok = e == 0 || fail("barrier: " + std::to_string(e) + " stamps not seen after the barrier");
    const int iters = 1000;
    for (int w = 0; w < 20; ++w) nvshmemx_barrier_all_on_stream(s);
    std::vector<double> us;
    for (int r = 0; r < kReps; ++r) {
      const float ms = time_ms(s, [&] {
        for (int i = 0; i < iters; ++i) nvshmemx_barrier_all_on_stream(s);
      });
      us.push_back(ms * 1e3 / iters);
    }
    GPUBENCH_CHECK(cudaGetLastError());
    if (all_ok(ok) && me == 0) csv("nvshmem", "barrier", 0, median(us), "us");
    nvshmem_free(slots);
  }

  void allreduce(size_t max_bytes) {
    float* src = static_cast<float*>(nvshmem_malloc(max_bytes));
    float* dst = static_cast<float*>(nvshmem_malloc(max_bytes));
    if (!src || !dst) return (void)fail("nvshmem_malloc for the all-reduce failed");
    for (size_t bytes : sizes_to(max_bytes)) {
      const size_t n = bytes / sizeof(float);
      fill_reduce_input<<<grid_for(n), 256, 0, s>>>(src, n, me);
      GPUBENCH_CHECK(cudaMemsetAsync(dst, 0, bytes, s));
      GPUBENCH_CHECK(cudaStreamSynchronize(s));
      nvshmem_barrier_all();
      bool ok = true;
      auto check = [&](const char* when) {
        const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
          count_sum_errors<<<grid_for(n), 256, 0, s>>>(dst, n, npes, d);
        });
        if (e != 0)
          ok = fail("all-reduce of " + std::to_string(bytes) + " bytes (" + when + "): " + std::to_string(e) +
                    " wrong sums");
      };
      if (nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, dst, src, n, s) != 0)
        ok = fail("nvshmemx_float_sum_reduce_on_stream returned non-zero");
      check("first call");
      const int iters = 200;
      for (int w = 0; w < 10; ++w) (void)nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, dst, src, n, s);
      std::vector<double> us;
      for (int r = 0; r < kReps; ++r) {
        const float ms = time_ms(s, [&] {
          for (int i = 0; i < iters; ++i) (void)nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, dst, src, n, s);
        });
        us.push_back(ms * 1e3 / iters);
      }
      GPUBENCH_CHECK(cudaGetLastError());
      check("after the timed calls");
      if (all_ok(ok) && me == 0) csv("nvshmem", "allreduce", bytes, median(us), "us");
    }
    nvshmem_free(dst);
    nvshmem_free(src);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (flag(argc, argv, "--version")) {
    std::printf("%d.%d.%d\n", NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION);
    return 0;
  }
  const std::string ops = arg(argc, argv, "--ops", "all");
  const char* uid_file = arg(argc, argv, "--uid-file", nullptr);
  const size_t max_put = std::strtoull(arg(argc, argv, "--max-put", "268435456"), nullptr, 0);
  const size_t max_reduce = std::strtoull(arg(argc, argv, "--max-reduce", "4194304"), nullptr, 0);
  const int rank = env_int({"SYMMEM_RANK", "RANK", "PMI_RANK"}, -1);
  const int nranks = env_int({"SYMMEM_NPES", "WORLD_SIZE", "PMI_SIZE"}, -1);
  if (uid_file == nullptr || rank < 0 || nranks < 2) {
    std::fprintf(stderr, "gpu_nvshmem: needs --uid-file PATH and a rank and size (SYMMEM_RANK/SYMMEM_NPES) of 2+\n");
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("gpu_nvshmem: skipped: no GPU here\n");
    return 77;
  }
  GPUBENCH_CHECK(cudaSetDevice(0));  // every PE on the one GPU
  nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (!exchange_uid(rank, uid_file, &uid)) return 2;
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(rank, nranks, &uid, &attr) != 0) {
    std::fprintf(stderr, "gpu_nvshmem: nvshmemx_set_attr_uniqueid_args failed\n");
    return 2;
  }
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
  if (rank == 0) std::remove(uid_file);
  Bench b;
  b.me = nvshmem_my_pe();
  b.npes = nvshmem_n_pes();
  GPUBENCH_CHECK(cudaDeviceGetAttribute(&b.sms, cudaDevAttrMultiProcessorCount, 0));
  GPUBENCH_CHECK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
  b.failed_pes = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  if (b.me == 0) {
    int major = 0, minor = 0, patch = 0;
    nvshmemx_vendor_get_version_info(&major, &minor, &patch);
    note("nvshmem", std::to_string(b.npes) + " PEs, library " + std::to_string(major) + "." + std::to_string(minor) +
                        "." + std::to_string(patch) + ", compiled against " +
                        std::to_string(NVSHMEM_VENDOR_MAJOR_VERSION) + "." +
                        std::to_string(NVSHMEM_VENDOR_MINOR_VERSION) + "." +
                        std::to_string(NVSHMEM_VENDOR_PATCH_VERSION));
  }
  if (wants(ops, "put")) b.put(max_put);
  if (wants(ops, "pingpong")) b.pingpong();
  if (wants(ops, "barrier")) b.barrier();
  if (wants(ops, "allreduce")) b.allreduce(max_reduce);
  nvshmem_free(b.failed_pes);
  GPUBENCH_CHECK(cudaStreamDestroy(b.s));
  nvshmem_barrier_all();
  nvshmem_finalize();
  return b.bad;
}
