// The collective engine: type-erased algorithms (bytes, element size, reduction kernel)
// over a Group, the PEs that run one collective. Teams and active sets (pSync) are both
// Groups; they differ in how they synchronise and in whether they own scratch space.
// Algorithms and their crossovers: docs/collectives.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>

#include "coll/reduce_ops.hpp"
#include "runtime/runtime_impl.hpp"
#include "team/team.hpp"

namespace symmem::coll {

// A reduction operation on one element type (its kernels: coll/reduce_ops.hpp).
using ReduceFn = const ReduceOp*;

class Group {
 public:
  Group(Runtime::Impl* rt, int start, int stride, int size, int me)
      : rt_(rt), start_(start), stride_(stride), size_(size), me_(me),
        on_node_(rt->group_on_node(start, stride, size)) {}
  virtual ~Group() = default;
  Runtime::Impl* rt() const { return rt_; }
  int size() const { return size_; }
  int me() const { return me_; }
  int world_pe(int i) const { return start_ + i * stride_; }
  int start() const { return start_; }
  int stride() const { return stride_; }
  // Member number of world PE w (a member).
  int index_of(int w) const { return stride_ ? (w - start_) / stride_ : 0; }
  // Every member shares this node: the shared-memory algorithms below apply; otherwise
  // the cross-node ones (coll_net.cpp).
  bool on_node() const { return on_node_; }
  // `addr` (a symmetric address: heap or static data, checked by the caller) as seen in
  // group member i's copy.
  template <class T>
  T* at(T* addr, int i) const {
    return reinterpret_cast<T*>(rt_->translate("collective", addr, 0, world_pe(i)));
  }

  // Every member has arrived (no memory completion beyond the CPU's ordering).
  virtual void sync() = 0;
  // Per-member scratch of scratch_bytes() for the collective that ends with the next
  // sync(): filled by its owner before that sync, read by the others after it. Groups
  // without scratch return nullptr / 0.
  virtual size_t scratch_bytes() const { return 0; }
  virtual char* scratch(int /*i*/, unsigned /*parity*/) const { return nullptr; }
  virtual unsigned next_parity() const { return 0; }
  // Broadcast mailbox of member i for call number k (team/team.hpp TeamSlot::bcast_*);
  // groups without one return mailbox_bytes() == 0.
  struct Mailbox {
    WaitWord* ready;
    WaitWord* done;
    char* box;
  };
  virtual size_t mailbox_bytes() const { return 0; }
  virtual uint32_t next_mailbox_seq() { return 0; }
  virtual unsigned mailbox_depth() const { return 0; }
  virtual Mailbox mailbox(int /*i*/, uint32_t /*k*/) const { return {nullptr, nullptr, nullptr}; }
  // Across nodes: this PE's last reading of each member's bcast_done (a root reads another
  // node's copy only when its cached one no longer frees the box it fills).
  virtual uint32_t* mailbox_seen() { return nullptr; }
  // Across nodes: member i's arrival word for the collectives that push into the members'
  // dests (coll_net.cpp push), and the parts owed to this PE so far; nullptr: none.
  virtual WaitWord* push_word(int /*i*/) const { return nullptr; }
  virtual uint32_t* push_owed() { return nullptr; }
  // Across nodes: member i's chunk words of large reductions (TeamSlot::chain_in / out);
  // nullptr: none.
  virtual WaitWord* chain_word(int /*i*/, bool /*out*/) const { return nullptr; }
  // Small reductions without a sync: the line member `from` fills in member `to`'s slot for
  // the group's reduction number k (the word, payload after it), and the next k; groups
  // without lines return reduce_line_bytes() == 0.
  virtual size_t reduce_line_bytes() const { return 0; }
  virtual uint32_t next_reduce_seq() { return 0; }
  virtual WaitWord* reduce_line(int /*to*/, int /*from*/, uint32_t /*k*/) const { return nullptr; }
  // Two 64-bit words per member for collect: its size in bytes and its source
  // (Runtime::Impl::sym_canonical), written by their owner before the next sync, read by the
  // others after it.
  virtual uint64_t* size_word(int i, unsigned parity) const = 0;
  // Called after the last sync of a collect (active sets restore pSync).
  virtual void collect_done() {}
  // The status page's lane of this group's collectives (dfx_page.hpp): the team's slot.
  virtual int dfx_lane() const = 0;
  // The SyncState (metadata offset) and epoch counter sync() uses, for the cross-node
  // algorithms that fold data into a sync (coll_net.cpp); false: the group has none.
  virtual bool sync_words(uint64_t* /*off*/, uint32_t** /*epoch*/) const { return false; }

 protected:
  Runtime::Impl* rt_;
  int start_, stride_, size_, me_;
  bool on_node_;
};

class TeamGroup final : public Group {
 public:
  explicit TeamGroup(TeamState* t) : Group(t->rt, t->start, t->stride, t->size, t->me), t_(t) {}
  void sync() override { t_->sync(true); }
  size_t scratch_bytes() const override { return kTeamScratchBytes; }
  char* scratch(int i, unsigned parity) const override { return t_->slot_of(world_pe(i))->scratch[parity]; }
  unsigned next_parity() const override { return t_->next_parity(); }
  uint64_t* size_word(int i, unsigned parity) const override {
    return t_->slot_of(world_pe(i))->collect_size[parity];
  }
  int dfx_lane() const override { return t_->slot; }
  bool sync_words(uint64_t* off, uint32_t** epoch) const override {
    *off = t_->sync_off;
    *epoch = t_->epoch;
    return true;
  }
  size_t mailbox_bytes() const override { return kBcastBoxBytes; }
  uint32_t next_mailbox_seq() override { return ++t_->bcast_seq; }
  unsigned mailbox_depth() const override { return kBcastBoxes; }
  Mailbox mailbox(int i, uint32_t k) const override {
    TeamSlot* s = t_->slot_of(world_pe(i));
    return {&s->bcast_ready[k % kBcastBoxes], &s->bcast_done, s->bcast_box[k % kBcastBoxes]};
  }
  size_t reduce_line_bytes() const override { return size_ <= kReduceLineMembers ? kReduceLineBytes : 0; }
  uint32_t next_reduce_seq() override { return ++t_->reduce_seq; }
  WaitWord* reduce_line(int to, int from, uint32_t k) const override {
    return &t_->slot_of(world_pe(to))->reduce_line[k & 1][from];
  }
  WaitWord* push_word(int i) const override { return &t_->slot_of(world_pe(i))->push_arrived; }
  uint32_t* push_owed() override { return &t_->push_owed; }
  WaitWord* chain_word(int i, bool out) const override {
    TeamSlot* s = t_->slot_of(world_pe(i));
    return out ? &s->chain_out : &s->chain_in;
  }
  uint32_t* mailbox_seen() override {
    if (t_->bcast_seen.size() != size_t(t_->size)) t_->bcast_seen.assign(size_t(t_->size), 0);
    return t_->bcast_seen.data();
  }

 private:
  TeamState* t_;
};

// An active set of the deprecated API, synchronised through the caller's pSync array
// (SHMEM_SYNC_SIZE longs): longs 0..31 are counting-semaphore tokens of a dissemination
// barrier (low half: tokens, high half: sleepers); when PEs outnumber cores, member 0's
// long 0 counts arrivals and every member's long 1 takes its release token instead. Long
// 32-33 carry collect's size and source.
class PsyncGroup final : public Group {
 public:
  PsyncGroup(Runtime::Impl* rt, int start, int stride, int size, int me, long* psync)
      : Group(rt, start, stride, size, me), psync_(psync) {}
  void sync() override;
  uint64_t* size_word(int i, unsigned) const override { return reinterpret_cast<uint64_t*>(at(psync_ + 32, i)); }
  void collect_done() override {
    __atomic_store_n(psync_ + 32, 0L, __ATOMIC_RELAXED);
    __atomic_store_n(psync_ + 33, 0L, __ATOMIC_RELAXED);
  }
  int dfx_lane() const override { return dfx::kActiveSetLane; }

 private:
  void central_sync();  // PEs outnumber cores: one wait per sync, CPU handed over
  void net_sync();      // members on several nodes
  long* psync_;
};

// The collective `op` of `g` on this PE's status page and to the DFX tools (runtime/dfx.hpp).
inline dfx::CollArgs coll_args(int root, size_t bytes, size_t es, const void* dest, const void* src,
                               uint32_t redop = 0) {
  dfx::CollArgs a;
  a.redop = redop;
  a.root = root;
  a.bytes = bytes;
  a.elem_size = uint32_t(es);
  a.dest = dest;
  a.src = src;
  return a;
}
// (The lane first: the arguments, computed after that virtual call, need not live across it;
// lambdas make the geometry and the arguments, so that with every tool off only their root
// and size are computed.)
#define SYMMEM_COLL_SCOPE(g, op, args)                                                                               \
  const int dfx_coll_lane_ = (g).dfx_lane();                                                                        \
  ::symmem::dfx::CollScope dfx_coll_scope_(                                                                         \
      (g).rt()->dfx_, ::symmem::dfx::Op::op, dfx_coll_lane_,                                                        \
      [&]() -> ::symmem::dfx::CollGeom { return {(g).start(), (g).stride(), (g).size(), (g).me()}; },               \
      [&]() -> ::symmem::dfx::CollArgs { return args; }, ::symmem::dfx::kBriefArgs)

// ---- algorithms (every member calls with the same arguments, except collect's bytes) ----
// root_gets: the root's dest receives the data too (team form; the active-set form leaves it).
void broadcast(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
void fcollect(Group& g, void* dest, const void* src, size_t bytes);
// collect: `dest` is checked (as `call`'s, for the sum of every member's bytes) only once
// the sizes are known, so a call where every member contributes nothing is a no-op that
// may pass NULL buffers, like every other zero-length collective.
void collect(Group& g, void* dest, const void* src, size_t bytes, const char* call = "collect");
void alltoall(Group& g, void* dest, const void* src, size_t block_bytes);
// Element k of block j: source + (j*nelems + k)*sst elements -> dest + (i*nelems + k)*dst on j.
void alltoalls(Group& g, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es);
void reduce(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn);
void scan(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn, bool inclusive);

// The same collectives for groups that span nodes (coll_net.cpp): members on this node
// use shared memory, one leader per node talks to the other nodes' leaders over UCX.
namespace net {
void sync(Group& g);
void broadcast(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets);
void fcollect(Group& g, void* dest, const void* src, size_t bytes);
void collect(Group& g, void* dest, const void* src, size_t bytes);
void alltoall(Group& g, void* dest, const void* src, size_t block_bytes);
void alltoalls(Group& g, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es);
void reduce(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn);
void scan(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn, bool inclusive);
}  // namespace net

}  // namespace symmem::coll
