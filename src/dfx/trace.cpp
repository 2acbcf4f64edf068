// The trace tool (SYMMEM_TRACE=path[,size=64M]): every point-to-point operation, wait,
// collective and allocation as a 32-byte record in this PE's ring file (dfx/trace.hpp).
//
// Cost per event: two tick reads (raw TSC where it is invariant, else CLOCK_MONOTONIC),
// one atomic slot reservation and one 32-byte store into the mapped ring. Operations are
// written when they end; collectives and sleeping waits are written when they start, open
// (kDurOpen), and closed when they end, so a PE killed inside a barrier shows it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SYMMEM_TRACE_TSC 1
#endif

#include "common/config.hpp"
#include "common/log.hpp"
#include "runtime/dfx.hpp"
#include "dfx/hang.hpp"
#include "dfx/trace.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem::dfx {
namespace {

using trace::CollExt;
using trace::Header;
using trace::Rec;

constexpr uint64_t kPairWindowNs = 2000;  // a clock pair read wider than this was preempted

bool tsc_invariant() {
#ifdef SYMMEM_TRACE_TSC
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
#endif
  return false;
}

inline uint32_t encode_dur(uint64_t d) {
  if (d < trace::kDurCoarse) return uint32_t(d);
  const uint64_t c = d >> 16;
  return trace::kDurCoarse | uint32_t(c < 0x7ffffffeull ? c : 0x7ffffffeull);
}

inline uint32_t sat32(uint64_t v) { return v < 0xffffffffull ? uint32_t(v) : 0xffffffffu; }

// Per thread: its index in the ring's records, the open collective and sleep records (an
// operation's start is in its OpEvent, on the caller's stack).
// initial-exec: a few instructions per access instead of a __tls_get_addr call (which
// was a seventh of a traced put); 48 bytes of the static TLS that glibc keeps for it.
struct ThreadState {
  const void* owner = nullptr;
  uint8_t tid = 0;
  uint64_t coll_idx = ~0ull, coll_t0 = 0;
  uint64_t sleep_idx = ~0ull, sleep_t0 = 0;
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state;

class TraceTool final : public ToolHooks {
 public:
  TraceTool(Runtime::Impl* rt, const Config& cfg) : rt_(rt) { open(cfg.trace); }
  ~TraceTool() override {
    if (map_) munmap(map_, map_bytes_);
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return h_ != nullptr; }

  void op_begin(OpEvent& ev) override { ev.t0_ticks = ticks(); }

  void op_end(OpEvent& ev) override {
    const uint64_t t1 = ticks();
    ThreadState& t = ts();
    const uint64_t t0 = ev.t0_ticks;
    const bool ext = ev.op == Op::kPutSignal;
    const uint64_t i = h_->head.fetch_add(ext ? 2 : 1, std::memory_order_relaxed);
    Rec& r = ring_[i % cap_];
    r.t0 = t0;
    r.dur = encode_dur(t1 - t0);
    r.op = uint8_t(ev.op);
    r.flags = t.tid;
    r.call = name_id(ev.call);
    r.peer = ev.pe;
    r.bytes = sat32(ev.bytes);
    // A put with signal is shown by its signal word (what a wait matches); the data's
    // address follows in the extension record.
    r.addr = reinterpret_cast<uintptr_t>(ext && ev.aux ? ev.aux : ev.addr);
    if (ext) {
      Rec& x = ring_[(i + 1) % cap_];
      x = Rec{reinterpret_cast<uintptr_t>(ev.addr), 0, uint8_t(ev.op), uint8_t(trace::kFlagExt | t.tid), 0, 0, 0, 0};
    }
  }

  void coll_begin(CollEvent& ev) override {
    if (SYMMEM_DFX_UNLIKELY(!heap_known_)) note_heap();
    ThreadState& t = ts();
    const uint64_t t0 = ticks();
    const uint64_t i = h_->head.fetch_add(2, std::memory_order_relaxed);
    Rec& r = ring_[i % cap_];
    r = Rec{t0, trace::kDurOpen, uint8_t(ev.op), t.tid, name_id(op_name(ev.op)), ev.root, sat32(ev.bytes),
            reinterpret_cast<uintptr_t>(ev.dest)};
    CollExt& x = *reinterpret_cast<CollExt*>(&ring_[(i + 1) % cap_]);
    x.src = reinterpret_cast<uintptr_t>(ev.src);
    x.team_seq = ev.team_seq;
    x.op = uint8_t(ev.op);
    x.flags = uint8_t(trace::kFlagExt | t.tid);
    x.lane = uint16_t(ev.lane);
    x.elem_size = int32_t(ev.elem_size);
    x.pad = 0;
    x.members = (uint64_t(ev.start) & 0x1fffff) | (uint64_t(ev.stride) & 0x1fffff) << 21 |
                (uint64_t(ev.size) & 0x1fffff) << 42;
    t.coll_idx = i;
    t.coll_t0 = t0;
  }

  void coll_end(CollEvent&) override {
    ThreadState& t = ts();
    close_open(t.coll_idx, t.coll_t0);
    t.coll_idx = ~0ull;
    note_pair();
  }

  void wait_sleep(const WaitRecord& w) override {
    ThreadState& t = ts();
    const uint64_t t0 = ticks();
    const uint64_t i = h_->head.fetch_add(1, std::memory_order_relaxed);
    ring_[i % cap_] = Rec{t0, trace::kDurOpen, trace::kOpWaitSleep, t.tid, uint16_t(w.call_id), w.owner,
                          w.width * w.nwords, w.addr};
    t.sleep_idx = i;
    t.sleep_t0 = t0;
  }

  void wait_done(const WaitRecord&) override {
    ThreadState& t = ts();
    close_open(t.sleep_idx, t.sleep_t0);
    t.sleep_idx = ~0ull;
  }

  void allocated(uint64_t offset, uint64_t size, uint32_t number) override {
    if (SYMMEM_DFX_UNLIKELY(!heap_known_)) note_heap();
    live_[offset] = {number, size};
    const uint64_t i = h_->head.fetch_add(1, std::memory_order_relaxed);
    // dur holds the size's high 32 bits, bytes its low ones.
    ring_[i % cap_] = Rec{ticks(), uint32_t(size >> 32), trace::kOpAllocInfo, ts().tid, 0, int32_t(number),
                          uint32_t(size), offset};
  }

  void freed(uint64_t offset) override {
    live_.erase(offset);
    const uint64_t i = h_->head.fetch_add(1, std::memory_order_relaxed);
    ring_[i % cap_] = Rec{ticks(), 0, trace::kOpFreeInfo, ts().tid, 0, -1, 0, offset};
  }

  // The names users give their allocations, for the merger (in the ring at once, so that a
  // killed PE's names are there too).
  void named(uint64_t offset, uint32_t number, const std::string& d) override {
    const uint32_t n = h_->alloc_name_count.load(std::memory_order_relaxed);
    uint32_t i = 0;
    while (i < n && h_->alloc_names[i].number != number) ++i;
    if (i >= uint32_t(trace::kAllocNames)) return;
    trace::AllocName& an = h_->alloc_names[i];
    an.number = number;
    an.offset = offset;
    auto it = live_.find(offset);
    an.size = it != live_.end() ? it->second.size : 0;
    std::snprintf(an.name, sizeof an.name, "%s", d.c_str());
    if (i == n) h_->alloc_name_count.store(n + 1, std::memory_order_release);
  }

  // Several hosts: PE 0 copies the other hosts' rings into its /dev/shm through the
  // bootstrap store, so that one merge on its host shows the whole job: at finalize (gather,
  // after finalize's barrier) from every PE, and when the job fails (job_ending) from one
  // surviving PE per host, which sends its host's rings, a killed PE's included. A PE of
  // another host that traces says so here, so nobody waits for a PE that will not answer.
  void attached() override {
    if (rt_->supervised_) return;  // symmem-run merges on its own host
    for (size_t pe = 0; pe < rt_->pe_where_.size(); ++pe) {  // the PEs of each host, by first PE
      const std::string& w = rt_->pe_where_[pe];
      const std::string host = w.substr(0, w.rfind(':'));
      auto it = std::find_if(hosts_.begin(), hosts_.end(), [&](const auto& h) { return h.first == host; });
      if (it == hosts_.end()) it = hosts_.insert(hosts_.end(), {host, {}});
      it->second.push_back(int(pe));
    }
    for (size_t i = 1; i < hosts_.size(); ++i) remote_.insert(remote_.end(), hosts_[i].second.begin(), hosts_[i].second.end());
    store_ = rt_->epoch_store_ ? rt_->epoch_store_.get() : rt_->store_.get();
    const int me = rt_->rank_;
    if (store_ && std::find(remote_.begin(), remote_.end(), me) != remote_.end() &&
        !store_->set(gather_key("has/" + std::to_string(me)), "1").ok())
      store_ = nullptr;
  }

  void finalize() override {
    note_pair();
    h_->state.store(2, std::memory_order_release);
    if (store_ && !remote_.empty() && rt_->rank_ == 0 && !store_->set(gather_key("wants"), "1").ok()) store_ = nullptr;
  }

  void finalized() override {
    if (rt_->supervised_) return;
    std::vector<int> copied, untraced, missing = remote_;
    if (store_ && !remote_.empty()) missing = gather(*store_, &copied, &untraced);
    if (rt_->rank_ == 0) hint(copied, untraced, missing);
  }

  // The job fails: PE 0 waits a bounded time for each other host's rings; on each other host
  // the first PE that did not fail sends them (its /dev/shm holds its mates' rings, a dead
  // one's too). Without a store, or with PE 0 gone, the rings stay where they are.
  void job_ending(int failed) override {
    if (rt_->supervised_) return;
    const int me = rt_->rank_;
    if (me == 0) {
      std::vector<int> copied, untraced, missing = remote_;
      if (store_ && !remote_.empty()) missing = receive_failed(*store_, &copied, &untraced);
      return hint(copied, untraced, missing);
    }
    if (!store_) return;
    for (size_t i = 1; i < hosts_.size(); ++i) {
      const std::vector<int>& pes = hosts_[i].second;
      auto first = std::find_if(pes.begin(), pes.end(), [&](int pe) { return pe != failed; });
      if (first != pes.end() && *first == me) return send_failed(*store_, i);
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kChunk = 8u << 20;  // one store value at most

  std::string gather_key(const std::string& what) const { return "dfx/trace/" + rt_->env_.job_id + "/" + what; }
  std::string ring_path(int pe) const { return "/dev/shm/" + trace::ring_prefix(rt_->env_.job_id) + std::to_string(pe); }

  // PE 0's last line about the rings: where they are and the command that merges them.
  void hint(const std::vector<int>& copied, const std::vector<int>& untraced, const std::vector<int>& missing) {
    const std::string prefix = trace::ring_prefix(rt_->env_.job_id), job = rt_->env_.job_id;
    const std::string none = untraced.empty() ? "" : "; " + pes_text(untraced) + " traced nothing";
    if (missing.empty()) {
      std::string from = copied.empty() ? "" : " (" + pes_text(copied) + " copied here from their hosts)";
      from += none;
      log_pe(LogLevel::kWarn, rt_->rank_, "SYMMEM_TRACE: the rings are /dev/shm/%s*%s; merge them into %s with: symmem-trace merge %s",
             prefix.c_str(), from.c_str(), h_->out_path, job.c_str());
      return;
    }
    std::string where;
    for (const auto& [host, pes] : hosts_) where += (where.empty() ? "" : ", ") + host + " (" + pes_text(pes) + ")";
    log_pe(LogLevel::kWarn, rt_->rank_,
           "SYMMEM_TRACE: the rings are /dev/shm/%s* on each host: %s%s; %s could not be copied here; copy the "
           "rings into one directory DIR and merge them there with: symmem-trace merge --dir DIR %s",
           prefix.c_str(), where.c_str(), none.c_str(), pes_text(missing).c_str(), job.c_str());
  }

  // Sends the ring mapped at `base` (its header and its records in use) as pe's, in chunks
  // under `key`/pe/k, each "chunks:bytes".
  bool send_ring(Store& st, const std::string& key, int pe, const char* base) {
    const auto* h = reinterpret_cast<const Header*>(base);
    const uint64_t head = h->head.load(std::memory_order_acquire);
    const size_t used = trace::kHeaderBytes + size_t(std::min<uint64_t>(head, h->capacity)) * sizeof(Rec);
    const size_t chunks = (used + kChunk - 1) / kChunk;
    for (size_t k = 0; k < chunks; ++k) {
      const size_t off = k * kChunk, n = std::min(kChunk, used - off);
      std::string v = std::to_string(chunks) + ":" + std::string(base + off, n);
      if (Status s = st.set(key + "/" + std::to_string(pe) + "/" + std::to_string(k), v); !s.ok()) {
        log_pe(LogLevel::kWarn, rt_->rank_, "SYMMEM_TRACE: sending PE %d's ring to PE 0: %s", pe, s.message().c_str());
        return false;
      }
    }
    return true;
  }

  // Writes pe's ring, sent under `key` (send_ring), to `path` in this /dev/shm at its full
  // size (the merge maps it as its PE did; the rest stays a hole). False: removed again.
  bool receive_ring(Store& st, const std::string& key, int pe, const std::string& path, double timeout_s) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    for (size_t k = 0, chunks = 1; ok && k < chunks; ++k) {
      const std::string ck = key + "/" + std::to_string(pe) + "/" + std::to_string(k);
      Result<std::string> v = st.get(ck, timeout_s);
      (void)st.erase(ck);
      const size_t colon = v.ok() ? v->find(':') : std::string::npos;
      ok = colon != std::string::npos;
      if (!ok) break;
      chunks = std::strtoull(v->c_str(), nullptr, 10);
      const size_t n = v->size() - colon - 1;
      ok = chunks > 0 && ::pwrite(fd, v->data() + colon + 1, n, off_t(k * kChunk)) == ssize_t(n);
      if (ok && k == 0) {
        Header h;
        std::memcpy(static_cast<void*>(&h), v->data() + colon + 1, std::min(n, sizeof h));
        ok = n >= sizeof h && h.magic == trace::kRingMagic && h.rank == pe &&
             ::ftruncate(fd, off_t(trace::kHeaderBytes + h.capacity * sizeof(Rec))) == 0;
      }
    }
    if (fd >= 0) ::close(fd);
    if (!ok && fd >= 0) ::unlink(path.c_str());
    return ok;
  }

  // At finalize PE 0 takes the rings it cannot see in its own /dev/shm from their PEs, one PE
  // at a time (the store holds one ring at most). Only between PEs that both trace: each
  // said so at init, so nobody waits for a PE that will not answer. PE 0 returns the PEs
  // whose rings it could not get (and in *untraced those that have none).
  std::vector<int> gather(Store& st, std::vector<int>* copied, std::vector<int>* untraced) {
    // A PE waits for PE 0's word as long as PE 0 takes for the rings before its own; PE 0
    // waits for a ring it asked for a bounded time.
    constexpr double kGoWaitS = 24 * 3600.0, kRingWaitS = 300;
    const int me = rt_->rank_;
    std::vector<int> missing;
    if (me != 0) {
      if (std::find(remote_.begin(), remote_.end(), me) == remote_.end() || !present(st, "wants")) return missing;
      Result<std::string> go = st.get(gather_key("go/" + std::to_string(me)), kGoWaitS);
      if (go.ok() && *go == "send") (void)send_ring(st, gather_key("ring"), me, static_cast<const char*>(map_));
      return missing;
    }
    for (int pe : remote_) {
      const std::string path = ring_path(pe), go = gather_key("go/" + std::to_string(pe));
      if (!present(st, "has/" + std::to_string(pe))) {  // it does not trace
        untraced->push_back(pe);
        continue;
      }
      if (::access(path.c_str(), F_OK) == 0) {  // this /dev/shm is that host's too
        (void)st.set(go, "skip");
        continue;
      }
      const bool ok = st.set(go, "send").ok() && receive_ring(st, gather_key("ring"), pe, path, kRingWaitS);
      (void)st.erase(go);
      (ok ? copied : &missing)->push_back(pe);
    }
    return missing;
  }

  // A failing job, on the first surviving PE of other host i: its host's rings.
  void send_failed(Store& st, size_t i) {
    const std::string tag = std::to_string(i);
    (void)st.set(gather_key("fail/start/" + tag), "1");
    std::string sent;
    for (int pe : hosts_[i].second) {
      const std::string path = ring_path(pe);
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat sb;
      if (fd < 0) continue;  // it does not trace
      void* m = fstat(fd, &sb) == 0 && size_t(sb.st_size) >= trace::kHeaderBytes
                    ? mmap(nullptr, size_t(sb.st_size), PROT_READ, MAP_SHARED, fd, 0)
                    : MAP_FAILED;
      ::close(fd);
      if (m == MAP_FAILED) continue;
      const auto* h = static_cast<const Header*>(m);
      const bool whole = h->magic == trace::kRingMagic && h->rank == pe &&
                         trace::kHeaderBytes + h->capacity * sizeof(Rec) <= uint64_t(sb.st_size);
      if (whole && send_ring(st, gather_key("fail/ring"), pe, static_cast<const char*>(m)))
        sent += (sent.empty() ? "" : ",") + std::to_string(pe);
      munmap(m, size_t(sb.st_size));
    }
    (void)st.set(gather_key("fail/sent/" + tag), sent);
  }

  // A failing job, on PE 0: each other host with a PE that traces gets kStartS to begin
  // sending (its PEs hear of the failure as PE 0 does), and all of them kFailS in all.
  std::vector<int> receive_failed(Store& st, std::vector<int>* copied, std::vector<int>* untraced) {
    constexpr double kStartS = 3, kFailS = 20;
    const Clock::time_point t0 = Clock::now();
    auto left = [&](double budget) {
      return std::max(0.0, budget - std::chrono::duration<double>(Clock::now() - t0).count());
    };
    std::vector<int> missing;
    for (size_t i = 1; i < hosts_.size(); ++i) {
      std::vector<int> traced;
      for (int pe : hosts_[i].second) (present(st, "has/" + std::to_string(pe)) ? traced : *untraced).push_back(pe);
      if (traced.empty()) continue;
      const std::string tag = std::to_string(i);
      std::vector<int> got;
      if (st.get(gather_key("fail/start/" + tag), left(kStartS)).ok()) {
        Result<std::string> sent = st.get(gather_key("fail/sent/" + tag), left(kFailS));
        for (const char* s = sent.ok() ? sent->c_str() : ""; *s;) {
          char* e = nullptr;
          const int pe = int(std::strtol(s, &e, 10));
          if (e == s) break;
          const std::string path = ring_path(pe);
          const bool here = ::access(path.c_str(), F_OK) == 0;  // this /dev/shm is that host's too
          if (here || receive_ring(st, gather_key("fail/ring"), pe, path, left(kFailS))) {
            got.push_back(pe);
            if (!here) copied->push_back(pe);
          }
          s = *e == ',' ? e + 1 : e;
        }
      }
      for (int pe : traced)
        if (std::find(got.begin(), got.end(), pe) == got.end()) missing.push_back(pe);
    }
    return missing;
  }

  bool present(Store& st, const std::string& k) const {
    Result<std::vector<bool>> r = st.check({gather_key(k)});
    return r.ok() && !r->empty() && (*r)[0];
  }

  uint64_t ticks() const {
#ifdef SYMMEM_TRACE_TSC
    if (tsc_) return __rdtsc();
#endif
    return now_ns();
  }

  ThreadState& ts() {
    ThreadState& t = t_state;
    if (SYMMEM_DFX_UNLIKELY(t.owner != this)) {
      t = ThreadState{};
      t.owner = this;
      t.tid = uint8_t(h_->threads.fetch_add(1, std::memory_order_relaxed) & trace::kFlagTidMask);
    }
    return t;
  }

  // The record reserved at `idx` (still in the ring, still the one written then) ends now.
  void close_open(uint64_t idx, uint64_t t0) {
    if (idx == ~0ull) return;
    if (h_->head.load(std::memory_order_relaxed) - idx > cap_) return;  // overwritten
    Rec& r = ring_[idx % cap_];
    if (r.t0 != t0) return;
    const uint64_t t1 = ticks();
    __atomic_store_n(&r.dur, encode_dur(t1 - t0), __ATOMIC_RELAXED);
  }

  uint16_t name_id(const char* call) {
    Dfx& d = rt_->dfx_;
    const uint16_t id = d.intern(call);
    if (SYMMEM_DFX_UNLIKELY(id >= names_copied_)) copy_names();
    return id;
  }

  void copy_names() {
    const Page* p = rt_->dfx_.page();
    const uint32_t n = std::min<uint32_t>(p->name_count.load(std::memory_order_acquire), trace::kCallNames);
    for (uint32_t i = names_copied_; i < n; ++i) std::memcpy(h_->names[i], p->names[i], trace::kCallNameLen);
    h_->name_count.store(n, std::memory_order_release);
    names_copied_ = n;
  }

  void note_heap() {
    if (rt_->my_heap_ == 0) return;
    h_->heap_base = rt_->my_heap_;
    h_->heap_size = rt_->heap_size_;
    h_->static_start = rt_->static_start_;
    h_->static_size = rt_->static_size_;
    heap_known_ = true;
  }

  // A (ticks, ns) pair read between two clock reads; returns the window between them. A
  // pair taken across a preemption would misplace the PE's whole timeline.
  uint64_t read_pair(uint64_t* tk, uint64_t* ns) const {
    const uint64_t a = now_ns();
    *tk = ticks();
    const uint64_t b = now_ns();
    *ns = a + (b - a) / 2;
    return b - a;
  }

  void note_pair() {
    uint64_t tk, ns;
    if (read_pair(&tk, &ns) > kPairWindowNs) return;  // preempted: the last good pair stands
    // One writer at a time: a thread that finds another writing leaves it its pair.
    uint32_t s = h_->pair_seq.load(std::memory_order_relaxed);
    if ((s & 1) || !h_->pair_seq.compare_exchange_strong(s, s + 1, std::memory_order_relaxed)) return;
    std::atomic_thread_fence(std::memory_order_release);
    relaxed_store(h_->tick1, tk);
    relaxed_store(h_->ns1, ns);
    h_->pair_seq.store(s + 2, std::memory_order_release);
  }

  void open(const std::string& spec) {
    const int rank = rt_->rank_;
    std::string path = spec;
    uint64_t bytes = 64ull << 20;
    if (size_t c = spec.find(','); c != std::string::npos) {
      path = spec.substr(0, c);
      std::string rest = spec.substr(c + 1);
      while (!rest.empty()) {
        const size_t e = rest.find(',');
        const std::string kv = rest.substr(0, e);
        rest = e == std::string::npos ? "" : rest.substr(e + 1);
        if (kv.rfind("size=", 0) == 0) {
          auto v = parse_size(kv.substr(5));
          if (!v.ok() || *v < (1u << 20)) {
            log_pe(LogLevel::kWarn, rank, "SYMMEM_TRACE: size '%s' is not a size of at least 1M; using 64M",
                   kv.c_str() + 5);
          } else {
            bytes = *v;
          }
        } else {
          log_pe(LogLevel::kWarn, rank, "SYMMEM_TRACE: unknown option '%s' (known: size=)", kv.c_str());
        }
      }
    }
    const std::string& job = rt_->env_.job_id;
    // The merged file: `path`, or a file in it when it names a directory.
    struct stat st;
    if (path.empty() || path.back() == '/' || (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
      path = (path.empty() ? std::string(".") : path) + "/symmem-trace-" + job + ".json";
    if (path[0] != '/') {
      char cwd[4096];
      if (getcwd(cwd, sizeof cwd)) path = std::string(cwd) + "/" + path;
    }
    const std::string file = "/dev/shm/" + trace::ring_prefix(job) + std::to_string(rank);
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      log_pe(LogLevel::kWarn, rank, "SYMMEM_TRACE: cannot create %s: %s; no trace", file.c_str(), std::strerror(errno));
      return;
    }
    cap_ = (bytes - trace::kHeaderBytes) / sizeof(Rec);
    map_bytes_ = trace::kHeaderBytes + cap_ * sizeof(Rec);
    // Reserve the whole ring now: a store into a page tmpfs cannot back would be SIGBUS.
    if (int e = posix_fallocate(fd_, 0, off_t(map_bytes_)); e != 0) {
      log_pe(LogLevel::kWarn, rank, "SYMMEM_TRACE: cannot reserve %s for %s: %s; no trace",
             format_size(map_bytes_).c_str(), file.c_str(), std::strerror(e));
      ::unlink(file.c_str());
      return;
    }
    // Populated: no page fault on the data path.
    void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) {
      log_pe(LogLevel::kWarn, rank, "SYMMEM_TRACE: cannot map %s: %s; no trace", file.c_str(), std::strerror(errno));
      ::unlink(file.c_str());
      return;
    }
    map_ = m;
    h_ = static_cast<Header*>(m);
    ring_ = reinterpret_cast<Rec*>(static_cast<char*>(m) + trace::kHeaderBytes);
    tsc_ = tsc_invariant();
    h_->version = trace::kRingVersion;
    h_->rec_size = sizeof(Rec);
    h_->rank = rank;
    h_->npes = rt_->npes_;
    h_->pid = int32_t(getpid());
    h_->clock = tsc_ ? 1 : 0;
    h_->capacity = cap_;
    h_->head.store(0, std::memory_order_relaxed);
    h_->state.store(1, std::memory_order_relaxed);
    uint64_t best = ~0ull;
    for (int i = 0; i < 16 && best > kPairWindowNs / 4; ++i) {
      uint64_t tk, ns;
      if (const uint64_t w = read_pair(&tk, &ns); w < best) best = w, h_->tick0 = tk, h_->ns0 = ns;
    }
    h_->tick1 = h_->tick0;
    h_->ns1 = h_->ns0;
    gethostname(h_->host, sizeof h_->host - 1);
    std::snprintf(h_->job, sizeof h_->job, "%s", job.c_str());
    std::snprintf(h_->out_path, sizeof h_->out_path, "%s", path.c_str());
    for (int i = 0; i < int(Op::kCount) && i < trace::kOpNames; ++i)
      std::snprintf(h_->op_names[i], trace::kOpNameLen, "%s", op_name(Op(i)));
    std::snprintf(h_->op_names[trace::kOpAllocInfo], trace::kOpNameLen, "alloc_info");
    std::snprintf(h_->op_names[trace::kOpFreeInfo], trace::kOpNameLen, "free_info");
    std::snprintf(h_->op_names[trace::kOpWaitSleep], trace::kOpNameLen, "sleep");
    copy_names();
    std::atomic_thread_fence(std::memory_order_release);
    h_->magic = trace::kRingMagic;  // last: a reader trusts the header from here on
  }

  Runtime::Impl* rt_;
  std::vector<std::pair<std::string, std::vector<int>>> hosts_;  // the PEs of each host (finalize)
  std::vector<int> remote_;                                       // those of hosts other than PE 0's
  Store* store_ = nullptr;                                        // for the gather; null: none
  Header* h_ = nullptr;
  Rec* ring_ = nullptr;
  uint64_t cap_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  int fd_ = -1;
  bool tsc_ = false;
  bool heap_known_ = false;
  uint32_t names_copied_ = 0;
  struct Live {
    uint32_t number;
    uint64_t size;
  };
  std::map<uint64_t, Live> live_;
};

}  // namespace

std::unique_ptr<ToolHooks> make_trace_tool(void* impl, const Config& cfg) {
  auto t = std::make_unique<TraceTool>(static_cast<Runtime::Impl*>(impl), cfg);
  if (!t->ok()) return nullptr;
  return t;
}

}  // namespace symmem::dfx
