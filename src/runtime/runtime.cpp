// Runtime init/finalize, synchronisation, collective allocation and error reporting.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store.hpp"
#include "common/log.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {
namespace {

const char* alloc_op_name(uint32_t op) {
  switch (static_cast<AllocOp>(op)) {
    case AllocOp::kMalloc: return "shmem_malloc";
    case AllocOp::kCalloc: return "shmem_calloc";
    case AllocOp::kAlign: return "shmem_align";
    case AllocOp::kRealloc: return "shmem_realloc";
    case AllocOp::kFree: return "shmem_free";
    case AllocOp::kDevMalloc: return "shmem_malloc_with_hints(SHMEMX_MALLOC_DEVICE)";
    case AllocOp::kDevFree: return "shmem_free of device memory";
  }
  return "?";
}

}  // namespace

const char* alloc_op_name_of(uint32_t op) { return alloc_op_name(op); }

// The constructors (the init sequence) are in init.cpp.

Runtime::Impl::~Impl() {
  if (!finalized_ && heap_) {
    dfx_.finalize();
    barrier_all();
    dfx_.finalized();
    finalized_ = true;
  }
  hang_watch_.reset();  // after the last barrier, where a hang still shows
  // After the last barrier: no peer uses this PE's device memory any more.
  dev_alloc_.reset();
  dev_ops_.reset();
  dev_heap_.reset();
  if (report_commits_ && heap_ && store_) {
    const uint64_t held = heap_->committed() + heap_->meta_size() + (static_ ? static_->size() : 0);
    (void)store_->add(kCommittedKey, -int64_t(held));
  }
  if (ucx_ && epoch_store_) {
    // Collective: flush, close the endpoints, stop the progress thread.
    Status s = ucx_->close(*epoch_store_);
    if (!s.ok()) log_pe(LogLevel::kWarn, rank_, "finalize: closing UCX: %s", s.message().c_str());
  }
  ucx_.reset();
  if (live_) {
    live_->leave();
    live_.reset();
  }
  if (hosted_store_ && init_done_) {
    // The other PEs leave the job through this store once they are out of the last
    // barrier: keep it up until they have gone (or a few seconds).
    epoch_store_.reset();
    store_.reset();
    Deadline d = deadline_after(3.0);
    while (hosted_store_->connections() > 0 && Clock::now() < d)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// PE r takes the (r mod m)-th of the m CPUs this process may use, round-robin (as
// `mpirun --bind-to core` does). Unbound, a loaded machine often runs two PEs on one CPU
// while the other idles, and every wait between them then costs a context switch; with
// more PEs than CPUs, pinning keeps each CPU's share of PEs fixed. A process started with a
// narrower mask (taskset) binds within it; SYMMEM_BIND=0 leaves affinity alone.
int Runtime::Impl::bind_to_cpu() {
  cpu_set_t allowed;
  if (npes_ < 2 || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  // The i-th PE of this node on the (i mod m)-th allowed CPU (as mpirun --bind-to core
  // counts node-local ranks): PEs placed on nodes round-robin still fill each node's CPUs.
  int local = rank_;  // where the nodes are not known
  if (node_index_.size() == size_t(npes_)) {
    local = 0;
    for (int pe = 0; pe < rank_; ++pe) local += node_index_[size_t(pe)] == node_index_[size_t(rank_)];
  }
  const int want = local % CPU_COUNT(&allowed);
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || seen++ != want) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return -1;
    log_pe(LogLevel::kDebug, rank_, "bound to CPU %d", cpu);
    return cpu;
  }
  return -1;
}

void* Runtime::Impl::ptr(const void* addr, int pe) const {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(npes_) || routes_[pe] != Route::kShm) return nullptr;
  if (in_device_heap(addr))  // a device address of a node peer (usable by the GPU, not the CPU)
    return const_cast<char*>(static_cast<const char*>(addr)) + (int64_t(pe) - rank_) * int64_t(dev_heap_size_);
  if (!in_heap(addr)) {
    if (!in_static(addr)) return nullptr;
    if (pe == rank_) return const_cast<void*>(addr);
    return reinterpret_cast<char*>(static_copies_ + uint64_t(pe) * static_size_ +
                                   (reinterpret_cast<uintptr_t>(addr) - static_start_));
  }
  return const_cast<char*>(static_cast<const char*>(addr)) + (int64_t(pe) - rank_) * int64_t(heap_size_);
}

// ---------------------------------------------------------------- synchronisation

void Runtime::Impl::wait_ge_long(std::atomic<uint32_t>* word, std::atomic<uint32_t>* sleepers, uint32_t target,
                                 int owner) {
  auto reached = [&] { return int32_t(word->load(std::memory_order_acquire) - target) >= 0; };
  wait_adaptive(
      reached,
      [&](Backoff& b) {
        // Announce the sleep before the last look, so a writer that stores after that look
        // sees the announcement and wakes us (both sides: seq_cst store, then load).
        sleepers->fetch_add(1, std::memory_order_seq_cst);
        if (light_fences_) heavy_fence();  // the writer's arrival has no fence (notify_half)
        const uint32_t v = word->load(std::memory_order_seq_cst);
        if (int32_t(v - target) < 0) b.pause_on(word, v);
        sleepers->fetch_sub(1, std::memory_order_relaxed);
      },
      [word, target, owner](dfx::WaitDesc& d) {  // a sync word in owner's metadata (by value: keeps target in a register)
        d.op = dfx::Op::kSync;
        d.owner = owner;
        d.width = 4;
        d.addr = word;
        d.expect = target;
      });
}

void Runtime::Impl::notify(WaitWord* word, uint32_t value) {
  word->v.store(value, std::memory_order_seq_cst);
  if (word->sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_shared(&word->v);
}

uint32_t Runtime::Impl::add_word(WaitWord* word, uint32_t delta) {
  uint32_t now = word->v.fetch_add(delta, std::memory_order_seq_cst) + delta;
  if (word->sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_shared(&word->v);
  return now;
}

// Two algorithms, chosen at init. When every PE has a core: log2 n rounds of pairs when n is
// a power of two (round r: member m and m ^ 2^r store into the halves of one line, in the
// lower one's metadata, and wait on each other's half: the line one PE fetches to store its
// arrival carries the other's, so a round costs about one line transfer), otherwise a
// dissemination barrier (ceil(log2 n) rounds, each a store into one peer's flag and a wait
// on one's own: one line each way, the two transfers one after the other). When PEs outnumber cores, every wait costs
// a context switch, so a central counter wins: each PE adds to the root's arrival word and
// waits once on its release word (wait_release); the last to arrive releases everyone
// with one wake.
void Runtime::Impl::strided_sync(int start, int stride, int size, uint64_t off, uint32_t* epoch, bool data_follows) {
  // shmem_sync: this PE's earlier stores are visible to the others once they leave the
  // sync, non-temporal ones included (the notify below is a locked instruction, which
  // orders only ordinary stores for certain).
  if (SYMMEM_UNLIKELY(!all_shm_) && !group_on_node(start, stride, size)) return net_sync(start, stride, size, off, epoch, data_follows);
  shm::fence();
  if (size <= 1) return;
  uint32_t e = ++*epoch;
  int me = stride == 1 ? rank_ - start : (rank_ - start) / stride;
  auto state = [&](int pe) { return reinterpret_cast<SyncState*>(meta_bytes(pe) + off); };
  if (central_sync_) {
    // Arrivals are monotonic, so there is no reset race: sync number e is complete when
    // the root's counter reaches e*size (mod 2^32).
    SyncState* root = state(start);
    state(rank_)->arrived.store(e, std::memory_order_relaxed);
    if (add_word(&root->arrive, 1) == e * uint32_t(size)) notify(&root->release, e);
    else wait_release(root, e, start, stride, size, off);
    return;
  }
  if ((size & (size - 1)) == 0 && size <= (1 << kPairRounds)) {
    for (int round = 0, dist = 1; dist < size; ++round, dist <<= 1) {
      const int other = me ^ dist, side = me > other;
      const int low = start + (side ? other : me) * stride;
      PairWord& w = state(low)->pair[round];
      notify_half(&w.half[side], e);
      wait_ge(&w.half[1 - side].v, &w.half[1 - side].sleepers, e, low);
    }
    return;
  }
  for (int round = 0, dist = 1; dist < size; ++round, dist <<= 1) {
    int to = start + ((me + dist) % size) * stride;
    notify(&state(to)->round[round], e);
    wait_word_ge(&state(rank_)->round[round], e);
  }
}

// PEs outnumber cores, and each PE is pinned to one CPU. A barrier needs at least one
// context switch per CPU: every PE of the CPU must run to arrive. A waiter whose CPU still has
// a member that has not arrived hands the CPU over at once (sched_yield: no spinning, no
// futex round trip through another CPU); the last of its CPU to arrive keeps the CPU and
// polls, since nobody on that CPU needs it until the release; it is then the first to
// run on, into the next sync, where it hands over again: one switch per CPU per barrier.
// Bounded (Impl::wait_handing_over): then the ordinary wait (spin, yield, sleep), e.g.
// when a co-located PE sleeps elsewhere and will not arrive soon.
void Runtime::Impl::wait_release(SyncState* root, uint32_t e, int start, int stride, int size, uint64_t off) {
  auto released = [&] { return int32_t(root->release.v.load(std::memory_order_acquire) - e) >= 0; };
  auto pending_here = [&] { return colocated_pending(e, start, stride, size, off); };
  if (!wait_handing_over(released, pending_here)) wait_word_ge(&root->release, e);
}

// A member of the group that shares this PE's CPU has not arrived at sync e yet.
bool Runtime::Impl::colocated_pending(uint32_t e, int start, int stride, int size, uint64_t off) {
  for (int q : colocated_) {
    if (q < start || (q - start) % stride != 0 || (q - start) / stride >= size) continue;  // not a member
    auto* s = reinterpret_cast<SyncState*>(meta_bytes(q) + off);
    if (int32_t(s->arrived.load(std::memory_order_relaxed) - e) < 0) return true;
  }
  return false;
}

void Runtime::Impl::learn_colocation() {
  const int32_t mine = meta(rank_)->cpu_plus_1;
  if (mine == 0) return;
  for (int pe = 0; pe < npes_; ++pe)
    if (pe != rank_ && routes_[pe] == Route::kShm && meta(pe)->cpu_plus_1 == mine) colocated_.push_back(pe);
  if (!colocated_.empty())
    log_pe(LogLevel::kDebug, rank_, "CPU %d is shared with %zu other PE(s): central syncs hand it over", mine - 1,
           colocated_.size());
}

void Runtime::Impl::sync_all() {
  if (dfx::colls_kept(dfx_)) return sync_all_scoped();
  sync_all_bare();
}

void Runtime::Impl::sync_all_scoped() {
  dfx::CollScope c(dfx_, dfx::Op::kBarrier, 0, 0, 1, npes_, rank_);
  strided_sync(0, 1, npes_, offsetof(MetaFixed, world_sync), &world_epoch_);
}

void Runtime::Impl::sync_all_bare() { strided_sync(0, 1, npes_, offsetof(MetaFixed, world_sync), &world_epoch_); }

// ---------------------------------------------------------------- collective allocation

// PE pe's record of call `seq`: read in place on the node, fetched into *copy off it.
const AllocRecord& Runtime::Impl::peer_alloc_record(int pe, uint64_t seq, AllocRecord* copy) {
  AllocRecord* r = &meta(pe)->alloc[seq & 1];
  if (!off_node(pe)) return *r;
  rget(copy, r, sizeof(AllocRecord), pe);
  return *copy;
}

// Every PE records what it asked for and allocates locally (deterministic, so offsets
// agree). When the call grows the committed part of the heap, each PE first checks that
// its node can back the growth for all of the node's PEs at once (CommitPolicy: cgroup,
// MemAvailable, /dev/shm). Then it meets the others in a barrier and reads their records:
// a PE that asked for something else, or could not allocate, is found here. If every PE
// can, all commit (fallocate), publish the outcome and meet again; a commit that failed
// anyway (the node changed since the check) makes every PE give its new pages back.
// A mismatch ends the job with a report naming the call and the PEs; a failure on any PE
// makes the call return NULL on every PE, with the heap and the allocator as before.
// The new block is initialised (calloc's zeros, an init) before the barrier that lets the
// PEs go on, so a peer's put right after its own call returns is never overwritten.
void* Runtime::Impl::collective_alloc(const char* call, AllocOp op, size_t size, size_t align, void* old,
                                      const AllocInit* init) {
  // The standard: a zero-sized malloc / calloc / align does nothing (not even the barrier).
  if (size == 0 && op != AllocOp::kRealloc) return nullptr;
  dfx::CollArgs da;
  da.bytes = size;
  da.elem_size = uint32_t(align);
  da.src = old;
  dfx::CollScope dc(dfx_, dfx::Op::kAlloc, 0, 0, 1, npes_, rank_, da);
  // Heaps start at G + p*H: a block is aligned to `align` on every PE only if G and H are.
  if (align > heap_->max_alignment()) {
    std::string fix = align > SymmetricHeap::kBaseAlign
                          ? "alignments above 1 GiB are not supported (the heap base is chosen 1 GiB aligned)"
                          : "set SHMEM_SYMMETRIC_SIZE to a multiple of " + std::to_string(align);
    fail(Errc::kInvalidArgument, call, "alignment %zu is more than the symmetric heap can give on every PE (at most "
         "%" PRIu64 ", the largest power of two dividing both the heap size %s and 1 GiB); %s", align,
         heap_->max_alignment(), format_size(heap_size_).c_str(), fix.c_str());
  }
  if (op == AllocOp::kRealloc && old && !in_heap(old))
    fail(Errc::kInvalidArgument, call, "pointer %p is not a symmetric address", old);
  uint64_t old_off = old ? reinterpret_cast<uintptr_t>(old) - my_heap_ : 0;
  uint64_t old_size = old ? alloc_->block_size(old_off) : 0;
  if (old && old_size == 0)
    fail(Errc::kInvalidArgument, call, "pointer %p is not the start of a live symmetric block", old);
  if (op == AllocOp::kRealloc) barrier_all();  // nobody still writes into the old block

  uint64_t seq = ++alloc_seq_;
  AllocRecord& rec = meta(rank_)->alloc[seq & 1];
  std::optional<uint64_t> off;
  bool ok = true;
  uint64_t need = 0;
  if (size > 0) {
    if (op == AllocOp::kRealloc && size <= old_size) {
      auto r = alloc_->realloc(old_off, size);  // shrinking never moves
      off = r ? std::optional<uint64_t>(r->offset) : std::nullopt;
    } else {
      off = alloc_->alloc(size, align < Allocator::kDefaultAlign ? Allocator::kDefaultAlign : align);
    }
    if (!off) {
      ok = false;
      log_pe(LogLevel::kWarn, rank_, "%s(%zu): symmetric heap exhausted (%s of %s in use, largest free block %s); "
             "raise SHMEM_SYMMETRIC_SIZE", call, size, format_size(alloc_->bytes_in_use()).c_str(),
             format_size(heap_size_).c_str(), format_size(alloc_->largest_free()).c_str());
    } else if ((need = heap_->commit_need(alloc_->extent())) > 0) {
      Status s = commit_policy_.check(need);
      if (!s.ok()) {
        ok = false;
        log_pe(LogLevel::kWarn, rank_, "%s(%zu) returns NULL on every PE: %s", call, size, s.message().c_str());
      }
    }
  }
  // An init that throws fails the call on every PE; the exception goes on from this one.
  std::exception_ptr init_error;
  auto initialise = [&]() -> bool {
    char* p = heap_->my_heap() + *off;
    if (op == AllocOp::kCalloc) {
      std::memset(p, 0, size);
    } else if (init && *init) {
      try {
        (*init)(p, size);
      } catch (...) {
        init_error = std::current_exception();
        return false;
      }
    }
    return true;
  };
  // Pages still to be committed are initialised after the commit, before its barrier.
  if (ok && off && need == 0 && op != AllocOp::kRealloc) ok = initialise();
  rec.op = uint32_t(op);
  rec.size = size;
  rec.align = align;
  rec.ok = ok ? 1 : 0;
  rec.offset = off.value_or(~0ull);
  rec.need = ok ? need : 0;
  rec.seq.store(seq, std::memory_order_release);

  barrier_all();
  dfx_.coll_arrived();  // SYMMEM_CHECK compares the PEs' calls here (one report, its own)

  bool all_ok = ok, any_need = rec.need > 0;
  for (int pe = 0; pe < npes_; ++pe) {
    if (pe == rank_) continue;
    AllocRecord copy;
    const AllocRecord& r = peer_alloc_record(pe, seq, &copy);
    uint64_t rs = r.seq.load(std::memory_order_acquire);
    if (rs != seq || r.op != rec.op || r.size != rec.size || r.align != rec.align ||
        (r.ok && ok && r.offset != rec.offset)) {
      if (rs != seq)
        fail(Errc::kMismatch, call, "collective memory call #%" PRIu64 " mismatch: this PE called %s(%zu) but PE %d "
             "had not made that call (it is at call #%" PRIu64 "); every PE must allocate and free the same sizes "
             "in the same order", seq, call, size, pe, rs);
      fail(Errc::kMismatch, call, "collective memory call #%" PRIu64 " mismatch: this PE called %s(%zu, align %zu) "
           "but PE %d called %s(%" PRIu64 ", align %" PRIu64 "); every PE must allocate and free the same sizes in "
           "the same order", seq, call, size, align, pe, alloc_op_name(r.op), r.size, r.align);
    }
    if (!r.ok) all_ok = false;
    if (r.need) any_need = true;
  }
  // Every PE read the same records, so every PE takes this branch or none does.
  bool committed_ok = true;
  if (all_ok && any_need) {
    const uint64_t before = heap_->committed();
    Status s = heap_->commit(alloc_->extent());
    committed_ok = s.ok();
    if (!committed_ok)
      log_pe(LogLevel::kWarn, rank_, "%s(%zu) returns NULL on every PE: %s", call, size, s.message().c_str());
    else if (need > 0 && op != AllocOp::kRealloc)
      committed_ok = initialise();
    rec.commit_ok = committed_ok ? 1 : 0;
    rec.commit_seq.store(seq, std::memory_order_release);
    barrier_all();
    bool everyone = committed_ok;
    for (int pe = 0; pe < npes_; ++pe) {
      if (pe == rank_) continue;
      AllocRecord copy;
      const AllocRecord& r = peer_alloc_record(pe, seq, &copy);
      if (r.commit_seq.load(std::memory_order_acquire) != seq || !r.commit_ok) everyone = false;
    }
    if (!everyone) {
      const uint64_t had = heap_->committed();
      heap_->uncommit(before);
      log_pe(LogLevel::kDebug, rank_, "%s(%zu): a PE could not commit; gave back %s of the %s committed here",
             call, size, human_size(had - heap_->committed()).c_str(), human_size(had - before).c_str());
      all_ok = false;
    } else if (report_commits_ && heap_->committed() > before) {
      (void)store_->add(kCommittedKey, int64_t(heap_->committed() - before));
    }
  }
  if (!all_ok || size == 0) {
    if (off && !(op == AllocOp::kRealloc && size <= old_size)) (void)alloc_->free(*off);
    if (size == 0 && op == AllocOp::kRealloc && old) {
      (void)alloc_->free(old_off);
      dfx_.freed(old_off);
    }
    if (init_error) std::rethrow_exception(init_error);
    if (!all_ok && ok && committed_ok)
      log_pe(LogLevel::kWarn, rank_, "%s(%zu) returns NULL: another PE could not allocate", call, size);
    return nullptr;
  }
  char* p = heap_->my_heap() + *off;
  if (op == AllocOp::kRealloc && old && *off != old_off) {
    std::memcpy(p, old, old_size < size ? old_size : size);
    (void)alloc_->free(old_off);
    barrier_all();  // peers may use the new block only once its contents have moved
  }
  if (op == AllocOp::kRealloc && old) dfx_.freed(old_off);
  dfx_.allocated(*off, size);
  return p;
}

void Runtime::Impl::collective_free(const char* call, void* ptr) {
  dfx::CollArgs da;
  da.dest = ptr;
  dfx::CollScope dc(dfx_, dfx::Op::kFree, 0, 0, 1, npes_, rank_, da);
  if (!ptr) {
    barrier_all();  // the standard's barrier still happens
    return;
  }
  if (SYMMEM_UNLIKELY(in_device_heap(ptr))) return device_free(call, ptr);
  uint64_t off = reinterpret_cast<uintptr_t>(ptr) - my_heap_;
  if (!in_heap(ptr) || alloc_->block_size(off) == 0)
    fail(Errc::kInvalidArgument, call, "pointer %p is not the start of a live symmetric block", ptr);
  barrier_all();  // nobody still accesses the block
  uint64_t seq = ++alloc_seq_;
  AllocRecord& rec = meta(rank_)->alloc[seq & 1];
  rec.op = uint32_t(AllocOp::kFree);
  rec.size = alloc_->block_size(off);
  rec.align = 0;
  rec.ok = 1;
  rec.offset = off;
  rec.seq.store(seq, std::memory_order_release);
  sync_all();
  dfx_.coll_arrived();
  for (int pe = 0; pe < npes_; ++pe) {
    if (pe == rank_) continue;
    AllocRecord copy;
    const AllocRecord& r = peer_alloc_record(pe, seq, &copy);
    uint64_t rs = r.seq.load(std::memory_order_acquire);
    if (rs != seq || r.op != rec.op || r.offset != rec.offset)
      fail(Errc::kMismatch, call, "collective memory call #%" PRIu64 " mismatch: this PE called shmem_free(%p) but "
           "PE %d %s; every PE must allocate and free the same blocks in the same order", seq, ptr, pe,
           rs != seq ? "had not made that call" : r.op != rec.op ? alloc_op_name(r.op) : "freed another block");
  }
  (void)alloc_->free(off);
  dfx_.freed(off);
}

// ---------------------------------------------------------------- errors

void Runtime::Impl::bad_pe(const char* call, int pe) {
  fail(Errc::kInvalidArgument, call, "PE %d is out of range (the job has %d PEs, 0..%d)", pe, npes_, npes_ - 1);
}

void Runtime::Impl::bad_range(const char* call, const void* addr, size_t n, int pe) {
  // The message is formatted here and fail() gets it whole: clang 14 merged the tails of
  // fail() calls with stack-passed varargs into code whose unwind info was wrong for one
  // of them, so the exception thrown in kThrow mode could not be unwound (SIGSEGV in
  // _Unwind_RaiseException, mp.static_data under clang).
  char msg[512];
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (a - my_heap_ < heap_size_)
    std::snprintf(msg, sizeof(msg), "%zu bytes at %p (target PE %d) run past the end of the symmetric heap "
                  "(%" PRIu64 " bytes left)", n, addr, pe, heap_size_ - (a - my_heap_));
  else if (static_size_ && a - static_start_ < static_size_)
    std::snprintf(msg, sizeof(msg), "%zu bytes at %p (target PE %d) run past the end of the program's static "
                  "data (%" PRIu64 " bytes left)", n, addr, pe, static_size_ - (a - static_start_));
  else if (!static_size_)
    std::snprintf(msg, sizeof(msg), "address %p (target PE %d, %zu bytes) is not in the symmetric heap [%p, %p) "
                  "(global variables are not symmetric in this runtime: SYMMEM_STATIC_DATA=0, or another runtime "
                  "of this process owns them)", addr, pe, n, reinterpret_cast<void*>(my_heap_),
                  reinterpret_cast<void*>(my_heap_ + heap_size_));
  else
    std::snprintf(msg, sizeof(msg), "address %p (target PE %d, %zu bytes) is not in the symmetric heap "
                  "[%p, %p) nor in the program's global variables [%p, %p)", addr, pe, n,
                  reinterpret_cast<void*>(my_heap_), reinterpret_cast<void*>(my_heap_ + heap_size_),
                  reinterpret_cast<void*>(static_start_), reinterpret_cast<void*>(static_start_ + static_size_));
  fail(Errc::kInvalidArgument, call, "%s", msg);
}

void Runtime::Impl::fail(Errc code, const char* call, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (!init_done_) linger_as_store_host();  // the other PEs report their own view first
  if (mode_ == ErrorMode::kThrow) throw Error(code, std::string(call) + ": " + msg);
  log_pe(LogLevel::kError, rank_, "%s: %s", call, msg);
  end_job(JobFailure::Kind::kError, 1, std::string(call) + ": " + msg);
}

void Runtime::Impl::global_exit(int status) {
  end_job(JobFailure::Kind::kGlobalExit, status, "");
}

void Runtime::Impl::end_job(JobFailure::Kind kind, int status, const std::string& reason) {
  // Flush first: once the job is failing the launcher or the others may end this PE too.
  std::fflush(nullptr);
  // symmem-run watches this key and ends every PE of the job with `status`.
  if (store_) (void)store_->set(kGlobalExitKey, std::to_string(status) + " " + std::to_string(rank_));
  if (live_) {
    JobFailure f;
    f.pe = rank_;
    f.kind = kind;
    f.code = status;
    f.where = live_->params().where[size_t(rank_)];
    f.reason = reason;
    live_->raise(f);
  }
  if (hosted_store_)  // the store sends the record from its thread: let the others hear it
    for (int t = 0; t < 100 && hosted_store_->connections() > 2; ++t) usleep(10000);
  _exit(status);
}

void Runtime::Impl::job_failing_seen() {
  if (live_) live_->check_word();
}

void Runtime::Impl::job_failing(const JobFailure& f) {
  if (live_) {
    live_->raise(f);
    live_->end(f);
  }
  log_pe(LogLevel::kError, rank_, "ending this PE: the job is failing: %s", f.describe().c_str());
  std::fflush(nullptr);
  _exit(f.exit_code());
}

// ---------------------------------------------------------------- public C++ API

Runtime::Runtime(const InitOptions& opts) : impl_(std::make_unique<Impl>(opts, ErrorMode::kThrow)) {}
Runtime::Runtime(const InitAttr& attr) : impl_(std::make_unique<Impl>(attr, ErrorMode::kThrow)) {}
Runtime::~Runtime() = default;
int Runtime::my_pe() const { return impl_->rank_; }
int Runtime::n_pes() const { return impl_->npes_; }
uint64_t Runtime::heap_size() const { return impl_->heap_size_; }
Runtime::HeapStats Runtime::heap_stats() const {
  HeapStats h;
  h.size = impl_->heap_size_;
  h.used = impl_->alloc_->bytes_in_use();
  h.largest_free = impl_->alloc_->largest_free();
  h.blocks = impl_->alloc_->live_block_count();
  return h;
}
void Runtime::set_wait_check(std::function<void()> check) { impl_->wait_check_ = std::move(check); }
void* Runtime::malloc(size_t n) { return impl_->collective_alloc("malloc", AllocOp::kMalloc, n, 64, nullptr); }
void* Runtime::calloc(size_t c, size_t s) {
  // An overflowing c x s: nullptr like an exhausted heap (SIZE_MAX never fits).
  return impl_->collective_alloc("calloc", AllocOp::kCalloc, s && c > SIZE_MAX / s ? SIZE_MAX : c * s, 64, nullptr);
}
void* Runtime::align(size_t a, size_t n) {
  if (a == 0 || (a & (a - 1)))
    impl_->fail(Errc::kInvalidArgument, "align", "alignment %zu is not a power of two", a);
  return impl_->collective_alloc("align", AllocOp::kAlign, n, a, nullptr);
}
void* Runtime::align(size_t a, size_t n, const std::function<void(void*, size_t)>& init) {
  if (a == 0 || (a & (a - 1)))
    impl_->fail(Errc::kInvalidArgument, "align", "alignment %zu is not a power of two", a);
  return impl_->collective_alloc("align", AllocOp::kAlign, n, a, nullptr, &init);
}
void* Runtime::realloc(void* p, size_t n) {
  if (!p) return malloc(n);
  return impl_->collective_alloc("realloc", AllocOp::kRealloc, n, 64, p);
}
void Runtime::free(void* p) { impl_->collective_free("free", p); }
void* Runtime::align_device(size_t a, size_t n, const void* pattern, size_t pattern_bytes) {
  if (a == 0 || (a & (a - 1)))
    impl_->fail(Errc::kInvalidArgument, "align_device", "alignment %zu is not a power of two", a);
  return impl_->device_alloc("align_device", n, a, pattern, pattern_bytes);
}
std::string Runtime::device_error() const { return impl_->device_last_error(); }
bool Runtime::device_heap(DeviceHeapInfo* out) const {
  const auto& h = impl_->dev_heap_;
  if (!h || !out) return false;
  out->base = h->base();
  out->heap_size = h->size();
  out->device = h->device();
  return true;
}
void Runtime::put(void* d, const void* s, size_t n, int pe) { impl_->put("put", d, s, n, pe); }
void Runtime::get(void* d, const void* s, size_t n, int pe) { impl_->get("get", d, s, n, pe); }
void Runtime::put_nbi(void* d, const void* s, size_t n, int pe) { impl_->put_nbi("put_nbi", d, s, n, pe); }
void Runtime::get_nbi(void* d, const void* s, size_t n, int pe) { impl_->get_nbi("get_nbi", d, s, n, pe); }
void Runtime::fence() { impl_->fence(); }
void Runtime::quiet() { impl_->quiet(); }
void Runtime::barrier_all() { impl_->barrier_all(); }
void Runtime::sync_all() { impl_->sync_all(); }
void* Runtime::ptr(const void* d, int pe) const { return impl_->ptr(d, pe); }
// Accessible = reachable by the data transfer routines (on this node or through UCX);
// only ptr() is limited to the node.
bool Runtime::addr_accessible(const void* a, int pe) const {
  return pe >= 0 && pe < impl_->npes_ && (impl_->in_heap(a) || impl_->in_static(a));
}
bool Runtime::pe_accessible(int pe) const { return pe >= 0 && pe < impl_->npes_; }


Runtime::PeStatus Runtime::pe_status(int pe) const {
  Impl& r = *impl_;
  if (pe < 0 || pe >= r.npes_) r.bad_pe("pe_status", pe);
  PeStatus st;
  if (r.routes_[pe] != Route::kShm || !r.heap_) return st;
  const dfx::Page& p = r.meta(pe)->dfx;
  if (p.magic != dfx::kPageMagic) return st;
  st.available = true;
  const auto state = dfx::State(p.state.load(std::memory_order_acquire));
  st.state = dfx::state_name(state);
  auto name = [&](uint32_t id) {
    const uint32_t n = p.name_count.load(std::memory_order_acquire);
    return id > 0 && id < n && id < uint32_t(dfx::kNames) ? std::string(p.names[id], strnlen(p.names[id], dfx::kNameLen))
                                                          : std::string();
  };
  st.call = name(p.call_id.load(std::memory_order_relaxed));
  st.progress = p.progress.load(std::memory_order_relaxed);
  dfx::WaitRecord w;
  // (_own: pe may be this PE, whose wait record another thread of it may be writing)
  if (state == dfx::State::kWaiting && dfx::read_stable_own(p.wait, &w) && w.op != uint16_t(dfx::Op::kNone)) {
    st.wait_call = name(w.call_id);
    if (st.wait_call.empty()) st.wait_call = dfx::op_name(dfx::Op(w.op));
    st.wait_owner = w.owner;
    st.wait_cmp = w.cmp;
    st.wait_addr = w.addr;
    st.wait_width = w.width;
    st.wait_expect = w.expect;
    st.waiting_s = double(dfx::now_ns() - w.since_ns) * 1e-9;
  }
  st.world_collectives = p.lane_seq[0].load(std::memory_order_relaxed);
  const uint32_t n = st.world_collectives;
  const dfx::Brief b = dfx::brief_of(p.lane_hist[0][n % dfx::kLaneHist].load(std::memory_order_relaxed));
  if (n > 0 && b.team_seq == n) {
    st.last_collective = dfx::op_name(b.op);
    st.last_collective_done = b.done;
  }
  return st;
}

std::string Runtime::describe(const void* addr) const { return impl_->dfx_.describe(addr); }
bool Runtime::set_name(const void* addr, const std::string& name) { return impl_->dfx_.set_name(addr, name); }

}  // namespace symmem
