// The hang report builder (dfx/hang.hpp).
#include "dfx/hang.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "common/config.hpp"
#include "common/log.hpp"

namespace symmem::dfx::hang {

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return n < 0 ? std::string() : std::string(buf, std::min<size_t>(size_t(n), sizeof buf - 1));
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (uint8_t(c) < 0x20) o += fmt("\\u%04x", unsigned(uint8_t(c)));
    else o += c;
  }
  return o + "\"";
}

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// Plain copies of the page's records (those carry atomics and cannot be copied as values).
struct Wait {
  uint16_t op = 0, call_id = 0;
  int32_t owner = -1, cmp = -1;
  uint32_t width = 0, nwords = 0;
  uint64_t addr = 0, expect = 0;
  int32_t lane = -1;
  uint32_t seq = 0;
  uint64_t since_ns = 0;
  uint32_t vec_kind = 0, vec_count = 0, vec_n = 0, vec_shown = 0;
  uint64_t vec_base = 0;
  uint32_t vec_index[kWaitWords] = {};
  uint64_t vec_expect[kWaitWords] = {};
};

struct Coll {
  uint16_t op = 0, lane = 0;
  uint32_t seq = 0, done = 0, call_id = 0;
  int32_t root = -1;
  uint64_t bytes = 0;
  int32_t start = 0, stride = 1, size = 0;  // size 0: only the brief word is known
};

struct Write {
  uint16_t op = 0, call_id = 0;
  int32_t target = -1;
  bool ucx = false;
  uint64_t where = 0, bytes = 0, quiets = 0;
};

struct Snap {
  bool visible = false;
  State state = State::kInit;
  uint32_t call_id = 0;
  uint64_t progress = 0, coll_count = 0;
  bool waiting = false;  // state kWaiting with a stable wait record
  Wait w;
  uint32_t lane_seq[kTeamLanes] = {};
  std::vector<Coll> recent;  // each lane's latest (lane_hist), newest first, lane 0 first
  std::vector<Coll> full;    // the ring's records (described collectives), newest first
  std::vector<Write> writes;  // newest first
  uint64_t write_count = 0, ucx_posted = 0, ucx_quieted = 0, quiet_count = 0;
  bool writes_all = false;   // plain puts on the node are recorded too
  bool colls_off = false;    // SYMMEM_STATUS=0: its collectives are not numbered
  char pstate = '?';         // /proc/<pid>/stat state
  double cpu_s = -1;         // user + system CPU seconds
};

// /proc/<pid>/stat: state and CPU time.
void proc_stat(int pid, char* state, double* cpu_s) {
  if (pid <= 0) return;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(f, s)) return;
  const size_t rp = s.rfind(')');
  if (rp == std::string::npos || rp + 2 >= s.size()) return;
  *state = s[rp + 2];
  // fields after the state: ppid(4) pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime(14) stime(15)
  unsigned long long ut = 0, st = 0;
  if (std::sscanf(s.c_str() + rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
    *cpu_s = double(ut + st) / double(sysconf(_SC_CLK_TCK));
}

Snap take(const PeInfo& pi) {
  Snap s;
  proc_stat(pi.pid, &s.pstate, &s.cpu_s);
  const Page* p = pi.page;
  if (!p && pi.summarized) {  // another node's PE, as its node's watch saw it
    s.visible = true;
    s.state = pi.r_state;
    for (size_t l = 0; l < pi.r_lane_seq.size() && l < size_t(kTeamLanes); ++l) s.lane_seq[l] = pi.r_lane_seq[l];
    if (s.state == State::kWaiting) {
      s.waiting = true;
      s.w.op = uint16_t(Op::kWait);
      s.w.lane = pi.r_lane;
      s.w.seq = pi.r_seq;
    }
    return s;
  }
  if (!p || p->magic != kPageMagic || p->version != kPageVersion) return s;
  s.visible = true;
  s.state = State(p->state.load(std::memory_order_acquire));
  s.call_id = p->call_id.load(std::memory_order_relaxed);
  s.progress = p->progress.load(std::memory_order_relaxed);
  for (int l = 0; l < kTeamLanes; ++l) s.lane_seq[l] = p->lane_seq[l].load(std::memory_order_relaxed);
  if (s.state == State::kWaiting) {
    WaitRecord w;
    if (read_stable(p->wait, &w) && w.op != uint16_t(Op::kNone)) {
      s.waiting = true;
      s.w = {w.op, w.call_id, w.owner, w.cmp, w.width, w.nwords, w.addr, w.expect, w.team_lane, w.team_seq, w.since_ns};
      if (w.vec_kind >= 1 && w.vec_kind <= 3) {
        s.w.vec_kind = w.vec_kind;
        s.w.vec_count = w.vec_count;
        s.w.vec_n = w.vec_n;
        s.w.vec_shown = std::min<uint32_t>(w.vec_shown, kWaitWords);
        s.w.vec_base = w.vec_base;
        for (uint32_t k = 0; k < s.w.vec_shown; ++k) {
          s.w.vec_index[k] = w.vec_index[k];
          s.w.vec_expect[k] = w.vec_expect[k];
        }
      }
    }
  }
  s.coll_count = p->coll_count.load(std::memory_order_acquire);
  for (uint64_t i = s.coll_count; i > 0 && s.coll_count - i < uint64_t(kCollRing); --i) {
    CollRecord c;
    if (!read_stable(p->colls[(i - 1) % kCollRing], &c)) continue;
    s.full.push_back({c.op, c.lane, c.team_seq, c.done, c.call_id, c.root, c.bytes, c.team_start, c.team_stride,
                      c.team_size});
  }
  for (int l = 0; l < kTeamLanes; ++l) {
    for (uint32_t j = 0; j < uint32_t(kLaneHist) && j < s.lane_seq[l]; ++j) {
      const uint32_t seq = s.lane_seq[l] - j;
      const Brief b = brief_of(p->lane_hist[l][seq % kLaneHist].load(std::memory_order_relaxed));
      if (b.team_seq != seq) continue;  // being rewritten
      Coll c;
      c.op = uint16_t(b.op), c.lane = uint16_t(l), c.seq = seq, c.done = b.done, c.call_id = b.call_id;
      for (const Coll& f : s.full)
        if (f.lane == c.lane && f.seq == seq) c.root = f.root, c.bytes = f.bytes, c.start = f.start, c.stride = f.stride,
                                              c.size = f.size;
      s.recent.push_back(c);
    }
  }
  s.writes_all = p->writes_all.load(std::memory_order_relaxed) != 0;
  s.colls_off = (p->tools.load(std::memory_order_relaxed) & kCollsOff) != 0;
  s.quiet_count = p->quiet_count.load(std::memory_order_relaxed);
  s.ucx_quieted = p->ucx_quieted.load(std::memory_order_relaxed);
  s.ucx_posted = p->ucx_posted.load(std::memory_order_relaxed);
  s.write_count = p->write_count.load(std::memory_order_acquire);
  for (uint64_t i = s.write_count; i > 0 && s.write_count - i < uint64_t(kWriteRing); --i) {
    WriteRecord w;
    if (!read_stable(p->writes[(i - 1) % kWriteRing], &w)) continue;
    s.writes.push_back({w.op, w.call_id, w.target, w.ucx != 0, w.where, w.bytes, w.quiets});
  }
  return s;
}

std::string name_of(const Page* p, uint32_t id) {
  if (!p || id == 0) return "";
  const uint32_t n = p->name_count.load(std::memory_order_acquire);
  if (id >= n || id >= uint32_t(kNames)) return "";
  return std::string(p->names[id], strnlen(p->names[id], kNameLen));
}

const char* cmp_text(int c) {
  switch (c) {
    case 0: return "==";
    case 1: return "!=";
    case 2: return ">";
    case 3: return ">=";
    case 4: return "<";
    case 5: return "<=";
  }
  return "?";
}

std::string team_name(int lane, const Coll* c) {
  if (lane == 0) return "TEAM_WORLD";
  if (lane == 1) return "TEAM_SHARED";
  if (lane == kActiveSetLane) {
    if (c) return fmt("active set (PE_start %d, stride %d, size %d)", c->start, c->stride, c->size);
    return "an active set";
  }
  if (c) return fmt("team slot %d (PEs %d+%d*i, %d of them)", lane, c->start, c->stride, c->size);
  return fmt("team slot %d", lane);
}

// The address as Dfx::describe names it, from the pages' layout and allocation slots.
std::string describe(const Source& src, int space, int owner, uint64_t addr) {
  const Page* p = src.pes[size_t(space)].page;
  if (!p) return fmt("0x%" PRIx64, addr);
  const uint64_t G = p->layout_base, H = p->heap_size, M = p->meta_size;
  const uint64_t n = uint64_t(p->npes);
  if (H && addr - G < n * H) {
    const int pe = int((addr - G) / H);
    const uint64_t off = (addr - G) % H;
    for (int look : {space, owner, pe}) {
      const Page* q = look >= 0 && size_t(look) < src.pes.size() ? src.pes[size_t(look)].page : nullptr;
      if (!q || q->version != kPageVersion) continue;
      for (const AllocSlot& a : q->allocs) {
        AllocSlot c;
        if (!read_stable(a, &c) || c.number == 0 || off - c.offset >= c.size) continue;
        std::string size = format_size(c.size);
        std::string who = pe == space ? "" : fmt(" on PE %d", pe);
        if (c.name[0])
          return fmt("'%.*s' (allocation #%u, %s) +%" PRIu64 "%s", int(sizeof c.name), c.name, c.number, size.c_str(),
                     off - c.offset, who.c_str());
        return fmt("allocation #%u (%s) +%" PRIu64 "%s", c.number, size.c_str(), off - c.offset, who.c_str());
      }
    }
    return fmt("heap +%" PRIu64 " of PE %d (no live allocation)", off, pe);
  }
  if (M && addr - (G + n * H) < n * M) {
    const uint64_t x = addr - (G + n * H);
    return fmt("sync word (metadata +0x%" PRIx64 ") of PE %d", x % M, int(x / M));
  }
  if (addr - p->static_start < p->static_size) return fmt("static data +0x%" PRIx64, addr - p->static_start);
  return fmt("0x%" PRIx64, addr);
}

// A symmetric address of PE `space`'s process as (owner PE, WriteRecord::where); false for
// words outside the heap and the static data (the sync words of collectives).
bool word_where(const Source& src, int space, uint64_t addr, int* pe, uint64_t* where) {
  const Page* p = src.pes[size_t(space)].page;
  if (!p) return false;
  const uint64_t G = p->layout_base, H = p->heap_size, n = uint64_t(p->npes);
  if (H && addr - G < n * H) {
    *pe = int((addr - G) / H);
    *where = (addr - G) % H;
    return true;
  }
  if (addr - p->static_start < p->static_size) {
    *pe = space;
    *where = kRaceStatic | (addr - p->static_start);
    return true;
  }
  return false;
}

// Whether a write covers [lo, hi) of the same kind of memory (heap or static).
bool overlaps(const Write& w, uint64_t lo, uint64_t hi) {
  if ((w.where & kRaceStatic) != (lo & kRaceStatic)) return false;
  return w.where < hi && lo < w.where + std::max<uint64_t>(w.bytes, 1);
}

// Whether a wait's condition holds for `v` against `expect`; -1 when it depends on the
// type's signedness (the page does not say).
int satisfied(const Wait& w, uint64_t v, uint64_t expect) {
  if (w.cmp < 0) return int32_t(uint32_t(v) - uint32_t(expect)) >= 0;  // sync word
  const int bits = int(w.width) * 8;
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  const uint64_t a = v & mask, b = expect & mask;
  auto sx = [&](uint64_t x) { return bits >= 64 ? int64_t(x) : int64_t(x << (64 - bits)) >> (64 - bits); };
  auto test = [&](auto x, auto y) {
    switch (w.cmp) {
      case 0: return x == y;
      case 1: return x != y;
      case 2: return x > y;
      case 3: return x >= y;
      case 4: return x < y;
      default: return x <= y;
    }
  };
  const bool u = test(a, b), s = test(sx(a), sx(b));
  return u == s ? int(u) : -1;
}

std::string value_text(uint64_t v, uint32_t width) {
  const int bits = int(width) * 8;
  if (bits <= 0 || bits > 64) return std::to_string(v);
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  v &= mask;
  if (v >> (bits - 1)) {  // top bit set: show it signed
    const int64_t s = bits >= 64 ? int64_t(v) : int64_t(v << (64 - bits)) >> (64 - bits);
    return std::to_string(s);
  }
  return std::to_string(v);
}

// What a PE is doing, as one group key and its parts.
struct Doing {
  std::string key;
  std::string kind;  // waiting, in call, user code, finalized, init, exited, killed, not visible
  std::string call;
  int lane = -1;
  uint32_t seq = 0;
  const Coll* coll = nullptr;  // the open collective
};

struct PeView {
  Snap a, b;
  Doing d;
  bool moved = false;
  bool live = false;     // alive and past init, not finalized
  bool blocked = false;  // sleeping in a wait
  double cpu_pct = -1;
  double wait_s = -1;
  bool have_value = false;
  uint64_t value = 0;
  int sat = 0;  // waited word satisfied: 1, 0, -1 unknown
  std::string where;  // the waited word, named
  // A vector wait: each shown element read live (have, value, satisfied 1/0/-1).
  struct Elem {
    bool have = false;
    uint64_t value = 0;
    int sat = -1;
  };
  std::vector<Elem> vec;
  int vec_sat = 0;  // elements shown that are satisfied
};

// op_name lives in dfx.cpp, which symmem-run does not link; the page names calls itself
// and this is only the fallback for a wait whose call was never interned.
const char* op_name_fallback(Op op) {
  switch (op) {
    case Op::kWait: return "wait";
    case Op::kSync: return "sync";
    case Op::kLock: return "lock";
    case Op::kQuiet: return "quiet";
    default: return "call";
  }
}

// The collective the PE is in: its described record, or else (entered, not yet waiting)
// the newest brief word not left.
const Coll* open_coll(const Snap& s) {
  for (const Coll& c : s.full)
    if (!c.done) return &c;
  for (const Coll& c : s.recent)
    if (!c.done) return &c;
  return nullptr;
}

// The call the PE is in: its open collective's (described yet or not), else the page's.
uint32_t current_call(const Snap& s) {
  const Coll* c = open_coll(s);
  return c ? c->call_id : s.call_id;
}

Doing doing(const PeInfo& pi, const Snap& s) {
  Doing d;
  if (pi.life == PeInfo::Life::kExited) return {fmt("exited %d", pi.code), "exited", "", -1, 0, nullptr};
  if (pi.life == PeInfo::Life::kKilled) return {fmt("killed %d", pi.code), "killed", "", -1, 0, nullptr};
  if (!s.visible) return pi.remote ? Doing{"remote", "other node", "", -1, 0, nullptr} : Doing{"init", "init", "", -1, 0, nullptr};
  switch (s.state) {
    case State::kInit: return {"init", "init", "", -1, 0, nullptr};
    case State::kUser:  // in a collective that has not waited yet: in it all the same
      if (!open_coll(s)) return {"user", "user code", "", -1, 0, nullptr};
      break;
    case State::kFinalized: return {"final", "finalized", "", -1, 0, nullptr};
    default: break;
  }
  d.kind = s.state == State::kWaiting ? "waiting" : "in call";
  if (!pi.page && pi.summarized) {
    d.call = pi.r_call;
    d.lane = pi.r_lane;
    d.seq = pi.r_seq;
    d.key = d.lane >= 0 ? fmt("%s|%s|%d|%u", d.kind.c_str(), d.call.c_str(), d.lane, d.seq)
                        : d.kind + "|" + d.call + "|" + pi.r_what;
    return d;
  }
  d.call = name_of(pi.page, s.waiting && s.w.call_id ? s.w.call_id : s.call_id);
  if (d.call.empty() && s.waiting) d.call = op_name_fallback(Op(s.w.op));
  if (s.waiting && s.w.lane >= 0) {
    d.lane = s.w.lane;
    d.seq = s.w.seq;
  }
  const Coll* c = open_coll(s);
  if (c && (d.lane < 0 || (c->lane == d.lane && c->seq == d.seq))) {
    d.lane = c->lane;
    d.seq = c->seq;
    d.coll = c;
    const std::string cn = name_of(pi.page, c->call_id);
    if (!cn.empty()) d.call = cn;
  }
  if (d.lane >= 0) {
    d.key = fmt("%s|%s|%d|%u", d.kind.c_str(), d.call.c_str(), d.lane, d.seq);
  } else if (s.waiting) {
    d.key = fmt("%s|%s|%d|%" PRIx64 "|%d|%" PRIx64, d.kind.c_str(), d.call.c_str(), s.w.owner, s.w.addr, s.w.cmp,
                s.w.expect);
  } else {
    d.key = d.kind + "|" + d.call;
  }
  return d;
}

std::string coll_text(const Page* p, const Coll& c) {
  std::string name = name_of(p, c.call_id);
  std::string s = fmt("#%u %s", c.seq, name.c_str());
  if (c.lane != 0) s += " on " + team_name(c.lane, &c);
  if (c.root >= 0) s += fmt(" root %d", c.root);
  if (c.bytes) s += " " + format_size(c.bytes);
  if (!c.done) s += " (not done)";
  return s;
}

// Where a write went, named from the writer's side: "'flags' (allocation #1, 64) +8 of PE 3".
std::string write_target(const Source& src, int writer, const Write& w) {
  const Page* p = src.pes[size_t(writer)].page;
  if (!p) return "?";
  if (w.where & kRaceStatic) {
    std::string d = describe(src, writer, w.target, p->static_start + (w.where & ~kRaceStatic));
    return d + fmt(" of PE %d", w.target);
  }
  std::string d = describe(src, writer, w.target, p->layout_base + uint64_t(w.target) * p->heap_size + w.where);
  if (w.target == writer) d += " (its own)";
  return d;
}

std::string write_text(const Source& src, int writer, const Write& w) {
  std::string call = name_of(src.pes[size_t(writer)].page, w.call_id);
  std::string t = fmt("%s to %s", call.empty() ? "write" : call.c_str(), write_target(src, writer, w).c_str());
  if (w.bytes != 8 && w.bytes != 4) t += " " + format_size(w.bytes);
  return t;
}

// The candidate writers of PE `waiter`'s waited word, from every visible PE's write ring:
// a text line (without its indent) and the JSON members.
void writers_of(const Source& src, const std::vector<PeView>& v, int waiter, std::string* text, std::string* json) {
  const Wait& wt = v[size_t(waiter)].b.w;
  int owner = -1;
  uint64_t lo = 0;
  // A vector wait: any element of the vector.
  const uint64_t base = wt.vec_kind ? wt.vec_base : wt.addr;
  const uint32_t words = wt.vec_kind ? wt.vec_n : wt.nwords;
  if (!word_where(src, waiter, base, &owner, &lo)) return;
  const uint64_t hi = lo + uint64_t(wt.width) * std::max<uint32_t>(words, 1);
  // The allocation holding the word (owner's slots), for writes that went elsewhere in it.
  uint64_t alo = lo, ahi = hi;
  if (!(lo & kRaceStatic)) {
    for (int look : {owner, waiter}) {
      const Page* q = src.pes[size_t(look)].page;
      if (!q) continue;
      bool found = false;
      for (const AllocSlot& a : q->allocs) {
        AllocSlot c;
        if (!read_stable(a, &c) || c.number == 0 || lo - c.offset >= c.size) continue;
        alo = c.offset, ahi = c.offset + c.size, found = true;
        break;
      }
      if (found) break;
    }
  }
  std::vector<std::string> hits, near, unseen;
  std::string jw = "[", je = "[";
  bool all = true, partial = false;
  for (size_t pe = 0; pe < v.size(); ++pe) {
    const Snap& s = v[pe].b;
    if (!s.visible) {
      if (src.pes[pe].remote) unseen.push_back(std::to_string(pe));
      continue;
    }
    all = all && s.writes_all;
    partial = partial || s.write_count > uint64_t(kWriteRing);
    int count = 0, pending = 0;
    const Write* last = nullptr;
    const Write* elsewhere = nullptr;
    for (const Write& w : s.writes) {
      if (w.target != owner) continue;
      if (overlaps(w, lo, hi)) {
        ++count;
        if (!last) last = &w;
        if (w.ucx && w.quiets == s.quiet_count) ++pending;
      } else if (!elsewhere && alo != lo && overlaps(w, alo, ahi)) {
        elsewhere = &w;
      }
    }
    const std::string call = last ? name_of(src.pes[pe].page, last->call_id) : "";
    if (last) {
      std::string h = fmt("PE %zu (%s", pe, call.c_str());
      if (count > 1) h += fmt(", %d of its last %zu writes", count, s.writes.size());
      if (pending) h += fmt(", %d pending on UCX: not yet quieted", pending);
      hits.push_back(h + ")");
      jw += fmt("%s{\"pe\":%zu,\"call\":%s,\"writes\":%d,\"pending\":%d}", jw.size() > 1 ? "," : "", pe,
                json_str(call).c_str(), count, pending);
    } else if (elsewhere) {
      const std::string ec = name_of(src.pes[pe].page, elsewhere->call_id);
      near.push_back(fmt("PE %zu %s to %s", pe, ec.c_str(), write_target(src, int(pe), *elsewhere).c_str()));
      je += fmt("%s{\"pe\":%zu,\"call\":%s,\"offset\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", je.size() > 1 ? "," : "",
                pe, json_str(ec).c_str(), elsewhere->where - alo, elsewhere->bytes);
    }
  }
  std::string t = "candidate writers: ";
  if (!hits.empty()) {
    for (size_t i = 0; i < hits.size(); ++i) t += (i ? ", " : "") + hits[i];
  } else {
    t += "no PE has written it";
    if (!all) t += " over UCX (writes on the node are recorded with a DFX tool on, e.g. SYMMEM_CHECK=1)";
    if (!near.empty()) {
      t += "; nearby: ";
      for (size_t i = 0; i < near.size() && i < 3; ++i) t += (i ? ", " : "") + near[i];
    }
  }
  if (partial) t += fmt(" (of each PE's last %d writes)", kWriteRing);
  if (!unseen.empty()) {
    t += "; PEs on other nodes not seen:";
    for (auto& u : unseen) t += " " + u;
  }
  *text = t;
  *json = ",\"writers\":";
  *json += jw;
  *json += "],\"written_nearby\":";
  *json += je;
  *json += all ? "],\"writes_complete\":true" : "],\"writes_complete\":false";
}

const char* vec_kind_name(uint32_t k) { return k == 1 ? "all" : k == 2 ? "any" : k == 3 ? "some" : ""; }

// A vector wait as a call: "wait_until_all('flags' (allocation #1, 64) +0, 4 words, == 1)".
std::string vector_what(const Source& src, const PeView& p, int pe, const std::string& call) {
  const Wait& w = p.b.w;
  std::string t = call + "(" + describe(src, pe, w.owner, w.vec_base) + fmt(", %u words", w.vec_n);
  if (w.vec_count != w.vec_n) t += fmt(" (%u taking part)", w.vec_count);
  bool same = true;
  for (uint32_t k = 1; k < w.vec_shown; ++k) same = same && w.vec_expect[k] == w.vec_expect[0];
  t += fmt(", %s ", cmp_text(w.cmp));
  t += same && w.vec_shown ? value_text(w.vec_expect[0], w.width) : std::string("per-element values");
  return t + ")";
}

// "   1 of 4 satisfied (live), sleeps on [2]": what the vector holds now.
std::string vector_summary(const PeView& p) {
  const Wait& w = p.b.w;
  std::string t = fmt("   %d of %u", p.vec_sat, w.vec_shown);
  if (w.vec_shown < w.vec_count) t += fmt(" shown (%u taking part)", w.vec_count);
  t += " satisfied (live)";
  if (w.vec_kind == 1 && w.vec_n && w.addr >= w.vec_base && w.width)
    t += fmt(", sleeps on [%" PRIu64 "]", (w.addr - w.vec_base) / w.width);
  if (p.sat == 1) t += " — satisfied";
  return t;
}

// One line per element shown: its word, the value expected, the value now.
std::string vector_lines(const Source& src, const PeView& p, int pe) {
  const Wait& w = p.b.w;
  std::string t;
  for (uint32_t k = 0; k < w.vec_shown && k < p.vec.size(); ++k) {
    const PeView::Elem& e = p.vec[k];
    const uint64_t a = w.vec_base + uint64_t(w.vec_index[k]) * w.width;
    std::string l = std::string(16, ' ') + fmt("[%u] %s %s %s", w.vec_index[k], describe(src, pe, w.owner, a).c_str(),
                                               cmp_text(w.cmp), value_text(w.vec_expect[k], w.width).c_str());
    if (e.have) {
      l += "   sees ";
      l += value_text(e.value, w.width);
    } else {
      l += "   not readable here";
    }
    if (e.sat == 1) l += "   satisfied";
    else if (e.sat < 0 && e.have) l += "   (satisfied depends on signedness)";
    if (w.vec_kind == 1 && a == w.addr) l += "   <- sleeps on this one";
    t += l + "\n";
  }
  if (w.vec_count > w.vec_shown)
    t += std::string(16, ' ') + fmt("... and %u more taking part, not shown\n", w.vec_count - w.vec_shown);
  return t;
}

// What a PE that has ended was doing then, from its page ("in barrier #3 on TEAM_WORLD").
std::string state_at_end(const Page* page, const Snap& s) {
  if (!s.visible) return "";
  switch (s.state) {
    case State::kUser:
      if (!open_coll(s)) return "running user code";
      break;
    case State::kInit: return "in init";
    case State::kFinalized: return "finalized";
    default: break;
  }
  std::string call = name_of(page, s.waiting && s.w.call_id ? s.w.call_id : s.call_id);
  if (const Coll* c = open_coll(s)) {
    std::string cn = name_of(page, c->call_id);
    return fmt("in %s #%u on %s", cn.empty() ? call.c_str() : cn.c_str(), c->seq, team_name(c->lane, c).c_str());
  }
  std::string t = s.state == State::kWaiting ? "waiting in " : "in ";
  t += call.empty() ? std::string("a call") : call;
  return t;
}

// "main > symmem::Runtime::barrier_all > ... > syscall": a stack (innermost first) as a path.
std::string stack_path(const std::string& st) {
  std::vector<std::string> f;
  size_t i = 0;
  while (i < st.size()) {
    size_t j = st.find('\n', i);
    if (j == std::string::npos) j = st.size();
    if (j > i) f.push_back(st.substr(i, j - i));
    i = j + 1;
  }
  std::string p;
  for (size_t k = f.size(); k > 0; --k) {
    if (!p.empty()) p += " > ";
    p += f[k - 1];
  }
  return p;
}

}  // namespace

Report build(const Source& src, const Options& opt) {
  const size_t n = src.pes.size();
  std::vector<PeView> v(n);
  for (size_t i = 0; i < n; ++i) v[i].a = take(src.pes[i]);
  const uint64_t t0 = mono_ns();
  if (opt.look_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(opt.look_s));
  for (size_t i = 0; i < n; ++i) v[i].b = take(src.pes[i]);
  const uint64_t t1 = mono_ns();
  const double gap = double(t1 - t0) * 1e-9;

  int live = 0, blocked = 0, moved = 0, invisible_alive = 0, unsatisfied_known = 0;
  std::vector<int> moved_pes, running_pes, satisfied_pes, invisible;
  for (size_t i = 0; i < n; ++i) {
    PeView& p = v[i];
    const PeInfo& pi = src.pes[i];
    p.d = doing(pi, p.b);
    const bool alive = pi.life == PeInfo::Life::kAlive;
    if (alive && !p.b.visible && pi.remote) {
      ++invisible_alive;
      invisible.push_back(int(i));
    }
    // A PE of this node without a page yet is in init: live, and not waiting.
    p.live = alive && (p.b.visible ? p.b.state != State::kFinalized : !pi.remote);
    if (p.a.visible && p.b.visible)
      // A state change inside one call (in call -> asleep, as a PE that handed its CPU over
      // goes to sleep; a collective described once it waits) is not progress; entering or
      // leaving a call changes the call, a lane's number or progress.
      p.moved = p.a.progress != p.b.progress || current_call(p.a) != current_call(p.b) ||
                std::memcmp(p.a.lane_seq, p.b.lane_seq, sizeof p.a.lane_seq) != 0;
    if (p.a.cpu_s >= 0 && p.b.cpu_s >= 0 && gap > 0) p.cpu_pct = 100.0 * (p.b.cpu_s - p.a.cpu_s) / gap;
    if (p.b.waiting && !pi.page && pi.summarized) {
      p.sat = pi.r_sat;
    } else if (p.b.waiting) {
      p.wait_s = double(t1 - std::min(t1, p.b.w.since_ns)) * 1e-9;
      p.where = describe(src, int(i), p.b.w.owner, p.b.w.addr);
      uint64_t val = 0;
      if (src.read && p.b.w.width >= 1 && p.b.w.width <= 8 && p.b.w.owner >= 0 &&
          src.read(p.b.w.owner, int(i), p.b.w.addr, p.b.w.width, &val)) {
        p.have_value = true;
        p.value = val;
        p.sat = p.b.w.nwords == 1 ? satisfied(p.b.w, val, p.b.w.expect) : -1;
      } else {
        p.sat = -1;
      }
      const Wait& w = p.b.w;
      if (w.vec_kind) {
        bool unknown = false;
        for (uint32_t k = 0; k < w.vec_shown; ++k) {
          PeView::Elem e;
          uint64_t ev = 0;
          if (src.read && w.width >= 1 && w.width <= 8 &&
              src.read(w.owner, int(i), w.vec_base + uint64_t(w.vec_index[k]) * w.width, w.width, &ev)) {
            e.have = true;
            e.value = ev;
            e.sat = satisfied(w, ev, w.vec_expect[k]);
          }
          if (e.sat == 1) ++p.vec_sat;
          if (e.sat < 0) unknown = true;
          p.vec.push_back(e);
        }
        // all: the element slept on decides (set above); any, some: one satisfied element
        // wakes it, and none of them is only sure when every element taking part was read.
        if (w.vec_kind != 1)
          p.sat = p.vec_sat > 0 ? 1 : (!unknown && w.vec_shown == w.vec_count && w.vec_shown > 0) ? 0 : -1;
      }
    }
    if (!p.live) continue;
    ++live;
    if (p.moved) {
      ++moved;
      moved_pes.push_back(int(i));
    }
    p.blocked = p.b.waiting && p.b.state == State::kWaiting;
    if (p.blocked) {
      ++blocked;
      if (p.sat == 1) satisfied_pes.push_back(int(i));
      if (p.sat == 0) ++unsatisfied_known;
    } else {
      running_pes.push_back(int(i));
    }
  }
  (void)unsatisfied_known;

  Report r;
  std::string reason;
  if (live == 0) {
    r.verdict = "FINISHED";
    reason = "no PE is running";
  } else if (moved > 0) {
    r.verdict = "PROGRESS";
    reason = fmt("%s moved between two looks %.1f s apart", pes_text(moved_pes).c_str(), gap);
  } else if (blocked == live && satisfied_pes.empty()) {
    r.all_blocked = true;
    if (invisible_alive == 0) {
      r.verdict = "DEADLOCK";
      reason = fmt("every live PE waits in the library, nothing moved in %.1f s, no waited word is satisfied", gap);
    } else {
      r.verdict = "BLOCKED";
      reason = fmt("every PE seen here waits in the library and nothing moved in %.1f s; %s not visible here", gap,
                   pes_text(invisible).c_str());
    }
  } else {
    r.verdict = "STALL";
    std::vector<std::string> parts;
    for (int pe : running_pes) {
      const PeView& p = v[size_t(pe)];
      std::string what = !p.b.visible || p.b.state == State::kInit ? "is in init"
                         : p.b.state == State::kUser                ? "runs user code"
                                                                    : "is in " + p.d.call + " (not sleeping)";
      if (p.b.pstate == 'T' || p.b.pstate == 't') what += ", stopped";
      if (p.cpu_pct >= 0) what += fmt(", %.0f%% CPU", p.cpu_pct);
      if (src.pes[size_t(pe)].quiet_s >= 0) what += fmt(", unchanged for %.1f s", src.pes[size_t(pe)].quiet_s);
      parts.push_back(fmt("PE %d %s", pe, what.c_str()));
    }
    for (int pe : satisfied_pes) parts.push_back(fmt("PE %d's waited word is satisfied but it has not woken", pe));
    reason = "nothing moved in " + fmt("%.1f s", gap) + ", but ";
    for (size_t i = 0; i < parts.size(); ++i) reason += (i ? "; " : "") + parts[i];
    if (parts.size() > 3) reason = fmt("nothing moved in %.1f s, but %zu PEs are not waiting", gap, parts.size());
  }

  // Groups, the largest first.
  std::map<std::string, std::vector<int>> by_key;
  for (size_t i = 0; i < n; ++i) by_key[v[i].d.key].push_back(int(i));
  std::vector<std::vector<int>> groups;
  for (auto& [k, g] : by_key) groups.push_back(g);
  std::stable_sort(groups.begin(), groups.end(), [](const auto& x, const auto& y) {
    return x.size() != y.size() ? x.size() > y.size() : x[0] < y[0];
  });

  const std::string pre = src.prefix;
  std::vector<int> ended;
  for (size_t i = 0; i < n; ++i)
    if (src.pes[i].life != PeInfo::Life::kAlive) ended.push_back(int(i));
  if (!ended.empty() && r.verdict != "FINISHED") {
    std::vector<std::string> how;
    for (int pe : ended) {
      const PeInfo& pi = src.pes[size_t(pe)];
      how.push_back(pi.life == PeInfo::Life::kKilled ? fmt("PE %d was killed by signal %d", pe, pi.code)
                                                     : fmt("PE %d exited with code %d", pe, pi.code));
    }
    reason += "; ";
    for (size_t i = 0; i < how.size() && i < 3; ++i) reason += (i ? ", " : "") + how[i];
    if (how.size() > 3) reason += fmt(" and %zu more", how.size() - 3);
  }
  std::string t = pre + fmt("%s (%s): %s — %s\n", opt.title.c_str(), opt.trigger.c_str(), r.verdict.c_str(),
                            reason.c_str());
  if (!src.scope.empty()) t += "  scope: " + src.scope + "\n";
  std::string jg = "[";
  const size_t largest = groups.empty() ? 0 : groups[0].size();
  std::vector<int> odd;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const std::vector<int>& g = groups[gi];
    const PeView& p0 = v[size_t(g[0])];
    const Doing& d = p0.d;
    std::string line = "  " + pes_text(g);
    line.resize(std::max<size_t>(line.size() + 2, 16), ' ');
    std::vector<int> missing;
    std::string what, extra, after;
    double wait_s = -1;
    for (int pe : g) wait_s = std::max(wait_s, v[size_t(pe)].wait_s);
    if (d.lane >= 0) {
      what = fmt("%s #%u on %s", d.call.c_str(), d.seq, team_name(d.lane, d.coll).c_str());
      if (d.coll && d.coll->root >= 0) what += fmt(" (root %d)", d.coll->root);
      if (d.coll && d.coll->size > 0) {
        std::vector<int> notvis;
        for (int i = 0; i < d.coll->size; ++i) {
          const int m = d.coll->start + i * d.coll->stride;
          if (m < 0 || size_t(m) >= n) continue;
          const PeView& q = v[size_t(m)];
          if (!q.b.visible) {
            if (src.pes[size_t(m)].remote) notvis.push_back(m);  // another node: unknown
            else missing.push_back(m);  // exited, or not even through init
          } else if (q.b.lane_seq[d.lane] < d.seq) {
            missing.push_back(m);
          }
        }
        if (!missing.empty()) {
          extra += "   missing: " + pes_text(missing);
          std::vector<std::string> why;
          for (int m : missing) {
            const PeView& q = v[size_t(m)];
            std::string w = q.d.kind;
            if (!q.d.call.empty()) w += " " + q.d.call;
            if (q.b.visible && q.b.lane_seq[d.lane] > 0) w += fmt(", last #%u there", q.b.lane_seq[d.lane]);
            why.push_back(fmt("PE %d %s", m, w.c_str()));
            if (why.size() >= 4) break;
          }
          extra += " (";
          for (size_t i = 0; i < why.size(); ++i) extra += (i ? "; " : "") + why[i];
          extra += ")";
        } else if (notvis.empty()) {
          extra += "   every member has arrived";
        }
        if (!notvis.empty()) extra += "   not visible here: " + pes_text(notvis);
      }
      if (d.kind != "waiting") extra = "   (in the call, not sleeping)" + extra;
    } else if (p0.b.waiting && src.pes[size_t(g[0])].summarized && !src.pes[size_t(g[0])].page) {
      what = src.pes[size_t(g[0])].r_what + "   (on its node)";
    } else if (p0.b.waiting) {
      const Wait& w = p0.b.w;
      if (w.vec_kind)
        what = vector_what(src, p0, g[0], d.call);
      else if (w.cmp >= 0)
        what = fmt("%s(%s, %s %s)", d.call.c_str(), p0.where.c_str(), cmp_text(w.cmp), value_text(w.expect, w.width).c_str());
      else
        what = fmt("%s on %s >= %s", d.call.c_str(), p0.where.c_str(), value_text(w.expect, w.width).c_str());
      if (w.vec_kind) {
        extra += vector_summary(p0);
        after += vector_lines(src, p0, g[0]);
      } else {
        if (w.nwords > 1) what += fmt(" (%u words)", w.nwords);
        if (p0.have_value) extra += fmt("   sees %s (live)", value_text(p0.value, w.width).c_str());
        else extra += "   value not readable here";
        if (p0.sat == 1) extra += " — satisfied";
      }
      std::string wtext, wjson;
      writers_of(src, v, g[0], &wtext, &wjson);
      if (!wtext.empty()) {
        after += std::string(16, ' ');
        after += wtext;
        after += "\n";
      }
    } else if (d.kind == "user code") {
      what = "running user code";
      std::vector<std::string> cpu;
      for (int pe : g) {
        const PeView& q = v[size_t(pe)];
        if (q.cpu_pct >= 0 && g.size() <= 4) cpu.push_back(fmt("PE %d %.0f%%", pe, q.cpu_pct));
      }
      if (!cpu.empty()) {
        extra += "   CPU over the look:";
        for (auto& c : cpu) extra += " " + c;
      }
      if (g.size() == 1 && src.pes[size_t(g[0])].quiet_s >= 0)
        extra += fmt("   unchanged for %.1f s", src.pes[size_t(g[0])].quiet_s);
      if (g.size() == 1 && (p0.b.pstate == 'T' || p0.b.pstate == 't')) extra += "   (process stopped)";
    } else if (d.kind == "in call") {
      what = "in " + d.call + " (not sleeping)";
    } else if (d.kind == "exited" || d.kind == "killed") {
      what = d.kind == "exited" ? fmt("exited with code %d", src.pes[size_t(g[0])].code)
                                : fmt("killed by signal %d", src.pes[size_t(g[0])].code);
      // What its page said last: the call it died in.
      const std::string was = state_at_end(src.pes[size_t(g[0])].page, p0.b);
      if (g.size() == 1 && !was.empty()) extra += "   it was " + was;
      for (int pe : g) odd.push_back(pe);
    } else if (d.kind == "other node") {
      what = "on another node: not visible here";
    } else if (d.kind == "init") {
      what = "in init (no status page yet)";
    } else {
      what = d.kind;
    }
    if (wait_s >= 0) extra += fmt("   waiting %.1f s", wait_s);
    t += line + what + extra + "\n" + after;
    r.pe_lines.resize(n);
    for (int pe : g) {
      const PeView& q = v[size_t(pe)];
      if (!q.b.visible || !src.pes[size_t(pe)].page) continue;
      std::string l = fmt("%d\t%u\t", pe, unsigned(q.b.state));
      l += q.d.call;
      l += fmt("\t%d\t%u\t%d\t", q.d.lane, q.d.seq, q.sat);
      for (int k = 0; k < kTeamLanes; ++k) {
        if (k) l += ',';
        l += std::to_string(q.b.lane_seq[k]);
      }
      l += '\t';
      l += what;
      l += extra;
      for (char& c : l)
        if (c == '\n') c = ' ';
      r.pe_lines[size_t(pe)] = l;
    }
    // RAS's outlier rule: a small group beside a larger one is worth its history.
    if (groups.size() > 1 && g.size() < largest && g.size() <= 10 && d.kind != "other node" && d.kind != "exited" &&
        d.kind != "killed")
      for (int pe : g) odd.push_back(pe);
    jg += fmt("%s{\"pes\":%s,\"state\":%s,\"call\":%s,\"team\":%s,\"lane\":%d,\"seq\":%u,\"missing\":%s,"
              "\"waiting_s\":%.3f,\"text\":%s}",
              gi ? "," : "", json_ints(g).c_str(), json_str(d.kind).c_str(), json_str(d.call).c_str(),
              json_str(d.lane >= 0 ? team_name(d.lane, d.coll) : "").c_str(), d.lane, d.seq, json_ints(missing).c_str(),
              wait_s, json_str(what + extra).c_str());
  }
  jg += "]";
  std::sort(odd.begin(), odd.end());
  for (int pe : odd) {
    const PeView& p = v[size_t(pe)];
    if (!p.b.recent.empty()) {
      std::string s = fmt("  PE %d last collectives:", pe);
      for (size_t i = 0; i < p.b.recent.size() && i < 4; ++i) s += "  " + coll_text(src.pes[size_t(pe)].page, p.b.recent[i]);
      t += s + "\n";
    }
    if (!p.b.writes.empty()) {
      std::string s = fmt("  PE %d last writes:", pe);
      for (size_t i = 0; i < p.b.writes.size() && i < 3; ++i) s += (i ? ",  " : "  ") + write_text(src, pe, p.b.writes[i]);
      t += s + "\n";
    }
  }
  {  // Without collective numbers (SYMMEM_STATUS=0), a skipped collective shows as its waits.
    std::vector<int> off;
    for (size_t i = 0; i < n; ++i)
      if (v[i].b.visible && v[i].b.colls_off) off.push_back(int(i));
    if (!off.empty()) t += "  " + pes_text(off) + ": SYMMEM_STATUS=0, collectives not numbered (their waits are shown)\n";
  }
  // Operations posted on the UCX route and not yet completed by a quiet.
  {
    std::vector<std::string> fl;
    for (size_t i = 0; i < n; ++i) {
      const Snap& b = v[i].b;
      if (b.visible && b.ucx_posted > b.ucx_quieted) fl.push_back(fmt("PE %zu %" PRIu64, i, b.ucx_posted - b.ucx_quieted));
    }
    if (!fl.empty()) {
      t += "  in flight on UCX (posted, not yet quieted):";
      for (size_t i = 0; i < fl.size(); ++i) t += (i ? ", " : " ") + fl[i];
      t += "\n";
    }
  }
  // Stacks (symmem-run --hang-stacks), PEs with the same one together.
  {
    std::map<std::string, std::vector<int>> by_stack;
    for (size_t i = 0; i < n && i < src.stacks.size(); ++i)
      if (!src.stacks[i].empty()) by_stack[stack_path(src.stacks[i])].push_back(int(i));
    std::vector<std::pair<std::string, std::vector<int>>> st(by_stack.begin(), by_stack.end());
    std::stable_sort(st.begin(), st.end(), [](const auto& x, const auto& y) { return x.second[0] < y.second[0]; });
    for (auto& [path, pes] : st) {
      t += "  stack of ";
      t += pes_text(pes);
      t += ": ";
      t += path;
      t += "\n";
    }
  }
  std::vector<int> odd_live;
  for (int pe : odd)
    if (src.pes[size_t(pe)].life == PeInfo::Life::kAlive) odd_live.push_back(pe);
  if (!ended.empty() && !odd.empty() && groups.size() > 1 && odd_live.empty())
    t += fmt("  hint: %s ended mid-job; the others cannot finish without %s\n", pes_text(ended).c_str(),
             ended.size() == 1 ? "it" : "them");
  else if (r.verdict == "DEADLOCK" && !odd.empty() && groups.size() > 1 && odd_live.size() == odd.size())
    t += fmt("  hint: %s %s for what the others will never do; %s wait for %s\n", pes_text(odd).c_str(),
             odd.size() == 1 ? "waits" : "wait", pes_text(groups[0]).c_str(), pes_text(odd).c_str());

  // JSON
  std::string j = "{\"schema\":\"symmem-hang/1\"";
  j += ",\"job\":" + json_str(src.job) + ",\"trigger\":" + json_str(opt.trigger) + ",\"verdict\":" + json_str(r.verdict) +
       ",\"reason\":" + json_str(reason) + fmt(",\"look_s\":%.3f,\"npes\":%zu", gap, n);
  if (!src.scope.empty()) j += ",\"scope\":" + json_str(src.scope);
  j += ",\"groups\":" + jg + ",\"pes\":[";
  for (size_t i = 0; i < n; ++i) {
    const PeView& p = v[i];
    const PeInfo& pi = src.pes[i];
    j += fmt("%s{\"pe\":%zu,\"pid\":%d,\"state\":%s,\"call\":%s,\"visible\":%s,\"moved\":%s,\"progress\":%" PRIu64
             ",\"proc_state\":\"%c\",\"cpu_pct\":%.1f,\"quiet_s\":%.3f",
             i ? "," : "", i, pi.pid, json_str(p.d.kind).c_str(), json_str(p.d.call).c_str(),
             p.b.visible ? "true" : "false", p.moved ? "true" : "false", p.b.progress,
             p.b.pstate == '?' ? '-' : p.b.pstate, p.cpu_pct, pi.quiet_s);
    if (p.b.colls_off) j += ",\"colls_numbered\":false";
    if (pi.life != PeInfo::Life::kAlive) j += fmt(",\"%s\":%d", pi.life == PeInfo::Life::kExited ? "exit_code" : "signal", pi.code);
    if (p.d.lane >= 0) j += fmt(",\"team\":%s,\"lane\":%d,\"seq\":%u", json_str(team_name(p.d.lane, p.d.coll)).c_str(), p.d.lane, p.d.seq);
    if (p.b.visible) {
      j += ",\"lane_seq\":{";
      bool first = true;
      for (int l = 0; l < kTeamLanes; ++l) {
        if (!p.b.lane_seq[l]) continue;
        j += fmt("%s\"%d\":%u", first ? "" : ",", l, p.b.lane_seq[l]);
        first = false;
      }
      j += "}";
    }
    if (p.b.waiting) {
      const Wait& w = p.b.w;
      j += fmt(",\"wait\":{\"owner\":%d,\"addr\":\"0x%" PRIx64 "\",\"name\":%s,\"cmp\":%s,\"width\":%u,\"nwords\":%u,"
               "\"expect\":%s,\"value\":%s,\"satisfied\":%s,\"waiting_s\":%.3f}",
               w.owner, w.addr, json_str(p.where).c_str(), json_str(w.cmp >= 0 ? cmp_text(w.cmp) : ">=(sync)").c_str(),
               w.width, w.nwords, value_text(w.expect, w.width).c_str(),
               p.have_value ? value_text(p.value, w.width).c_str() : "null",
               p.sat == 1 ? "true" : p.sat == 0 ? "false" : "null", p.wait_s);
      if (w.vec_kind) {
        std::string jv = fmt(",\"vector\":{\"kind\":\"%s\",\"addr\":\"0x%" PRIx64 "\",\"name\":%s,\"n\":%u,"
                             "\"taking_part\":%u,\"satisfied\":%d,\"words\":[",
                             vec_kind_name(w.vec_kind), w.vec_base,
                             json_str(describe(src, int(i), w.owner, w.vec_base)).c_str(), w.vec_n, w.vec_count, p.vec_sat);
        for (uint32_t k = 0; k < w.vec_shown && k < p.vec.size(); ++k) {
          const PeView::Elem& e = p.vec[k];
          jv += fmt("%s{\"index\":%u,\"expect\":%s,\"value\":%s,\"satisfied\":%s}", k ? "," : "", w.vec_index[k],
                    value_text(w.vec_expect[k], w.width).c_str(), e.have ? value_text(e.value, w.width).c_str() : "null",
                    e.sat == 1 ? "true" : e.sat == 0 ? "false" : "null");
        }
        jv += "]}";
        j.insert(j.size() - 1, jv);
      }
      std::string wtext, wjson;
      writers_of(src, v, int(i), &wtext, &wjson);
      j.insert(j.size() - 1, wjson);
    }
    if (p.b.visible) {
      j += fmt(",\"ucx_in_flight\":%" PRIu64, p.b.ucx_posted > p.b.ucx_quieted ? p.b.ucx_posted - p.b.ucx_quieted : 0);
      if (pi.life != PeInfo::Life::kAlive) {
        j += ",\"at_end\":";
        j += json_str(state_at_end(pi.page, p.b));
      }
      j += ",\"writes\":[";
      for (size_t k = 0; k < p.b.writes.size() && k < 8; ++k) {
        const Write& w = p.b.writes[k];
        j += fmt("%s{\"call\":%s,\"target\":%d,\"to\":%s,\"bytes\":%" PRIu64 ",\"ucx\":%s}", k ? "," : "",
                 json_str(name_of(pi.page, w.call_id)).c_str(), w.target, json_str(write_target(src, int(i), w)).c_str(),
                 w.bytes, w.ucx ? "true" : "false");
      }
      j += "]";
    }
    if (i < src.stacks.size() && !src.stacks[i].empty()) {
      j += ",\"stack\":[";
      size_t a = 0;
      bool first = true;
      const std::string& st = src.stacks[i];
      while (a < st.size()) {
        size_t e = st.find('\n', a);
        if (e == std::string::npos) e = st.size();
        if (e > a) {
          if (!first) j += ",";
          j += json_str(st.substr(a, e - a));
          first = false;
        }
        a = e + 1;
      }
      j += "]";
    }
    j += ",\"last\":[";
    for (size_t k = 0; k < p.b.recent.size() && k < 8; ++k) {
      const Coll& c = p.b.recent[k];
      j += fmt("%s{\"seq\":%u,\"op\":%s,\"team\":%s,\"lane\":%u,\"root\":%d,\"bytes\":%" PRIu64 ",\"done\":%s}", k ? "," : "",
               c.seq, json_str(name_of(pi.page, c.call_id)).c_str(), json_str(team_name(c.lane, &c)).c_str(), c.lane,
               c.root, c.bytes, c.done ? "true" : "false");
    }
    j += "]}";
  }
  j += "]}\n";
  r.json = j;

  if (opt.json_path != "-") {
    const std::string path = opt.json_path.empty() ? "symmem-hang-" + (src.job.empty() ? std::to_string(getpid()) : src.job) + ".json"
                                                    : opt.json_path;
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f && std::fwrite(j.data(), 1, j.size(), f) == j.size() && std::fclose(f) == 0) {
      r.json_path = path;
      t += "  JSON: " + path + "\n";
    } else {
      if (f) std::fclose(f);
      t += "  JSON: cannot write " + path + ": " + std::strerror(errno) + "\n";
    }
  }
  r.text = t;
  return r;
}

bool parse_pe_line(const std::string& line, PeInfo* pi) {
  std::vector<std::string> f;
  size_t a = 0;
  for (int i = 0; i < 7; ++i) {
    const size_t e = line.find('\t', a);
    if (e == std::string::npos) return false;
    f.push_back(line.substr(a, e - a));
    a = e + 1;
  }
  pi->r_what = line.substr(a);
  pi->rank = std::atoi(f[0].c_str());
  const unsigned st = unsigned(std::strtoul(f[1].c_str(), nullptr, 10));
  if (st > unsigned(State::kFinalized)) return false;
  pi->r_state = State(st);
  pi->r_call = f[2];
  pi->r_lane = std::atoi(f[3].c_str());
  pi->r_seq = uint32_t(std::strtoul(f[4].c_str(), nullptr, 10));
  pi->r_sat = std::atoi(f[5].c_str());
  pi->r_lane_seq.clear();
  size_t b = 0;
  while (b <= f[6].size()) {
    size_t e = f[6].find(',', b);
    if (e == std::string::npos) e = f[6].size();
    pi->r_lane_seq.push_back(uint32_t(std::strtoul(f[6].substr(b, e - b).c_str(), nullptr, 10)));
    b = e + 1;
  }
  pi->summarized = true;
  return true;
}

bool Monitor::look(Source& src, double hang_s) {
  const size_t n = src.pes.size();
  sig_.resize(n, 0);
  since_.resize(n, 0);
  const uint64_t now = mono_ns();
  int live = 0;
  bool all_blocked = true;
  for (size_t i = 0; i < n; ++i) {
    PeInfo& pi = src.pes[i];
    const Page* p = pi.page;
    uint64_t sig = uint64_t(pi.life) * 0x9e3779b97f4a7c15ull + uint64_t(pi.code);
    bool visible = p && p->magic == kPageMagic && p->version == kPageVersion;
    State st = State::kInit;
    if (visible) {
      st = State(p->state.load(std::memory_order_acquire));
      sig = sig * 31 + uint64_t(st);
      sig = sig * 31 + p->progress.load(std::memory_order_relaxed);
      sig = sig * 31 + collectives_entered(*p);
      sig = sig * 31 + p->call_id.load(std::memory_order_relaxed);
    }
    sig += visible ? 1 : 0;
    if (sig != sig_[i] || since_[i] == 0) {
      sig_[i] = sig;
      since_[i] = now;
    }
    pi.quiet_s = double(now - since_[i]) * 1e-9;
    if (pi.life != PeInfo::Life::kAlive) continue;
    if (!visible) {
      if (!pi.remote) all_blocked = false;  // not started yet
      continue;
    }
    if (st == State::kFinalized) continue;
    ++live;
    if (st != State::kWaiting) all_blocked = false;
  }
  if (live == 0) all_blocked = false;
  if (!all_blocked) {
    blocked_since_ = 0;
    return false;
  }
  // Blocked since the latest change of any PE.
  uint64_t last_change = 0;
  for (size_t i = 0; i < n; ++i) last_change = std::max(last_change, since_[i]);
  blocked_since_ = last_change;
  return double(now - blocked_since_) * 1e-9 >= hang_s;
}

}  // namespace symmem::dfx::hang
