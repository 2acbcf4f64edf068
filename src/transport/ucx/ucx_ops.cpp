// The operations of the UCX route, on the calling thread's lane (its context's worker, or
// the default one): put, get, atomics, deposits, fence, quiet, and the waits built on
// them. A put is UCP RMA with the peer's remote key, or from SYMMEM_UCX_RNDV_BYTES a
// rendezvous active message on the bulk endpoint, or, right after a quiet where UCX
// emulates RMA, an acknowledged active message (put + quiet in one round trip). The
// helpers the data path calls are defined inline here, in the one file that calls them.
#include <string>

#include "transport/ucx/ucx_impl.hpp"
#include "transport/ucx/ucx_progress.hpp"

namespace symmem {
namespace {

thread_local UcxLane* t_lane = nullptr;  // the context of the calling thread's operation
thread_local unsigned t_ops = 0;         // operations since this thread last progressed

// A thread inside a call serves too: every kOpsPerProgress operations (those that
// complete at once, a stream of which never waits) cost one progress round, so a PE that
// issues puts in a loop still answers its peers (OSHMEM progresses every 2048 puts).
constexpr unsigned kOpsPerProgress = 64;

// Nonblocking requests a lane may hold before the next one waits for the oldest to go
// (an endless stream of put_nbi must not queue without bound).
constexpr int kMaxInflight = 64;

ucp_atomic_op_t opcode(UcxAmo op) {
  switch (op) {
    case UcxAmo::kAdd: return UCP_ATOMIC_OP_ADD;
    case UcxAmo::kAnd: return UCP_ATOMIC_OP_AND;
    case UcxAmo::kOr: return UCP_ATOMIC_OP_OR;
    case UcxAmo::kXor: return UCP_ATOMIC_OP_XOR;
    case UcxAmo::kSwap: return UCP_ATOMIC_OP_SWAP;
    case UcxAmo::kCswap: return UCP_ATOMIC_OP_CSWAP;
    case UcxAmo::kFetch: return UCP_ATOMIC_OP_OR;  // fetch-or of 0
  }
  return UCP_ATOMIC_OP_ADD;
}

// A nonblocking request is released here, once complete (ucp_request_free earlier would
// cancel this callback).
void on_nbi_done(void* req, ucs_status_t, void* user) {
  static_cast<UcxLane*>(user)->inflight.fetch_sub(1, std::memory_order_relaxed);
  ucp_request_free(req);
}

// A nonblocking rendezvous put: its header lives until it completes (UCX 1.13 reads it
// then); quiet and fence wait for these (a flush does not cover active messages).
struct RndvSend {
  UcxTransport::Impl::DepositHdr h;
  UcxLane* lane;
  int pe;
};
void on_rndv_sent(void* req, ucs_status_t st, void* user) {
  auto* s = static_cast<RndvSend*>(user);
  UcxLane* l = s->lane;
  if (st != UCS_OK) {
    l->rndv_failed_pe.store(s->pe, std::memory_order_relaxed);
    l->rndv_failed.store(int(st), std::memory_order_relaxed);
  }
  delete s;
  l->rndv_pending.fetch_sub(1, std::memory_order_release);
  on_nbi_done(req, st, l);
}

// A nonblocking acknowledged put: its header lives until it is sent (UCX reads it then).
struct AckedNbi {
  uint64_t raddr;
  UcxLane* lane;
};
void on_acked_nbi_sent(void* req, ucs_status_t, void* user) {
  auto* a = static_cast<AckedNbi*>(user);
  a->lane->inflight.fetch_sub(1, std::memory_order_relaxed);
  delete a;
  ucp_request_free(req);
}

}  // namespace

// The lane of the calling thread's operation: its context's, or the default one.
inline UcxLane& UcxTransport::Impl::lane() {
  UcxLane* l = t_lane;
  return l != nullptr && l->owner == this ? *l : svc;
}

// l's endpoint to pe, connected on first use.
inline UcxPeer& UcxTransport::Impl::peer(UcxLane& l, int pe) {
  UcxPeer& q = l.peers[size_t(pe)];
  if (__builtin_expect(q.ep.load(std::memory_order_acquire) == nullptr, 0)) {
    Status st = connect(l, pe);
    if (!st.ok()) fatal("symmem: " + st.message(), pe);
  }
  return q;
}

// l's rendezvous endpoint to q's PE, made on first use.
inline ucp_ep_h UcxTransport::Impl::bulk(UcxLane& l, UcxPeer& q) {
  ucp_ep_h h = q.bulk.load(std::memory_order_acquire);
  if (__builtin_expect(h != nullptr, 1)) return h;
  return connect_bulk(l, q);
}

// The remote key of the region holding [a, a+n) on q's PE; an address outside them ends
// the job.
inline ucp_rkey_h UcxTransport::Impl::rkey_for(UcxPeer& q, uintptr_t a, size_t n) {
  for (size_t k = 0; k < p.regions.size(); ++k) {
    const UcxRegion& r = p.regions[k];
    uintptr_t off = a - (r.base0 + uint64_t(q.pe) * r.stride);
    if (r.length && off < r.length && n <= r.length - off) return q.rkeys[k];
  }
  no_region(a, n, q.pe);
}

// Waits for a request (or an immediate result) with progress and the deadline.
inline void UcxTransport::Impl::wait(UcxLane& l, ucs_status_ptr_t req, const char* what, int pe) {
  if (req == nullptr) return;
  if (UCS_PTR_IS_ERR(req))
    fatal(std::string("symmem: ") + what + " to " + who(pe) + " failed: " + ucs_status_string(UCS_PTR_STATUS(req)), pe);
  ucs_status_t st = ucp_request_check_status(req);
  if (st == UCS_INPROGRESS) drive(l, [&] { return (st = ucp_request_check_status(req)) != UCS_INPROGRESS; }, what, pe);
  ucp_request_free(req);
  if (st != UCS_OK)
    fatal(std::string("symmem: ") + what + (pe >= 0 ? " to " + who(pe) : std::string()) + " failed: " +
              ucs_status_string(st),
          pe);
}

// A nonblocking operation was posted: an error ends the job; a request is counted while
// it is pending locally and released by its callback; past kMaxInflight the caller
// waits for some to complete. Completion is quiet's (worker flush).
inline void UcxTransport::Impl::posted(UcxLane& l, ucs_status_ptr_t req, const char* what, int pe, bool track) {
  if (track) l.dirty.store(true, std::memory_order_relaxed);
  if (req == nullptr) return;
  if (UCS_PTR_IS_ERR(req)) wait(l, req, what, pe);
  // The callback runs once, maybe already (another thread's progress): req is not ours.
  if (l.inflight.fetch_add(1, std::memory_order_relaxed) + 1 > kMaxInflight)
    drive(l, [&] { return l.inflight.load(std::memory_order_relaxed) <= kMaxInflight / 2; }, what, pe);
}

inline void UcxTransport::Impl::nbi_param(UcxLane& l, ucp_request_param_t* rp) {
  rp->op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp->cb.send = &on_nbi_done;
  rp->user_data = &l;
}

// Sends a deposit header and its bytes by rendezvous on q's bulk endpoint. Blocking:
// returns once the bytes are at the target; otherwise quiet and fence complete it.
inline void UcxTransport::Impl::send_rndv(UcxLane& l, UcxPeer& q, const DepositHdr& h, const void* buf, size_t count,
                                   bool iov, bool blocking, const char* what) {
  ucp_ep_h ep = bulk(l, q);
  l.bulk_used.store(true, std::memory_order_relaxed);
  ucp_request_param_t rp = deposit_param(UCP_AM_SEND_FLAG_RNDV, iov);
  if (blocking) return wait(l, ucp_am_send_nbx(ep, kAmDeposit, &h, sizeof h, buf, count, &rp), what, q.pe);
  auto* s = new RndvSend{h, &l, q.pe};
  rp.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = &on_rndv_sent;
  rp.user_data = s;
  l.rndv_pending.fetch_add(1, std::memory_order_relaxed);
  ucs_status_ptr_t req = ucp_am_send_nbx(ep, kAmDeposit, &s->h, sizeof s->h, buf, count, &rp);
  if (req == nullptr || UCS_PTR_IS_ERR(req)) {
    delete s;
    l.rndv_pending.fetch_sub(1, std::memory_order_relaxed);
  }
  posted(l, req, what, q.pe);
}

// Completes l's rendezvous transfers: the pending ones, then a flush of the bulk
// endpoints used (a flush's reply follows the target's handling of what came before).
inline void UcxTransport::Impl::complete_bulk(UcxLane& l) {
  if (l.rndv_pending.load(std::memory_order_acquire) > 0)
    drive(l, [&] { return l.rndv_pending.load(std::memory_order_acquire) == 0; }, "put (rendezvous)", -1);
  if (int st = l.rndv_failed.exchange(0)) {
    const int pe = l.rndv_failed_pe.load(std::memory_order_relaxed);
    fatal("symmem: put to " + who(pe) + " failed: " + ucs_status_string(ucs_status_t(st)), pe);
  }
  if (!l.bulk_used.exchange(false, std::memory_order_acq_rel)) return;
  for (size_t pe = 0; pe < npeers; ++pe) {
    ucp_ep_h ep = l.peers[pe].bulk.load(std::memory_order_acquire);
    if (ep == nullptr) continue;
    ucp_request_param_t rp{};
    wait(l, ucp_ep_flush_nbx(ep, &rp), "quiet (flush of rendezvous transfers)", int(pe));
  }
}

// Sends an acknowledged put (the caller checked that q's endpoint emulates RMA over its
// active-message lane). Locally complete on return when blocking, else at quiet, which
// waits for the reply.
inline void UcxTransport::Impl::send_acked_put(UcxLane& l, UcxPeer& q, void* raddr, const void* src, size_t n,
                                        bool blocking) {
  uint64_t a = reinterpret_cast<uint64_t>(raddr);
  (void)rkey_for(q, a, n);  // names an address outside the regions
  ucp_request_param_t rp = deposit_param(UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY, false);
  AckedNbi* keep = nullptr;
  if (!blocking) {
    keep = new AckedNbi{a, &l};
    rp.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = &on_acked_nbi_sent;
    rp.user_data = keep;
  }
  l.ack_pe.store(q.pe, std::memory_order_relaxed);
  l.acks_wanted.fetch_add(1, std::memory_order_relaxed);
  ucs_status_ptr_t req = ucp_am_send_nbx(q.ep.load(std::memory_order_relaxed), kAmAckedPut, keep ? &keep->raddr : &a,
                                         sizeof a, const_cast<void*>(src), n, &rp);
  if (blocking) return wait(l, req, "put", q.pe);
  if (!UCS_PTR_IS_PTR(req)) delete keep;  // sent already (or failed): no callback
  posted(l, req, "put", q.pe, false);     // complete with its reply
}

void UcxTransport::put(void* raddr, const void* src, size_t n, int pe, bool blocking) {
  Impl& im = *impl_;
  Impl::AppScope inside(im);
  UcxLane& l = im.lane();
  if (++t_ops % kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
  UcxPeer& q = im.peer(l, pe);
  if (n >= im.p.rndv_bytes) {
    Impl::DepositHdr h{};
    h.nsegs = 1;
    h.raddr[0] = reinterpret_cast<uint64_t>(raddr);
    h.len[0] = n;
    (void)im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), n);  // names an address outside the regions
    l.dirty.store(true, std::memory_order_relaxed);
    return im.send_rndv(l, q, h, src, n, false, blocking, "put");
  }
  if (n <= im.p.ack_put_bytes && q.rma_by_am && l.quieted.load(std::memory_order_relaxed) &&
      l.quieted.exchange(false, std::memory_order_acquire))
    return im.send_acked_put(l, q, raddr, src, n, blocking);
  ucp_request_param_t rp{};
  if (!blocking) Impl::nbi_param(l, &rp);
  ucs_status_ptr_t req = ucp_put_nbx(q.ep.load(std::memory_order_relaxed), src, n, reinterpret_cast<uint64_t>(raddr),
                                     im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), n), &rp);
  if (blocking) {
    l.dirty.store(true, std::memory_order_relaxed);
    return im.wait(l, req, "put", pe);
  }
  im.posted(l, req, "put", pe);  // completes at quiet (worker flush)
}

void UcxTransport::get(void* dst, const void* raddr, size_t n, int pe, bool blocking) {
  Impl& im = *impl_;
  Impl::AppScope inside(im);
  UcxLane& l = im.lane();
  if (++t_ops % kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
  UcxPeer& q = im.peer(l, pe);
  ucp_request_param_t rp{};
  if (!blocking) Impl::nbi_param(l, &rp);
  ucs_status_ptr_t req = ucp_get_nbx(q.ep.load(std::memory_order_relaxed), dst, n, reinterpret_cast<uint64_t>(raddr),
                                     im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), n), &rp);
  if (blocking) return im.wait(l, req, "get", pe);
  im.posted(l, req, "get", pe);
}

uint64_t UcxTransport::amo(UcxAmo op, void* raddr, uint64_t value, uint64_t cond, size_t size, int pe, bool fetch,
                           bool track) {
  Impl& im = *impl_;
  Impl::AppScope inside(im);
  UcxLane& l = im.lane();
  if (++t_ops % kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
  UcxPeer& q = im.peer(l, pe);
  if (op == UcxAmo::kSwap || op == UcxAmo::kCswap || op == UcxAmo::kFetch) fetch = true;
  if (op == UcxAmo::kFetch) value = 0;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  rp.datatype = ucp_dt_make_contig(size);
  // Operands and results live in 8-byte words; on little-endian x86 the low 4 bytes are
  // the 32-bit value. Compare-swap: buffer holds the condition, the reply buffer the new
  // value on the way out and the old one on the way back.
  uint64_t operand = op == UcxAmo::kCswap ? cond : value, result = op == UcxAmo::kCswap ? value : 0;
  if (fetch) {
    rp.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    rp.reply_buffer = &result;
  } else {
    Impl::nbi_param(l, &rp);
  }
  ucs_status_ptr_t req = ucp_atomic_op_nbx(q.ep.load(std::memory_order_relaxed), opcode(op), &operand, 1,
                                           reinterpret_cast<uint64_t>(raddr),
                                           im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), size), &rp);
  if (fetch) {
    im.wait(l, req, "atomic", pe);
    return size == 4 ? uint64_t(uint32_t(result)) : result;
  }
  im.posted(l, req, "atomic", pe, track);
  return 0;
}

void UcxTransport::deposit(const UcxSeg* segs, int nsegs, std::atomic<uint32_t>* word, uint32_t delta, int pe) {
  Impl& im = *impl_;
  Impl::AppScope inside(im);
  UcxLane& l = im.lane();
  if (++t_ops % kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
  if (nsegs < 0 || nsegs > kMaxSegs) im.fatal("symmem: a deposit of " + std::to_string(nsegs) + " segments");
  UcxPeer& q = im.peer(l, pe);
  Impl::DepositHdr h{};
  h.word = reinterpret_cast<uint64_t>(word);
  h.delta = delta;
  h.nsegs = uint32_t(nsegs);
  ucp_dt_iov_t iov[kMaxSegs];
  int niov = 0;
  (void)im.rkey_for(q, reinterpret_cast<uintptr_t>(word), 4);  // names an address outside the regions
  for (int i = 0; i < nsegs; ++i) {
    (void)im.rkey_for(q, reinterpret_cast<uintptr_t>(segs[i].raddr), segs[i].n);
    h.raddr[i] = reinterpret_cast<uint64_t>(segs[i].raddr);
    h.len[i] = segs[i].n;
    if (segs[i].n) iov[niov++] = ucp_dt_iov_t{const_cast<void*>(segs[i].src), segs[i].n};
  }
  size_t total = 0;
  for (int i = 0; i < nsegs; ++i) total += segs[i].n;
  if (total >= im.p.rndv_bytes)  // complete when it returns
    return im.send_rndv(l, q, h, niov == 1 ? iov[0].buffer : static_cast<void*>(iov), niov == 1 ? total : size_t(niov),
                        niov != 1, true, "deposit");
  ucp_request_param_t rp = Impl::deposit_param(UCP_AM_SEND_FLAG_EAGER, niov > 0);
  ucs_status_ptr_t req = ucp_am_send_nbx(q.ep.load(std::memory_order_relaxed), Impl::kAmDeposit, &h, sizeof h,
                                         niov ? static_cast<void*>(iov) : nullptr, size_t(niov), &rp);
  im.wait(l, req, "deposit", pe);  // locally complete: the header and sources may change
}

void UcxTransport::fence() {
  Impl& im = *impl_;
  UcxLane& l = im.lane();
  if (!l.dirty.load(std::memory_order_relaxed)) return;
  Impl::AppScope inside(im);
  // A rendezvous put travels on another endpoint, which no fence orders: complete it.
  if (l.bulk_used.load(std::memory_order_relaxed)) im.complete_bulk(l);
  ucs_status_t st = ucp_worker_fence(l.worker);
  if (st != UCS_OK) im.fatal(std::string("symmem: fence over UCX failed: ") + ucs_status_string(st));
}

// The lane's own endpoints are flushed, not its worker: a worker flush also waits on the
// endpoints UCX made for peers' contexts (replies to their lanes), which only those peers'
// threads progress.
void UcxTransport::quiet() {
  Impl& im = *impl_;
  UcxLane& l = im.lane();
  if (im.acks_pending(l)) {
    Impl::AppScope inside(im);
    im.drive(l, [&] { return !im.acks_pending(l); }, "quiet (acknowledgement of a put)",
             l.ack_pe.load(std::memory_order_relaxed));
  }
  l.quieted.store(true, std::memory_order_relaxed);
  if (!l.dirty.exchange(false, std::memory_order_acq_rel)) return;
  Impl::AppScope inside(im);
  ucs_status_ptr_t reqs[16];
  int n = 0;
  auto wait_all = [&] {
    for (int i = 0; i < n; ++i) im.wait(l, reqs[i], "quiet (flush of outstanding operations)", -1);
    n = 0;
  };
  im.complete_bulk(l);
  for (size_t pe = 0; pe < im.npeers; ++pe) {
    ucp_ep_h ep = l.peers[pe].ep.load(std::memory_order_acquire);
    if (ep == nullptr) continue;
    ucp_request_param_t rp{};
    ucs_status_ptr_t r = ucp_ep_flush_nbx(ep, &rp);
    if (r == nullptr) continue;
    if (UCS_PTR_IS_ERR(r)) im.wait(l, r, "quiet (flush of outstanding operations)", int(pe));
    reqs[n++] = r;
    if (n == 16) wait_all();
  }
  wait_all();
}

void UcxTransport::quiet_all() {
  Impl& im = *impl_;
  UcxLane* prev = swap_lane(nullptr);
  quiet();
  {
    std::lock_guard<std::mutex> g(im.lanes_mu);
    for (auto& l : im.lanes) {
      if (!l->dirty.load(std::memory_order_relaxed) && !im.acks_pending(*l)) continue;
      swap_lane(l.get());
      quiet();
    }
  }
  swap_lane(prev);
}

unsigned UcxTransport::progress() {
  Impl::AppScope inside(*impl_);
  return impl_->progress(impl_->lane());
}

void UcxTransport::drive(bool (*done)(void*), void* arg, int pe, const char* what) {
  impl_->drive(impl_->lane(), [&] { return done(arg); }, what, pe);
}

UcxLane* UcxTransport::swap_lane(UcxLane* l) {
  UcxLane* prev = t_lane;
  t_lane = l;
  return prev;
}

}  // namespace symmem
