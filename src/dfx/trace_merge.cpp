// Merges a job's trace rings (dfx/trace.hpp) into one Chrome/Perfetto trace-event JSON
// file: a process per PE, a thread per application thread, a slice per operation, flow
// arrows from the write that satisfied a wait (put with signal, atomic, p) to that wait and
// from a barrier's last arriver to the others' exits.
//
// Signal flows are found here, not recorded at run time: for a wait on PE B that ended at
// t, the satisfying write is the latest write to B's waited word that started before t
// (every PE of a node reads the same clock). It costs the operations nothing.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

#include "dfx/trace.hpp"

namespace symmem::trace {
namespace {

// dfx::Op values the merger needs (dfx_page.hpp; the ring names them all in op_names).
enum : uint8_t {
  kPut = 1, kGet, kPutNbi, kGetNbi, kAmo, kAmoFetch, kPutSignal, kSignal, kWait, kTest, kLock, kQuiet, kFence,
  kBarrier, kSync, kBroadcast, kCollect, kFcollect, kAlltoall, kAlltoalls, kReduce, kScan, kAlloc, kFree,
  kFirstColl = kBarrier, kCollEnd = 27
};

struct Ring {
  std::string file;
  std::unique_ptr<Header> h;  // copied
  std::vector<Rec> recs;  // in order
  double ns_per_tick = 1.0;
  bool has_ticks_fit = false;
  double shift_ns = 0;  // subtracted from this ring's times: its host's clock against PE 0's
  double shift_unc_ns = 0;  // and how far off that may be
};

struct Ev {
  int pe = 0, tid = 0;
  uint8_t op = 0;
  bool open = false;
  double ts = 0, dur = 0;  // ns since the job's first event
  int peer = -1;
  uint64_t bytes = 0, addr = 0, data_addr = 0;
  uint16_t call = 0;
  // collectives
  bool coll = false;
  uint32_t team_seq = 0;
  uint16_t lane = 0;
  int start = 0, stride = 0, size = 0;
  int root = -1;
  uint64_t src = 0;
  uint32_t number = 0;  // alloc info
  double end() const { return ts + dur; }
};

void json_str(std::string& o, const char* s) {
  o += '"';
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += char(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += char(c);
    }
  }
  o += '"';
}

void num(std::string& o, double us) {
  char b[40];
  std::snprintf(b, sizeof b, "%.3f", us);
  o += b;
}

std::string size_text(uint64_t b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  double v = double(b);
  while (v >= 1024 && i < 4 && std::fmod(v, 1024) == 0) v /= 1024, ++i;
  char s[32];
  std::snprintf(s, sizeof s, "%.0f %s", v, u[i]);
  return s;
}

bool read_ring(const std::string& file, Ring* r, std::string* err) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return *err = file + ": " + std::strerror(errno), false;
  struct stat st;
  if (fstat(fd, &st) != 0 || size_t(st.st_size) < kHeaderBytes) {
    close(fd);
    return *err = file + ": too short for a trace ring", false;
  }
  void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return *err = file + ": " + std::strerror(errno), false;
  const Header* h = static_cast<const Header*>(m);
  bool ok = h->magic == kRingMagic && h->version == kRingVersion && h->rec_size == sizeof(Rec) &&
            kHeaderBytes + h->capacity * sizeof(Rec) <= size_t(st.st_size);
  if (!ok) {
    munmap(m, size_t(st.st_size));
    return *err = file + ": not a symmem trace ring of this version", false;
  }
  r->h.reset(new Header);
  std::memcpy(static_cast<void*>(r->h.get()), h, sizeof(Header));
  r->file = file;
  const Rec* ring = reinterpret_cast<const Rec*>(static_cast<const char*>(m) + kHeaderBytes);
  const uint64_t head = h->head.load(std::memory_order_acquire), cap = h->capacity;
  const uint64_t first = head > cap ? head - cap : 0;
  r->recs.reserve(size_t(head - first));
  for (uint64_t i = first; i < head; ++i) r->recs.push_back(ring[i % cap]);
  munmap(m, size_t(st.st_size));
  return true;
}

const char* op_text(const Ring& r, uint8_t op) {
  if (op < kOpNames && r.h->op_names[op][0]) return r.h->op_names[op];
  return "?";
}

std::string call_text(const Ring& r, uint16_t call, uint8_t op) {
  if (call > 0 && call < r.h->name_count.load() && call < kCallNames && r.h->names[call][0])
    return std::string(r.h->names[call], strnlen(r.h->names[call], kCallNameLen));
  return op_text(r, op);
}

// The allocations of the job (numbered the same on every PE) with their lifetimes, each on
// the clock of the PE that recorded it: an address is named by its own PE's lifetime, so no
// two PEs' clock conversions are compared.
struct Alloc {
  uint64_t offset = 0, size = 0;
  std::map<int, std::pair<double, double>> life;  // PE -> (born, died)
  std::string name;
  // Alive at `ts` for PE `pe`; a PE whose ring lost the record takes the latest birth seen.
  bool live(int pe, double ts) const {
    if (auto it = life.find(pe); it != life.end()) return it->second.first <= ts && ts <= it->second.second;
    double born = -1e300;
    for (const auto& [p, bd] : life) born = std::max(born, bd.first);
    return born <= ts;
  }
};

}  // namespace

std::vector<std::string> jobs_with_rings(const std::string& dir) {
  std::vector<std::string> jobs;
  DIR* d = opendir(dir.empty() ? "/dev/shm" : dir.c_str());
  if (!d) return jobs;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    const size_t k = n.find("-trace-pe");
    if (n.rfind("symmem-", 0) != 0 || k == std::string::npos || k <= 7) continue;
    const std::string job = n.substr(7, k - 7);
    if (std::find(jobs.begin(), jobs.end(), job) == jobs.end()) jobs.push_back(job);
  }
  closedir(d);
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

// Rings from several hosts (copied into one directory): each host's CLOCK_MONOTONIC
// starts at its own boot. Each host's clock is placed against the host of the lowest PE
// from the world collectives both recorded (barriers, syncs, reductions, collects,
// alltoalls, allocations: each member enters before any member leaves), so for a PE q on
// host H and a PE r on the reference host
//   q.start - r.end  <  offset(H's clock - the reference's)  <  q.end - r.start.
// The tightest bounds over all such pairs give the offset (their middle) and its
// uncertainty (half their width), reported in res->clocks.
template <class ToNs, class DurNs>
void align_hosts(std::vector<Ring>& rings, const ToNs& to_ns, const DurNs& dur_ns, MergeResult* res) {
  auto host = [](const Ring& r) { return std::string(r.h->host, strnlen(r.h->host, sizeof r.h->host)); };
  if (rings.empty()) return;
  const std::string ref = host(rings[0]);
  bool several = false;
  for (const Ring& r : rings) several |= host(r) != ref;
  if (!several) return;
  struct C {
    double t0, t1;
    size_t ring;
  };
  std::map<std::pair<uint32_t, uint64_t>, std::vector<C>> colls;  // (team_seq, members) on the world lane
  for (size_t ri = 0; ri < rings.size(); ++ri) {
    const Ring& r = rings[ri];
    for (size_t i = 0; i + 1 < r.recs.size(); ++i) {
      const Rec& x = r.recs[i];
      const Rec& nx = r.recs[i + 1];
      const bool all = x.op == kBarrier || x.op == kSync || (x.op >= kCollect && x.op <= kAlltoalls) ||
                       x.op == kReduce || x.op == kAlloc || x.op == kFree;
      if (!all || (x.flags & kFlagExt) || x.dur == kDurOpen || !(nx.flags & kFlagExt) || nx.op != x.op) continue;
      const CollExt& c = reinterpret_cast<const CollExt&>(nx);
      if (c.lane != 0) continue;
      const double t0 = to_ns(r, x.t0);
      colls[{c.team_seq, c.members}].push_back({t0, t0 + dur_ns(r, x.dur), ri});
    }
  }
  struct Bounds {
    double lo = -1e300, hi = 1e300;
    size_t n = 0;
  };
  std::map<std::string, Bounds> bounds;
  for (const auto& [key, v] : colls)
    for (const C& q : v) {
      const std::string hq = host(rings[q.ring]);
      if (hq == ref) continue;
      Bounds& b = bounds[hq];
      for (const C& r : v) {
        if (host(rings[r.ring]) != ref) continue;
        b.lo = std::max(b.lo, q.t0 - r.t1);
        b.hi = std::min(b.hi, q.t1 - r.t0);
        ++b.n;
      }
    }
  char line[256];
  for (Ring& r : rings) {
    const std::string h = host(r);
    if (h == ref) continue;
    auto it = bounds.find(h);
    if (it == bounds.end() || it->second.n == 0 || it->second.lo > it->second.hi) continue;
    r.shift_ns = (it->second.lo + it->second.hi) / 2;
    r.shift_unc_ns = (it->second.hi - it->second.lo) / 2;
  }
  for (const auto& [h, b] : bounds) {
    if (b.n == 0 || b.lo > b.hi)
      std::snprintf(line, sizeof line, "host %s: no consistent world collective with %s; its clock is left as is",
                    h.c_str(), ref.c_str());
    else
      std::snprintf(line, sizeof line, "host %s: clock %+.3f ms from %s's (+-%.1f us, %zu pairs of collectives)",
                    h.c_str(), (b.lo + b.hi) / 2e6, ref.c_str(), (b.hi - b.lo) / 2e3, b.n);
    res->clocks.push_back(line);
  }
}

bool merge_job(const std::string& job, const std::string& dir_in, const std::string& out_in, bool keep,
               MergeResult* res, std::string* err) {
  const std::string dir = dir_in.empty() ? "/dev/shm" : dir_in;
  const std::string prefix = ring_prefix(job);
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) files.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  if (files.empty()) return *err = "no trace rings of job " + job + " in " + dir, false;
  std::vector<Ring> rings;
  for (const std::string& f : files) {
    Ring r;
    std::string e;
    if (!read_ring(f, &r, &e)) {
      // A PE killed before its header was complete leaves nothing to show; say so, go on.
      std::fprintf(stderr, "symmem-trace: skipping %s\n", e.c_str());
      continue;
    }
    rings.push_back(std::move(r));
  }
  if (rings.empty()) return *err = "no readable trace ring of job " + job, false;
  std::sort(rings.begin(), rings.end(), [](const Ring& a, const Ring& b) { return a.h->rank < b.h->rank; });

  // Clocks: ticks -> ns from each ring's own pairs; a ring whose pairs are too close
  // (killed early) takes the widest ring's rate (one TSC per machine).
  double best_rate = 1.0, best_span = 0;
  for (Ring& r : rings) {
    if (r.h->clock != 1) continue;
    const double span = double(r.h->ns1) - double(r.h->ns0);
    if (span > 1e6 && r.h->tick1 > r.h->tick0) {
      r.ns_per_tick = span / double(r.h->tick1 - r.h->tick0);
      r.has_ticks_fit = true;
      if (span > best_span) best_span = span, best_rate = r.ns_per_tick;
    }
  }
  for (Ring& r : rings)
    if (r.h->clock == 1 && !r.has_ticks_fit) r.ns_per_tick = best_rate;
  auto to_ns = [](const Ring& r, uint64_t t) {
    return (r.h->clock == 1 ? double(r.h->ns0) + (double(t) - double(r.h->tick0)) * r.ns_per_tick : double(t)) -
           r.shift_ns;
  };
  auto dur_ns = [](const Ring& r, uint32_t d) {
    const double ticks = (d & kDurCoarse) ? double(uint64_t(d & ~kDurCoarse) << 16) : double(d);
    return r.h->clock == 1 ? ticks * r.ns_per_tick : ticks;
  };
  align_hosts(rings, to_ns, dur_ns, res);

  // Records -> events.
  std::vector<Ev> evs;
  double t_min = 1e300, t_max = -1e300;
  std::map<uint32_t, Alloc> allocs;
  for (size_t ri = 0; ri < rings.size(); ++ri) {
    const Ring& r = rings[ri];
    for (size_t i = 0; i < r.recs.size(); ++i) {
      const Rec& x = r.recs[i];
      if (x.op == 0) continue;  // reserved, never written (the PE died in between)
      if (x.flags & kFlagExt) {
        if (evs.empty() || evs.back().pe != r.h->rank || i == 0 || r.recs[i - 1].op != x.op) continue;
        Ev& e = evs.back();
        if (e.coll) {
          const CollExt& c = reinterpret_cast<const CollExt&>(x);
          e.src = c.src;
          e.team_seq = c.team_seq;
          e.lane = c.lane;
          e.start = int(c.members & 0x1fffff);
          e.stride = int((c.members >> 21) & 0x1fffff);
          e.size = int((c.members >> 42) & 0x1fffff);
        } else if (e.op == kPutSignal) {
          e.data_addr = x.t0;
        }
        continue;
      }
      Ev e;
      e.pe = r.h->rank;
      e.tid = x.flags & kFlagTidMask;
      e.op = x.op;
      e.ts = to_ns(r, x.t0);
      e.call = x.call;
      e.peer = x.peer;
      e.bytes = x.bytes;
      e.addr = x.addr;
      if (x.op == kOpAllocInfo) {
        const uint64_t size = uint64_t(x.dur) << 32 | x.bytes;
        Alloc& a = allocs[uint32_t(x.peer)];
        a.offset = x.addr, a.size = size;
        a.life[e.pe] = {e.ts, 1e300};
        continue;
      }
      if (x.op == kOpFreeInfo) {
        for (auto& [n, a] : allocs) {
          auto it = a.life.find(e.pe);
          if (a.offset == x.addr && it != a.life.end() && it->second.first <= e.ts && it->second.second == 1e300)
            it->second.second = e.ts;
        }
        continue;
      }
      if (x.dur == kDurOpen) {
        e.open = true;
      } else {
        e.dur = dur_ns(r, x.dur);
      }
      e.coll = x.op >= kFirstColl && x.op < kCollEnd;
      if (e.coll) e.root = x.peer;
      t_min = std::min(t_min, e.ts);
      t_max = std::max(t_max, e.open ? e.ts : e.end());
      evs.push_back(e);
    }
  }
  if (evs.empty()) t_min = t_max = 0;
  // Names given by users, from any PE that finalized.
  for (const Ring& r : rings)
    for (uint32_t i = 0; i < r.h->alloc_name_count.load() && i < uint32_t(kAllocNames); ++i) {
      const AllocName& an = r.h->alloc_names[i];
      Alloc& a = allocs[an.number];
      if (a.name.empty()) a.name.assign(an.name, strnlen(an.name, kAllocNameLen));
      if (a.size == 0) a.offset = an.offset, a.size = an.size;
    }
  // Whole nanoseconds (what the file shows), so a point 1 ns inside a slice stays inside.
  for (Ev& e : evs) {
    if (e.open) e.dur = std::max(0.0, t_max - e.ts);
    const double ts = std::round(e.ts - t_min), end = std::round(e.ts - t_min + e.dur);
    e.ts = ts;
    e.dur = end - ts;
  }
  for (auto& [n, a] : allocs)
    for (auto& [p, bd] : a.life) {
      bd.first -= t_min;
      if (bd.second < 1e300) bd.second -= t_min;
    }
  std::map<int, const Ring*> ring_of;
  for (const Ring& r : rings) ring_of[r.h->rank] = &r;

  // Where an address (as PE `pe` saw it, for target `target`) falls: 0 heap, 1 static.
  auto locate = [&](int pe, uint64_t addr, int* region, uint64_t* off) {
    const Ring& r = *ring_of[pe];
    if (r.h->heap_size && addr - r.h->heap_base < r.h->heap_size) return *region = 0, *off = addr - r.h->heap_base, true;
    if (r.h->static_size && addr - r.h->static_start < r.h->static_size)
      return *region = 1, *off = addr - r.h->static_start, true;
    return false;
  };
  auto describe = [&](int pe, uint64_t addr, double ts) {
    int region;
    uint64_t off;
    char b[200];
    if (!locate(pe, addr, &region, &off)) {
      std::snprintf(b, sizeof b, "0x%" PRIx64, addr);
      return std::string(b);
    }
    if (region == 1) {
      std::snprintf(b, sizeof b, "static data +0x%" PRIx64, off);
      return std::string(b);
    }
    for (const auto& [n, a] : allocs)
      if (off - a.offset < a.size && a.live(pe, ts)) {
        std::string name = a.name.empty() ? "allocation #" + std::to_string(n) + " (" + size_text(a.size) + ")" : a.name;
        std::snprintf(b, sizeof b, " +%" PRIu64, off - a.offset);
        return name + b;
      }
    std::snprintf(b, sizeof b, "heap +%" PRIu64, off);
    return std::string(b);
  };

  // Signal flows: writes indexed by (target, region, offset) in time order.
  std::map<std::tuple<int, int, uint64_t>, std::vector<size_t>> writes;
  for (size_t i = 0; i < evs.size(); ++i) {
    const Ev& e = evs[i];
    if (e.op != kPutSignal && e.op != kAmo && e.op != kAmoFetch && e.op != kPut) continue;
    if (e.peer < 0 || !ring_of.count(e.pe)) continue;
    int region;
    uint64_t off;
    if (locate(e.pe, e.addr, &region, &off)) writes[{e.peer, region, off}].push_back(i);
  }
  for (auto& [k, v] : writes) std::sort(v.begin(), v.end(), [&](size_t a, size_t b) { return evs[a].ts < evs[b].ts; });
  // Each PE's clock is converted on its own (its TSC pairs; a killed PE has only its first):
  // the satisfying write may appear up to kSkewNs after the wait's end, plus, for PEs of
  // other hosts, how far off their clocks' placement may be.
  constexpr double kSkewNs = 1000;
  std::map<int, const Ring*> ring_by_pe;
  double max_unc = 0;
  for (const Ring& r : rings) ring_by_pe[r.h->rank] = &r, max_unc = std::max(max_unc, r.shift_unc_ns);
  auto skew = [&](int a, int b) {  // PEs of one host share a clock (and its placement)
    const Ring *x = ring_by_pe[a], *y = ring_by_pe[b];
    return kSkewNs + (x->shift_ns != y->shift_ns ? x->shift_unc_ns + y->shift_unc_ns : 0);
  };
  std::vector<std::pair<size_t, size_t>> signal_flows;  // write -> wait
  for (size_t i = 0; i < evs.size(); ++i) {
    const Ev& w = evs[i];
    if (w.op != kWait || w.open) continue;
    int region;
    uint64_t off;
    if (!locate(w.pe, w.addr, &region, &off)) continue;
    size_t best = SIZE_MAX;
    auto it = writes.lower_bound({w.peer, region, off});
    for (; it != writes.end() && std::get<0>(it->first) == w.peer && std::get<1>(it->first) == region &&
           std::get<2>(it->first) < off + std::max<uint64_t>(w.bytes, 1);
         ++it) {
      const auto& v = it->second;
      auto ub = std::upper_bound(v.begin(), v.end(), w.end() + kSkewNs + 2 * max_unc,
                                 [&](double t, size_t j) { return t < evs[j].ts; });
      while (ub != v.begin() && evs[*(ub - 1)].ts > w.end() + skew(evs[*(ub - 1)].pe, w.pe)) --ub;
      if (ub == v.begin()) continue;
      const size_t j = *(ub - 1);
      if (best == SIZE_MAX || evs[j].ts > evs[best].ts) best = j;
    }
    if (best != SIZE_MAX) signal_flows.push_back({best, i});
  }
  // Barrier flows: the last arriver of each complete barrier/sync -> every other's exit.
  std::map<std::tuple<int, uint32_t, int, int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < evs.size(); ++i) {
    const Ev& e = evs[i];
    if ((e.op == kBarrier || e.op == kSync) && e.size > 1) groups[{e.lane, e.team_seq, e.start, e.stride, e.size}].push_back(i);
  }
  std::vector<std::pair<size_t, size_t>> barrier_flows;
  for (auto& [k, v] : groups) {
    if (int(v.size()) != std::get<4>(k)) continue;  // a member's record is missing
    size_t last = v[0];
    for (size_t j : v)
      if (evs[j].ts > evs[last].ts) last = j;
    for (size_t j : v)
      if (j != last && !evs[j].open) barrier_flows.push_back({last, j});
  }

  // Output.
  std::string o;
  o.reserve(evs.size() * 200 + 4096);
  o += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"schema\":\"symmem-trace/1\",\"job\":";
  json_str(o, job.c_str());
  o += ",\"pes\":" + std::to_string(rings.size()) + "},\n\"traceEvents\":[\n";
  bool first = true;
  auto begin_ev = [&]() {
    if (!first) o += ",\n";
    first = false;
  };
  int unfinished = 0;
  for (const Ring& r : rings) {
    const bool done = r.h->state.load() == 2;
    unfinished += !done;
    char name[200];
    std::snprintf(name, sizeof name, "PE %d (%s:%d)%s", r.h->rank, r.h->host, r.h->pid, done ? "" : " [did not finalize]");
    begin_ev();
    o += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(r.h->rank) + ",\"tid\":0,\"args\":{\"name\":";
    json_str(o, name);
    o += "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(r.h->rank) +
         ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(r.h->rank) + "}}";
    const uint32_t nthreads = std::max<uint32_t>(1, std::min<uint32_t>(r.h->threads.load(), kFlagTidMask + 1));
    for (uint32_t t = 0; t < nthreads; ++t) {
      o += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(r.h->rank) + ",\"tid\":" +
           std::to_string(t) + ",\"args\":{\"name\":\"" + (t == 0 ? std::string("main") : "thread " + std::to_string(t)) +
           "\"}}";
    }
  }
  for (const Ev& e : evs) {
    const Ring& r = *ring_of[e.pe];
    begin_ev();
    const std::string call = e.op == kOpWaitSleep ? std::string("sleep") : call_text(r, e.call, e.op);
    o += "{\"ph\":\"X\",\"name\":";
    json_str(o, call.c_str());
    o += ",\"cat\":";
    json_str(o, op_text(r, e.op));
    o += ",\"ts\":";
    num(o, e.ts / 1e3);
    o += ",\"dur\":";
    num(o, e.dur / 1e3);
    o += ",\"pid\":" + std::to_string(e.pe) + ",\"tid\":" + std::to_string(e.tid) + ",\"args\":{";
    if (e.coll) {
      o += "\"team_lane\":" + std::to_string(e.lane) + ",\"seq\":" + std::to_string(e.team_seq) + ",\"members\":\"" +
           std::to_string(e.size) + " from PE " + std::to_string(e.start) + " stride " + std::to_string(e.stride) +
           "\",\"bytes\":" + std::to_string(e.bytes);
      if (e.root >= 0) o += ",\"root\":" + std::to_string(e.root);
      if (e.addr) {
        o += ",\"dest\":";
        json_str(o, describe(e.pe, e.addr, e.ts).c_str());
      }
    } else {
      o += std::string(e.op == kWait || e.op == kOpWaitSleep ? "\"owner\":" : "\"peer\":") + std::to_string(e.peer) +
           ",\"bytes\":" + std::to_string(e.bytes);
      if (e.addr) {
        o += e.op == kPutSignal ? ",\"signal\":" : ",\"addr\":";
        json_str(o, describe(e.pe, e.addr, e.ts).c_str());
      }
      if (e.data_addr) {
        o += ",\"dest\":";
        json_str(o, describe(e.pe, e.data_addr, e.ts).c_str());
      }
    }
    if (e.open) o += ",\"unfinished\":true";
    o += "}}";
  }
  // Flows (v1: s on the source slice, f bound to the enclosing slice at the target).
  uint64_t flow_id = 1;
  auto flow = [&](const Ev& a, const Ev& b, double ts_a, double ts_b, const char* name) {
    const std::string id = std::to_string(flow_id++);
    begin_ev();
    o += "{\"ph\":\"s\",\"name\":\"" + std::string(name) + "\",\"cat\":\"flow\",\"id\":" + id +
         ",\"pid\":" + std::to_string(a.pe) + ",\"tid\":" + std::to_string(a.tid) + ",\"ts\":";
    num(o, ts_a / 1e3);
    o += "},\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"" + std::string(name) + "\",\"cat\":\"flow\",\"id\":" + id +
         ",\"pid\":" + std::to_string(b.pe) + ",\"tid\":" + std::to_string(b.tid) + ",\"ts\":";
    num(o, ts_b / 1e3);
    o += "}";
  };
  // Points strictly inside the slices (rounded to the 1 ns the file shows).
  auto inside_end = [](const Ev& e) { return e.dur >= 2 ? e.end() - 1 : e.ts + e.dur / 2; };
  auto inside_start = [](const Ev& e) { return e.dur >= 2 ? e.ts + 1 : e.ts + e.dur / 2; };
  for (auto [w, x] : signal_flows) flow(evs[w], evs[x], std::round(evs[w].ts + evs[w].dur / 2), inside_end(evs[x]), "signal");
  for (auto [l, x] : barrier_flows) flow(evs[l], evs[x], inside_start(evs[l]), inside_end(evs[x]), "last arrival");
  o += "\n]}\n";

  const std::string out = !out_in.empty() ? out_in : std::string(rings[0].h->out_path);
  if (out.empty()) return *err = "the rings name no output file; give one (-o)", false;
  const std::string tmp = out + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return *err = "cannot write " + tmp + ": " + std::strerror(errno), false;
  const bool wrote = std::fwrite(o.data(), 1, o.size(), f) == o.size();
  if (std::fclose(f) != 0 || !wrote || std::rename(tmp.c_str(), out.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return *err = "cannot write " + out + ": " + std::strerror(errno), false;
  }
  res->out_path = out;
  res->pes = int(rings.size());
  res->unfinished_pes = unfinished;
  res->events = evs.size();
  res->flows = signal_flows.size() + barrier_flows.size();
  res->rings = files;
  if (!keep)
    for (const std::string& fl : files) ::unlink(fl.c_str());
  return true;
}

}  // namespace symmem::trace
