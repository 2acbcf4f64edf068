// The hang report's deadline and the pieces that cross nodes (hang.hpp): the clock of the
// pages' time stamps, the Monitor that tracks how long each PE has been unchanged, and the
// parser of another node's per-PE summary lines.
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
