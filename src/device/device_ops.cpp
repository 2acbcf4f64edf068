// Host-side operations on the device heap (device_ops.hpp).
#include "device/device_ops.hpp"

#include "device/cuda_driver.hpp"
#include "device/device_heap.hpp"

#if SYMMEM_WITH_CUDA
// The fatbin of kernels.cu, linked in by src/device/CMakeLists.txt (ld -r -b binary).
extern "C" const unsigned char _binary_symmem_kernels_fatbin_start[];
#endif

namespace symmem::device {

#if SYMMEM_WITH_CUDA

namespace {

const char* const kKernelNames[] = {
#define SYMMEM_KERNEL_NAME(k) "symmem_k_" #k,
    SYMMEM_DEVICE_KERNELS(SYMMEM_KERNEL_NAME)
#undef SYMMEM_KERNEL_NAME
};

const Driver& drv() { return *load_driver(nullptr); }  // loaded: a heap exists

Status cu(const char* call, CUresult r) {
  return r == CUDA_SUCCESS ? Status::Ok() : Status(Errc::kIo, drv().error(call, r));
}

}  // namespace

Status DeviceOps::current() {
  CUcontext now = nullptr;
  (void)drv().cuCtxGetCurrent(&now);
  if (now == static_cast<CUcontext>(heap_->context())) return Status::Ok();
  return cu("cuCtxSetCurrent", drv().cuCtxSetCurrent(static_cast<CUcontext>(heap_->context())));
}

Result<std::unique_ptr<DeviceOps>> DeviceOps::create(const DeviceHeap& heap) {
  std::unique_ptr<DeviceOps> o(new DeviceOps());
  o->heap_ = &heap;
  const Driver& d = drv();
  if (Status s = o->current(); !s.ok()) return s;
  CUmodule m = nullptr;
  if (CUresult r = d.cuModuleLoadData(&m, _binary_symmem_kernels_fatbin_start); r != CUDA_SUCCESS)
    return Status(Errc::kIo, d.error("cuModuleLoadData", r) + " of symmem's kernels (built for sm_90 + compute_90 PTX)");
  o->module_ = m;
  for (int k = 0; k < int(KernelId::kCount); ++k) {
    CUfunction f = nullptr;
    if (CUresult r = d.cuModuleGetFunction(&f, m, kKernelNames[k]); r != CUDA_SUCCESS)
      return Status(Errc::kInternal, d.error("cuModuleGetFunction", r) + ": " + kKernelNames[k]);
    o->fn_[k] = f;
  }
  CUstream s = nullptr;
  if (CUresult r = d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) return cu("cuStreamCreate", r);
  o->stream_ = s;
  o->result_ = reinterpret_cast<uint64_t*>(heap.my_heap() + DeviceHeap::kOpsScratch);
  return o;
}

DeviceOps::~DeviceOps() {
  const Driver* d = load_driver(nullptr);
  if (!d || !heap_) return;
  (void)current();
  if (stream_) (void)d->cuStreamDestroy(static_cast<CUstream>(stream_));
  if (module_) (void)d->cuModuleUnload(static_cast<CUmodule>(module_));
}

Status DeviceOps::copy(void* dst, const void* src, size_t n, void* stream) {
  if (n == 0) return Status::Ok();
  if (Status s = current(); !s.ok()) return s;
  // Now: on the ops' stream, then wait, so that the copy is complete at the target (cuMemcpy
  // may return before a device-side copy lands) and ordered with the ops' kernels.
  CUstream st = static_cast<CUstream>(stream ? stream : stream_);
  if (Status s = cu("cuMemcpyAsync", drv().cuMemcpyAsync(CUdeviceptr(dst), CUdeviceptr(src), n, st)); !s.ok())
    return s;
  return stream ? Status::Ok() : sync(nullptr);
}

Status DeviceOps::launch(KernelId k, KernelArgs a, unsigned blocks, unsigned threads, void* stream) {
  if (Status s = current(); !s.ok()) return s;
  a.base = reinterpret_cast<char*>(heap_->base());
  a.heap_size = heap_->size();
  a.me = heap_->rank();
  a.npes = heap_->npes();
  a.wait_record = heap_->wait_record();
  void* params[] = {&a};
  CUstream st = static_cast<CUstream>(stream ? stream : stream_);
  if (Status s = cu(kKernelNames[int(k)], drv().cuLaunchKernel(static_cast<CUfunction>(fn_[int(k)]), blocks, 1, 1,
                                                               threads, 1, 1, 0, st, params, nullptr));
      !s.ok())
    return s;
  return stream ? Status::Ok() : sync(nullptr);
}

Result<uint64_t> DeviceOps::amo(KernelArgs a) {
  std::lock_guard<std::mutex> hold(amo_mu_);
  a.result = result_;
  if (Status s = launch(KernelId::amo, a, 1, 1, nullptr); !s.ok()) return s;
  uint64_t v = 0;
  if (Status s = copy(&v, result_, sizeof v, nullptr); !s.ok()) return s;
  return v;
}

Status DeviceOps::sync(void* stream) {
  if (Status s = current(); !s.ok()) return s;
  return cu("cuStreamSynchronize", drv().cuStreamSynchronize(static_cast<CUstream>(stream ? stream : stream_)));
}

#else  // built without the CUDA route: no heap is ever made, so nothing here is reached

Result<std::unique_ptr<DeviceOps>> DeviceOps::create(const DeviceHeap&) {
  return Status(Errc::kState, "this build of symmem has no CUDA route");
}
DeviceOps::~DeviceOps() = default;
Status DeviceOps::copy(void*, const void*, size_t, void*) { return Status(Errc::kState, "no CUDA route"); }
Status DeviceOps::launch(KernelId, KernelArgs, unsigned, unsigned, void*) { return Status(Errc::kState, "no CUDA route"); }
Result<uint64_t> DeviceOps::amo(KernelArgs) { return Status(Errc::kState, "no CUDA route"); }
Status DeviceOps::sync(void*) { return Status(Errc::kState, "no CUDA route"); }

#endif

}  // namespace symmem::device
