// Host-side operations on the device heap: copies through the driver and launches of the
// library's own kernels (kernels.cu, embedded as a fatbin and loaded at the first use), on
// a caller's CUDA stream or synchronously.
//
// `stream` is a CUstream / cudaStream_t passed as void* (the runtime does not include
// cuda.h; the default stream comes as CU_STREAM_LEGACY). nullptr means "now": the operation
// runs on this object's own stream and returns once it is complete. Every call makes the heap's GPU context current on the calling
// thread first (a thread that never touched CUDA may call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "common/status.hpp"
#include "device/kernel_args.hpp"

namespace symmem::device {

class DeviceHeap;

class DeviceOps {
 public:
  // Loads the kernels into the heap's context and makes the ops' stream.
  static Result<std::unique_ptr<DeviceOps>> create(const DeviceHeap& heap);
  ~DeviceOps();
  DeviceOps(const DeviceOps&) = delete;
  DeviceOps& operator=(const DeviceOps&) = delete;

  // n bytes between any two addresses the GPU can reach (device heap, host memory).
  Status copy(void* dst, const void* src, size_t n, void* stream);
  // One launch of kernel k with `a` (base, heap_size, me, npes, wait_record filled in here).
  Status launch(KernelId k, KernelArgs a, unsigned blocks, unsigned threads, void* stream);
  // A fetching atomic done now: the old value (4-byte words zero-extended).
  Result<uint64_t> amo(KernelArgs a);
  // Waits for everything queued on `stream` (nullptr: the ops' own stream).
  Status sync(void* stream);
  // The stream the synchronous calls use: queue several things on it, then sync(nullptr).
  void* own_stream() const { return stream_; }

 private:
  DeviceOps() = default;
  Status current();  // makes the heap's context current on this thread
  const DeviceHeap* heap_ = nullptr;
  void* module_ = nullptr;   // CUmodule
  void* stream_ = nullptr;   // CUstream: the synchronous calls'
  void* fn_[int(KernelId::kCount)] = {};  // CUfunction, looked up at create
  uint64_t* result_ = nullptr;  // device word for amo results (in the library's part of this PE's slot)
  std::mutex amo_mu_;           // one amo at a time owns result_ (threads may share the runtime)
};

}  // namespace symmem::device
