// Collectives of groups whose members are on several nodes. Every member pulls what it
// needs from its peers' symmetric buffers (one-sided gets: a load on the node, a UCX get
// off it, all in flight at once and completed together), between two syncs of the group
// (Runtime::Impl::net_sync / PsyncGroup::net_sync). Reductions and scans combine operands in
// member order 0, 1, ..., n-1, as the on-node algorithms do, so every member computes the
// same bits.
//
// This file: the entry points and the general paths (hierarchical pieces, pushes); the
// small collectives that travel inside one sync are in coll_net_sync.cpp, the sliced and
// chained large ones in coll_net_slices.cpp, what they share in coll_net.hpp.
#include "coll/coll_net.hpp"

namespace symmem::coll::net {

void sync(Group& g) { g.sync(); }

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

}  // namespace symmem::coll::net
