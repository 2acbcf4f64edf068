// The off-node route: PEs on other nodes are reached through UCX (UCP RMA and atomics).
//
// One UCP context per runtime instance; a service worker (thread mode MULTI: the progress
// thread and the application's threads drive it) whose address every peer connects to,
// which serves remote operations and carries the default context's; one more worker per
// context (a lane), so that a context's quiet completes its own operations only;
// endpoints to every off-node PE created at init and warmed up (a context's on first use), the symmetric heap, the metadata region and the static data
// registered once (sparse: UCP_MEM_MAP_NONBLOCK, nothing is committed or pinned up front)
// and their packed remote keys exchanged over the bootstrap store.
//
// Progress is guaranteed: over TCP (and whenever UCX emulates RMA) a put, get or atomic is
// performed by the *target* inside ucp_worker_progress, so a progress thread sleeps on the
// worker's event fd and serves remote operations while the PE computes, sleeps or waits;
// every blocking call here also drives the worker itself.
//
// Atomics run in UCX_ATOMIC_MODE=cpu on every PE (set here, not left to the environment):
// a remote atomic is then a CPU atomic on the target, coherent with the on-node PEs'
// __atomic_* on the same word.
//
// Failures: endpoints use UCP_ERR_HANDLING_MODE_PEER; an endpoint error (peer killed,
// connection reset) ends the job with a line naming the PE and its host; every blocking
// operation has a deadline (SYMMEM_OP_TIMEOUT) and names the PE it waited for.
//
// Large transfers (SYMMEM_UCX_RNDV_BYTES and up: puts and deposits) go as rendezvous
// active messages on a second endpoint per peer, made on first use without error handling:
// over TCP, UCX 1.13 gives an endpoint in PEER mode no zero-copy lane, so its rendezvous
// copies through bounce buffers at both ends. Without it the bytes go from the source by
// a zero-copy send and the target receives them straight into their place. A peer that
// fails during one is still named: by the job's liveness channel, by an error status of
// the request, or by the operation's deadline.
//
// Where UCX emulates RMA over the endpoint's active-message lane (TCP: no rma or amo
// lane), a small put that is its context's first put since a quiet goes as one
// active message that the target acknowledges (SYMMEM_UCX_ACK_PUT_BYTES). The next quiet
// waits for that reply: put + quiet is one round trip, where UCX's put and endpoint
// flush take three messages. Later puts use UCX's put; the lane orders both.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "common/status.hpp"

namespace symmem {

// A region kind registered on every PE at the global layout: PE p's copy starts at
// base0 + p*stride in every process (heap, metadata, static data).
struct UcxRegion {
  uintptr_t base0 = 0;
  uint64_t stride = 0;
  uint64_t length = 0;
};

struct UcxParams {
  int rank = 0, npes = 1;
  std::vector<uint8_t> remote;      // remote[p]: PE p is reached through UCX
  std::vector<UcxRegion> regions;   // registered for RMA (length 0: skipped)
  std::vector<std::string> hosts;   // per PE, for messages ("host:pid")
  std::string progress = "thread";  // SYMMEM_UCX_PROGRESS: thread or inline
  double timeout_s = 60;            // every blocking operation
  double init_timeout_s = 60;       // the warm-up at init (an unreachable peer is named then)
  double spin_us = 200;             // a wait polls this long after its last work, then sleeps
  bool spin_yields = true;          // the polls hand the core over now and then (more PEs than cores here)
  size_t rndv_bytes = SIZE_MAX;     // puts and deposits from this size go by rendezvous (bulk endpoints)
  size_t ack_put_bytes = 0;         // a put up to this size right after a quiet goes acknowledged
  std::string tag;                  // store key prefix, unique per init
  // Ends the job with one line naming `pe`, the peer that failed (-1: none); never returns.
  std::function<void(int pe, const std::string&)> fatal;
  // Called by the progress thread after it served remote operations (wakes local sleepers).
  std::function<void()> after_progress;
};

struct UcxLane;  // one context's UCX worker and endpoints (ucx_impl.hpp)

enum class UcxAmo : int { kAdd, kAnd, kOr, kXor, kSwap, kCswap, kFetch };

// One piece of a deposit: n bytes from src to raddr on the target.
struct UcxSeg {
  void* raddr;
  const void* src;
  size_t n;
};

class UcxTransport {
 public:
  // Collective over `store` (every PE calls, including those with no remote peer, so the
  // exchange and warm-up are one barrier for all).
  static Result<std::unique_ptr<UcxTransport>> create(const UcxParams& p, Store& store);
  ~UcxTransport();
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  // `raddr` is the address in PE pe's registered regions (the global layout's address).
  // Blocking put returns when src may be reused; remote completion is quiet()'s job.
  void put(void* raddr, const void* src, size_t n, int pe, bool blocking);
  // Blocking get returns with the data in dst; nbi completes at quiet().
  void get(void* dst, const void* raddr, size_t n, int pe, bool blocking);
  // A 4- or 8-byte atomic. Fetching forms (kSwap, kCswap, kFetch or fetch=true) return
  // the old value; posted ones return 0 and complete at quiet().
  // `track` false: a posted atomic that no quiet needs to complete (a sync's arrival,
  // observed by its target).
  uint64_t amo(UcxAmo op, void* raddr, uint64_t value, uint64_t cond, size_t size, int pe, bool fetch,
               bool track = true);
  // A deposit: one active message that copies the segments (at most kMaxSegs) into PE pe's
  // registered regions and then adds `delta` to its 32-bit `word`, in that order, on the
  // target's CPU (a reader that sees the add sees the bytes). Where UCX emulates RMA (TCP,
  // and every atomic in UCX_ATOMIC_MODE=cpu) a put and an atomic are one message each and
  // each is answered by a completion message; a deposit is one message, unanswered. For
  // the collectives' arrivals, which their targets observe: no quiet completes it. Locally
  // complete on return (the sources may change). From rndv_bytes in all, a rendezvous on
  // the bulk endpoint, complete when it returns.
  static constexpr int kMaxSegs = 4;
  void deposit(const UcxSeg* segs, int nsegs, std::atomic<uint32_t>* word, uint32_t delta, int pe);
  // Orders earlier puts / atomics to each PE before later ones (ucp_worker_fence).
  void fence();
  // Completes every outstanding operation of the current lane (its endpoints' flush) with
  // a deadline.
  void quiet();
  // quiet() on every lane: the default context's and every context's (barriers complete
  // the operations of all contexts, as on the node, where every operation is complete when
  // it returns).
  void quiet_all();
  // One round of the worker's progress (waits call it).
  unsigned progress();
  // A thread that polls progress() in a loop (a wait on this PE's memory) keeps the
  // progress thread off the worker and off the CPU meanwhile (true), and hands serving
  // back to it when it stops (false), waking it (hand_over) before it sleeps or after a
  // long wait; a short wait leaves it parked. Counted: calls nest across threads.
  void polling(bool on, bool hand_over = false);
  // Blocks until done(arg) holds, the calling thread driving the worker (a wait whose
  // condition UCX progress meets: a remote atomic or put on this PE's memory). Ends the
  // job naming `pe` once SYMMEM_OP_TIMEOUT passes.
  void drive(bool (*done)(void*), void* arg, int pe, const char* what);
  bool remote(int pe) const { return remote_[size_t(pe)] != 0; }
  // A UCX worker of its own for a context (null when UCX cannot make one: the context then
  // shares the default one). Thread-safe; lanes live until close().
  UcxLane* lane_create();
  // The calling thread's operations go through lane `l` (null: the default context's)
  // until the next call; returns the previous one. The operations above, quiet and fence
  // act on the current lane.
  static UcxLane* swap_lane(UcxLane* l);
  // Collective: flushes, closes the endpoints and stops the progress thread. After it
  // peers' endpoint errors are expected and ignored.
  Status close(Store& store);
  // Human-readable description of the transports UCX would use (symmem-info).
  static std::string describe();
  // The UCX transports and devices a context made with this environment would use, in
  // UCX's own words (ucp_context_print_info); false when UCX cannot start.
  static bool print_resources(FILE* out);

  struct Impl;

 private:
  UcxTransport() = default;
  std::unique_ptr<Impl> impl_;
  std::vector<uint8_t> remote_;
};

}  // namespace symmem
