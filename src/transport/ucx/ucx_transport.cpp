// UCX route (see ucx_transport.hpp for the design and its reasons).
#include "transport/ucx/ucx_transport.hpp"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "common/config.hpp"
#include "common/log.hpp"
#include "common/sanitizer.hpp"

namespace symmem {
namespace {

using Clock = std::chrono::steady_clock;

// Every progress call: it may serve remote PEs' operations on this PE's memory.
unsigned progress_worker(ucp_worker_h w) {
  RemoteAccessScope remote;
  return ucp_worker_progress(w);
}

std::string hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(d[b[i] >> 4]);
    s.push_back(d[b[i] & 15]);
  }
  return s;
}

bool unhex(const std::string& s, std::vector<uint8_t>* out) {
  if (s.size() % 2) return false;
  out->resize(s.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    unsigned v = 0;
    if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return false;
    (*out)[i] = uint8_t(v);
  }
  return true;
}

Status ucs_error(const std::string& what, ucs_status_t st) {
  return Status(Errc::kIo, what + ": " + ucs_status_string(st));
}

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

}  // namespace

struct UcxPeer {
  UcxTransport::Impl* owner = nullptr;
  int pe = -1;
  ucp_ep_h ep = nullptr;
  std::vector<ucp_rkey_h> rkeys;
  std::atomic<int> error{0};  // ucs_status_t of an endpoint error, 0 while healthy
};

struct UcxTransport::Impl {
  UcxParams p;
  ucp_context_h ctx = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_mem_h> memh;
  std::unique_ptr<UcxPeer[]> peers;
  size_t npeers = 0;
  std::atomic<bool> closing{false};
  std::atomic<bool> dirty{false};  // operations issued since the last quiet
  std::thread thread;
  std::atomic<bool> stop{false};
  int stop_fd = -1;
  int64_t timeout_ns = 0;

  [[noreturn]] void fatal(const std::string& msg, int pe = -1) {
    if (p.fatal) p.fatal(pe, msg);
    log_pe(LogLevel::kError, p.rank, "%s", msg.c_str());
    _exit(1);
  }
  std::string who(int pe) const {
    std::string h = size_t(pe) < p.hosts.size() ? p.hosts[size_t(pe)] : "?";
    return "PE " + std::to_string(pe) + " (" + h + ")";
  }

  static void on_ep_error(void* arg, ucp_ep_h, ucs_status_t st) {
    auto* peer = static_cast<UcxPeer*>(arg);
    peer->error.store(int(st));
    Impl* im = peer->owner;
    if (im->closing.load()) return;  // peers close their endpoints at finalize
    // A peer that ended the job itself (global exit, its own error) drops its endpoints
    // too: give the launcher a moment to end this PE before blaming that peer.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    im->fatal("symmem: " + im->who(peer->pe) + " failed or became unreachable over UCX: " +
              ucs_status_string(st) + " (the PE was killed, crashed, or its node's network is down)",
              peer->pe);
  }

  UcxPeer& peer(int pe) { return peers[size_t(pe)]; }

  ucp_rkey_h rkey_for(UcxPeer& q, uintptr_t a, size_t n) {
    for (size_t k = 0; k < p.regions.size(); ++k) {
      const UcxRegion& r = p.regions[k];
      uintptr_t off = a - (r.base0 + uint64_t(q.pe) * r.stride);
      if (r.length && off < r.length && n <= r.length - off) return q.rkeys[k];
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "symmem: address 0x%" PRIxPTR " (%zu bytes) is in no registered region of PE %d", a,
                  n, q.pe);
    fatal(buf);
  }

  // Waits for a request (or an immediate result) with progress and the deadline.
  void wait(ucs_status_ptr_t req, const char* what, int pe) {
    if (req == nullptr) return;
    if (UCS_PTR_IS_ERR(req))
      fatal(std::string("symmem: ") + what + " to " + who(pe) + " failed: " + ucs_status_string(UCS_PTR_STATUS(req)), pe);
    ucs_status_t st;
    int polls = 0;
    Clock::time_point deadline{};
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
      progress_worker(worker);
      if (++polls < 256) continue;
      if ((polls & 1023) == 0) {
        auto now = Clock::now();
        if (deadline == Clock::time_point{}) deadline = now + std::chrono::nanoseconds(timeout_ns);
        else if (now > deadline) {
          char buf[96];
          std::snprintf(buf, sizeof buf, " did not complete within %.1f s (SYMMEM_OP_TIMEOUT)", double(timeout_ns) / 1e9);
          fatal(std::string("symmem: ") + what + (pe >= 0 ? " to " + who(pe) : std::string(" (all peers)")) + buf +
                ": the peer is hung (stopped, or not scheduled) or its node unreachable",
                pe);
        }
      }
      sched_yield();
    }
    ucp_request_free(req);
    if (st != UCS_OK)
      fatal(std::string("symmem: ") + what + (pe >= 0 ? " to " + who(pe) : std::string()) + " failed: " +
                ucs_status_string(st),
            pe);
  }

  void progress_loop() {
    int efd = -1;
    if (ucp_worker_get_efd(worker, &efd) != UCS_OK) {
      log_pe(LogLevel::kWarn, p.rank, "UCX: no event fd; the progress thread polls");
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (efd >= 0) {
      ev.data.fd = efd;
      epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    }
    ev.data.fd = stop_fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev);
    while (!stop.load(std::memory_order_acquire)) {
      unsigned n = 0;
      while (progress_worker(worker)) ++n;
      if (n && p.after_progress) p.after_progress();
      if (efd >= 0) {
        ucs_status_t st = ucp_worker_arm(worker);
        if (st == UCS_ERR_BUSY) continue;
      }
      epoll_event out[2];
      // Bounded: a wake-up consumed by another thread's progress costs at most this.
      (void)epoll_wait(ep, out, 2, efd >= 0 ? 20 : 1);
    }
    ::close(ep);
  }
};

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
  int nremote = 0;
  for (uint8_t r : params.remote) nremote += r;

  ucp_config_t* cfg = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg);
  if (st != UCS_OK) return ucs_error("UCX: reading its configuration", st);
  // Remote atomics run on the target's CPU, coherent with on-node __atomic_* (the same on
  // every PE whatever the environment says).
  (void)ucp_config_modify(cfg, "ATOMIC_MODE", "cpu");
  ucp_params_t cp{};
  cp.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                  UCP_PARAM_FIELD_NAME;
  cp.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;
  cp.mt_workers_shared = 1;
  cp.estimated_num_eps = size_t(nremote > 0 ? nremote : 1);
  cp.name = "symmem";
  st = ucp_init(&cp, cfg, &im.ctx);
  ucp_config_release(cfg);
  if (st != UCS_OK) return ucs_error("UCX: ucp_init", st);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(im.ctx, &wp, &im.worker);
  if (st != UCS_OK) return ucs_error("UCX: ucp_worker_create", st);
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
  wa.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
  st = ucp_worker_query(im.worker, &wa);
  if (st != UCS_OK) return ucs_error("UCX: ucp_worker_query", st);
  if (wa.thread_mode != UCS_THREAD_MODE_MULTI)
    return Status(Errc::kState, "UCX: this libucp gives no multi-threaded worker (built without --enable-mt)");
  std::string mine = hex(wa.address, wa.address_length);
  ucp_worker_release_address(im.worker, wa.address);

  // The regions: registered without committing the sparse heap (NONBLOCK: on InfiniBand
  // this needs on-demand paging; over TCP nothing is pinned).
  for (const UcxRegion& r : params.regions) {
    ucp_mem_h mh = nullptr;
    std::string packed = "-";
    if (r.length) {
      ucp_mem_map_params_t mp{};
      mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
      mp.address = reinterpret_cast<void*>(r.base0 + uint64_t(params.rank) * r.stride);
      mp.length = r.length;
      mp.flags = UCP_MEM_MAP_NONBLOCK;
      st = ucp_mem_map(im.ctx, &mp, &mh);
      if (st != UCS_OK) return ucs_error("UCX: registering " + format_size(r.length) + " of symmetric memory", st);
      void* buf = nullptr;
      size_t len = 0;
      st = ucp_rkey_pack(im.ctx, mh, &buf, &len);
      if (st != UCS_OK) return ucs_error("UCX: ucp_rkey_pack", st);
      packed = hex(buf, len);
      ucp_rkey_buffer_release(buf);
    }
    im.memh.push_back(mh);
    mine += " " + packed;
  }

  if (params.progress != "inline") {
    im.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    im.thread = std::thread([&im] { im.progress_loop(); });
  }

  SYMMEM_ASSIGN_OR_RETURN(auto all, store_allgather(store, params.tag + "/addr", params.rank, params.npes, mine,
                                                    params.timeout_s));
  im.peers.reset(new UcxPeer[size_t(params.npes)]);
  im.npeers = size_t(params.npes);
  for (int pe = 0; pe < params.npes; ++pe) {
    UcxPeer& q = im.peers[size_t(pe)];
    q.owner = &im;
    q.pe = pe;
    if (!params.remote[size_t(pe)]) continue;
    std::istringstream in(all[size_t(pe)]);
    std::string addr_hex;
    in >> addr_hex;
    std::vector<uint8_t> addr;
    if (!unhex(addr_hex, &addr)) return Status(Errc::kState, "UCX: malformed worker address from " + im.who(pe));
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(addr.data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &Impl::on_ep_error;
    ep.err_handler.arg = &q;
    st = ucp_ep_create(im.worker, &ep, &q.ep);
    if (st != UCS_OK)
      return ucs_error("UCX: cannot connect to " + im.who(pe) + " at its published worker address (" +
                           std::to_string(addr.size()) + " bytes; UCX_NET_DEVICES=" +
                           (std::getenv("UCX_NET_DEVICES") ?: "all") + ")",
                       st);
    for (size_t k = 0; k < params.regions.size(); ++k) {
      std::string rk;
      in >> rk;
      ucp_rkey_h h = nullptr;
      if (rk != "-") {
        std::vector<uint8_t> b;
        if (!unhex(rk, &b)) return Status(Errc::kState, "UCX: malformed remote key from " + im.who(pe));
        st = ucp_ep_rkey_unpack(q.ep, b.data(), &h);
        if (st != UCS_OK) return ucs_error("UCX: unpacking the remote key of " + im.who(pe), st);
      }
      q.rkeys.push_back(h);
    }
  }
  // Warm-up: one get from every remote PE wires the endpoints up now (and names a peer
  // that cannot be reached, with its host, before the program starts).
  for (int pe = 0; pe < params.npes; ++pe) {
    if (!params.remote[size_t(pe)]) continue;
    size_t k = 0;
    while (k < params.regions.size() && !params.regions[k].length) ++k;
    if (k == params.regions.size()) break;
    uint64_t word = 0;
    t->get(&word, reinterpret_cast<void*>(params.regions[k].base0 + uint64_t(pe) * params.regions[k].stride), 8, pe,
           true);
  }
  SYMMEM_RETURN_IF_ERROR(store_barrier(store, params.tag + "/wired", params.rank, params.npes, params.timeout_s));
  log_pe(LogLevel::kDebug, params.rank, "UCX: connected to %d remote PE(s); %s", nremote, describe().c_str());
  return t;
}

void UcxTransport::put(void* raddr, const void* src, size_t n, int pe, bool blocking) {
  Impl& im = *impl_;
  UcxPeer& q = im.peer(pe);
  ucp_request_param_t rp{};
  ucs_status_ptr_t req = ucp_put_nbx(q.ep, src, n, reinterpret_cast<uint64_t>(raddr),
                                     im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), n), &rp);
  im.dirty.store(true, std::memory_order_relaxed);
  if (blocking) return im.wait(req, "put", pe);
  if (UCS_PTR_IS_ERR(req)) im.wait(req, "put", pe);
  if (req) ucp_request_free(req);  // completes at quiet (worker flush)
}

void UcxTransport::get(void* dst, const void* raddr, size_t n, int pe, bool blocking) {
  Impl& im = *impl_;
  UcxPeer& q = im.peer(pe);
  ucp_request_param_t rp{};
  ucs_status_ptr_t req = ucp_get_nbx(q.ep, dst, n, reinterpret_cast<uint64_t>(raddr),
                                     im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), n), &rp);
  if (blocking) return im.wait(req, "get", pe);
  im.dirty.store(true, std::memory_order_relaxed);
  if (UCS_PTR_IS_ERR(req)) im.wait(req, "get", pe);
  if (req) ucp_request_free(req);
}

uint64_t UcxTransport::amo(UcxAmo op, void* raddr, uint64_t value, uint64_t cond, size_t size, int pe, bool fetch,
                           bool track) {
  Impl& im = *impl_;
  UcxPeer& q = im.peer(pe);
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
  }
  ucs_status_ptr_t req = ucp_atomic_op_nbx(q.ep, opcode(op), &operand, 1, reinterpret_cast<uint64_t>(raddr),
                                           im.rkey_for(q, reinterpret_cast<uintptr_t>(raddr), size), &rp);
  if (fetch) {
    im.wait(req, "atomic", pe);
    return size == 4 ? uint64_t(uint32_t(result)) : result;
  }
  if (track) im.dirty.store(true, std::memory_order_relaxed);
  if (UCS_PTR_IS_ERR(req)) im.wait(req, "atomic", pe);
  if (req) ucp_request_free(req);
  return 0;
}

void UcxTransport::fence() {
  Impl& im = *impl_;
  if (!im.dirty.load(std::memory_order_relaxed)) return;
  ucs_status_t st = ucp_worker_fence(im.worker);
  if (st != UCS_OK) im.fatal(std::string("symmem: fence over UCX failed: ") + ucs_status_string(st));
}

void UcxTransport::quiet() {
  Impl& im = *impl_;
  if (!im.dirty.exchange(false, std::memory_order_acq_rel)) return;
  ucp_request_param_t rp{};
  im.wait(ucp_worker_flush_nbx(im.worker, &rp), "quiet (flush of outstanding operations)", -1);
}

unsigned UcxTransport::progress() { return progress_worker(impl_->worker); }

Status UcxTransport::close(Store& store) {
  Impl& im = *impl_;
  quiet();
  im.closing.store(true);
  SYMMEM_RETURN_IF_ERROR(store_barrier(store, im.p.tag + "/closing", im.p.rank, im.p.npes, im.p.timeout_s));
  for (size_t qi = 0; qi < im.npeers; ++qi) {
    UcxPeer& q = im.peers[qi];
    for (ucp_rkey_h h : q.rkeys)
      if (h) ucp_rkey_destroy(h);
    q.rkeys.clear();
    if (!q.ep) continue;
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = q.error.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t req = ucp_ep_close_nbx(q.ep, &rp);
    if (req && !UCS_PTR_IS_ERR(req)) {
      Clock::time_point d = Clock::now() + std::chrono::seconds(5);
      while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < d) {
        progress_worker(im.worker);
        sched_yield();
      }
      ucp_request_free(req);
    }
    q.ep = nullptr;
  }
  Status s = store_barrier(store, im.p.tag + "/closed", im.p.rank, im.p.npes, im.p.timeout_s);
  if (im.thread.joinable()) {
    im.stop.store(true, std::memory_order_release);
    uint64_t one = 1;
    ssize_t w = ::write(im.stop_fd, &one, sizeof one);
    (void)w;
    im.thread.join();
  }
  return s;
}

UcxTransport::~UcxTransport() {
  if (!impl_) return;
  Impl& im = *impl_;
  im.closing.store(true);
  if (im.thread.joinable()) {
    im.stop.store(true, std::memory_order_release);
    uint64_t one = 1;
    ssize_t w = ::write(im.stop_fd, &one, sizeof one);
    (void)w;
    im.thread.join();
  }
  for (size_t qi = 0; qi < im.npeers; ++qi) {
    UcxPeer& q = im.peers[qi];
    for (ucp_rkey_h h : q.rkeys)
      if (h) ucp_rkey_destroy(h);
    if (q.ep) {
      ucp_request_param_t rp{};
      rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t req = ucp_ep_close_nbx(q.ep, &rp);
      if (req && !UCS_PTR_IS_ERR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) progress_worker(im.worker);
        ucp_request_free(req);
      }
    }
  }
  for (ucp_mem_h mh : im.memh)
    if (mh) ucp_mem_unmap(im.ctx, mh);
  if (im.worker) ucp_worker_destroy(im.worker);
  if (im.ctx) ucp_cleanup(im.ctx);
  if (im.stop_fd >= 0) ::close(im.stop_fd);
}

}  // namespace symmem
