// The target's side of the UCX route's active messages, run on the service worker by
// whichever thread progresses it: a deposit (bytes, then an add to a word, on this PE's
// CPU), an acknowledged put (bytes, then a reply to the sender's lane), the reply itself
// (on the sending lane), and the receive of a rendezvous transfer straight into its
// place. Every address is checked against this PE's regions, as UCX checks a put's
// remote key. The senders are in ucx_ops.cpp.
#include <cstring>

#include "common/log.hpp"
#include "transport/ucx/ucx_impl.hpp"

namespace symmem {
namespace {

// A rendezvous deposit or put: UCX receives the bytes straight into the segments, then
// the word (if any) is added, from the completion callback.
struct RndvRecv {
  ucp_dt_iov_t iov[UcxTransport::kMaxSegs];
  uint64_t word;
  uint32_t delta;
};

void rndv_landed(RndvRecv* r) {
  if (r->word) reinterpret_cast<std::atomic<uint32_t>*>(r->word)->fetch_add(r->delta, std::memory_order_seq_cst);
  delete r;
}

void on_rndv_received(void* req, ucs_status_t st, size_t, void* user) {
  auto* r = static_cast<RndvRecv*>(user);
  if (st == UCS_OK) rndv_landed(r);
  else delete r;  // the sender's request fails too, and names this PE
  ucp_request_free(req);
}

}  // namespace

Status UcxTransport::Impl::set_handler(ucp_worker_h w, unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = id;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  hp.cb = cb;
  hp.arg = arg;
  ucs_status_t st = ucp_worker_set_am_recv_handler(w, &hp);
  return st == UCS_OK ? Status() : ucs_error("UCX: ucp_worker_set_am_recv_handler", st);
}

// Whether [a, a+n) lies in one of this PE's own registered regions.
inline bool UcxTransport::Impl::mine(uint64_t a, uint64_t n) const {
  for (const UcxRegion& r : p.regions) {
    const uint64_t off = a - (r.base0 + uint64_t(p.rank) * r.stride);
    if (r.length && off < r.length && n <= r.length - off) return true;
  }
  return false;
}

ucs_status_t UcxTransport::Impl::on_deposit(void* arg, const void* header, size_t header_len, void* data, size_t len,
                                            const ucp_am_recv_param_t* param) {
  Impl* im = static_cast<Impl*>(arg);
  DepositHdr h;
  bool ok = header_len == sizeof h;
  if (ok) std::memcpy(&h, header, sizeof h);
  ok = ok && h.nsegs <= kMaxSegs && (h.word == 0 || (im->mine(h.word, 4) && h.word % 4 == 0));
  uint64_t total = 0;
  for (uint32_t i = 0; ok && i < h.nsegs; ++i) {
    ok = im->mine(h.raddr[i], h.len[i]);
    total += h.len[i];
  }
  if (!ok || total != len) {
    log_pe(LogLevel::kError, im->p.rank, "UCX: dropped a malformed deposit (%zu bytes)", len);
    return UCS_OK;
  }
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) return im->receive_rndv(h, data, len);
  const char* from = static_cast<const char*>(data);
  for (uint32_t i = 0; i < h.nsegs; ++i) {
    std::memcpy(reinterpret_cast<void*>(h.raddr[i]), from, h.len[i]);
    from += h.len[i];
  }
  if (h.word) reinterpret_cast<std::atomic<uint32_t>*>(h.word)->fetch_add(h.delta, std::memory_order_seq_cst);
  return UCS_OK;
}

// The bytes are stored, then the reply goes back to the sending worker (also for a
// malformed one, which is logged: its sender must not hang).
ucs_status_t UcxTransport::Impl::on_acked_put(void* arg, const void* header, size_t header_len, void* data, size_t len,
                                              const ucp_am_recv_param_t* param) {
  Impl* im = static_cast<Impl*>(arg);
  uint64_t raddr = 0;
  if (header_len == sizeof raddr) std::memcpy(&raddr, header, sizeof raddr);
  if (raddr != 0 && im->mine(raddr, len)) std::memcpy(reinterpret_cast<void*>(raddr), data, len);
  else log_pe(LogLevel::kError, im->p.rank, "UCX: dropped a malformed put (%zu bytes)", len);
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    log_pe(LogLevel::kError, im->p.rank, "UCX: an acknowledged put came with no reply endpoint");
    return UCS_OK;
  }
  static const uint32_t kOne = 1;
  ucp_request_param_t rp = deposit_param(UCP_AM_SEND_FLAG_EAGER, false);
  ucs_status_ptr_t r = ucp_am_send_nbx(param->reply_ep, kAmAck, &kOne, sizeof kOne, nullptr, 0, &rp);
  if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);  // released once sent
  return UCS_OK;
}

// The reply to acknowledged puts, on the lane that sent them (quiet waits for it).
ucs_status_t UcxTransport::Impl::on_ack(void* arg, const void* header, size_t header_len, void*, size_t,
                                        const ucp_am_recv_param_t*) {
  uint32_t n = 0;
  if (header_len == sizeof n) std::memcpy(&n, header, sizeof n);
  static_cast<UcxLane*>(arg)->acks_got.fetch_add(n, std::memory_order_release);
  return UCS_OK;
}

inline ucs_status_t UcxTransport::Impl::receive_rndv(const DepositHdr& h, void* desc, size_t len) {
  auto* r = new RndvRecv{};
  int niov = 0;
  for (uint32_t i = 0; i < h.nsegs; ++i)
    if (h.len[i]) r->iov[niov++] = ucp_dt_iov_t{reinterpret_cast<void*>(h.raddr[i]), h.len[i]};
  r->word = h.word;
  r->delta = h.delta;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  rp.cb.recv_am = &on_rndv_received;
  rp.user_data = r;
  rp.datatype = niov == 1 ? ucp_dt_make_contig(1) : ucp_dt_make_iov();
  ucs_status_ptr_t req = ucp_am_recv_data_nbx(svc.worker, desc, niov == 1 ? r->iov[0].buffer : r->iov,
                                              niov == 1 ? len : size_t(niov), &rp);
  if (req == nullptr) {
    rndv_landed(r);
  } else if (UCS_PTR_IS_ERR(req)) {
    log_pe(LogLevel::kError, p.rank, "UCX: receiving %zu bytes by rendezvous: %s", len,
           ucs_status_string(UCS_PTR_STATUS(req)));
    delete r;
  }
  return UCS_OK;
}

}  // namespace symmem
