// The collectives across nodes (coll_net.cpp, coll_net_sync.cpp, coll_net_slices.cpp):
// what their algorithms share, private to those three files. Moving bytes between members
// (pull from a member's symmetric copy, push into its dest, the hierarchical pieces), the
// size limits that choose an algorithm, and each file's entry points for the others.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/coll.hpp"
#include "runtime/meta.hpp"

namespace symmem::coll::net {

inline const char* cp(const void* p) { return static_cast<const char*>(p); }
inline char* mp(void* p) { return static_cast<char*>(p); }

inline void move_local(void* dest, const void* src, size_t bytes) {
  if (dest != src && bytes) std::memmove(dest, src, bytes);
}

// Starts copying member i's copy of the symmetric range [sym, sym+n) into dst; complete
// after done(g).
inline void pull(Group& g, void* dst, const void* sym, size_t n, int i) {
  if (!n) return;
  const int pe = g.world_pe(i);
  const char* r = g.at(cp(sym), i);
  Runtime::Impl* rt = g.rt();
  if (rt->off_node(pe)) rt->ucx_get(dst, r, n, pe, false);
  else shm::get(dst, r, n);
}

inline void done(Group& g) {
  if (g.rt()->ucx_) g.rt()->ucx_quiet(false);
}

// out = operands 0..last in member order.
inline void fold(Group& g, void* out, const char* all, int last, size_t n, size_t es, ReduceFn fn) {
  const ReduceKernels& k = fn->isa[g.rt()->reduce_isa_];
  const size_t bytes = n * es;
  if (last == 0) return (void)std::memcpy(out, all, bytes);
  k.combine(out, all, all + bytes, n);
  for (int i = 2; i <= last; ++i) k.acc(out, all + size_t(i) * bytes, n);
}

// From this size on, only one member per node moves the data between nodes (the node's
// leader); the others copy it from the leader through shared memory.
constexpr size_t kHierBytes = 64 << 10;
// A team's collective travels inside one sync (in_sync) while what the members contribute
// fits the team scratch (in_sync checks the exact layout).
inline bool fits_in_sync(Group& g, size_t total) { return total <= g.scratch_bytes(); }
// Up to this many times that, a reduction or fcollect runs as consecutive in_syncs over
// pieces of the vectors; a broadcast of up to kMailboxPieces boxes goes through that many
// consecutive mailbox boxes (one message per other node); beyond, the general path.
constexpr size_t kInSyncPieces = 4, kMailboxPieces = 8, kBcastSlicesBytes = 16 << 10,
                 kFcollectSlicesBytes = 32 << 10;
static_assert(kMailboxPieces <= kBcastBoxes / 2, "a root waits for half the ring to be free");
// coll_net_sync.cpp
bool reduce_in_sync(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn);
bool fcollect_in_sync(Group& g, void* dest, const void* src, size_t bytes, size_t stride);
bool alltoall_in_sync(Group& g, void* dest, const void* src, size_t block);
bool broadcast_in_sync(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
bool broadcast_mailbox(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
// coll_net_slices.cpp
bool broadcast_slices(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
bool fcollect_slices(Group& g, void* dest, const void* src, size_t bytes);

// Some node holds several members (else each member is alone on its node: nothing to save).
inline bool nodes_shared(Group& g) {
  return int(g.rt()->group_nodes(g.start(), g.stride(), g.size()).leaders.size()) < g.size();
}

// Piece p of dest: len bytes at dest_off, copied from member `from`'s copy of src + src_off.
struct Piece {
  size_t dest_off, src_off, len;
  int from;
};

// Large broadcasts and (f)collects, hierarchically. Every member copies the pieces held
// on its own node through shared memory; of the pieces held on other nodes, each comes
// over UCX to one member of this node (piece p to its p % L-th member, L members here) and,
// after a sync, the node's others copy it from that member's dest. One copy of a piece
// crosses the network per node, not one per member, and a node's members share that work.
// A last sync keeps every dest unchanged until its node has read it. Any layout of members
// on nodes; the caller's first sync is done. `own` false: the piece from this member
// stays out of its dest (a broadcast root's).
template <class P>
void net_pieces(Group& g, void* dest, const void* src, int pieces, P piece, bool own = true) {
  Runtime::Impl* rt = g.rt();
  const int n = g.size(), me = g.me();
  std::vector<int> local;  // this node's members, in member order
  for (int i = 0; i < n; ++i)
    if (i == me || !rt->off_node(g.world_pe(i))) local.push_back(i);
  const int nl = int(local.size());
  const int pos = int(std::find(local.begin(), local.end(), me) - local.begin());
  for (int k = 0; k < pieces; ++k) {
    const int p = (k + pos) % pieces;  // the node's members start on different pieces
    const Piece x = piece(p);
    if (x.from == me) {
      if (own) move_local(mp(dest) + x.dest_off, cp(src) + x.src_off, x.len);
    } else if (!rt->off_node(g.world_pe(x.from)) || p % nl == pos) {
      pull(g, mp(dest) + x.dest_off, cp(src) + x.src_off, x.len, x.from);
    }
  }
  done(g);
  g.sync();  // each off-node piece is in one dest on every node
  for (int p = 0; p < pieces; ++p) {
    const Piece x = piece(p);
    if (x.from != me && rt->off_node(g.world_pe(x.from)) && p % nl != pos)
      pull(g, mp(dest) + x.dest_off, mp(dest) + x.dest_off, x.len, local[size_t(p % nl)]);
  }
  g.sync();  // nobody still reads another member's dest
}

// Middle-sized team collectives pushed into the members' dests. After one sync (every
// member has entered: its dest is free), each member writes its part for member i straight
// into i's dest (part(i): {dest_off, src_off, len, from = me}) and adds one to i's arrival
// word: through shared memory on its node, as one deposit across nodes (the bytes and the
// add, one UCX message, locally complete on return). A member is done once the `owed`
// parts pushed to it have arrived. No closing sync: nobody reads another member's
// buffers, and a member's next push waits for the next sync, which it enters only after
// this one's parts arrived. One sync and one one-way message, where pulling costs a sync,
// a get's round trip that the source's CPU must answer, and another sync. Returns false
// where the group has no arrival words (active sets).
constexpr size_t kPushMaxPart = 64 << 10;  // one message per part, eager
// Parts from this size are pushed too: across nodes they go by rendezvous (UcxTransport,
// SYMMEM_UCX_RNDV_BYTES' default), the bytes from the source straight into the dest.
constexpr size_t kPushRndvPart = 512 << 10;
constexpr bool push_part(size_t part) { return part <= kPushMaxPart || part >= kPushRndvPart; }
template <class P>
bool push(Group& g, void* dest, const void* src, P part, uint32_t owed) {
  WaitWord* mine = g.push_word(g.me());
  uint32_t* total = g.push_owed();
  if (mine == nullptr || total == nullptr) return false;
  Runtime::Impl* rt = g.rt();
  const int n = g.size(), me = g.me();
  g.sync();  // g.sync(), every member pushing next
  for (int k = 1; k < n; ++k) {
    const int i = (me + k) % n, pe = g.world_pe(i);
    const Piece x = part(i);
    if (x.from != me) continue;  // nothing from this member for i
    char* to = g.at(mp(dest) + x.dest_off, i);
    if (rt->off_node(pe)) {
      const UcxSeg seg{to, cp(src) + x.src_off, x.len};
      rt->ucx_->deposit(&seg, 1, &g.push_word(i)->v, 1, pe);
    } else {
      if (x.len) std::memcpy(to, cp(src) + x.src_off, x.len);
      Runtime::Impl::add_word(g.push_word(i), 1);
    }
  }
  *total += owed;
  const uint32_t want = *total;
  rt->net_wait([&] { return int32_t(mine->v.load(std::memory_order_acquire) - want) >= 0; },
               g.world_pe((me + n - 1) % n), "collective");
  return true;
}


}  // namespace symmem::coll::net
