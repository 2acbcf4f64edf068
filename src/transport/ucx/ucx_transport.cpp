// UCX route (see ucx_transport.hpp for the design and its reasons).
#include "transport/ucx/ucx_transport.hpp"

#include <sched.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <mutex>
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

// The addresses of the network devices UCX may use here ("dev=addr,..."), as peers would
// connect to them: UCX_NET_DEVICES' netdevs (an InfiniBand port such as mlx5_0:1 by name
// only), or every interface that is up.
std::string device_addresses() {
  const char* env = std::getenv("UCX_NET_DEVICES");
  std::string want = env && *env && std::string(env) != "all" ? std::string(",") + env + "," : "";
  std::string out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      const int fam = i->ifa_addr->sa_family;
      if (fam != AF_INET && fam != AF_INET6) continue;
      std::string name = ",";  // appended piece by piece: GCC 12 -O3 -Wrestrict false positive on "," + string
      name += i->ifa_name;
      name += ',';
      if (!want.empty() && want.find(name) == std::string::npos) continue;
      char buf[INET6_ADDRSTRLEN] = "";
      const void* a = fam == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
                                     : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr);
      if (!inet_ntop(fam, a, buf, sizeof buf)) continue;
      if (!out.empty()) out += ',';
      out += i->ifa_name;
      out += '=';
      out += buf;
    }
    freeifaddrs(ifs);
  }
  if (out.empty()) out = env && *env ? env : "?";
  return out;
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

struct UcxLane;

struct UcxPeer {
  UcxLane* lane = nullptr;
  int pe = -1;
  std::atomic<ucp_ep_h> ep{nullptr};  // a context's lane connects on first use
  std::atomic<ucp_ep_h> bulk{nullptr};  // rendezvous transfers: no error handling, made on first use
  std::vector<ucp_rkey_h> rkeys;
  std::atomic<int> error{0};  // ucs_status_t of an endpoint error, 0 while healthy
  bool rma_by_am = false;     // UCX emulates RMA and atomics over ep's active-message lane
};

// One UCX worker and its endpoints to the PEs of other nodes. The default context's lane
// is the service worker: its address is the one published, every peer's endpoints lead to
// it, and it serves the remote operations aimed at this PE (the progress thread, or a
// thread that waits). Every other context has a lane of its own whose endpoints lead to
// the peers' service workers, so that its quiet flushes its own operations only.
struct UcxLane {
  UcxTransport::Impl* owner = nullptr;
  ucp_worker_h worker = nullptr;
  int efd = -1;  // the worker's event fd (-1: none, waits poll)
  std::unique_ptr<UcxPeer[]> peers;
  std::atomic<bool> dirty{false};      // operations issued since the last quiet
  std::atomic<bool> efd_owner{false};  // a thread sleeps on efd
  std::atomic<int> inflight{0};        // nonblocking requests not yet complete locally
  std::atomic<int> rndv_pending{0};    // nonblocking rendezvous puts not yet complete
  std::atomic<int> rndv_failed{0};     // ucs_status_t of a failed one (0: none)
  std::atomic<int> rndv_failed_pe{-1};  // and its target
  std::atomic<bool> bulk_used{false};  // rendezvous transfers since the last quiet
  std::atomic<bool> quieted{true};     // no put since the last quiet: the next may go acknowledged
  std::atomic<uint64_t> acks_wanted{0}, acks_got{0};  // acknowledged puts sent, and their replies
  std::atomic<int> ack_pe{-1};                        // the last one's target (named if it never comes)
  std::mutex connect_mu;
};

namespace {
thread_local UcxLane* t_lane = nullptr;  // the context of the calling thread's operation
thread_local unsigned t_ops = 0;         // operations since this thread last progressed

// Nonblocking requests a lane may hold before the next one waits for the oldest to go
// (an endless stream of put_nbi must not queue without bound).
constexpr int kMaxInflight = 64;

// The deposit's active message (UcxTransport::deposit): this header, then the segments'
// bytes back to back.
constexpr unsigned kAmDeposit = 1;
// An acknowledged put (header: the target address; then the bytes) and its reply (header:
// how many puts it acknowledges), which lands on the sending lane's worker.
constexpr unsigned kAmAckedPut = 2;
constexpr unsigned kAmAck = 3;
struct DepositHdr {
  uint64_t word;
  uint32_t delta;
  uint32_t nsegs;
  uint64_t raddr[UcxTransport::kMaxSegs];
  uint64_t len[UcxTransport::kMaxSegs];
};

// A nonblocking request is released here, once complete (ucp_request_free earlier would
// cancel this callback).
void on_nbi_done(void* req, ucs_status_t, void* user) {
  static_cast<UcxLane*>(user)->inflight.fetch_sub(1, std::memory_order_relaxed);
  ucp_request_free(req);
}
// A nonblocking rendezvous put: its header lives until it completes (UCX 1.13 reads it
// then); quiet and fence wait for these (a flush does not cover active messages).
struct RndvSend {
  DepositHdr h;
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
}  // namespace

struct UcxTransport::Impl {
  UcxParams p;
  ucp_context_h ctx = nullptr;
  UcxLane svc;
  std::mutex lanes_mu;
  std::vector<std::unique_ptr<UcxLane>> lanes;  // the contexts' lanes
  std::vector<ucp_mem_h> memh;
  size_t npeers = 0;
  bool told_acked = false;  // the debug line on acknowledged puts was written
  // What every PE published: its service worker's address and its packed remote keys.
  std::vector<std::vector<uint8_t>> addrs;
  std::vector<std::vector<std::vector<uint8_t>>> rkey_bufs;
  std::vector<std::string> where;  // every PE's UCX devices and addresses (device_addresses)
  std::atomic<bool> initializing{true};  // messages then name the peer's addresses too
  std::atomic<bool> closing{false};
  std::thread thread;
  std::atomic<bool> stop{false};
  int stop_fd = -1;
  // Application threads inside drive() (app_driving: they poll the worker until their
  // condition holds, then sleep on its event fd) and inside a short UCX call of this
  // transport (app_ops: an operation, one progress round). The progress thread stays off
  // the worker meanwhile: UCX's worker lock is a spinlock, and a progress thread that
  // reached it while a thread issued puts and polled for their completions spun there
  // for the whole stream (a third of the initiator's samples in put + quiet, a core the
  // PEs needed). It looks again after 1-8 ms during a wait, after 50 us during a short call,
  // doubling to 0.8 ms while the calls go on (the PE must be served soon after it leaves
  // the library: Lock.FirstComeFirstServed across nodes failed 1 run in 3 when it looked
  // again only after 1 ms; 12 runs in 12 pass with this backoff).
  std::atomic<int> app_driving{0};
  std::atomic<int> app_ops{0};
  // While in one, the thread itself serves: every kOpsPerProgress operations (those that
  // complete at once, a stream of which never waits) cost one progress round, so a PE that
  // issues puts in a loop still answers its peers (OSHMEM progresses every 2048 puts).
  static constexpr unsigned kOpsPerProgress = 64;
  // Set by the progress thread around each of its UCX calls. A thread that enters UCX
  // while it is set hands its CPU over until it clears (enter()): where the two share a
  // CPU (a PE bound to one, UCX's threads with it), the progress thread may have been
  // preempted inside UCX holding the worker's spinlock, which the entering thread would
  // otherwise spin on for the rest of its time slice.
  std::atomic<bool> thread_in_ucx{false};
  // Called after app_driving or app_ops went up (seq_cst on both sides: either the progress
  // thread sees the count and stays out, or this thread sees it inside and waits).
  void enter() {
    while (__builtin_expect(thread_in_ucx.load(std::memory_order_seq_cst), 0)) sched_yield();
  }
  struct AppScope {
    explicit AppScope(Impl& i) : im(i) {
      im.app_ops.fetch_add(1, std::memory_order_seq_cst);
      im.enter();
    }
    ~AppScope() { im.app_ops.fetch_sub(1, std::memory_order_release); }
    AppScope(const AppScope&) = delete;
    AppScope& operator=(const AppScope&) = delete;
    Impl& im;
  };
  int64_t timeout_ns = 0;
  int64_t spin_ns = 0;

  // The lane of the calling thread's operation: its context's, or the default one.
  UcxLane& lane() {
    UcxLane* l = t_lane;
    return l != nullptr && l->owner == this ? *l : svc;
  }

  [[noreturn]] void fatal(const std::string& msg, int pe = -1) {
    if (p.fatal) p.fatal(pe, msg);
    log_pe(LogLevel::kError, p.rank, "%s", msg.c_str());
    _exit(1);
  }
  std::string who(int pe) const {
    std::string h = size_t(pe) < p.hosts.size() ? p.hosts[size_t(pe)] : "?";
    return "PE " + std::to_string(pe) + " (" + h + ")";
  }
  // At init: the PE and the address it published, which this PE could not reach.
  std::string who_at(int pe) const {
    std::string w = who(pe);
    if (initializing.load(std::memory_order_relaxed) && size_t(pe) < where.size() && !where[size_t(pe)].empty())
      w += " at its UCX address " + where[size_t(pe)];
    return w;
  }

  static void on_ep_error(void* arg, ucp_ep_h, ucs_status_t st) {
    auto* peer = static_cast<UcxPeer*>(arg);
    peer->error.store(int(st));
    Impl* im = peer->lane->owner;
    if (im->closing.load()) return;  // peers close their endpoints at finalize
    // A peer that ended the job itself (global exit, its own error) drops its endpoints
    // too: give the launcher a moment to end this PE before blaming that peer.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    im->fatal("symmem: " + im->who_at(peer->pe) + " failed or became unreachable over UCX: " +
              ucs_status_string(st) +
              (im->initializing.load() ? " (at init: check UCX_NET_DEVICES and that the nodes can reach each other there)"
                                       : " (the PE was killed, crashed, or its node's network is down)"),
              peer->pe);
  }

  Status make_lane(UcxLane& l) {
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
  static bool rma_by_am(ucp_ep_h ep) {
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

  // Creates l's endpoint to pe's service worker and unpacks pe's remote keys on it.
  Status connect(UcxLane& l, int pe) {
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
    q.rkeys.assign(p.regions.size(), nullptr);
    for (size_t k = 0; k < p.regions.size(); ++k) {
      const std::vector<uint8_t>& b = rkey_bufs[size_t(pe)][k];
      if (b.empty()) continue;
      st = ucp_ep_rkey_unpack(h, b.data(), &q.rkeys[k]);
      if (st != UCS_OK) return ucs_error("UCX: unpacking the remote key of " + who(pe), st);
    }
    q.rma_by_am = p.ack_put_bytes > 0 && rma_by_am(h);
    if (q.rma_by_am && &l == &svc && !told_acked && (told_acked = true))  // under svc's connect_mu
      log_pe(LogLevel::kDebug, p.rank, "UCX emulates RMA over active messages: puts after a quiet go acknowledged");
    q.ep.store(h, std::memory_order_release);
    return Status();
  }

  // l's rendezvous endpoint to pe (no error handling: see the header), made on first use.
  ucp_ep_h bulk(UcxLane& l, UcxPeer& q) {
    ucp_ep_h h = q.bulk.load(std::memory_order_acquire);
    if (__builtin_expect(h != nullptr, 1)) return h;
    std::lock_guard<std::mutex> g(l.connect_mu);
    if ((h = q.bulk.load(std::memory_order_acquire)) != nullptr) return h;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(addrs[size_t(q.pe)].data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucs_status_t st = ucp_ep_create(l.worker, &ep, &h);
    if (st != UCS_OK) fatal("symmem: " + ucs_error("UCX: cannot connect to " + who(q.pe), st).message(), q.pe);
    q.bulk.store(h, std::memory_order_release);
    return h;
  }

  // A deposit's send: its protocol (eager or rendezvous) and, for several segments, an iov.
  static ucp_request_param_t deposit_param(uint32_t flags, bool iov) {
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = flags;
    if (iov) {
      rp.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
      rp.datatype = ucp_dt_make_iov();
    }
    return rp;
  }

  // Sends a deposit header and its bytes by rendezvous on q's bulk endpoint. Blocking:
  // returns once the bytes are at the target; otherwise quiet and fence complete it.
  void send_rndv(UcxLane& l, UcxPeer& q, const DepositHdr& h, const void* buf, size_t count, bool iov,
                 bool blocking, const char* what) {
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
  void complete_bulk(UcxLane& l) {
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

  // l's endpoint to pe, connected on first use.
  UcxPeer& peer(UcxLane& l, int pe) {
    UcxPeer& q = l.peers[size_t(pe)];
    if (__builtin_expect(q.ep.load(std::memory_order_acquire) == nullptr, 0)) {
      Status st = connect(l, pe);
      if (!st.ok()) fatal("symmem: " + st.message(), pe);
    }
    return q;
  }

  // Whether [a, a+n) lies in one of this PE's own registered regions.
  bool mine(uint64_t a, uint64_t n) const {
    for (const UcxRegion& r : p.regions) {
      const uint64_t off = a - (r.base0 + uint64_t(p.rank) * r.stride);
      if (r.length && off < r.length && n <= r.length - off) return true;
    }
    return false;
  }

  // A deposit arrived (on the service worker, in whichever thread progresses it). Its
  // addresses are checked against this PE's regions as UCX checks a put's remote key.
  static ucs_status_t on_deposit(void* arg, const void* header, size_t header_len, void* data, size_t len,
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

  // An acknowledged put arrived: its bytes are stored, then the reply goes back to the
  // sending worker (also for a malformed one, which is logged: its sender must not hang).
  static ucs_status_t on_acked_put(void* arg, const void* header, size_t header_len, void* data, size_t len,
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
  static ucs_status_t on_ack(void* arg, const void* header, size_t header_len, void*, size_t,
                             const ucp_am_recv_param_t*) {
    uint32_t n = 0;
    if (header_len == sizeof n) std::memcpy(&n, header, sizeof n);
    static_cast<UcxLane*>(arg)->acks_got.fetch_add(n, std::memory_order_release);
    return UCS_OK;
  }
  static Status set_handler(ucp_worker_h w, unsigned id, ucp_am_recv_callback_t cb, void* arg) {
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
  // Sends an acknowledged put (the caller checked that q's endpoint emulates RMA over its
  // active-message lane). Locally complete on return when blocking, else at quiet, which
  // waits for the reply. A nonblocking one's header lives until it is sent (UCX reads it
  // then).
  struct AckedNbi {
    uint64_t raddr;
    UcxLane* lane;
  };
  static void on_acked_nbi_sent(void* req, ucs_status_t, void* user) {
    auto* a = static_cast<AckedNbi*>(user);
    a->lane->inflight.fetch_sub(1, std::memory_order_relaxed);
    delete a;
    ucp_request_free(req);
  }
  void send_acked_put(UcxLane& l, UcxPeer& q, void* raddr, const void* src, size_t n, bool blocking) {
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
  bool acks_pending(const UcxLane& l) const {
    return l.acks_got.load(std::memory_order_acquire) != l.acks_wanted.load(std::memory_order_relaxed);
  }

  // A rendezvous deposit or put: UCX receives the bytes straight into the segments, then
  // the word (if any) is added, from the completion callback.
  struct RndvRecv {
    ucp_dt_iov_t iov[kMaxSegs];
    uint64_t word;
    uint32_t delta;
  };
  static void rndv_landed(RndvRecv* r) {
    if (r->word) reinterpret_cast<std::atomic<uint32_t>*>(r->word)->fetch_add(r->delta, std::memory_order_seq_cst);
    delete r;
  }
  static void on_rndv_received(void* req, ucs_status_t st, size_t, void* user) {
    auto* r = static_cast<RndvRecv*>(user);
    if (st == UCS_OK) rndv_landed(r);
    else delete r;  // the sender's request fails too, and names this PE
    ucp_request_free(req);
  }
  ucs_status_t receive_rndv(const DepositHdr& h, void* desc, size_t len) {
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

  // One round of progress of lane l; a context's lane also drives the service worker
  // (the PE keeps serving others while it waits on its own context).
  unsigned progress(UcxLane& l) {
    unsigned n = progress_worker(l.worker);
    if (&l != &svc) n += progress_worker(svc.worker);
    return n;
  }

  // The one waiting loop of the UCX route (requests, quiet, the cross-node waits of the
  // runtime): the calling thread drives the worker itself while the progress thread stands
  // aside (app_driving), so a reply is handled by the thread that waits for it, with no
  // wake-up of another thread in between. It polls until spin_ns have passed since it last
  // found work, yielding the core every few empty polls where this host has more PEs
  // than cores (the peer it waits for may need it), then sleeps on the workers' event fds,
  // armed, woken by the next event. Ends the job naming `pe` once the deadline passes.
  template <class Done>
  void drive(UcxLane& l, Done done, const char* what, int pe) {
    if (done()) return;
    app_driving.fetch_add(1, std::memory_order_seq_cst);
    enter();
    const Clock::time_point start = Clock::now();
    Clock::time_point busy = start;  // the last progress that did something
    unsigned idle = 0;
    unsigned worked = 0;
    unsigned fruitless = 0;  // sleeps in a row that did not block
    for (;;) {
      if (progress(l)) {
        idle = 0;
        fruitless = 0;
        if (p.after_progress) p.after_progress();
        if (done()) break;
        busy = Clock::time_point{};  // read the clock at the next empty poll
        // A worker that always has something to do (connection retries) still meets
        // the deadline, and still lets the threads of its CPU run (what it waits for may
        // be theirs to do: UCX's async thread accepts connections).
        if ((++worked & 255) == 0) {
          if (Clock::now() - start > std::chrono::nanoseconds(timeout_ns)) {
            app_driving.fetch_sub(1, std::memory_order_seq_cst);
            timed_out(what, pe);
          }
          nap(kNapFloorNs);
        }
        continue;
      }
      if (done()) break;
      if (++idle % 8) continue;
      const Clock::time_point now = Clock::now();
      if (busy == Clock::time_point{}) busy = now;
      if (now - start > std::chrono::nanoseconds(timeout_ns)) {
        app_driving.fetch_sub(1, std::memory_order_seq_cst);
        timed_out(what, pe);
      }
      // Spinning again after each piece of work: a PE that serves a stream of requests
      // (or waits for a quick reply) keeps polling; an idle one sleeps.
      if (now - busy < std::chrono::nanoseconds(spin_ns)) {
        if (p.spin_yields) sched_yield();
      } else if (sleep_on_efd(l, done)) {
        fruitless = 0;
      } else if (++fruitless >= 2) {
        // It could not sleep twice in a row (another thread sleeps on the fd, UCX keeps
        // reporting events, or the fd is ready with nothing to progress: a connection
        // UCX's async thread has yet to accept). A yield would not do: under SCHED_FIFO
        // it hands the CPU to no lower class, under EEVDF to every other task first.
        // Blocking a while lets whoever has the work run, on any scheduler.
        nap(std::min<long>(kNapCapNs, kNapFloorNs << std::min(fruitless - 2, 5u)));
      }
    }
    app_driving.fetch_sub(1, std::memory_order_seq_cst);
  }

  // Takes lane x's event fd for one sleep: false when another thread sleeps there or
  // events are pending (then the caller progresses again).
  static bool arm(UcxLane& x, bool* busy) {
    bool mine = false;
    if (x.efd < 0 || !x.efd_owner.compare_exchange_strong(mine, true, std::memory_order_acq_rel)) return false;
    if (ucp_worker_arm(x.worker) != UCS_OK) {
      x.efd_owner.store(false, std::memory_order_release);
      *busy = true;
      return false;
    }
    return true;
  }

  // One sleep of a waiting thread, on the armed event fds of its lane and of the service
  // worker (those no other thread sleeps on). Bounded: the condition may also be met by
  // another thread's progress or by an on-node store. False when it did not block: nothing
  // to arm, events pending, or an fd ready at once.
  static constexpr long kSleepNs = 1000000;
  template <class Done>
  bool sleep_on_efd(UcxLane& l, Done& done) {
    bool busy = false;
    pollfd pf[2];
    UcxLane* held[2];
    int n = 0;
    bool blocked = false;
    if (arm(l, &busy)) held[n] = &l, pf[n++] = pollfd{l.efd, POLLIN, 0};
    if (!busy && &l != &svc && arm(svc, &busy)) held[n] = &svc, pf[n++] = pollfd{svc.efd, POLLIN, 0};
    if (n > 0 && !busy) {
      if (done()) {
        blocked = true;
      } else {
        timespec ts{0, kSleepNs};  // Linux leaves the time not slept here
        blocked = ppoll(pf, nfds_t(n), &ts, nullptr) <= 0 || ts.tv_sec != 0 || ts.tv_nsec < kSleepNs - kNapFloorNs;
      }
    }
    for (int i = 0; i < n; ++i) held[i]->efd_owner.store(false, std::memory_order_release);
    return blocked;
  }
  static constexpr long kNapFloorNs = 20000, kNapCapNs = 1000000;
  static void nap(long ns) {
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
  }

  [[noreturn]] void timed_out(const char* what, int pe) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " did not complete within %.1f s (%s)", double(timeout_ns) / 1e9,
                  initializing.load() ? "SYMMEM_INIT_TIMEOUT" : "SYMMEM_OP_TIMEOUT");
    fatal(std::string("symmem: ") + what + (pe >= 0 ? " to " + who_at(pe) : std::string(" (all peers)")) + buf +
              (initializing.load() ? ": unreachable from here (check UCX_NET_DEVICES on both nodes), or not started"
                                   : ": the peer is hung (stopped, or not scheduled) or its node unreachable"),
          pe);
  }

  // Waits for a request (or an immediate result) with progress and the deadline.
  void wait(UcxLane& l, ucs_status_ptr_t req, const char* what, int pe) {
    if (req == nullptr) return;
    if (UCS_PTR_IS_ERR(req))
      fatal(std::string("symmem: ") + what + " to " + who(pe) + " failed: " + ucs_status_string(UCS_PTR_STATUS(req)), pe);
    ucs_status_t st = ucp_request_check_status(req);
    if (st == UCS_INPROGRESS)
      drive(l, [&] { return (st = ucp_request_check_status(req)) != UCS_INPROGRESS; }, what, pe);
    ucp_request_free(req);
    if (st != UCS_OK)
      fatal(std::string("symmem: ") + what + (pe >= 0 ? " to " + who(pe) : std::string()) + " failed: " +
                ucs_status_string(st),
            pe);
  }

  // A nonblocking operation was posted: an error ends the job; a request is counted while
  // it is pending locally and released by its callback; past kMaxInflight the caller
  // waits for some to complete. Completion is quiet's (worker flush).
  void posted(UcxLane& l, ucs_status_ptr_t req, const char* what, int pe, bool track = true) {
    if (track) l.dirty.store(true, std::memory_order_relaxed);
    if (req == nullptr) return;
    if (UCS_PTR_IS_ERR(req)) wait(l, req, what, pe);
    // The callback runs once, maybe already (another thread's progress): req is not ours.
    if (l.inflight.fetch_add(1, std::memory_order_relaxed) + 1 > kMaxInflight)
      drive(l, [&] { return l.inflight.load(std::memory_order_relaxed) <= kMaxInflight / 2; }, what, pe);
  }
  static void nbi_param(UcxLane& l, ucp_request_param_t* rp) {
    rp->op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp->cb.send = &on_nbi_done;
    rp->user_data = &l;
  }

  // Closes a lane's endpoints (flushing them first unless forced or the peer failed) and
  // frees their remote keys, progressing meanwhile (bounded).
  void close_endpoints(UcxLane& l, bool force) {
    for (size_t qi = 0; qi < npeers && l.peers; ++qi) {
      UcxPeer& q = l.peers[qi];
      for (ucp_rkey_h h : q.rkeys)
        if (h) ucp_rkey_destroy(h);
      q.rkeys.clear();
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

  // The progress thread: serves remote operations whenever no application thread drives
  // the worker (drive()), sleeping on the worker's event fd in between. While one does, it
  // stays off the worker and off the CPU, looking again after 1 ms, then 2, 4, and every
  // 8 ms while the application keeps driving (a PE that leaves the library to compute is
  // served again within 8 ms, then at every event). Each look costs the PE's core a
  // wake-up: on this VM an unrelated thread sleeping 1 ms in a loop on each core slowed
  // 8-byte gets across emulated nodes from 11.4 to 12.5 us, and looking every 1 ms cost
  // gets 12.8 us (median of 12 alternating runs) where the backoff gives 11.6 and no thread
  // (SYMMEM_UCX_PROGRESS=inline) 11.1. It sleeps in ppoll, not in an epoll set of its own:
  // a fd in an epoll set stays registered while the thread naps, and every packet that
  // reaches the worker then also runs that set's wake-up callback in the sender's softirq,
  // a locked, irq-saving path (a broadcasting root's samples there: 8.8 -> 7.0 %; 8-byte
  // gets 11.5-11.9 -> 11.1-11.3 us).
  static constexpr long kNapNs = 1000000, kNapMaxNs = 8000000;
  static constexpr long kLookNs = 50000, kLookMaxNs = 800000;
  // One UCX call of the progress thread, marked (thread_in_ucx) and made only while no
  // application thread is inside: its result, or -1 when one is.
  template <class Call>
  int serve(Call call) {
    thread_in_ucx.store(true, std::memory_order_seq_cst);
    int r = -1;
    if (app_driving.load(std::memory_order_seq_cst) + app_ops.load(std::memory_order_seq_cst) == 0) r = int(call());
    thread_in_ucx.store(false, std::memory_order_release);
    return r;
  }
  void progress_loop() {
    const int efd = svc.efd;
    pollfd pf[2] = {{stop_fd, POLLIN, 0}, {efd, POLLIN, 0}};
    const timespec bound{0, efd >= 0 ? 20000000 : 1000000};
    auto inside = [this] {
      return app_driving.load(std::memory_order_seq_cst) + app_ops.load(std::memory_order_seq_cst) > 0;
    };
    timespec pause{0, 0};
    long nap = kNapNs;
    long look = kLookNs;
    while (!stop.load(std::memory_order_acquire)) {
      if (app_driving.load(std::memory_order_seq_cst) > 0) {
        pause.tv_nsec = nap;
        nanosleep(&pause, nullptr);
        nap = std::min(kNapMaxNs, nap * 2);
        continue;
      }
      nap = kNapNs;
      // Stops as soon as an application thread is inside: while a stream of replies keeps
      // this loop busy it would otherwise take every other one from the thread that waits
      // for it, both spinning on UCX's worker lock (a second busy thread per PE).
      unsigned n = 0;
      for (int r; (r = serve([this] { return progress_worker(svc.worker); })) > 0;) ++n;
      if (n && p.after_progress) p.after_progress();
      // A thread in a short call holds or soon takes the worker lock (arming needs it too:
      // 14% of a leader's samples spun there during 1 MiB reductions): look again shortly,
      // the PE is served soon after it leaves the library. Each look wakes this thread on
      // the PE's CPU, so they space out while the calls go on (a broadcasting root is in a
      // call at most looks: looking every 50 us, its thread preempted it ~2000 times a
      // second; 8-byte broadcasts one PE per node 0.92x, median of 57 alternating pairs).
      if (inside()) {
        pause.tv_nsec = look;
        nanosleep(&pause, nullptr);
        look = std::min(kLookMaxNs, look * 2);
        continue;
      }
      look = kLookNs;
      if (efd >= 0) {
        const int armed = serve([this] { return ucp_worker_arm(svc.worker) == UCS_ERR_BUSY ? 1 : 0; });
        if (armed != 0) continue;  // busy (progress again), or an application thread came in
      }
      // Bounded: a wake-up consumed by another thread's progress costs at most this.
      (void)ppoll(pf, efd >= 0 ? 2 : 1, &bound, nullptr);
    }
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
  im.spin_ns = int64_t(params.spin_us * 1e3);
  im.npeers = size_t(params.npes);
  int nremote = 0;
  for (uint8_t r : params.remote) nremote += r;

  // Over TCP UCX moves a put or get in segments of UCX_TCP_TX/RX_SEG_SIZE, each one
  // acknowledged by the target (8 KiB by default); 64 KiB ones move large transfers
  // several times faster. Receive buffers of 128 KiB hold a collective's 60 KiB deposit
  // whole wherever it starts in one (in 64 KiB ones it often straddles two: 2 x 2, 1 MiB
  // sum 681-1086 us run by run, 680-715 with 128 KiB). Only where the user has not chosen
  // (setenv: UCT reads its transports' settings from the environment, not from
  // ucp_config_modify).
  (void)setenv("UCX_TCP_TX_SEG_SIZE", "64k", 0);
  (void)setenv("UCX_TCP_RX_SEG_SIZE", "128k", 0);
  // UCX 1.13 connects its TCP endpoints with a blocking connect() by default: toward an
  // address that routes but never answers, ucp_ep_create then blocked for the kernel's
  // SYN retries (~2 min) where no deadline of ours could name the peer. Nonblocking, the
  // connection is one more pending piece of the warm-up, bounded by SYMMEM_INIT_TIMEOUT.
  (void)setenv("UCX_TCP_CONN_NB", "y", 0);
  ucp_config_t* cfg = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg);
  if (st != UCS_OK) return ucs_error("UCX: reading its configuration", st);
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
  if (st != UCS_OK) return ucs_error("UCX: ucp_init", st);

  SYMMEM_RETURN_IF_ERROR(im.make_lane(im.svc));
  SYMMEM_RETURN_IF_ERROR(Impl::set_handler(im.svc.worker, kAmDeposit, &Impl::on_deposit, &im));
  SYMMEM_RETURN_IF_ERROR(Impl::set_handler(im.svc.worker, kAmAckedPut, &Impl::on_acked_put, &im));
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
  wa.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
  st = ucp_worker_query(im.svc.worker, &wa);
  if (st != UCS_OK) return ucs_error("UCX: ucp_worker_query", st);
  if (wa.thread_mode != UCS_THREAD_MODE_MULTI)
    return Status(Errc::kState, "UCX: this libucp gives no multi-threaded worker (built without --enable-mt)");
  std::string mine = hex(wa.address, wa.address_length);
  ucp_worker_release_address(im.svc.worker, wa.address);
  if (im.svc.efd < 0) log_pe(LogLevel::kWarn, params.rank, "UCX: no event fd; waits and the progress thread poll");

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
  mine += " " + device_addresses();

  if (params.progress != "inline") {
    im.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    im.thread = std::thread([&im] { im.progress_loop(); });
  }

  SYMMEM_ASSIGN_OR_RETURN(auto all, store_allgather(store, params.tag + "/addr", params.rank, params.npes, mine,
                                                    params.timeout_s));
  im.addrs.resize(im.npeers);
  im.rkey_bufs.resize(im.npeers);
  im.where.resize(im.npeers);
  for (int pe = 0; pe < params.npes; ++pe) {
    if (!params.remote[size_t(pe)]) continue;
    std::istringstream in(all[size_t(pe)]);
    std::string addr_hex;
    in >> addr_hex;
    if (!unhex(addr_hex, &im.addrs[size_t(pe)]))
      return Status(Errc::kState, "UCX: malformed worker address from " + im.who(pe));
    im.rkey_bufs[size_t(pe)].resize(params.regions.size());
    for (size_t k = 0; k < params.regions.size(); ++k) {
      std::string rk;
      in >> rk;
      if (rk != "-" && !unhex(rk, &im.rkey_bufs[size_t(pe)][k]))
        return Status(Errc::kState, "UCX: malformed remote key from " + im.who(pe));
    }
    in >> im.where[size_t(pe)];
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

void UcxTransport::put(void* raddr, const void* src, size_t n, int pe, bool blocking) {
  Impl& im = *impl_;
  Impl::AppScope inside(im);
  UcxLane& l = im.lane();
  if (++t_ops % Impl::kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
  UcxPeer& q = im.peer(l, pe);
  if (n >= im.p.rndv_bytes) {
    DepositHdr h{};
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
  if (++t_ops % Impl::kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
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
  if (++t_ops % Impl::kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
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
  if (++t_ops % Impl::kOpsPerProgress == 0 && im.progress(l) && im.p.after_progress) im.p.after_progress();
  if (nsegs < 0 || nsegs > kMaxSegs) im.fatal("symmem: a deposit of " + std::to_string(nsegs) + " segments");
  UcxPeer& q = im.peer(l, pe);
  DepositHdr h{};
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
  ucs_status_ptr_t req = ucp_am_send_nbx(q.ep.load(std::memory_order_relaxed), kAmDeposit, &h, sizeof h,
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

void UcxTransport::polling(bool on) {
  if (on) {
    impl_->app_driving.fetch_add(1, std::memory_order_seq_cst);
    impl_->enter();
  } else {
    impl_->app_driving.fetch_sub(1, std::memory_order_seq_cst);
  }
}

unsigned UcxTransport::progress() {
  Impl::AppScope inside(*impl_);
  return impl_->progress(impl_->lane());
}

void UcxTransport::drive(bool (*done)(void*), void* arg, int pe, const char* what) {
  impl_->drive(impl_->lane(), [&] { return done(arg); }, what, pe);
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

UcxLane* UcxTransport::swap_lane(UcxLane* l) {
  UcxLane* prev = t_lane;
  t_lane = l;
  return prev;
}

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
  for (auto& l : im.lanes) im.close_endpoints(*l, true);
  im.close_endpoints(im.svc, true);
  for (ucp_mem_h mh : im.memh)
    if (mh) ucp_mem_unmap(im.ctx, mh);
  for (auto& l : im.lanes)
    if (l->worker) ucp_worker_destroy(l->worker);
  im.lanes.clear();
  if (im.svc.worker) ucp_worker_destroy(im.svc.worker);
  if (im.ctx) ucp_cleanup(im.ctx);
  if (im.stop_fd >= 0) ::close(im.stop_fd);
}

}  // namespace symmem
