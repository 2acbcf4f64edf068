// Collectives of groups whose members are on several nodes. Every member pulls what it
// needs from its peers' symmetric buffers (one-sided gets: a load on the node, a UCX get
// off it, all in flight at once and completed together), between two syncs of the group
// (Runtime::Impl::net_sync / PsyncGroup::net_sync). Reductions and scans combine operands in
// member order 0, 1, ..., n-1, as the on-node algorithms do, so every member computes the
// same bits.
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/coll.hpp"
#include "runtime/meta.hpp"

namespace symmem::coll::net {
namespace {

const char* cp(const void* p) { return static_cast<const char*>(p); }
char* mp(void* p) { return static_cast<char*>(p); }

void move_local(void* dest, const void* src, size_t bytes) {
  if (dest != src && bytes) std::memmove(dest, src, bytes);
}

// Starts copying member i's copy of the symmetric range [sym, sym+n) into dst; complete
// after done(g).
void pull(Group& g, void* dst, const void* sym, size_t n, int i) {
  if (!n) return;
  const int pe = g.world_pe(i);
  const char* r = g.at(cp(sym), i);
  Runtime::Impl* rt = g.rt();
  if (rt->off_node(pe)) rt->ucx_get(dst, r, n, pe, false);
  else shm::get(dst, r, n);
}

void done(Group& g) {
  if (g.rt()->ucx_) g.rt()->ucx_quiet(false);
}

// out = operands 0..last in member order.
void fold(Group& g, void* out, const char* all, int last, size_t n, size_t es, ReduceFn fn) {
  const ReduceKernels& k = fn->isa[g.rt()->reduce_isa_];
  const size_t bytes = n * es;
  if (last == 0) return (void)std::memcpy(out, all, bytes);
  k.combine(out, all, all + bytes, n);
  for (int i = 2; i <= last; ++i) k.acc(out, all + size_t(i) * bytes, n);
}

}  // namespace

void sync(Group& g) { g.sync(); }

// From this size on, only one member per node moves the data between nodes (the node's
// leader); the others copy it from the leader through shared memory.
constexpr size_t kHierBytes = 64 << 10;
// A team's collective travels inside one sync (in_sync) while what the members contribute
// fits the team scratch (in_sync checks the exact layout).
bool fits_in_sync(Group& g, size_t total) { return total <= g.scratch_bytes(); }
// Up to this many times that, a reduction or fcollect runs as consecutive in_syncs over
// pieces of the vectors; a broadcast of up to kMailboxPieces boxes goes through that many
// consecutive mailbox boxes (one message per other node); beyond, the general path.
constexpr size_t kInSyncPieces = 4, kMailboxPieces = 8, kBcastSlicesBytes = 16 << 10,
                 kFcollectSlicesBytes = 32 << 10;
static_assert(kMailboxPieces <= kBcastBoxes / 2, "a root waits for half the ring to be free");
bool reduce_in_sync(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn);
bool fcollect_in_sync(Group& g, void* dest, const void* src, size_t bytes, size_t stride);
bool alltoall_in_sync(Group& g, void* dest, const void* src, size_t block);

bool broadcast_in_sync(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
bool broadcast_mailbox(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
static bool broadcast_slices(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
static bool fcollect_slices(Group& g, void* dest, const void* src, size_t bytes);

// Some node holds several members (else each member is alone on its node: nothing to save).
bool nodes_shared(Group& g) {
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

void broadcast(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets) {
  if (bytes == 0) return;
  const size_t box = g.mailbox_bytes();
  if (bytes <= box * kMailboxPieces && broadcast_mailbox(g, dest, src, bytes, root, root_gets)) return;
  if (fits_in_sync(g, bytes * size_t(g.size())) && broadcast_in_sync(g, dest, src, bytes, root, root_gets)) return;
  // Sliced over the members of each node from 16 KiB, where it beats pushing and the
  // leaders' pieces.
  if (bytes >= kBcastSlicesBytes && nodes_shared(g) && broadcast_slices(g, dest, src, bytes, root, root_gets)) return;
  Runtime::Impl* rt = g.rt();
  const int me = g.me();
  if (push_part(bytes) && (bytes < kHierBytes || !nodes_shared(g)) &&
      push(g, dest, src, [&](int) { return Piece{0, 0, bytes, root}; }, me == root ? 0 : 1)) {
    if (me == root && root_gets) move_local(dest, src, bytes);
    return;
  }
  g.sync();  // the root's source is ready; no member still reads a previous dest
  if (bytes < kHierBytes || !nodes_shared(g)) {
    if (me != root) pull(g, dest, src, bytes, root);
    else if (root_gets) move_local(dest, src, bytes);
    done(g);
    g.sync();  // nobody still reads the root's source
    return;
  }
  // In slices of 64-byte multiples, as many as a node holds members on average.
  const int slices = std::max(1, g.size() / int(rt->group_nodes(g.start(), g.stride(), g.size()).leaders.size()));
  const size_t slice = (bytes / size_t(slices) + 63) / 64 * 64;
  net_pieces(
      g, dest, src, slices,
      [&](int p) {
        const size_t off = std::min(bytes, size_t(p) * slice);
        return Piece{off, off, std::min(slice, bytes - off), root};
      },
      root_gets);
}

void fcollect(Group& g, void* dest, const void* src, size_t bytes) {
  if (bytes == 0) return;
  // Sliced over each node's members from 32 KiB in all, where it beats one sync's pieces,
  // pushing and the leaders' pieces.
  if (bytes * size_t(g.size()) >= kFcollectSlicesBytes && nodes_shared(g) && fcollect_slices(g, dest, src, bytes))
    return;
  // With one member per node, past one sync's scratch pushing wins.
  if (bytes * size_t(g.size()) <= g.scratch_bytes() * (nodes_shared(g) ? kInSyncPieces : 1)) {
    const size_t per = g.scratch_bytes() / size_t(g.size());  // bytes of each member's per piece
    if (per > 0 && fcollect_in_sync(g, dest, src, std::min(per, bytes), bytes)) {  // false for none or for all
      for (size_t at = per; at < bytes; at += per)
        fcollect_in_sync(g, mp(dest) + at, cp(src) + at, std::min(per, bytes - at), bytes);
      return;
    }
  }
  const int n = g.size(), me = g.me();
  if (push_part(bytes) && (bytes * size_t(n) < kHierBytes || !nodes_shared(g)) &&
      push(g, dest, src, [&](int) { return Piece{size_t(me) * bytes, 0, bytes, me}; }, uint32_t(n - 1))) {
    move_local(mp(dest) + size_t(me) * bytes, src, bytes);
    return;
  }
  g.sync();
  if (bytes * size_t(n) >= kHierBytes && nodes_shared(g))
    return net_pieces(g, dest, src, n, [&](int i) { return Piece{size_t(i) * bytes, 0, bytes, i}; });
  for (int k = 0; k < n; ++k) {
    const int i = (me + k) % n;
    if (i == me) move_local(mp(dest) + size_t(i) * bytes, src, bytes);
    else pull(g, mp(dest) + size_t(i) * bytes, src, bytes, i);
  }
  done(g);
  g.sync();
}

void collect(Group& g, void* dest, const void* src, size_t bytes) {
  const int n = g.size(), me = g.me();
  const unsigned par = g.next_parity();
  Runtime::Impl* rt = g.rt();
  uint64_t* w = g.size_word(me, par);
  __atomic_store_n(w, uint64_t(bytes), __ATOMIC_RELAXED);
  __atomic_store_n(w + 1, rt->sym_canonical(src), __ATOMIC_RELAXED);
  g.sync();
  std::vector<uint64_t> sizes(static_cast<size_t>(n)), word(2);
  for (int i = 0; i < n; ++i) {
    if (i == me) {
      sizes[size_t(i)] = bytes;
      continue;
    }
    rt->rget(word.data(), g.size_word(i, par), 2 * sizeof(uint64_t), g.world_pe(i));
    sizes[size_t(i)] = word[0];
    // A member that contributes nothing may pass NULL: the source of one that contributes.
    if (src == nullptr && word[0] && word[1]) src = rt->sym_copy(word[1], rt->rank_);
  }
  std::vector<size_t> offs(size_t(n) + 1, 0);
  for (int i = 0; i < n; ++i) offs[size_t(i) + 1] = offs[size_t(i)] + sizes[size_t(i)];
  if (offs[size_t(n)] >= kHierBytes && nodes_shared(g)) {  // every member read the same sizes: the same choice
    net_pieces(g, dest, src, n, [&](int i) { return Piece{offs[size_t(i)], 0, sizes[size_t(i)], i}; });
    return g.collect_done();
  }
  for (int i = 0; i < n; ++i) {
    if (i == me) move_local(mp(dest) + offs[size_t(i)], src, bytes);
    else pull(g, mp(dest) + offs[size_t(i)], src, sizes[size_t(i)], i);
  }
  done(g);
  g.sync();
  g.collect_done();
}

void alltoall(Group& g, void* dest, const void* src, size_t block) {
  if (block == 0) return;
  if (fits_in_sync(g, block * size_t(g.size()) * size_t(g.size())) && alltoall_in_sync(g, dest, src, block)) return;
  const int n = g.size(), me = g.me();
  if (push_part(block) &&
      push(g, dest, src, [&](int i) { return Piece{size_t(me) * block, size_t(i) * block, block, me}; },
           uint32_t(n - 1))) {
    move_local(mp(dest) + size_t(me) * block, cp(src) + size_t(me) * block, block);
    return;
  }
  g.sync();
  for (int k = 0; k < n; ++k) {
    const int i = (me + k) % n;
    if (i == me) move_local(mp(dest) + size_t(i) * block, cp(src) + size_t(me) * block, block);
    else pull(g, mp(dest) + size_t(i) * block, cp(src) + size_t(me) * block, block, i);
  }
  done(g);
  g.sync();
}

void alltoalls(Group& g, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es) {
  if (nelems == 0) return;
  const int n = g.size(), me = g.me();
  g.sync();
  for (int k = 0; k < n; ++k) {
    const int i = (me + k) % n;
    const char* s = cp(src) + size_t(me) * nelems * size_t(sst) * es;
    char* d = mp(dest) + size_t(i) * nelems * size_t(dst) * es;
    for (size_t e = 0; e < nelems; ++e) {
      if (i == me) std::memcpy(d + e * size_t(dst) * es, s + e * size_t(sst) * es, es);
      else pull(g, d + e * size_t(dst) * es, s + e * size_t(sst) * es, es, i);
    }
  }
  done(g);
  g.sync();
}

// Small team collectives as one hierarchical sync that carries the data. The PEs of a node
// arrive at their leader (shared memory); the leader copies their contributions (`bytes`
// each) into its team scratch (one block per node, members in member order), then the
// leaders run the sync's dissemination rounds over UCX, each round's arrival carrying the
// blocks the partner lacks into its scratch (one deposit, UcxTransport::deposit), so
// after the last round every leader holds every member's contribution. It
// releases its node, and every PE builds its result from its leader's scratch:
// out(contribution), where contribution(i) is member i's, asked for i = 0, 1, ... in order.
// One sync's latency instead of two syncs and a round of gets. The scratch of parity e&1 is
// next written at sync e+2, after every PE has left sync e+1, so the readers are done.
// Returns false when the group or the sizes do not fit (the caller takes the general path).
template <class Out>
bool in_sync(Group& g, const void* src, size_t bytes, Out out) {
  constexpr int kMaxNodes = 64, kMaxMembers = 4096;
  uint64_t off = 0;
  uint32_t* epoch = nullptr;
  if (!g.sync_words(&off, &epoch) || g.scratch_bytes() == 0 || g.size() > kMaxMembers) return false;
  Runtime::Impl* rt = g.rt();
  Runtime::Impl::GroupNodes& gn = rt->group_nodes(g.start(), g.stride(), g.size());
  const int nl = int(gn.leaders.size()), size = g.size();
  if (nl < 2 || nl > kMaxNodes) return false;
  // Node (index into gn.leaders) of every member, in member order.
  int16_t node_of[kMaxMembers];
  int count[kMaxNodes] = {};
  int max_local = 0;
  for (int i = 0; i < size; ++i) {
    const int idx = rt->node_index_[size_t(g.world_pe(i))];
    int k = 0;
    while (k < nl && rt->node_index_[size_t(gn.leaders[size_t(k)])] != idx) ++k;
    node_of[i] = int16_t(k);
    max_local = std::max(max_local, ++count[k]);
  }
  const size_t block = size_t(max_local) * bytes;
  if (size_t(nl) * block > g.scratch_bytes()) return false;

  const uint32_t e = ++*epoch;
  const unsigned par = e & 1u;  // the scratch of the collective that ends with sync e
  auto state = [&](int pe) { return reinterpret_cast<SyncState*>(rt->meta_bytes(pe) + off); };
  char* mine = g.scratch(g.index_of(gn.leader), par);  // this node's leader's, mapped here
  int seen[kMaxNodes] = {};
  auto contribution = [&](int i) -> const char* {
    const int k = node_of[i];
    return mine + size_t(k) * block + size_t(seen[k]++) * bytes;
  };
  if (g.world_pe(g.me()) != gn.leader) {
    rt->node_arrive(gn, e, off);
    out(contribution);
    return true;
  }
  rt->node_gather(gn, e, off);
  {  // this node's block: its members' contributions, read in place
    char* b = mine + size_t(gn.my_leader) * block;
    for (int i = 0; i < size; ++i)
      if (node_of[i] == gn.my_leader) {
        std::memcpy(b, i == g.me() ? src : g.at(cp(src), i), bytes);
        b += bytes;
      }
  }
  for (int round = 0, dist = 1; dist < nl; ++round, dist <<= 1) {
    const int to = gn.leaders[size_t((gn.my_leader + dist) % nl)];
    const int from = gn.leaders[size_t((gn.my_leader - dist % nl + nl) % nl)];
    // Held now: nodes my_leader, my_leader-1, ..., my_leader-dist+1; the partner holds
    // its own and the dist-1 before it: send the min(dist, nl-dist) it lacks, blocks
    // my_leader-k+1 .. my_leader (modulo nl: one run or two), and the round's arrival,
    // as one deposit.
    const int k = std::min(dist, nl - dist);
    char* theirs = g.scratch(g.index_of(to), par);
    const int lo = gn.my_leader - k + 1;
    UcxSeg segs[2];
    int ns = 0;
    auto run = [&](int a, int b) {  // blocks [a, b)
      segs[ns++] = UcxSeg{theirs + size_t(a) * block, mine + size_t(a) * block, size_t(b - a) * block};
    };
    if (lo >= 0) {
      run(lo, gn.my_leader + 1);
    } else {
      run(0, gn.my_leader + 1);
      run(nl + lo, nl);
    }
    rt->ucx_->deposit(segs, ns, &state(to)->round[round].v, 1, to);
    std::atomic<uint32_t>& w = state(gn.leader)->round[round].v;
    rt->net_wait([&] { return int32_t(w.load(std::memory_order_acquire) - e) >= 0; }, from, "collective");
  }
  Runtime::Impl::notify(&state(gn.leader)->release, e);
  out(contribution);
  return true;
}

bool reduce_in_sync(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  const size_t bytes = n * es;
  const ReduceKernels& kern = fn->isa[g.rt()->reduce_isa_];
  const int size = g.size();
  return in_sync(g, src, bytes, [&](auto operand) {
    if (size == 1) return (void)std::memcpy(dest, operand(0), bytes);
    const char* a = operand(0);
    const char* b = operand(1);
    kern.combine(dest, a, b, n);  // member order: every PE computes the same bits
    for (int i = 2; i < size; ++i) kern.acc(dest, operand(i), n);
  });
}

// Member i's bytes go to dest + i * stride.
bool fcollect_in_sync(Group& g, void* dest, const void* src, size_t bytes, size_t stride) {
  const int size = g.size();
  return in_sync(g, src, bytes, [&](auto block) {
    for (int i = 0; i < size; ++i) std::memcpy(mp(dest) + size_t(i) * stride, block(i), bytes);
  });
}

// Every member's source travels (a few bytes each); each PE keeps the root's.
bool broadcast_in_sync(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets) {
  const int size = g.size(), me = g.me();
  return in_sync(g, src, bytes, [&](auto block) {
    for (int i = 0; i < size; ++i) {
      const char* b = block(i);  // asked in member order
      if (i == root && (me != root || root_gets)) std::memmove(dest, b, bytes);
    }
  });
}

// Small team broadcasts without a team sync, through the members' mailboxes (team/team.hpp
// TeamSlot::bcast_*; the k-th small broadcast of the team uses box k % depth everywhere).
// The root deposits its data into the box of each other node's leader over UCX with an
// add of `depth` to that leader's ready word (one message each); it copies the data
// into the boxes of its own node's other members through shared memory. A leader of
// another node waits for its ready word (driving UCX), forwards the box to its node's
// other members through shared memory, and copies it out; the others copy out of their own
// box. Every member then sets its done word to k: its box k % depth is free again. Nobody
// reads another PE's dest or source, and the root's deposits are complete locally when it
// returns, so every buffer may change on return; a member returns once it holds the data,
// and a root runs up to `depth` broadcasts ahead of the slowest member.
// Before filling a box, its filler waits for the owner's done to reach k - depth: in place
// on the node; across nodes from the root's last reading of it (mailbox_seen), read again
// over UCX only when that reading no longer frees the box (once per depth / 2 calls at
// most). A broadcast larger than a box takes several consecutive boxes (call numbers):
// the root sends them to a leader as one deposit that counts on the last box's ready
// word, and the leader counts the others' itself; a member waits for the last box, filled
// last. Returns false where routes do not follow nodes.
bool broadcast_mailbox(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets) {
  Runtime::Impl* rt = g.rt();
  const Runtime::Impl::GroupNodes& gn = rt->group_nodes(g.start(), g.stride(), g.size());
  if (!gn.routes_follow_nodes) return false;
  const int me = g.me(), root_pe = g.world_pe(root);
  const size_t box = g.mailbox_bytes();
  const uint32_t nbox = uint32_t((bytes + box - 1) / box), depth = g.mailbox_depth();
  uint32_t k = 0;  // the last box's call number; the first's is k - nbox + 1
  for (uint32_t j = 0; j < nbox; ++j) k = g.next_mailbox_seq();
  const uint32_t first = k - nbox + 1;
  const uint32_t free_at = k - depth;  // a member's boxes are free once its done reached this
  auto len = [&](uint32_t j) { return std::min(box, bytes - size_t(j) * box); };  // of box j
  auto fill_mates = [&](auto from) {  // this node's other members, the root aside
    for (int i : gn.mates) {
      if (i == root) continue;
      rt->wait_word_ge(g.mailbox(i, k).done, free_at);
      for (uint32_t j = 0; j < nbox; ++j) {
        const Group::Mailbox m = g.mailbox(i, first + j);
        std::memcpy(m.box, from(j), len(j));
        Runtime::Impl::add_word(m.ready, depth);
      }
    }
  };
  auto own = [&](uint32_t j) -> const char* { return g.mailbox(me, first + j).box; };
  auto of_src = [&](uint32_t j) { return cp(src) + size_t(j) * box; };
  if (me == root) {
    uint32_t* seen = g.mailbox_seen();
    for (int pe : gn.leaders) {
      if (!rt->off_node(pe)) continue;
      const int i = g.index_of(pe);
      const Group::Mailbox last = g.mailbox(i, k);
      if (int32_t(seen[i] - free_at) < 0) {
        // Read again, until half the ring is free: a root faster than that node then reads
        // once per depth / 2 boxes, not at every call once it has run ahead.
        const uint32_t want = k - depth / 2;
        for (int64_t start = 0;;) {
          rt->rget(&seen[i], &last.done->v, sizeof(uint32_t), pe);
          if (int32_t(seen[i] - want) >= 0) break;
          rt->check_net_wait(&start, pe, "broadcast (a full mailbox)");
          sched_yield();
        }
      }
      // The boxes are consecutive in memory but for the ring's wrap: one run or two.
      UcxSeg segs[2];
      int ns = 0;
      for (uint32_t j = 0; j < nbox; ++j) {
        if (j == 0 || (first + j) % depth == 0) segs[ns++] = UcxSeg{g.mailbox(i, first + j).box, of_src(j), 0};
        segs[ns - 1].n += len(j);
      }
      rt->ucx_->deposit(segs, ns, &last.ready->v, depth, pe);  // locally complete: src is free on return
    }
    fill_mates(of_src);
    for (uint32_t j = 0; j < nbox; ++j)  // every box's ready counts every use of it
      Runtime::Impl::add_word(g.mailbox(me, first + j).ready, depth);
    Runtime::Impl::notify(g.mailbox(me, k).done, k);
    if (root_gets) move_local(dest, src, bytes);
    return true;
  }
  const Group::Mailbox last = g.mailbox(me, k);
  if (rt->off_node(root_pe) && g.world_pe(me) == gn.leader) {
    rt->net_wait([&] { return int32_t(last.ready->v.load(std::memory_order_acquire) - k) >= 0; }, root_pe,
                 "broadcast");
    // The deposit counted on the last box only: count the others' use here.
    for (uint32_t j = 0; j + 1 < nbox; ++j) Runtime::Impl::add_word(g.mailbox(me, first + j).ready, depth);
    fill_mates(own);
  } else {  // filled by the root, or by this node's leader, the last box last
    rt->wait_word_ge(last.ready, k);
  }
  for (uint32_t j = 0; j < nbox; ++j) std::memcpy(mp(dest) + size_t(j) * box, own(j), len(j));
  Runtime::Impl::notify(last.done, k);
  return true;
}

// Every member's whole source travels; each PE keeps its column.
bool alltoall_in_sync(Group& g, void* dest, const void* src, size_t block) {
  const int size = g.size(), me = g.me();
  return in_sync(g, src, block * size_t(size), [&](auto whole) {
    for (int i = 0; i < size; ++i) std::memcpy(mp(dest) + size_t(i) * block, whole(i) + size_t(me) * block, block);
  });
}

// Whether each node holds a run of consecutive members; then node k's members are
// (*first)[k] .. (*first)[k+1]-1, nodes in member order (first has nodes + 1 entries).
static bool node_runs(Group& g, std::vector<int>* first) {
  Runtime::Impl* rt = g.rt();
  const Runtime::Impl::GroupNodes& gn = rt->group_nodes(g.start(), g.stride(), g.size());
  const size_t nodes = gn.leaders.size();
  first->assign(nodes + 1, g.size());
  for (size_t k = 0; k < nodes; ++k) (*first)[k] = g.index_of(gn.leaders[k]);
  for (size_t k = 0; k + 1 < nodes; ++k)
    if ((*first)[k + 1] <= (*first)[k]) return false;
  for (size_t k = 0; k < nodes; ++k)
    for (int i = (*first)[k]; i < (*first)[k + 1]; ++i)
      if (rt->node_index_[size_t(g.world_pe(i))] != rt->node_index_[size_t(gn.leaders[k])]) return false;
  return true;
}

// The block layout of the sliced algorithms (reduce_slices, broadcast_slices): every node
// holds a run of L consecutive members, and the group has the words they count on.
struct Runs {
  std::vector<int> first;  // node k's members: first[k] .. first[k+1]-1
  int nodes = 0, L = 0;
  int node = 0, j = 0;     // this member's node and its place there
  int member(int k, int pos) const { return first[size_t(k)] + pos; }
};
static bool equal_runs(Group& g, Runs* r) {
  Runtime::Impl* rt = g.rt();
  const Runtime::Impl::GroupNodes& gn = rt->group_nodes(g.start(), g.stride(), g.size());
  if (g.chain_word(g.me(), false) == nullptr || g.push_owed() == nullptr || !gn.routes_follow_nodes ||
      !node_runs(g, &r->first))
    return false;
  r->nodes = int(gn.leaders.size());
  r->L = r->first[1] - r->first[0];
  for (int k = 1; k < r->nodes; ++k)
    if (r->first[size_t(k) + 1] - r->first[size_t(k)] != r->L) return false;
  r->node = gn.my_leader;
  r->j = g.me() - r->first[size_t(r->node)];
  return true;
}

// Large reductions where each node holds a run of consecutive members (the usual block
// layout): a chain over the nodes in member order. The first node's leader folds its
// node's operands (shared memory) into its dest; each next node's leader fetches that
// prefix over UCX and goes on folding its own node's operands into its dest; the last
// leader's dest holds the result, which the other leaders fetch and their nodes copy. The
// additions are those of the member-order fold a0 + a1 + ... + an-1, bit for bit, and one
// partial result per node crosses the network instead of every member's operand. Returns
// false for other layouts.
static bool reduce_chain(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  Runtime::Impl* rt = g.rt();
  const size_t bytes = n * es;
  const Runtime::Impl::GroupNodes& gn = rt->group_nodes(g.start(), g.stride(), g.size());
  const size_t nodes = gn.leaders.size();
  std::vector<int> first;
  if (!node_runs(g, &first)) return false;
  const size_t mine = size_t(gn.my_leader);
  const bool lead = g.me() == first[mine];
  std::vector<char> all;
  g.sync();  // every member's source is ready
  if (lead) {  // operand 0: the previous node's prefix (none on the first node)
    const int local = first[mine + 1] - first[mine];
    const size_t off = mine > 0 ? bytes : 0;
    all.resize(off + bytes * size_t(local));
    for (int i = first[mine]; i < first[mine + 1]; ++i) {
      char* to = all.data() + off + size_t(i - first[mine]) * bytes;
      if (i == g.me()) std::memcpy(to, src, bytes);
      else pull(g, to, src, bytes, i);
    }
  }
  for (size_t stage = 0; stage < nodes; ++stage) {
    if (stage > 0) g.sync();  // the previous node's prefix is in its leader's dest
    if (!lead || stage != mine) continue;
    if (mine > 0) {
      pull(g, all.data(), dest, bytes, first[mine - 1]);
      done(g);
    }
    fold(g, dest, all.data(), int(all.size() / bytes) - 1, n, es, fn);
  }
  g.sync();  // the last leader's dest holds the result
  if (lead && mine + 1 < nodes) {
    pull(g, dest, dest, bytes, first[nodes - 1]);
    done(g);
  }
  g.sync();  // every leader's dest holds the result
  if (!lead) pull(g, dest, dest, bytes, first[mine]);
  g.sync();  // nobody still reads a leader's dest (its owner may write it on return)
  return true;
}

// Chunks of at least 60 KiB (at most 32 a slice: bits of a word): each deposit costs CPU
// at both ends, and 60 KiB still fits whole in one of UCX's 128 KiB receive buffers.
constexpr size_t kChainChunkMin = 60 << 10;
constexpr size_t kSlicesBytes = 8 << 10, kSlicesAloneBytes = 256 << 10;  // reduce() chooses

// Large reductions where the nodes hold equal runs of L consecutive members (the usual
// block layout), hierarchical and pipelined. The vector is cut into L slices; member j of
// every node (its j-th) handles slice j, so a node's members share the folding and the
// network. Slice j runs along the nodes in member order: node 0's member j folds its node's
// operands (shared memory) in member order; each next node's member j receives that prefix
// chunk by chunk (deposits into its dest, bit c of its chain_in per chunk) and folds its own
// node's operands on top of each chunk as it comes, while the previous node still sends the
// next. The last node's member j deposits each result chunk into the other nodes' members j
// (chain_out), and every member j copies slice j into its node mates' dests (shared memory,
// counted on push_arrived). The additions are the member-order fold's, bit for bit. One
// sync; each slice crosses the network N-1 times along the chain and N-1 times back, split
// over the node's members. Nobody reads another member's buffers once its last chunk went:
// no closing sync. Returns false for other layouts, groups without the words, or a dest
// that overlaps the source without being it.
static bool reduce_slices(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  Runtime::Impl* rt = g.rt();
  const int me = g.me();
  Runs runs;
  const size_t bytes = n * es;
  if (!equal_runs(g, &runs) || (src != dest && cp(src) < cp(dest) + bytes && cp(dest) < cp(src) + bytes)) return false;
  WaitWord* in = g.chain_word(me, false);
  WaitWord* out = g.chain_word(me, true);
  uint32_t* total = g.push_owed();
  const std::vector<int>& first = runs.first;
  const int nodes = runs.nodes, L = runs.L, node = runs.node, j = runs.j;
  auto member = [&](int k, int pos) { return runs.member(k, pos); };
  const size_t base = n / size_t(L), extra = n % size_t(L);
  auto len = [&](int s) { return base + (size_t(s) < extra ? 1 : 0); };  // elements of slice s
  auto off = [&](int s) { return size_t(s) * base + std::min(size_t(s), extra); };
  auto chunk = [&](int s) {  // elements per chunk of slice s
    const size_t min = std::max<size_t>(1, kChainChunkMin / es);
    return std::max(min, (len(s) + 31) / 32);
  };
  auto chunks = [&](int s) { return int((len(s) + chunk(s) - 1) / chunk(s)); };
  // The prefix lands on this member's dest slice: in place, its own operand goes aside first.
  std::vector<char> own;
  if (src == dest && node > 0) own.assign(cp(src) + off(j) * es, cp(src) + (off(j) + len(j)) * es);
  uint32_t owed = 0;  // the mates' slices' chunks, copied into this dest
  for (int s = 0; s < L; ++s)
    if (s != j) owed += uint32_t(chunks(s));
  *total += owed;
  const uint32_t want = *total;

  g.sync();  // every source is ready and every dest free
  const ReduceKernels& kern = fn->isa[rt->reduce_isa_];
  char* d = mp(dest) + off(j) * es;
  const size_t ce = chunk(j);
  const int nc = chunks(j);
  auto span = [&](int c) { return std::min(ce, len(j) - size_t(c) * ce); };
  auto operand = [&](int i, int c) {  // member i's (this node's) operand, chunk c of slice j
    if (i == me && !own.empty()) return cp(own.data()) + size_t(c) * ce * es;
    return (i == me ? cp(src) : g.at(cp(src), i)) + (off(j) + size_t(c) * ce) * es;
  };
  auto bit = [](WaitWord* w, int c) {
    return [w, c] { return (w->v.load(std::memory_order_acquire) >> c & 1u) != 0; };
  };
  auto deposit = [&](int to, int c, bool result) {  // chunk c of my dest slice into member `to`'s
    const UcxSeg seg{g.at(d, to) + size_t(c) * ce * es, d + size_t(c) * ce * es, span(c) * es};
    rt->ucx_->deposit(&seg, 1, &g.chain_word(to, result)->v, 1u << c, g.world_pe(to));
  };
  auto to_mates = [&](int c) {
    for (int pos = 0; pos < L; ++pos) {
      const int i = member(node, pos);
      if (i == me) continue;
      std::memcpy(g.at(d, i) + size_t(c) * ce * es, d + size_t(c) * ce * es, span(c) * es);
      Runtime::Impl::add_word(g.push_word(i), 1);
    }
  };
  const int lo = first[size_t(node)], hi = first[size_t(node) + 1];
  for (int c = 0; c < nc; ++c) {
    char* dc = d + size_t(c) * ce * es;
    if (node == 0) {
      if (L == 1) move_local(dc, operand(lo, c), span(c) * es);
      else kern.combine(dc, operand(lo, c), operand(lo + 1, c), span(c));
      for (int i = lo + 2; i < hi; ++i) kern.acc(dc, operand(i, c), span(c));
    } else {
      rt->net_wait(bit(in, c), g.world_pe(member(node - 1, j)), "collective");
      for (int i = lo; i < hi; ++i) kern.acc(dc, operand(i, c), span(c));
    }
    if (node + 1 < nodes) {
      deposit(member(node + 1, j), c, false);
    } else {
      for (int k = 0; k + 1 < nodes; ++k) deposit(member(k, j), c, true);
      to_mates(c);
    }
  }
  if (node + 1 < nodes) {
    for (int c = 0; c < nc; ++c) {
      rt->net_wait(bit(out, c), g.world_pe(member(nodes - 1, j)), "collective");
      to_mates(c);
    }
  }
  WaitWord* mine = g.push_word(me);
  rt->net_wait([&] { return int32_t(mine->v.load(std::memory_order_acquire) - want) >= 0; },
               g.world_pe(member(node, (j + 1) % L)), "collective");
  in->v.store(0, std::memory_order_relaxed);  // the next reduction's chunks come after its sync
  out->v.store(0, std::memory_order_relaxed);
  return true;
}

// Large broadcasts where the nodes hold equal runs of L consecutive members. After one
// sync (every dest is free), the root deposits slice j of its source into member j of every
// other node, chunk by chunk (60 KiB and up, bit c of that member's chain_in per chunk), and
// copies the whole source into its own node mates' dests; member j of another node copies
// each chunk of slice j, as it arrives, into its node mates' dests (shared memory, counted
// on push_arrived). The data crosses the network once per other node, and a node's members
// share the forwarding. No closing sync: nobody reads another member's buffers once its
// chunks went. Returns false for other layouts or groups without the words.
static bool broadcast_slices(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets) {
  Runtime::Impl* rt = g.rt();
  const int me = g.me();
  Runs runs;
  if (!equal_runs(g, &runs)) return false;
  const int L = runs.L, nodes = runs.nodes, node = runs.node, j = runs.j;
  int rnode = 0;
  while (root >= runs.first[size_t(rnode) + 1]) ++rnode;
  const size_t base = bytes / size_t(L), extra = bytes % size_t(L);
  auto len = [&](int s) { return base + (size_t(s) < extra ? 1 : 0); };
  auto off = [&](int s) { return size_t(s) * base + std::min(size_t(s), extra); };
  auto chunk = [&](int s) { return std::max(kChainChunkMin, (len(s) + 31) / 32); };
  auto chunks = [&](int s) { return int((len(s) + chunk(s) - 1) / chunk(s)); };
  auto at = [&](int s, int c) { return off(s) + size_t(c) * chunk(s); };  // chunk c of slice s
  auto span = [&](int s, int c) { return std::min(chunk(s), len(s) - size_t(c) * chunk(s)); };
  uint32_t owed = 0;  // the chunks copied into this dest by a member of this node
  if (me != root)
    for (int s = 0; s < L; ++s)
      if (node == rnode || s != j) owed += uint32_t(chunks(s));
  uint32_t* total = g.push_owed();
  *total += owed;
  const uint32_t want = *total;
  WaitWord* in = g.chain_word(me, false);
  auto to_mates = [&](const char* from, int s, int c) {  // chunk c of slice s, from `from`'s vector
    for (int pos = 0; pos < L; ++pos) {
      const int i = runs.member(node, pos);
      if (i == me || i == root) continue;
      std::memcpy(g.at(mp(dest), i) + at(s, c), from + at(s, c), span(s, c));
      Runtime::Impl::add_word(g.push_word(i), 1);
    }
  };

  g.sync();  // every dest is free
  if (me == root) {
    int most = 0;
    for (int s = 0; s < L; ++s) most = std::max(most, chunks(s));
    for (int c = 0; c < most; ++c)  // chunk c of every slice, then the next
      for (int k = 0; k < nodes; ++k)
        for (int s = 0; k != rnode && s < L; ++s) {
          if (c >= chunks(s)) continue;
          const int to = runs.member(k, s);
          const UcxSeg seg{g.at(mp(dest), to) + at(s, c), cp(src) + at(s, c), span(s, c)};
          rt->ucx_->deposit(&seg, 1, &g.chain_word(to, false)->v, 1u << c, g.world_pe(to));
        }
    for (int s = 0; s < L; ++s)
      for (int c = 0; c < chunks(s); ++c) to_mates(cp(src), s, c);
    if (root_gets) move_local(dest, src, bytes);
    return true;
  }
  if (node != rnode) {
    for (int c = 0; c < chunks(j); ++c) {
      rt->net_wait([&] { return (in->v.load(std::memory_order_acquire) >> c & 1u) != 0; }, g.world_pe(root),
                   "broadcast");
      to_mates(cp(dest), j, c);
    }
    in->v.store(0, std::memory_order_relaxed);  // the next one's chunks come after its sync
  }
  WaitWord* mine = g.push_word(me);
  rt->net_wait([&] { return int32_t(mine->v.load(std::memory_order_acquire) - want) >= 0; },
               g.world_pe(node == rnode ? root : runs.member(node, (j + 1) % L)), "broadcast");
  return true;
}

// Large fcollects where the nodes hold equal runs of L consecutive members. After one sync,
// each member copies its block into its node mates' dests (shared memory) and deposits it
// into member j of every other node (j: its own place on its node; bit k of that member's
// chain_in for a block from node k), which copies each block, as it arrives, into its node
// mates' dests (counted on push_arrived). Each block crosses the network once per other
// node, and a node's members share the sending and the forwarding. No closing sync.
// Returns false for other layouts, more than 32 nodes or groups without the words.
static bool fcollect_slices(Group& g, void* dest, const void* src, size_t bytes) {
  Runtime::Impl* rt = g.rt();
  const int me = g.me();
  Runs runs;
  if (!equal_runs(g, &runs) || runs.nodes > 32) return false;
  const int L = runs.L, nodes = runs.nodes, node = runs.node, j = runs.j;
  uint32_t* total = g.push_owed();
  *total += uint32_t(L - 1) * uint32_t(nodes);  // every node's blocks of the other places here
  const uint32_t want = *total;
  WaitWord* in = g.chain_word(me, false);
  auto to_mates = [&](const char* from, int i) {  // member i's block, from `from`
    for (int pos = 0; pos < L; ++pos) {
      const int m = runs.member(node, pos);
      if (m == me) continue;
      std::memcpy(g.at(mp(dest), m) + size_t(i) * bytes, from, bytes);
      Runtime::Impl::add_word(g.push_word(m), 1);
    }
  };

  g.sync();  // every dest is free
  for (int k = 0; k < nodes; ++k) {
    if (k == node) continue;
    const int to = runs.member(k, j);
    const UcxSeg seg{g.at(mp(dest), to) + size_t(me) * bytes, cp(src), bytes};
    rt->ucx_->deposit(&seg, 1, &g.chain_word(to, false)->v, 1u << node, g.world_pe(to));
  }
  to_mates(cp(src), me);
  move_local(mp(dest) + size_t(me) * bytes, src, bytes);
  for (int k = 0; k < nodes; ++k) {
    if (k == node) continue;
    const int from = runs.member(k, j);
    rt->net_wait([&] { return (in->v.load(std::memory_order_acquire) >> k & 1u) != 0; }, g.world_pe(from),
                 "collective");
    to_mates(mp(dest) + size_t(from) * bytes, from);
  }
  in->v.store(0, std::memory_order_relaxed);  // the next one's blocks come after its sync
  WaitWord* mine = g.push_word(me);
  rt->net_wait([&] { return int32_t(mine->v.load(std::memory_order_acquire) - want) >= 0; },
               g.world_pe(runs.member(node, (j + 1) % L)), "collective");
  return true;
}

// Reductions of two members (on two nodes): each deposits its whole operand into the
// other's dest in chunks (a bit per chunk on the receiver's chain_in) and folds the
// two in member order as the chunks arrive: one sync and one transfer each way at once,
// the same bits on both. In place, the operand is copied aside first (the other's lands
// on it). Returns false for other groups or a dest that overlaps the source without
// being it.
static bool reduce_pair(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  Runtime::Impl* rt = g.rt();
  const int me = g.me(), other = 1 - me;
  WaitWord* in = g.chain_word(me, false);
  const size_t bytes = n * es;
  if (g.size() != 2 || in == nullptr || !rt->off_node(g.world_pe(other))) return false;
  if (src != dest && cp(src) < cp(dest) + bytes && cp(dest) < cp(src) + bytes) return false;
  const size_t ce = std::max(std::max<size_t>(1, kChainChunkMin / es), (n + 31) / 32);
  const int nc = int((n + ce - 1) / ce);
  auto span = [&](int c) { return std::min(ce, n - size_t(c) * ce); };
  std::vector<char> own;
  if (src == dest) own.assign(cp(src), cp(src) + bytes);
  const char* mine = own.empty() ? cp(src) : own.data();
  g.sync();  // the other's dest is free
  char* theirs = g.at(mp(dest), other);
  for (int c = 0; c < nc; ++c) {
    const UcxSeg seg{theirs + size_t(c) * ce * es, mine + size_t(c) * ce * es, span(c) * es};
    rt->ucx_->deposit(&seg, 1, &g.chain_word(other, false)->v, 1u << c, g.world_pe(other));
  }
  const ReduceKernels& kern = fn->isa[rt->reduce_isa_];
  for (int c = 0; c < nc; ++c) {
    rt->net_wait([&] { return (in->v.load(std::memory_order_acquire) >> c & 1u) != 0; }, g.world_pe(other),
                 "collective");
    char* d = mp(dest) + size_t(c) * ce * es;  // holds the other's chunk
    const char* m = mine + size_t(c) * ce * es;
    if (me == 0) kern.combine(d, m, d, span(c));
    else kern.combine(d, d, m, span(c));
  }
  in->v.store(0, std::memory_order_relaxed);  // the next reduction's chunks come after its sync
  return true;
}

// Middle-sized reductions pushed (push above): a reduce-scatter, then an allgather, each
// a sync and one message per pair. Member j owns slice j of the vector (s_j elements at o_j);
// every other member pushes its operand's slice j into j's dest, which holds the n-1 of
// them (slot of member i: i, or i-1 past j); j folds operands 0..n-1 in member order (the
// same bits on every member) into a private slice, and after a sync (every member has
// folded: dests are free again) pushes it into every member's dest at o_j. Where dest and
// source overlap the operand is first copied aside (others write this dest after the
// first sync). Returns false where the slots do not fit in a dest or the group has no
// arrival words.
static bool reduce_push(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  const int size = g.size(), me = g.me();
  const size_t base = n / size_t(size), extra = n % size_t(size);
  auto len = [&](int j) { return base + (size_t(j) < extra ? 1 : 0); };
  auto off = [&](int j) { return size_t(j) * base + std::min(size_t(j), extra); };
  if ((base + (extra ? 1 : 0)) * size_t(size - 1) > n || g.push_word(me) == nullptr) return false;
  const size_t bytes = n * es;
  std::vector<char> aside;
  const char* mine = cp(src);
  if (cp(src) < cp(dest) + bytes && cp(dest) < cp(src) + bytes) {
    aside.assign(mine, mine + bytes);
    mine = aside.data();
  }
  if (!push(
          g, dest, mine,
          [&](int j) { return Piece{size_t(me < j ? me : me - 1) * len(j) * es, off(j) * es, len(j) * es, me}; },
          uint32_t(size - 1)))
    return false;
  const size_t sl = len(me);
  std::vector<char> r(sl * es);
  auto operand = [&](int i) { return i == me ? mine + off(me) * es : cp(dest) + size_t(i < me ? i : i - 1) * sl * es; };
  const ReduceKernels& k = fn->isa[g.rt()->reduce_isa_];
  if (sl) {  // member order, as fold()
    k.combine(r.data(), operand(0), operand(1), sl);
    for (int i = 2; i < size; ++i) k.acc(r.data(), operand(i), sl);
  }
  push(g, dest, r.data(), [&](int) { return Piece{off(me) * es, 0, sl * es, me}; }, uint32_t(size - 1));
  move_local(mp(dest) + off(me) * es, r.data(), sl * es);
  return true;
}

void reduce(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  if (n == 0) return;
  const int size = g.size();
  const size_t bytes = n * es;
  // Hierarchical and pipelined (reduce_slices) where the nodes hold equal runs: from 8 KiB
  // where a node holds several members; with one member per node its two serial transfers
  // beat every member pulling from 256 KiB.
  // Two members: past one sync's scratch, each sends its operand to the other.
  if (size == 2 && bytes * 2 > g.scratch_bytes() && reduce_pair(g, dest, src, n, es, fn)) return;
  const bool shared = nodes_shared(g);
  if (bytes >= (shared ? kSlicesBytes : kSlicesAloneBytes) && reduce_slices(g, dest, src, n, es, fn)) return;
  if (n * es * size_t(g.size()) <= g.scratch_bytes() * kInSyncPieces) {
    const size_t per = g.scratch_bytes() / size_t(g.size()) / es;  // elements per piece
    if (per > 0 && reduce_in_sync(g, dest, src, std::min(per, n), es, fn)) {  // false for none or for all
      for (size_t at = per; at < n; at += per)
        reduce_in_sync(g, mp(dest) + at * es, cp(src) + at * es, std::min(per, n - at), es, fn);
      return;
    }
  }
  if ((bytes < kHierBytes || !shared) && bytes / size_t(size) <= kPushMaxPart && reduce_push(g, dest, src, n, es, fn))
    return;
  if (bytes >= kHierBytes && shared && reduce_chain(g, dest, src, n, es, fn)) return;  // uneven nodes
  // Every member pulls every operand.
  std::vector<char> all(bytes * size_t(size)), out(bytes);
  g.sync();
  for (int i = 0; i < size; ++i) pull(g, all.data() + size_t(i) * bytes, src, bytes, i);
  done(g);
  fold(g, out.data(), all.data(), size - 1, n, es, fn);
  g.sync();  // in place: every member has read my source
  std::memcpy(dest, out.data(), bytes);
}

void scan(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn, bool inclusive) {
  if (n == 0) return;
  const int me = g.me();
  const int last = inclusive ? me : me - 1;
  const size_t bytes = n * es;
  std::vector<char> all(bytes * size_t(last + 1 > 0 ? last + 1 : 1)), out(bytes);
  g.sync();
  for (int i = 0; i <= last; ++i) pull(g, all.data() + size_t(i) * bytes, src, bytes, i);
  done(g);
  if (last >= 0) fold(g, out.data(), all.data(), last, n, es, fn);
  g.sync();
  if (last >= 0) std::memcpy(dest, out.data(), bytes);
  else std::memset(dest, 0, bytes);
}

}  // namespace symmem::coll::net
