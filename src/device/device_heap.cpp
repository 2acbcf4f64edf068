// The device heap (device_heap.hpp): cuMem virtual memory with POSIX-fd handles.
#include "device/device_heap.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/config.hpp"
#include "common/log.hpp"
#include "device/cuda_driver.hpp"
#include "device/fd_exchange.hpp"

namespace symmem::device {

#if SYMMEM_WITH_CUDA

Status DeviceHeap::usable() {
  Status why;
  return load_driver(&why) ? Status::Ok() : why;
}

Result<std::unique_ptr<DeviceHeap>> DeviceHeap::create(const DeviceHeapParams& p) {
  Status why;
  const Driver* d = load_driver(&why);
  if (!d) return why;
  const std::string on = "PE " + std::to_string(p.rank) + ": ";
  auto cu_fail = [&](const char* call, CUresult r) { return Status(Errc::kIo, on + d->error(call, r)); };

  const auto me_it = std::find(p.node_pes.begin(), p.node_pes.end(), p.rank);
  if (me_it == p.node_pes.end()) return Status(Errc::kInternal, on + "not among the node's PEs");
  const int local = int(me_it - p.node_pes.begin());
  std::unique_ptr<DeviceHeap> h(new DeviceHeap());
  h->rank_ = p.rank;
  h->npes_ = p.npes;
  h->ordinal_ = p.device >= 0 ? p.device : local % d->devices;
  if (h->ordinal_ >= d->devices)
    return Status(Errc::kInvalidArgument, on + "GPU " + std::to_string(h->ordinal_) + " asked for (SYMMEM_DEVICE), but " +
                                              std::to_string(d->devices) + " are visible");
  CUdevice dev;
  if (CUresult r = d->cuDeviceGet(&dev, h->ordinal_); r != CUDA_SUCCESS) return cu_fail("cuDeviceGet", r);
  int vmm = 0, posix = 0;
  (void)d->cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  (void)d->cuDeviceGetAttribute(&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev);
  if (!vmm || !posix)
    return Status(Errc::kState, on + "GPU " + std::to_string(h->ordinal_) +
                                    " lacks cuMem virtual memory management with POSIX file-descriptor handles");
  CUcontext ctx = nullptr;
  if (CUresult r = d->cuDevicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS)
    return cu_fail("cuDevicePrimaryCtxRetain", r);
  h->ctx_retained_ = true;
  h->ctx_ = ctx;
  if (CUresult r = d->cuCtxSetCurrent(ctx); r != CUDA_SUCCESS) return cu_fail("cuCtxSetCurrent", r);

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = h->ordinal_;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  if (CUresult r = d->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
      r != CUDA_SUCCESS)
    return cu_fail("cuMemGetAllocationGranularity", r);
  if (gran == 0) gran = 2ull << 20;
  const uint64_t want = std::max<uint64_t>(p.size, DeviceHeap::kReserved + 1);
  h->size_ = (want + gran - 1) / gran * gran;

  CUmemGenericAllocationHandle own = 0;
  if (CUresult r = d->cuMemCreate(&own, h->size_, &prop, 0); r != CUDA_SUCCESS) {
    size_t fr = 0, tot = 0;
    (void)d->cuMemGetInfo(&fr, &tot);
    return Status(r == CUDA_ERROR_OUT_OF_MEMORY ? Errc::kNoMemory : Errc::kIo,
                  on + d->error("cuMemCreate", r) + " for a device heap of " + format_size(h->size_) + " on GPU " +
                      std::to_string(h->ordinal_) + " (" + format_size(fr) + " free of " + format_size(tot) +
                      "); lower SYMMEM_DEVICE_HEAP_SIZE");
  }
  h->own_handle_ = own;
  h->have_own_ = true;
  int fd = -1;
  if (CUresult r = d->cuMemExportToShareableHandle(&fd, own, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS)
    return cu_fail("cuMemExportToShareableHandle", r);

  // Every node PE's descriptor, with its H, GPU and pid.
  std::vector<FdExchange::Received> got;
  {
    auto x = FdExchange::open(p.tag, p.rank, p.node_pes, p.timeout_s);
    if (!x.ok()) {
      ::close(fd);
      return x.status();
    }
    FdExchange::Words w{h->size_, uint64_t(h->ordinal_), uint64_t(::getpid()), 0, 0, 0};
    Status s = (*x)->allgather(fd, w, &got);
    ::close(fd);
    if (!s.ok()) return s;
  }
  auto close_got = [&] {
    for (auto& g : got)
      if (g.fd >= 0) ::close(g.fd), g.fd = -1;
  };
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].words[0] != h->size_) {
      close_got();
      return Status(Errc::kMismatch, on + "device heap of " + format_size(h->size_) + " here but " +
                                         format_size(got[i].words[0]) + " on PE " + std::to_string(p.node_pes[i]) +
                                         " (SYMMEM_DEVICE_HEAP_SIZE, or GPUs of another granularity)");
    }

  CUdeviceptr base = 0;
  h->reserved_bytes_ = uint64_t(p.npes) * h->size_;
  if (CUresult r = d->cuMemAddressReserve(&base, h->reserved_bytes_, gran, 0, 0); r != CUDA_SUCCESS) {
    close_got();
    h->reserved_bytes_ = 0;
    return cu_fail("cuMemAddressReserve", r);
  }
  h->base_ = uintptr_t(base);
  CUmemAccessDesc acc{};
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = h->ordinal_;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (size_t i = 0; i < got.size(); ++i) {
    const int pe = p.node_pes[i];
    CUmemGenericAllocationHandle ph = own;
    if (pe != p.rank) {
      void* osh = reinterpret_cast<void*>(uintptr_t(got[i].fd));
      if (CUresult r = d->cuMemImportFromShareableHandle(&ph, osh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
          r != CUDA_SUCCESS) {
        close_got();
        return Status(Errc::kIo, on + d->error("cuMemImportFromShareableHandle", r) + " of PE " + std::to_string(pe) +
                                     "'s device heap (GPU " + std::to_string(got[i].words[1]) + ", pid " +
                                     std::to_string(got[i].words[2]) + ")");
      }
      ::close(got[i].fd);
      got[i].fd = -1;
    }
    CUresult r = d->cuMemMap(CUdeviceptr(h->heap(pe)), h->size_, 0, ph, 0);
    // The mapping holds the memory: an imported handle is released at once.
    if (pe != p.rank) (void)d->cuMemRelease(ph);
    if (r != CUDA_SUCCESS) {
      close_got();
      return Status(Errc::kIo, on + d->error("cuMemMap", r) + " of PE " + std::to_string(pe) + "'s device heap");
    }
    h->mapped_.push_back(pe);
    if (CUresult a = d->cuMemSetAccess(CUdeviceptr(h->heap(pe)), h->size_, &acc, 1); a != CUDA_SUCCESS) {
      close_got();
      return Status(Errc::kIo, on + d->error("cuMemSetAccess", a) + " on PE " + std::to_string(pe) +
                                   "'s device heap (GPU " + std::to_string(got[i].words[1]) + " from GPU " +
                                   std::to_string(h->ordinal_) + ": no peer access?)");
    }
  }
  // The library's part of this PE's slot (the device waits' records) starts zeroed.
  if (CUresult r = d->cuMemsetD8(CUdeviceptr(h->my_heap()), 0, DeviceHeap::kReserved); r != CUDA_SUCCESS)
    return cu_fail("cuMemsetD8", r);
  if (CUresult r = d->cuCtxSynchronize(); r != CUDA_SUCCESS) return cu_fail("cuCtxSynchronize", r);
  char name[128] = {0};
  (void)d->cuDeviceGetName(name, sizeof name - 1, dev);
  h->desc_ = "GPU " + std::to_string(h->ordinal_) + " (" + name + "), " + format_size(h->size_) + " per PE, " +
             std::to_string(h->mapped_.size()) + " PE(s) of this node mapped";
  log_pe(LogLevel::kDebug, p.rank, "device heap: %s at %p", h->desc_.c_str(), reinterpret_cast<void*>(h->base_));
  return h;
}

Status DeviceHeap::fill(char* dst, size_t n, const void* pattern, size_t k) const {
  const Driver* d = load_driver(nullptr);
  if (!d) return Status(Errc::kState, "the CUDA driver is not loaded");
  if (n == 0 || k == 0) return Status::Ok();
  const auto* pat = static_cast<const unsigned char*>(pattern);
  auto cu_fail = [&](const char* call, CUresult r) {
    return Status(Errc::kIo, "PE " + std::to_string(rank_) + ": " + d->error(call, r) + " initialising " +
                                 std::to_string(n) + " bytes of device memory");
  };
  if (CUresult r = d->cuCtxSetCurrent(static_cast<CUcontext>(ctx_)); r != CUDA_SUCCESS)
    return cu_fail("cuCtxSetCurrent", r);
  if (std::all_of(pat, pat + std::min(k, n), [&](unsigned char c) { return c == pat[0]; })) {
    if (CUresult r = d->cuMemsetD8(CUdeviceptr(dst), pat[0], n); r != CUDA_SUCCESS) return cu_fail("cuMemsetD8", r);
  } else {
    // A whole number of patterns per chunk, so that every chunk starts at a pattern's start.
    const size_t chunk = std::min(n, std::max(k, (size_t(4) << 20) / k * k));
    std::vector<unsigned char> buf(chunk);
    for (size_t i = 0; i < chunk; i += k) std::memcpy(buf.data() + i, pat, std::min(k, chunk - i));
    for (size_t done = 0; done < n; done += chunk)
      if (CUresult r = d->cuMemcpyHtoD(CUdeviceptr(dst + done), buf.data(), std::min(chunk, n - done));
          r != CUDA_SUCCESS)
        return cu_fail("cuMemcpyHtoD", r);
  }
  if (CUresult r = d->cuCtxSynchronize(); r != CUDA_SUCCESS) return cu_fail("cuCtxSynchronize", r);
  return Status::Ok();
}

Status DeviceHeap::map_wait_record(void* p, size_t n) {
  const Driver* d = load_driver(nullptr);
  if (!d) return Status(Errc::kState, "the CUDA driver is not loaded");
  auto cu_fail = [&](const char* call, CUresult r) {
    return Status(Errc::kIo, "PE " + std::to_string(rank_) + ": " + d->error(call, r) +
                                 " mapping the status page's record of expired device waits for GPU " +
                                 std::to_string(ordinal_));
  };
  if (CUresult r = d->cuCtxSetCurrent(static_cast<CUcontext>(ctx_)); r != CUDA_SUCCESS)
    return cu_fail("cuCtxSetCurrent", r);
  if (CUresult r = d->cuMemHostRegister(p, n, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
      r != CUDA_SUCCESS)
    return cu_fail("cuMemHostRegister", r);
  CUdeviceptr dev = 0;
  if (CUresult r = d->cuMemHostGetDevicePointer(&dev, p, 0); r != CUDA_SUCCESS) {
    (void)d->cuMemHostUnregister(p);
    return cu_fail("cuMemHostGetDevicePointer", r);
  }
  wait_record_host_ = p;
  wait_record_dev_ = reinterpret_cast<void*>(uintptr_t(dev));
  return Status::Ok();
}

DeviceHeap::~DeviceHeap() {
  const Driver* d = load_driver(nullptr);
  if (!d) return;
  // First: the host memory (the status page) outlives this heap and must not stay pinned.
  if (wait_record_host_) {
    (void)d->cuCtxSetCurrent(static_cast<CUcontext>(ctx_));
    (void)d->cuMemHostUnregister(wait_record_host_);
  }
  for (int pe : mapped_) (void)d->cuMemUnmap(CUdeviceptr(heap(pe)), size_);
  if (reserved_bytes_) (void)d->cuMemAddressFree(CUdeviceptr(base_), reserved_bytes_);
  if (have_own_) (void)d->cuMemRelease(CUmemGenericAllocationHandle(own_handle_));
  if (ctx_retained_) {
    CUdevice dev;
    if (d->cuDeviceGet(&dev, ordinal_) == CUDA_SUCCESS) (void)d->cuDevicePrimaryCtxRelease(dev);
  }
}

#else  // built without the CUDA route

namespace {
Status not_built() {
  return Status(Errc::kState, "no usable CUDA device: this build of symmem has no CUDA route (configure with "
                              "-DSYMMEM_CUDA=ON and the CUDA toolkit)");
}
}  // namespace

Status DeviceHeap::usable() { return not_built(); }
Result<std::unique_ptr<DeviceHeap>> DeviceHeap::create(const DeviceHeapParams&) { return not_built(); }
Status DeviceHeap::fill(char*, size_t, const void*, size_t) const { return not_built(); }
Status DeviceHeap::map_wait_record(void*, size_t) { return not_built(); }
DeviceHeap::~DeviceHeap() = default;

#endif

}  // namespace symmem::device
