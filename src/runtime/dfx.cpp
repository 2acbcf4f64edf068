// DFX core (dfx.hpp): the status page's writers, the tool dispatch, address names.
#include "runtime/dfx.hpp"

#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/config.hpp"
#include "common/log.hpp"

namespace symmem::dfx {

__thread CollEvent* t_coll_ev = nullptr;
__thread Dfx* t_coll_dfx = nullptr;
constinit ToolSeam tool_seam = {};

namespace {

// Relaxed read-modify-write of a word only this PE writes (threads of one PE may lose an
// increment of `progress`, which is a hint, never a count).
inline void bump(std::atomic<uint64_t>& w) { w.store(w.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

}  // namespace

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

const char* state_name(State s) {
  switch (s) {
    case State::kInit: return "init";
    case State::kUser: return "user code";
    case State::kInCall: return "in call";
    case State::kWaiting: return "waiting";
    case State::kFinalized: return "finalized";
  }
  return "?";
}

const char* op_name(Op op) {
  static const char* const kNames[] = {
      "none",      "put",     "get",       "put_nbi",  "get_nbi",   "atomic",     "atomic_fetch", "put_signal",
      "signal",    "wait",    "test",      "lock",     "quiet",     "fence",      "barrier",      "sync",
      "broadcast", "collect", "fcollect",  "alltoall", "alltoalls", "reduce",     "scan",         "malloc",
      "free",      "team_split", "team_destroy"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Op::kCount));
  return size_t(op) < size_t(Op::kCount) ? kNames[size_t(op)] : "?";
}

Dfx::Dfx() : page_(nullptr), own_(new Page()) {
  page_ = own_.get();
  page_->name_count.store(1, std::memory_order_relaxed);  // id 0: no call
  for (size_t op = size_t(Op::kBarrier); op < size_t(Op::kCount); ++op)
    coll_brief_[op] = brief_word(Op(op), intern(op_name(Op(op))), 0, true);
}

void Dfx::coll_leave_described(const std::atomic<uint64_t>* slot) {
  Dfx* d = t_coll_dfx;
  t_coll_dfx = nullptr;
  if (d->tools_ != 0) d->coll_end();
  d->coll_undescribe(int((slot - &d->page_->lane_hist[0][0]) / kLaneHist));
}

Dfx::~Dfx() = default;

void Dfx::init(void* impl, const Config& cfg, int rank, int npes) {
  impl_ = impl;
  page_->rank = rank;
  page_->npes = npes;
  lane_geometry(0, 0, 1, npes);  // TEAM_WORLD (TEAM_SHARED: team.cpp, once known)
  struct Want {
    Tool bit;
    bool on;
    const char* var;
  };
  const Want wants[] = {{kToolCheck, cfg.check > 0, "SYMMEM_CHECK"},
                        {kToolStats, !cfg.stats.empty() && cfg.stats != "0", "SYMMEM_STATS"},
                        {kToolTrace, !cfg.trace.empty(), "SYMMEM_TRACE"},
                        {kToolRace, cfg.racecheck > 0, "SYMMEM_RACECHECK"}};
  for (const Want& w : wants) {
    if (!w.on) continue;
    std::unique_ptr<ToolHooks> t = tool_seam.make_tool ? tool_seam.make_tool(w.bit, impl, cfg) : nullptr;
    if (!t) {
      if (rank == 0) log_pe(LogLevel::kWarn, rank, "%s: this tool is not built into this library; ignored", w.var);
      continue;
    }
    hooks_.push_back(std::move(t));
    tools_ |= w.bit;
  }
  colls_ = tools_ != 0 ? tools_ : cfg.status ? 0 : kCollsOff;
}

void Dfx::attach(Page* page, int pid) {
  // Carry over what init recorded (names interned before the heap existed).
  std::memcpy(static_cast<void*>(page), static_cast<const void*>(own_.get()), sizeof(Page));
  page->magic = kPageMagic;
  page->version = kPageVersion;
  page->pid = pid;
  page->tools.store(tools_ | (colls_ & kCollsOff), std::memory_order_relaxed);
  page->writes_all.store(tools_ != 0, std::memory_order_relaxed);
  page->state.store(uint32_t(State::kUser), std::memory_order_release);
  page_ = page;
  for (auto& h : hooks_) h->attached();
}

void Dfx::finalize() {
  for (auto& h : hooks_) h->finalize();
  page_->state.store(uint32_t(State::kFinalized), std::memory_order_release);
}

void Dfx::finalized() {
  for (auto& h : hooks_) h->finalized();
}

void Dfx::job_ending(int failed_pe) {
  for (auto& h : hooks_) h->job_ending(failed_pe);
}

uint16_t Dfx::intern(const char* call) {
  if (!call) return 0;
  const uintptr_t key = reinterpret_cast<uintptr_t>(call);
  std::atomic<uint64_t>& slot = cache_[(key >> 3) % kCacheSlots];
  const uint64_t e = slot.load(std::memory_order_relaxed);
  if (SYMMEM_DFX_UNLIKELY((e >> 16) != key)) {
    // Another pointer may carry the same text (another translation unit): look in the page.
    std::lock_guard<std::mutex> lock(names_mu_);
    Page* p = page_;
    const uint32_t n = p->name_count.load(std::memory_order_relaxed);
    uint32_t id = 0;
    for (uint32_t i = 1; i < n; ++i)
      if (std::strncmp(p->names[i], call, kNameLen - 1) == 0) {
        id = i;
        break;
      }
    if (id == 0 && n < uint32_t(kNames)) {
      std::strncpy(p->names[n], call, kNameLen - 1);
      p->names[n][kNameLen - 1] = 0;
      p->name_count.store(n + 1, std::memory_order_release);
      id = n;
    }
    slot.store((uint64_t(key) << 16) | id, std::memory_order_relaxed);  // id 0 when full: shown as "?"
    return uint16_t(id);
  }
  return uint16_t(e & 0xffff);
}

// ---------------------------------------------------------------- point to point

void Dfx::op_begin(OpEvent& ev, Op op, const char* call, const void* addr, size_t n, int pe, const void* local,
                   void* site, const void* aux) {
  ev = {op, call, pe, addr, n, local, 0, site, aux, 0};
  for (auto& h : hooks_) h->op_begin(ev);
}

void Dfx::op_end(OpEvent& ev) {
  for (auto& h : hooks_) h->op_end(ev);
}

// ---------------------------------------------------------------- waits

bool Dfx::wait_sleep(const WaitDesc& d) {
  const int lane = coll_describe();  // a collective it waits in goes on the page first (its call, then the wait)
  Page* p = page_;
  WaitRecord& w = p->wait;
  // Claim the record; a wait of another thread that holds it stays shown.
  uint32_t free = 0;
  if (!w.held.compare_exchange_strong(free, 1, std::memory_order_acquire)) {
    p->state.store(uint32_t(State::kWaiting), std::memory_order_release);
    return false;
  }
  const uint32_t s = w.seq.load(std::memory_order_relaxed);
  w.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  relaxed_store(w.op, uint16_t(d.op));
  relaxed_store(w.call_id, d.call ? intern(d.call) : uint16_t(p->call_id.load(std::memory_order_relaxed)));
  relaxed_store(w.owner, d.owner);
  relaxed_store(w.cmp, d.cmp);
  relaxed_store(w.width, d.width);
  relaxed_store(w.nwords, d.nwords);
  relaxed_store(w.addr, reinterpret_cast<uintptr_t>(d.addr));
  relaxed_store(w.expect, d.expect);
  relaxed_store(w.vec_kind, d.vec_kind);
  relaxed_store(w.vec_count, d.vec_count);
  relaxed_store(w.vec_base, reinterpret_cast<uintptr_t>(d.vec_base));
  relaxed_store(w.vec_n, d.vec_n);
  relaxed_store(w.vec_shown, std::min<uint32_t>(d.vec_shown, kWaitWords));
  for (uint32_t k = 0; k < w.vec_shown; ++k) {
    relaxed_store(w.vec_index[k], d.vec_index[k]);
    relaxed_store(w.vec_expect[k], d.vec_expect[k]);
  }
  relaxed_store(w.team_lane, lane);
  relaxed_store(w.team_seq, lane >= 0 ? p->lane_seq[lane].load(std::memory_order_relaxed) : 0);
  relaxed_store(w.since_ns, now_ns());
  w.seq.store(s + 2, std::memory_order_release);
  p->state.store(uint32_t(State::kWaiting), std::memory_order_release);
  for (auto& h : hooks_) h->wait_sleep(w);
  return true;
}

void Dfx::wait_tick() {
  for (auto& h : hooks_) h->wait_tick(page_->wait);
}

void Dfx::wait_done(bool described) {
  Page* p = page_;
  if (described) {
    for (auto& h : hooks_) h->wait_done(p->wait);
    WaitRecord& w = p->wait;
    const uint32_t s = w.seq.load(std::memory_order_relaxed);
    w.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    relaxed_store(w.op, uint16_t(Op::kNone));
    w.seq.store(s + 2, std::memory_order_release);
    w.held.store(0, std::memory_order_release);
  }
  // Back to the enclosing call (a collective's, say) or to user code.
  p->state.store(uint32_t(p->call_id.load(std::memory_order_relaxed) ? State::kInCall : State::kUser),
                 std::memory_order_release);
  bump(p->progress);
}

void Dfx::wait_end(const WaitDesc& d, uint64_t t0_ns) {
  const uint64_t t1 = now_ns();
  for (auto& h : hooks_) h->wait_end(d, t0_ns, t1);
}

// ---------------------------------------------------------------- blocking calls

CallScope::CallScope(Dfx& d, const char* call) : d_(d) {
  d.coll_describe();
  Page* p = d.page_;
  prev_call_ = p->call_id.load(std::memory_order_relaxed);
  prev_state_ = p->state.load(std::memory_order_relaxed);
  p->call_id.store(d.intern(call), std::memory_order_relaxed);
  p->state.store(uint32_t(State::kInCall), std::memory_order_release);
}

CallScope::~CallScope() {
  Page* p = d_.page_;
  p->call_id.store(prev_call_, std::memory_order_relaxed);
  p->state.store(prev_state_, std::memory_order_release);
  bump(p->progress);
}

void Dfx::coll_begin(Op op, int lane, uint32_t seq, int start, int stride, int size, int me, const CollArgs& a) {
  static thread_local CollEvent outer;  // a thread is in one outer collective at a time
  CollEvent& ev = outer;
  ev.op = op;
  ev.lane = lane;
  ev.team_seq = seq;
  ev.start = start;
  ev.stride = stride;
  ev.size = size;
  ev.me = me;
  ev.root = a.root;
  ev.bytes = a.bytes;
  ev.elem_size = a.elem_size;
  ev.redop = a.redop;
  ev.dest = a.dest;
  ev.src = a.src;
  ev.t0_ns = 0;
  ev.record = nullptr;
  t_coll_ev = &ev;
  describe_coll(lane, page_->lane_hist[lane][seq % kLaneHist].load(std::memory_order_relaxed), &ev);
  for (auto& h : hooks_) h->coll_begin(ev);
}

void Dfx::coll_end() {
  for (auto& h : hooks_) h->coll_end(*t_coll_ev);
  t_coll_ev = nullptr;
}

int Dfx::coll_describe() {
  if (const CollEvent* c = t_coll_ev) return c->lane;  // a tool is on: described on entry
  // Without a tool: the open collective of this thread, the one whose frame is the nearest
  // above this one on the stack (another thread's lies in another thread's stack).
  const Page* p = page_;
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  constexpr uintptr_t kReach = 1u << 20;  // a wait lies within this much of its collective's frame
  int best = -1;
  uintptr_t best_frame = 0;
  uint64_t best_word = 0;
  for (int l = 0; l < kTeamLanes; ++l) {
    const uint32_t n = p->lane_seq[l].load(std::memory_order_relaxed);
    const uint64_t w = p->lane_hist[l][n % kLaneHist].load(std::memory_order_relaxed);
    if (!(w & kBriefOpen)) continue;
    const uintptr_t f = std::atomic_ref<uintptr_t>(lane_args_[l].frame).load(std::memory_order_relaxed);
    if (f <= sp || f - sp > kReach || (best >= 0 && f >= best_frame)) continue;
    best = l;
    best_frame = f;
    best_word = w;
  }
  if (best >= 0 && lane_rec_[best].rec.load(std::memory_order_relaxed) == nullptr) describe_coll(best, best_word, nullptr);
  return best;
}

bool Dfx::describe_coll(int lane, uint64_t b, const CollEvent* ev) {
  Page* p = page_;
  const Brief br = brief_of(b);
  const bool tools = ev != nullptr;
  // The lane first: another thread may be describing it (coll_describe finds a lane by
  // its frame). Then a ring slot, held by this thread until its collective ends: a slot
  // another thread holds is passed over (it is in that collective still, also when the
  // counter went once round the ring since). Holding is an exchange on this process's own
  // memory, not on the page's record: an exchange there would wait for a line the peers'
  // checks read.
  LaneRec& lr = lane_rec_[lane];
  CollRecord* none = nullptr;
  if (!lr.rec.compare_exchange_strong(none, &unrecorded_, std::memory_order_relaxed)) return false;
  CollRecord* claimed = nullptr;
  for (int tries = 0; tries < 4 * kCollRing && claimed == nullptr; ++tries) {
    const uint64_t i = p->coll_count.fetch_add(1, std::memory_order_relaxed) % kCollRing;
    // (acquire: the last holder's reads of that record came before its release)
    if (slot_held_[i].exchange(1, std::memory_order_acquire) == 0) claimed = &p->colls[i];
  }
  // Every slot held (more threads in collectives than the ring holds): not on the page; with
  // a tool on, still described (the tools' coll_end follows), without a record.
  if (claimed == nullptr && !tools) {
    lr.rec.store(nullptr, std::memory_order_relaxed);
    return false;
  }
  if (claimed != nullptr) lr.rec.store(claimed, std::memory_order_relaxed);
  // (the open collective's scope leaves through Dfx::coll_leave_described)
  std::atomic<uint64_t>& slot = p->lane_hist[lane][brief_of(b).team_seq % kLaneHist];
  slot.store(slot.load(std::memory_order_relaxed) | kBriefDescribed, std::memory_order_relaxed);
  t_coll_dfx = this;  // (its scope leaves through coll_leave_described, on this thread)
  // What the collective was called with: the tools' event, else what the lane kept of it.
  auto kept = [](auto& field) { return std::atomic_ref(field).load(std::memory_order_relaxed); };
  const bool args = (b & kBriefArgs) != 0;
  const int32_t root = tools ? int32_t(ev->root) : args ? kept(lane_args_[lane].root) : -1;
  const uint64_t bytes = tools ? uint64_t(ev->bytes) : args ? kept(lane_args_[lane].bytes) : 0;
  const LaneGeom g = tools ? LaneGeom{ev->start, ev->stride, ev->size}
                           : LaneGeom{kept(lane_geom_[lane].start), kept(lane_geom_[lane].stride), kept(lane_geom_[lane].size)};
  if (claimed != nullptr) {
    CollRecord& r = *claimed;
    const uint32_t s = r.seq.load(std::memory_order_relaxed);
    r.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    // Relaxed stores (plain moves), as every record the page's readers copy while it changes.
    relaxed_store(r.op, uint16_t(br.op));
    relaxed_store(r.lane, uint16_t(lane));
    relaxed_store(r.team_seq, br.team_seq);
    r.done.store(0, std::memory_order_relaxed);
    relaxed_store(r.root, root);
    relaxed_store(r.bytes, bytes);
    relaxed_store(r.call_id, br.call_id);
    // read by the tools only; with none on (for the whole job) they stay 0
    relaxed_store(r.elem_size, tools ? ev->elem_size : 0u);
    relaxed_store(r.redop, tools ? ev->redop : 0u);
    relaxed_store(r.dest, tools ? uint64_t(reinterpret_cast<uintptr_t>(ev->dest)) : uint64_t(0));
    relaxed_store(r.src, tools ? uint64_t(reinterpret_cast<uintptr_t>(ev->src)) : uint64_t(0));
    relaxed_store(r.call_site, uint64_t(0));
    relaxed_store(r.t_enter_ns, tools ? now_ns() : uint64_t(0));
    relaxed_store(r.t_exit_ns, uint64_t(0));
    relaxed_store(r.team_start, g.start);
    relaxed_store(r.team_stride, g.stride);
    relaxed_store(r.team_size, g.size);
    relaxed_store(r.team_id, lane_team_[lane]);
    relaxed_store(r.team_rel, br.team_seq - lane_base_[lane]);
    r.seq.store(s + 2, std::memory_order_release);
  }
  if (tools) {
    CollEvent& e = const_cast<CollEvent&>(*ev);
    e.record = claimed;
    e.team_id = lane_team_[lane];
    e.team_rel = br.team_seq - lane_base_[lane];
  }
  lr.prev_call = p->call_id.load(std::memory_order_relaxed);
  lr.prev_state = p->state.load(std::memory_order_relaxed);
  p->call_id.store(br.call_id, std::memory_order_relaxed);
  p->state.store(uint32_t(State::kInCall), std::memory_order_release);
  return true;
}

void Dfx::coll_undescribe(int lane) {
  Page* p = page_;
  LaneRec& lr = lane_rec_[lane];
  CollRecord* r = lr.rec.exchange(nullptr, std::memory_order_relaxed);
  r->done.store(1, std::memory_order_release);
  // (release: this thread's reads of the record came before a later holder's writes)
  if (r != &unrecorded_) slot_held_[r - p->colls].store(0, std::memory_order_release);
  // An outermost collective of this thread entered from user code or init. A call or wait
  // found on the page then was another thread's, which may have left since: user code
  // (a thread still inside shows again once its wait sleeps).
  const bool other = lr.prev_state == uint32_t(State::kInCall) || lr.prev_state == uint32_t(State::kWaiting);
  p->call_id.store(other ? 0 : lr.prev_call, std::memory_order_relaxed);
  p->state.store(other ? uint32_t(State::kUser) : lr.prev_state, std::memory_order_release);
  bump(p->progress);
}

void Dfx::coll_arrived() {
  if (SYMMEM_DFX_UNLIKELY(tools_ != 0) && t_coll_ev != nullptr)
    for (auto& h : hooks_) h->coll_arrived(const_cast<CollEvent&>(*t_coll_ev));
}

void Dfx::team_created(int lane, int parent_lane, int start, int stride, int size) {
  // The members agree on the parent team and on the split's number there, so on this id.
  // (the split is the parent lane's latest collective)
  const uint32_t split_rel = page_->lane_seq[parent_lane].load(std::memory_order_relaxed) - lane_base_[parent_lane];
  uint64_t h = 0x9e3779b97f4a7c15ull * (uint64_t(lane_team_[parent_lane]) + 1);
  for (uint64_t v : {uint64_t(split_rel), uint64_t(uint32_t(start)), uint64_t(uint32_t(stride)),
                     uint64_t(uint32_t(size))})
    h = (h ^ v) * 0x100000001b3ull;
  lane_team_[lane] = uint32_t(h ^ (h >> 32)) | 2u;  // never 0 or 1 (world, shared)
  lane_base_[lane] = page_->lane_seq[lane].load(std::memory_order_relaxed);
  lane_geometry(lane, start, stride, size);
}

// ---------------------------------------------------------------- allocations and names

void Dfx::allocated(uint64_t offset, uint64_t size) {
  const uint32_t number = ++alloc_count_;
  allocs_[offset] = Allocation{number, offset, size, {}};
  page_alloc_add(*page_, number, offset, size);
  for (auto& h : hooks_) h->allocated(offset, size, number);
}

void Dfx::freed(uint64_t offset) {
  for (auto& h : hooks_) h->freed(offset);
  allocs_.erase(offset);
  if (AllocSlot* a = page_alloc_find(*page_, offset)) page_alloc_write(*a, 0, 0, 0, nullptr);
}

const Allocation* Dfx::allocation_of(const void* addr, size_t n) const {
  const uint64_t off = reinterpret_cast<uintptr_t>(addr) - heap_;
  if (off >= heap_size_) return nullptr;
  auto it = allocs_.upper_bound(off);
  if (it == allocs_.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  if (off - a.offset >= a.size || n > a.size - (off - a.offset)) return nullptr;
  return &a;
}

bool Dfx::set_name(const void* addr, const std::string& name) {
  const Allocation* a = allocation_of(addr, 1);
  if (!a) return false;
  Allocation& named = allocs_[a->offset];
  named.name = name;
  if (AllocSlot* s = page_alloc_find(*page_, a->offset)) page_alloc_write(*s, s->number, s->offset, s->size, name.c_str());
  if (SYMMEM_DFX_UNLIKELY(tools_ != 0)) {
    std::string d = describe(reinterpret_cast<const void*>(heap_ + named.offset));
    if (d.size() > 3 && d.compare(d.size() - 3, 3, " +0") == 0) d.resize(d.size() - 3);
    for (auto& h : hooks_) h->named(named.offset, named.number, d);
  }
  return true;
}

std::string Dfx::describe(const void* addr) const {
  const uintptr_t x = reinterpret_cast<uintptr_t>(addr);
  char buf[160];
  if (x - static_start_ < static_size_) {
    // "static 'target' +0" from the executable's symbols (dfx/names.cpp)
    std::string sym = tool_seam.static_name ? tool_seam.static_name(x) : std::string();
    if (!sym.empty()) return sym;
    std::snprintf(buf, sizeof buf, "static data +0x%" PRIxPTR, x - static_start_);
    return buf;
  }
  if (x - heap_ >= heap_size_) {
    std::snprintf(buf, sizeof buf, "%p (not symmetric)", addr);
    return buf;
  }
  const Allocation* a = allocation_of(addr, 1);
  if (!a) {
    std::snprintf(buf, sizeof buf, "heap +%" PRIu64 " (no live allocation)", uint64_t(x - heap_));
    return buf;
  }
  std::string size = format_size(a->size);
  if (a->name.empty())
    std::snprintf(buf, sizeof buf, "allocation #%u (%s) +%" PRIu64, a->number, size.c_str(),
                  uint64_t(x - heap_ - a->offset));
  else
    std::snprintf(buf, sizeof buf, "'%s' (allocation #%u, %s) +%" PRIu64, a->name.c_str(), a->number, size.c_str(),
                  uint64_t(x - heap_ - a->offset));
  return buf;
}

}  // namespace symmem::dfx
