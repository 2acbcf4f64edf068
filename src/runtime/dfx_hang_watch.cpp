// The PEs' own hang deadline (dfx_hang_watch.hpp).
#include "runtime/dfx_hang_watch.hpp"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>

#include "common/log.hpp"
#include "runtime/dfx_hang.hpp"
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
  const double step = std::min(0.5, std::max(0.05, hang_s_ / 4));
  dfx::hang::Monitor mon;
  std::unique_lock<std::mutex> lk(mu_);
  bool told = false;  // a BLOCKED report was printed and nothing has moved since
  for (;;) {
    if (cv_.wait_for(lk, std::chrono::duration<double>(step), [this] { return stop_; })) return;
    if (!mon.look(src, hang_s_)) {
      told = false;
      continue;
    }
    if (told) continue;
    lk.unlock();
    dfx::hang::Options o;
    char trig[64];
    std::snprintf(trig, sizeof trig, "no progress for %g s", hang_s_);
    o.trigger = trig;
    o.json_path = r.cfg_.hang_file;
    dfx::hang::Report rep = dfx::hang::build(src, o);
    std::fputs(rep.text.c_str(), stderr);
    std::fflush(stderr);
    lk.lock();
    if (stop_) return;
    // Only a whole view ends the job: PEs on other nodes may still compute (BLOCKED).
    if (rep.verdict == "DEADLOCK") r.end_job(JobFailure::Kind::kError, 124, "hang report: DEADLOCK, " + std::string(trig));
    if (rep.all_blocked) told = true;
    else mon.reset();  // it moved during the second look: keep watching
  }
}

}  // namespace symmem
