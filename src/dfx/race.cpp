// Race check, level 1 (SYMMEM_RACECHECK=1; docs/dfx.md "Race check"). Two checks on the
// library's own operations:
//
// 1. nbi canaries. The source of a put_nbi / put_signal_nbi is hashed when it is issued and
//    again when it completes (this PE's next quiet, barrier or collective); the destination
//    of a get_nbi (on-node targets) is hashed once the call returns and again at completion.
//    A changed hash: the program stored into a buffer the library still owned.
//
// 2. Conflicting one-sided accesses. Every put, get and atomic writes a record (origin,
//    range, read/write/atomic, origin's epoch) into the target PE's ring (Page::race), then
//    scans that ring (over UCX when the target is on another node). Epoch = this PE's
//    number of completed world barriers (barrier_all, world sync, malloc/free). Two accesses from different PEs overlapping, at least one a
//    write and not both atomics, in the same epoch, are a race when the PE that finds the
//    other's record has done nothing since its last world barrier that could have
//    synchronised it with anybody: no wait, test, lock, get, fetching atomic nor collective
//    ("clean"). Then no happens-before path can lead from the other access to this one (it
//    would have to enter this PE through one of those), and none the other way (the other
//    record was written before this access began). Sound for what it reports; it misses
//    races after any such call, and a program that synchronises through plain loads of
//    symmetric memory (outside the OpenSHMEM memory model) is seen as not synchronising.
//
// The first finding is reported and ends the job (exit 2).
#include <dlfcn.h>
#include <unistd.h>

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "runtime/dfx.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem::dfx {

namespace {

constexpr size_t kMaxPending = 4096;
enum Kind : uint16_t { kRead = 1, kWrite = 2, kAtomic = 3 };

uint64_t hash_bytes(const void* p, size_t n) {  // FNV-1a, 8 bytes at a time
  const unsigned char* c = static_cast<const unsigned char*>(p);
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, c + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

// "file:line (function)" of a return address in process `pid` (0: this one), best effort:
// the mapping from /proc/PID/maps, then addr2line on that file.
std::string symbolize(uint64_t site, int pid) {
  if (!site) return "?";
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/maps", pid ? std::to_string(pid).c_str() : "self");
  FILE* f = std::fopen(path, "r");
  std::string file;
  uint64_t rel = 0;
  if (f) {
    char line[1024];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long lo, hi, off;
      char perms[8], name[900] = "";
      if (std::sscanf(line, "%lx-%lx %7s %lx %*s %*s %899[^\n]", &lo, &hi, perms, &off, name) < 4) continue;
      if (site < lo || site >= hi) continue;
      file = name;
      rel = site - lo + off;
      break;
    }
    std::fclose(f);
  }
  char buf[1400];
  if (file.empty() || file[0] != '/') {
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, site);
    return buf;
  }
  std::string out;
  std::snprintf(buf, sizeof buf, "addr2line -C -f -e '%s' 0x%" PRIx64 " 2>/dev/null", file.c_str(), rel - 1);
  if (FILE* p = popen(buf, "r")) {
    char fn[512] = "", loc[512] = "";
    if (std::fgets(fn, sizeof fn, p) && std::fgets(loc, sizeof loc, p)) {
      fn[std::strcspn(fn, "\n")] = 0;
      loc[std::strcspn(loc, "\n ")] = 0;  // drop " (discriminator N)"
      const char* slash = std::strrchr(loc, '/');
      if (loc[0] != '?') out = std::string(slash ? slash + 1 : loc) + " (" + fn + ")";
      else if (fn[0] != '?') out = fn;
    }
    pclose(p);
  }
  if (out.empty()) {
    const char* base = std::strrchr(file.c_str(), '/');
    std::snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base ? base + 1 : file.c_str(), rel);
    out = buf;
  }
  return out;
}

const char* kind_verb(uint16_t k) { return k == kRead ? "reads" : k == kWrite ? "writes" : "updates atomically"; }

class RaceTool final : public ToolHooks {
 public:
  explicit RaceTool(void* impl) : r_(static_cast<Runtime::Impl*>(impl)) {}

  void op_begin(OpEvent& ev) override {
    switch (ev.op) {
      case Op::kQuiet: return complete(ev.call, reinterpret_cast<uintptr_t>(ev.call_site));
      case Op::kPut: access(ev, kWrite); break;
      case Op::kPutNbi:
        access(ev, kWrite);
        canary(ev, false);
        break;
      case Op::kPutSignal:
        access(ev, kWrite);
        if (ev.call && std::strstr(ev.call, "_nbi")) canary(ev, false);
        break;
      case Op::kGet:
      case Op::kGetNbi: access(ev, kRead); break;
      case Op::kAmo:
      case Op::kAmoFetch: access(ev, kAtomic); break;
      default: break;
    }
    // Anything that may read another PE's write may order this PE after it.
    switch (ev.op) {
      case Op::kGet: case Op::kGetNbi: case Op::kAmoFetch: case Op::kWait: case Op::kTest: case Op::kLock:
        clean_.store(false, std::memory_order_relaxed);
        break;
      default: break;
    }
  }

  void op_end(OpEvent& ev) override {
    // The destination holds the data once the call returns (off the node too: with this tool
    // on, get_nbi there waits for its data).
    if (ev.op == Op::kGetNbi && ev.local && ev.bytes) canary(ev, true);
  }

  void coll_begin(CollEvent&) override {
    complete(nullptr, 0);
    clean_.store(false, std::memory_order_relaxed);
  }

  void coll_end(CollEvent& ev) override {
    const bool world_barrier = ev.lane == 0 && ev.size == r_->npes_ &&
                               (ev.op == Op::kBarrier || ev.op == Op::kSync || ev.op == Op::kAlloc || ev.op == Op::kFree);
    if (world_barrier) {
      epoch_.fetch_add(1, std::memory_order_relaxed);
      clean_.store(true, std::memory_order_relaxed);
    }
  }

  void finalize() override {
    complete("shmem_finalize", 0);
    if (skipped_)
      log_pe(LogLevel::kWarn, r_->rank_,
             "race check: %" PRIu64 " non-blocking operations were not checked for stores into their buffers (more than %zu pending at once)",
             skipped_, kMaxPending);
  }

 private:
  struct Pending {
    const char* call;
    uint64_t site;
    const void* buf;
    size_t bytes;
    uint64_t hash;
    bool dest;  // a get_nbi destination (else a put source)
    int pe;
  };

  // Where a symmetric address lies, independent of the PE's copy: heap offset or static.
  bool where(const void* addr, size_t n, uint64_t* w) const {
    const uintptr_t x = reinterpret_cast<uintptr_t>(addr);
    if (r_->in_heap(addr) && n <= r_->heap_size_ - (x - r_->my_heap_)) return *w = x - r_->my_heap_, true;
    if (r_->in_static(addr) && n <= r_->static_size_ - (x - r_->static_start_))
      return *w = kRaceStatic | (x - r_->static_start_), true;
    return false;
  }
  const void* local_addr(uint64_t w) const {
    return reinterpret_cast<const void*>((w & kRaceStatic) ? r_->static_start_ + (w & ~kRaceStatic)
                                                           : r_->my_heap_ + w);
  }

  void access(const OpEvent& ev, uint16_t kind) {
    if (!ev.bytes || static_cast<unsigned>(ev.pe) >= static_cast<unsigned>(r_->npes_)) return;
    uint64_t w;
    if (!where(ev.addr, ev.bytes, &w)) return;
    if (r_->off_node(ev.pe)) return access_remote(ev, kind, w);
    Page& tp = r_->meta(ev.pe)->dfx;
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
    // Record first, then scan (seq_cst between): of two concurrent conflicting accesses at
    // least one sees the other.
    const uint64_t k = tp.race_count.fetch_add(1, std::memory_order_seq_cst);
    RaceAccess& rec = tp.race[k % kRaceRing];
    const uint32_t s = rec.seq.fetch_add(1, std::memory_order_acq_rel) + 1;  // odd
    fill(rec, ev, kind, epoch, w);
    rec.seq.store(s + 1, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!clean_.load(std::memory_order_relaxed)) return;
    const uint64_t end = tp.race_count.load(std::memory_order_acquire);
    const uint64_t first = end > uint64_t(kRaceRing) ? end - kRaceRing : 0;
    for (uint64_t i = first; i < end; ++i) {
      if (i == k) continue;
      RaceAccess o;
      if (!read_stable(tp.race[i % kRaceRing], &o)) continue;
      judge(ev, kind, w, epoch, o);
    }
  }

  // The same for a target on another node, over UCX: the slot claimed with a fetching add
  // on the target's count, the record written between two increments of its sequence word
  // (fences between: UCX orders what a fence separates), the last increment fetching so
  // that its reply means the record is in place. Then the ring is read twice; a record that
  // differs between the reads, or is odd, was being written and is skipped.
  void access_remote(const OpEvent& ev, uint16_t kind, uint64_t w) {
    UcxTransport* u = r_->ucx_.get();
    if (u == nullptr) return;
    Page& tp = r_->meta(ev.pe)->dfx;  // an address in the job's layout, used by UCX only
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
    const uint64_t k = u->amo(UcxAmo::kAdd, &tp.race_count, 1, 0, 8, ev.pe, true, false);
    RaceAccess& slot = tp.race[k % kRaceRing];
    RaceAccess rec{};
    fill(rec, ev, kind, epoch, w);
    constexpr size_t body = offsetof(RaceAccess, origin);
    u->amo(UcxAmo::kAdd, &slot.seq, 1, 0, 4, ev.pe, false, true);  // tracked: the fence then orders it
    u->fence();
    u->put(reinterpret_cast<char*>(&slot) + body, reinterpret_cast<const char*>(&rec) + body, sizeof rec - body, ev.pe,
           true);
    u->fence();
    u->amo(UcxAmo::kAdd, &slot.seq, 1, 0, 4, ev.pe, true, false);
    if (!clean_.load(std::memory_order_relaxed)) return;
    uint64_t end = 0;
    u->get(&end, &tp.race_count, 8, ev.pe, true);
    std::vector<RaceAccess> a(kRaceRing), b(kRaceRing);
    u->get(a.data(), &tp.race[0], sizeof(RaceAccess) * kRaceRing, ev.pe, true);
    u->get(b.data(), &tp.race[0], sizeof(RaceAccess) * kRaceRing, ev.pe, true);
    const uint64_t first = end > uint64_t(kRaceRing) ? end - kRaceRing : 0;
    for (uint64_t i = first; i < end; ++i) {
      if (i == k) continue;
      const RaceAccess& o = a[i % kRaceRing];
      if ((o.seq.load(std::memory_order_relaxed) & 1) || std::memcmp(&o, &b[i % kRaceRing], sizeof o) != 0) continue;
      judge(ev, kind, w, epoch, o);
    }
  }

  // The record's body (all but its sequence word).
  void fill(RaceAccess& rec, const OpEvent& ev, uint16_t kind, uint32_t epoch, uint64_t w) {
    rec.origin = r_->rank_;
    rec.kind = kind;
    rec.call_id = r_->dfx_.intern(ev.call);
    rec.epoch = epoch;
    rec.where = w;
    rec.bytes = ev.bytes;
    rec.call_site = reinterpret_cast<uintptr_t>(ev.call_site);
  }

  // o, another access into the same PE, against this one: a race when they overlap, one
  // writes, they are not both atomic, and they lie in the same epoch.
  void judge(const OpEvent& ev, uint16_t kind, uint64_t w, uint32_t epoch, const RaceAccess& o) {
    if (o.origin == r_->rank_ || o.epoch != epoch || o.seq.load(std::memory_order_relaxed) == 0) return;
    const bool conflict = (o.kind == kWrite || kind == kWrite) || ((o.kind == kAtomic) != (kind == kAtomic));
    if (!conflict) return;
    if ((o.where & kRaceStatic) != (w & kRaceStatic)) return;
    const uint64_t lo = std::max(o.where, w), hi = std::min(o.where + o.bytes, w + ev.bytes);
    if (lo >= hi) return;
    report_conflict(ev, kind, o, lo, hi);
  }

  [[noreturn]] void report_conflict(const OpEvent& ev, uint16_t kind, const RaceAccess& o, uint64_t lo, uint64_t hi) {
    const Page& op = r_->meta(o.origin)->dfx;
    char ocall[kNameLen] = "?";
    std::string theirs;
    if (!r_->off_node(o.origin)) {
      if (o.call_id && o.call_id < op.name_count.load(std::memory_order_acquire))
        std::memcpy(ocall, op.names[o.call_id], kNameLen - 1);
      theirs = symbolize(o.call_site, op.pid);
    } else {  // the origin's page is on its node: its call's name over UCX, its site as an address
      if (o.call_id && o.call_id < kNames && r_->ucx_)
        r_->ucx_->get(ocall, op.names[o.call_id], kNameLen - 1, o.origin, true);
      char b[64];
      std::snprintf(b, sizeof b, "0x%" PRIx64 " on its node", o.call_site);
      theirs = b;
    }
    const std::string what = r_->dfx_.describe(local_addr(lo));
    const std::string mine = symbolize(reinterpret_cast<uintptr_t>(ev.call_site), 0);
    char line[2048];
    std::snprintf(line, sizeof line,
                  "symmem RACE on %s of PE %d, %" PRIu64 " bytes: PE %d %s (%s) %s, PE %d %s (%s) %s;"
                  " no ordering: both after world barrier #%u and PE %d has not waited, tested, locked, read"
                  " remote memory or joined a collective since\n  hint: separate them with shmem_barrier_all, or"
                  " have PE %d shmem_quiet and signal PE %d, and PE %d wait for that signal before its access",
                  what.c_str(), ev.pe, hi - lo, o.origin, ocall, theirs.c_str(), kind_verb(o.kind), r_->rank_,
                  ev.call ? ev.call : "?", mine.c_str(), kind_verb(kind), o.epoch, r_->rank_, o.origin, r_->rank_,
                  r_->rank_);
    log_pe(LogLevel::kError, r_->rank_, "%s", line);
    r_->end_job(JobFailure::Kind::kError, 2, "race check: conflicting accesses");
  }

  void canary(const OpEvent& ev, bool dest) {
    if (!ev.local || !ev.bytes) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.size() >= kMaxPending) {
      ++skipped_;
      return;
    }
    pending_.push_back({ev.call, reinterpret_cast<uintptr_t>(ev.call_site), ev.local, ev.bytes,
                        hash_bytes(ev.local, ev.bytes), dest, ev.pe});
  }

  // This PE's outstanding operations complete here: their buffers must be as they were.
  void complete(const char* call, uint64_t site) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) return;
    for (const Pending& p : pending_) {
      if (hash_bytes(p.buf, p.bytes) == p.hash) continue;
      const CollEvent* c = CollScope::current();
      const char* done_by = call ? call : c ? op_name(c->op) : "a collective";
      std::string buf = r_->in_heap(p.buf) || r_->in_static(p.buf) ? r_->dfx_.describe(p.buf) : "";
      char local[96];
      std::snprintf(local, sizeof local, "local buffer %p", p.buf);
      if (buf.empty()) buf = local;
      const std::string issued = symbolize(p.site, 0);
      const std::string at = site ? " (" + symbolize(site, 0) + ")" : "";
      log_pe(LogLevel::kError, r_->rank_,
             "symmem RACE on %s, %zu bytes: PE %d %s (%s) to PE %d %s; the program stored into it before its"
             " completion at %s%s\n  hint: %s",
             buf.c_str(), p.bytes, r_->rank_, p.call ? p.call : "?", issued.c_str(), p.pe,
             p.dest ? "delivers into this destination" : "reads this source", done_by, at.c_str(),
             p.dest ? "read or write a get_nbi destination only after shmem_quiet (or a barrier) returns"
                    : "reuse a put_nbi source only after shmem_quiet (or a barrier) returns, or use the blocking put");
      r_->end_job(JobFailure::Kind::kError, 2, "race check: store into a non-blocking operation's buffer");
    }
    pending_.clear();
  }

  Runtime::Impl* r_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<bool> clean_{false};  // no possible acquire since the last world barrier
  std::mutex mu_;                   // threads of one PE share the pending set
  std::vector<Pending> pending_;
  uint64_t skipped_ = 0;
};

}  // namespace

std::unique_ptr<ToolHooks> make_race_tool(void* impl) { return std::make_unique<RaceTool>(impl); }

}  // namespace symmem::dfx
