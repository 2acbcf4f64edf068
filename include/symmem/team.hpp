// symmem/team.hpp — teams and collectives of the C++ API (included by symmem.hpp).
//
// A symmem::Team is an ordered set of PEs of one Runtime: the world (every PE), the shared
// team (the PEs that share memory with this one), or a team split from another. Members
// are numbered 0 .. n_pes()-1 in the order of their world numbers. A PE that is not in a
// team it asked for gets an invalid Team (valid() == false, and `if (team)` is false).
//
// Which PEs call. Splits and collectives are collective over the team they are called on:
// every member calls, in the same order, with the same root / op / element count (collect
// excepted: its counts may differ per PE). The destructor of a split team is collective
// too: every member destroys it together, like MPI_Comm_free — let it go out of scope at
// the same point of the program on every member, or call destroy(). Non-members hold an
// invalid Team, whose destructor does nothing. The world and shared teams are never
// destroyed. Every Team must be destroyed before its Runtime.
//
// Collectives take contiguous ranges (SymSpan, std::span, ...) of one trivially copyable
// type; dest and src must be symmetric (in the Runtime's heap or the executable's
// globals), the same objects on every member. They are the OpenSHMEM 1.5 team
// collectives: they return when this PE's dest holds the result and src may be reused;
// they imply no quiet of earlier puts (use barrier()). Reductions and scans take the
// types the standard allows for the operation (symmem/typed.hpp), checked at compile time.
//
// Errors throw symmem::Error: an invalid triplet or too many teams (on every member of the
// parent, the same error), a collective on an invalid team (kState), a dest too small or
// an address outside symmetric memory (kInvalidArgument). A collective's argument check
// throws on the PEs whose arguments are wrong, before any communication: when only some
// PEs throw, the others are left waiting in the collective, so treat such an error as a
// bug in the program rather than something to recover from (collect checks every PE's
// dest and throws on all of them alike).
//
// Thread safety: as the Runtime's — one thread at a time per Runtime, teams included.
#pragma once

#include <cstddef>
#include <ranges>
#include <type_traits>

#include "symmem/symmem.hpp"
#include "symmem/typed.hpp"

namespace symmem {

struct TeamState;  // the library's per-team state (opaque)

class SYMMEM_API Team {
 public:
  // An invalid team.
  Team() = default;
  Team(Team&& o) noexcept : rt_(o.rt_), s_(o.s_), owned_(o.owned_) { o.release(); }
  Team& operator=(Team&& o) noexcept;
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  // Destroys a split team: collective over its members (see above). Never throws.
  ~Team();

  bool valid() const noexcept { return s_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  Runtime* runtime() const noexcept { return rt_; }

  // This PE's number in the team and the team's size; -1 on an invalid team.
  int my_pe() const;
  int n_pes() const;
  // The team's slot in the Runtime (0 world, 1 shared, 2.. splits): the same number on
  // every member, unique among the Runtime's live teams, reused after destroy(); -1 on an
  // invalid team. For per-team state kept by layers above (the Python module's counters).
  int index() const;
  // The number in `other` of this team's PE `pe`, or -1 when it is not a member of
  // `other` (or either team is invalid, or pe is out of range). Not collective.
  int translate_pe(int pe, const Team& other) const;
  // Local load/store address of team PE `pe`'s copy of the symmetric `addr`, or nullptr
  // (not reachable by load/store, pe out of range, invalid team).
  void* ptr(const void* addr, int pe) const;
  template <class T>
  T* ptr(T* addr, int pe) const {
    return static_cast<T*>(ptr(static_cast<const void*>(addr), pe));
  }

  // Every member has arrived; this PE's stores before it are visible to the members after
  // it. Does not complete puts (shmem_team_sync).
  void sync();
  // quiet(), then sync(): every member's puts before it are complete and visible after it.
  void barrier();

  // A new team of this team's PEs start, start+stride, ... (size of them; stride may be
  // negative, or 0 when size is 1), numbered in that order. Collective over this team;
  // non-members get an invalid Team. Throws Error on every member for an invalid triplet
  // (kInvalidArgument) or when no team slot is free on every member (kNoMemory).
  Team split_strided(int start, int stride, int size);
  // The 2-D split of shmem_team_split_2d: this team seen as rows of `xrange` PEs; x is
  // this PE's row (PEs with the same PE / xrange), y its column (same PE % xrange).
  // xrange larger than n_pes() is n_pes(). Collective; every member gets both teams.
  struct Split2d;
  Split2d split_2d(int xrange);
  // Destroys a split team now (collective over its members); the Team becomes invalid.
  void destroy();
  // A communication context on this team (symmem/ctx.hpp): its PE numbers are this team's.
  // Not collective. Throws kState on an invalid team, kInvalidArgument for unknown options.
  Ctx ctx_create(long options = 0);

  // ---- collectives (every member calls; see the top of this file) ----
  // dest[i] = root's src[i] for i < src.size() on every member (the root's too).
  template <class D, class S>
    requires CollectiveArgs<D, S>
  void broadcast(D&& dest, const S& src, int root) {
    using T = detail::Elem<S>;
    broadcast_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                    sizeof(T), root);
  }
  // dest = the concatenation of every member's src in team order; every member passes the
  // same src.size(), dest holds n_pes() times that.
  template <class D, class S>
    requires CollectiveArgs<D, S>
  void fcollect(D&& dest, const S& src) {
    fcollect_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                   sizeof(detail::Elem<S>));
  }
  // As fcollect, but each member's src.size() may differ; returns the total element count
  // (the same on every member). Throws on every member when some member's dest is smaller.
  template <class D, class S>
    requires CollectiveArgs<D, S>
  size_t collect(D&& dest, const S& src) {
    return collect_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src),
                         std::ranges::size(src), sizeof(detail::Elem<S>));
  }
  // src holds n_pes() blocks of src.size() / n_pes() elements; block j goes to member j,
  // where it lands as block (my_pe()). src.size() must be a multiple of n_pes().
  template <class D, class S>
    requires CollectiveArgs<D, S>
  void alltoall(D&& dest, const S& src) {
    alltoall_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                   sizeof(detail::Elem<S>));
  }
  // The strided form (shmem_alltoalls): member j receives nelems elements from every
  // member p, src elements (j * nelems + k) * src_stride of p landing at dest elements
  // (p * nelems + k) * dst_stride (k < nelems). Strides are in elements, >= 1; dest and
  // src must hold ((n_pes() * nelems - 1) * stride + 1) elements. Elements of dest between
  // the strided ones are not written.
  template <class D, class S>
    requires CollectiveArgs<D, S>
  void alltoalls(D&& dest, const S& src, ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems) {
    alltoalls_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                    dst_stride, src_stride, nelems, sizeof(detail::Elem<S>));
  }
  // dest[i] = src[i] of member 0 OP src[i] of member 1 OP ... on every member
  // (all-reduce), for i < src.size(). dest may be src.
  template <ReduceOp Op, class D, class S>
    requires CollectiveArgs<D, S> && Reducible<detail::Elem<S>, Op>
  void reduce(D&& dest, const S& src) {
    using T = detail::Elem<S>;
    reduce_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                 sizeof(T), static_cast<int>(detail::num_of<T>()), Op, kReduce);
  }
  template <ReduceOp Op, class D, class S>
    requires CollectiveArgs<D, S> && Reducible<detail::Elem<S>, Op>
  void reduce(OpTag<Op>, D&& dest, const S& src) {
    reduce<Op>(dest, src);
  }
  // Prefix sums over the members: inscan gives member k the sum of members 0..k, exscan
  // of members 0..k-1 (member 0 gets zeros).
  template <class D, class S>
    requires CollectiveArgs<D, S> && Reducible<detail::Elem<S>, ReduceOp::kSum>
  void inscan(D&& dest, const S& src) {
    using T = detail::Elem<S>;
    reduce_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                 sizeof(T), static_cast<int>(detail::num_of<T>()), ReduceOp::kSum, kInscan);
  }
  template <class D, class S>
    requires CollectiveArgs<D, S> && Reducible<detail::Elem<S>, ReduceOp::kSum>
  void exscan(D&& dest, const S& src) {
    using T = detail::Elem<S>;
    reduce_bytes(std::ranges::data(dest), std::ranges::size(dest), std::ranges::data(src), std::ranges::size(src),
                 sizeof(T), static_cast<int>(detail::num_of<T>()), ReduceOp::kSum, kExscan);
  }

  // ---- stream-ordered collectives on device memory (symmem/shmemx_device.h) ----
  // The shmemx_*_on_stream forms on this team: queued on `stream` (a cudaStream_t /
  // CUstream; nullptr: the CUDA default stream) and returning at once; done when the
  // stream reaches them. Buffers are symmetric addresses in the device heap (Error
  // kInvalidArgument "... is not in the device heap" otherwise); every member calls, in the
  // same order. bytes: per PE (fcollect: dest holds n_pes() * bytes; alltoall: src and dest
  // hold n_pes() blocks of bytes). Reductions: n elements of `type` (reduce_scatter: each
  // member gets the reduction of block my_pe() of n elements, src holds n_pes() blocks);
  // ops sum, min, max, and prod for the integer types (Error kInvalidArgument otherwise).
  enum class DeviceType : int { kFloat, kHalf, kBfloat16, kInt32, kInt64 };
  void sync_on_stream(void* stream);
  void broadcast_on_stream(void* dest, const void* src, size_t bytes, int root, void* stream);
  void fcollect_on_stream(void* dest, const void* src, size_t bytes, void* stream);
  void alltoall_on_stream(void* dest, const void* src, size_t bytes, void* stream);
  void reduce_on_stream(DeviceType type, ReduceOp op, void* dest, const void* src, size_t n, void* stream);
  void reduce_scatter_on_stream(DeviceType type, ReduceOp op, void* dest, const void* src, size_t n, void* stream);

 private:
  friend class Runtime;
  enum Fold : int { kReduce, kInscan, kExscan };
  Team(Runtime* rt, TeamState* s, bool owned) : rt_(rt), s_(s), owned_(owned) {}
  void drop() noexcept;  // destroys an owned team (collective), then release()
  void release() noexcept {
    rt_ = nullptr;
    s_ = nullptr;
    owned_ = false;
  }
  // The type-erased calls behind the templates: element counts and the element size.
  void broadcast_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es, int root);
  void fcollect_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es);
  size_t collect_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es);
  void alltoall_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es);
  void alltoalls_bytes(void* dest, size_t dest_n, const void* src, size_t src_n, ptrdiff_t dst_stride,
                       ptrdiff_t src_stride, size_t nelems, size_t es);
  void reduce_bytes(void* dest, size_t dest_n, const void* src, size_t n, size_t es, int num, ReduceOp op,
                    Fold fold);

  Runtime* rt_ = nullptr;
  TeamState* s_ = nullptr;
  bool owned_ = false;  // a split team: destroyed with this object
};

struct Team::Split2d {
  Team x;  // this PE's row
  Team y;  // this PE's column
};

}  // namespace symmem
