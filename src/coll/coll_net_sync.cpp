// Small collectives across nodes that travel inside one hierarchical sync (in_sync): the
// members' contributions ride the sync's own rounds between node leaders, so a small
// reduction, fcollect or alltoall costs one sync's latency; and the broadcast mailbox, whose
// root fills each other node's leader's box over UCX without any sync. Each returns false
// when the group or the sizes do not fit, and the caller (coll_net.cpp) takes the general path.
#include "coll/coll_net.hpp"

namespace symmem::coll::net {

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

}  // namespace symmem::coll::net
