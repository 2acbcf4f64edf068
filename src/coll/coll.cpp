// Collective algorithms for PEs that load and store each other's memory directly.
//
// Two shapes, chosen per call from the message size and the group's scratch:
//  - staged (small): each member copies its contribution into its own scratch slot, the
//    group synchronises once, and every member reads what it needs from its peers'
//    scratch. The caller's source is free again before the sync, so no second sync is
//    needed; scratch parity alternates with the sync epoch (a member refills a parity only
//    after the next sync, which its peers enter only once done reading it).
//  - direct (large): sync (every source is ready), every member copies straight out of its
//    peers' source buffers into its own dest (one memcpy per peer block, bandwidth-bound),
//    sync (nobody still reads my source). Reductions: member i reduces slice i from every
//    source (in PE order) and stores the result into every member's dest, then sync.
// Reductions and scans always combine operands in member order 0, 1, ..., n-1, so every
// member of every run computes the same bits whichever shape ran.
#include "coll/coll.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "common/wait.hpp"

namespace symmem::coll {
namespace {

constexpr size_t kChunkBytes = 4096;  // reduced at a time in an L1-resident buffer
constexpr size_t kPushChunkBytes = 16384;  // pushed at a time by fcollect, L1-resident

// The most bytes a member stages (its contribution, or alltoall's whole source). Staging
// saves a sync and costs a copy into scratch, whose lines the peers then pull from this
// PE's cache, where the direct shape reads the sources in place. With a core per PE a sync
// is a cache-line transfer, and staging loses from about 1-2 KiB at 2 PEs; when PEs
// outnumber cores every sync costs a context switch and the whole scratch pays.
// Reductions and scans stage less: staged, every member folds the whole vector; direct,
// a slice each.
constexpr size_t kStagedMaxOwnCores = 1024;
constexpr size_t kStagedReduceMaxOwnCores = 512;
size_t staged_max(const Group& g, size_t own_cores_max = kStagedMaxOwnCores) {
  return g.rt()->central_sync_ ? g.scratch_bytes() : std::min(g.scratch_bytes(), own_cores_max);
}

// Whether a collective whose members each write `total` bytes into their buffers streams
// them past the caches: when what the whole group writes reaches shm::stream_copy_min
// (half the last-level cache by default, the RMA threshold), the dest lines would be
// evicted before anyone reads them and would evict the sources still to be read (the
// group's members share the node's last-level cache).
bool streams(const Group& g, size_t total) { return total * size_t(g.size()) >= shm::stream_copy_min; }

// One block of a direct (large) collective; `total`: what the whole call writes here.
void copy_block(const Group& g, void* d, const void* s, size_t bytes, size_t total) {
  if (streams(g, total)) shm::stream_copy(d, s, bytes);
  else std::memcpy(d, s, bytes);
}

// A finished chunk of a large reduction, out of the L1 buffer; streamed chunks are ordered
// once, after the last (shm::fence before the closing sync).
void copy_out(char* d, const char* s, size_t bytes, bool stream) {
  if (stream) shm::stream_stores(d, s, bytes);
  else std::memcpy(d, s, bytes);
}

// The streamed large reduction writes each finished line into every member's dest in one
// pass (ReduceKernels::combine_stream) when the group is this small (a write stream per
// member: more would crowd the CPU's write-combining buffers) and dest has the same offset
// in a 64-byte line in every member's mapping (symmetric memory has; `head`: the elements
// before the first whole line of every chunk). Otherwise each chunk is reduced into an L1
// buffer and copied out to one member after another.
constexpr int kMaxFusedDests = 4;

const char* cp(const void* p) { return static_cast<const char*>(p); }
char* mp(void* p) { return static_cast<char*>(p); }

void move_local(void* dest, const void* src, size_t bytes) {
  if (dest != src && bytes) std::memmove(dest, src, bytes);
}

bool fuses(const Group& g, void* dest, size_t es, size_t* head) {
  if (g.size() > kMaxFusedDests || 64 % es != 0) return false;
  const uintptr_t off = reinterpret_cast<uintptr_t>(g.at(dest, 0)) & 63;
  if (off % es != 0) return false;
  for (int i = 1; i < g.size(); ++i)
    if ((reinterpret_cast<uintptr_t>(g.at(dest, i)) & 63) != off) return false;
  *head = (64 - off) % 64 / es;
  return true;
}

// Member i's slice of n elements, in whole cache lines where the element size allows.
void slice(size_t n, size_t es, int parts, int i, size_t* lo, size_t* hi) {
  size_t line = es < 64 && 64 % es == 0 ? 64 / es : 1;
  size_t q = (n + size_t(parts) - 1) / size_t(parts);
  q = (q + line - 1) / line * line;
  *lo = std::min(n, q * size_t(i));
  *hi = std::min(n, *lo + q);
}

// out[0..m) = x_0 OP x_1 OP ... OP x_last, operand i at operand(i), in that order; out
// overlaps no operand. The first two are combined in one pass (no copy of x_0 first).
template <class Operand>
void fold(void* out, int last, size_t m, const ReduceKernels& k, size_t es, Operand operand) {
  if (last == 0) return (void)std::memcpy(out, operand(0), m * es);
  k.combine(out, operand(0), operand(1), m);
  for (int i = 2; i <= last; ++i) k.acc(out, operand(i), m);
}

// The kernels of `fn` for the instruction set the runtime chose at init.
const ReduceKernels& kernels(const Group& g, ReduceFn fn) { return fn->isa[g.rt()->reduce_isa_]; }

// out[lo..hi) = src_0 OP src_1 OP ... OP src_last over [lo, hi) elements, read from the
// members' buffers at symmetric address `src`. `out` may be any member's source (in place).
void reduce_range(Group& g, void* out, const void* src, size_t lo, size_t hi, size_t es, ReduceFn fn, int last) {
  const ReduceKernels& k = kernels(g, fn);
  alignas(64) char tmp[kChunkBytes];
  size_t step = std::max<size_t>(1, kChunkBytes / es);
  for (size_t a = lo; a < hi; a += step) {
    size_t m = std::min(step, hi - a);
    fold(tmp, last, m, k, es, [&](int i) { return cp(g.at(src, i)) + a * es; });
    std::memcpy(mp(out) + a * es, tmp, m * es);
  }
}

// The payload of a reduce line: the bytes of its line after the word and the sleeper count.
static_assert(offsetof(WaitWord, sleepers) + sizeof(WaitWord::sleepers) == 8);
char* payload(WaitWord* w) { return reinterpret_cast<char*>(w) + 8; }

// A reduction of at most reduce_line_bytes() with a core per member: every member stores
// its operand into its line of every other member's (payload, then the call number; one
// line carries both) and folds the lines it receives. At 2 members that is one line
// transfer each way, at once, where the staged shape moves the member's scratch line, the
// sync's flag both ways and the peer's scratch line one after the other.
void reduce_lines(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  const int size = g.size(), me = g.me();
  alignas(64) char own[64];  // src may be dest, which the fold writes
  std::memcpy(own, src, n * es);
  const uint32_t k = g.next_reduce_seq();
  for (int j = 1; j < size; ++j) {
    WaitWord* w = g.reduce_line((me + j) % size, me, k);
    std::memcpy(payload(w), own, n * es);
    Runtime::Impl::notify(w, k);  // after the payload (x86 keeps stores in order; a seq_cst store)
  }
  Runtime::Impl* rt = g.rt();
  for (int j = 1; j < size; ++j) rt->wait_word_ge(g.reduce_line(me, (me + j) % size, k), k);
  fold(dest, size - 1, n, kernels(g, fn), es, [&](int i) { return i == me ? own : payload(g.reduce_line(me, i, k)); });
}

}  // namespace

void broadcast(Group& g, void* dest, const void* src, size_t bytes, int root, bool root_gets) {
  SYMMEM_COLL_SCOPE(g, kBroadcast, coll_args(root, bytes, 1, dest, src));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::broadcast(g, dest, src, bytes, root, root_gets);
  const int me = g.me();
  if (bytes == 0) return;
  if (g.size() == 1) {
    if (root_gets) move_local(dest, src, bytes);
    return;
  }
  if (bytes <= g.mailbox_bytes()) {
    // Pushed through the members' mailboxes, no team sync (see TeamSlot::bcast_*).
    Runtime::Impl* rt = g.rt();
    const uint32_t k = g.next_mailbox_seq();
    if (me == root) {
      for (int j = 1; j < g.size(); ++j) {
        Group::Mailbox m = g.mailbox((root + j) % g.size(), k);
        rt->wait_word_ge(m.done, k - g.mailbox_depth());  // that member has emptied this box
        std::memcpy(m.box, src, bytes);
        Runtime::Impl::notify(m.ready, k);
      }
      // every member's bcast_done counts every small broadcast, those it was the root of too
      Runtime::Impl::notify(g.mailbox(me, k).done, k);
      if (root_gets) move_local(dest, src, bytes);
    } else {
      Group::Mailbox m = g.mailbox(me, k);
      rt->wait_word_ge(m.ready, k);
      std::memcpy(dest, m.box, bytes);
      Runtime::Impl::notify(m.done, k);
    }
    return;
  }
  if (bytes <= staged_max(g)) {
    unsigned par = g.next_parity();
    if (me == root) std::memcpy(g.scratch(me, par), src, bytes);
    g.sync();
    if (me != root) std::memcpy(dest, g.scratch(root, par), bytes);
    else if (root_gets) move_local(dest, src, bytes);
    return;
  }
  // Direct: every member pulls from the root's source. When the root need not fill its own
  // dest (the active-set form) it would idle, so it pushes the first 1/n of every member's
  // dest itself while the members pull the rest: each of the n PEs copies (n-1)/n of SIZE,
  // not n-1 of them SIZE each.
  g.sync();
  const size_t pushed = root_gets ? 0 : bytes / size_t(g.size()) / 64 * 64;
  if (me == root) {
    if (root_gets) move_local(dest, src, bytes);
    else if (pushed)
      for (int j = 1; j < g.size(); ++j) shm::copy(g.at(dest, (root + j) % g.size()), src, pushed);
  } else {
    shm::copy(mp(dest) + pushed, cp(g.at(src, root)) + pushed, bytes - pushed);
  }
  g.sync();
}

void fcollect(Group& g, void* dest, const void* src, size_t bytes) {
  SYMMEM_COLL_SCOPE(g, kFcollect, coll_args(-1, bytes, 1, dest, src));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::fcollect(g, dest, src, bytes);
  const int n = g.size(), me = g.me();
  if (bytes == 0) return;
  if (n == 1) return move_local(dest, src, bytes);
  if (bytes <= staged_max(g)) {
    unsigned par = g.next_parity();
    std::memcpy(g.scratch(me, par), src, bytes);
    g.sync();
    for (int k = 0; k < n; ++k) {
      int i = (me + k) % n;
      std::memcpy(mp(dest) + size_t(i) * bytes, i == me ? src : g.scratch(i, par), bytes);
    }
    return;
  }
  // Direct: every member pushes its own block into every member's dest, a chunk at a time,
  // so that the chunk is read from memory once and from L1 for the other n - 1 copies
  // (pulling every peer's block reads n blocks to write n). The chunk is 16 KiB, half of
  // L1: 4 KiB chunks restart the copy (and the prefetchers' stream) every page. The first
  // sync is not for the dests (the standard has them ready on entry) but for the callers'
  // earlier collectives: no member still reads or writes a buffer of a previous call.
  g.sync();
  const bool stream = streams(g, bytes * size_t(n));
  for (size_t off = 0; off < bytes; off += kPushChunkBytes) {
    const size_t m = std::min(kPushChunkBytes, bytes - off);
    for (int k = 0; k < n; ++k) {
      const int j = (me + k) % n;  // members start on different peers
      copy_out(mp(g.at(dest, j)) + size_t(me) * bytes + off, cp(src) + off, m, stream);
    }
  }
  if (stream) shm::fence();
  g.sync();
}

void collect(Group& g, void* dest, const void* src, size_t bytes, const char* call) {
  SYMMEM_COLL_SCOPE(g, kCollect, coll_args(-1, bytes, 1, dest, src));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::collect(g, dest, src, bytes);
  const int n = g.size(), me = g.me();
  if (n == 1) {
    g.rt()->check_host_sym(call, dest, bytes);
    return move_local(dest, src, bytes);
  }
  const size_t sb = staged_max(g);
  auto staged = [&](uint64_t b) { return sb > 0 && b <= sb; };
  unsigned par = g.next_parity();
  uint64_t* w = g.size_word(me, par);
  __atomic_store_n(w, uint64_t(bytes), __ATOMIC_RELAXED);
  __atomic_store_n(w + 1, g.rt()->sym_canonical(src), __ATOMIC_RELAXED);
  if (staged(bytes) && bytes) std::memcpy(g.scratch(me, par), src, bytes);
  g.sync();
  bool any_direct = false;
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    uint64_t b = __atomic_load_n(g.size_word(i, par), __ATOMIC_RELAXED);
    any_direct |= !staged(b);
    total += b;
    // A member that contributes nothing may pass NULL: the source of one that contributes.
    const uint64_t s = __atomic_load_n(g.size_word(i, par) + 1, __ATOMIC_RELAXED);
    if (src == nullptr && b && s) src = g.rt()->sym_copy(s, g.rt()->rank_);
  }
  g.rt()->check_host_sym(call, dest, total);
  size_t off = 0;
  for (int i = 0; i < n; ++i) {
    uint64_t b = __atomic_load_n(g.size_word(i, par), __ATOMIC_RELAXED);
    if (b) copy_block(g, mp(dest) + off, i == me ? src : staged(b) ? g.scratch(i, par) : g.at(src, i), b, total);
    off += b;
  }
  if (any_direct) g.sync();  // the same decision on every member: all read the same sizes
  g.collect_done();
}

void alltoall(Group& g, void* dest, const void* src, size_t block) {
  SYMMEM_COLL_SCOPE(g, kAlltoall, coll_args(-1, block, 1, dest, src));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::alltoall(g, dest, src, block);
  const int n = g.size(), me = g.me();
  if (block == 0) return;
  if (n == 1) return move_local(dest, src, block);
  size_t total = block * size_t(n);
  if (total <= staged_max(g)) {
    unsigned par = g.next_parity();
    std::memcpy(g.scratch(me, par), src, total);
    g.sync();
    for (int k = 0; k < n; ++k) {
      int i = (me + k) % n;
      std::memcpy(mp(dest) + size_t(i) * block, (i == me ? cp(src) : g.scratch(i, par)) + size_t(me) * block,
                  block);
    }
    return;
  }
  g.sync();
  for (int k = 0; k < n; ++k) {
    int i = (me + k) % n;
    copy_block(g, mp(dest) + size_t(i) * block, cp(g.at(src, i)) + size_t(me) * block, block, total);
  }
  g.sync();
}

void alltoalls(Group& g, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es) {
  SYMMEM_COLL_SCOPE(g, kAlltoalls, coll_args(-1, nelems * es, es, dest, src));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::alltoalls(g, dest, src, dst, sst, nelems, es);
  const int n = g.size(), me = g.me();
  if (nelems == 0) return;
  if (n > 1) g.sync();
  for (int k = 0; k < n; ++k) {
    int i = (me + k) % n;
    const char* s = cp(g.at(src, i)) + size_t(me) * nelems * size_t(sst) * es;
    char* d = mp(dest) + size_t(i) * nelems * size_t(dst) * es;
    for (size_t e = 0; e < nelems; ++e) std::memcpy(d + e * size_t(dst) * es, s + e * size_t(sst) * es, es);
  }
  if (n > 1) g.sync();
}

void reduce(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn) {
  SYMMEM_COLL_SCOPE(g, kReduce, coll_args(-1, n * es, es, dest, src, fn->id));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::reduce(g, dest, src, n, es, fn);
  const int size = g.size(), me = g.me();
  const size_t bytes = n * es;
  if (n == 0) return;
  if (size == 1) return move_local(dest, src, bytes);
  // Lines need a core per member: with PEs sharing cores, size - 1 waits per member cost
  // more switches than the staged shape's one central sync.
  if (bytes <= g.reduce_line_bytes() && es <= 8 && !g.rt()->central_sync_)
    return reduce_lines(g, dest, src, n, es, fn);
  if (bytes <= staged_max(g, kStagedReduceMaxOwnCores)) {
    unsigned par = g.next_parity();
    std::memcpy(g.scratch(me, par), src, bytes);
    g.sync();
    // dest is read by nobody else and may be my source (already staged).
    fold(dest, size - 1, n, kernels(g, fn), es, [&](int i) { return g.scratch(i, par); });
    return;
  }
  // Reduce-scatter with the result pushed: member `me` reduces slice `me` from every
  // member's source, chunk by chunk, and stores each finished chunk into every member's
  // dest. Each member reads n/n of the data and writes n/n, like one memcpy. In place,
  // chunk c of slice `me` is read (from every source) only by me and only before I
  // overwrite it (line by line in the streamed last step).
  g.sync();
  size_t lo, hi;
  slice(n, es, size, me, &lo, &hi);
  const ReduceKernels& k = kernels(g, fn);
  alignas(64) char tmp[kChunkBytes];
  const size_t step = std::max<size_t>(1, kChunkBytes / es);
  char* outs[kMaxFusedDests];
  const bool stream = streams(g, bytes);
  size_t head = 0;  // elements before each chunk's first whole line in dest
  const bool fused = stream && fuses(g, dest, es, &head);
  for (size_t a = lo; a < hi; a += step) {
    const size_t m = std::min(step, hi - a);
    auto operand = [&](int i) { return cp(g.at(src, i)) + a * es; };
    if (stream && !fused) {
      fold(tmp, size - 1, m, k, es, operand);
      for (int j = 0; j < size; ++j) copy_out(mp(g.at(dest, (me + j) % size)) + a * es, tmp, m * es, stream);
      continue;
    }
    if (!stream) {
      // Operands 0..size-2 folded into the L1 buffer (operand 0 itself at 2 members), the
      // last combined with it straight into the next member's dest, which is then copied
      // (hot in L1) into the other dests: reads and writes overlap, where reducing into
      // the buffer and then copying it out ran them one after the other.
      const char* x = cp(tmp);
      if (size == 2) x = operand(0);
      else fold(tmp, size - 2, m, k, es, operand);
      char* first = mp(g.at(dest, (me + 1) % size)) + a * es;
      k.combine(first, x, operand(size - 1), m);
      for (int j = 2; j <= size; ++j) std::memcpy(mp(g.at(dest, (me + j) % size)) + a * es, first, m * es);
      continue;
    }
    // Operands 0..size-2 folded into the L1 buffer (or operand 0 itself at 2 members), then
    // the last one combined with it and streamed into every dest at once: whole lines with
    // combine_stream, the ragged ends through the buffer's tail with ordinary stores.
    const char* x = cp(tmp);
    if (size == 2) x = operand(0);
    else fold(tmp, size - 2, m, k, es, operand);
    const char* y = operand(size - 1);
    for (int j = 0; j < size; ++j) outs[j] = mp(g.at(dest, (me + j) % size)) + a * es;
    const size_t h = std::min(head, m);
    const size_t body = (m - h) * es / 64 * 64 / es;
    auto edge = [&](size_t from, size_t cnt) {  // elements [from, from + cnt) of the chunk
      if (cnt == 0) return;
      alignas(64) char e[64];
      k.combine(e, x + from * es, y + from * es, cnt);
      for (int j = 0; j < size; ++j) std::memcpy(outs[j] + from * es, e, cnt * es);
    };
    edge(0, h);
    if (body) {
      void* o[kMaxFusedDests];
      for (int j = 0; j < size; ++j) o[j] = outs[j] + h * es;
      k.combine_stream(o, size, x + h * es, y + h * es, body);
    }
    edge(h + body, m - h - body);
  }
  if (stream) shm::fence();
  g.sync();
}

void scan(Group& g, void* dest, const void* src, size_t n, size_t es, ReduceFn fn, bool inclusive) {
  SYMMEM_COLL_SCOPE(g, kScan, coll_args(-1, n * es, es, dest, src, fn->id));
  if (SYMMEM_UNLIKELY(!g.on_node())) return net::scan(g, dest, src, n, es, fn, inclusive);
  const int size = g.size(), me = g.me();
  const size_t bytes = n * es;
  const int last = inclusive ? me : me - 1;  // operands 0..last
  if (n == 0) return;
  if (size == 1) {
    if (inclusive) move_local(dest, src, bytes);
    else std::memset(dest, 0, bytes);
    return;
  }
  if (bytes <= staged_max(g, kStagedReduceMaxOwnCores)) {
    unsigned par = g.next_parity();
    std::memcpy(g.scratch(me, par), src, bytes);
    g.sync();
    if (last < 0) {
      std::memset(dest, 0, bytes);
      return;
    }
    fold(dest, last, n, kernels(g, fn), es, [&](int i) { return g.scratch(i, par); });
    return;
  }
  // Direct: members after me still read my source until the closing sync, so an in-place
  // scan computes into a private buffer first.
  const bool in_place = dest == src;
  std::vector<char> buf(in_place ? bytes : 0);
  void* out = in_place ? static_cast<void*>(buf.data()) : dest;
  g.sync();
  if (last >= 0) reduce_range(g, out, src, 0, n, es, fn, last);
  else if (!in_place) std::memset(dest, 0, bytes);
  g.sync();
  if (in_place) {
    if (last >= 0) std::memcpy(dest, buf.data(), bytes);
    else std::memset(dest, 0, bytes);
  }
}

// ---------------------------------------------------------------- active sets

namespace {

// Long r of a pSync array: low half counts tokens, high half counts sleepers (little-endian).
uint32_t* tokens(long* w) { return reinterpret_cast<uint32_t*>(w); }
std::atomic<uint32_t>* as_atomic(uint32_t* p) { return reinterpret_cast<std::atomic<uint32_t>*>(p); }

void post_token(long* w) {
  uint32_t* t = tokens(w);
  __atomic_fetch_add(t, 1u, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(t + 1, __ATOMIC_SEQ_CST) != 0) futex_wake_shared(as_atomic(t));
}

void take_token(Runtime::Impl* rt, long* w) {
  uint32_t* t = tokens(w);
  rt->wait_adaptive([&] { return __atomic_load_n(t, __ATOMIC_ACQUIRE) != 0; },
                    [&](Backoff& b) {
                      __atomic_fetch_add(t + 1, 1u, __ATOMIC_SEQ_CST);  // announce, then look once more
                      if (__atomic_load_n(t, __ATOMIC_SEQ_CST) == 0) b.pause_on(as_atomic(t), 0);
                      __atomic_fetch_sub(t + 1, 1u, __ATOMIC_SEQ_CST);
                    });
  __atomic_fetch_sub(t, 1u, __ATOMIC_ACQ_REL);
}

}  // namespace

// Dissemination barrier with counting tokens instead of epochs: round r posts one token to
// member me + 2^r and takes one from its own word. Tokens are consumed in the order they
// were posted, so back-to-back barriers on one pSync need no reset, and every word is back
// to SHMEM_SYNC_VALUE (0) once all members have left. When PEs outnumber cores, the
// central form below.
void PsyncGroup::sync() {
  SYMMEM_COLL_SCOPE(*this, kSync, {});
  if (SYMMEM_UNLIKELY(!on_node())) return net_sync();
  shm::fence();  // earlier non-temporal stores (large copies) are visible once peers leave
  if (size_ > 1 && rt_->central_sync_) return central_sync();
  for (int r = 0, dist = 1; dist < size_; ++r, dist <<= 1) {
    post_token(at(psync_ + r, (me_ + dist) % size_));
    take_token(rt_, psync_ + r);
  }
}

// Members on several nodes: the same token dissemination, the tokens posted through UCX to
// members of other nodes; the quiet first makes it a barrier for UCX operations too.
void PsyncGroup::net_sync() {
  Runtime::Impl* rt = rt_;
  shm::quiet();
  if (rt->ucx_) rt->ucx_quiet(true);  // as on the node: every context's operations complete
  for (int r = 0, dist = 1; dist < size_; ++r, dist <<= 1) {
    const int to = (me_ + dist) % size_;
    rt->radd32(as_atomic(tokens(at(psync_ + r, to))), 1, world_pe(to));
    uint32_t* t = tokens(psync_ + r);
    rt->net_wait([&] { return __atomic_load_n(t, __ATOMIC_ACQUIRE) != 0; }, world_pe((me_ - dist % size_ + size_) % size_),
                 "shmem_barrier (active set)");
    __atomic_fetch_sub(t, 1u, __ATOMIC_ACQ_REL);
  }
}

// PEs outnumber cores: every wait costs a context switch, and dissemination waits
// ceil(log2 n) times per sync, each on one peer that may be off its CPU. The central form
// waits once, as the team syncs do (Runtime::Impl::strided_sync, wait_release), on the
// caller's pSync: member 0's long 0 counts arrivals; the last to arrive sets it back to 0
// and posts a release token into every other member's long 1, which each takes (back to
// 0). A waiter hands its CPU over (sched_yield) while a member bound to the same CPU has
// not arrived: that member is then either elsewhere in its program or, released from the
// previous sync, not yet run (its token still untaken); each PE publishes the active set
// it waits in (MetaFixed::active_set_waiting) for the others of its CPU to read. 4 PEs on
// 2 cores: docs/collectives.md, Synchronisation.
void PsyncGroup::central_sync() {
  Runtime::Impl* rt = rt_;
  uint32_t* count = tokens(at(psync_, 0));
  uint32_t* mine = tokens(psync_ + 1);
  // Which sync: the pSync and the active set (another set may use the same pSync later).
  const uint64_t key = (reinterpret_cast<uintptr_t>(psync_) ^ (uint64_t(uint32_t(start_)) << 32) ^
                        (uint64_t(uint32_t(stride_)) << 48) ^ uint64_t(uint32_t(size_)) * 0x9e3779b97f4a7c15ull) | 1;
  std::atomic<uint64_t>& waiting = rt->meta(rt->rank_)->active_set_waiting;
  waiting.store(key, std::memory_order_relaxed);
  if (__atomic_add_fetch(count, 1u, __ATOMIC_ACQ_REL) == uint32_t(size_)) {
    __atomic_store_n(count, 0u, __ATOMIC_RELAXED);  // ordered before the posts (seq_cst RMWs)
    for (int i = 0; i < size_; ++i)
      if (i != me_) post_token(at(psync_ + 1, i));
    waiting.store(0, std::memory_order_relaxed);
    return;
  }
  auto needs_cpu = [&] {  // a member on this CPU that has not arrived at this sync
    for (int q : rt->colocated_) {
      const int d = q - start_;
      if (d < 0 || d % stride_ != 0 || d / stride_ >= size_) continue;  // not a member
      if (rt->meta(q)->active_set_waiting.load(std::memory_order_relaxed) != key) return true;
      if (__atomic_load_n(tokens(at(psync_ + 1, d / stride_)), __ATOMIC_RELAXED) != 0) return true;
    }
    return false;
  };
  auto released = [&] { return __atomic_load_n(mine, __ATOMIC_ACQUIRE) != 0; };
  if (rt->wait_handing_over(released, needs_cpu)) __atomic_fetch_sub(mine, 1u, __ATOMIC_ACQ_REL);
  else take_token(rt, psync_ + 1);
  waiting.store(0, std::memory_order_relaxed);
}

}  // namespace symmem::coll
