// The CUDA driver, loaded at run time: libcuda.so.1 by dlopen, every entry point through
// cuGetProcAddress at the version of the cuda.h this was built with. The library never
// links libcuda, so a build with the device route loads and runs on machines without a
// driver or a GPU; it says so once at info level and device allocations fail with the
// reason. Only the device layer includes this file (it needs cuda.h); the rest of the
// library asks device_heap.hpp.
#pragma once

#include <string>
#include <vector>

#include "common/status.hpp"

#if SYMMEM_WITH_CUDA
#include <cuda.h>

// Every driver call the library makes, one line each.
#define SYMMEM_CU_FUNCS(X)                                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain)               \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuMemGetInfo) X(cuMemGetAllocationGranularity)         \
  X(cuMemCreate) X(cuMemRelease) X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle)         \
  X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) X(cuMemsetD8)    \
  X(cuMemcpyHtoD) X(cuCtxSynchronize) X(cuCtxGetCurrent) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)           \
  X(cuLaunchKernel) X(cuMemcpyAsync) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)         \
  X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemHostGetDevicePointer)

namespace symmem::device {

struct Driver {
#define SYMMEM_CU_MEMBER(f) decltype(&::f) f = nullptr;
  SYMMEM_CU_FUNCS(SYMMEM_CU_MEMBER)
#undef SYMMEM_CU_MEMBER
  int version = 0;   // cuDriverGetVersion, e.g. 13000
  int devices = 0;   // visible to this process

  // "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
  std::string error(const char* call, CUresult r) const;
};

}  // namespace symmem::device
#endif

namespace symmem::device {

// The process's driver, loaded (and cuInit'ed) on first use, or why not: no CUDA route in
// this build, libcuda.so.1 missing, too old, cuInit failed, no device. The first failure
// is logged once at info level. Never called at init: a host-only job on a GPU machine
// never touches CUDA (and may fork freely).
#if SYMMEM_WITH_CUDA
const Driver* load_driver(Status* why);
#endif

// What symmem-info shows of the route.
struct RouteProbe {
  bool built = false;        // compiled with SYMMEM_CUDA
  bool driver = false;       // libcuda.so.1 loaded and cuInit succeeded
  std::string why;           // why not usable (empty when usable)
  int driver_version = 0;    // e.g. 13000
  std::vector<std::string> devices;  // "0: NVIDIA H100 80GB HBM3, 79.1 GiB"
  std::string mps;           // "nvidia-cuda-mps-control at /usr/bin/... (not queried)" or "not found on PATH"
  bool usable() const { return built && driver && !devices.empty(); }
};
RouteProbe probe_route();

}  // namespace symmem::device
