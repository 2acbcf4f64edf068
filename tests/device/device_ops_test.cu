// Host calls on device memory and the stream-ordered forms (symmem/shmemx_device.h) on a
// GPU, under symmem-run -n N (N >= 2, every PE on the node). Without a GPU it exits 77
// (skipped) before shmem_init, saying why. Modes (argv[1]):
//   host:   shmem_put/get/p/g/iput/iget/put_nbi, atomics, signals, put-with-signal and
//           wait_until/test on device addresses, from host code (no kernel of ours).
//   stream: the *_on_stream point-to-point forms on a stream of ours: a ring of
//           put-with-signal + stream waits, get, quiet, barrier, the default stream too.
//   coll:   every collective on the stream (barrier, broadcast, fcollect, alltoall,
//           reduce-scatter and all-reduce for every type and operator), sizes from one
//           element to 4 MiB, world and a strided team, against a host reference.
// Prints "<mode> on N PEs: ok" on PE 0 when every PE passed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "PE %d: %s:%d %s: %s\n", shmem_my_pe(), __FILE__, __LINE__, #x,           \
              cudaGetErrorString(e_));                                                         \
      shmem_global_exit(1);                                                                    \
    }                                                                                          \
  } while (0)

static int me, npes, errors;

#define EXPECT(cond, ...)                                                        \
  do {                                                                           \
    if (!(cond)) {                                                               \
      if (errors++ < 20) {                                                       \
        fprintf(stderr, "PE %d: %s:%d: %s: ", me, __FILE__, __LINE__, #cond);    \
        fprintf(stderr, __VA_ARGS__);                                            \
        fprintf(stderr, "\n");                                                   \
      }                                                                          \
    }                                                                            \
  } while (0)

template <class T>
static T* dev_alloc(size_t n) {
  T* p = static_cast<T*>(shmem_malloc_with_hints(std::max<size_t>(n * sizeof(T), 1), SHMEMX_MALLOC_DEVICE));
  if (!p) {
    fprintf(stderr, "PE %d: device allocation of %zu bytes returned NULL on a GPU machine\n", me, n * sizeof(T));
    shmem_global_exit(1);
  }
  return p;
}

// ---------------------------------------------------------------- host calls

static void test_host() {
  const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  const size_t n = 1 << 18;  // 1 MiB of int
  int* data = dev_alloc<int>(n);
  long long* ctr = dev_alloc<long long>(4);
  uint64_t* sig = dev_alloc<uint64_t>(2);
  int* word = dev_alloc<int>(1);
  std::vector<int> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = int(me * 1000003 + i);
  CHECK_CUDA(cudaMemset(ctr, 0, 4 * sizeof(long long)));
  CHECK_CUDA(cudaMemset(sig, 0, 2 * sizeof(uint64_t)));
  CHECK_CUDA(cudaMemset(word, 0, sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();

  shmem_int_put(data, host.data(), n, right);  // blocking put: complete at the target
  shmem_barrier_all();
  shmem_int_get(back.data(), data, n, me);
  for (size_t i = 0; i < n; i += 997) EXPECT(back[i] == int(left * 1000003 + i), "put: [%zu] = %d", i, back[i]);
  shmem_int_get(back.data(), data, n, right);
  for (size_t i = 0; i < n; i += 997) EXPECT(back[i] == int(me * 1000003 + i), "get from right: [%zu] = %d", i, back[i]);
  shmem_barrier_all();

  shmem_int_p(data + 5, 77 + me, right);
  shmem_putmem_nbi(data + 6, &me, sizeof(int), right);
  shmem_quiet();
  shmem_barrier_all();
  EXPECT(shmem_int_g(data + 5, me) == 77 + left, "p/g: %d", shmem_int_g(data + 5, me));
  EXPECT(shmem_int_g(data + 6, me) == left, "put_nbi: %d", shmem_int_g(data + 6, me));
  shmem_barrier_all();

  int strided[8];
  for (int i = 0; i < 8; ++i) strided[i] = 100 * me + i;
  shmem_int_iput(data + 100, strided, 3, 1, 8, right);  // every 3rd element
  shmem_barrier_all();
  int got[8];
  shmem_int_iget(got, data + 100, 1, 3, 8, me);
  for (int i = 0; i < 8; ++i) EXPECT(got[i] == 100 * left + i, "iput/iget: [%d] = %d", i, got[i]);
  shmem_barrier_all();

  // Atomics on PE 0's counters from every PE.
  shmem_longlong_atomic_add(ctr, 1, 0);
  (void)shmem_longlong_atomic_fetch_add(ctr + 1, 2, 0);
  (void)shmem_int64_atomic_fetch_or(reinterpret_cast<int64_t*>(ctr + 2), int64_t(1) << me, 0);
  shmem_barrier_all();
  EXPECT(shmem_longlong_atomic_fetch(ctr, 0) == npes, "atomic_add: %lld", shmem_longlong_atomic_fetch(ctr, 0));
  EXPECT(shmem_longlong_atomic_fetch(ctr + 1, 0) == 2ll * npes, "fetch_add: %lld", shmem_longlong_atomic_fetch(ctr + 1, 0));
  EXPECT(shmem_longlong_atomic_fetch(ctr + 2, 0) == (1ll << npes) - 1, "fetch_or: %lld",
         shmem_longlong_atomic_fetch(ctr + 2, 0));
  if (me == 0) {
    shmem_longlong_atomic_set(ctr + 3, 5, 0);
    EXPECT(shmem_longlong_atomic_swap(ctr + 3, 7, 0) == 5, "swap");
    EXPECT(shmem_longlong_atomic_compare_swap(ctr + 3, 7, 9, 0) == 7, "cswap hit");
    EXPECT(shmem_longlong_atomic_compare_swap(ctr + 3, 7, 11, 0) == 9, "cswap miss");
  }
  shmem_barrier_all();

  // Put with signal around the ring; the host waits on its own device signal word.
  shmem_int_put_signal(data + 200, host.data(), 64, sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_signal_wait_until(sig, SHMEM_CMP_GE, 1);
  EXPECT(shmem_signal_fetch(sig) == 1, "signal_fetch: %llu", (unsigned long long)shmem_signal_fetch(sig));
  shmem_int_get(got, data + 200, 8, me);
  for (int i = 0; i < 8; ++i) EXPECT(got[i] == int(left * 1000003 + i), "put_signal data: [%d] = %d", i, got[i]);
  shmem_signal_set(sig + 1, 42, right);
  shmem_uint64_wait_until(sig + 1, SHMEM_CMP_EQ, 42);
  shmem_int_atomic_set(word, 3, right);
  shmem_int_wait_until(word, SHMEM_CMP_EQ, 3);
  EXPECT(shmem_int_test(word, SHMEM_CMP_EQ, 3) == 1, "test");
  shmem_barrier_all();
  shmem_free(word);
  shmem_free(sig);
  shmem_free(ctr);
  shmem_free(data);
}

// ---------------------------------------------------------------- stream p2p

static void test_stream() {
  const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  const size_t n = 4 << 20;
  unsigned char* data = dev_alloc<unsigned char>(n);
  unsigned char* src = dev_alloc<unsigned char>(n);
  uint64_t* sig = dev_alloc<uint64_t>(1);
  std::vector<unsigned char> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = (unsigned char)(me * 7 + i);
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMemcpy(src, host.data(), n, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(sig, 0, sizeof(uint64_t)));
  CHECK_CUDA(cudaDeviceSynchronize());
  shmem_barrier_all();
  for (int round = 1; round <= 3; ++round) {
    shmemx_putmem_signal_on_stream(data, src, n, sig, 1, SHMEM_SIGNAL_ADD, right, s);
    shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, uint64_t(round), s);
    shmemx_quiet_on_stream(s);
    shmemx_barrier_all_on_stream(s);  // nobody overwrites data before its owner checked it
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<unsigned char> back(n);
  CHECK_CUDA(cudaMemcpy(back.data(), data, n, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i += 4093) EXPECT(back[i] == (unsigned char)(left * 7 + i), "ring [%zu] = %u", i, back[i]);
  // get from the right neighbour's src into local device memory, on the default stream.
  shmemx_getmem_on_stream(data, src, n, right, 0);
  CHECK_CUDA(cudaStreamSynchronize(0));
  CHECK_CUDA(cudaMemcpy(back.data(), data, n, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i += 4093) EXPECT(back[i] == (unsigned char)(right * 7 + i), "get [%zu] = %u", i, back[i]);
  shmemx_barrier_all_on_stream(s);
  shmemx_putmem_on_stream(data, src, 1000, right, s);
  shmemx_signal_op_on_stream(sig, 100, SHMEM_SIGNAL_SET, right, s);
  shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_EQ, 100, s);
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(back.data(), data, 1000, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < 1000; i += 37) EXPECT(back[i] == (unsigned char)(left * 7 + i), "put [%zu] = %u", i, back[i]);
  shmem_barrier_all();
  CHECK_CUDA(cudaStreamDestroy(s));
  shmem_free(sig);
  shmem_free(src);
  shmem_free(data);
}

// ---------------------------------------------------------------- stream collectives

// Values whose sums, products, minima and maxima over <= 8 PEs are exact in every type.
static int value(int pe, size_t i) { return int((pe * 5 + i * 3) % 7) - 3; }
static int pvalue(int pe, size_t i) { return int((pe + i) % 3) + 1; }

template <class T> static T from_int(int v) { return T(v); }
template <> __half from_int<__half>(int v) { return __float2half(float(v)); }
template <> __nv_bfloat16 from_int<__nv_bfloat16>(int v) { return __float2bfloat16(float(v)); }
template <class T> static double to_d(T v) { return double(v); }
template <> double to_d<__half>(__half v) { return double(__half2float(v)); }
template <> double to_d<__nv_bfloat16>(__nv_bfloat16 v) { return double(__bfloat162float(v)); }

enum Op { kSum, kMin, kMax, kProd };

struct Team {
  shmem_team_t h;
  int start, stride, size, me;
};

// Every PE allocates (device allocation is collective over the world); members run.
template <class T, class All, class Scatter>
static void check_reduce(const char* name, Op op, All all, Scatter scatter, const Team& t, cudaStream_t s) {
  for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(33000), size_t(1) << 20}) {
    const size_t total = n * size_t(t.size);  // reduce-scatter's source
    T* src = dev_alloc<T>(total);
    T* dst = dev_alloc<T>(total);
    std::vector<T> h(total), back(total);
    for (size_t i = 0; i < total; ++i) h[i] = from_int<T>(op == kProd ? pvalue(me, i) : value(me, i));
    CHECK_CUDA(cudaMemcpy(src, h.data(), total * sizeof(T), cudaMemcpyHostToDevice));
    if (t.me < 0) {
      shmem_free(dst);
      shmem_free(src);
      continue;
    }
    auto expect = [&](size_t i) {
      double r = op == kProd ? 1 : op == kSum ? 0 : (op == kMin ? 1e9 : -1e9);
      for (int m = 0; m < t.size; ++m) {
        const int pe = t.start + m * t.stride;
        const double v = op == kProd ? pvalue(pe, i) : value(pe, i);
        r = op == kSum ? r + v : op == kProd ? r * v : op == kMin ? std::min(r, v) : std::max(r, v);
      }
      return r;
    };
    EXPECT(all(t.h, dst, src, n, s) == 0, "%s reduce returned nonzero", name);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(back.data(), dst, n * sizeof(T), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i)
      if (to_d(back[i]) != expect(i)) {
        EXPECT(false, "%s all-reduce n=%zu [%zu] = %g, want %g", name, n, i, to_d(back[i]), expect(i));
        break;
      }
    EXPECT(scatter(t.h, dst, src, n, s) == 0, "%s reducescatter returned nonzero", name);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(back.data(), dst, n * sizeof(T), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i)
      if (to_d(back[i]) != expect(size_t(t.me) * n + i)) {
        EXPECT(false, "%s reduce-scatter n=%zu [%zu] = %g, want %g", name, n, i, to_d(back[i]),
               expect(size_t(t.me) * n + i));
        break;
      }
    shmemx_team_sync_on_stream(t.h, s);
    CHECK_CUDA(cudaStreamSynchronize(s));
    shmem_free(dst);
    shmem_free(src);
  }
}

static void check_bytes(const Team& t, cudaStream_t s) {
  for (size_t n : {size_t(1), size_t(13), size_t(4096), size_t(300000), size_t(4) << 20}) {
    const size_t total = n * size_t(t.size);
    unsigned char* src = dev_alloc<unsigned char>(total);
    unsigned char* dst = dev_alloc<unsigned char>(total);
    std::vector<unsigned char> h(total), back(total);
    auto byte = [](int pe, size_t i) { return (unsigned char)(pe * 29 + i * 7 + (i >> 8)); };
    for (size_t i = 0; i < total; ++i) h[i] = byte(me, i);
    CHECK_CUDA(cudaMemcpy(src, h.data(), total, cudaMemcpyHostToDevice));
    if (t.me < 0) {
      shmem_free(dst);
      shmem_free(src);
      continue;
    }
    const int root = t.size - 1, root_pe = t.start + root * t.stride;
    EXPECT(shmemx_broadcastmem_on_stream(t.h, dst, src, n, root, s) == 0, "broadcast");
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(back.data(), dst, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i)
      if (back[i] != byte(root_pe, i)) {
        EXPECT(false, "broadcast n=%zu [%zu] = %u want %u", n, i, back[i], byte(root_pe, i));
        break;
      }
    EXPECT(shmemx_fcollectmem_on_stream(t.h, dst, src, n, s) == 0, "fcollect");
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(back.data(), dst, total, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < total; ++i) {
      const int pe = t.start + int(i / n) * t.stride;
      if (back[i] != byte(pe, i % n)) {
        EXPECT(false, "fcollect n=%zu [%zu] = %u want %u", n, i, back[i], byte(pe, i % n));
        break;
      }
    }
    EXPECT(shmemx_alltoallmem_on_stream(t.h, dst, src, n, s) == 0, "alltoall");
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(back.data(), dst, total, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < total; ++i) {
      const int j = int(i / n), pe = t.start + j * t.stride;  // block j came from member j's block me
      const unsigned char want = byte(pe, size_t(t.me) * n + i % n);
      if (back[i] != want) {
        EXPECT(false, "alltoall n=%zu [%zu] = %u want %u", n, i, back[i], want);
        break;
      }
    }
    shmemx_team_sync_on_stream(t.h, s);
    CHECK_CUDA(cudaStreamSynchronize(s));
    shmem_free(dst);
    shmem_free(src);
  }
}

#define REDUCE(T, NAME, OP, ENUM)                                                                                 \
  check_reduce<T>(                                                                                                \
      #NAME "_" #OP, ENUM,                                                                                        \
      [](shmem_team_t h, T* d, const T* x, size_t n, shmemx_stream_t st) {                                        \
        return shmemx_##NAME##_##OP##_reduce_on_stream(h, d, x, n, st);                                           \
      },                                                                                                          \
      [](shmem_team_t h, T* d, const T* x, size_t n, shmemx_stream_t st) {                                        \
        return shmemx_##NAME##_##OP##_reducescatter_on_stream(h, d, x, n, st);                                    \
      },                                                                                                          \
      t, s)

static void test_coll() {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<Team> teams;
  teams.push_back({SHMEM_TEAM_WORLD, 0, 1, npes, me});
  if (npes >= 4) {  // the even PEs: a strided team next to the world's syncs
    shmem_team_t even;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, nullptr, 0, &even);
    teams.push_back({even, 0, 2, (npes + 1) / 2, me % 2 == 0 ? me / 2 : -1});
  }
  for (const Team& t : teams) {
    for (int i = 0; i < 3 && t.me >= 0; ++i) shmemx_barrier_on_stream(t.h, s);
    check_bytes(t, s);
    REDUCE(float, float, sum, kSum); REDUCE(float, float, min, kMin); REDUCE(float, float, max, kMax);
    REDUCE(__half, half, sum, kSum); REDUCE(__half, half, min, kMin); REDUCE(__half, half, max, kMax);
    REDUCE(__nv_bfloat16, bfloat16, sum, kSum); REDUCE(__nv_bfloat16, bfloat16, min, kMin);
    REDUCE(__nv_bfloat16, bfloat16, max, kMax);
    REDUCE(int32_t, int32, sum, kSum); REDUCE(int32_t, int32, min, kMin); REDUCE(int32_t, int32, max, kMax);
    REDUCE(int32_t, int32, prod, kProd);
    REDUCE(int64_t, int64, sum, kSum); REDUCE(int64_t, int64, min, kMin); REDUCE(int64_t, int64, max, kMax);
    REDUCE(int64_t, int64, prod, kProd);
    shmem_barrier_all();
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "host";
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("device_ops_test: skipped: no GPU here (cudaGetDeviceCount: %s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  if (npes < 2) {
    if (me == 0) printf("device_ops_test: skipped: needs 2 PEs or more\n");
    shmem_finalize();
    return 77;
  }
  (void)dev_alloc<char>(1);  // makes the device heap; then bind this thread to its GPU
  shmemx_device_heap_t q;
  if (shmemx_device_heap_query(&q) != 0) {
    fprintf(stderr, "PE %d: no device heap after a device allocation\n", me);
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(q.device));
  if (mode == "host") test_host();
  else if (mode == "stream") test_stream();
  else if (mode == "coll") test_coll();
  else {
    fprintf(stderr, "device_ops_test: unknown mode %s (host, stream, coll)\n", mode.c_str());
    return 2;
  }
  static int all;
  all = errors;
  shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &all, &all, 1);
  if (me == 0 && all == 0) printf("device_ops_test %s on %d PEs: ok\n", mode.c_str(), npes);
  shmem_finalize();
  return all == 0 ? 0 : 1;
}
