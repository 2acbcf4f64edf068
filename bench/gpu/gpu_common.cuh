// gpu_common.cuh — what the GPU benchmarks share (bench/gpu/README.md): error checks, the
// sizes, CUDA-event timing (median of repetitions), the patterns every result is checked
// against, and the CSV line `lib,op,size,value,unit` that bench/gpu/report.py reads.
//
// Plain CUDA runtime only, so the NVSHMEM anchor includes it as symmem's side does.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace gpubench {

#define GPUBENCH_CHECK(call)                                                                        \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)

inline constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
inline constexpr int kReps = 5;  // timed repetitions; the median is reported

// 1 KiB, 4 KiB, ..., max (powers of 4).
inline std::vector<size_t> sizes_to(size_t max_bytes) {
  std::vector<size_t> v;
  for (size_t s = kKiB; s <= max_bytes; s *= 4) v.push_back(s);
  return v;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

inline void csv(const char* lib, const char* op, size_t size, double value, const char* unit) {
  std::printf("%s,%s,%zu,%.6g,%s\n", lib, op, size, value, unit);
  std::fflush(stdout);
}
// A line report.py keeps as a note beside the tables.
inline void note(const char* lib, const std::string& text) {
  std::printf("# %s: %s\n", lib, text.c_str());
  std::fflush(stdout);
}

// Milliseconds between two events recorded on one stream around `body`.
template <class F>
float time_ms(cudaStream_t s, F&& body) {
  cudaEvent_t a, b;
  GPUBENCH_CHECK(cudaEventCreate(&a));
  GPUBENCH_CHECK(cudaEventCreate(&b));
  GPUBENCH_CHECK(cudaEventRecord(a, s));
  body();
  GPUBENCH_CHECK(cudaEventRecord(b, s));
  GPUBENCH_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  GPUBENCH_CHECK(cudaEventElapsedTime(&ms, a, b));
  GPUBENCH_CHECK(cudaEventDestroy(a));
  GPUBENCH_CHECK(cudaEventDestroy(b));
  return ms;
}

// ---- patterns: word i of a buffer made with `seed` ----
__host__ __device__ inline unsigned pattern_word(size_t i, unsigned seed) {
  return static_cast<unsigned>(i) * 2654435761u + seed;
}
static __global__ void fill_pattern(unsigned* p, size_t words, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern_word(i, seed);
}
static __global__ void count_pattern_errors(const unsigned* p, size_t words, unsigned seed,
                                            unsigned long long* errors) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    if (p[i] != pattern_word(i, seed)) atomicAdd(errors, 1ull);
}
// All-reduce input of PE `pe`: small integers, so every sum is exact in fp32.
__host__ __device__ inline float reduce_input(int pe, size_t i) { return float((pe + 1) * int(i % 7 + 1)); }
__host__ __device__ inline float reduce_sum(int npes, size_t i) {
  return float(npes * (npes + 1) / 2 * int(i % 7 + 1));
}
static __global__ void fill_reduce_input(float* p, size_t n, int pe) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = reduce_input(pe, i);
}
static __global__ void count_sum_errors(const float* p, size_t n, int npes, unsigned long long* errors) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if (p[i] != reduce_sum(npes, i)) atomicAdd(errors, 1ull);
}

// Runs a counting kernel `launch(errors)` and returns the count.
template <class F>
unsigned long long count_errors(cudaStream_t s, F&& launch) {
  unsigned long long* d = nullptr;
  unsigned long long h = 0;
  GPUBENCH_CHECK(cudaMalloc(&d, sizeof *d));
  GPUBENCH_CHECK(cudaMemsetAsync(d, 0, sizeof *d, s));
  launch(d);
  GPUBENCH_CHECK(cudaGetLastError());
  GPUBENCH_CHECK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
  GPUBENCH_CHECK(cudaStreamSynchronize(s));
  GPUBENCH_CHECK(cudaFree(d));
  return h;
}

// Blocks of 512 threads a put of `bytes` is spread over: one per 64 KiB, at most 2 per SM.
// The same rule for symmem and NVSHMEM.
inline int put_blocks(size_t bytes, int sms) {
  const size_t b = std::max<size_t>(1, bytes / (64 * kKiB));
  return int(std::min<size_t>(b, size_t(2 * sms)));
}
inline constexpr int kPutThreads = 512;

// Grid for an elementwise kernel over n items.
inline int grid_for(size_t n, int threads = 256) {
  return int(std::min<size_t>(std::max<size_t>(1, (n + threads - 1) / threads), 4096));
}

// "--name value" / "--flag" lookups.
inline const char* arg(int argc, char** argv, const char* name, const char* dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return dflt;
}
inline bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}
// Whether op is in the comma-separated list `ops` ("all" = every op).
inline bool wants(const std::string& ops, const char* op) {
  if (ops == "all") return true;
  const std::string o = "," + ops + ",";
  return o.find("," + std::string(op) + ",") != std::string::npos;
}

}  // namespace gpubench
