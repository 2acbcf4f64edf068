// Host calls on the device heap and the stream-ordered forms (shmemx_*_on_stream).
//
// A host call given a device address reaches here from translate's cold path
// (translate_device answers nullptr; each data-path call then takes its device_* form), so
// host memory's path gains one test of a pointer it already has. The work is done by the
// GPU: copies by the copy engine through the driver, signals, atomics and waits by the
// library's kernels (device/device_ops.hpp), on the caller's stream or, for a plain host
// call, on the runtime's own stream, waited for before the call returns — so a host put to
// device memory is complete at the target when it returns, and quiet has nothing to do.
#include <algorithm>

#include "device/kernel_args.hpp"
#include "runtime/dfx_gpu.hpp"
#include "runtime/p2p.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {

using device::KernelArgs;
using device::KernelId;

namespace {

// A driver call that fails after one of this PE's kernels trapped on an expired wait (the
// context is dead then) names that wait too, from the record on the status page.
void check(Runtime::Impl& r, const char* call, const Status& s) {
  if (SYMMEM_UNLIKELY(!s.ok())) {
    const std::string gpu = dfx::gpu_wait_text(r.dfx_.page()->gpu);
    r.fail(Errc::kIo, call, "on device memory: %s%s%s", s.message().c_str(), gpu.empty() ? "" : "; the cause: ",
           gpu.c_str());
  }
}

}  // namespace

char* Runtime::Impl::translate_device(const char* call, const void* addr, size_t n, int pe) {
  (void)device_peer(call, addr, n, pe);
  return nullptr;
}

void Runtime::Impl::host_collective_on_device(const char* call, const void* addr) {
  fail(Errc::kInvalidArgument, call, "buffer %p is in the device heap: host collectives take host memory; on device "
       "memory use the stream-ordered forms (shmemx_*_on_stream, docs/device.md)", addr);
}

char* Runtime::Impl::device_peer(const char* call, const void* addr, size_t n, int pe) {
  if (SYMMEM_UNLIKELY(static_cast<unsigned>(pe) >= static_cast<unsigned>(npes_))) bad_pe(call, pe);
  const uintptr_t off = reinterpret_cast<uintptr_t>(addr) - dev_my_heap_;
  if (!dev_ops_ || off >= dev_heap_size_ || n > dev_heap_size_ - off)
    fail(Errc::kInvalidArgument, call, "address %p (%zu bytes, target PE %d) is not in the device heap", addr, n, pe);
  if (routes_[pe] != Route::kShm)  // the heap is made only when every PE is on the node
    fail(Errc::kInvalidArgument, call, "PE %d is on another node: device memory of other nodes is not supported", pe);
  return const_cast<char*>(static_cast<const char*>(addr)) + (int64_t(pe) - rank_) * int64_t(dev_heap_size_);
}

void Runtime::Impl::device_put(const char* call, void* dest, const void* src, size_t n, int pe, void* stream) {
  if (n == 0) return;
  check(*this, call, dev_ops_->copy(device_peer(call, dest, n, pe), src, n, stream));
}

void Runtime::Impl::device_get(const char* call, void* dest, const void* src, size_t n, int pe, void* stream) {
  if (n == 0) return;
  check(*this, call, dev_ops_->copy(dest, device_peer(call, src, n, pe), n, stream));
}

void Runtime::Impl::device_put_strided(const char* call, void* dest, const void* src, size_t dst, size_t sst,
                                       size_t bsize, size_t nblocks, int pe) {
  if (!nblocks || !bsize) return;
  char* d = device_peer(call, dest, (nblocks - 1) * dst + bsize, pe);
  void* own = dev_ops_->own_stream();
  for (size_t b = 0; b < nblocks; ++b)
    check(*this, call, dev_ops_->copy(d + b * dst, static_cast<const char*>(src) + b * sst, bsize, own));
  check(*this, call, dev_ops_->sync(nullptr));
}

void Runtime::Impl::device_get_strided(const char* call, void* dest, const void* src, size_t dst, size_t sst,
                                       size_t bsize, size_t nblocks, int pe) {
  if (!nblocks || !bsize) return;
  const char* s = device_peer(call, src, (nblocks - 1) * sst + bsize, pe);
  void* own = dev_ops_->own_stream();
  for (size_t b = 0; b < nblocks; ++b)
    check(*this, call, dev_ops_->copy(static_cast<char*>(dest) + b * dst, s + b * sst, bsize, own));
  check(*this, call, dev_ops_->sync(nullptr));
}

void Runtime::Impl::device_signal(const char* call, uint64_t* sig, uint64_t value, int op, int pe, void* stream) {
  if (op != p2p::kSignalSet && op != p2p::kSignalAdd)
    fail(Errc::kInvalidArgument, call, "signal operation %d (SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD)", op);
  if (reinterpret_cast<uintptr_t>(sig) % 8) fail(Errc::kInvalidArgument, call, "signal word %p is not 8-byte aligned", sig);
  (void)device_peer(call, sig, 8, pe);
  KernelArgs a{};
  a.kind = op;
  a.pe = pe;
  a.dest = sig;
  a.value = value;
  check(*this, call, dev_ops_->launch(KernelId::signal, a, 1, 1, stream));
}

void Runtime::Impl::device_put_signal(const char* call, void* dest, const void* src, size_t n, uint64_t* sig,
                                      uint64_t value, int op, int pe, void* stream) {
  // Both on one stream: the signal's kernel starts once the copy is complete.
  void* st = stream ? stream : dev_ops_->own_stream();
  if (n) check(*this, call, dev_ops_->copy(device_peer(call, dest, n, pe), src, n, st));
  device_signal(call, sig, value, op, pe, st);
  if (!stream) check(*this, call, dev_ops_->sync(nullptr));
}

void Runtime::Impl::device_wait_on_stream(const char* call, uint64_t* sig, int cmp, uint64_t value, void* stream) {
  if (static_cast<unsigned>(cmp) > p2p::kCmpLe) fail(Errc::kInvalidArgument, call, "comparison %d (SHMEM_CMP_EQ..LE)", cmp);
  if (reinterpret_cast<uintptr_t>(sig) % 8) fail(Errc::kInvalidArgument, call, "signal word %p is not 8-byte aligned", sig);
  (void)device_peer(call, sig, 8, rank_);
  KernelArgs a{};
  a.kind = cmp;
  a.dest = sig;
  a.value = value;
  a.timeout_ns = uint64_t(cfg_.device_wait_timeout * 1e9);
  check(*this, call, dev_ops_->launch(KernelId::wait, a, 1, 1, stream));
}

uint64_t Runtime::Impl::device_amo(const char* call, int kind, void* dest, size_t width, uint64_t value, uint64_t cond,
                                   int pe) {
  if (reinterpret_cast<uintptr_t>(dest) % width)
    fail(Errc::kInvalidArgument, call, "atomic object %p is not %zu-byte aligned", dest, width);
  (void)device_peer(call, dest, width, pe);
  KernelArgs a{};
  a.kind = kind;
  a.pe = pe;
  a.dest = dest;
  a.n = width;
  a.value = value;
  a.cond = cond;
  auto v = dev_ops_->amo(a);
  check(*this, call, v.status());
  return *v;
}

void Runtime::Impl::device_coll(const char* call, int kind, int kernel, int start, int stride, int size, int me,
                                void* dest, const void* src, size_t n, size_t elem, int root, void* stream) {
  using device::CollKind;
  if (!dev_ops_) fail(Errc::kState, call, "no device heap: make one with shmem_malloc_with_hints(..., SHMEMX_MALLOC_DEVICE)");
  if (size > device::kMaxCollPes)
    fail(Errc::kInvalidArgument, call, "a team of %d PEs: collectives on device memory take at most %d", size,
         device::kMaxCollPes);
  // Bytes this PE's dest and src span (the algorithms' contracts, symmem/coll_algos.hpp).
  size_t dbytes = 0, sbytes = 0;
  switch (CollKind(kind)) {
    case CollKind::kBarrier: break;
    case CollKind::kBroadcast: dbytes = sbytes = n; break;
    case CollKind::kFcollect: dbytes = n * size_t(size), sbytes = n; break;
    case CollKind::kAlltoall: dbytes = sbytes = n * size_t(size); break;
    case CollKind::kReduceScatter: dbytes = n * elem, sbytes = n * elem * size_t(size); break;
    case CollKind::kAllreduce: dbytes = sbytes = n * elem; break;
  }
  if (dbytes) (void)device_peer(call, dest, dbytes, rank_);
  if (sbytes) (void)device_peer(call, src, sbytes, rank_);
  if (kind == int(CollKind::kBroadcast) && (root < 0 || root >= size))
    fail(Errc::kInvalidArgument, call, "root %d is not a member of the team (size %d)", root, size);
  KernelArgs a{};
  a.t_start = start;
  a.t_stride = stride;
  a.t_size = size;
  a.t_me = me;
  a.kind = kind;
  a.pe = root;
  a.dest = dest;
  a.src = src;
  a.n = n;
  a.timeout_ns = uint64_t(cfg_.device_wait_timeout * 1e9);
  const size_t bytes = std::max(dbytes, sbytes);
  // One block per kCollBytesPerBlock of data, at most kMaxChannels (each block syncs with
  // the same block of the peers: symmem/coll_algos.hpp).
  const unsigned blocks =
      unsigned(std::clamp<size_t>((bytes + device::kCollBytesPerBlock - 1) / device::kCollBytesPerBlock, 1,
                                  size_t(device::kCollMaxBlocks)));
  check(*this, call, dev_ops_->launch(KernelId(kernel), a, blocks, device::kCollThreads, stream));
}

}  // namespace symmem
