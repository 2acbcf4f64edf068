// The PEs' own hang deadline (dfx/hang_watch.hpp).
#include "dfx/hang_watch.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/log.hpp"
#include "dfx/hang.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {

HangWatch::HangWatch(void* impl, double hang_s) : impl_(impl), hang_s_(hang_s) {
  // The thread takes no signal meant for the program.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

HangWatch::~HangWatch() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

namespace {

template <class T>
uint64_t load_as(uintptr_t a) {
  return uint64_t(__atomic_load_n(reinterpret_cast<const T*>(a), __ATOMIC_RELAXED));
}

}  // namespace

void HangWatch::run() {
  auto& r = *static_cast<Runtime::Impl*>(impl_);
  dfx::hang::Source src;
  src.job = r.env_.job_id;
  const std::string where = size_t(r.rank_) < r.pe_where_.size() ? r.pe_where_[size_t(r.rank_)] : "";
  src.prefix = "[pe " + std::to_string(r.rank_) + " " + where + "] ";
  std::vector<int> mine;
  for (int pe = 0; pe < r.npes_; ++pe) {
    dfx::hang::PeInfo pi;
    pi.rank = pe;
    if (r.routes_[pe] == Route::kShm) {
      pi.page = &r.meta(pe)->dfx;
      pi.pid = pi.page->pid;
      mine.push_back(pe);
    } else {
      pi.remote = true;
    }
    src.pes.push_back(pi);
  }
  if (r.node_count_ > 1)
    src.scope = "this node's PEs (" + std::to_string(mine.size()) + " of " + std::to_string(r.npes_) +
                "); PEs on other nodes are watched by their own node";
  src.read = [&r](int owner, int space, uint64_t addr, uint32_t width, uint64_t* out) {
    if (owner < 0 || owner >= r.npes_ || r.routes_[owner] != Route::kShm) return false;
    const dfx::Page& p = r.meta(space)->dfx;
    const uint64_t n = uint64_t(r.npes_);
    uintptr_t a = 0;
    if (addr - p.layout_base < n * (p.heap_size + p.meta_size)) {
      a = uintptr_t(addr);  // this process maps the node's heaps and metadata at the layout
    } else if (addr - p.static_start < p.static_size && r.static_copies_) {
      a = r.static_copies_ + uint64_t(owner) * r.static_size_ + (addr - p.static_start);
    } else {
      return false;
    }
    if (a % width) return false;
    switch (width) {
      case 1: *out = load_as<uint8_t>(a); return true;
      case 2: *out = load_as<uint16_t>(a); return true;
      case 4: *out = load_as<uint32_t>(a); return true;
      case 8: *out = load_as<uint64_t>(a); return true;
    }
    return false;
  };
  // Across nodes the node watches agree through the job's store: each publishes its node's
  // summary while every PE there is blocked (hang/node/<its rank>), and the lowest one,
  // once every node is blocked with nothing moving, reports for the job and ends it.
  std::vector<int> leaders;
  {
    std::map<std::string, int> low;
    for (int pe = 0; pe < r.npes_ && size_t(pe) < r.node_of_.size(); ++pe)
      if (!low.count(r.node_of_[size_t(pe)])) low[r.node_of_[size_t(pe)]] = pe;
    for (auto& [node, pe] : low) leaders.push_back(pe);
    std::sort(leaders.begin(), leaders.end());
  }
  Store* st = r.epoch_store_ ? r.epoch_store_.get() : r.store_.get();
  const bool across = r.node_count_ > 1 && st && leaders.size() > 1;
  const bool speaker = across && leaders[0] == r.rank_;
  auto key = [](int leader) { return "hang/node/" + std::to_string(leader); };
  auto node_sig = [&] {  // what moves on this node's pages
    uint64_t h = 1469598103934665603ull;
    for (int pe : mine) {
      const dfx::Page& p = *src.pes[size_t(pe)].page;
      for (uint64_t x : {uint64_t(p.state.load()), p.progress.load(), dfx::collectives_entered(p),
                         uint64_t(p.call_id.load())})
        h = (h ^ x) * 1099511628211ull;
    }
    return std::to_string(h);
  };
  // The other nodes' summaries, when every one says blocked; empty otherwise.
  auto others = [&](std::vector<std::string>* out) {
    out->clear();
    std::vector<std::string> keys;
    for (int l : leaders)
      if (l != r.rank_) keys.push_back(key(l));
    auto have = st->check(keys);
    if (!have.ok()) return false;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!(*have)[i]) return false;
      auto v = st->get(keys[i], 1.0);
      if (!v.ok() || v->rfind("blocked ", 0) != 0) return false;
      out->push_back(*v);
    }
    return true;
  };

  const double step = std::min(0.5, std::max(0.05, hang_s_ / 4));
  dfx::hang::Monitor mon;
  std::unique_lock<std::mutex> lk(mu_);
  bool told = false;        // a report was printed (or the summary published) and nothing has moved since
  bool published = false;   // this node's summary says blocked
  bool job_told = false;    // the speaker printed a job report for this standstill
  uint64_t blocked_at = 0;  // when the summary was published
  std::string pending;      // a non-speaker's BLOCKED report, printed if the job goes on
  char trig[64];
  std::snprintf(trig, sizeof trig, "no progress for %g s", hang_s_);
  for (;;) {
    if (cv_.wait_for(lk, std::chrono::duration<double>(step), [this] { return stop_; })) return;
    if (!mon.look(src, hang_s_)) {
      if (published) (void)st->set(key(r.rank_), "moving");
      published = told = job_told = false;
      pending.clear();
      continue;
    }
    if (told && !across) continue;
    lk.unlock();
    dfx::hang::Options o;
    o.trigger = trig;
    o.json_path = r.cfg_.hang_file;
    if (!told) {
      dfx::hang::Report rep = dfx::hang::build(src, o);
      if (across && rep.all_blocked) {
        std::string sum = "blocked " + node_sig();
        for (const std::string& l : rep.pe_lines)
          if (!l.empty()) sum += "\n" + l;
        (void)st->set(key(r.rank_), sum);
        published = told = true;
        blocked_at = dfx::hang::mono_ns();
        pending = rep.text;
      } else {
        std::fputs(rep.text.c_str(), stderr);
        std::fflush(stderr);
        if (rep.verdict == "DEADLOCK") r.end_job(JobFailure::Kind::kError, 124, "hang report: DEADLOCK, " + std::string(trig));
        if (rep.all_blocked) told = true;
        else mon.reset();  // it moved during the second look: keep watching
        lk.lock();
        if (stop_) return;
        continue;
      }
    }
    std::vector<std::string> sums;
    if (speaker && !job_told && others(&sums)) {
      // Every node is blocked: the job's report, with the other nodes' PEs from their summaries.
      dfx::hang::Source js = src;
      js.scope.clear();
      for (const std::string& s : sums) {
        size_t a = s.find('\n');
        while (a != std::string::npos) {
          const size_t e = s.find('\n', a + 1);
          dfx::hang::PeInfo pi;
          if (dfx::hang::parse_pe_line(s.substr(a + 1, e == std::string::npos ? e : e - a - 1), &pi) && pi.rank >= 0 &&
              pi.rank < r.npes_ && js.pes[size_t(pi.rank)].remote) {
            pi.remote = true;
            js.pes[size_t(pi.rank)] = pi;
          }
          a = e;
        }
      }
      const std::string sig = node_sig();
      dfx::hang::Report rep = dfx::hang::build(js, o);
      std::vector<std::string> again;
      // Nothing moved anywhere during the look: the summaries and this node are unchanged.
      if (rep.verdict != "PROGRESS" && others(&again) && again == sums && sig == node_sig()) {
        std::string text = rep.text;
        const std::string from = "; the other nodes' PEs as their node's watch saw them (the job's store)";
        if (const size_t nl = text.find('\n'); nl != std::string::npos) text.insert(nl, from);
        std::fputs(text.c_str(), stderr);
        std::fflush(stderr);
        job_told = true;
        if (rep.verdict == "DEADLOCK")
          r.end_job(JobFailure::Kind::kError, 124, "hang report: DEADLOCK across the job's nodes, " + std::string(trig));
      }
    } else if (!pending.empty() && !job_told &&
               double(dfx::hang::mono_ns() - blocked_at) * 1e-9 > 2 * hang_s_ + 3) {
      // The other nodes are not all blocked (or the speaker has not spoken): this node's view.
      std::fputs(pending.c_str(), stderr);
      std::fflush(stderr);
      pending.clear();
    }
    lk.lock();
    if (stop_) return;
  }
}

}  // namespace symmem
