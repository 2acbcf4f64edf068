// The statistics tool (SYMMEM_STATS=1|2[,file=path]; docs/dfx.md "Statistics").
//
// Every thread of a PE counts into its own block (found through a thread-local cache, no
// atomics, no locks after the first operation of a thread): per operation kind and route
// (shm / ucx) calls and bytes, a row of the PE x PE matrix per kind (put, get, amo, signal),
// per team and collective kind calls, bytes, total and longest time and how often this PE
// was the last member to enter, blocked time by kind, heap high-water. Clock reads: two per
// collective (its entry time is the page record's), two per wait that does not hold at once
// (and per quiet on the UCX route), and at
// level 2 two per sampled operation (1 in SYMMEM_STATS_SAMPLE) for log2 latency histograms.
//
// Last arrival. When a collective ends, this PE looks up the page records of the same team
// lane and sequence number of its on-node teammates (CollRecord::t_enter_ns). The last
// member to enter sees every other member's record, so it can always tell that it was last;
// a PE that sees a later entry knows it was not. Teammates on other nodes: judge_remote.
//
// At finalize (collective, communication still works) every PE publishes its merged row in
// the bootstrap store; PE 0 reads them all, prints a short table and writes the JSON file
// ("schema": "symmem-stats/1").
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/config.hpp"
#include "common/log.hpp"
#include "runtime/dfx.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem::dfx {

namespace {

constexpr int kOps = int(Op::kCount);
constexpr int kRoutes = 2;  // shm, ucx
enum Kind { kKindPut, kKindGet, kKindAmo, kKindSignal, kKinds };
const char* const kKindNames[kKinds] = {"put", "get", "amo", "signal"};
enum Blocked { kBlockBarrier, kBlockCollective, kBlockWait, kBlockLock, kBlockQuiet, kBlockKinds };
const char* const kBlockNames[kBlockKinds] = {"barrier", "collective", "wait", "lock", "quiet"};
constexpr int kHistBuckets = 32;  // log2(ns): bucket b holds [2^b, 2^(b+1)) ns

int kind_of(Op op) {
  switch (op) {
    case Op::kPut: case Op::kPutNbi: case Op::kPutSignal: return kKindPut;
    case Op::kGet: case Op::kGetNbi: return kKindGet;
    case Op::kAmo: case Op::kAmoFetch: return kKindAmo;
    case Op::kSignal: return kKindSignal;
    default: return -1;
  }
}

struct Cell {
  uint64_t calls = 0, bytes = 0;
};

struct CollStat {
  int start = 0, stride = 1, size = 0;  // the team's world PEs
  uint64_t calls = 0, bytes = 0, total_ns = 0, max_ns = 0;
  uint64_t last = 0;    // this PE entered last
  uint64_t judged = 0;  // calls where this PE could tell whether it was last
};

// One thread's counters.
struct Block {
  std::thread::id owner;
  Cell ops[kOps][kRoutes];
  std::vector<Cell> matrix[kKinds];  // [target PE]
  std::map<uint32_t, CollStat> colls;  // lane << 16 | op
  uint32_t last_key = 0;                // the latest collective's entry (programs repeat one)
  CollStat* last_coll = nullptr;
  uint64_t blocked_ns[kBlockKinds] = {};
  uint64_t blocked_n[kBlockKinds] = {};
  uint64_t coll_t0 = 0;   // entry time of this thread's collective in progress
  // Collectives where every member on this node entered before this PE and the others'
  // records are on other nodes: judged in batches (judge_remote).
  struct Pending {
    uint32_t team_id, team_rel;  // the collective as every member numbers it
    uint64_t t_enter;
    int start, stride, size, me;
    CollStat* stat;
  };
  std::vector<Pending> pending;
  uint64_t tick = 0;      // level 2 sampling
  uint64_t sample_t0 = 0;
  uint64_t hist[kOps][kHistBuckets] = {};
};

// A PE's merged counters, as published at finalize.
struct Row {
  int pe = 0;
  uint64_t pid = 0, elapsed_ns = 0, heap_high = 0, allocs = 0, frees = 0;
  Cell ops[kOps][kRoutes];
  std::vector<Cell> matrix[kKinds];
  std::map<uint32_t, CollStat> colls;
  uint64_t blocked_ns[kBlockKinds] = {}, blocked_n[kBlockKinds] = {};
  uint64_t hist[kOps][kHistBuckets] = {};
  bool has_hist = false;

  uint64_t blocked_total() const {
    uint64_t t = 0;
    for (uint64_t b : blocked_ns) t += b;
    return t;
  }
};

// ---- the row on the wire: decimal numbers separated by spaces ----
void put_u(std::string& s, uint64_t v) {
  char b[24];
  const int n = std::snprintf(b, sizeof b, "%" PRIu64 " ", v);
  s.append(b, size_t(n));
}

std::string encode(const Row& r, int npes) {
  std::string s;
  put_u(s, 1);  // format
  put_u(s, uint64_t(r.pe));
  put_u(s, r.pid);
  put_u(s, r.elapsed_ns);
  put_u(s, r.heap_high);
  put_u(s, r.allocs);
  put_u(s, r.frees);
  for (int k = 0; k < kBlockKinds; ++k) put_u(s, r.blocked_ns[k]), put_u(s, r.blocked_n[k]);
  for (int o = 0; o < kOps; ++o)
    for (int q = 0; q < kRoutes; ++q) put_u(s, r.ops[o][q].calls), put_u(s, r.ops[o][q].bytes);
  for (int k = 0; k < kKinds; ++k)
    for (int p = 0; p < npes; ++p) put_u(s, r.matrix[k][size_t(p)].calls), put_u(s, r.matrix[k][size_t(p)].bytes);
  put_u(s, r.colls.size());
  for (const auto& [key, c] : r.colls) {
    put_u(s, key);
    put_u(s, uint64_t(c.start)), put_u(s, uint64_t(c.stride)), put_u(s, uint64_t(c.size));
    put_u(s, c.calls), put_u(s, c.bytes), put_u(s, c.total_ns), put_u(s, c.max_ns), put_u(s, c.last), put_u(s, c.judged);
  }
  put_u(s, r.has_hist ? 1 : 0);
  if (r.has_hist)
    for (int o = 0; o < kOps; ++o)
      for (int b = 0; b < kHistBuckets; ++b) put_u(s, r.hist[o][b]);
  return s;
}

bool decode(const std::string& s, int npes, Row* r) {
  const char* p = s.c_str();
  bool ok = true;
  auto u = [&]() -> uint64_t {
    char* e = nullptr;
    const uint64_t v = std::strtoull(p, &e, 10);
    if (e == p) ok = false;
    p = e;
    return v;
  };
  if (u() != 1) return false;
  r->pe = int(u());
  r->pid = u();
  r->elapsed_ns = u();
  r->heap_high = u();
  r->allocs = u();
  r->frees = u();
  for (int k = 0; k < kBlockKinds; ++k) r->blocked_ns[k] = u(), r->blocked_n[k] = u();
  for (int o = 0; o < kOps; ++o)
    for (int q = 0; q < kRoutes; ++q) r->ops[o][q].calls = u(), r->ops[o][q].bytes = u();
  for (int k = 0; k < kKinds; ++k) {
    r->matrix[k].assign(size_t(npes), Cell{});
    for (int q = 0; q < npes; ++q) r->matrix[k][size_t(q)].calls = u(), r->matrix[k][size_t(q)].bytes = u();
  }
  const uint64_t nc = u();
  for (uint64_t i = 0; i < nc && ok; ++i) {
    const uint32_t key = uint32_t(u());
    CollStat c;
    c.start = int(u()), c.stride = int(u()), c.size = int(u());
    c.calls = u(), c.bytes = u(), c.total_ns = u(), c.max_ns = u(), c.last = u(), c.judged = u();
    r->colls[key] = c;
  }
  r->has_hist = u() != 0;
  if (r->has_hist)
    for (int o = 0; o < kOps; ++o)
      for (int b = 0; b < kHistBuckets; ++b) r->hist[o][b] = u();
  return ok;
}

// ---- formatting ----
std::string count_str(uint64_t n) {
  char b[32];
  if (n < 10000) std::snprintf(b, sizeof b, "%" PRIu64, n);
  else if (n < 10000000) std::snprintf(b, sizeof b, "%.1f k", double(n) / 1e3);
  else std::snprintf(b, sizeof b, "%.1f M", double(n) / 1e6);
  return b;
}

std::string bytes_str(uint64_t n) {
  char b[32];
  if (n < 1024) std::snprintf(b, sizeof b, "%" PRIu64 " B", n);
  else if (n < (1ull << 20)) std::snprintf(b, sizeof b, "%.1f KiB", double(n) / 1024.0);
  else if (n < (1ull << 30)) std::snprintf(b, sizeof b, "%.1f MiB", double(n) / double(1ull << 20));
  else std::snprintf(b, sizeof b, "%.2f GiB", double(n) / double(1ull << 30));
  return b;
}

std::string secs_str(uint64_t ns) {
  char b[32];
  const double s = double(ns) * 1e-9;
  if (s >= 1.0) std::snprintf(b, sizeof b, "%.2f s", s);
  else if (s >= 1e-3) std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
  else std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  return b;
}

std::string json_str(const std::string& v) {
  std::string s = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') s += '\\', s += c;
    else if (uint8_t(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", unsigned(uint8_t(c)));
      s += b;
    } else s += c;
  }
  return s + "\"";
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// Unconditional report line through the one logger (the user asked for the table).
void say(int pe, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void say(int pe, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog_pe(LogLevel::kInfo, pe, fmt, ap);
  va_end(ap);
}

std::atomic<uint64_t> g_instances{0};

struct ThreadCache {
  uint64_t instance = 0;
  Block* block = nullptr;
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadCache t_cache;  // no __tls_get_addr per operation

class StatsTool final : public ToolHooks {
 public:
  StatsTool(void* impl, const Config& cfg) : r_(*static_cast<Runtime::Impl*>(impl)) {
    // "1", "2", "1,file=out.json"
    const std::string& v = cfg.stats;
    level_ = std::atoi(v.c_str()) >= 2 ? 2 : 1;
    size_t pos = 0;
    while ((pos = v.find(',', pos)) != std::string::npos) {
      ++pos;
      if (v.compare(pos, 5, "file=") == 0) file_ = v.substr(pos + 5, v.find(',', pos) - (pos + 5));
    }
    sample_mask_ = 63;
    if (cfg.stats_sample > 0) {
      uint64_t s = 1;
      while (s < uint64_t(cfg.stats_sample)) s <<= 1;  // a power of two: a mask test per op
      sample_mask_ = s - 1;
    }
    t_start_ = now_ns();
    main_thread_ = pthread_self();
    main_block_ = &mine_slow();
  }

  void op_begin(OpEvent& ev) override {
    if (SYMMEM_DFX_UNLIKELY(unsigned(ev.pe) >= unsigned(r_.npes_))) return;  // reported by the call
    // Waits, tests, locks, quiet and fence move no data: they count as blocked time (wait_end).
    if (ev.op == Op::kWait || ev.op == Op::kTest || ev.op == Op::kLock || ev.op == Op::kQuiet || ev.op == Op::kFence)
      return;
    Block& b = mine();
    const int route = r_.off_node(ev.pe) ? 1 : 0;
    Cell& c = b.ops[int(ev.op)][route];
    ++c.calls;
    c.bytes += ev.bytes;
    const int k = kind_of(ev.op);
    if (k >= 0) {
      Cell& m = b.matrix[k][size_t(ev.pe)];
      ++m.calls;
      m.bytes += ev.bytes;
    }
    if (ev.op == Op::kPutSignal) {  // its signal: one 8-byte update of the target's word
      Cell& m = b.matrix[kKindSignal][size_t(ev.pe)];
      ++m.calls;
      m.bytes += 8;
    }
    if (level_ >= 2 && (++b.tick & sample_mask_) == 0) b.sample_t0 = now_ns();
  }

  void op_end(OpEvent& ev) override {
    if (level_ < 2) return;
    Block& b = mine();
    if (b.sample_t0 == 0) return;
    const uint64_t dt = now_ns() - b.sample_t0;
    b.sample_t0 = 0;
    const int bucket = dt ? std::min(kHistBuckets - 1, 63 - __builtin_clzll(dt)) : 0;
    ++b.hist[int(ev.op)][bucket];
  }

  void coll_begin(CollEvent& ev) override {
    Block& b = mine();
    b.coll_t0 = ev.record && ev.record->t_enter_ns ? ev.record->t_enter_ns : now_ns();
  }

  void coll_end(CollEvent& ev) override {
    Block& b = mine();
    const uint64_t t1 = now_ns();
    const uint64_t dt = t1 - b.coll_t0;
    const uint32_t key = uint32_t(ev.lane) << 16 | uint32_t(ev.op);
    if (SYMMEM_DFX_UNLIKELY(key != b.last_key || !b.last_coll)) b.last_key = key, b.last_coll = &b.colls[key];
    CollStat& c = *b.last_coll;
    c.start = ev.start, c.stride = ev.stride, c.size = ev.size;
    ++c.calls;
    c.bytes += ev.bytes;
    c.total_ns += dt;
    c.max_ns = std::max(c.max_ns, dt);
    const int blk = ev.op == Op::kBarrier || ev.op == Op::kSync ? kBlockBarrier : kBlockCollective;
    b.blocked_ns[blk] += dt;
    ++b.blocked_n[blk];
    if (ev.record) __atomic_store_n(&ev.record->t_exit_ns, t1, __ATOMIC_RELEASE);
    int last = -1;
    if (ev.lane != kActiveSetLane) last = was_last(ev, b.coll_t0);
    if (last == kAskOtherNodes) {
      b.pending.push_back({ev.team_id, ev.team_rel, b.coll_t0, ev.start, ev.stride, ev.size, ev.me, &c});
      if (b.pending.size() >= kBatch) judge_remote(b);
    } else if (last >= 0) {
      ++c.judged;
      c.last += uint64_t(last);
    }
  }

  void wait_end(const WaitDesc& d, uint64_t t0, uint64_t t1) override {
    // A wait inside a collective is part of that collective's time.
    if (CollScope::current() != nullptr) return;
    const int blk = d.op == Op::kQuiet                                      ? kBlockQuiet
                    : d.op == Op::kLock || (d.call && std::strstr(d.call, "lock")) ? kBlockLock
                    : d.op == Op::kSync                                     ? kBlockBarrier
                                                                            : kBlockWait;
    Block& b = mine();
    b.blocked_ns[blk] += t1 - t0;
    ++b.blocked_n[blk];
  }

  void allocated(uint64_t, uint64_t, uint32_t) override {
    ++allocs_;
    heap_high_ = std::max(heap_high_, r_.alloc_ ? r_.alloc_->bytes_in_use() : 0);
  }
  void freed(uint64_t) override { ++frees_; }

  void finalize() override;

 private:
  // The thread that made the tool (the PE's main thread) skips the thread-local lookup,
  // which costs a __tls_get_addr call in a shared library.
  Block& mine() {
    if (__builtin_expect(pthread_equal(pthread_self(), main_thread_) != 0, 1)) return *main_block_;
    if (SYMMEM_DFX_UNLIKELY(t_cache.instance != id_)) return mine_slow();
    return *t_cache.block;
  }
  Block& mine_slow() {
    std::lock_guard<std::mutex> g(mu_);
    const std::thread::id me = std::this_thread::get_id();
    Block* b = nullptr;
    for (auto& x : blocks_)
      if (x->owner == me) b = x.get();
    if (!b) {
      blocks_.push_back(std::make_unique<Block>());
      b = blocks_.back().get();
      b->owner = me;
      for (auto& m : b->matrix) m.assign(size_t(r_.npes_), Cell{});
    }
    t_cache = {id_, b};
    return *b;
  }

  // 1: this PE entered last of the team's members, 0: it did not, -1: cannot tell (a
  // record already overwritten), kAskOtherNodes: last of the members on this node, and
  // members on other nodes (judge_remote).
  static constexpr int kAskOtherNodes = 2;
  static constexpr size_t kBatch = 32;  // pending collectives per batch (the ring holds 64)
  int was_last(const CollEvent& ev, uint64_t mine_t) const {
    bool all_seen = true, others = false;
    for (int i = 0; i < ev.size; ++i) {
      if (i == ev.me) continue;
      const int pe = ev.start + i * ev.stride;
      if (pe < 0 || pe >= r_.npes_) return -1;
      if (r_.routes_[pe] != Route::kShm) {
        others = true;
        continue;
      }
      const Page& p = r_.meta(pe)->dfx;
      const uint64_t k = p.coll_count.load(std::memory_order_acquire);
      bool found = false;
      for (uint64_t j = k; j > 0 && k - j < uint64_t(kCollRing); --j) {
        CollRecord rec;
        if (!read_stable(p.colls[(j - 1) % kCollRing], &rec)) continue;
        if (rec.lane != uint16_t(ev.lane) || rec.team_seq != ev.team_seq) continue;
        found = rec.t_enter_ns != 0;
        // Ties go to the higher PE number, so exactly one member is last.
        if (found && (rec.t_enter_ns > mine_t || (rec.t_enter_ns == mine_t && pe > ev.start + ev.me * ev.stride)))
          return 0;
        break;
      }
      if (!found) all_seen = false;
    }
    return !all_seen ? -1 : others ? kAskOtherNodes : 1;
  }

  // The pending collectives against the members on other nodes, whose clocks are not this
  // one. Each such member's page is read over UCX (its ring of 64 recent collectives), and
  // the offset between its clock and this PE's is bounded without any clock exchange: in a
  // collective that waits for every member (barrier, sync, reductions, collects, alltoalls,
  // allocations) each member enters before every member leaves, so for member q
  //   q.enter - my.exit  <  offset  <  q.exit - my.enter      (offset = q's clock - mine).
  // Over the records both rings hold, the tightest bounds (a few network latencies wide)
  // place q's entry into this PE's clock as an interval: wholly after this PE's entry, q
  // came later (not last); wholly before for every such member, this PE was last; else it
  // cannot tell (not judged).
  void judge_remote(Block& b) {
    if (b.pending.empty()) return;
    std::vector<Block::Pending> todo;
    todo.swap(b.pending);
    if (!r_.ucx_) return;
    std::map<int, std::unique_ptr<Page>> pages;
    for (const auto& p : todo)
      for (int i = 0; i < p.size; ++i) {
        const int pe = p.start + i * p.stride;
        if (i != p.me && r_.routes_[pe] != Route::kShm && !pages.count(pe)) {
          pages[pe] = std::make_unique<Page>();
          r_.fetch_dfx_page(pe, pages[pe].get());
        }
      }
    // This PE's own records with both times, by (team_id, team_rel): the same on every
    // member, where lanes and their counts may differ between PEs.
    struct Times {
      uint16_t op;
      uint64_t enter, exit;
    };
    std::map<std::pair<uint32_t, uint32_t>, Times> mine;
    const Page& own = r_.meta(r_.rank_)->dfx;
    for (int j = 0; j < kCollRing; ++j) {
      CollRecord rec;
      if (read_stable_own(own.colls[j], &rec) && rec.t_enter_ns && rec.t_exit_ns && waits_for_all(rec.op))
        mine[{rec.team_id, rec.team_rel}] = {rec.op, rec.t_enter_ns, rec.t_exit_ns};
    }
    struct Bounds {
      bool any = false;
      int64_t lo = 0, hi = 0;
    };
    std::map<int, Bounds> bounds;
    auto find = [](const Page& q, uint32_t team, uint32_t rel, CollRecord* out) {
      for (int j = 0; j < kCollRing; ++j) {
        const CollRecord& rec = q.colls[j];
        if ((rec.seq.load(std::memory_order_relaxed) & 1) == 0 && rec.team_id == team && rec.team_rel == rel &&
            rec.t_enter_ns) {
          std::memcpy(static_cast<void*>(out), static_cast<const void*>(&rec), sizeof rec);
          return true;
        }
      }
      return false;
    };
    for (auto& [pe, page] : pages) {
      Bounds& bd = bounds[pe];
      for (int j = 0; j < kCollRing; ++j) {
        const CollRecord& q = page->colls[j];
        if ((q.seq.load(std::memory_order_relaxed) & 1) || !q.t_enter_ns || !q.t_exit_ns) continue;
        auto m = mine.find({q.team_id, q.team_rel});
        if (m == mine.end() || m->second.op != q.op) continue;
        const int64_t lo = int64_t(q.t_enter_ns - m->second.exit), hi = int64_t(q.t_exit_ns - m->second.enter);
        bd.lo = bd.any ? std::max(bd.lo, lo) : lo;
        bd.hi = bd.any ? std::min(bd.hi, hi) : hi;
        bd.any = true;
      }
    }
    for (const auto& p : todo) {
      bool later = false, unknown = false;
      for (int i = 0; i < p.size && !later; ++i) {
        const int pe = p.start + i * p.stride;
        if (i == p.me || r_.routes_[pe] == Route::kShm) continue;
        CollRecord q;
        const Bounds& bd = bounds[pe];
        if (!bd.any || bd.lo > bd.hi || !find(*pages[pe], p.team_id, p.team_rel, &q)) {
          unknown = true;
          continue;
        }
        // q's entry in this PE's clock lies in [q.enter - hi, q.enter - lo].
        const int64_t earliest = int64_t(q.t_enter_ns) - bd.hi, latest = int64_t(q.t_enter_ns) - bd.lo;
        if (earliest > int64_t(p.t_enter)) later = true;
        else if (latest >= int64_t(p.t_enter)) unknown = true;
      }
      if (later || !unknown) {
        ++p.stat->judged;
        p.stat->last += later ? 0 : 1;
      }
    }
  }
  static bool waits_for_all(uint16_t op) {
    switch (Op(op)) {
      case Op::kBarrier: case Op::kSync: case Op::kReduce: case Op::kCollect: case Op::kFcollect:
      case Op::kAlltoall: case Op::kAlltoalls: case Op::kAlloc: case Op::kFree:
        return true;
      default:
        return false;
    }
  }

  Row merge() const;
  void report(const std::vector<Row>& rows);

  Runtime::Impl& r_;
  const uint64_t id_ = ++g_instances;
  int level_ = 1;
  uint64_t sample_mask_ = 63;
  std::string file_;
  uint64_t t_start_ = 0;
  uint64_t allocs_ = 0, frees_ = 0, heap_high_ = 0;
  std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;
  pthread_t main_thread_;
  Block* main_block_ = nullptr;
};

Row StatsTool::merge() const {
  Row row;
  row.pe = r_.rank_;
  row.pid = uint64_t(getpid());
  row.elapsed_ns = now_ns() - t_start_;
  row.heap_high = heap_high_;
  row.allocs = allocs_;
  row.frees = frees_;
  row.has_hist = level_ >= 2;
  for (auto& m : row.matrix) m.assign(size_t(r_.npes_), Cell{});
  for (const auto& b : blocks_) {
    for (int o = 0; o < kOps; ++o)
      for (int q = 0; q < kRoutes; ++q) row.ops[o][q].calls += b->ops[o][q].calls, row.ops[o][q].bytes += b->ops[o][q].bytes;
    for (int k = 0; k < kKinds; ++k)
      for (size_t p = 0; p < row.matrix[k].size(); ++p)
        row.matrix[k][p].calls += b->matrix[k][p].calls, row.matrix[k][p].bytes += b->matrix[k][p].bytes;
    for (const auto& [key, c] : b->colls) {
      CollStat& d = row.colls[key];
      d.start = c.start, d.stride = c.stride, d.size = c.size;
      d.calls += c.calls, d.bytes += c.bytes, d.total_ns += c.total_ns, d.max_ns = std::max(d.max_ns, c.max_ns);
      d.last += c.last, d.judged += c.judged;
    }
    for (int k = 0; k < kBlockKinds; ++k) row.blocked_ns[k] += b->blocked_ns[k], row.blocked_n[k] += b->blocked_n[k];
    for (int o = 0; o < kOps; ++o)
      for (int h = 0; h < kHistBuckets; ++h) row.hist[o][h] += b->hist[o][h];
  }
  return row;
}

void StatsTool::finalize() {
  // The last batches of collectives to judge against other nodes' pages. Only where a
  // progress thread serves this PE's page while it waits in the store below; with
  // SYMMEM_UCX_PROGRESS=inline nobody would (a barrier here could make them, but not every
  // PE need have statistics on), and those collectives are not judged.
  if (r_.ucx_ && r_.cfg_.ucx_progress == "thread") {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& b : blocks_) judge_remote(*b);
  }
  std::vector<Row> rows;
  {
    std::lock_guard<std::mutex> g(mu_);
    rows.push_back(merge());
  }
  const int n = r_.npes_;
  Store* st = r_.epoch_store_ ? r_.epoch_store_.get() : r_.store_.get();
  auto key = [](int pe) { return "dfx/stats/" + std::to_string(pe); };
  if (n > 1 && !st) {
    log_pe(LogLevel::kWarn, r_.rank_, "SYMMEM_STATS: no bootstrap store: only this PE's statistics are reported");
  } else if (n > 1) {
    if (r_.rank_ != 0) {
      Status s = st->set(key(r_.rank_), encode(rows[0], n));
      if (!s.ok()) log_pe(LogLevel::kWarn, r_.rank_, "SYMMEM_STATS: publishing this PE's row: %s", s.message().c_str());
      return;
    }
    rows.resize(size_t(n));
    for (int pe = 1; pe < n; ++pe) {
      Result<std::string> v = st->get(key(pe), 120.0);
      Row& row = rows[size_t(pe)];
      if (!v.ok() || !decode(*v, n, &row)) {
        log_pe(LogLevel::kWarn, 0, "SYMMEM_STATS: no statistics from PE %d: %s", pe,
               v.ok() ? "malformed row" : v.status().message().c_str());
        row = Row{};
        row.pe = pe;
        for (auto& m : row.matrix) m.assign(size_t(n), Cell{});
      }
      (void)st->erase(key(pe));
    }
  }
  if (r_.rank_ == 0) report(rows);
}

void StatsTool::report(const std::vector<Row>& rows) {
  const int n = r_.npes_;
  const int nr = int(rows.size());
  auto where = [&](int pe) -> std::string {
    return size_t(pe) < r_.pe_where_.size() ? r_.pe_where_[size_t(pe)] : std::string();
  };
  auto host_of = [&](int pe) {
    std::string w = where(pe);
    const size_t c = w.rfind(':');
    return c == std::string::npos ? w : w.substr(0, c);
  };
  uint64_t elapsed = 0;
  for (const Row& r : rows) elapsed = std::max(elapsed, r.elapsed_ns);

  // ---- the table ----
  // Totals by kind (nbi forms with their blocking ones).
  uint64_t kc[kKinds] = {}, kb[kKinds] = {};
  for (const Row& r : rows)
    for (int k = 0; k < kKinds; ++k)
      for (const Cell& c : r.matrix[k]) kc[k] += c.calls, kb[k] += c.bytes;
  std::map<Op, uint64_t> world_colls;  // calls on the world team, as PE 0 counted them
  for (const auto& [key, c] : rows[0].colls)
    if ((key >> 16) == 0) world_colls[Op(key & 0xffff)] += c.calls;
  std::string line;
  for (int k = 0; k < kKinds; ++k) {
    if (!kc[k]) continue;
    line += "  " + std::string(kKindNames[k]) + " " + count_str(kc[k]) + " ops " + bytes_str(kb[k]);
  }
  for (const auto& [op, calls] : world_colls) line += "  " + std::string(op_name(op)) + " " + count_str(calls);
  std::string file = file_;
  if (file.empty()) {
    const std::string job = r_.env_.job_id.empty() ? std::to_string(getpid()) : r_.env_.job_id;
    file = "symmem-stats-" + job + ".json";
  }
  say(0, "stats (%d PEs, %.2f s)%s", n, double(elapsed) * 1e-9, line.empty() ? "  no operations" : line.c_str());

  // Blocked time by PE, PEs with similar times grouped (sorted; a new group where the next
  // time is more than 1.5x and 1 ms above the previous).
  {
    std::vector<std::pair<uint64_t, int>> bt;
    for (const Row& r : rows) bt.push_back({r.blocked_total(), r.pe});
    std::sort(bt.begin(), bt.end());
    std::string s;
    for (size_t i = 0; i < bt.size();) {
      size_t j = i;
      while (j + 1 < bt.size() && bt[j + 1].first <= bt[j].first + bt[j].first / 2 + 1000000) ++j;
      std::vector<int> pes;
      for (size_t x = i; x <= j; ++x) pes.push_back(bt[x].second);
      if (!s.empty()) s += " | ";
      s += pes_text(pes) + " " + secs_str(bt[i].first);
      if (j > i && secs_str(bt[j].first) != secs_str(bt[i].first)) s += "-" + secs_str(bt[j].first);
      i = j + 1;
    }
    // Where most of the waiting went, over all PEs.
    uint64_t by[kBlockKinds] = {};
    for (const Row& r : rows)
      for (int k = 0; k < kBlockKinds; ++k) by[k] += r.blocked_ns[k];
    const int top = int(std::max_element(by, by + kBlockKinds) - by);
    if (by[top]) s += std::string(" (mostly in ") + kBlockNames[top] + ")";
    say(0, "  blocked time: %s", s.c_str());
  }

  // Late arrivals: per team and collective kind, the PEs that were last far more often
  // than their share (at least a quarter of the calls, and more than 1/n of them).
  {
    std::string s;
    std::map<uint32_t, std::vector<std::pair<uint64_t, int>>> lasts;
    std::map<uint32_t, uint64_t> calls;
    for (const Row& r : rows)
      for (const auto& [key, c] : r.colls) {
        if (c.last) lasts[key].push_back({c.last, r.pe});
        calls[key] = std::max(calls[key], c.calls);
      }
    for (auto& [key, v] : lasts) {
      std::sort(v.rbegin(), v.rend());
      const uint64_t total = calls[key];
      const int lane = int(key >> 16);
      const Op op = Op(key & 0xffff);
      for (const auto& [cnt, pe] : v) {
        const CollStat& c = rows[size_t(pe)].colls.at(key);
        if (c.size < 2 || cnt * uint64_t(c.size) < 2 * total) break;
        if (!s.empty()) s += ", ";
        char b[160];
        std::snprintf(b, sizeof b, "PE %d last to arrive %" PRIu64 "/%" PRIu64 " %s%s", pe, cnt, total, op_name(op),
                      lane == 0 ? "" : (" (team slot " + std::to_string(lane) + ")").c_str());
        s += b;
      }
    }
    if (!s.empty()) say(0, "  late arrivals: %s", s.c_str());
  }

  // Heaviest pairs by bytes over all kinds.
  {
    std::vector<std::tuple<uint64_t, int, int>> pairs;
    for (const Row& r : rows)
      for (int t = 0; t < n && t < int(r.matrix[0].size()); ++t) {
        uint64_t b = 0;
        for (int k = 0; k < kKinds; ++k) b += r.matrix[k][size_t(t)].bytes;
        if (b) pairs.push_back({b, r.pe, t});
      }
    std::sort(pairs.rbegin(), pairs.rend());
    std::string s;
    for (size_t i = 0; i < pairs.size() && i < 4; ++i) {
      if (!s.empty()) s += ", ";
      s += std::to_string(std::get<1>(pairs[i])) + "->" + std::to_string(std::get<2>(pairs[i])) + " " +
           bytes_str(std::get<0>(pairs[i]));
    }
    if (pairs.size() > 4) s += " ...";
    uint64_t heap = 0, allocs = 0;
    for (const Row& r : rows) heap = std::max(heap, r.heap_high), allocs = std::max(allocs, r.allocs);
    say(0, "  heaviest pairs: %s   heap high-water %s, %" PRIu64 " allocations   full matrix: %s",
        s.empty() ? "none" : s.c_str(), bytes_str(heap).c_str(), allocs, file.c_str());
  }

  // ---- the JSON file ----
  std::string j;
  j.reserve(4096 + size_t(n) * size_t(n) * 16);
  j += "{\"schema\":\"symmem-stats/1\",\"job\":" + json_str(r_.env_.job_id) + ",\"n_pes\":" + std::to_string(n);
  j += ",\"level\":" + std::to_string(level_) + ",\"elapsed_s\":" + num(double(elapsed) * 1e-9);
  {
    std::vector<std::string> hosts;
    for (int pe = 0; pe < n; ++pe)
      if (std::find(hosts.begin(), hosts.end(), host_of(pe)) == hosts.end()) hosts.push_back(host_of(pe));
    j += ",\"hosts\":[";
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (i) j += ',';
      j += json_str(hosts[i]);
    }
    j += "]";
  }
  j += ",\"per_pe\":[";
  for (int i = 0; i < nr; ++i) {
    const Row& r = rows[size_t(i)];
    j += i ? ",\n" : "\n";
    j += "{\"pe\":" + std::to_string(r.pe) + ",\"host\":" + json_str(host_of(r.pe)) +
         ",\"pid\":" + std::to_string(r.pid) + ",\"elapsed_s\":" + num(double(r.elapsed_ns) * 1e-9);
    j += ",\"ops\":[";
    bool first = true;
    for (int o = 1; o < kOps; ++o)
      for (int q = 0; q < kRoutes; ++q) {
        const Cell& c = r.ops[o][q];
        if (!c.calls) continue;
        j += first ? "" : ",";
        first = false;
        j += "{\"op\":\"" + std::string(op_name(Op(o))) + "\",\"route\":\"" + (q ? "ucx" : "shm") +
             "\",\"calls\":" + std::to_string(c.calls) + ",\"bytes\":" + std::to_string(c.bytes) + "}";
      }
    j += "],\"blocked_s\":{";
    for (int k = 0; k < kBlockKinds; ++k)
      j += std::string(k ? "," : "") + "\"" + kBlockNames[k] + "\":" + num(double(r.blocked_ns[k]) * 1e-9);
    j += ",\"total\":" + num(double(r.blocked_total()) * 1e-9) + "},\"blocked_count\":{";
    for (int k = 0; k < kBlockKinds; ++k)
      j += std::string(k ? "," : "") + "\"" + kBlockNames[k] + "\":" + std::to_string(r.blocked_n[k]);
    uint64_t last = 0;
    for (const auto& kv : r.colls) last += kv.second.last;
    j += "},\"last_arrivals\":" + std::to_string(last);
    j += ",\"heap\":{\"high_water\":" + std::to_string(r.heap_high) + ",\"allocations\":" + std::to_string(r.allocs) +
         ",\"frees\":" + std::to_string(r.frees) + "}";
    if (r.has_hist) {
      j += ",\"latency_log2_ns\":{";
      bool f2 = true;
      for (int o = 1; o < kOps; ++o) {
        uint64_t tot = 0;
        for (uint64_t h : r.hist[o]) tot += h;
        if (!tot) continue;
        j += f2 ? "" : ",";
        f2 = false;
        j += "\"" + std::string(op_name(Op(o))) + "\":[";
        for (int h = 0; h < kHistBuckets; ++h) {
          if (h) j += ',';
          j += std::to_string(r.hist[o][h]);
        }
        j += "]";
      }
      j += "}";
    }
    j += "}";
  }
  j += "\n],\"matrix\":{";
  for (int k = 0; k < kKinds; ++k) {
    j += std::string(k ? ",\n" : "\n") + "\"" + kKindNames[k] + "\":{";
    for (int f = 0; f < 2; ++f) {
      j += f ? ",\"bytes\":[" : "\"calls\":[";
      for (int i = 0; i < nr; ++i) {
        j += i ? ",[" : "[";
        for (int t = 0; t < n; ++t) {
          const Cell& c = rows[size_t(i)].matrix[k][size_t(t)];
          if (t) j += ',';
          j += std::to_string(f ? c.bytes : c.calls);
        }
        j += "]";
      }
      j += "]";
    }
    j += "}";
  }
  j += "\n},\"collectives\":[";
  {
    std::map<uint32_t, const CollStat*> keys;
    for (const Row& r : rows)
      for (const auto& kv : r.colls) keys.emplace(kv.first, &kv.second);
    bool first = true;
    for (const auto& kv : keys) {
      const uint32_t key = kv.first;
      const CollStat* c0 = kv.second;
      const int lane = int(key >> 16);
      j += first ? "\n" : ",\n";
      first = false;
      const std::string team = lane == 0 ? "world" : lane == 1 ? "shared" : lane == kActiveSetLane ? "active_set"
                                                                                                    : "slot " + std::to_string(lane);
      j += "{\"team\":" + json_str(team) + ",\"lane\":" + std::to_string(lane) + ",\"team_start\":" +
           std::to_string(c0->start) + ",\"team_stride\":" + std::to_string(c0->stride) + ",\"team_size\":" +
           std::to_string(c0->size) + ",\"op\":\"" + op_name(Op(key & 0xffff)) + "\"";
      auto field = [&](const char* name, auto get) {
        j += ",\"" + std::string(name) + "\":[";
        for (int i = 0; i < nr; ++i) {
          auto it = rows[size_t(i)].colls.find(key);
          if (i) j += ',';
          j += it == rows[size_t(i)].colls.end() ? std::string("0") : get(it->second);
        }
        j += "]";
      };
      field("calls", [](const CollStat& c) { return std::to_string(c.calls); });
      field("bytes", [](const CollStat& c) { return std::to_string(c.bytes); });
      field("total_s", [](const CollStat& c) { return num(double(c.total_ns) * 1e-9); });
      field("max_s", [](const CollStat& c) { return num(double(c.max_ns) * 1e-9); });
      field("last", [](const CollStat& c) { return std::to_string(c.last); });
      field("judged", [](const CollStat& c) { return std::to_string(c.judged); });
      j += "}";
    }
  }
  j += "\n]}\n";
  FILE* f = std::fopen(file.c_str(), "w");
  bool ok = f && std::fwrite(j.data(), 1, j.size(), f) == j.size();
  if (f && std::fclose(f) != 0) ok = false;
  if (!ok) log_pe(LogLevel::kWarn, 0, "SYMMEM_STATS: cannot write %s: %s", file.c_str(), std::strerror(errno));
}

}  // namespace

std::unique_ptr<ToolHooks> make_stats_tool(void* impl, const Config& cfg) {
  return std::make_unique<StatsTool>(impl, cfg);
}

}  // namespace symmem::dfx
