// The device heap in the runtime: collective device allocation and free, checked as the
// host heap's are (runtime.cpp), and the route of a device address in a host call.
//
// The device heap is created at the first device allocation, not at init, so a host-only
// job never loads the CUDA driver. That first call is one more collective round: every PE
// says whether it can use a GPU (driver, device, job on one node); only if all can do they
// create and exchange their heaps, and a second round agrees that all succeeded. Any "no"
// makes the call return NULL on every PE with the reason logged, and the answer is kept:
// later device allocations return NULL the same way (still checked for consistency).
#include <cinttypes>
#include <optional>

#include "common/log.hpp"
#include "device/device_heap.hpp"
#include "heap/symmetric_heap.hpp"
#include "symmem/coll_algos.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {

namespace {

// One round of the collective memory check for device calls: publish this PE's record of
// call `seq`, meet the others, compare. A PE that made another call ends the job (fail);
// returns whether every PE could, and the first that could not.
struct RoundResult {
  bool all_ok = true;
  int first_bad = -1;
};

}  // namespace

static RoundResult device_round(Runtime::Impl& r, const char* call, AllocOp op, uint64_t size, uint64_t align,
                                bool ok, uint64_t offset) {
  const uint64_t seq = ++r.alloc_seq_;
  AllocRecord& rec = r.meta(r.rank_)->alloc[seq & 1];
  rec.op = uint32_t(op);
  rec.size = size;
  rec.align = align;
  rec.ok = ok ? 1 : 0;
  rec.offset = offset;
  rec.need = 0;
  rec.seq.store(seq, std::memory_order_release);
  r.barrier_all();
  r.dfx_.coll_arrived();
  RoundResult out;
  out.all_ok = ok;
  if (!ok) out.first_bad = r.rank_;
  for (int pe = 0; pe < r.npes_; ++pe) {
    if (pe == r.rank_) continue;
    AllocRecord copy;
    const AllocRecord& p = r.peer_alloc_record(pe, seq, &copy);
    const uint64_t ps = p.seq.load(std::memory_order_acquire);
    if (ps != seq)
      r.fail(Errc::kMismatch, call, "collective memory call #%" PRIu64 " mismatch: this PE called %s(%" PRIu64
             ") but PE %d had not made that call (it is at call #%" PRIu64 "); every PE must allocate and free the "
             "same sizes in the same order", seq, call, size, pe, ps);
    if (p.op != rec.op || p.size != rec.size || p.align != rec.align || (p.ok && ok && p.offset != rec.offset))
      r.fail(Errc::kMismatch, call, "collective memory call #%" PRIu64 " mismatch: this PE called %s(%" PRIu64
             ") on device memory but PE %d called %s(%" PRIu64 "); every PE must allocate and free the same sizes "
             "in the same order", seq, call, size, pe, alloc_op_name_of(p.op), p.size);
    if (!p.ok) {
      out.all_ok = false;
      if (out.first_bad < 0 || pe < out.first_bad) out.first_bad = pe;
    }
  }
  return out;
}

void* Runtime::Impl::device_alloc(const char* call, size_t size, size_t align, const void* fill, size_t fill_bytes) {
  if (size == 0) return nullptr;
  dfx::CollArgs da;
  da.bytes = size;
  da.elem_size = uint32_t(align);
  dfx::CollScope dc(dfx_, dfx::Op::kAlloc, 0, 0, 1, npes_, rank_, da);
  if (align < Allocator::kDefaultAlign) align = Allocator::kDefaultAlign;
  // Slots start at multiples of the granularity (at least 2 MiB) from a granularity-aligned base.
  if (align > (2ull << 20))
    fail(Errc::kInvalidArgument, call, "alignment %zu of device memory: at most 2 MiB is supported", align);
  // The block is filled before the round that lets the PEs go on: a fill that fails counts as
  // this PE's allocation failing.
  auto initialise = [&](const device::DeviceHeap& h, uint64_t at, std::string* why) {
    if (!fill || !fill_bytes) return true;
    Status s = h.fill(h.my_heap() + at, size, fill, fill_bytes);
    if (!s.ok()) *why = s.message();
    return s.ok();
  };
  auto null_on_every_pe = [&](const std::string& reason) -> void* {
    dev_last_why_ = reason;
    log_pe(LogLevel::kWarn, rank_, "%s(%zu, SHMEMX_MALLOC_DEVICE) returns NULL on every PE: %s", call, size,
           reason.c_str());
    return nullptr;
  };

  const bool first = dev_state_ == DevState::kUnknown;
  bool ok = false;
  // The block's offset in this PE's slot, once placed (plain values: gcc's
  // -Wmaybe-uninitialized misreads a std::optional here).
  bool placed = false;
  uint64_t off = 0;
  auto place = [&](Allocator& a) {
    std::optional<uint64_t> o = a.alloc(size, align);
    placed = o.has_value();
    off = o.value_or(0);
  };
  std::string why;
  if (first) {
    Status s = all_shm_ ? device::DeviceHeap::usable()
                        : Status(Errc::kState, "the job spans nodes; device memory of other nodes is not supported yet");
    ok = s.ok();
    why = s.message();
  } else if (dev_state_ == DevState::kReady) {
    place(*dev_alloc_);
    ok = placed && initialise(*dev_heap_, off, &why);
    if (!placed)
      why = "device heap exhausted (" + format_size(dev_alloc_->bytes_in_use()) + " of " +
            format_size(dev_heap_size_) + " in use, largest free block " + format_size(dev_alloc_->largest_free()) +
            "); raise SYMMEM_DEVICE_HEAP_SIZE (or InitAttr::device_heap_size)";
  } else {
    why = dev_why_;
  }
  RoundResult rr = device_round(*this, call, AllocOp::kDevMalloc, size, align, ok, placed ? off : ~0ull);

  if (first && rr.all_ok) {
    // Every PE can: create the heaps, exchange, map, place and fill the block; then agree
    // that all succeeded.
    device::DeviceHeapParams hp;
    hp.rank = rank_;
    hp.npes = npes_;
    hp.node_pes = node_pes_.empty() ? std::vector<int>{rank_} : node_pes_;
    hp.tag = heap_object_name(job_id_, int(instance_id_), 0) + "-dev";
    hp.size = cfg_.device_heap_size;
    hp.device = int(cfg_.device);
    hp.timeout_s = cfg_.init_timeout;
    auto h = device::DeviceHeap::create(hp);
    bool made = h.ok();
    std::unique_ptr<device::DeviceOps> ops;  // the library's kernels, in the heap's context
    std::unique_ptr<Allocator> a;
    if (made) {
      // The record of an expired device wait goes to this PE's status page, where the hang
      // report finds it; without the mapping kernels keep it at their slot's start.
      dfx::GpuWaitArea& g = dfx_.page()->gpu;
      if (Status m = (*h)->map_wait_record(&g, sizeof g); !m.ok())
        log_pe(LogLevel::kWarn, rank_, "%s; an expired device wait is recorded in device memory only, where the hang "
               "report does not look", m.message().c_str());
    }
    if (!made) {
      why = h.status().message();
    } else if (auto o = device::DeviceOps::create(**h); !o.ok()) {
      made = false;
      why = "symmem's kernels cannot be loaded: " + o.status().message();
    } else {
      ops = std::move(*o);
      a = std::make_unique<Allocator>((*h)->size());
      (void)a->alloc(device::DeviceHeap::kReserved);  // the library's part of the slot: offset 0
      // Deterministic and of the same size everywhere: the same answer on every PE.
      place(*a);
      if (placed) made = initialise(**h, off, &why);
    }
    rr = device_round(*this, call, AllocOp::kDevMalloc, size, align, made, 0);
    if (rr.all_ok) {
      dev_heap_ = std::move(*h);
      dev_ops_ = std::move(ops);
      dev_heap_size_ = dev_heap_->size();
      dev_alloc_ = std::move(a);
      dev_my_heap_ = reinterpret_cast<uintptr_t>(dev_heap_->my_heap());
      dev_state_ = DevState::kReady;
      {  // For readers of the page in another process: where the record's addresses point.
        dfx::GpuWaitArea& g = dfx_.page()->gpu;
        g.heap_base = dev_heap_->base();
        g.heap_size = dev_heap_size_;
        g.sync_begin = algo::kDeviceSyncOffset;
        g.sync_end = algo::kDeviceSyncOffset + algo::SyncLayout::kBytes;
        g.device = dev_heap_->device();
        __atomic_store_n(&g.mapped, dev_heap_->wait_record() ? 1u : 0u, __ATOMIC_RELEASE);
      }
      log_pe(LogLevel::kInfo, rank_, "device heap: %s", dev_heap_->describe().c_str());
      if (!placed)
        return null_on_every_pe("device heap of " + format_size(dev_heap_size_) +
                                " is too small; raise SYMMEM_DEVICE_HEAP_SIZE (or InitAttr::device_heap_size)");
      dev_last_why_.clear();
      return dev_heap_->my_heap() + off;
    }
    // h and a (if made) are destroyed here: another PE could not create, map or fill its heap.
    placed = false;
    if (made) {
      // Only a heap failure is kept as the route's verdict; another PE's says why in its line.
      why.clear();
    }
  }
  if (first && !rr.all_ok) {
    dev_state_ = DevState::kFailed;
    dev_why_ = !why.empty() ? why
                            : "PE " + std::to_string(rr.first_bad) + " cannot use a GPU (its own line says why)";
  }
  if (!rr.all_ok) {
    if (placed) (void)dev_alloc_->free(off);  // placed here while another PE failed
    const std::string& reason = !why.empty() ? why : dev_why_;
    return null_on_every_pe(!reason.empty() ? reason
                                            : "PE " + std::to_string(rr.first_bad) +
                                                  " could not allocate (its own line says why)");
  }
  dev_last_why_.clear();
  return dev_heap_->my_heap() + off;
}

void Runtime::Impl::device_free(const char* call, void* ptr) {
  dfx::CollArgs da;
  da.dest = ptr;
  dfx::CollScope dc(dfx_, dfx::Op::kFree, 0, 0, 1, npes_, rank_, da);
  const uint64_t off = reinterpret_cast<uintptr_t>(ptr) - dev_my_heap_;
  const uint64_t size = off < device::DeviceHeap::kReserved ? 0 : dev_alloc_->block_size(off);
  if (size == 0) fail(Errc::kInvalidArgument, call, "pointer %p is not the start of a live device block", ptr);
  barrier_all();  // nobody still accesses the block
  (void)device_round(*this, call, AllocOp::kDevFree, 0, 0, true, off);
  (void)dev_alloc_->free(off);
}

}  // namespace symmem
