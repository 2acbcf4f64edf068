// The hang report builder (hang.hpp): two looks at every PE a second apart, the PEs
// grouped by what they do, the verdict (DEADLOCK, BLOCKED, STALL, PROGRESS, FINISHED), and
// the text for stderr with its JSON twin. What one look sees and how a waited word and its
// writers are found are in hang_look.cpp and hang_writers.cpp.
#include "dfx/hang.hpp"

#include <sys/stat.h>
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
#include "dfx/hang_look.hpp"

namespace symmem::dfx::hang {

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
  // Device waits that expired (their kernels trapped): the GPU side of a hang, named.
  for (size_t i = 0; i < n; ++i)
    if (v[i].b.gpu_expired) t += "  " + v[i].b.gpu_text + "\n";
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
    if (p.b.gpu_expired) {
      const shmemx_device_wait_record_t& g = p.b.gpu;
      j += fmt(",\"gpu_wait\":{\"peer\":%d,\"addr\":\"0x%llx\",\"cmp\":%s,\"expect\":%llu,\"seen\":%llu,"
               "\"waited_s\":%.3f,\"block\":%u,\"thread\":%u,\"text\":%s}",
               g.peer, g.addr, json_str(cmp_text(g.cmp)).c_str(), g.expected, g.seen, double(g.waited_ns) * 1e-9,
               g.block, g.thread, json_str(p.b.gpu_text).c_str());
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
    // Whole or not at all: a reader polls for the file while the job runs on (a live
    // report), so a regular file is written beside and renamed into place. Anything else
    // (/dev/null, a FIFO) is written as it is: a rename would replace it.
    struct stat st;
    const bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    const std::string tmp = in_place ? path : path + ".tmp" + std::to_string(getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    bool ok = f && std::fwrite(j.data(), 1, j.size(), f) == j.size();
    if (f) ok = std::fclose(f) == 0 && ok;
    if (ok && (in_place || std::rename(tmp.c_str(), path.c_str()) == 0)) {
      r.json_path = path;
      t += "  JSON: " + path + "\n";
    } else {
      t += "  JSON: cannot write " + path + ": " + std::strerror(errno) + "\n";
      if (!in_place) std::remove(tmp.c_str());
    }
  }
  r.text = t;
  return r;
}

}  // namespace symmem::dfx::hang
