// Large collectives across nodes where each node holds a run of consecutive members (the
// usual block layout): the reduction chained over the nodes in member order, the sliced and
// pipelined reduction, broadcast and fcollect (each node's members share the transfers
// between nodes), the two-member exchange, and reduce() and scan(), which choose among
// them and the general paths. Operands combine in member order, bit for bit as on one node.
#include "coll/coll_net.hpp"

namespace symmem::coll::net {

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
bool broadcast_slices(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets) {
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
bool fcollect_slices(Group& g, void* dest, const void* src, size_t bytes) {
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
