// The UCX route's lifetime: the context (UCX settings chosen here), the service worker and
// the contexts' workers (lanes), the endpoints to every off-node PE and their warm-up at
// init, and close (collective) and destruction in reverse order. Also what symmem-info
// asks of UCX (describe, print_resources).
#include <stdio.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "common/log.hpp"
#include "transport/ucx/ucx_impl.hpp"

namespace symmem {

std::string UcxTransport::describe() {
  std::ostringstream o;
  unsigned maj = 0, min = 0, rel = 0;
  ucp_get_version(&maj, &min, &rel);
  o << "UCX " << maj << "." << min << "." << rel;
  ucp_lib_attr_t la{};
  la.field_mask = UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL;
  if (ucp_lib_query(&la) == UCS_OK) o << (la.max_thread_level == UCS_THREAD_MODE_MULTI ? ", multi-thread" : ", single-thread");
  const char* tls = std::getenv("UCX_TLS");
  const char* dev = std::getenv("UCX_NET_DEVICES");
  o << "; UCX_TLS=" << (tls ? tls : "(all)") << " UCX_NET_DEVICES=" << (dev ? dev : "(all)");
  return o.str();
}

bool UcxTransport::print_resources(FILE* out) {
  ucp_config_t* cfg = nullptr;
  if (ucp_config_read(nullptr, nullptr, &cfg) != UCS_OK) return false;
  (void)ucp_config_modify(cfg, "ATOMIC_MODE", "cpu");
  ucp_params_t cp{};
  cp.field_mask = UCP_PARAM_FIELD_FEATURES;
  cp.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;
  ucp_context_h ctx = nullptr;
  ucs_status_t st = ucp_init(&cp, cfg, &ctx);
  ucp_config_release(cfg);
  if (st != UCS_OK) return false;
  ucp_context_print_info(ctx, out);
  ucp_cleanup(ctx);
  return true;
}

Result<std::unique_ptr<UcxTransport>> UcxTransport::create(const UcxParams& params, Store& store) {
  std::unique_ptr<UcxTransport> t(new UcxTransport());
  t->impl_ = std::make_unique<Impl>();
  Impl& im = *t->impl_;
  im.p = params;
  t->remote_ = params.remote;
  im.timeout_ns = int64_t(params.timeout_s * 1e9);
  im.spin_ns = int64_t(params.spin_us * 1e3);
  im.npeers = size_t(params.npes);
  int nremote = 0;
  for (uint8_t r : params.remote) nremote += r;

  // Over TCP UCX moves a transfer in segments of UCX_TCP_TX/RX_SEG_SIZE, each acknowledged
  // by the target (8 KiB by default): 64 KiB ones move large transfers several times
  // faster, and 128 KiB receive buffers hold a collective's 60 KiB deposit whole wherever
  // it starts in one. Only where the user has not chosen (setenv: UCT reads its
  // transports' settings from the environment, not from ucp_config_modify).
  (void)setenv("UCX_TCP_TX_SEG_SIZE", "64k", 0);
  (void)setenv("UCX_TCP_RX_SEG_SIZE", "128k", 0);
  // UCX 1.13 connects its TCP endpoints with a blocking connect() by default: toward an
  // address that routes but never answers, ucp_ep_create then blocked for the kernel's
  // SYN retries (~2 min) where no deadline of ours could name the peer. Nonblocking, the
  // connection is one more pending piece of the warm-up, bounded by SYMMEM_INIT_TIMEOUT.
  (void)setenv("UCX_TCP_CONN_NB", "y", 0);
  ucp_config_t* cfg = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg);
  if (st != UCS_OK) return Impl::ucs_error("UCX: reading its configuration", st);
  // Remote atomics run on the target's CPU, coherent with on-node __atomic_* (the same on
  // every PE whatever the environment says).
  (void)ucp_config_modify(cfg, "ATOMIC_MODE", "cpu");
  ucp_params_t cp{};
  cp.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                  UCP_PARAM_FIELD_NAME;
  cp.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP | UCP_FEATURE_AM;
  cp.mt_workers_shared = 1;
  cp.estimated_num_eps = size_t(nremote > 0 ? nremote : 1);
  cp.name = "symmem";
  st = ucp_init(&cp, cfg, &im.ctx);
  ucp_config_release(cfg);
  if (st != UCS_OK) return Impl::ucs_error("UCX: ucp_init", st);

  SYMMEM_RETURN_IF_ERROR(im.make_lane(im.svc));
  SYMMEM_RETURN_IF_ERROR(Impl::set_handler(im.svc.worker, Impl::kAmDeposit, &Impl::on_deposit, &im));
  SYMMEM_RETURN_IF_ERROR(Impl::set_handler(im.svc.worker, Impl::kAmAckedPut, &Impl::on_acked_put, &im));
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
  wa.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
  st = ucp_worker_query(im.svc.worker, &wa);
  if (st != UCS_OK) return Impl::ucs_error("UCX: ucp_worker_query", st);
  if (wa.thread_mode != UCS_THREAD_MODE_MULTI)
    return Status(Errc::kState, "UCX: this libucp gives no multi-threaded worker (built without --enable-mt)");
  // The line this PE publishes (read_publication): address, a key per region, devices.
  std::string mine = Impl::hex(wa.address, wa.address_length);
  ucp_worker_release_address(im.svc.worker, wa.address);
  if (im.svc.efd < 0) log_pe(LogLevel::kWarn, params.rank, "UCX: no event fd; waits and the progress thread poll");
  SYMMEM_RETURN_IF_ERROR(im.register_regions(&mine));
  mine += " " + Impl::device_addresses();

  if (params.progress != "inline") im.start_progress_thread();

  SYMMEM_ASSIGN_OR_RETURN(auto all, store_allgather(store, params.tag + "/addr", params.rank, params.npes, mine,
                                                    params.timeout_s));
  im.addrs.resize(im.npeers);
  im.rkey_bufs.resize(im.npeers);
  im.where.resize(im.npeers);
  for (int pe = 0; pe < params.npes; ++pe) {
    if (!params.remote[size_t(pe)]) continue;
    SYMMEM_RETURN_IF_ERROR(im.read_publication(pe, all[size_t(pe)]));
    SYMMEM_RETURN_IF_ERROR(im.connect(im.svc, pe));
  }
  // Warm-up: one get from every remote PE wires the endpoints up now (and names a peer
  // that cannot be reached, with its host and address, within the init timeout).
  const int64_t op_timeout = im.timeout_ns;
  im.timeout_ns = int64_t(params.init_timeout_s * 1e9);
  for (int pe = 0; pe < params.npes; ++pe) {
    if (!params.remote[size_t(pe)]) continue;
    size_t k = 0;
    while (k < params.regions.size() && !params.regions[k].length) ++k;
    if (k == params.regions.size()) break;
    uint64_t word = 0;
    t->get(&word, reinterpret_cast<void*>(params.regions[k].base0 + uint64_t(pe) * params.regions[k].stride), 8, pe,
           true);
  }
  im.timeout_ns = op_timeout;
  im.initializing.store(false);
  // The PEs done with their gets keep serving the others' (inline: no thread does it).
  std::function<void()> serve;
  if (params.progress == "inline") serve = [&im] { while (im.progress(im.svc)) {} };
  SYMMEM_RETURN_IF_ERROR(
      store_barrier(store, params.tag + "/wired", params.rank, params.npes, params.timeout_s, serve));
  log_pe(LogLevel::kDebug, params.rank, "UCX: connected to %d remote PE(s); %s", nremote, describe().c_str());
  return t;
}

Status UcxTransport::Impl::make_lane(UcxLane& l) {
  l.owner = this;
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  ucs_status_t st = ucp_worker_create(ctx, &wp, &l.worker);
  if (st != UCS_OK) return ucs_error("UCX: ucp_worker_create", st);
  if (ucp_worker_get_efd(l.worker, &l.efd) != UCS_OK) l.efd = -1;
  SYMMEM_RETURN_IF_ERROR(set_handler(l.worker, kAmAck, &Impl::on_ack, &l));
  l.peers.reset(new UcxPeer[npeers]);
  for (size_t pe = 0; pe < npeers; ++pe) {
    l.peers[pe].lane = &l;
    l.peers[pe].pe = int(pe);
  }
  return Status();
}

// Whether UCX emulates RMA and atomics over ep's active-message lane: no lane of its
// configuration (ucp_ep_print_info) serves rma, rma_bw or amo, as over TCP.
bool UcxTransport::Impl::rma_by_am(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (f == nullptr) return false;
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::istringstream in(std::string(text ? text : "", size));
  std::free(text);
  bool lanes = false, hw = false;
  for (std::string line; std::getline(in, line);) {
    const size_t uses = line.find("->");
    if (line.find("lane[") == std::string::npos || uses == std::string::npos) continue;
    lanes = true;
    const std::string words = line.substr(uses) + " ";
    for (const char* w : {" rma ", " rma_bw", " amo "}) hw = hw || words.find(w) != std::string::npos;
  }
  return lanes && !hw;
}

// Endpoints use UCP_ERR_HANDLING_MODE_PEER: a peer's failure is reported (on_ep_error).
Status UcxTransport::Impl::connect(UcxLane& l, int pe) {
  std::lock_guard<std::mutex> g(l.connect_mu);
  UcxPeer& q = l.peers[size_t(pe)];
  if (q.ep.load(std::memory_order_acquire) != nullptr) return Status();
  AppScope inside(*this);
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(addrs[size_t(pe)].data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = &Impl::on_ep_error;
  ep.err_handler.arg = &q;
  ucp_ep_h h = nullptr;
  ucs_status_t st = ucp_ep_create(l.worker, &ep, &h);
  if (st != UCS_OK)
    return ucs_error("UCX: cannot connect to " + who_at(pe) + " (this PE's UCX_NET_DEVICES=" +
                         (std::getenv("UCX_NET_DEVICES") ?: "all") + ": " + device_addresses() + ")",
                     st);
  SYMMEM_RETURN_IF_ERROR(unpack_rkeys(q, h));
  q.rma_by_am = p.ack_put_bytes > 0 && rma_by_am(h);
  if (q.rma_by_am && &l == &svc && !told_acked && (told_acked = true))  // under svc's connect_mu
    log_pe(LogLevel::kDebug, p.rank, "UCX emulates RMA over active messages: puts after a quiet go acknowledged");
  q.ep.store(h, std::memory_order_release);
  return Status();
}

// No error handling (see ucx_transport.hpp: over TCP, UCX 1.13 gives an endpoint in PEER
// mode no zero-copy lane); a failed peer is named by liveness, the request or its deadline.
ucp_ep_h UcxTransport::Impl::connect_bulk(UcxLane& l, UcxPeer& q) {
  std::lock_guard<std::mutex> g(l.connect_mu);
  ucp_ep_h h = q.bulk.load(std::memory_order_acquire);
  if (h != nullptr) return h;
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep.address = reinterpret_cast<const ucp_address_t*>(addrs[size_t(q.pe)].data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucs_status_t st = ucp_ep_create(l.worker, &ep, &h);
  if (st != UCS_OK) fatal("symmem: " + ucs_error("UCX: cannot connect to " + who(q.pe), st).message(), q.pe);
  q.bulk.store(h, std::memory_order_release);
  return h;
}

UcxLane* UcxTransport::lane_create() {
  Impl& im = *impl_;
  auto l = std::make_unique<UcxLane>();
  Status st = im.make_lane(*l);
  if (!st.ok()) {
    log_pe(LogLevel::kWarn, im.p.rank, "%s: this context shares the default context's UCX worker",
           st.message().c_str());
    if (l->worker) ucp_worker_destroy(l->worker);
    return nullptr;
  }
  std::lock_guard<std::mutex> g(im.lanes_mu);
  im.lanes.push_back(std::move(l));
  return im.lanes.back().get();
}

// Closes a lane's endpoints (flushing them first unless forced or the peer failed) and
// frees their remote keys, progressing meanwhile (bounded).
void UcxTransport::Impl::close_endpoints(UcxLane& l, bool force) {
  for (size_t qi = 0; qi < npeers && l.peers; ++qi) {
    UcxPeer& q = l.peers[qi];
    destroy_rkeys(q);
    for (std::atomic<ucp_ep_h>* slot : {&q.bulk, &q.ep}) {
      ucp_ep_h ep = slot->exchange(nullptr);
      if (!ep) continue;
      ucp_request_param_t rp{};
      rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      rp.flags = force || q.error.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &rp);
      if (req && !UCS_PTR_IS_ERR(req)) {
        Clock::time_point d = Clock::now() + std::chrono::seconds(force ? 1 : 5);
        while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < d) {
          progress(l);
          sched_yield();
        }
        ucp_request_free(req);
      }
    }
  }
}

// Every lane's operations complete, then every PE closes its endpoints between two
// barriers (a peer's endpoint error after the first is expected: closing).
Status UcxTransport::close(Store& store) {
  Impl& im = *impl_;
  {
    std::lock_guard<std::mutex> g(im.lanes_mu);
    for (auto& l : im.lanes) {
      UcxLane* prev = swap_lane(l.get());
      quiet();
      swap_lane(prev);
    }
  }
  UcxLane* prev = swap_lane(nullptr);
  quiet();
  swap_lane(prev);
  im.closing.store(true);
  SYMMEM_RETURN_IF_ERROR(store_barrier(store, im.p.tag + "/closing", im.p.rank, im.p.npes, im.p.timeout_s));
  {
    std::lock_guard<std::mutex> g(im.lanes_mu);
    for (auto& l : im.lanes) im.close_endpoints(*l, false);
  }
  im.close_endpoints(im.svc, false);
  Status s = store_barrier(store, im.p.tag + "/closed", im.p.rank, im.p.npes, im.p.timeout_s);
  im.stop_progress_thread();
  return s;
}

UcxTransport::~UcxTransport() {
  if (!impl_) return;
  Impl& im = *impl_;
  im.closing.store(true);
  im.stop_progress_thread();
  for (auto& l : im.lanes) im.close_endpoints(*l, true);
  im.close_endpoints(im.svc, true);
  im.unmap_regions();
  for (auto& l : im.lanes)
    if (l->worker) ucp_worker_destroy(l->worker);
  im.lanes.clear();
  if (im.svc.worker) ucp_worker_destroy(im.svc.worker);
  if (im.ctx) ucp_cleanup(im.ctx);
  if (im.wake_fd >= 0) ::close(im.wake_fd);
}

}  // namespace symmem
