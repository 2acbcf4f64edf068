// gpu_limit.cu — the card's own limits, the references of bench/gpu/report.py (one process):
//   limit,d2d_copy,SIZE,GB/s       cudaMemcpyAsync device-to-device, 1 KiB .. 256 MiB: the
//                                  ceiling of a put between two PEs of one GPU
//   limit,allreduce_ref,SIZE,us    one kernel summing P buffers of SIZE bytes (fp32) into one:
//                                  the "one-process kernel that sums the same buffers"
//   limit,allreduce_ref_all,SIZE,us  the same writing P outputs, the work of a whole P-PE
//                                  one-shot all-reduce on the one GPU (for context only)
//
//   gpu_limit [--npes P] [--max-copy BYTES] [--max-reduce BYTES]
// Every copy and every sum is checked; a wrong result exits 1.
#include "gpu_common.cuh"

using namespace gpubench;

namespace {

// out[o][i] = sum over p of in[p][i], for o < outs (outs = 1 or P).
__global__ void sum_buffers(float* out, size_t outs, const float* in, int npes, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float s = 0;
    for (int p = 0; p < npes; ++p) s += in[size_t(p) * n + i];
    for (size_t o = 0; o < outs; ++o) out[o * n + i] = s;
  }
}

int copy_limit(cudaStream_t s, size_t max_bytes) {
  char *src = nullptr, *dst = nullptr;
  GPUBENCH_CHECK(cudaMalloc(&src, max_bytes));
  GPUBENCH_CHECK(cudaMalloc(&dst, max_bytes));
  fill_pattern<<<grid_for(max_bytes / 4), 256, 0, s>>>(reinterpret_cast<unsigned*>(src), max_bytes / 4, 7);
  int bad = 0;
  for (size_t n : sizes_to(max_bytes)) {
    const int iters = n >= 16 * kMiB ? 20 : 200;
    GPUBENCH_CHECK(cudaMemsetAsync(dst, 0, n, s));
    for (int w = 0; w < 5; ++w) GPUBENCH_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s));
    std::vector<double> gbps;
    for (int r = 0; r < kReps; ++r) {
      const float ms = time_ms(s, [&] {
        for (int i = 0; i < iters; ++i) GPUBENCH_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s));
      });
      gbps.push_back(double(n) * iters / (ms * 1e-3) / 1e9);
    }
    const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
      count_pattern_errors<<<grid_for(n / 4), 256, 0, s>>>(reinterpret_cast<unsigned*>(dst), n / 4, 7, d);
    });
    if (e != 0) {
      std::fprintf(stderr, "gpu_limit: d2d copy of %zu bytes: %llu wrong words\n", n, e);
      bad = 1;
      continue;
    }
    csv("limit", "d2d_copy", n, median(gbps), "GB/s");
  }
  GPUBENCH_CHECK(cudaFree(src));
  GPUBENCH_CHECK(cudaFree(dst));
  return bad;
}

int reduce_reference(cudaStream_t s, int npes, size_t max_bytes) {
  float *in = nullptr, *out = nullptr;
  GPUBENCH_CHECK(cudaMalloc(&in, size_t(npes) * max_bytes));
  GPUBENCH_CHECK(cudaMalloc(&out, size_t(npes) * max_bytes));
  int bad = 0;
  for (size_t bytes : sizes_to(max_bytes)) {
    const size_t n = bytes / sizeof(float);
    for (int p = 0; p < npes; ++p) fill_reduce_input<<<grid_for(n), 256, 0, s>>>(in + size_t(p) * n, n, p);
    for (size_t outs : {size_t(1), size_t(npes)}) {
      const int grid = grid_for(n), iters = 200;
      GPUBENCH_CHECK(cudaMemsetAsync(out, 0, outs * bytes, s));
      for (int w = 0; w < 5; ++w) sum_buffers<<<grid, 256, 0, s>>>(out, outs, in, npes, n);
      std::vector<double> us;
      for (int r = 0; r < kReps; ++r) {
        const float ms = time_ms(s, [&] {
          for (int i = 0; i < iters; ++i) sum_buffers<<<grid, 256, 0, s>>>(out, outs, in, npes, n);
        });
        us.push_back(ms * 1e3 / iters);
      }
      const unsigned long long e = count_errors(s, [&](unsigned long long* d) {
        for (size_t o = 0; o < outs; ++o) count_sum_errors<<<grid_for(n), 256, 0, s>>>(out + o * n, n, npes, d);
      });
      if (e != 0) {
        std::fprintf(stderr, "gpu_limit: reference sum of %d x %zu bytes: %llu wrong elements\n", npes, bytes, e);
        bad = 1;
        continue;
      }
      csv("limit", outs == 1 ? "allreduce_ref" : "allreduce_ref_all", bytes, median(us), "us");
    }
  }
  GPUBENCH_CHECK(cudaFree(in));
  GPUBENCH_CHECK(cudaFree(out));
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const int npes = std::atoi(arg(argc, argv, "--npes", "2"));
  const size_t max_copy = std::strtoull(arg(argc, argv, "--max-copy", "268435456"), nullptr, 0);
  const size_t max_reduce = std::strtoull(arg(argc, argv, "--max-reduce", "4194304"), nullptr, 0);
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    std::fprintf(stderr, "gpu_limit: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  GPUBENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  note("limit", std::string("device 0: ") + prop.name + ", " + std::to_string(prop.multiProcessorCount) + " SMs");
  cudaStream_t s;
  GPUBENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int bad = copy_limit(s, max_copy);
  bad |= reduce_reference(s, npes, max_reduce);
  GPUBENCH_CHECK(cudaStreamDestroy(s));
  return bad;
}
