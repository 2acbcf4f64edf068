// The out-of-line parts of the point-to-point engine: error reports, the wake-up slow
// path, locks and context management.
#include "runtime/p2p.hpp"

#include <cinttypes>

#include "runtime/ctx.hpp"

namespace symmem::p2p {

void bad_cmp(Impl& r, const char* call, int cmp) {
  r.fail(Errc::kInvalidArgument, call, "comparison operator %d is not one of SHMEM_CMP_EQ/NE/GT/GE/LT/LE (0..5)",
         cmp);
}

void bad_signal_op(Impl& r, const char* call, int op) {
  r.fail(Errc::kInvalidArgument, call, "signal operator %d is not SHMEM_SIGNAL_SET (0) or SHMEM_SIGNAL_ADD (1)", op);
}

void misaligned(Impl& r, const char* call, const void* addr, size_t size, int pe) {
  r.fail(Errc::kInvalidArgument, call, "address %p (target PE %d) is not aligned to the %zu bytes of its type",
         addr, pe, size);
}

void bad_stride(Impl& r, const char* call, ptrdiff_t dst, ptrdiff_t sst) {
  r.fail(Errc::kInvalidArgument, call, "strides must be >= 1 (dst %td, sst %td)", dst, sst);
}

void bad_block_stride(Impl& r, const char* call, ptrdiff_t dst, ptrdiff_t sst, size_t bsize) {
  r.fail(Errc::kInvalidArgument, call, "strides must be >= bsize (dst %td, sst %td, bsize %zu)", dst, sst, bsize);
}

void wake_slow(WaitWord& w) {
  w.v.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_shared(&w.v);
}

void device_unsupported(Impl& r, const char* call, const void* addr) {
  r.fail(Errc::kInvalidArgument, call, "address %p is in the device heap: %s works on host memory only (device "
         "memory: shmem_signal_wait_until, shmem_wait_until and shmem_test on one word, or a kernel)", addr, call);
}

// ---------------------------------------------------------------- locks

namespace {

static_assert(sizeof(long) == 8, "the lock word holds two 32-bit ticket counters");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the serving counter is the low half of the word");

uint64_t* lock_word(Impl& r, const char* call, long* lock) {
  host_only(r, call, lock);
  return reinterpret_cast<uint64_t*>(amo_addr(r, call, lock, 0));
}

uint32_t serving(const uint64_t* w) { return static_cast<uint32_t>(__atomic_load_n(w, __ATOMIC_SEQ_CST)); }

}  // namespace

// PE 0 on another node: the same ticket lock through UCX atomics, polled with backoff.
void set_lock_remote(Impl& r, uint64_t* w) {
  uint64_t old = r.ucx_->amo(UcxAmo::kAdd, w, uint64_t(1) << 32, 0, 8, 0, true);
  const uint32_t ticket = static_cast<uint32_t>(old >> 32);
  if (static_cast<uint32_t>(old) == ticket) return;
  Backoff b(r.wait_);
  while (static_cast<uint32_t>(r.ucx_->amo(UcxAmo::kFetch, w, 0, 0, 8, 0, true)) != ticket) b.pause();
}

void set_lock(Impl& r, const char* call, long* lock) {
  uint64_t* w = lock_word(r, call, lock);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kLock, call, lock, sizeof(long), 0);
  if (r.off_node(0)) return set_lock_remote(r, w);
  uint64_t old = __atomic_fetch_add(w, uint64_t(1) << 32, __ATOMIC_SEQ_CST);
  const uint32_t ticket = static_cast<uint32_t>(old >> 32);
  if (static_cast<uint32_t>(old) == ticket) return;
  // The page shows the lock word on PE 0 and the ticket it waits to be served.
  wait_for(r, 0, [&] { return serving(w) == ticket; }, call, lock, 1, kCmpEq, long(ticket));
}

bool test_lock(Impl& r, const char* call, long* lock) {
  uint64_t* w = lock_word(r, call, lock);
  dfx::OpScope dfx_op_(r.dfx_, dfx::Op::kLock, call, lock, sizeof(long), 0);
  if (r.off_node(0)) {
    uint64_t cur = r.ucx_->amo(UcxAmo::kFetch, w, 0, 0, 8, 0, true);
    if (static_cast<uint32_t>(cur) != static_cast<uint32_t>(cur >> 32)) return false;  // held
    return r.ucx_->amo(UcxAmo::kCswap, w, cur + (uint64_t(1) << 32), cur, 8, 0, true) == cur;
  }
  uint64_t cur = __atomic_load_n(w, __ATOMIC_SEQ_CST);
  if (static_cast<uint32_t>(cur) != static_cast<uint32_t>(cur >> 32)) return false;  // held
  return __atomic_compare_exchange_n(w, &cur, cur + (uint64_t(1) << 32), false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}

void clear_lock(Impl& r, const char* call, long* lock) {
  uint64_t* w = lock_word(r, call, lock);
  r.quiet();
  if (r.off_node(0)) {  // fetching: the release is performed before this returns
    (void)r.ucx_->amo(UcxAmo::kAdd, w, 1, 0, 4, 0, true);
    return;
  }
  // Only the serving half moves: a 32-bit add cannot carry into the ticket counter.
  __atomic_fetch_add(reinterpret_cast<uint32_t*>(w), 1u, __ATOMIC_SEQ_CST);
  wake(r, 0);
}

}  // namespace symmem::p2p

namespace symmem {

symmem_ctx_s* ctx_create(Runtime::Impl& rt, long options, symmem_team_s* team, int pe_start, int pe_stride,
                         int pe_count) {
  {
    // The pool is made at the first context; threads may race to make it.
    static std::mutex init_mu;
    std::lock_guard<std::mutex> g(init_mu);
    if (!rt.ctx_pool_) rt.ctx_pool_ = std::make_shared<CtxPool>();
  }
  CtxPool& pool = *rt.ctx_pool_;
  std::lock_guard<std::mutex> g(pool.mu);
  symmem_ctx_s* c;
  if (!pool.free.empty()) {
    c = pool.free.back();
    pool.free.pop_back();
  } else {
    pool.all.push_back(std::make_unique<symmem_ctx_s>());
    c = pool.all.back().get();
  }
  c->rt = &rt;
  c->options = options;
  c->team = team;
  c->pe_start = pe_start;
  c->pe_stride = pe_stride;
  c->pe_count = pe_count;
  c->owner = std::this_thread::get_id();
  // A recycled context keeps its lane (quieted at destroy).
  if (rt.ucx_ && c->lane == nullptr) c->lane = rt.ucx_->lane_create();
  __atomic_store_n(&c->magic, kCtxLive, __ATOMIC_RELEASE);
  return c;
}

// On the shm route every operation is complete when it returns; on the UCX route a context
// has its own worker (UcxLane): its quiet and fence are that worker's.
void ctx_quiet(Runtime::Impl& rt, symmem_ctx_s* ctx) {
  const UcxLaneScope lane(ctx ? ctx->lane : nullptr);
  rt.quiet();
}
void ctx_fence(Runtime::Impl& rt, symmem_ctx_s* ctx) {
  const UcxLaneScope lane(ctx ? ctx->lane : nullptr);
  rt.fence();
}

void ctx_destroy(Runtime::Impl& rt, symmem_ctx_s* ctx) {
  ctx_quiet(rt, ctx);
  CtxPool& pool = *rt.ctx_pool_;
  std::lock_guard<std::mutex> g(pool.mu);
  __atomic_store_n(&ctx->magic, kCtxDestroyed, __ATOMIC_RELEASE);
  pool.free.push_back(ctx);
}

}  // namespace symmem
