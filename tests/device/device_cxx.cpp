// The C++ API's device allocation where no PE has a usable GPU (run with
// CUDA_VISIBLE_DEVICES= so that a GPU machine takes this path too):
//  - "null" (default): Runtime::alloc_device<T> throws Error(kNoMemory) on every PE with the
//    core's reason, align_device returns nullptr with device_error() saying why, twice, and
//    the job goes on (host allocation, a put, a barrier). The Runtime is made with
//    InitAttr::device_heap_size and ::device, which SHMEM_INFO's table shows as set by the
//    API, over SYMMEM_DEVICE_HEAP_SIZE / SYMMEM_DEVICE (the CTest sets both and checks).
//  - "mismatch": PE 0 asks for device memory, the others for host memory: every PE gets
//    Error(kMismatch) naming both calls, and prints it.
// Exit code: 0 when every check held on this PE.
#include <cstdio>
#include <cstring>
#include <string>

#include "symmem/symmem.hpp"

using symmem::Errc;
using symmem::Error;

int main(int argc, char** argv) {
  const std::string c = argc > 1 ? argv[1] : "null";
  symmem::InitAttr attr;
  attr.device_heap_size = 256ull << 20;
  attr.device = 1;
  symmem::Runtime rt(attr);
  const int me = rt.my_pe(), n = rt.n_pes();
  int bad = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::fprintf(stderr, "PE %d: %s\n", me, what.c_str());
      ++bad;
    }
  };

  if (c == "mismatch") {
    try {
      if (me == 0) (void)rt.alloc_device<float>(1024);
      else (void)rt.alloc<float>(1024);
      check(false, "no error from a device/host mismatch");
    } catch (const Error& e) {
      check(e.code() == Errc::kMismatch, std::string("want kMismatch, got: ") + e.what());
      std::printf("PE %d: %s\n", me, e.what());
    }
    return bad ? 1 : 0;
  }

  for (int i = 0; i < 2; ++i) {
    try {
      auto s = rt.alloc_device<double>(1000, 1.5);
      check(false, "alloc_device returned " + std::to_string(uintptr_t(s.data())) + ", want Error");
    } catch (const Error& e) {
      const std::string w = e.what();
      check(e.code() == Errc::kNoMemory, "want kNoMemory, got: " + w);
      check(w.find("device allocation of 8000 bytes failed on every PE: ") != std::string::npos &&
                w.find("no usable CUDA device") != std::string::npos,
            "the reason is missing: " + w);
      if (me == 0 && i == 0) std::printf("PE 0: Error: %s\n", e.what());
    }
    void* p = rt.align_device(256, 1 << 20);
    check(p == nullptr, "align_device returned non-null");
    check(rt.device_error().find("no usable CUDA device") != std::string::npos,
          "device_error() is '" + rt.device_error() + "'");
  }
  symmem::Runtime::DeviceHeapInfo h;
  check(!rt.device_heap(&h), "device_heap() found a device heap");

  // the job goes on: host memory, a put and a barrier
  auto x = rt.alloc<long>(size_t(n), 0);
  rt.p(&x[size_t(me)], long(me + 100), (me + 1) % n);
  rt.barrier_all();
  const int from = (me + n - 1) % n;
  check(x[size_t(from)] == from + 100, "x[" + std::to_string(from) + "] = " + std::to_string(x[size_t(from)]));
  rt.free(x);
  if (me == 0 && !bad) std::printf("device_cxx: Error with the reason on all %d PEs, the job went on\n", n);
  return bad ? 1 : 0;
}
