// The C++ API's teams and collectives (symmem/team.hpp): the typed templates of the public
// header arrive here as (element counts, element size, representation, op); each call is
// a check and one call into the team registry or the type-erased engine (src/coll), as
// in the C API. Bad arguments throw (a Runtime's Impl is in ErrorMode::kThrow).
#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstring>
#include <string_view>
#include <vector>

#include "coll/coll.hpp"
#include "coll/reduce_ops.hpp"
#include "symmem/symmem.hpp"
#include "team/team.hpp"

namespace symmem {
namespace {

using Impl = Runtime::Impl;
constexpr Errc kBad = Errc::kInvalidArgument;

// The reduction kernels of the C API's table (every op x type entry), by representation
// and operation: `long` and `long long` share a row, as their kernels are the same code.
constexpr ReduceOp op_named(std::string_view s) {
  return s == "sum" ? ReduceOp::kSum : s == "prod" ? ReduceOp::kProd : s == "min" ? ReduceOp::kMin
       : s == "max" ? ReduceOp::kMax : s == "and" ? ReduceOp::kAnd : s == "or" ? ReduceOp::kOr : ReduceOp::kXor;
}
using KernelTable = std::array<std::array<const coll::ReduceOp*, 7>, size_t(detail::Num::kCount)>;
constexpr KernelTable make_kernels() {
  struct Entry {
    detail::Num num;
    ReduceOp op;
    const coll::ReduceOp* fn;
  };
  const Entry entries[] = {
#define SYMMEM_KERNEL(T, N, OP) {detail::num_of<typename detail::CxxOf<T>::type>(), op_named(#OP), &coll::op_##OP<T>},
      SHMEM_REDUCE_TABLE(SYMMEM_KERNEL)
#undef SYMMEM_KERNEL
  };
  KernelTable t{};
  for (const Entry& e : entries) t[size_t(e.num)][size_t(e.op)] = e.fn;
  return t;
}
constexpr KernelTable kKernels = make_kernels();

const char* op_name(ReduceOp op) {
  static const char* const names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  return names[int(op)];
}

// The team's runtime, or kState for an invalid team.
Impl* need(const TeamState* s, const char* call) {
  if (!s)
    throw Error(Errc::kState, std::string(call) +
                                  ": the team is invalid (this PE is not a member, or it was destroyed or moved from)");
  return s->rt;
}

// `n` elements of `es` bytes at `p` lie in this PE's symmetric memory (throws otherwise).
void check_sym(Impl* r, const char* call, const void* p, size_t n, size_t es) {
  r->check_host_sym(call, p, n * es);
}

void check_room(Impl* r, const char* call, size_t dest_n, size_t need) {
  if (dest_n < need) r->fail(kBad, call, "dest holds %zu elements, the result needs %zu", dest_n, need);
}

}  // namespace

// ---------------------------------------------------------------- Runtime

Team Runtime::team_world() { return Team(this, teams(*impl_).world(), false); }
Team Runtime::team_shared() { return Team(this, teams(*impl_).shared(), false); }

// ---------------------------------------------------------------- Team

Team& Team::operator=(Team&& o) noexcept {
  if (this != &o) {
    drop();
    rt_ = o.rt_;
    s_ = o.s_;
    owned_ = o.owned_;
    o.release();
  }
  return *this;
}

Team::~Team() { drop(); }

void Team::drop() noexcept {
  if (owned_ && s_) teams(*s_->rt).destroy(s_);  // a sync and a local free: does not throw
  release();
}

void Team::destroy() {
  if (s_ && !owned_) throw Error(Errc::kInvalidArgument, "Team::destroy: the world and shared teams are not destroyed");
  drop();
}

int Team::my_pe() const { return s_ ? s_->me : -1; }
int Team::n_pes() const { return s_ ? s_->size : -1; }
int Team::index() const { return s_ ? s_->slot : -1; }

int Team::translate_pe(int pe, const Team& other) const {
  if (!s_ || !other.s_ || s_->rt != other.s_->rt || pe < 0 || pe >= s_->size) return -1;
  return other.s_->index_of(s_->world_pe(pe));
}

void* Team::ptr(const void* addr, int pe) const {
  if (!s_ || pe < 0 || pe >= s_->size) return nullptr;
  return s_->rt->ptr(addr, s_->world_pe(pe));
}

void Team::sync() {
  need(s_, "Team::sync");
  s_->sync();
}

void Team::barrier() {
  need(s_, "Team::barrier");
  s_->sync();  // the quiet is implied (see Runtime::Impl::barrier_all)
}

Team Team::split_strided(int start, int stride, int size) {
  static const char* call = "Team::split_strided";
  Impl* r = need(s_, call);
  char why[256];
  if (!valid_triplet(s_->size, start, stride, size, why, sizeof(why)))
    r->fail(kBad, call, "invalid triplet (start %d, stride %d, size %d) for a parent team of %d PEs: %s", start,
            stride, size, s_->size, why);
  const int me = s_->me;
  const int idx = stride == 0 ? (me == start ? 0 : -1) : ((me - start) % stride == 0 ? (me - start) / stride : -1);
  const bool member = idx >= 0 && idx < size;
  auto& reg = teams(*r);
  TeamState* t = nullptr;
  if (reg.split(s_, start, stride, size, member, 0, &t, call) != 0)
    r->fail(Errc::kNoMemory, call,
            "too many teams: no team slot is free on every member of the new team (%d in use on this PE, at most "
            "%d); destroy unused teams or raise SYMMEM_METADATA_SIZE",
            reg.live_teams(), reg.max_teams());
  return t ? Team(rt_, t, true) : Team();
}

Team::Split2d Team::split_2d(int xrange) {
  static const char* call = "Team::split_2d";
  Impl* r = need(s_, call);
  if (xrange <= 0) r->fail(kBad, call, "xrange %d is not positive", xrange);
  const int n = s_->size;
  xrange = std::min(xrange, n);
  const int x = s_->me % xrange, y = s_->me / xrange;
  auto& reg = teams(*r);
  TeamState *xt = nullptr, *yt = nullptr;
  auto too_many = [&] {
    r->fail(Errc::kNoMemory, call,
            "too many teams: no team slot is free on every member of a new team (%d in use on this PE, at most %d); "
            "destroy unused teams or raise SYMMEM_METADATA_SIZE",
            reg.live_teams(), reg.max_teams());
  };
  // Row y: parent PEs y*xrange ... (a shorter last row); column x: x, x+xrange, ...
  if (reg.split(s_, y * xrange, 1, std::min(xrange, n - y * xrange), true, 0, &xt, call) != 0) too_many();
  if (reg.split(s_, x, xrange, (n - x + xrange - 1) / xrange, true, 0, &yt, call) != 0) {
    reg.discard(xt);  // failed on every PE alike: nobody has used the row team
    too_many();
  }
  return Split2d{Team(rt_, xt, true), Team(rt_, yt, true)};
}

// ---------------------------------------------------------------- collectives

void Team::broadcast_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es, int root) {
  static const char* call = "Team::broadcast";
  Impl* r = need(s_, call);
  if (root < 0 || root >= s_->size) r->fail(kBad, call, "root %d is not a member number (0..%d)", root, s_->size - 1);
  check_room(r, call, dest_n, n);
  check_sym(r, call, dest, n, es);
  check_sym(r, call, src, n, es);
  coll::TeamGroup g(s_);
  coll::broadcast(g, dest, src, n * es, root, true);
}

void Team::fcollect_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es) {
  static const char* call = "Team::fcollect";
  Impl* r = need(s_, call);
  const size_t total = n * size_t(s_->size);
  check_room(r, call, dest_n, total);
  check_sym(r, call, dest, total, es);
  check_sym(r, call, src, n, es);
  coll::TeamGroup g(s_);
  coll::fcollect(g, dest, src, n * es);
}

size_t Team::collect_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es) {
  static const char* call = "Team::collect";
  Impl* r = need(s_, call);
  check_sym(r, call, src, n, es);
  check_sym(r, call, dest, dest_n, es);
  coll::TeamGroup g(s_);
  const int size = s_->size;
  // Every member's count and room, through the team's scratch like a collective's staged
  // data (filled before the next sync, read after it): all members then agree on the
  // total and on whether some dest is too small, and throw alike.
  std::vector<uint64_t> counts(size_t(size) * 2);
  if (size == 1) {
    counts = {n, dest_n};
  } else {
    const unsigned par = g.next_parity();
    const uint64_t mine[2] = {n, dest_n};
    std::memcpy(g.scratch(s_->me, par), mine, sizeof(mine));
    g.sync();
    for (int i = 0; i < size; ++i)  // a load on the node, a get from another node
      r->rget(&counts[size_t(i) * 2], g.scratch(i, par), sizeof(mine), g.world_pe(i));
  }
  size_t total = 0;
  for (int i = 0; i < size; ++i) total += counts[size_t(i) * 2];
  for (int i = 0; i < size; ++i)
    if (counts[size_t(i) * 2 + 1] < total)
      r->fail(kBad, call, "the dest of team PE %d holds %" PRIu64 " elements, the %zu collected need more", i,
              counts[size_t(i) * 2 + 1], total);
  coll::collect(g, dest, src, n * es);
  return total;
}

void Team::alltoall_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es) {
  static const char* call = "Team::alltoall";
  Impl* r = need(s_, call);
  const size_t size = size_t(s_->size);
  if (n % size != 0)
    r->fail(kBad, call, "src holds %zu elements, not a multiple of the team's %zu PEs (one block per PE)", n, size);
  check_room(r, call, dest_n, n);
  check_sym(r, call, dest, n, es);
  check_sym(r, call, src, n, es);
  coll::TeamGroup g(s_);
  coll::alltoall(g, dest, src, n / size * es);
}

void Team::alltoalls_bytes(void* dest, size_t dest_n, const void* src, size_t src_n, ptrdiff_t dst_stride,
                           ptrdiff_t src_stride, size_t nelems, size_t es) {
  static const char* call = "Team::alltoalls";
  Impl* r = need(s_, call);
  if (dst_stride < 1 || src_stride < 1)
    r->fail(kBad, call, "strides must be >= 1 (dst_stride %td, src_stride %td)", dst_stride, src_stride);
  const size_t span = nelems * size_t(s_->size);
  if (span) {
    const size_t need_src = (span - 1) * size_t(src_stride) + 1, need_dst = (span - 1) * size_t(dst_stride) + 1;
    if (src_n < need_src)
      r->fail(kBad, call, "src holds %zu elements, %zu per PE at stride %td need %zu", src_n, nelems, src_stride,
              need_src);
    check_room(r, call, dest_n, need_dst);
    check_sym(r, call, src, need_src, es);
    check_sym(r, call, dest, need_dst, es);
  }
  coll::TeamGroup g(s_);
  coll::alltoalls(g, dest, src, dst_stride, src_stride, nelems, es);
}

void Team::reduce_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es, int num, ReduceOp op,
                        Fold fold) {
  static const char* const calls[] = {"Team::reduce", "Team::inscan", "Team::exscan"};
  const char* call = calls[fold];
  Impl* r = need(s_, call);
  const coll::ReduceOp* fn = num >= 0 && num < int(detail::Num::kCount) && int(op) >= 0 && int(op) < 7
                                 ? kKernels[size_t(num)][size_t(op)]
                                 : nullptr;
  if (!fn) r->fail(kBad, call, "no %s kernel for element kind %d (%zu bytes)", op_name(op), num, es);
  check_room(r, call, dest_n, n);
  check_sym(r, call, dest, n, es);
  check_sym(r, call, src, n, es);
  coll::TeamGroup g(s_);
  if (fold == kReduce) coll::reduce(g, dest, src, n, es, fn);
  else coll::scan(g, dest, src, n, es, fn, fold == kInscan);
}

}  // namespace symmem
