// One look at a PE for the hang report (hang_look.hpp): its status page copied into plain
// records (stable reads only), its process state from /proc, what it is doing as a group
// key (waiting, in a call, in a collective of a team, user code, ended), and the names the
// report prints for calls, teams and collectives; the small text and JSON formatters.
#include "dfx/hang_look.hpp"

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
  if (gpu_wait_read(p->gpu, &s.gpu)) {
    s.gpu_expired = true;
    s.gpu_text = gpu_wait_text(p->gpu);
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

const char* cmp_text(int c) { return cmp_symbol(c); }

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

}  // namespace symmem::dfx::hang
