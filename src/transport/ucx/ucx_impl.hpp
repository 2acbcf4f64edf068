// The UCX route's private header (ucx_transport.hpp has the design and its reasons): the
// state of one UcxTransport (Impl), its lanes and peers, the active messages' wire format,
// and the few inline helpers more than one file calls. Only src/transport/ucx/ includes it.
//
//   ucx_connect.cpp    context, workers (lanes), endpoints, the warm-up at init, close
//   ucx_keys.cpp       memory registration, packed remote keys, what a PE publishes
//   ucx_progress.hpp   how a waiting thread drives the worker and sleeps on its event fd
//   ucx_progress.cpp   the progress thread
//   ucx_ops.cpp        put, get, atomics, deposits, fence, quiet on the calling thread's lane
//   ucx_am.cpp         the target's side of the active messages (deposits, acknowledged
//                      puts, rendezvous receives)
//   ucx_failure.cpp    endpoint errors, deadlines, and the messages that name a peer
#pragma once

#include <sched.h>

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/sanitizer.hpp"
#include "transport/ucx/ucx_transport.hpp"

namespace symmem {

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

struct UcxTransport::Impl {
  using Clock = std::chrono::steady_clock;

  // --- Active messages (ucx_ops.cpp sends them, ucx_am.cpp receives them).
  // A deposit (UcxTransport::deposit, and every rendezvous transfer): this header, then
  // the segments' bytes back to back.
  static constexpr unsigned kAmDeposit = 1;
  // An acknowledged put (header: the target address; then the bytes) and its reply (header:
  // how many puts it acknowledges), which lands on the sending lane's worker.
  static constexpr unsigned kAmAckedPut = 2;
  static constexpr unsigned kAmAck = 3;
  struct DepositHdr {
    uint64_t word;
    uint32_t delta;
    uint32_t nsegs;
    uint64_t raddr[kMaxSegs];
    uint64_t len[kMaxSegs];
  };

  // --- State.
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
  int wake_fd = -1;       // stops the progress thread (with `stop`) or wakes it from its park
  std::atomic<bool> parked{false};  // the progress thread parks while a thread waits long
  int64_t timeout_ns = 0;
  int64_t spin_ns = 0;

  // --- Who drives the worker. Application threads inside drive() (app_driving: they poll
  // the worker until their condition holds, then sleep on its event fd) and inside a short
  // UCX call of this transport (app_ops: an operation, one progress round). The progress
  // thread stays off the worker meanwhile: UCX's worker lock is a spinlock, and a progress
  // thread that reached it while a thread issued operations and polled for their
  // completions would spin there for the whole stream, on a core the PEs need.
  std::atomic<int> app_driving{0};
  std::atomic<int> app_ops{0};
  // Set by the progress thread around each of its UCX calls. A thread that enters UCX
  // while it is set hands its CPU over until it clears (enter()): where the two share a
  // CPU, the progress thread may have been preempted inside UCX holding the worker's
  // spinlock, which the entering thread would otherwise spin on for its time slice.
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

  // Every progress call: it may serve remote PEs' operations on this PE's memory.
  static unsigned progress_worker(ucp_worker_h w) {
    RemoteAccessScope remote;
    return ucp_worker_progress(w);
  }
  // One round of progress of lane l; a context's lane also drives the service worker
  // (the PE keeps serving others while it waits on its own context).
  unsigned progress(UcxLane& l) {
    unsigned n = progress_worker(l.worker);
    if (&l != &svc) n += progress_worker(svc.worker);
    return n;
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

  // --- ucx_connect.cpp: workers and endpoints.
  Status make_lane(UcxLane& l);
  static bool rma_by_am(ucp_ep_h ep);
  // Creates l's endpoint to pe's service worker and unpacks pe's remote keys on it.
  Status connect(UcxLane& l, int pe);
  // Makes l's rendezvous endpoint to q's PE (bulk() below is the fast path).
  ucp_ep_h connect_bulk(UcxLane& l, UcxPeer& q);
  void close_endpoints(UcxLane& l, bool force);

  // --- ucx_keys.cpp: registration and remote keys.
  static std::string hex(const void* p, size_t n);
  // Registers the regions (memh) and appends their packed remote keys to `line`.
  Status register_regions(std::string* line);
  // Reads the line PE pe published (address, keys, devices) into addrs, rkey_bufs, where.
  Status read_publication(int pe, const std::string& line);
  Status unpack_rkeys(UcxPeer& q, ucp_ep_h ep);
  static void destroy_rkeys(UcxPeer& q);
  void unmap_regions();

  // --- ucx_progress.hpp: a thread that waits drives the worker itself.
  template <class Done>
  void drive(UcxLane& l, Done done, const char* what, int pe);
  template <class Done>
  bool sleep_on_efd(UcxLane& l, Done& done);
  static inline bool arm(UcxLane& x, bool* busy);
  static inline void nap(long ns);
  static constexpr long kSleepNs = 1000000;
  static constexpr long kNapFloorNs = 20000, kNapCapNs = 1000000;
  static constexpr long kWorkNapEveryNs = 100000000;  // drive(): a nap per 100 ms of work that does not end the wait
  static constexpr long kLongWaitNs = 1000000;  // drive() wakes a parked progress thread when it waited this long

  // --- ucx_progress.cpp: the progress thread.
  void start_progress_thread();
  void stop_progress_thread();
  void progress_loop();
  void wake_progress();
  template <class Call>
  int serve(Call call);

  // --- ucx_ops.cpp: the data path's helpers, inline there (the only file that calls them).
  inline UcxLane& lane();
  inline UcxPeer& peer(UcxLane& l, int pe);
  inline ucp_ep_h bulk(UcxLane& l, UcxPeer& q);
  inline ucp_rkey_h rkey_for(UcxPeer& q, uintptr_t a, size_t n);
  inline void wait(UcxLane& l, ucs_status_ptr_t req, const char* what, int pe);
  inline void posted(UcxLane& l, ucs_status_ptr_t req, const char* what, int pe, bool track = true);
  static inline void nbi_param(UcxLane& l, ucp_request_param_t* rp);
  inline void send_rndv(UcxLane& l, UcxPeer& q, const DepositHdr& h, const void* buf, size_t count, bool iov,
                        bool blocking, const char* what);
  inline void complete_bulk(UcxLane& l);
  inline void send_acked_put(UcxLane& l, UcxPeer& q, void* raddr, const void* src, size_t n, bool blocking);
  bool acks_pending(const UcxLane& l) const {
    return l.acks_got.load(std::memory_order_acquire) != l.acks_wanted.load(std::memory_order_relaxed);
  }

  // --- ucx_am.cpp: the target's side of the active messages.
  static Status set_handler(ucp_worker_h w, unsigned id, ucp_am_recv_callback_t cb, void* arg);
  static ucs_status_t on_deposit(void* arg, const void* header, size_t header_len, void* data, size_t len,
                                 const ucp_am_recv_param_t* param);
  static ucs_status_t on_acked_put(void* arg, const void* header, size_t header_len, void* data, size_t len,
                                   const ucp_am_recv_param_t* param);
  static ucs_status_t on_ack(void* arg, const void* header, size_t header_len, void* data, size_t len,
                             const ucp_am_recv_param_t* param);
  inline ucs_status_t receive_rndv(const DepositHdr& h, void* desc, size_t len);  // inline there
  inline bool mine(uint64_t a, uint64_t n) const;  // inline there

  // --- ucx_failure.cpp: errors name the peer.
  [[noreturn]] void fatal(const std::string& msg, int pe = -1);
  std::string who(int pe) const;
  std::string who_at(int pe) const;
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t st);
  [[noreturn]] void timed_out(const char* what, int pe);
  // rkey_for's miss, out of line so that the lookup stays small enough to inline.
  [[noreturn]] void no_region(uintptr_t a, size_t n, int pe);
  static Status ucs_error(const std::string& what, ucs_status_t st);
  static std::string device_addresses();
};

}  // namespace symmem
