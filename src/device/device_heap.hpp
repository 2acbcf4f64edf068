// The device heap: a second symmetric heap per PE, in the memory of the GPU the PE is
// bound to, of the same shape as the host heap (heap/symmetric_heap.hpp).
//
// Each PE makes one physical allocation of H bytes (cuMemCreate, POSIX-fd shareable,
// H rounded up to the allocation granularity) and exports it as a descriptor; the PEs of
// the node exchange the descriptors (fd_exchange.hpp, SCM_RIGHTS) with H, the device
// ordinal and the pid; every process reserves one range of n_pes * H device addresses
// (cuMemAddressReserve) and maps PE p's memory at slot p (cuMemMap + cuMemSetAccess).
// So `remote = ptr + (pe - me) * H` holds in host code and in kernels, as on the host
// heap. The base may differ between processes (the driver takes an address only as a
// hint); the formula does not need it to agree. Slots of PEs on other nodes stay reserved
// and unmapped.
//
// The first kReserved bytes of each slot belong to the library, zeroed at creation: the
// device waits' fallback hang record at offset 0 (symmem/cuda.cuh: used only when
// map_wait_record was not done or failed) and the device collectives' sync area at
// algo::kDeviceSyncOffset (symmem/coll_algos.hpp); the runtime's allocator hands out the
// rest.
//
// Created collectively by the node's PEs, lazily at the first device allocation (never at
// init: a host-only job does not touch CUDA). Everything here fails with a Status naming
// the call, the PE and, for memory, the device's free/total memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace symmem::device {

struct DeviceHeapParams {
  int rank = 0;                 // this PE (world rank)
  int npes = 1;                 // world size: the reservation has npes slots
  std::vector<int> node_pes;    // world ranks of this node, ascending (this one included)
  std::string tag;              // unique per job and instance: names the exchange sockets
  uint64_t size = 0;            // H asked for (SYMMEM_DEVICE_HEAP_SIZE)
  int device = -1;              // ordinal; -1: this PE's index on the node modulo the visible devices
  double timeout_s = 60;        // of the descriptor exchange
};

class DeviceHeap {
 public:
  // The library's part at the start of each slot: one 2 MiB allocation granule, room for
  // the hang record and the collectives' sync area (128 KiB at 4 KiB) with space to grow.
  static constexpr uint64_t kReserved = 2 << 20;
  static constexpr uint64_t kOpsScratch = kReserved - 4096;  // DeviceOps' words, in the last page of it

  // Whether this process could create a device heap (the driver loads and sees a device),
  // or why not. Loads the driver on first call.
  static Status usable();
  // Collective over params.node_pes.
  static Result<std::unique_ptr<DeviceHeap>> create(const DeviceHeapParams& params);
  ~DeviceHeap();
  DeviceHeap(const DeviceHeap&) = delete;
  DeviceHeap& operator=(const DeviceHeap&) = delete;

  uintptr_t base() const { return base_; }          // slot 0 (PE 0)
  uint64_t size() const { return size_; }           // H, granularity-rounded
  char* heap(int pe) const { return reinterpret_cast<char*>(base_ + uint64_t(pe) * size_); }
  char* my_heap() const { return heap(rank_); }
  int device() const { return ordinal_; }
  int rank() const { return rank_; }
  int npes() const { return npes_; }
  void* context() const { return ctx_; }  // the GPU's primary context (a CUcontext), retained
  // Writes `pattern` (k bytes) repeated over the n bytes at dst, in this PE's slot, from the
  // calling thread (the primary context made current), and returns when they are written:
  // cuMemsetD8 for one repeated byte, else cuMemcpyHtoD from a host staging buffer.
  Status fill(char* dst, size_t n, const void* pattern, size_t k) const;
  // Maps n bytes of host memory at p (the PE's status page area for expired device waits)
  // for this GPU (cuMemHostRegister, DEVICEMAP | PORTABLE) and keeps its device address as
  // wait_record(); unmapped by the destructor, before anything else goes.
  Status map_wait_record(void* p, size_t n);
  void* wait_record() const { return wait_record_dev_; }  // device address; null until mapped
  // e.g. "GPU 0 (NVIDIA H100 80GB HBM3), 1G per PE, 4 PEs of this node mapped"
  const std::string& describe() const { return desc_; }

 private:
  DeviceHeap() = default;
  struct Impl;
  int rank_ = 0, npes_ = 1, ordinal_ = -1;
  uintptr_t base_ = 0;
  uint64_t size_ = 0, reserved_bytes_ = 0;
  unsigned long long own_handle_ = 0;
  bool have_own_ = false, ctx_retained_ = false;
  void* ctx_ = nullptr;  // the retained primary context (CUcontext)
  void* wait_record_host_ = nullptr;  // registered with the driver (map_wait_record)
  void* wait_record_dev_ = nullptr;
  std::vector<int> mapped_;  // PEs whose slot is mapped
  std::string desc_;
};

}  // namespace symmem::device
