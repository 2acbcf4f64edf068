// DFX core: the per-PE status page (dfx_page.hpp) kept up to date by the runtime, and the
// hooks through which the tools (checks, statistics, trace, race check) see every operation.
//
// Cost. The status page is kept by default: a collective (barrier, allocation) writes two
// words of its own PE's page on entry and one on exit (CollScope; with SYMMEM_STATUS=0 and no
// tool on, nothing: one load and branch), other blocking calls a few, and a wait, with the
// collective it waits in, describes itself only once it goes to sleep.
// Point-to-point operations touch nothing unless a tool is on: OpScope is one load and one
// predictable branch when Dfx::tools_ is 0.
//
// Tools. Each is a ToolHooks object made at init when its variable is set (Dfx::init); the
// hooks call every tool that is on, out of line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/dfx_page.hpp"

namespace symmem {
struct Config;
}

namespace symmem::dfx {

#define SYMMEM_DFX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SYMMEM_DFX_LIKELY(x) __builtin_expect(!!(x), 1)
// -DSYMMEM_DFX=OFF (CMake) compiles every hook out, for measuring what they cost.
#ifndef SYMMEM_DFX_HOOKS
#define SYMMEM_DFX_HOOKS 1
#endif

uint64_t now_ns();  // CLOCK_MONOTONIC

enum Tool : uint32_t { kToolCheck = 1, kToolStats = 2, kToolTrace = 4, kToolRace = 8 };

// One point-to-point operation, as the tools see it.
struct OpEvent {
  Op op;
  const char* call;     // the API's name of the call ("shmem_putmem", "put")
  int pe;               // target PE (world)
  const void* addr;     // symmetric address (this PE's copy) of the remote side
  size_t bytes;
  const void* local;    // the local buffer (source of a put, destination of a get), or null
  uint64_t t0_ns;       // set by the statistics tool when it times this call
  void* call_site;      // return address into the caller, when known
  const void* aux;      // put_signal: the signal word (this PE's copy of it), else null
  uint64_t t0_ticks;    // set by the trace tool
};

// One collective (or collective memory call), as this PE entered it.
struct CollEvent {
  Op op;
  int lane;                    // team slot, or kActiveSetLane
  uint32_t team_seq;           // this PE's number of this collective on the lane
  int start, stride, size, me;  // the PEs taking part (world numbers) and this PE's index
  int root;                    // -1 where none
  size_t bytes;                // per-PE (per-block) bytes
  uint32_t elem_size;
  uint32_t redop;              // reduction kernel id, 0 none
  const void* dest;
  const void* src;
  CollRecord* record;          // this PE's page record of it
  uint64_t t0_ns;
  uint32_t team_id;            // CollRecord::team_id / team_rel
  uint32_t team_rel;
};

struct WaitDesc;
struct CollArgs;

class ToolHooks {
 public:
  virtual ~ToolHooks() = default;
  virtual void op_begin(OpEvent&) {}
  virtual void op_end(OpEvent&) {}
  virtual void coll_begin(CollEvent&) {}
  virtual void coll_end(CollEvent&) {}
  // Inside a collective, once every PE taking part has entered it (the allocator's record
  // exchange): the place to compare arguments before any of them is acted on.
  virtual void coll_arrived(CollEvent&) {}
  // A wait went to sleep (rec is this PE's page record) / woke up done.
  virtual void wait_sleep(const WaitRecord&) {}
  virtual void wait_done(const WaitRecord&) {}
  // Once per sleep of a wait (at most about SYMMEM_WAIT_MAX_SLEEP_US apart): the place to
  // look around when a wait lasts (stall scans, hang deadlines).
  virtual void wait_tick(const WaitRecord&) {}
  // Every wait that did not hold at once, slept or not (wait_until, signal_wait, lock, the
  // syncs of collectives; quiet on the UCX route), from t0 to t1 (now_ns()), when it ends.
  virtual void wait_end(const WaitDesc&, uint64_t /*t0_ns*/, uint64_t /*t1_ns*/) {}
  // A collective allocation (offset in the heap, size) succeeded / a block was freed.
  virtual void allocated(uint64_t /*offset*/, uint64_t /*size*/, uint32_t /*number*/) {}
  virtual void freed(uint64_t /*offset*/) {}
  // A live allocation got a name (set_name); `describe` is how reports now show it.
  virtual void named(uint64_t /*offset*/, uint32_t /*number*/, const std::string& /*describe*/) {}
  // Init has attached the page: the job's PEs and hosts are known, the store is up.
  virtual void attached() {}
  // Collective: called on every PE at the start of finalize, while communication works.
  virtual void finalize() {}
  // Then after finalize's last barrier (every PE has called finalize()), the store still up.
  virtual void finalized() {}
  // The job is failing (PE failed_pe failed, -1 unknown) and this PE ends after this call:
  // its last words (Liveness::end, on whichever thread ends the PE).
  virtual void job_ending(int /*failed_pe*/) {}
};

// A wait's description, filled in only when it goes to sleep.
struct WaitDesc {
  Op op = Op::kWait;
  const char* call = nullptr;
  int owner = -1;
  int cmp = -1;
  uint32_t width = 0, nwords = 1;
  const void* addr = nullptr;
  uint64_t expect = 0;
  // A vector wait (WaitRecord::vec_*); vec_kind 0: a scalar wait.
  uint32_t vec_kind = 0, vec_count = 0, vec_n = 0, vec_shown = 0;
  const void* vec_base = nullptr;
  uint32_t vec_index[kWaitWords] = {};
  uint64_t vec_expect[kWaitWords] = {};
};

// One symmetric allocation, for naming addresses in reports.
struct Allocation {
  uint32_t number;  // 1, 2, ... in call order (the same on every PE)
  uint64_t offset, size;
  std::string name;  // set by shmemx_set_name / symmem::Runtime::set_name, else empty
};

class Dfx {
 public:
  Dfx();
  ~Dfx();
  // Reads the tools' variables; the page is a private one until attach().
  void init(void* impl, const Config& cfg, int rank, int npes);
  // The heap is up: from now on the state lives in this PE's metadata page.
  void attach(Page* page, int pid);
  void finalize();  // collective: the tools' finalize, then the page says kFinalized
  void finalized();  // after finalize's last barrier
  void job_ending(int failed_pe);  // the job is failing: this PE ends next (ToolHooks::job_ending)

  uint32_t tools_ = 0;  // Tool bits; 0: every hook below returns at once
  // What a collective's scope does (CollScope): 0 keeps it on the page (the default, no
  // tool on); kCollsOff nothing (SYMMEM_STATUS=0 and no tool on); else the tools' bits.
  uint32_t colls_ = 0;
  Page* page() const { return page_; }
  uint16_t intern(const char* call);
  // intern's cache lookup inline (the data path's): one load and a compare when seen before.
  uint16_t intern_cached(const char* call) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(call);
    const uint64_t e = cache_[(key >> 3) % kCacheSlots].load(std::memory_order_relaxed);
    return SYMMEM_DFX_UNLIKELY((e >> 16) != key || key == 0) ? intern(call) : uint16_t(e & 0xffff);
  }

  // ---- hooks (called through the scopes below) ----
  // `ev` lives in the caller's OpScope (on its stack: no thread-local lookup per call).
  void op_begin(OpEvent& ev, Op op, const char* call, const void* addr, size_t n, int pe, const void* local,
                void* site, const void* aux);
  void op_end(OpEvent& ev);
  // A one-sided write into PE pe's memory at addr (this PE's copy), into this PE's page
  // ring (WriteRecord): the hang report's candidate writers. ucx: on the UCX route.
  // Relaxed stores (plain moves) on lines only this PE writes, no locked instruction: threads
  // of one PE that write at the same moment may share a slot (a record is a hint, never a count).
  void note_write(Op op, const char* call, const void* addr, size_t n, int pe, bool ucx) {
    Page* p = page_;
    const uint64_t k = p->write_count.load(std::memory_order_relaxed);
    p->write_count.store(k + 1, std::memory_order_relaxed);
    WriteRecord& w = p->writes[k % kWriteRing];
    const uint32_t s = w.seq.load(std::memory_order_relaxed);
    w.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    const uintptr_t x = reinterpret_cast<uintptr_t>(addr);
    relaxed_store(w.op, uint16_t(op));
    relaxed_store(w.call_id, intern_cached(call));
    relaxed_store(w.target, int32_t(pe));
    relaxed_store(w.ucx, uint32_t(ucx));
    relaxed_store(w.where, x - heap_ < heap_size_ ? x - heap_ : kRaceStatic | uint64_t(x - static_start_));
    relaxed_store(w.bytes, uint64_t(n));
    relaxed_store(w.quiets, p->quiet_count.load(std::memory_order_relaxed));
    w.seq.store(s + 2, std::memory_order_release);
    if (ucx) p->ucx_posted.fetch_add(1, std::memory_order_relaxed);  // (a UCX operation costs microseconds)
  }
  // An operation posted on the UCX route that is not a write (a get_nbi): in flight until quiet.
  void note_ucx_op() { page_->ucx_posted.fetch_add(1, std::memory_order_relaxed); }
  // Around a quiet of the UCX route: what was posted before it is complete after it.
  uint64_t ucx_mark() const { return page_->ucx_posted.load(std::memory_order_relaxed); }
  void ucx_quieted(uint64_t mark) {
    Page* p = page_;
    if (p->ucx_quieted.load(std::memory_order_relaxed) < mark) p->ucx_quieted.store(mark, std::memory_order_relaxed);
    p->quiet_count.fetch_add(1, std::memory_order_relaxed);
  }
  // False when another thread of this PE holds the page's wait record (the state still
  // says waiting; this wait is then not described).
  bool wait_sleep(const WaitDesc& d);
  void wait_tick();
  void wait_done(bool described);
  void wait_end(const WaitDesc& d, uint64_t t0_ns);
  void allocated(uint64_t offset, uint64_t size);
  void freed(uint64_t offset);
  // Every PE of the current collective has entered it (ToolHooks::coll_arrived).
  void coll_arrived();
  // A split put a new team into `lane` (called inside the split's collective): later
  // records of the lane name that team and number its collectives from 1.
  void team_created(int lane, int parent_lane, int start, int stride, int size);
  // A tool is on: the collective's event (this thread's t_coll_ev) filled, the collective
  // described at once, then every tool's coll_begin / coll_end.
  void coll_begin(Op op, int lane, uint32_t seq, int start, int stride, int size, int me, const CollArgs& a);
  void coll_end();
  // The collective this thread waits in goes on the page in full, if it is not yet: its
  // record in the ring, the page's call and state (a wait goes to sleep, a blocking call).
  // Returns its lane, or -1 when in none.
  int coll_describe();
  // A described collective of `lane` leaves: its record done, the page's call and state
  // restored.
  void coll_undescribe(int lane);
  // A described collective leaves (CollScope; `slot`: its brief word on the page): the
  // tools' coll_end, then coll_undescribe, on the Dfx that described it (t_coll_dfx: the
  // collective's own thread described it). (With a tool on, every collective is described.)
  [[gnu::cold]] static void coll_leave_described(const std::atomic<uint64_t>* slot);
  // The PEs of the team in `lane` (world at init, TEAM_SHARED, splits; active sets per call).
  void lane_geometry(int lane, int start, int stride, int size) {
    relaxed_store(lane_geom_[lane].start, int32_t(start));
    relaxed_store(lane_geom_[lane].stride, int32_t(stride));
    relaxed_store(lane_geom_[lane].size, int32_t(size));
  }

  // Names an address for a report: "'halo' (malloc #3, 64 KiB) +4096", "static 'target' +0".
  std::string describe(const void* addr) const;
  // Gives the live allocation that starts at (or contains) addr a name for reports.
  bool set_name(const void* addr, const std::string& name);
  // The live allocation containing [addr, addr+n), or null.
  const Allocation* allocation_of(const void* addr, size_t n) const;
  void set_heap(uintptr_t heap, uint64_t size, uintptr_t static_start, uint64_t static_size) {
    heap_ = heap, heap_size_ = size, static_start_ = static_start, static_size_ = static_size;
  }

  std::vector<std::unique_ptr<ToolHooks>> hooks_;
  void* impl_ = nullptr;  // Runtime::Impl*, for the tools

 private:
  friend class CallScope;
  friend class CollScope;
  // Writes lane's open collective in full (its brief word `b`) with `ev`'s tool fields when
  // a tool is on; false when another thread did first.
  bool describe_coll(int lane, uint64_t b, const CollEvent* ev);
  Page* page_;
  std::unique_ptr<Page> own_;  // before attach
  // Interned names by the caller's pointer: (pointer << 16) | id in one word, so that threads
  // never see a torn entry; the page's table is filled under names_mu_.
  static constexpr size_t kCacheSlots = 512;
  std::atomic<uint64_t> cache_[kCacheSlots] = {};
  std::mutex names_mu_;
  uintptr_t heap_ = 0, static_start_ = 0;
  uint64_t heap_size_ = 0, static_size_ = 0;
  uint32_t alloc_count_ = 0;
  std::map<uint64_t, Allocation> allocs_;  // by offset
  uint32_t lane_team_[kTeamLanes] = {0, 1};  // team id in each lane (world 0, shared 1)
  uint32_t lane_base_[kTeamLanes] = {};      // lane_seq when that team arrived
  // Each op's brief word, open, number 0 (its names index interned at construction).
  uint64_t coll_brief_[size_t(Op::kCount)] = {};
  // Per lane, for describing its open collective later (one thread at a time per lane):
  // its root and bytes (written on entry when the op has them), the team, its record.
  struct LaneArgs {
    uintptr_t frame;  // the collective's frame, on its thread's stack
    int32_t root;
    uint64_t bytes;
  };
  struct LaneGeom {
    int32_t start, stride, size;
  };
  struct LaneRec {
    std::atomic<CollRecord*> rec{nullptr};  // described: its record (the lane claimed with a CAS)
    uint32_t prev_call = 0, prev_state = 0;  // the page's call and state before
  };
  LaneArgs lane_args_[kTeamLanes] = {};
  LaneGeom lane_geom_[kTeamLanes] = {};
  LaneRec lane_rec_[kTeamLanes];
  // A lane's rec while it is being described, or described without a ring slot; only its
  // done word is written.
  CollRecord unrecorded_{};
  // Ring slots of the page held by a thread of this process whose collective they describe.
  std::atomic<uint8_t> slot_held_[kCollRing] = {};
};

#if SYMMEM_DFX_HOOKS
// A point-to-point operation. Off: one load and a branch here, one in the destructor. On:
// the event lives here, in the caller's frame (ev_ is written only then).
class OpScope {
 public:
  OpScope(Dfx& d, Op op, const char* call, const void* addr, size_t n, int pe, const void* local = nullptr,
          const void* aux = nullptr)
      : d_(SYMMEM_DFX_UNLIKELY(d.tools_ != 0) ? &d : nullptr) {
    if (SYMMEM_DFX_UNLIKELY(d_ != nullptr)) d.op_begin(ev_, op, call, addr, n, pe, local, __builtin_return_address(0), aux);
  }
  // The same, in an out-of-line path taken only when a tool is on: `site` is the return
  // address its caller took on its own frame.
  OpScope(void* site, Dfx& d, Op op, const char* call, const void* addr, size_t n, int pe, const void* local = nullptr)
      : d_(&d) {
    d.op_begin(ev_, op, call, addr, n, pe, local, site, nullptr);
  }
  ~OpScope() {
    if (SYMMEM_DFX_UNLIKELY(d_ != nullptr)) d_->op_end(ev_);
  }
  bool on() const { return d_ != nullptr; }  // a tool sees this operation
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  Dfx* d_;
  OpEvent ev_;
};

#else
class OpScope {
 public:
  template <class... A>
  explicit OpScope(A&&...) {}
  bool on() const { return false; }
};
#endif

// A blocking call that is not a collective (quiet on a slow route, lock): the page names it
// while it runs.
class CallScope {
 public:
  CallScope(Dfx& d, const char* call);
  ~CallScope();

 private:
  Dfx& d_;
  uint32_t prev_call_;
  uint32_t prev_state_;
};

struct CollArgs {
  int root = -1;
  size_t bytes = 0;
  uint32_t elem_size = 0;
  uint32_t redop = 0;
  const void* dest = nullptr;
  const void* src = nullptr;
};

// The PEs of a collective's team, and this PE's index among them (CollScope).
struct CollGeom {
  int start, stride, size, me;
};

// With a tool on: this thread's outermost collective (CollScope), or null.
extern __thread CollEvent* t_coll_ev __attribute__((tls_model("initial-exec")));
// The instance whose collective this thread is in was described by (Dfx::describe_coll).
extern __thread Dfx* t_coll_dfx __attribute__((tls_model("initial-exec")));

// A collective on one team lane: numbered, kept on the page, shown to the tools. A
// collective inside another (the barrier of a malloc, the syncs of a broadcast; always on
// the same team) is part of the outer one and records nothing.
//
// Always on, and a 2-PE barrier lasts ~0.05 us, so with every tool off this is inline, with
// no thread-local access, no locked instruction and no call: it reads the lane's number and
// brief word (open: a collective of the lane is under way, this one is inside it), and an
// outer one writes both, and the brief word again on exit, plain stores to lines only this
// PE writes. Threads never run collectives on one team at once, so a lane has one writer.
// The full record (Page::colls) and the page's call and state are written only once the
// collective waits (Dfx::coll_describe, from a wait going to sleep or a blocking call inside
// it), as a wait describes itself only once it sleeps: a collective that never waits is
// over before anybody could look. With a tool on, every collective is described on entry
// and the hooks follow (Dfx::coll_begin, out of line).
class CollScope {
 public:
#if SYMMEM_DFX_HOOKS
  // The core: the team's geometry and the collective's arguments come from callables, so
  // that with every tool off only the arguments' root and size are computed (the geometry
  // only for an active set), nothing of them before the nesting check; `flags`: kBriefArgs
  // when the arguments are known. One load and branch chooses: the page (the default),
  // nothing (SYMMEM_STATUS=0), or the page and the tools (Dfx::coll_begin, out of line).
  template <class MakeGeom, class MakeArgs>
  [[gnu::always_inline]] CollScope(Dfx& d, Op op, int lane, MakeGeom geom, MakeArgs make, uint64_t flags) {
    if (SYMMEM_DFX_UNLIKELY(d.colls_ != 0)) {
      slot_ = d.colls_ == kCollsOff ? nullptr : enter_tools(d, op, lane, geom, make, flags);
      return;
    }
    uint32_t seq;
    if (!enter(d, op, lane, flags, seq, slot_)) return;
    if (flags & kBriefArgs) {
      relaxed_store(d.lane_args_[lane].root, int32_t(make().root));
      relaxed_store(d.lane_args_[lane].bytes, uint64_t(make().bytes));
    }
    if (SYMMEM_DFX_UNLIKELY(lane == kActiveSetLane)) {
      const CollGeom g = geom();
      d.lane_geometry(lane, g.start, g.stride, g.size);
    }
  }
  [[gnu::always_inline]] CollScope(Dfx& d, Op op, int lane, int start, int stride, int size, int me)
      : CollScope(d, op, lane, [=] { return CollGeom{start, stride, size, me}; }, [] { return CollArgs{}; }, 0) {}
  [[gnu::always_inline]] CollScope(Dfx& d, Op op, int lane, int start, int stride, int size, int me, const CollArgs& a)
      : CollScope(d, op, lane, [=] { return CollGeom{start, stride, size, me}; }, [&a] { return a; }, kBriefArgs) {}
  [[gnu::always_inline]] ~CollScope() {
    if (slot_ == nullptr) return;  // inside another
    const uint64_t w = slot_->load(std::memory_order_relaxed);
    // A tool on, or a wait inside it went to sleep: its record (Dfx::coll_describe).
    if (SYMMEM_DFX_UNLIKELY(w & kBriefDescribed)) Dfx::coll_leave_described(slot_);
    slot_->store(w & ~(kBriefOpen | kBriefDescribed), std::memory_order_relaxed);
  }
#else
  template <class... A>
  CollScope(Dfx&, Op, int, A&&...) {}
#endif
  CollScope(const CollScope&) = delete;
  CollScope& operator=(const CollScope&) = delete;
  // With a tool on: this thread's outermost collective, or null.
  static const CollEvent* current() { return t_coll_ev; }

 private:
#if SYMMEM_DFX_HOOKS
  // The collective's number in `seq` and its brief word on the page in `slot`; false (and
  // slot null) inside another collective of the lane.
  [[gnu::always_inline]] static bool enter(Dfx& d, Op op, int lane, uint64_t flags, uint32_t& seq,
                                           std::atomic<uint64_t>*& slot) {
    Page* p = d.page_;
    const uint32_t now = p->lane_seq[lane].load(std::memory_order_relaxed);
    if (p->lane_hist[lane][now % kLaneHist].load(std::memory_order_relaxed) & kBriefOpen) {
      slot = nullptr;
      return false;
    }
    seq = now + 1;
    p->lane_seq[lane].store(seq, std::memory_order_relaxed);
    slot = &p->lane_hist[lane][seq % kLaneHist];
    slot->store(d.coll_brief_[size_t(op)] | flags | uint64_t(seq) << 32, std::memory_order_relaxed);
    // This thread's frame: a wait of this thread, deeper on its stack, finds its lane by it.
    relaxed_store(d.lane_args_[lane].frame, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)));
    return true;
  }
  // A tool is on: numbered and kept as above, described at once, and shown to the tools.
  template <class MakeGeom, class MakeArgs>
  [[gnu::always_inline]] static std::atomic<uint64_t>* enter_tools(Dfx& d, Op op, int lane, MakeGeom& geom,
                                                                    MakeArgs& make, uint64_t flags) {
    uint32_t seq;
    std::atomic<uint64_t>* slot;
    if (!enter(d, op, lane, flags, seq, slot)) return nullptr;
    const CollGeom g = geom();
    if (lane == kActiveSetLane) d.lane_geometry(lane, g.start, g.stride, g.size);
    d.coll_begin(op, lane, seq, g.start, g.stride, g.size, g.me, make());
    return slot;
  }
#endif

  // Kept in a register: nothing here has its address taken (the event of the tools lives
  // in Dfx::coll_begin's thread-local storage), and one word is all that lives across the
  // collective.
  std::atomic<uint64_t>* slot_;  // this collective's brief word on the page; null inside another
};

// Whether collectives are kept on the page (CollScope does something): false with
// SYMMEM_STATUS=0 and no tool on, and with the hooks compiled out. The small collectives
// (barrier, team sync) test it first, so that without it they are their sync alone.
[[gnu::always_inline]] inline bool colls_kept(const Dfx& d) { return SYMMEM_DFX_HOOKS && d.colls_ != kCollsOff; }

// The seam to the tools above the runtime (src/dfx/, a layer of its own): the runtime never
// includes them; src/dfx/tools.cpp fills this table when the library loads. Empty (the
// runtime layer linked alone, as in unit tests): no tool, statics named by offset, no watch.
class Service {  // a tool's own thread (the hang watch); destroying it stops the thread
 public:
  virtual ~Service() = default;
};
struct ToolSeam {
  // The tool behind `bit`, made for the instance `impl` (a Runtime::Impl*), or null.
  std::unique_ptr<ToolHooks> (*make_tool)(Tool bit, void* impl, const Config& cfg);
  // "static 'name' +off" for an address inside a variable of the executable; "" when none.
  std::string (*static_name)(uintptr_t addr);
  // The PEs' own hang deadline (SYMMEM_HANG_TIMEOUT without symmem-run) on instance `impl`.
  std::unique_ptr<Service> (*watch_hangs)(void* impl, double hang_s);
};
extern ToolSeam tool_seam;  // zero until the dfx layer's static initializer runs

}  // namespace symmem::dfx
