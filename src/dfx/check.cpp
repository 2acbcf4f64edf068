// SYMMEM_CHECK (docs/dfx.md "Checks"): every RMA and atomic is checked before it runs (PE,
// range inside one live allocation or the static data, use after free, atomic alignment,
// nbi overlap), every collective's arguments are compared with its peers', and a PE that
// waits in a collective longer than SYMMEM_CHECK_STALL looks at where its peers are.
//
// Collective comparison reads the peers' status pages (dfx_page.hpp) on this node, no
// messages: at coll_end a PE compares its record of (team, number) with its neighbours' in
// the team (whichever of a pair ends later sees the other's record, and equality along the
// ring covers the team; barriers need only the next one); the allocator compares with every PE once all have entered
// (coll_arrived), so a wrong-size malloc is the check's one report; a PE that sleeps in a
// collective compares with every member that has posted the same number (wait_tick), which
// catches a reordered collective before it deadlocks. A peer on another node has its page
// read over UCX (the metadata is registered for the syncs: two reads of the collective
// ring, a record kept where both agree): every member's when sleeping in a collective, and
// at level 2 the neighbour's there at coll_end too; the allocator compares on the node only
// (its own exchange catches malloc mismatches across nodes).
// pSync (active-set) collectives share one lane whose numbers do not line up between PEs:
// they get the local checks only.
//
// A failure prints one report (one PE per node, elected on the node's first page) and ends
// the job with exit code 2.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/log.hpp"
#include "runtime/dfx.hpp"
#include "dfx/names.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem::dfx {
namespace {

// Fields of a collective's fingerprint, as bits of a difference mask.
enum Field : uint32_t { kFOp = 1, kFRoot = 2, kFBytes = 4, kFElem = 8, kFRedop = 16, kFDest = 32, kFSrc = 64 };

const char* redop_op(uint32_t id) {
  static const char* const ops[] = {"?", "and", "or", "xor", "max", "min", "sum", "prod"};
  const uint32_t o = id >> 16;
  return o < 8 ? ops[o] : "?";
}

std::string redop_name(uint32_t id) {
  if (id == 0) return "none";
  static const char* const kinds[] = {"uint", "int", "float", "complex"};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s %s%u", redop_op(id), kinds[(id >> 8) & 3], (id & 0xff) * 8);
  return buf;
}

bool overlap(uintptr_t a, size_t na, uintptr_t b, size_t nb) { return na && nb && a < b + nb && b < a + na; }

std::string json_str(const std::string& v) {
  std::string o = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (uint8_t(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", unsigned(uint8_t(c)));
      o += b;
    } else {
      o += c;
    }
  }
  o += '"';
  return o;
}

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  s += ']';
  return s;
}

class CheckTool final : public ToolHooks {
 public:
  CheckTool(Runtime::Impl* r, const Config& cfg)
      : r_(r), level_(int(cfg.check)), stall_ns_(cfg.check_stall > 0 ? uint64_t(cfg.check_stall * 1e9) : 0),
        json_path_(cfg.check_file) {
    warm_up_call_sites();
  }

  void op_begin(OpEvent& ev) override;
  void coll_begin(CollEvent& ev) override;
  // Level 1 reads an off-node neighbour's page only while sleeping in a collective (two
  // UCX round trips: 4-5x a cross-node barrier); level 2 at every collective's end too.
  void coll_end(CollEvent& ev) override { compare(ev, true, level_ >= 2); }
  void coll_arrived(CollEvent& ev) override { compare(ev, false, false); }
  void wait_tick(const WaitRecord& w) override;
  // A walk of the stack for a collective's call site costs microseconds: level 1 walks it
  // at the entry of the slow collective calls (allocation, teams), once a wait in any other
  // has lasted a millisecond, and when reporting; level 2 at every entry.
  void allocated(uint64_t off, uint64_t size, uint32_t) override {
    hit_len_.store(0, std::memory_order_relaxed);
    for (auto it = freed_.lower_bound(off); it != freed_.end() && it->first < off + size;) it = freed_.erase(it);
    auto it = freed_.lower_bound(off);
    if (it != freed_.begin() && (--it)->first + it->second.size > off) freed_.erase(it);
  }
  void freed(uint64_t off) override {
    hit_len_.store(0, std::memory_order_relaxed);
    if (const Allocation* a = r_->dfx_.allocation_of(reinterpret_cast<void*>(r_->my_heap_ + off), 1))
      freed_[off] = {a->number, a->size};
  }

 private:
  struct Freed {
    uint32_t number;
    uint64_t size;
  };
  // What a peer says about (lane, team, number).
  enum class Found { kYes, kNotYet, kGone };

  Found find(int pe, const CollEvent& ev, uint32_t rel, CollRecord* out) const;
  Found find_in(int pe, int lane, uint32_t team_id, uint32_t rel, CollRecord* out) const;
  bool has_record_of(int pe, int lane, uint32_t team_id) const;
  uint32_t differ(const CollRecord& a, int pa, const CollRecord& b, int pb) const;
  int64_t heap_off(uint64_t addr, int pe) const;
  std::string text(const CollRecord& c, int pe, uint32_t fields) const;
  std::string team_name(const CollEvent& ev) const;
  std::string peer_state(int pe, const CollEvent& ev) const;
  void compare(const CollEvent& ev, bool neighbours_only, bool remote);
  // PE pe's page: in place on this node; from another node, its head and collective ring
  // fetched over UCX into a copy (null when that node cannot be read: no UCX).
  const Page* view(int pe) const;
  bool local(int pe) const { return pe == r_->rank_ || r_->routes_[pe] == Route::kShm; }
  [[noreturn]] void mismatch(const CollEvent& ev, int culprit, uint32_t fields, const char* why);
  [[noreturn]] void local_failure(const OpEvent& ev, const std::string& what, const char* hint);
  [[noreturn]] void coll_local_failure(const CollEvent& ev, const std::string& what, const char* hint);
  // Prints the report (one PE per node), writes its JSON twin (`json`: the members after
  // the schema's) and ends the job.
  [[noreturn]] void fatal(std::string report, const std::string& reason, const std::string& json);
  std::string range_problem(uintptr_t a, size_t n, const char** hint) const;

  void record_site(CollRecord& r);

  Runtime::Impl* r_;
  int level_;
  uint64_t stall_ns_;
  std::string json_path_;  // SYMMEM_CHECK_FILE
  std::map<uint64_t, Freed> freed_;  // blocks freed since, by heap offset (use after free)
  // The allocation the last range check found, checked first (threads of a PE may race on
  // the pair; a torn pair can only skip a check, never report a good call).
  std::atomic<uintptr_t> hit_lo_{0};
  std::atomic<uint64_t> hit_len_{0};
  // wait_tick: the collective last compared and when to look again, per thread (threads of
  // a PE may wait in collectives at once).
  struct Tick {
    const CheckTool* tool = nullptr;
    uint64_t key = ~0ull, next_tick_ns = 0, next_stall_ns = 0;
  };
  static thread_local Tick t_tick_;
  mutable std::map<int, std::unique_ptr<Page>> copies_;  // view()'s copies of remote pages
};

const Page* CheckTool::view(int pe) const {
  if (local(pe)) return &r_->meta(pe)->dfx;
  if (r_->ucx_ == nullptr) return nullptr;
  std::unique_ptr<Page>& c = copies_[pe];
  if (!c) c = std::make_unique<Page>();
  r_->fetch_dfx_page(pe, c.get());
  return c.get();
}

}  // namespace
}  // namespace symmem::dfx

namespace symmem::dfx {
namespace {

// ---------------------------------------------------------------- local checks

std::string CheckTool::range_problem(uintptr_t a, size_t n, const char** hint) const {
  const Dfx& d = r_->dfx_;
  char buf[256];
  const uintptr_t heap = r_->my_heap_;
  if (a - heap < r_->heap_size_) {
    if (d.allocation_of(reinterpret_cast<void*>(a), n)) return "";
    const uint64_t off = a - heap;
    if (const Allocation* al = d.allocation_of(reinterpret_cast<void*>(a), 1)) {
      const uint64_t end = al->offset + al->size;
      std::snprintf(buf, sizeof buf, "the range runs %" PRIu64 " bytes past allocation #%u (%s)",
                    uint64_t(off + n - end), al->number, format_size(al->size).c_str());
      *hint = "a transfer must lie inside one symmetric allocation";
      return buf;
    }
    auto it = freed_.upper_bound(off);
    if (it != freed_.begin() && off - (--it)->first < it->second.size) {
      std::snprintf(buf, sizeof buf, "use after free: allocation #%u (%s) was freed by shmem_free", it->second.number,
                    format_size(it->second.size).c_str());
      *hint = "the block was freed (collectively) before this call; keep it until every PE is done with it";
      return buf;
    }
    std::snprintf(buf, sizeof buf, "heap offset %" PRIu64 " is in no live allocation", off);
    *hint = "pass an address returned by shmem_malloc (or a global variable)";
    return buf;
  }
  if (a - r_->static_start_ < r_->static_size_) {
    const uint64_t left = r_->static_size_ - (a - r_->static_start_);
    if (n <= left) return "";
    std::snprintf(buf, sizeof buf, "the range runs %" PRIu64 " bytes past the end of the program's static data",
                  uint64_t(n - left));
    *hint = "a transfer must lie inside the symmetric heap or the program's global variables";
    return buf;
  }
  *hint = "remote addresses must be symmetric: from shmem_malloc, or a global or static variable";
  return "not a symmetric address (neither in the symmetric heap nor in the program's static data)";
}

void CheckTool::op_begin(OpEvent& ev) {
  char buf[160];
  if (static_cast<unsigned>(ev.pe) >= static_cast<unsigned>(r_->npes_)) {
    std::snprintf(buf, sizeof buf, "pe %d out of range [0,%d)", ev.pe, r_->npes_);
    local_failure(ev, buf, "PE numbers run from 0 to shmem_n_pes()-1");
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(ev.addr);
  const size_t n = ev.bytes;
  if (n == 0) return;
  if (n == SIZE_MAX) local_failure(ev, "the element count times the stride overflows", "check nelems and the stride");
  const uintptr_t lo = hit_lo_.load(std::memory_order_relaxed);
  const uint64_t len = hit_len_.load(std::memory_order_relaxed);
  if (a - lo >= len || n > len - (a - lo)) {
    const char* hint = "";
    std::string why = range_problem(a, n, &hint);
    if (!why.empty()) local_failure(ev, why, hint);
    if (const Allocation* al = r_->dfx_.allocation_of(ev.addr, n)) {
      hit_len_.store(0, std::memory_order_relaxed);
      hit_lo_.store(r_->my_heap_ + al->offset, std::memory_order_relaxed);
      hit_len_.store(al->size, std::memory_order_relaxed);
    }
  }
  if ((ev.op == Op::kAmo || ev.op == Op::kAmoFetch) && (n & (n - 1)) == 0 && a % n != 0) {
    std::snprintf(buf, sizeof buf, "misaligned atomic: a %zu-byte atomic needs an address that is a multiple of %zu "
                  "(this one is %zu past)", n, n, size_t(a % n));
    local_failure(ev, buf, "atomics work on naturally aligned objects");
  }
  if ((ev.op == Op::kPutNbi || ev.op == Op::kGetNbi) && ev.pe == r_->rank_ && ev.local &&
      overlap(a, n, reinterpret_cast<uintptr_t>(ev.local), n))
    local_failure(ev, "the local buffer overlaps the remote range (target is this PE)",
                  "source and destination of a non-blocking transfer must not overlap");
}

thread_local CheckTool::Tick CheckTool::t_tick_;

void CheckTool::record_site(CollRecord& r) {
  const uint64_t site = encode_site(user_call_site());
  const uint32_t s = r.seq.load(std::memory_order_relaxed);
  r.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  relaxed_store(r.call_site, site);
  r.seq.store(s + 2, std::memory_order_release);
}

void CheckTool::coll_begin(CollEvent& ev) {
  if (ev.record && (level_ >= 2 || ev.op == Op::kAlloc || ev.op == Op::kFree || ev.op == Op::kTeamSplit ||
                    ev.op == Op::kTeamDestroy))
    record_site(*ev.record);

  // Local rules of the data collectives (OpenSHMEM 1.5 §9.9): dest inside one allocation;
  // reductions, scans and broadcasts take the same or disjoint buffers, collect-style ones
  // disjoint buffers.
  const uintptr_t d = reinterpret_cast<uintptr_t>(ev.dest), sp = reinterpret_cast<uintptr_t>(ev.src);
  size_t dn = 0, sn = 0;
  bool same_ok = true;
  switch (ev.op) {
    case Op::kBroadcast:
    case Op::kReduce:
    case Op::kScan: dn = sn = ev.bytes; break;
    case Op::kFcollect: dn = ev.bytes * size_t(ev.size), sn = ev.bytes, same_ok = false; break;
    case Op::kAlltoall: dn = sn = ev.bytes * size_t(ev.size), same_ok = false; break;
    default: return;
  }
  if (!d || !dn) return;
  const char* hint = "";
  std::string why = range_problem(d, dn, &hint);
  if (!why.empty()) coll_local_failure(ev, "dest: " + why, hint);
  if (sp && overlap(d, dn, sp, sn) && !(same_ok && d == sp))
    coll_local_failure(ev, same_ok ? "dest and source overlap without being the same buffer" : "dest and source overlap",
                       same_ok ? "pass the same buffer (in place) or disjoint ones"
                               : "this collective needs disjoint dest and source buffers");
}

// ---------------------------------------------------------------- collective comparison

int64_t CheckTool::heap_off(uint64_t addr, int pe) const {
  const uint64_t base = r_->my_heap_ + (int64_t(pe) - r_->rank_) * int64_t(r_->heap_size_);
  return addr - base < r_->heap_size_ ? int64_t(addr - base) : -1;
}

CheckTool::Found CheckTool::find(int pe, const CollEvent& ev, uint32_t rel, CollRecord* out) const {
  return find_in(pe, ev.lane, ev.team_id, rel, out);
}

CheckTool::Found CheckTool::find_in(int pe, int lane, uint32_t team_id, uint32_t rel, CollRecord* out) const {
  const Page* pp = view(pe);
  if (!pp) return Found::kNotYet;
  const Page& p = *pp;
  const uint64_t k = p.coll_count.load(std::memory_order_acquire);
  bool ahead = false;
  for (uint64_t i = k; i > 0 && k - i < uint64_t(kCollRing); --i) {
    CollRecord c;
    if (!read_stable(p.colls[(i - 1) % kCollRing], &c)) continue;
    if (c.lane != uint16_t(lane) || c.team_id != team_id) continue;
    if (c.team_rel == rel) {
      std::memcpy(static_cast<void*>(out), static_cast<const void*>(&c), sizeof c);
      return Found::kYes;
    }
    if (c.team_rel < rel) return Found::kNotYet;
    ahead = true;
  }
  return ahead ? Found::kGone : Found::kNotYet;
}

bool CheckTool::has_record_of(int pe, int lane, uint32_t team_id) const {
  const Page* pp = view(pe);
  if (!pp) return false;
  const Page& p = *pp;
  const uint64_t k = p.coll_count.load(std::memory_order_acquire);
  for (uint64_t i = k; i > 0 && k - i < uint64_t(kCollRing); --i) {
    CollRecord c;
    if (read_stable(p.colls[(i - 1) % kCollRing], &c) && c.lane == uint16_t(lane) && c.team_id == team_id) return true;
  }
  return false;
}

uint32_t CheckTool::differ(const CollRecord& a, int pa, const CollRecord& b, int pb) const {
  if (a.op != b.op) return kFOp;
  const Op op = Op(a.op);
  uint32_t m = 0;
  if (op == Op::kTeamSplit || op == Op::kTeamDestroy || op == Op::kBarrier || op == Op::kSync) return 0;
  if (a.root != b.root) m |= kFRoot;
  if (a.bytes != b.bytes && op != Op::kCollect) m |= kFBytes;
  if (a.elem_size != b.elem_size) m |= kFElem;
  if (a.redop != b.redop) m |= kFRedop;
  const int64_t da = heap_off(a.dest, pa), db = heap_off(b.dest, pb);
  if ((a.dest == 0) != (b.dest == 0) || (da >= 0 && db >= 0 && da != db)) m |= kFDest;
  if (op != Op::kBroadcast) {
    const int64_t sa = heap_off(a.src, pa), sb = heap_off(b.src, pb);
    if ((a.src == 0) != (b.src == 0) || (sa >= 0 && sb >= 0 && sa != sb)) m |= kFSrc;
  }
  return m;
}

std::string CheckTool::text(const CollRecord& c, int pe, uint32_t fields) const {
  const Op op = Op(c.op);
  std::string s = op_name(op);
  char buf[128];
  // A peer's heap address as this PE names it.
  auto name = [&](uint64_t addr) {
    const int64_t off = heap_off(addr, pe);
    if (!addr) return std::string("NULL");
    if (off < 0) return r_->dfx_.describe(reinterpret_cast<void*>(addr));
    return r_->dfx_.describe(reinterpret_cast<void*>(r_->my_heap_ + uint64_t(off)));
  };
  switch (op) {
    case Op::kAlloc:
      std::snprintf(buf, sizeof buf, " size=%" PRIu64 " (%s)", c.bytes, format_size(c.bytes).c_str());
      s += buf;
      if (fields & kFElem) s += " align=" + std::to_string(c.elem_size);
      if (c.src) s += " old=" + name(c.src);
      return s;
    case Op::kFree: return s + " " + name(c.dest);
    case Op::kBarrier:
    case Op::kSync:
    case Op::kTeamSplit:
    case Op::kTeamDestroy: return s;
    default: break;
  }
  if (c.root >= 0) s += " root=" + std::to_string(c.root);
  if (c.redop) s += " op=" + redop_name(c.redop);
  if (c.elem_size > 1 || (fields & kFElem)) {
    std::snprintf(buf, sizeof buf, " nelems=%" PRIu64 " (%u-byte elements)", c.bytes / c.elem_size, c.elem_size);
    s += buf;
  } else {
    s += " bytes=" + std::to_string(c.bytes);
  }
  if (fields & kFDest) s += " dest=" + name(c.dest);
  if (fields & kFSrc) s += " source=" + name(c.src);
  return s;
}

std::string CheckTool::team_name(const CollEvent& ev) const {
  if (ev.lane == 0) return "TEAM_WORLD";
  if (ev.lane == 1) return "TEAM_SHARED";
  char buf[96];
  std::snprintf(buf, sizeof buf, "team of PEs %d..%d stride %d (slot %d)", ev.start,
                ev.start + (ev.size - 1) * ev.stride, ev.stride, ev.lane);
  return buf;
}

// Where a peer that has not posted this collective is, from its page.
std::string CheckTool::peer_state(int pe, const CollEvent& ev) const {
  const Page* pp = view(pe);
  if (!pp) return "on another node, not readable";
  const Page& p = *pp;
  const auto st = State(p.state.load(std::memory_order_acquire));
  std::string s = "has not entered it: ";
  const uint64_t k = p.coll_count.load(std::memory_order_acquire);
  CollRecord c;
  if (k > 0 && read_stable(p.colls[(k - 1) % kCollRing], &c) && !c.done &&
      (st == State::kInCall || st == State::kWaiting)) {
    char buf[160];
    const bool same = c.lane == uint16_t(ev.lane) && c.team_id == ev.team_id;
    std::snprintf(buf, sizeof buf, "in %s #%u on %s", op_name(Op(c.op)), c.team_rel,
                  same ? "this team" : c.lane == 0 ? "TEAM_WORLD" : c.lane == kActiveSetLane ? "an active set"
                                                                                          : "another team");
    s += buf;
    const std::string site = site_name(c.call_site);
    if (!site.empty()) s += " at " + site;
    return s;
  }
  return s + state_name(st);
}

void CheckTool::compare(const CollEvent& ev, bool neighbours_only, bool remote) {
  // (no record: more threads of this PE in collectives than the page's ring holds)
  if (ev.lane == kActiveSetLane || ev.size < 2 || ev.record == nullptr) return;
  const CollRecord& mine = *ev.record;
  auto check = [&](int i) {
    const int w = ev.start + i * ev.stride;
    if (i == ev.me || (!remote && !local(w))) return;
    CollRecord c;
    if (find(w, ev, ev.team_rel, &c) != Found::kYes) return;
    if (uint32_t m = differ(mine, r_->rank_, c, w)) mismatch(ev, w, m, nullptr);
  };
  if (neighbours_only) {
    // No member leaves a barrier or sync before all have entered: the next one's record is
    // there. Other collectives let some leave early (a broadcast's root), so the one that
    // ends later of each pair compares: both neighbours.
    check((ev.me + 1) % ev.size);
    const bool syncing = ev.op == Op::kBarrier || ev.op == Op::kSync;
    if (ev.size > 2 && !syncing) check((ev.me + ev.size - 1) % ev.size);
  } else {
    for (int i = 0; i < ev.size; ++i) check(i);
  }
}

void CheckTool::wait_tick(const WaitRecord& w) {
  const CollEvent* ev = CollScope::current();
  if (!ev || !ev->record) return;
  const uint64_t now = now_ns();
  // (w may be another thread's wait: its fields are written with relaxed stores)
  const uint64_t since = std::atomic_ref<const uint64_t>(w.since_ns).load(std::memory_order_relaxed);
  if (ev->record->call_site == 0 && now - since > 1'000'000) record_site(*ev->record);
  if (ev->lane == kActiveSetLane || ev->size < 2) return;
  const uint64_t key = uint64_t(ev->lane) << 32 | ev->team_rel;
  Tick& t = t_tick_;
  if (t.tool != this) t = Tick{this};
  if (key != t.key) {  // (the 20 ms between comparisons hold across calls: a wait that
    t.key = key;        // lasts comes back here, a short one was compared at coll_end)
    t.next_stall_ns = ev->record->t_enter_ns + stall_ns_;
  }
  if (now >= t.next_tick_ns) {  // sleeping anyway: compare with every member that has posted
    t.next_tick_ns = now + 20'000'000;
    compare(*ev, false, true);
  }
  if (stall_ns_ == 0 || now < t.next_stall_ns) return;
  t.next_stall_ns = now + 5'000'000'000ull;
  // Stuck a while: a member that went past this call without it, or that is blocked in
  // another team's collective, will never arrive here.
  for (int i = 0; i < ev->size; ++i) {
    const int w = ev->start + i * ev->stride;
    if (i == ev->me) continue;
    CollRecord c;
    const Found f = find(w, *ev, ev->team_rel, &c);
    if (f == Found::kGone)
      mismatch(*ev, w, 0, "has gone past this call without a record of it (it skipped it, or ran far ahead)");
    if (f != Found::kNotYet) continue;
    const Page* pw = view(w);
    if (!pw) continue;
    const Page& p = *pw;
    const auto st = State(p.state.load(std::memory_order_acquire));
    const uint64_t k = p.coll_count.load(std::memory_order_acquire);
    if (k == 0 || (st != State::kInCall && st != State::kWaiting)) continue;
    if (!read_stable(p.colls[(k - 1) % kCollRing], &c) || c.done) continue;
    if (c.lane == uint16_t(ev->lane) && c.team_id == ev->team_id) continue;
    // w waits in team U's call #j. Proof of a cycle: a member of U that has entered this
    // call (so it does not come to U's #j until this one ends) has not entered U's #j. A
    // member of U: anyone for the world; otherwise a PE with a record of U in its ring.
    for (int q = 0; q < r_->npes_; ++q) {
      if (q == w || (!local(q) && r_->ucx_ == nullptr)) continue;
      CollRecord mine_q, theirs_q;
      const bool here = q == r_->rank_ || find(q, *ev, ev->team_rel, &mine_q) == Found::kYes;
      if (!here || (c.lane != 0 && !has_record_of(q, c.lane, c.team_id))) continue;
      if (find_in(q, c.lane, c.team_id, c.team_rel, &theirs_q) == Found::kNotYet)
        mismatch(*ev, w, 0, "is blocked in a collective of another team: the teams' calls are ordered differently");
    }
  }
}

// ---------------------------------------------------------------- reports

void CheckTool::fatal(std::string report, const std::string& reason, const std::string& json) {
  // One reporter per job: the first PE to claim the word on PE 0's page (over UCX from
  // another node: its atomics are the CPU's, coherent with those of PE 0's node).
  std::atomic<int32_t>& claim = r_->meta(0)->dfx.check_claim;
  bool won;
  if (local(0)) {
    int32_t none = 0;
    won = claim.compare_exchange_strong(none, r_->rank_ + 1);
  } else {
    won = r_->ucx_ == nullptr ||
          r_->ucx_->amo(UcxAmo::kCswap, &claim, uint64_t(r_->rank_ + 1), 0, 4, 0, true) == 0;
  }
  if (won) {
    const std::string job = r_->env_.job_id.empty() ? std::to_string(getpid()) : r_->env_.job_id;
    const std::string path = json_path_.empty() ? "symmem-check-" + job + ".json" : json_path_;
    std::string j = "{\"schema\":\"symmem-check/1\",\"job\":";
    j += json_str(r_->env_.job_id);
    j += ",\"pe\":" + std::to_string(r_->rank_) + ",\"npes\":" + std::to_string(r_->npes_);
    j += json;
    j += ",\"text\":";
    j += json_str(report);
    j += "}\n";
    std::FILE* f = std::fopen(path.c_str(), "w");
    bool ok = f && std::fwrite(j.data(), 1, j.size(), f) == j.size();
    if (f) ok &= std::fclose(f) == 0;
    // The last line says the job ends: the file's line goes before it.
    const size_t at = report.rfind("\n  job ends");
    const std::string line = "\n  JSON: " + (ok ? path : "cannot write " + path);
    if (at != std::string::npos) report.insert(at, line);
    else report += line;
    log_pe(LogLevel::kError, r_->rank_, "%s", report.c_str());
    r_->end_job(JobFailure::Kind::kError, 2, reason);
  }
  // Another PE is reporting: it ends the job; end this PE if that takes long.
  for (int i = 0; i < 500; ++i) {
    usleep(10000);
    r_->job_failing_seen();
  }
  r_->end_job(JobFailure::Kind::kError, 2, reason);
}

void CheckTool::local_failure(const OpEvent& ev, const std::string& what, const char* hint) {
  const bool src_side = ev.op == Op::kGet || ev.op == Op::kGetNbi;
  char head[512];
  std::snprintf(head, sizeof head, "CHECK: %s(%s=%s, bytes=%zu, pe=%d): %s", ev.call ? ev.call : op_name(ev.op),
                src_side ? "source" : "dest", r_->dfx_.describe(ev.addr).c_str(), ev.bytes, ev.pe, what.c_str());
  std::string rep = head;
  const std::string site = site_name(encode_site(user_call_site()));
  if (!site.empty()) rep += "\n  at " + site;
  if (*hint) rep += std::string("\n  hint: ") + hint;
  rep += "\n  job ends (exit 2)";
  std::string j = ",\"kind\":\"call\",\"call\":";
  j += json_str(ev.call ? ev.call : op_name(ev.op));
  j += src_side ? ",\"source\":" : ",\"dest\":";
  j += json_str(r_->dfx_.describe(ev.addr));
  j += ",\"bytes\":" + std::to_string(ev.bytes) + ",\"target_pe\":" + std::to_string(ev.pe) + ",\"problem\":";
  j += json_str(what);
  j += ",\"site\":";
  j += json_str(site);
  j += ",\"hint\":";
  j += json_str(hint);
  fatal(rep, std::string("CHECK: ") + (ev.call ? ev.call : op_name(ev.op)) + ": " + what, j);
}

void CheckTool::coll_local_failure(const CollEvent& ev, const std::string& what, const char* hint) {
  char head[512];
  std::snprintf(head, sizeof head, "CHECK: %s on %s, call #%u (dest=%s, bytes=%zu): %s", op_name(ev.op),
                team_name(ev).c_str(), ev.team_rel, r_->dfx_.describe(ev.dest).c_str(), ev.bytes, what.c_str());
  std::string rep = head;
  if (ev.record && ev.record->call_site == 0) record_site(*ev.record);
  const std::string site = ev.record ? site_name(ev.record->call_site) : std::string();
  if (!site.empty()) rep += "\n  at " + site;
  if (*hint) rep += std::string("\n  hint: ") + hint;
  rep += "\n  job ends (exit 2)";
  std::string j = ",\"kind\":\"collective call\",\"op\":";
  j += json_str(op_name(ev.op));
  j += ",\"team\":";
  j += json_str(team_name(ev));
  j += ",\"seq\":" + std::to_string(ev.team_rel) + ",\"dest\":";
  j += json_str(r_->dfx_.describe(ev.dest));
  j += ",\"bytes\":" + std::to_string(ev.bytes) + ",\"problem\":";
  j += json_str(what);
  j += ",\"site\":";
  j += json_str(site);
  j += ",\"hint\":";
  j += json_str(hint);
  fatal(rep, std::string("CHECK: ") + op_name(ev.op) + ": " + what, j);
}

void CheckTool::mismatch(const CollEvent& ev, int culprit, uint32_t fields, const char* why) {
  if (ev.record->call_site == 0) record_site(*ev.record);  // inside the call: this PE's stack is the user's
  const CollRecord& mine = *ev.record;
  // Every member's view of this call, grouped by value (members on other nodes apart).
  struct Group {
    std::string value, site;
    std::vector<int> pes;
  };
  std::vector<Group> groups;
  std::vector<int> remote;
  uint32_t all_fields = fields;
  std::vector<CollRecord> recs(size_t(ev.size));
  std::vector<char> state(size_t(ev.size), 0);  // 0 other node, 1 posted, 2 not yet, 3 gone
  // Peers a moment behind post their record within milliseconds: give them up to 0.2 s.
  for (int attempt = 0; attempt < 20; ++attempt) {
    bool missing = false;
    all_fields = fields;
    remote.clear();
    for (int i = 0; i < ev.size; ++i) {
      const int w = ev.start + i * ev.stride;
      if (!local(w) && r_->ucx_ == nullptr) {
        remote.push_back(w);
        continue;
      }
      CollRecord& c = recs[size_t(i)];
      if (w == r_->rank_) {
        std::memcpy(static_cast<void*>(&c), static_cast<const void*>(&mine), sizeof c);
        state[size_t(i)] = 1;
      } else {
        const Found f = find(w, ev, ev.team_rel, &c);
        state[size_t(i)] = f == Found::kYes ? 1 : f == Found::kNotYet ? 2 : 3;
        missing = missing || f == Found::kNotYet;
      }
      if (state[size_t(i)] == 1) all_fields |= differ(mine, r_->rank_, c, w);
    }
    bool unsited = false;  // a blocked peer names its call site within about a millisecond
    for (int i = 0; i < ev.size; ++i) unsited = unsited || (state[size_t(i)] == 1 && recs[size_t(i)].call_site == 0);
    if ((!missing || why) && (!unsited || attempt >= 10)) break;  // a stall report's peers will not come
    usleep(10000);
  }
  for (int i = 0; i < ev.size; ++i) {
    const int w = ev.start + i * ev.stride;
    if (state[size_t(i)] == 0) continue;
    std::string value, site;
    if (state[size_t(i)] == 2 && find(w, ev, ev.team_rel, &recs[size_t(i)]) == Found::kYes) state[size_t(i)] = 1;
    if (state[size_t(i)] == 1) {
      value = text(recs[size_t(i)], w, all_fields);
      site = site_name(recs[size_t(i)].call_site);
    } else {
      value = state[size_t(i)] == 3 ? "past this call (its record of it is gone)" : peer_state(w, ev);
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.value == value; });
    if (g == groups.end()) {
      groups.push_back({value, site, {w}});
    } else {
      g->pes.push_back(w);
      if (g->site.empty()) g->site = site;  // a PE that never slept in the call has none
    }
  }
  std::string diff;
  static const char* const names[] = {"op", "root", "size", "element type", "reduce op", "dest", "source"};
  for (int b = 0; b < 7; ++b)
    if (all_fields & (1u << b)) diff += std::string(diff.empty() ? "" : ", ") + names[b];
  char head[512];
  std::snprintf(head, sizeof head, "CHECK: collective mismatch on %s, call #%u (%s): %s", team_name(ev).c_str(),
                ev.team_rel, op_name(Op(mine.op)),
                !diff.empty() ? (diff + " differs").c_str() : ("PE " + std::to_string(culprit) + " " + why).c_str());
  std::string rep = head;
  size_t width = 0;
  for (const Group& g : groups) width = std::max(width, pes_text(g.pes).size());
  for (const Group& g : groups) {
    std::string who = pes_text(g.pes);
    rep += "\n  " + who + std::string(width - who.size() + 2, ' ') + g.value;
    if (!g.site.empty()) rep += "  at " + g.site;
  }
  if (!remote.empty()) rep += "\n  " + pes_text(remote) + ": on other nodes, not compared";
  std::string j = ",\"kind\":\"collective mismatch\",\"team\":";
  j += json_str(team_name(ev));
  j += ",\"seq\":" + std::to_string(ev.team_rel) + ",\"op\":";
  j += json_str(op_name(Op(mine.op)));
  j += ",\"differs\":[";
  for (int b = 0, k = 0; b < 7; ++b)
    if (all_fields & (1u << b)) {
      if (k++) j += ',';
      j += json_str(names[b]);
    }
  j += "],\"culprit\":" + std::to_string(diff.empty() ? culprit : -1) + ",\"why\":";
  j += json_str(diff.empty() && why ? why : "");
  j += ",\"groups\":[";
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (gi) j += ',';
    j += "{\"pes\":";
    j += json_ints(groups[gi].pes);
    j += ",\"call\":";
    j += json_str(groups[gi].value);
    j += ",\"site\":";
    j += json_str(groups[gi].site);
    j += '}';
  }
  j += "],\"not_compared\":";
  j += json_ints(remote);
  // The call before, from this PE's own ring.
  if (ev.team_rel > 1) {
    CollRecord prev;
    if (find(r_->rank_, ev, ev.team_rel - 1, &prev) == Found::kYes) {
      rep += "\n  previous call on this team: #" + std::to_string(prev.team_rel) + " " + op_name(Op(prev.op));
      j += ",\"previous\":{\"seq\":" + std::to_string(prev.team_rel) + ",\"op\":";
      j += json_str(op_name(Op(prev.op)));
      j += '}';
    }
  }
  const char* hint = "every PE of a team must make the same collective calls, in the same order, with the same "
                     "arguments";
  if (all_fields & kFOp) hint = "every PE of a team must call the same collectives in the same order";
  else if (Op(mine.op) == Op::kAlloc && (all_fields & kFBytes))
    hint = "shmem_malloc is collective; every PE must pass the same size.";
  else if (Op(mine.op) == Op::kFree) hint = "shmem_free is collective; every PE must free the same block.";
  else if (all_fields & kFRoot) hint = "every PE must pass the same root (PE_root)";
  else if (all_fields & (kFRedop | kFElem)) hint = "every PE must reduce with the same operation on the same type";
  else if (all_fields & kFBytes) hint = "every PE must pass the same nelems";
  else if (all_fields & (kFDest | kFSrc)) hint = "every PE must pass the same symmetric objects";
  else if (why) hint = "a PE that skips a collective, or calls collectives of two teams in another order, blocks "
                       "the others";
  rep += std::string("\n  hint: ") + hint + "\n  job ends (exit 2)";
  j += ",\"hint\":";
  j += json_str(hint);
  fatal(rep, "CHECK: collective mismatch on " + team_name(ev) + " call #" + std::to_string(ev.team_rel), j);
}

}  // namespace

std::unique_ptr<ToolHooks> make_check_tool(void* impl, const Config& cfg) {
  return std::make_unique<CheckTool>(static_cast<Runtime::Impl*>(impl), cfg);
}

}  // namespace symmem::dfx
