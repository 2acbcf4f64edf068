// Loading the CUDA driver at run time (cuda_driver.hpp).
#include "device/cuda_driver.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

#include "common/config.hpp"
#include "common/log.hpp"

namespace symmem::device {

namespace {

std::string find_on_path(const char* exe) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty()) {
      std::string f = dir + "/" + exe;
      struct stat st;
      if (::stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) return f;
    }
    start = end + 1;
  }
  return {};
}

std::string mps_text() {
  std::string f = find_on_path("nvidia-cuda-mps-control");
  return f.empty() ? "nvidia-cuda-mps-control not found on PATH (several PEs on one GPU: host operations only)"
                   : "nvidia-cuda-mps-control at " + f + " (daemon not queried)";
}

}  // namespace

#if SYMMEM_WITH_CUDA

std::string Driver::error(const char* call, CUresult r) const {
  const char* s = nullptr;
  if (cuGetErrorString) cuGetErrorString(r, &s);
  return std::string(call) + ": CUDA error " + std::to_string(int(r)) + (s ? std::string(" (") + s + ")" : "");
}

namespace {

struct Loaded {
  Driver d;
  Status why;
  bool ok = false;
};

Loaded load() {
  Loaded l;
  auto fail = [&](std::string msg) {
    l.why = Status(Errc::kState, "no usable CUDA device: " + msg);
    return l;
  };
  // Not RTLD_GLOBAL: a program that uses CUDA itself loads its own reference to the same
  // library, and nothing of ours leaks into its symbol lookups.
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    return fail(std::string("the CUDA driver is not installed (dlopen libcuda.so.1: ") + (e ? e : "?") + ")");
  }
  using GetProc = decltype(&::cuGetProcAddress);
  auto get = reinterpret_cast<GetProc>(::dlsym(h, "cuGetProcAddress_v2"));
  if (!get) return fail("the CUDA driver is older than 12.0 (no cuGetProcAddress_v2 in libcuda.so.1)");
  bool missing = false;
  std::string which;
#define SYMMEM_CU_LOAD(f)                                                                            \
  {                                                                                                \
    CUdriverProcAddressQueryResult q{};                                                            \
    void* fp = nullptr;                                                                            \
    if (get(#f, &fp, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !fp) {      \
      missing = true;                                                                              \
      which += std::string(which.empty() ? "" : ", ") + #f;                                        \
    } else {                                                                                       \
      l.d.f = reinterpret_cast<decltype(l.d.f)>(fp);                                               \
    }                                                                                              \
  }
  SYMMEM_CU_FUNCS(SYMMEM_CU_LOAD)
#undef SYMMEM_CU_LOAD
  if (missing)
    return fail("the CUDA driver lacks entry points of CUDA " + std::to_string(CUDA_VERSION / 1000) + "." +
                std::to_string(CUDA_VERSION % 1000 / 10) + " (" + which + "): update the driver");
  if (CUresult r = l.d.cuInit(0); r != CUDA_SUCCESS) return fail(l.d.error("cuInit", r));
  (void)l.d.cuDriverGetVersion(&l.d.version);
  if (CUresult r = l.d.cuDeviceGetCount(&l.d.devices); r != CUDA_SUCCESS)
    return fail(l.d.error("cuDeviceGetCount", r));
  if (l.d.devices == 0) return fail("the CUDA driver sees no device (CUDA_VISIBLE_DEVICES?)");
  l.ok = true;
  return l;
}

Loaded& loaded() {
  static Loaded l = [] {
    Loaded x = load();
    if (!x.ok)
      log(LogLevel::kInfo, "CUDA device route: %s; device allocations will fail", x.why.message().c_str());
    return x;
  }();
  return l;
}

}  // namespace

const Driver* load_driver(Status* why) {
  Loaded& l = loaded();
  if (!l.ok) {
    if (why) *why = l.why;
    return nullptr;
  }
  return &l.d;
}

RouteProbe probe_route() {
  RouteProbe p;
  p.built = true;
  p.mps = mps_text();
  Status why;
  const Driver* d = load_driver(&why);
  if (!d) {
    p.why = why.message();
    return p;
  }
  p.driver = true;
  p.driver_version = d->version;
  for (int i = 0; i < d->devices; ++i) {
    CUdevice dev;
    char name[128] = {0};
    size_t total = 0;
    if (d->cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
    (void)d->cuDeviceGetName(name, sizeof name - 1, dev);
    (void)d->cuDeviceTotalMem(&total, dev);
    int vmm = 0, fd = 0;
    (void)d->cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    (void)d->cuDeviceGetAttribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev);
    p.devices.push_back(std::to_string(i) + ": " + name + ", " + format_size(total) +
                        (vmm && fd ? "" : " (no cuMem virtual memory with POSIX fd handles: not usable)"));
  }
  return p;
}

#else  // built without the CUDA route

RouteProbe probe_route() {
  RouteProbe p;
  p.why = "this build has no CUDA route (configured with SYMMEM_CUDA=OFF, or AUTO without nvcc)";
  p.mps = mps_text();
  return p;
}

#endif

}  // namespace symmem::device
