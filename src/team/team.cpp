// Team registry, splits and destroy; see team.hpp for the slot protocol.
#include "team/team.hpp"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/log.hpp"

namespace symmem {
namespace {

void delete_registry(TeamRegistry* r) { delete r; }

// A fresh slot must not hold the epochs of the team that used it before: members zero the
// words peers store into. The sleeper counts stay: a peer's late decrement after the last
// sync of the old team keeps them balanced.
void reset_slot(TeamSlot* s) {
  for (auto& w : s->sync.round) w.v.store(0, std::memory_order_relaxed);
  for (auto& w : s->sync.pair)
    for (auto& h : w.half) h.v.store(0, std::memory_order_relaxed);
  s->sync.arrive.v.store(0, std::memory_order_relaxed);
  s->sync.release.v.store(0, std::memory_order_relaxed);
  for (auto& w : s->bcast_ready) w.v.store(0, std::memory_order_relaxed);
  s->bcast_done.v.store(0, std::memory_order_relaxed);
  s->push_arrived.v.store(0, std::memory_order_relaxed);
  s->chain_in.v.store(0, std::memory_order_relaxed);
  s->chain_out.v.store(0, std::memory_order_relaxed);
  for (auto& par : s->reduce_line)
    for (auto& w : par) w.v.store(0, std::memory_order_relaxed);
}

}  // namespace

TeamRegistry::TeamRegistry(Runtime::Impl* rt) : rt_(rt) {
  uint64_t meta = rt->heap_->meta_size();
  uint64_t area = std::min<uint64_t>(meta > kMetaArenaStart ? meta - kMetaArenaStart : 0, kMetaTeamArea);
  uint64_t fit = area / sizeof(TeamSlot);
  max_slots_ = int(std::min<uint64_t>(fit, kMaxTeams));
  if (max_slots_ < 2)
    rt->fail(Errc::kInvalidArgument, "teams",
             "the metadata region (%" PRIu64 " bytes) has no room for the predefined teams; raise "
             "SYMMEM_METADATA_SIZE to at least %" PRIu64,
             meta, uint64_t(kMetaArenaStart + 2 * sizeof(TeamSlot)));
  auto make = [&](int slot) {
    auto t = std::make_unique<TeamState>();
    t->rt = rt;
    t->start = 0;
    t->stride = 1;
    t->size = rt->npes_;  // one node: the world shares memory
    t->me = rt->rank_;
    t->slot = slot;
    t->slot_off = kMetaArenaStart + uint64_t(slot) * sizeof(TeamSlot);
    t->predefined = true;
    used_ |= 1ull << slot;
    return t;
  };
  world_ = make(kWorldSlot);
  // The world team is the world barrier: same sync words, same epoch, so team syncs and
  // barrier_all interleave freely.
  world_->sync_off = offsetof(MetaFixed, world_sync);
  world_->epoch = &rt->world_epoch_;
  shared_ = make(kSharedSlot);
  shared_->sync_off = shared_->slot_off + offsetof(TeamSlot, sync);
  shared_->epoch = &shared_->own_epoch;
  // TEAM_SHARED / TEAM_NODE: the PEs of this node, when they form an arithmetic
  // progression of world PEs (block or cyclic placement); otherwise this PE alone.
  const std::vector<int>& node = rt->node_pes_;
  if (!rt->all_shm_ && !node.empty()) {
    const int stride = node.size() > 1 ? node[1] - node[0] : 1;
    bool ap = true;
    for (size_t i = 1; i < node.size(); ++i) ap = ap && node[i] - node[i - 1] == stride;
    if (ap) {
      shared_->start = node[0];
      shared_->stride = stride;
      shared_->size = int(node.size());
    } else {
      log_pe(LogLevel::kWarn, rt->rank_, "the PEs of this node are no arithmetic progression of world PEs: "
             "TEAM_SHARED holds this PE only");
      shared_->start = rt->rank_;
      shared_->size = 1;
    }
    shared_->me = shared_->index_of(rt->rank_);
  }
  rt->dfx_.lane_geometry(kSharedSlot, shared_->start, shared_->stride, shared_->size);
}

TeamRegistry::~TeamRegistry() = default;

TeamRegistry& teams(Runtime::Impl& rt) {
  if (!rt.teams_) rt.teams_ = {new TeamRegistry(&rt), &delete_registry};
  return *rt.teams_;
}

bool valid_triplet(int n, int start, int stride, int size, char* why, size_t len) {
  if (size < 1) {
    std::snprintf(why, len, "size %d is not positive", size);
    return false;
  }
  if (start < 0 || start >= n) {
    std::snprintf(why, len, "start %d is outside the parent team (PEs 0..%d)", start, n - 1);
    return false;
  }
  if (size > 1 && stride == 0) {
    std::snprintf(why, len, "stride 0 needs size 1 (size is %d)", size);
    return false;
  }
  if (size > n) {
    std::snprintf(why, len, "size %d is larger than the parent team (%d PEs)", size, n);
    return false;
  }
  int64_t last = int64_t(start) + int64_t(size - 1) * stride;
  if (last < 0 || last >= n) {
    std::snprintf(why, len, "its last PE would be %" PRId64 ", outside the parent team (PEs 0..%d; no wrap-around)",
                  last, n - 1);
    return false;
  }
  return true;
}

int TeamRegistry::split(TeamState* parent, int start, int stride, int size, bool member, int num_contexts,
                         TeamState** out, const char* call) {
  *out = nullptr;
  dfx::CollArgs da;
  da.root = start;  // the new team's triplet, as this PE asks for it
  da.bytes = uint64_t(size);
  da.elem_size = uint32_t(stride);
  dfx::CollScope dc(rt_->dfx_, dfx::Op::kTeamSplit, parent->slot, parent->start, parent->stride, parent->size,
                    parent->me, da);
  // Round 1: publish used slots; after the parent's sync, read the future teammates'.
  unsigned p1 = parent->next_parity();
  TeamSlot* mine = parent->slot_of(rt_->rank_);
  mine->used_mask[p1] = used_;
  parent->sync();
  int slot = -1;
  if (member) {
    uint64_t busy = 0;
    for (int i = 0; i < size; ++i) {
      const int w = parent->world_pe(start + i * stride);
      uint64_t m;
      rt_->rget(&m, &parent->slot_of(w)->used_mask[p1], sizeof m, w);
      busy |= m;
    }
    for (int s = 0; s < max_slots_; ++s)
      if (!(busy & (1ull << s))) {
        slot = s;
        break;
      }
  }
  bool ok = !member || slot >= 0;
  if (ok && member) {
    used_ |= 1ull << slot;
    reset_slot(reinterpret_cast<TeamSlot*>(rt_->meta_bytes(rt_->rank_) + kMetaArenaStart +
                                           uint64_t(slot) * sizeof(TeamSlot)));
  }
  // Round 2: everyone learns whether every new team got a slot (and slots are zeroed).
  unsigned p2 = parent->next_parity();
  mine->split_ok[p2] = ok ? 1 : 0;
  parent->sync();
  int first_failed = -1;  // reports once, from the lowest parent PE that found no slot
  for (int i = 0; i < parent->size && first_failed < 0; ++i) {
    const int w = parent->world_pe(i);
    uint32_t ok_i;
    rt_->rget(&ok_i, &parent->slot_of(w)->split_ok[p2], sizeof ok_i, w);
    if (!ok_i) first_failed = i;
  }
  if (first_failed >= 0) {
    if (member && slot >= 0) used_ &= ~(1ull << slot);  // nobody has used it yet
    // The call returns nonzero as the standard asks: a warning once per process, then debug.
    static std::atomic<bool> said{false};
    if (first_failed == parent->me)
      log_pe(said.exchange(true) ? LogLevel::kDebug : LogLevel::kWarn, rt_->rank_,
             "%s: too many teams: no team slot is free on every member of the new team (%d in use on this PE, "
             "at most %d); destroy unused teams or raise SYMMEM_METADATA_SIZE",
             call, live_teams(), max_slots_);
    return -1;
  }
  if (!member) return 0;
  auto t = std::make_unique<TeamState>();
  t->rt = rt_;
  t->start = parent->world_pe(start);
  t->stride = parent->stride * stride;
  t->size = size;
  t->me = t->index_of(rt_->rank_);
  t->slot = slot;
  t->slot_off = kMetaArenaStart + uint64_t(slot) * sizeof(TeamSlot);
  t->sync_off = t->slot_off + offsetof(TeamSlot, sync);
  t->epoch = &t->own_epoch;
  t->num_contexts = num_contexts;
  rt_->dfx_.team_created(slot, parent->slot, t->start, t->stride, t->size);
  *out = t.get();
  live_.push_back(std::move(t));
  return 0;
}

void TeamRegistry::destroy(TeamState* t) {
  if (!t || t->predefined) return;
  dfx::CollScope dc(rt_->dfx_, dfx::Op::kTeamDestroy, t->slot, t->start, t->stride, t->size, t->me);
  t->sync();  // no member stores into the slot after this
  discard(t);
}

void TeamRegistry::discard(TeamState* t) {
  used_ &= ~(1ull << t->slot);
  auto it = std::find_if(live_.begin(), live_.end(), [&](const auto& p) { return p.get() == t; });
  if (it != live_.end()) live_.erase(it);
}

}  // namespace symmem
