// Teams: ordered sets of PEs, each an arithmetic progression of world PEs
// (start + i*stride, i < size), with their own synchronisation state and collective
// scratch in a fixed slot of every member's metadata region.
//
// Slots. The metadata arena (from kMetaArenaStart) is cut into TeamSlots; slot 0 is the
// world's, slot 1 the shared (node) team's. A split picks, for each new team, the lowest
// slot that is free on every one of its members: each parent member publishes its used-slot
// mask in the parent's slot, the parent synchronises, and every member reads its future
// teammates' masks, so all of them pick the same slot without a further exchange. Members
// then zero the slot's sync words and the parent synchronises again before the team is
// used. Destroy synchronises the team (no member writes into the slot afterwards) and
// frees the slot locally.
//
// The registry (one per Runtime::Impl) is owned by the runtime through an opaque pointer
// whose deleter lives here, so the runtime never includes team headers.
#pragma once

#include <cstddef>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/meta.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {

inline constexpr int kMaxTeams = 64;               // one bit each in a uint64_t mask
inline constexpr size_t kTeamScratchBytes = 8192;  // per PE, per sync parity
inline constexpr size_t kBcastBoxBytes = 1024;     // small broadcasts: bytes per mailbox box
inline constexpr unsigned kBcastBoxes = 32;        // boxes per PE: how far a root runs ahead
inline constexpr int kReduceLineMembers = 8;         // teams up to this size have reduce lines
inline constexpr size_t kReduceLineBytes = 56;       // a reduce line's payload (64 - WaitWord's 8)
inline constexpr int kWorldSlot = 0, kSharedSlot = 1;

// One team's state on one PE, at the same metadata offset on every member. Fields indexed
// by [parity] belong to the collective that ends with the team's sync of that epoch parity;
// a member reuses a parity only after the next sync, which every other member enters only
// once it has finished reading the previous use (see docs/collectives.md).
struct TeamSlot {
  SyncState sync;                       // unused for the world (MetaFixed::world_sync)
  // collect, per sync parity: this PE's contribution in bytes and its source (Runtime::Impl::
  // sym_canonical: a member that contributes nothing may pass NULL)
  alignas(64) uint64_t collect_size[2][2];
  uint64_t used_mask[2];                 // split: this PE's used slots
  uint32_t split_ok[2];                  // split: this PE got a slot for its new team
  alignas(64) char scratch[2][kTeamScratchBytes];
  // Broadcast mailbox (small broadcasts, coll::broadcast): the root of the team's k-th
  // small broadcast copies into every other member's box[k % kBcastBoxes] and sets that
  // member's bcast_ready[k % kBcastBoxes] = k; the member copies out and sets its
  // bcast_done = k (the root sets its own too). A root refills a member's box only once
  // that member's bcast_done reached k - kBcastBoxes. No team sync: a root runs ahead of
  // slow members by up to kBcastBoxes broadcasts, so PEs that share a core take turns
  // through several broadcasts per context switch instead of one (docs/collectives.md).
  // A team across nodes uses the same boxes differently (coll_net.cpp broadcast_mailbox):
  // the root fills each other node's leader's box over UCX and the leader forwards it to its
  // node; there bcast_ready[r] grows by kBcastBoxes per broadcast of that box, whoever fills
  // it (an add, so a remote atomic can set it).
  WaitWord bcast_ready[kBcastBoxes];
  WaitWord bcast_done;
  // Across nodes, the middle-sized collectives that push into the members' dests
  // (coll_net.cpp push): one per part that arrived here, on the node or over UCX.
  WaitWord push_arrived;
  // Across nodes, large reductions (coll_net.cpp reduce_slices): bit c set once chunk c of
  // this PE's slice arrived, the previous node's prefix (chain_in) or the result
  // (chain_out); this PE clears them when the reduction ends.
  WaitWord chain_in, chain_out;
  // Small reductions (coll::reduce, "line" shape): member j's operand of the team's k-th
  // such reduction, pushed by j into reduce_line[k % 2][j] of every other member, payload
  // in the line's bytes after the word (Group::reduce_line) and v = k stored after it: one
  // line carries both, so one transfer per peer and no sync. j refills parity k % 2 only
  // after it has every member's operand of call k + 1, which each sends only once done
  // reading call k's.
  WaitWord reduce_line[2][kReduceLineMembers];
  alignas(64) char bcast_box[kBcastBoxes][kBcastBoxBytes];
};

static_assert(kMaxTeams * sizeof(TeamSlot) <= kMetaTeamArea, "team slots outgrow their metadata area");
static_assert(kMaxTeams <= dfx::kActiveSetLane, "every team slot has a lane on the status page");

struct TeamState {
  Runtime::Impl* rt = nullptr;
  int start = 0, stride = 1, size = 1;  // world PEs
  int me = -1;                          // this PE's number in the team
  int slot = -1;
  uint64_t slot_off = 0;   // metadata offset of the TeamSlot
  uint64_t sync_off = 0;   // metadata offset of the SyncState strided_sync uses
  uint32_t* epoch = nullptr;  // syncs done on this team by this PE
  uint32_t own_epoch = 0;
  uint32_t bcast_seq = 0;  // small broadcasts done on this team by this PE (mailbox)
  uint32_t reduce_seq = 0;  // line-shaped reductions done on this team by this PE
  std::vector<uint32_t> bcast_seen;  // across nodes: coll::Group::mailbox_seen
  uint32_t push_owed = 0;  // across nodes: the parts pushed to this PE so far (coll_net.cpp push)
  int num_contexts = 0;
  bool predefined = false;

  int world_pe(int i) const { return start + i * stride; }
  // Team PE number of world PE `w`, or -1 if it is not a member.
  int index_of(int w) const {
    if (stride == 0) return w == start ? 0 : -1;
    int d = w - start;
    if (d % stride != 0) return -1;
    int i = d / stride;
    return i >= 0 && i < size ? i : -1;
  }
  TeamSlot* slot_of(int world) const { return reinterpret_cast<TeamSlot*>(rt->meta_bytes(world) + slot_off); }
  // Parity of the next sync: the collective buffers a call fills before that sync.
  unsigned next_parity() const { return (*epoch + 1) & 1u; }
  // data_follows: a collective's own sync (coll::TeamGroup), not the user's: inside that
  // collective, whose scope names it on the status page.
  void sync(bool data_follows = false) {
    if (data_follows) return rt->strided_sync(start, stride, size, sync_off, epoch, true);
    if (dfx::colls_kept(rt->dfx_)) return sync_scoped();
    sync_bare();
  }
  // sync is one of these, by a tail call (as Runtime::Impl::sync_all).
  [[gnu::noinline]] void sync_bare() { rt->strided_sync(start, stride, size, sync_off, epoch, false); }
  [[gnu::noinline]] void sync_scoped() {
    dfx::CollScope c(rt->dfx_, dfx::Op::kSync, slot, start, stride, size, me);
    rt->strided_sync(start, stride, size, sync_off, epoch, false);
  }
};

class TeamRegistry {
 public:
  explicit TeamRegistry(Runtime::Impl* rt);
  ~TeamRegistry();
  TeamState* world() { return world_.get(); }
  TeamState* shared() { return shared_.get(); }
  int max_teams() const { return max_slots_; }
  int live_teams() const { return int(std::popcount(used_)); }

  // Collective over `parent`. Every parent member passes its own new team as a triplet of
  // parent PE numbers (members of one new team pass the same triplet); `member` is false on
  // PEs that join no team. On success *out is the new team (nullptr for non-members) on
  // every PE and the result is 0; if any PE could not get a slot, nonzero everywhere.
  int split(TeamState* parent, int start, int stride, int size, bool member, int num_contexts, TeamState** out,
            const char* call);
  void destroy(TeamState* t);
  // Frees a team no member has used yet (a split that failed elsewhere); no communication.
  void discard(TeamState* t);

 private:
  Runtime::Impl* rt_;
  int max_slots_ = 0;
  uint64_t used_ = 0;
  std::unique_ptr<TeamState> world_, shared_;
  std::vector<std::unique_ptr<TeamState>> live_;
};

// The registry of `rt`, created on first use (no communication: the predefined teams'
// slots are fixed and the metadata region starts zeroed).
TeamRegistry& teams(Runtime::Impl& rt);

// Checks a split_strided triplet against a parent of `n` PEs; fills `why` when invalid.
bool valid_triplet(int n, int start, int stride, int size, char* why, size_t why_len);

}  // namespace symmem
