// The runtime's off-node side: connecting the UCX transport at init, the out-of-line UCX
// calls of the data path, and the cross-node synchronisation (docs/multinode.md).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/log.hpp"
#include "runtime/meta.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {

void Runtime::Impl::connect_ucx(const std::string& tag) {
  UcxParams p;
  p.rank = rank_;
  p.npes = npes_;
  p.remote.resize(size_t(npes_));
  for (int pe = 0; pe < npes_; ++pe) p.remote[size_t(pe)] = routes_[pe] != Route::kShm;
  // The heap, the metadata region and the static data, each at the global layout.
  p.regions.push_back({reinterpret_cast<uintptr_t>(heap_->heap(0)), heap_->heap_size(), heap_->heap_size()});
  p.regions.push_back({reinterpret_cast<uintptr_t>(heap_->meta(0)), heap_->meta_size(), heap_->meta_size()});
  if (static_)
    p.regions.push_back({reinterpret_cast<uintptr_t>(heap_->statics(0)), static_->size(), static_->size()});
  p.hosts = pe_where_;
  for (int pe = 0; pe < npes_ && size_t(pe) < p.hosts.size(); ++pe)
    p.hosts[size_t(pe)] += ", node " + node_of_[size_t(pe)];
  p.progress = cfg_.ucx_progress;
  if (p.progress != "thread" && p.progress != "inline")
    fail(Errc::kInvalidArgument, "init", "SYMMEM_UCX_PROGRESS=%s: expected thread or inline", p.progress.c_str());
  p.timeout_s = cfg_.op_timeout;
  p.spin_us = cfg_.ucx_spin_us;
  // Spinning without handing the core over only where this machine's PEs can each have a
  // core (the launcher may give each a slice): with more PEs than cores, the PE waited for
  // needs the core; otherwise a yield only slows a small get's round trip.
  p.spin_yields = host_cpus_ <= 0 || commit_policy_.node_pes > host_cpus_;
  log_pe(LogLevel::kDebug, rank_, "UCX waits %s (%d PEs on this machine, %d CPUs)",
         p.spin_yields ? "hand the core over as they spin" : "spin without handing the core over",
         commit_policy_.node_pes, host_cpus_);
  p.rndv_bytes = cfg_.ucx_rndv_bytes > 0 ? size_t(cfg_.ucx_rndv_bytes) : SIZE_MAX;
  p.ack_put_bytes = cfg_.ucx_ack_put_bytes > 0 ? size_t(cfg_.ucx_ack_put_bytes) : 0;
  p.init_timeout_s = cfg_.init_timeout;
  p.tag = tag + "/ucx";
  // A failed peer is raised on the liveness channel (every PE of the job hears it); a
  // failure of this PE's own is its error.
  p.fatal = [this](int pe, const std::string& msg) { net_failure(pe, msg); };
  // Remote atomics and signals land while this PE may sleep in a wait on its own memory.
  p.after_progress = [this] {
    WaitWord& w = meta(rank_)->user_wake;
    if (w.sleepers.load(std::memory_order_seq_cst) != 0) {
      w.v.fetch_add(1, std::memory_order_seq_cst);
      futex_wake_shared(&w.v);
    }
  };
  if (!epoch_store_) fail(Errc::kInternal, "init", "PEs on several nodes need the bootstrap store");
  auto t = UcxTransport::create(p, *epoch_store_);
  if (!t.ok()) init_failed(t.status().code(), t.status().message());
  ucx_ = std::move(t).value();
}

void Runtime::Impl::ucx_put(void* r, const void* src, size_t n, int pe, bool blocking) {
  if (n) ucx_->put(r, src, n, pe, blocking);
}

void Runtime::Impl::ucx_get(void* dst, const void* r, size_t n, int pe, bool blocking) {
  if (!n) return;
  ucx_->get(dst, r, n, pe, blocking);
#if SYMMEM_DFX_HOOKS
  if (!blocking) dfx_.note_ucx_op();
#endif
}

void Runtime::Impl::radd32(std::atomic<uint32_t>* word, uint32_t delta, int pe) {
  if (off_node(pe)) return ucx_->deposit(nullptr, 0, word, delta, pe);
  // The word's sleeper count follows it on the same line (WaitWord); pSync tokens keep
  // theirs in the high half of the long.
  word->fetch_add(delta, std::memory_order_seq_cst);
  auto* sleepers = reinterpret_cast<std::atomic<uint32_t>*>(reinterpret_cast<uint32_t*>(word) + 1);
  if (sleepers->load(std::memory_order_seq_cst) != 0) futex_wake_shared(word);
}

void Runtime::Impl::net_wait_slow() {
  if (SYMMEM_UNLIKELY(failing_word_->load(std::memory_order_relaxed) != 0)) job_failing_seen();
  if (SYMMEM_UNLIKELY(wait_check_ != nullptr)) wait_check_();
}

void Runtime::Impl::check_net_wait(int64_t* start_ns, int peer, const char* what) {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch()).count();
  if (*start_ns == 0) {
    *start_ns = now;
    return;
  }
  if (double(now - *start_ns) / 1e9 < cfg_.op_timeout) return;
  std::string who = "PE " + std::to_string(peer);
  if (size_t(peer) < pe_where_.size()) who += " (" + pe_where_[size_t(peer)] + ", node " + node_of_[size_t(peer)] + ")";
  char msg[256];
  std::snprintf(msg, sizeof msg, "%s: waited %.1f s for %s (SYMMEM_OP_TIMEOUT): it is hung, stopped or unreachable",
                what, cfg_.op_timeout, who.c_str());
  net_failure(peer, msg);
}

void Runtime::Impl::net_failure(int peer, const std::string& msg) {
  if (peer < 0 || peer == rank_) {
    log_pe(LogLevel::kError, rank_, "%s", msg.c_str());
    end_job(JobFailure::Kind::kError, 1, msg);
  }
  // The job was already failing (a PE ended it, a hang report): that peer's endpoint went
  // down because of it.
  if (JobFailure first; live_ && live_->recorded(&first)) live_->end(first);
  JobFailure f;
  f.pe = peer;
  f.kind = JobFailure::Kind::kUnreachable;
  f.where = size_t(peer) < pe_where_.size() ? pe_where_[size_t(peer)] : "";
  f.reason = msg;
  job_failing(f);
}

// Hierarchical: the members of each node arrive at their node's leader (the node's lowest
// member) through shared memory; the leaders run a dissemination barrier over UCX (round r
// adds one to leader l + 2^r's round word, an epoch count, and waits for its own); each
// leader then releases its node. The quiet first makes it a barrier for UCX operations too
// (on the node they are complete when issued), those of every context included.
void Runtime::Impl::net_sync(int start, int stride, int size, uint64_t off, uint32_t* epoch, bool data_follows) {
  if (ucx_) ucx_quiet(true);
  shm::fence();
  if (size <= 1) return;
  const uint32_t e = ++*epoch;
  auto state = [&](int pe) { return reinterpret_cast<SyncState*>(meta_bytes(pe) + off); };
  GroupNodes& gn = group_nodes(start, stride, size);
  if (rank_ != gn.leader) return node_arrive(gn, e, off, !data_follows);
  node_gather(gn, e, off, !data_follows);
  const int nl = int(gn.leaders.size());
  for (int round = 0, dist = 1; dist < nl; ++round, dist <<= 1) {
    const int to = gn.leaders[size_t((gn.my_leader + dist) % nl)];
    const int from = gn.leaders[size_t((gn.my_leader - dist % nl + nl) % nl)];
    radd32(&state(to)->round[round].v, 1, to);
    std::atomic<uint32_t>& mine = state(rank_)->round[round].v;
    net_wait([&] { return int32_t(mine.load(std::memory_order_acquire) - e) >= 0; }, from, "barrier");
  }
  notify(&state(rank_)->release, e);
}

// The node's part of hierarchical sync e (net_sync, and the collectives that carry data in
// one, coll_net.cpp): a member arrives at its node's leader and waits for its release; the
// leader waits for its node's members. Where PEs share a CPU these waits hand it over (as
// the central sync does, wait_release): the leader to a member that has not arrived, a
// member to its leader, which needs the CPU for the rounds between nodes and the release;
// both serve UCX every 8 polls meanwhile. Not in a collective's sync before its data
// moves over UCX (!hand_over): the other nodes, released first, push into a member or get
// from it at once, and one that yields serves them late.
template <class Done, class NeedsCpu>
bool Runtime::Impl::hand_over_serving(Done done, NeedsCpu needs_cpu) {
  UcxTransport* const ucx = ucx_.get();
  unsigned polls = 0;
  auto served = [&] {
    if (ucx != nullptr && (++polls & 7) == 0) ucx->progress();
    return done();
  };
  if (ucx != nullptr) ucx->polling(true);
  const bool ok = wait_handing_over(served, needs_cpu);
  if (ucx != nullptr) ucx->polling(false);
  return ok;
}

void Runtime::Impl::node_arrive(const GroupNodes& gn, uint32_t e, uint64_t off, bool hand_over) {
  auto state = [&](int pe) { return reinterpret_cast<SyncState*>(meta_bytes(pe) + off); };
  state(rank_)->arrived.store(e, std::memory_order_relaxed);
  add_word(&state(gn.leader)->arrive, 1);
  WaitWord& release = state(gn.leader)->release;
  auto released = [&] { return int32_t(release.v.load(std::memory_order_acquire) - e) >= 0; };
  if (!hand_over || std::find(colocated_.begin(), colocated_.end(), gn.leader) == colocated_.end() ||
      !hand_over_serving(released, [] { return true; }))
    wait_word_ge(&release, e);
}

void Runtime::Impl::node_gather(const GroupNodes& gn, uint32_t e, uint64_t off, bool hand_over) {
  if (gn.local <= 1) return;
  WaitWord& arrive = reinterpret_cast<SyncState*>(meta_bytes(rank_) + off)->arrive;
  const uint32_t all = e * uint32_t(gn.local - 1);
  auto arrived = [&] { return int32_t(arrive.v.load(std::memory_order_acquire) - all) >= 0; };
  if (!hand_over ||
      !hand_over_serving(arrived, [&] { return colocated_pending(e, gn.start, gn.stride, gn.size, off); }))
    wait_word_ge(&arrive, all);
}

// The node structure of the group start + i*stride (i < size), cached for the last groups
// asked about (teams are few; a sync must not allocate).
Runtime::Impl::GroupNodes& Runtime::Impl::group_nodes(int start, int stride, int size) {
  for (GroupNodes& g : group_nodes_cache_)
    if (g.start == start && g.stride == stride && g.size == size) return g;
  GroupNodes g;
  g.start = start;
  g.stride = stride;
  g.size = size;
  std::vector<char> seen(node_count_, 0);
  for (int i = 0; i < size; ++i) {
    const int pe = start + i * stride;
    const int n = node_index_[size_t(pe)];
    if (!seen[size_t(n)]) {
      seen[size_t(n)] = 1;
      if (n == node_index_[size_t(rank_)]) g.my_leader = int(g.leaders.size());
      g.leaders.push_back(pe);
    }
    if (n == node_index_[size_t(rank_)]) {
      if (g.leader < 0) g.leader = pe;
      ++g.local;
      if (pe != rank_) g.mates.push_back(i);
    }
    if (pe != rank_ && (n == node_index_[size_t(rank_)]) != (route_of_[pe] == Route::kShm)) g.routes_follow_nodes = false;
  }
  if (group_nodes_cache_.size() >= 16) group_nodes_cache_.erase(group_nodes_cache_.begin());
  group_nodes_cache_.push_back(std::move(g));
  return group_nodes_cache_.back();
}

// (runtime_impl.hpp)
void Runtime::Impl::fetch_dfx_page(int pe, dfx::Page* copy) {
  // [page, end of the ring): the same offsets in every PE's metadata (only this PE's own
  // is dereferenced here; pe's is an address in the job's layout, read by UCX).
  const dfx::Page& mine = meta(rank_)->dfx;
  const size_t off = size_t(reinterpret_cast<const char*>(&mine) - reinterpret_cast<const char*>(meta(rank_)));
  const size_t n = size_t(reinterpret_cast<const char*>(&mine.colls[dfx::kCollRing]) - reinterpret_cast<const char*>(&mine));
  void* at = reinterpret_cast<char*>(meta(pe)) + off;
  std::vector<char> a(n), b(n);
  ucx_->get(a.data(), at, n, pe, true);
  ucx_->get(b.data(), at, n, pe, true);
  std::memcpy(static_cast<void*>(copy), b.data(), n);
  // A record that changed between the two reads was being written: marked so (odd), as
  // read_stable would have seen it. Its `done` word and exit time change alone (no
  // sequence): not compared.
  const size_t ring = size_t(reinterpret_cast<const char*>(&mine.colls[0]) - reinterpret_cast<const char*>(&mine));
  const size_t done = offsetof(dfx::CollRecord, done), texit = offsetof(dfx::CollRecord, t_exit_ns);
  for (int i = 0; i < dfx::kCollRing; ++i) {
    const size_t o = ring + size_t(i) * sizeof(dfx::CollRecord);
    const bool same = std::memcmp(a.data() + o, b.data() + o, done) == 0 &&
                      std::memcmp(a.data() + o + done + 4, b.data() + o + done + 4, texit - done - 4) == 0;
    if (!same) copy->colls[i].seq.store(1, std::memory_order_relaxed);
  }
}

}  // namespace symmem
