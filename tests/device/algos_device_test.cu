// The device collectives (symmem/cuda_coll.cuh) on a GPU, under symmem-run -n N (N >= 2,
// every PE on the node). Without a GPU it exits 77 (skipped) before shmem_init.
// Every block-scope collective x DType x RedOp is instantiated in the kernels below, so
// nvcc compiles them all in every build with SYMMEM_CUDA on, GPU or not. On a GPU each is
// run on the world team and on the halves (even / odd PEs, concurrently) with 1 and 4
// blocks of 256 threads, and its result compared bit for bit with a host reference that
// reduces in team order in float (as the algorithms do); prints "ok" at the end.
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include <symmem/cuda_coll.cuh>

namespace sc = symmem::cuda;
namespace sa = symmem::algo;
using sa::DType;
using sa::RedOp;

#define CHECK_CUDA(x)                                                                    \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "PE %d: %s: %s\n", shmem_my_pe(), #x, cudaGetErrorString(e_));     \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

enum Algo { kReduceScatter = 0, kAllreduce, kOneShot, kTwoShot, kAllreduceInPlace, kNumAlgos };
enum Coll { kBarrier = 0, kSync, kBroadcast, kFcollect, kAlltoall };

template <class T, RedOp op, int algo>
__global__ void reduce_kernel(sc::Heap h, sa::Team t, T* d, const T* s, size_t n) {
  if constexpr (algo == kReduceScatter) {
    sc::reduce_scatter_block<T, op>(h, t, d, s, n);
  } else if constexpr (algo == kAllreduce || algo == kAllreduceInPlace) {
    sc::allreduce_block<T, op>(h, t, d, algo == kAllreduceInPlace ? d : s, n);
  } else {
    sc::BlockExec x(h);
    if constexpr (algo == kOneShot) sa::allreduce_one_shot<T, op>(x, t, int(blockIdx.x), int(gridDim.x), d, s, n);
    else sa::allreduce_two_shot<T, op>(x, t, int(blockIdx.x), int(gridDim.x), d, s, n);
  }
}

__global__ void bytes_kernel(sc::Heap h, sa::Team t, int coll, char* d, const char* s, size_t nb, int root) {
  switch (coll) {
    case kBarrier: sc::barrier_block(h, t); break;
    case kSync: sc::sync_block(h, t); break;
    case kBroadcast: sc::broadcast_block(h, t, d, s, nb, root); break;
    case kFcollect: sc::fcollect_block(h, t, d, s, nb); break;
    case kAlltoall: sc::alltoall_block(h, t, d, s, nb); break;
  }
}

// ---- host side ----
static uint64_t mix(uint64_t seed, int pe, size_t i) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + (uint64_t(pe) << 40) + i + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
template <class T>
static T gen(uint64_t seed, int pe, size_t i) {
  const uint64_t hv = mix(seed, pe, i);
  if constexpr (std::is_integral<T>::value) return T(hv);
  else if constexpr (std::is_same<T, float>::value) return float(int64_t(hv % 2000001) - 1000000) * 0.001234f;
  else return sa::Arith<T>::store(float(int64_t(hv % 2001) - 1000) / 37.f);
}
template <class T, RedOp op>
static T ref_reduce(const sa::Team& t, uint64_t seed, size_t i) {
  using A = typename sa::Arith<T>::Acc;
  A acc = sa::Arith<T>::load(gen<T>(seed, sa::world_pe(t, 0), i));
  for (int j = 1; j < t.size; ++j) acc = sa::combine<op>(acc, sa::Arith<T>::load(gen<T>(seed, sa::world_pe(t, j), i)));
  return sa::Arith<T>::store(acc);
}

struct Ctx {
  sc::Heap h;
  char *src, *dest;  // symmetric device buffers of kCap bytes
  int me, npes;
  int failures = 0;
};
constexpr size_t kCap = 16 << 20;

static sa::Team team_for(const Ctx& c, bool halves) {
  if (!halves) return sa::Team{0, 1, c.npes, c.me};
  const int start = c.me % 2;
  return sa::Team{start, 2, (c.npes - start + 1) / 2, c.me / 2};
}

template <class T, RedOp op, int algo>
static void run_reduce(Ctx& c, bool halves, int blocks, size_t n, uint64_t seed) {
  const sa::Team t = team_for(c, halves);
  const size_t in = algo == kReduceScatter ? n * size_t(t.size) : n;
  std::vector<T> host(in > n ? in : n);
  for (size_t k = 0; k < in; ++k) host[k] = gen<T>(seed, c.me, k);
  T* s = reinterpret_cast<T*>(c.src);
  T* d = reinterpret_cast<T*>(c.dest);
  CHECK_CUDA(cudaMemcpy(algo == kAllreduceInPlace ? d : s, host.data(), in * sizeof(T), cudaMemcpyHostToDevice));
  if (algo != kAllreduceInPlace) CHECK_CUDA(cudaMemset(d, 0xa5, n * sizeof(T)));
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();  // every PE's source is on its GPU before any kernel reads it
  reduce_kernel<T, op, algo><<<blocks, 256>>>(c.h, t, d, s, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (size_t k = 0; k < n; ++k) {
    const T want = ref_reduce<T, op>(t, seed, algo == kReduceScatter ? size_t(t.me) * n + k : k);
    if (memcmp(&want, &host[k], sizeof(T)) != 0 && bad++ < 3)
      fprintf(stderr, "PE %d: algo %d op %d size %d n %zu team %s blocks %d: element %zu differs\n", c.me, algo,
              int(op), int(sizeof(T)), n, halves ? "halves" : "world", blocks, k);
  }
  c.failures += bad != 0;
  shmem_barrier_all();  // nobody refills a buffer a peer's kernel may read (the kernels end with a sync too)
}

template <DType D, RedOp op>
static void reduce_all_algos(Ctx& c, size_t n, uint64_t seed) {
  using T = sa::elem_t<D>;
  if constexpr (sa::kOpAllowed<T, op>) {
    for (bool halves : {false, true})
      for (int blocks : {1, 4}) {
        run_reduce<T, op, kReduceScatter>(c, halves, blocks, n, seed);
        run_reduce<T, op, kAllreduce>(c, halves, blocks, n, seed + 1);
        run_reduce<T, op, kOneShot>(c, halves, blocks, n, seed + 2);
        run_reduce<T, op, kTwoShot>(c, halves, blocks, n, seed + 3);
        run_reduce<T, op, kAllreduceInPlace>(c, halves, blocks, n, seed + 4);
      }
  }
}
template <DType D>
static void reduce_all_ops(Ctx& c, size_t n, uint64_t seed) {
  reduce_all_algos<D, RedOp::kSum>(c, n, seed);
  reduce_all_algos<D, RedOp::kProd>(c, n, seed + 10);
  reduce_all_algos<D, RedOp::kMin>(c, n, seed + 20);
  reduce_all_algos<D, RedOp::kMax>(c, n, seed + 30);
}

static void run_bytes(Ctx& c, bool halves, int blocks, int coll, size_t nb, uint64_t seed) {
  const sa::Team t = team_for(c, halves);
  const int root = t.size - 1;
  const size_t sb = coll == kAlltoall ? nb * size_t(t.size) : nb;
  const size_t db = coll == kAlltoall || coll == kFcollect ? nb * size_t(t.size) : nb;
  std::vector<unsigned char> host(sb > db ? sb : db);
  for (size_t k = 0; k < sb; ++k) host[k] = (unsigned char)(mix(seed, c.me, k) >> 17);
  CHECK_CUDA(cudaMemcpy(c.src, host.data(), sb, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(c.dest, 0x5a, db));
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();
  bytes_kernel<<<blocks, 256>>>(c.h, t, coll, c.dest, c.src, nb, root);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  if (coll == kBarrier || coll == kSync) {
    shmem_barrier_all();
    return;
  }
  CHECK_CUDA(cudaMemcpy(host.data(), c.dest, db, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (size_t k = 0; k < db; ++k) {
    const size_t j = nb ? k / nb : 0, b = nb ? k % nb : 0;
    unsigned char want;
    if (coll == kFcollect) want = (unsigned char)(mix(seed, sa::world_pe(t, int(j)), b) >> 17);
    else if (coll == kAlltoall) want = (unsigned char)(mix(seed, sa::world_pe(t, int(j)), size_t(t.me) * nb + b) >> 17);
    else want = (unsigned char)(mix(seed, sa::world_pe(t, root), k) >> 17);
    if (host[k] != want && bad++ < 3)
      fprintf(stderr, "PE %d: collective %d %zu bytes team %s blocks %d: byte %zu is %d, want %d\n", c.me, coll, nb,
              halves ? "halves" : "world", blocks, k, host[k], want);
  }
  c.failures += bad != 0;
  shmem_barrier_all();
}

int main() {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("algos_device_test: skipped: no GPU here (cudaGetDeviceCount: %s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  shmem_init();
  Ctx c;
  c.me = shmem_my_pe();
  c.npes = shmem_n_pes();
  if (c.npes < 2) {
    if (c.me == 0) printf("algos_device_test: skipped: needs 2 PEs or more\n");
    shmem_finalize();
    return 77;
  }
  c.src = (char*)shmem_malloc_with_hints(kCap, SHMEMX_MALLOC_DEVICE);
  c.dest = (char*)shmem_malloc_with_hints(kCap, SHMEMX_MALLOC_DEVICE);
  if (!c.src || !c.dest) {
    fprintf(stderr, "PE %d: device allocation returned NULL on a GPU machine (see the warning above)\n", c.me);
    return 1;
  }
  shmemx_device_heap_t q;
  if (shmemx_device_heap_query(&q) != 0) {
    fprintf(stderr, "PE %d: shmemx_device_heap_query failed after a device allocation\n", c.me);
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(q.device));
  c.h = sc::Heap(q);

  uint64_t seed = 1;
  for (bool halves : {false, true})
    for (int blocks : {1, 4})
      for (int coll : {kBarrier, kSync, kBroadcast, kFcollect, kAlltoall})
        for (size_t nb : {size_t(0), size_t(1), size_t(1003), size_t(1 << 20) + 24})
          run_bytes(c, halves, blocks, coll, nb, seed++);
  for (size_t n : {size_t(1), size_t(1003)}) {
    reduce_all_ops<DType::kF32>(c, n, seed += 100);
    reduce_all_ops<DType::kF16>(c, n, seed += 100);
    reduce_all_ops<DType::kBF16>(c, n, seed += 100);
    reduce_all_ops<DType::kI32>(c, n, seed += 100);
    reduce_all_ops<DType::kI64>(c, n, seed += 100);
  }
  // Past kOneShotMaxBytes: allreduce takes two-shot.
  reduce_all_algos<DType::kF32, RedOp::kSum>(c, 262147, seed += 100);
  reduce_all_algos<DType::kBF16, RedOp::kMax>(c, 524309, seed += 100);

  int all = 0;
  {
    int* f = (int*)shmem_malloc(sizeof(int));
    int* sum = (int*)shmem_malloc(sizeof(int));
    *f = c.failures;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, sum, f, 1);
    all = *sum;
    shmem_free(sum);
    shmem_free(f);
  }
  if (c.me == 0) {
    if (all == 0) printf("algos_device_test: every collective x type x op on %d PEs: ok\n", c.npes);
    else printf("algos_device_test: %d failed case(s) over all PEs\n", all);
  }
  shmem_free(c.dest);
  shmem_free(c.src);
  shmem_finalize();
  return all ? 1 : 0;
}
