// Runtime::Impl — the engine behind the C++ and C APIs. The data-path calls are inline
// here so the C layer (same library) pays one address check and a memcpy for a put.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "common/config.hpp"
#include "common/cpu.hpp"
#include "common/status.hpp"
#include "common/wait.hpp"
#include "device/device_heap.hpp"
#include "device/device_ops.hpp"
#include "heap/allocator.hpp"
#include "heap/static_data.hpp"
#include "heap/symmetric_heap.hpp"
#include "runtime/dfx.hpp"
#include "runtime/liveness.hpp"
#include "runtime/meta.hpp"
#include "symmem/symmem.hpp"
#include "transport/route.hpp"
#include "transport/shm/shm_ops.hpp"
#include "transport/ucx/ucx_transport.hpp"

#define SYMMEM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SYMMEM_LIKELY(x) __builtin_expect(!!(x), 1)

namespace symmem {

// What a bad argument does: the C++ API throws, the C API reports and ends the job.
enum class ErrorMode { kThrow, kExitJob };

struct CtxPool;  // runtime/ctx.hpp

enum class AllocOp : uint32_t { kMalloc = 1, kCalloc, kAlign, kRealloc, kFree, kDevMalloc, kDevFree };
// The call an AllocRecord's op stands for, in mismatch reports.
const char* alloc_op_name_of(uint32_t op);

// Team state of an instance; defined and deleted by the team layer (src/team).
class TeamRegistry;

struct Runtime::Impl {
  Impl(const InitOptions& opts, ErrorMode mode);
  // The init sequence (runtime/init.cpp): join the job, check that PEs agree, map the heap.
  Impl(const InitAttr& attr, ErrorMode mode);
  ~Impl();

  // ---- data path ----
  // Address of `pe`'s copy of the symmetric range [addr, addr+n); reports a bad PE or a
  // range outside the symmetric heap on behalf of `call`.
  char* translate(const char* call, const void* addr, size_t n, int pe) {
    if (SYMMEM_UNLIKELY(static_cast<unsigned>(pe) >= static_cast<unsigned>(npes_))) bad_pe(call, pe);
    uintptr_t off = reinterpret_cast<uintptr_t>(addr) - my_heap_;
    if (SYMMEM_UNLIKELY(off >= heap_size_ || n > heap_size_ - off)) return translate_static(call, addr, n, pe);
    char* r = const_cast<char*>(static_cast<const char*>(addr)) + (int64_t(pe) - rank_) * int64_t(heap_size_);
    if (r == nullptr) __builtin_unreachable();  // a heap address: callers' device test (`!r`) folds away here
    return r;
  }
  // Second chance for an address outside the heap: a global or static variable of the
  // executable (docs/static-data.md). PE p's copy is at static_copies_ + p*S. A second heap
  // kind (the device heap, transport/route.hpp) is looked up here, after the statics.
  char* translate_static(const char* call, const void* addr, size_t n, int pe) {
    uintptr_t off = reinterpret_cast<uintptr_t>(addr) - static_start_;
    if (off < static_size_ && n <= static_size_ - off)
      return reinterpret_cast<char*>(static_copies_ + uint64_t(pe) * static_size_ + off);
    if (in_device_heap(addr)) return translate_device(call, addr, n, pe);
    if (n == 0) return nullptr;
    bad_range(call, addr, n, pe);
  }
  // A symmetric address as every PE writes it (its copy on PE 0; 0 for NULL), and PE pe's
  // copy of such an address: for a collect whose members that contribute nothing pass NULL.
  uint64_t sym_canonical(const void* addr) {
    return addr ? reinterpret_cast<uint64_t>(translate("collect", addr, 0, 0)) : 0;
  }
  char* sym_copy(uint64_t c0, int pe) const {
    const uint64_t heap0 = my_heap_ - uint64_t(rank_) * heap_size_;
    return reinterpret_cast<char*>(c0 + uint64_t(pe) * (c0 - heap0 < heap_size_ ? heap_size_ : static_size_));
  }
  bool in_static(const void* addr) const {
    return reinterpret_cast<uintptr_t>(addr) - static_start_ < static_size_;
  }
  // The route of `pe` (checked by translate first): on-node PEs are inline loads and
  // stores; the others one predictable branch away, through the UCX transport. This branch
  // is the dispatch point of every route but kShm (transport/route.hpp).
  bool off_node(int pe) const { return SYMMEM_UNLIKELY(route_of_[pe] != Route::kShm); }
  // A one-sided write, for the hang report's candidate writers (Dfx::note_write): always on
  // the UCX route (where it costs nothing next to the operation), on the node only when a
  // DFX tool sees the call (`seen`: its OpScope's on()), so that with the tools off an
  // operation on the node writes nothing of the page (a record would double an atomic's cost).
  void dfx_write(dfx::Op op, const char* call, const void* addr, size_t n, int pe, bool seen) {
#if SYMMEM_DFX_HOOKS
    if (SYMMEM_UNLIKELY(seen) || off_node(pe)) dfx_.note_write(op, call, addr, n, pe, off_node(pe));
#else
    (void)op, (void)call, (void)addr, (void)n, (void)pe, (void)seen;
#endif
  }
  // A quiet of the UCX route (every quiet and barrier calls it): the page's in-flight count.
  void ucx_quiet(bool all) {
#if SYMMEM_DFX_HOOKS
    const uint64_t mark = dfx_.ucx_mark();
#endif
    if (all) ucx_->quiet_all();
    else ucx_->quiet();
#if SYMMEM_DFX_HOOKS
    dfx_.ucx_quieted(mark);
#endif
  }
  // With every tool off a put is the translation and the copy alone; the tools' path is a
  // separate function (as get's below), so that no OpScope sits on the copy's frame.
  void put(const char* call, void* dest, const void* src, size_t n, int pe) {
    if (SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0))
      return put_seen(__builtin_return_address(0), dfx::Op::kPut, call, dest, src, n, pe);
    put_plain(dfx::Op::kPut, call, dest, src, n, pe, false);
  }
  void put_nbi(const char* call, void* dest, const void* src, size_t n, int pe) {
    if (SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0))
      return put_seen(__builtin_return_address(0), dfx::Op::kPutNbi, call, dest, src, n, pe);
    put_plain(dfx::Op::kPutNbi, call, dest, src, n, pe, false);
  }
  [[gnu::always_inline]] void put_plain(dfx::Op op, const char* call, void* dest, const void* src, size_t n, int pe,
                                        bool seen) {
    char* r = translate(call, dest, n, pe);
    if (SYMMEM_UNLIKELY(!r)) return device_put_now(call, dest, src, n, pe);  // device memory, or n == 0
    dfx_write(op, call, dest, n, pe, seen);
    if (off_node(pe)) return ucx_put(r, src, n, pe, op == dfx::Op::kPut);
    if (n) shm::put(r, src, n);
  }
  [[gnu::noinline]] void put_seen(void* site, dfx::Op op, const char* call, void* dest, const void* src, size_t n,
                                  int pe) {
    dfx::OpScope dfx_op_(site, dfx_, op, call, dest, n, pe, src);
    put_plain(op, call, dest, src, n, pe, true);
  }
  // A get has no page write to make, so with every tool off it is the copy alone: the tools'
  // path is a separate function, so that the copy's frame keeps nothing live across a call
  // (no callee-saved registers to save, no OpScope on the stack).
  void get(const char* call, void* dest, const void* src, size_t n, int pe) {
    if (SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0))
      return get_seen(__builtin_return_address(0), call, dest, src, n, pe);
    get_plain(call, dest, src, n, pe);
  }
  [[gnu::noinline]] void get_plain(const char* call, void* dest, const void* src, size_t n, int pe) {
    char* r = translate(call, src, n, pe);
    if (SYMMEM_UNLIKELY(!r)) return device_get_now(call, dest, src, n, pe);
    if (off_node(pe)) return ucx_get(dest, r, n, pe, true);
    if (n) shm::get(dest, r, n);
  }
  [[gnu::noinline]] void get_seen(void* site, const char* call, void* dest, const void* src, size_t n, int pe) {
    dfx::OpScope dfx_op_(site, dfx_, dfx::Op::kGet, call, src, n, pe, dest);
    get_plain(call, dest, src, n, pe);
  }
  void get_nbi(const char* call, void* dest, const void* src, size_t n, int pe) {
    dfx::OpScope dfx_op_(dfx_, dfx::Op::kGetNbi, call, src, n, pe, dest);
    char* r = translate(call, src, n, pe);
    if (SYMMEM_UNLIKELY(!r)) return device_get_now(call, dest, src, n, pe);
    // Under the race check it completes before it returns, as on the node, so that a store
    // into the destination before quiet shows on its canary.
    if (off_node(pe)) return ucx_get(dest, r, n, pe, dfx_op_.on() && (dfx_.tools_ & dfx::kToolRace));
    if (n) shm::get(dest, r, n);
  }
  template <class T>
  void p(const char* call, T* dest, T value, int pe) {
    if (SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0))
      return p_seen(__builtin_return_address(0), call, dest, value, pe);
    p_plain(call, dest, value, pe, false);
  }
  template <class T>
  void p_plain(const char* call, T* dest, T value, int pe, bool seen) {
    T* r = reinterpret_cast<T*>(translate(call, dest, sizeof(T), pe));
    if (SYMMEM_UNLIKELY(!r)) return device_p(call, dest, value, pe);
    dfx_write(dfx::Op::kPut, call, dest, sizeof(T), pe, seen);
    if (off_node(pe)) return ucx_put(r, &value, sizeof(T), pe, true);
    if constexpr (sizeof(T) <= 8) __atomic_store(r, &value, __ATOMIC_RELAXED);  // one store, never torn
    else shm::put(r, &value, sizeof(T));
  }
  template <class T>
  [[gnu::noinline]] void p_seen(void* site, const char* call, T* dest, T value, int pe) {
    dfx::OpScope dfx_op_(site, dfx_, dfx::Op::kPut, call, dest, sizeof(T), pe);
    p_plain(call, dest, value, pe, true);
  }
  template <class T>
  T g(const char* call, const T* src, int pe) {
    if (SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0)) return g_seen(__builtin_return_address(0), call, src, pe);
    return g_plain(call, src, pe);
  }
  template <class T>
  [[gnu::noinline]] T g_seen(void* site, const char* call, const T* src, int pe) {
    dfx::OpScope dfx_op_(site, dfx_, dfx::Op::kGet, call, src, sizeof(T), pe);
    return g_plain(call, src, pe);
  }
  template <class T>
  T g_plain(const char* call, const T* src, int pe) {
    const T* r = reinterpret_cast<const T*>(translate(call, src, sizeof(T), pe));
    if (SYMMEM_UNLIKELY(!r)) return device_g(call, src, pe);
    T v;
    if (off_node(pe)) {
      ucx_get(&v, r, sizeof(T), pe, true);
      return v;
    }
    if constexpr (sizeof(T) <= 8) __atomic_load(r, &v, __ATOMIC_RELAXED);
    else shm::get(&v, r, sizeof(T));
    return v;
  }
  void fence() {
    shm::fence();
    if (SYMMEM_UNLIKELY(ucx_ != nullptr)) ucx_->fence();
  }
  void quiet() {
    if (SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0)) return quiet_seen(__builtin_return_address(0));
    shm::quiet();
    if (SYMMEM_UNLIKELY(ucx_ != nullptr)) ucx_quiet(false);
  }
  [[gnu::noinline]] void quiet_seen(void* site) {
    dfx::OpScope dfx_op_(site, dfx_, dfx::Op::kQuiet, "quiet", nullptr, 0, rank_);
    shm::quiet();
    if (ucx_ != nullptr) {
      const uint64_t t0 = dfx::now_ns();
      ucx_quiet(false);
      dfx::WaitDesc d;
      d.op = dfx::Op::kQuiet;
      d.call = "quiet";
      dfx_.wait_end(d, t0);
    }
  }
  // Out of line (runtime/remote.cpp): the UCX calls, kept off the inline shm path.
  void ucx_put(void* r, const void* src, size_t n, int pe, bool blocking);
  void ucx_get(void* dst, const void* r, size_t n, int pe, bool blocking);
  // Route-independent access to an address already translated for `pe` (metadata words,
  // collective buffers): a copy on the node, a blocking UCX operation off it.
  void rput(void* r, const void* src, size_t n, int pe) {
    if (off_node(pe)) return ucx_put(r, src, n, pe, true);
    if (n) shm::put(r, src, n);
  }
  void rget(void* dst, const void* r, size_t n, int pe) {
    if (off_node(pe)) return ucx_get(dst, r, n, pe, true);
    if (n) shm::get(dst, r, n);
  }
  // A posted 32-bit add to pe's word (sync arrivals, pSync tokens), waking its sleepers
  // on the node; off the node a deposit (UcxTransport::deposit: one message, which no
  // quiet completes, observed by its target's net_wait).
  void radd32(std::atomic<uint32_t>* word, uint32_t delta, int pe);
  // Whether PEs start + i*stride (i < size) all share this node (shm algorithms apply).
  bool group_on_node(int start, int stride, int size) const {
    if (SYMMEM_LIKELY(all_shm_)) return true;
    for (int i = 0; i < size; ++i)
      if (route_of_[start + i * stride] != Route::kShm) return false;
    return true;
  }
  // A wait of the cross-node algorithms, whose condition a remote operation on this PE's
  // memory meets: the calling thread drives UCX itself (UcxTransport::drive: polls, then
  // sleeps on the worker's event fd), looks at the job's failing word now and then, and
  // the job ends naming `peer` when SYMMEM_OP_TIMEOUT passes.
  template <class Done>
  void net_wait(Done done, int peer, const char* what) {
    if (done()) return;
    if (SYMMEM_LIKELY(ucx_ != nullptr)) {
      struct W {
        Done* done;
        Impl* self;
        uint32_t n;
        int described;  // as in wait_adaptive: the status page shows this wait
        int peer;
        const char* what;
      } w{&done, this, 0, 0, peer, what};
      ucx_->drive(
          [](void* a) {
            W* x = static_cast<W*>(a);
            if ((*x->done)()) return true;
            if ((++x->n & 255) == 0) {
              x->self->net_wait_slow();
              if (!SYMMEM_DFX_HOOKS) {
              } else if (!x->described) {
                dfx::WaitDesc d;
                d.call = x->what;
                d.owner = x->peer;
                x->described = x->self->dfx_.wait_sleep(d) ? 1 : 2;
              } else if (SYMMEM_UNLIKELY(x->self->dfx_.tools_ != 0)) {
                x->self->dfx_.wait_tick();
              }
            }
            return false;
          },
          &w, peer, what);
      if (SYMMEM_UNLIKELY(w.described)) dfx_.wait_done(w.described == 1);
      return;
    }
    uint64_t polls = 0;
    int64_t start = 0;
    WaitWord& w = meta(rank_)->user_wake;
    wait_adaptive(
        [&] {
          if (done()) return true;
          if ((++polls & 255) == 0) check_net_wait(&start, peer, what);
          return false;
        },
        [&](Backoff& b) {
          w.sleepers.fetch_add(1, std::memory_order_seq_cst);
          const uint32_t gen = w.v.load(std::memory_order_seq_cst);
          if (!done()) b.pause_on(&w.v, gen);
          w.sleepers.fetch_sub(1, std::memory_order_release);
        });
  }
  void net_wait_slow();  // the job's failing word, the wait check
  void check_net_wait(int64_t* start_ns, int peer, const char* what);
  // A network route to `peer` failed or timed out: the job fails, naming it (peer < 0: this
  // PE's own error). runtime/remote.cpp
  [[noreturn]] void net_failure(int peer, const std::string& msg);
  // How a group's members fall on nodes: its leaders (lowest member of each node, in
  // member order), this PE's node leader and how many members share this PE's node.
  struct GroupNodes {
    int start = 0, stride = 0, size = 0;
    std::vector<int> leaders;  // world PEs
    int my_leader = -1;        // index of this node's leader in `leaders`
    int leader = -1;           // world PE of this node's leader
    int local = 0;             // members on this node
    std::vector<int> mates;    // the other members on this node (member numbers, ascending)
    // Every other member of this node is on the shm route and every member of another node
    // on UCX (false with SYMMEM_TRANSPORT=ucx): the algorithms that copy within a node
    // through shared memory and send between nodes over UCX apply.
    bool routes_follow_nodes = true;
  };
  GroupNodes& group_nodes(int start, int stride, int size);
  // The node's part of hierarchical sync e whose words are at `off` of each PE's metadata:
  // a member arrives at its leader and waits for the release (node_arrive); the leader
  // waits for its node's members (node_gather). runtime/remote.cpp
  // hand_over: see remote.cpp.
  void node_arrive(const GroupNodes& gn, uint32_t e, uint64_t off, bool hand_over = true);
  void node_gather(const GroupNodes& gn, uint32_t e, uint64_t off, bool hand_over = true);
  template <class Done, class NeedsCpu>
  bool hand_over_serving(Done done, NeedsCpu needs_cpu);
  // Cross-node form of strided_sync (runtime/remote.cpp).
  void net_sync(int start, int stride, int size, uint64_t off, uint32_t* epoch, bool data_follows = false);

  // Local load/store address of pe's copy, or nullptr (never reports).
  void* ptr(const void* addr, int pe) const;
  bool in_heap(const void* addr) const {
    return reinterpret_cast<uintptr_t>(addr) - my_heap_ < heap_size_;
  }

  // ---- synchronisation ----
  // quiet + sync_all, where the quiet is implied: on the shm route every RMA and atomic is
  // complete when it returns, and the sync makes this PE's earlier stores visible before
  // its arrival is (SFENCE for non-temporal ones; x86 keeps ordinary ones before the
  // arrival's store), so an MFENCE first only adds its cost.
  void barrier_all() { sync_all(); }
  void sync_all();
  // sync_all is one of these two, each by a tail call: with SYMMEM_STATUS=0 (dfx::colls_kept
  // false) the sync alone, so that it pays one load and branch and no frame for the scope.
  [[gnu::visibility("hidden")]] void sync_all_bare();
  [[gnu::visibility("hidden")]] void sync_all_scoped();
  // Pins this PE to one CPU, round-robin over the allowed ones (SYMMEM_BIND); returns
  // the CPU, or -1 when it did not bind.
  int bind_to_cpu();
  // The central sync's wait for the release of epoch e (see strided_sync).
  void wait_release(SyncState* root, uint32_t e, int start, int stride, int size, uint64_t off);
  bool colocated_pending(uint32_t e, int start, int stride, int size, uint64_t off);
  // At init, once every PE has published its CPU: which PEs share this PE's CPU (colocated_).
  void learn_colocation();
  // Synchronises PEs start, start+stride, ... (size of them). `sync_meta_offset` locates a
  // SyncState at the same metadata offset on every PE; `epoch` counts this PE's syncs.
  // data_follows: a collective's sync after which its members move data over UCX (see
  // node_arrive).
  void strided_sync(int start, int stride, int size, uint64_t sync_meta_offset, uint32_t* epoch,
                    bool data_follows = false);
  // Waits until word.v - target >= 0 (mod 2^32), sleeping on the word when waiting long.
  void wait_word_ge(WaitWord* word, uint32_t target) { wait_ge(&word->v, &word->sleepers, target, rank_); }
  // The same on any word with its sleeper count; `owner`: the PE whose metadata holds it.
  // The first polls inline (spin_briefly), the rest out of line (wait_ge_long).
  void wait_ge(std::atomic<uint32_t>* v, std::atomic<uint32_t>* sleepers, uint32_t target, int owner) {
    if (SYMMEM_LIKELY(spin_briefly([&] { return int32_t(v->load(std::memory_order_acquire) - target) >= 0; }))) return;
    wait_ge_long(v, sleepers, target, owner);
  }
  void wait_ge_long(std::atomic<uint32_t>* v, std::atomic<uint32_t>* sleepers, uint32_t target, int owner);
  // The first polls of a sync's wait, inline: true once done() holds within them. Most
  // waits of a short sync or collective end here and cost a few instructions; a longer one
  // goes on in wait_adaptive (spin, yield, sleep, the status page). On a VM whose cache
  // line moves between cores in 60 ns, wait_adaptive's call and set-up before its first
  // poll cost about as much as the transfer. One look only where waits have lately
  // outlasted their spin (the adaptive budget fell: the PE waited for shares this CPU, and
  // every poll delays it) and with UCX (wait_adaptive serves remote operations at every
  // poll).
  static constexpr int kBriefPolls = 64;
  template <class Done>
  [[gnu::always_inline]] bool spin_briefly(Done done) {
    const int n = SYMMEM_UNLIKELY(ucx_ != nullptr) || spin_budget_.load(std::memory_order_relaxed) < kBriefPolls
                      ? 1
                      : kBriefPolls;
    for (int i = 1;; ++i) {
      if (done()) return true;
      if (i >= n) return false;
      cpu_relax();
    }
  }
  // The one waiting loop of the runtime (syncs, point-to-point waits, locks, pSync
  // barriers): until done() holds, spin (the adaptive budget, spin_budget_), yield, then
  // call sleep_once(backoff), which announces the sleeper where writers look, checks
  // done() once more, sleeps (Backoff::pause_on) unless it holds, and withdraws the
  // announcement. The spin phase adapts like an adaptive mutex: a wait that ends while
  // spinning keeps or grows the budget; one that had to yield or sleep halves it. When
  // the PE waited for shares our CPU, spinning only delays it, and the budget falls to a
  // few polls within a handful of waits; once peers answer within the spin it grows back.
  template <class Done, class SleepOnce>
  void wait_adaptive(Done done, SleepOnce sleep_once) {
    wait_adaptive(done, sleep_once, [](dfx::WaitDesc&) {});
  }
  // The page's description of a wait that went to sleep, and a tool's record of one that
  // ended: out of line, so that a wait that holds within its spin (every wait of a short
  // barrier) runs a loop small enough to inline into its caller, as with the hooks compiled
  // out (the WaitDesc, with its vectors, was ~200 bytes of stores in the loop's function).
  template <class Describe>
  [[gnu::noinline, gnu::cold]] int dfx_wait_sleep(Describe describe) {
    dfx::WaitDesc d;
    describe(d);
    return dfx_.wait_sleep(d) ? 1 : 2;
  }
  template <class Describe>
  [[gnu::noinline, gnu::cold]] void dfx_wait_end(Describe describe, uint64_t t0) {
    dfx::WaitDesc d;
    describe(d);
    dfx_.wait_end(d, t0);
  }
  // describe(desc) fills in what the wait waits for; called only once it goes to sleep, for
  // the status page (runtime/dfx.hpp).
  template <class Done, class SleepOnce, class Describe>
  void wait_adaptive(Done done, SleepOnce sleep_once, Describe describe) {
    if (done()) return;
    const uint64_t dfx_t0 = SYMMEM_DFX_HOOKS && SYMMEM_UNLIKELY(dfx_.tools_ != 0) ? dfx::now_ns() : 0;
    WaitPolicy p = wait_;
    const int budget = spin_budget_.load(std::memory_order_relaxed);
    p.spin = budget < p.spin ? budget : p.spin;
    Backoff b(p);
    int polls = 0;
    int described = 0;  // 1: this wait holds the page's wait record; 2: another wait does
    // Across nodes this thread serves remote operations while it polls, and the progress
    // thread stands aside (it would share this PE's CPU); it serves while this one sleeps.
    UcxTransport* const ucx = ucx_.get();
    if (SYMMEM_UNLIKELY(ucx != nullptr)) ucx->polling(true);
    do {
      ++polls;
      if (SYMMEM_UNLIKELY(ucx != nullptr)) ucx->progress();  // serve remote operations while waiting
      if (!b.sleeping()) {
        b.pause();
      } else {
        // Serving goes back to the progress thread first: what follows may end the wait by
        // an exception (Python's Ctrl-C check) or end the PE.
        if (SYMMEM_UNLIKELY(ucx != nullptr)) ucx->polling(false, true);
        // The slow path: is the job failing (a PE died or stopped)? One load per sleep.
        if (SYMMEM_UNLIKELY(failing_word_->load(std::memory_order_relaxed) != 0)) job_failing_seen();
        if (SYMMEM_UNLIKELY(wait_check_ != nullptr)) wait_check_();  // Runtime::set_wait_check
        if (!SYMMEM_DFX_HOOKS) {
        } else if (SYMMEM_UNLIKELY(!described)) {
          described = dfx_wait_sleep(describe);
        } else if (SYMMEM_UNLIKELY(dfx_.tools_ != 0)) {
          dfx_.wait_tick();
        }
        sleep_once(b);
        if (SYMMEM_UNLIKELY(ucx != nullptr)) ucx->polling(true);
      }
    } while (!done());
    if (SYMMEM_UNLIKELY(ucx != nullptr)) ucx->polling(false, polls > p.spin);  // it slept: a long wait
    if (SYMMEM_UNLIKELY(described)) dfx_.wait_done(described == 1);
    if (SYMMEM_UNLIKELY(dfx_t0 != 0)) dfx_wait_end(describe, dfx_t0);
    const int next = polls <= p.spin ? std::min(wait_.spin, budget + budget / 8 + 1) : std::max(kMinSpin, budget / 2);
    if (next != budget) spin_budget_.store(next, std::memory_order_relaxed);
  }
  // The central syncs' wait when PEs outnumber cores (team syncs: wait_release; pSync
  // syncs: coll::PsyncGroup::central_sync). Until done() holds: while needs_cpu() says a
  // PE bound to this CPU has not arrived at this sync, hand the CPU over (sched_yield);
  // otherwise poll. Bounded by kHandoffPolls, e.g. for a PE of this CPU that sleeps
  // elsewhere; returns false then, and at once when this PE knows no CPU-mates (unbound),
  // and the caller takes the ordinary wait (spin, yield, sleep).
  template <class Done, class NeedsCpu>
  bool wait_handing_over(Done done, NeedsCpu needs_cpu) {
    constexpr int kHandoffPolls = 4096;
    if (colocated_.empty()) return false;
    for (int i = 0; i < kHandoffPolls; ++i) {
      if (done()) return true;
      if (needs_cpu()) sched_yield();
      else cpu_relax();
    }
    return false;
  }
  // Stores `value` (or adds, for add_word) and wakes sleepers on that word.
  static void notify(WaitWord* word, uint32_t value);
  // A pairwise sync's arrival: a release store, then the sleeper check. The store-load
  // fence between them (not an xchg: the fence needs no RFO) only where the node's PEs
  // cannot all use heavy_fence() (light_fences_); it cost a third of a 2-PE barrier.
  void notify_half(WaitHalf* h, uint32_t value) {
    h->v.store(value, std::memory_order_release);
    if (SYMMEM_UNLIKELY(!light_fences_)) std::atomic_thread_fence(std::memory_order_seq_cst);
    if (SYMMEM_UNLIKELY(h->sleepers.load(std::memory_order_seq_cst) != 0)) futex_wake_shared(&h->v);
  }
  static uint32_t add_word(WaitWord* word, uint32_t delta);

  // ---- static data (runtime_static.cpp) ----
  // Before the heap: makes the executable's globals shared; returns S for the heap.
  uint64_t attach_static_data(const InitOptions& opts);
  // After the heap: maps every PE's copy into the heap's reservation.
  void map_static_data(const std::vector<uint8_t>& map_pe);
  // After the heap, when some PE is on another node: the UCX transport (runtime/remote.cpp).
  void connect_ucx(const std::string& tag);

  // ---- the device heap (runtime/device.cpp, device/device_heap.hpp) ----
  // Whether addr lies in this PE's slot of the device heap (false while there is none).
  bool in_device_heap(const void* addr) const {
    return reinterpret_cast<uintptr_t>(addr) - dev_my_heap_ < dev_heap_size_;
  }
  // The route of a device address in a host call (translate's cold path): checks the range
  // and answers nullptr, on which every data-path call turns to its device_* form below
  // (runtime/device_ops.cpp); the host never dereferences a device address.
  [[gnu::cold]] char* translate_device(const char* call, const void* addr, size_t n, int pe);
  // [addr, addr+n) lies in this PE's host symmetric memory (heap or statics): the check of
  // the host collectives' buffers, which do not take device memory (reported, naming the
  // stream-ordered forms that do).
  void check_host_sym(const char* call, const void* addr, size_t n) {
    if (n && SYMMEM_UNLIKELY(translate(call, addr, n, rank_) == nullptr)) host_collective_on_device(call, addr);
  }
  [[noreturn, gnu::cold]] void host_collective_on_device(const char* call, const void* addr);
  // Host calls and stream-ordered calls on the device heap (runtime/device_ops.cpp).
  // `stream` is a CUstream / cudaStream_t; nullptr: done (complete at the target) on return.
  // dest / src / sig / the collectives' buffers: symmetric addresses of the device heap,
  // except the local side of a put or get, which may be any memory the GPU reaches.
  void device_put(const char* call, void* dest, const void* src, size_t n, int pe, void* stream);
  void device_get(const char* call, void* dest, const void* src, size_t n, int pe, void* stream);
  void device_put_signal(const char* call, void* dest, const void* src, size_t n, uint64_t* sig, uint64_t value,
                         int op, int pe, void* stream);
  // Strided copies (iput/iget/ibput/ibget): nblocks of bsize bytes, strides in bytes.
  void device_put_strided(const char* call, void* dest, const void* src, size_t dst, size_t sst, size_t bsize,
                          size_t nblocks, int pe);
  void device_get_strided(const char* call, void* dest, const void* src, size_t dst, size_t sst, size_t bsize,
                          size_t nblocks, int pe);
  // A signal update (op: SHMEM_SIGNAL_SET / _ADD).
  void device_signal(const char* call, uint64_t* sig, uint64_t value, int op, int pe, void* stream);
  // The stream waits (a kernel) until this PE's signal word compares as asked. (A host wait
  // on device memory polls it: p2p::device_wait_until.)
  void device_wait_on_stream(const char* call, uint64_t* sig, int cmp, uint64_t value, void* stream);
  // An atomic on pe's 4- or 8-byte word; returns the old value (device/kernel_args.hpp AmoKind).
  uint64_t device_amo(const char* call, int kind, void* dest, size_t width, uint64_t value, uint64_t cond, int pe);
  // A collective of the team (start, stride, size; this PE's index me) on device memory,
  // queued on `stream`: kind and kernel as in device/kernel_args.hpp; n in bytes (barrier,
  // broadcast, fcollect, alltoall: per PE) or elements (reductions); root a team index.
  void device_coll(const char* call, int kind, int kernel, int start, int stride, int size, int me, void* dest,
                   const void* src, size_t n, size_t elem, int root, void* stream);
  // A caller's stream as the calls above take it (nullptr there is "now, on the library's
  // own stream"): the CUDA default stream (nullptr from the caller) becomes
  // CU_STREAM_LEGACY, the handle the driver gives it, so the work stays ordered with the
  // caller's other work on it.
  static void* caller_stream(void* s) { return s ? s : reinterpret_cast<void*>(uintptr_t(1)); }
  char* device_peer(const char* call, const void* addr, size_t n, int pe);  // pe's copy, checked
  // The data path's exits to the above: out of line, with at most five arguments, so that
  // the host-memory path keeps its frame (no spills for a call it does not make).
  [[gnu::cold, gnu::noinline]] void device_put_now(const char* call, void* dest, const void* src, size_t n, int pe) {
    device_put(call, dest, src, n, pe, nullptr);
  }
  [[gnu::cold, gnu::noinline]] void device_get_now(const char* call, void* dest, const void* src, size_t n, int pe) {
    device_get(call, dest, src, n, pe, nullptr);
  }
  template <class T>
  [[gnu::cold, gnu::noinline]] void device_p(const char* call, T* dest, T value, int pe) {
    device_put(call, dest, &value, sizeof(T), pe, nullptr);
  }
  template <class T>
  [[gnu::cold, gnu::noinline]] T device_g(const char* call, const T* src, int pe) {
    T v;
    device_get(call, &v, src, sizeof(T), pe, nullptr);
    return v;
  }
  [[gnu::cold, gnu::noinline]] void device_signal_now(const char* call, uint64_t* sig, uint64_t value, int op, int pe) {
    device_signal(call, sig, value, op, pe, nullptr);
  }
  // shmem_malloc_with_hints(size, SHMEMX_MALLOC_DEVICE): collective, checked like a host
  // allocation; creates the device heap on first use; NULL on every PE with the reason
  // logged when any PE cannot.
  // fill (optional): `fill_bytes` bytes repeated over this PE's new block, written through
  // the driver before the call's barrier, so no peer's kernel writes into the block first.
  void* device_alloc(const char* call, size_t size, size_t align, const void* fill = nullptr, size_t fill_bytes = 0);
  void device_free(const char* call, void* ptr);
  // Why device allocations fail (empty while they may succeed or none was tried).
  const std::string& device_error() const { return dev_why_; }
  // Why the latest device allocation returned NULL (the reason it logged); empty after one
  // that succeeded.
  const std::string& device_last_error() const { return dev_last_why_; }

  // ---- memory management (collective) ----
  // init (malloc / align only; calloc zeroes): fills this PE's new block before the closing
  // barrier, so no peer's put lands before it.
  using AllocInit = std::function<void(void*, size_t)>;
  void* collective_alloc(const char* call, AllocOp op, size_t size, size_t align, void* old,
                         const AllocInit* init = nullptr);
  void collective_free(const char* call, void* ptr);
  const AllocRecord& peer_alloc_record(int pe, uint64_t seq, AllocRecord* copy);
  // PE pe's status page on another node (for the check and statistics tools), read over UCX
  // into *copy up to the end of its collective ring; a record that changed between two
  // reads is left odd.
  void fetch_dfx_page(int pe, dfx::Page* copy);

  // ---- errors ----
  [[noreturn]] void bad_pe(const char* call, int pe);
  [[noreturn]] void bad_range(const char* call, const void* addr, size_t n, int pe);
  // Throws (kThrow) or logs one line and ends the job with exit code 1 (kExitJob).
  [[noreturn]] void fail(Errc code, const char* call, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
  // A failure in init after the store is up: explains a lost store, lets the PEs that
  // use our store report too, then fail()s.
  [[noreturn]] void init_failed(Errc code, const std::string& msg);
  void linger_as_store_host();
  // Ends the whole job with `status`: tells the launcher, then exits this process.
  [[noreturn]] void global_exit(int status);
  // Ends this PE because it failed (fatal error, global_exit): raises the job-failing
  // record (liveness.hpp) so that every PE ends, tells symmem-run, then _exit(status).
  [[noreturn]] void end_job(JobFailure::Kind kind, int status, const std::string& reason);
  // A wait found this node's job-failing word set: ends this PE with one line (liveness.hpp).
  void job_failing_seen();
  // Any route: the job is failing because of `f` (e.g. a peer found dead); ends this PE.
  [[noreturn]] void job_failing(const JobFailure& f);

  MetaFixed* meta(int pe) const { return reinterpret_cast<MetaFixed*>(heap_->meta(pe)); }
  char* meta_bytes(int pe) const { return heap_->meta(pe); }

  ErrorMode mode_;
  Config cfg_;
  LaunchEnv env_;
  int rank_ = 0, npes_ = 1;
  uint64_t heap_size_ = 0;
  uintptr_t my_heap_ = 0;
  WaitPolicy wait_;
  std::function<void()> wait_check_;  // Runtime::set_wait_check; empty: none
  // Spin polls wait_word_ge currently allows (adapted per wait; see runtime.cpp).
  std::atomic<int> spin_budget_{0};
  // Every PE of this node takes part in heavy_fence(): waits on sync words run it before
  // they sleep, and pairwise arrivals skip their fence (notify_half).
  bool light_fences_ = false;
  static constexpr int kMinSpin = 8;
  // World ranks bound to this PE's CPU (PEs outnumber cores); known from init.
  std::vector<int> colocated_;
  Isa reduce_isa_ = kIsaBase;  // the reduction kernels' instruction set (SYMMEM_REDUCE_ISA)
  bool central_sync_ = false;  // PEs outnumber cores: counter barrier, one sleep per PE
  std::unique_ptr<TcpStoreServer> hosted_store_;  // this PE hosts the job's store
  std::unique_ptr<Store> store_;
  std::unique_ptr<Store> epoch_store_;  // store_ with this init's keys (prefix e<epoch>)
  // Job liveness (a watch connection and its thread); after store_, so that it goes first.
  std::unique_ptr<Liveness> live_;
  // This PE's MetaFixed::job_failing once the heap is up (a zero word before).
  std::atomic<uint64_t>* failing_word_ = &no_failure_;
  std::atomic<uint64_t> no_failure_{0};
  bool supervised_ = false;  // started by symmem-run
  std::vector<std::string> pe_where_;  // "host:pid" of every PE, from init
  uint64_t instance_id_ = 0;
  bool init_done_ = false;  // the constructor has completed
  std::string rendezvous_file_;  // removed once every PE has joined
  std::unique_ptr<SymmetricHeap> heap_;
  std::unique_ptr<StaticData> static_;  // null when globals are not symmetric
  uintptr_t static_start_ = 0, static_copies_ = 0;
  uint64_t static_size_ = 0;
  std::unique_ptr<Allocator> alloc_;
  // The device heap, made at the first device allocation (kUnknown until then; kFailed
  // keeps the agreed reason in dev_why_). dev_my_heap_ / dev_heap_size_ stay 0 without one,
  // so that in_device_heap() is false.
  enum class DevState : uint8_t { kUnknown, kReady, kFailed };
  DevState dev_state_ = DevState::kUnknown;
  std::string dev_why_;
  std::string dev_last_why_;
  std::unique_ptr<device::DeviceHeap> dev_heap_;
  std::unique_ptr<device::DeviceOps> dev_ops_;  // made with the heap; destroyed before it
  std::unique_ptr<Allocator> dev_alloc_;
  uintptr_t dev_my_heap_ = 0;
  uint64_t dev_heap_size_ = 0;
  std::string job_id_;  // names the device heap's exchange sockets
  // What this node can back (heap/node_memory.hpp): checked before every commit.
  CommitPolicy commit_policy_;
  // symmem-run reports the job's committed memory when a PE is killed: every PE adds
  // what it commits to kCommittedKey in the launcher's store.
  bool report_commits_ = false;
  int host_cpus_ = 0;       // the CPUs this machine's PEs may use together (0: unknown)
  int node_first_pe_ = 0;  // the lowest rank on this machine: says what the node cannot hold
  void note_node_capacity();
  RouteTable routes_;
  const Route* route_of_ = nullptr;  // routes_' table, for the data path
  bool all_shm_ = true;              // every PE of the job is on this node
  std::vector<std::string> node_of_;  // node id of every PE
  std::vector<int> node_pes_;        // world PEs of this node, ascending
  std::vector<int> node_index_;      // node of every PE, numbered by first appearance
  size_t node_count_ = 1;
  std::vector<GroupNodes> group_nodes_cache_;
  std::vector<std::string> all_info_;    // what every PE published at init
  std::unique_ptr<UcxTransport> ucx_;  // null when every PE is on this node
  uint32_t world_epoch_ = 0;
  uint64_t alloc_seq_ = 0;
  bool finalized_ = false;
  // Created by the team layer on first use; destroyed before the heap (declared after it).
  std::unique_ptr<TeamRegistry, void (*)(TeamRegistry*)> teams_{nullptr, nullptr};
  std::shared_ptr<CtxPool> ctx_pool_;  // contexts created on this instance (runtime/ctx.cpp)
  // Status page, tool hooks and address names (runtime/dfx.hpp).
  dfx::Dfx dfx_;
  // SYMMEM_HANG_TIMEOUT without symmem-run, on the lowest PE of each node (dfx/hang_watch.hpp).
  std::unique_ptr<dfx::Service> hang_watch_;  // from dfx::tool_seam
};

}  // namespace symmem
