// OpenSHMEM collectives: team-based and active-set forms, each a check and one call into
// the type-erased engine (src/coll). Typed families are stamped from the type tables.
#include <cinttypes>

#include "capi/team_handle.hpp"
#include "coll/coll.hpp"
#include "coll/reduce_ops.hpp"

using symmem::TeamState;
using symmem::capi::rt;
using symmem::capi::team_of;
namespace coll = symmem::coll;

namespace {

using Impl = symmem::Runtime::Impl;
constexpr symmem::Errc kBad = symmem::Errc::kInvalidArgument;

// `bytes` at symmetric address `p` lie in this PE's symmetric heap (reports otherwise).
void check_sym(Impl* r, const char* call, const void* p, size_t bytes) {
  r->check_host_sym(call, p, bytes);
}

// Runs `f` on the team's group; -1 for SHMEM_TEAM_INVALID.
template <class F>
int on_team(const char* call, shmem_team_t h, F&& f) {
  Impl* r = rt(call);
  TeamState* t = team_of(r, h);
  if (!t) return -1;
  coll::TeamGroup g(t);
  f(r, g);
  return 0;
}

// Runs `f` on the active set (PE_start, 2^logPE_stride, PE_size) of the deprecated API,
// checked. The set of every PE (what most programs pass) runs on the world team, whose
// syncs, scratch and broadcast mailbox are the team forms' (one sync for small data, none
// for a small broadcast), and leaves pSync alone; any other set synchronises through
// pSync (coll::PsyncGroup). OSHMEM runs it on its world communicator likewise. The one
// difference a program can see: two threads running collectives on the whole world at
// once with different pSync arrays now share the world team's state (docs/collectives.md).
template <class F>
void on_active_set(Impl* r, const char* call, int start, int log_stride, int size, long* psync, F&& f) {
  if (start < 0 || size < 1 || log_stride < 0 || log_stride > 30)
    r->fail(kBad, call, "invalid active set (PE_start %d, logPE_stride %d, PE_size %d)", start, log_stride, size);
  const int stride = 1 << log_stride;
  const int64_t last = int64_t(start) + int64_t(size - 1) * stride;
  if (last >= r->npes_)
    r->fail(kBad, call, "active set (PE_start %d, logPE_stride %d, PE_size %d) reaches PE %" PRId64
            " but the job has %d PEs", start, log_stride, size, last, r->npes_);
  const int d = r->rank_ - start;
  if (d < 0 || d % stride != 0 || d / stride >= size)
    r->fail(kBad, call, "this PE is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)", start,
            log_stride, size);
  if (!psync) r->fail(kBad, call, "pSync is NULL");
  check_sym(r, call, psync, SHMEM_SYNC_SIZE * sizeof(long));
  if (start == 0 && size == r->npes_ && (stride == 1 || size == 1)) {
    coll::TeamGroup g(team_of(r, SHMEM_TEAM_WORLD));
    f(g);
    return;
  }
  coll::PsyncGroup g(r, start, stride, size, d / stride, psync);
  f(g);
}

void check_root(Impl* r, const char* call, int root, int size) {
  if (root < 0 || root >= size) r->fail(kBad, call, "PE_root %d is not a member number (0..%d)", root, size - 1);
}

int team_broadcast(const char* call, shmem_team_t team, void* d, const void* s, size_t bytes, int root) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_root(r, call, root, g.size());
    check_sym(r, call, d, bytes);
    check_sym(r, call, s, bytes);
    coll::broadcast(g, d, s, bytes, root, true);
  });
}
int team_collect(const char* call, shmem_team_t team, void* d, const void* s, size_t bytes) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_sym(r, call, s, bytes);
    coll::collect(g, d, s, bytes, call);  // checks d once every member's size is known
  });
}
int team_fcollect(const char* call, shmem_team_t team, void* d, const void* s, size_t bytes) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_sym(r, call, s, bytes);
    check_sym(r, call, d, bytes * size_t(g.size()));
    coll::fcollect(g, d, s, bytes);
  });
}
int team_alltoall(const char* call, shmem_team_t team, void* d, const void* s, size_t bytes) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_sym(r, call, s, bytes * size_t(g.size()));
    check_sym(r, call, d, bytes * size_t(g.size()));
    coll::alltoall(g, d, s, bytes);
  });
}
void check_strides(Impl* r, const char* call, ptrdiff_t dst, ptrdiff_t sst) {
  if (dst < 1 || sst < 1) r->fail(kBad, call, "strides must be >= 1 (dst %td, sst %td)", dst, sst);
}
int team_alltoalls(const char* call, shmem_team_t team, void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t es) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_strides(r, call, dst, sst);
    size_t span = nelems * size_t(g.size());
    if (span) {
      check_sym(r, call, s, ((span - 1) * size_t(sst) + 1) * es);
      check_sym(r, call, d, ((span - 1) * size_t(dst) + 1) * es);
    }
    coll::alltoalls(g, d, s, dst, sst, nelems, es);
  });
}
int team_reduce(const char* call, shmem_team_t team, void* d, const void* s, size_t n, size_t es, coll::ReduceFn fn) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_sym(r, call, d, n * es);
    check_sym(r, call, s, n * es);
    coll::reduce(g, d, s, n, es, fn);
  });
}
int team_scan(const char* call, shmem_team_t team, void* d, const void* s, size_t n, size_t es, coll::ReduceFn fn,
              bool inclusive) {
  return on_team(call, team, [&](Impl* r, coll::Group& g) {
    check_sym(r, call, d, n * es);
    check_sym(r, call, s, n * es);
    coll::scan(g, d, s, n, es, fn, inclusive);
  });
}

void as_broadcast(const char* call, void* d, const void* s, size_t bytes, int root, int start, int ls, int size,
                  long* psync) {
  Impl* r = rt(call);
  on_active_set(r, call, start, ls, size, psync, [&](coll::Group& g) {
    check_root(r, call, root, size);
    check_sym(r, call, d, bytes);
    check_sym(r, call, s, bytes);
    coll::broadcast(g, d, s, bytes, root, false);
  });
}
void as_collect(const char* call, void* d, const void* s, size_t bytes, int start, int ls, int size, long* psync,
                bool fixed) {
  Impl* r = rt(call);
  on_active_set(r, call, start, ls, size, psync, [&](coll::Group& g) {
    check_sym(r, call, s, bytes);
    if (fixed) {
      check_sym(r, call, d, bytes * size_t(size));
      coll::fcollect(g, d, s, bytes);
    } else {
      coll::collect(g, d, s, bytes, call);  // checks d once every member's size is known
    }
  });
}
void as_alltoall(const char* call, void* d, const void* s, size_t bytes, int start, int ls, int size, long* psync) {
  Impl* r = rt(call);
  on_active_set(r, call, start, ls, size, psync, [&](coll::Group& g) {
    check_sym(r, call, s, bytes * size_t(size));
    check_sym(r, call, d, bytes * size_t(size));
    coll::alltoall(g, d, s, bytes);
  });
}
void as_alltoalls(const char* call, void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es,
                  int start, int ls, int size, long* psync) {
  Impl* r = rt(call);
  on_active_set(r, call, start, ls, size, psync, [&](coll::Group& g) {
    check_strides(r, call, dst, sst);
    size_t span = nelems * size_t(size);
    if (span) {
      check_sym(r, call, s, ((span - 1) * size_t(sst) + 1) * es);
      check_sym(r, call, d, ((span - 1) * size_t(dst) + 1) * es);
    }
    coll::alltoalls(g, d, s, dst, sst, nelems, es);
  });
}
void as_reduce(const char* call, void* d, const void* s, int n, size_t es, coll::ReduceFn fn, int start, int ls,
               int size, long* psync) {
  Impl* r = rt(call);
  on_active_set(r, call, start, ls, size, psync, [&](coll::Group& g) {
    if (n < 0) r->fail(kBad, call, "nreduce %d is negative", n);
    check_sym(r, call, d, size_t(n) * es);
    check_sym(r, call, s, size_t(n) * es);
    coll::reduce(g, d, s, size_t(n), es, fn);
  });
}

}  // namespace

extern "C" {

// ---- synchronisation ----
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  Impl* r = rt("shmem_barrier");
  // the quiet is implied: sfence, then the arrival (see Runtime::Impl::barrier_all)
  on_active_set(r, "shmem_barrier", PE_start, logPE_stride, PE_size, pSync, [](coll::Group& g) { g.sync(); });
}
void(shmem_sync)(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  Impl* r = rt("shmem_sync");
  on_active_set(r, "shmem_sync", PE_start, logPE_stride, PE_size, pSync, [](coll::Group& g) { g.sync(); });
}

// ---- team-based data collectives ----
int shmem_broadcastmem(shmem_team_t t, void* d, const void* s, size_t n, int root) {
  return team_broadcast("shmem_broadcastmem", t, d, s, n, root);
}
int shmem_collectmem(shmem_team_t t, void* d, const void* s, size_t n) {
  return team_collect("shmem_collectmem", t, d, s, n);
}
int shmem_fcollectmem(shmem_team_t t, void* d, const void* s, size_t n) {
  return team_fcollect("shmem_fcollectmem", t, d, s, n);
}
int shmem_alltoallmem(shmem_team_t t, void* d, const void* s, size_t n) {
  return team_alltoall("shmem_alltoallmem", t, d, s, n);
}
int shmem_alltoallsmem(shmem_team_t t, void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t n) {
  return team_alltoalls("shmem_alltoallsmem", t, d, s, dst, sst, n, 1);
}

#define SYMMEM_DEF_COLL(T, N)                                                                                 \
  int shmem_##N##_broadcast(shmem_team_t t, T* d, const T* s, size_t n, int root) {                          \
    return team_broadcast("shmem_" #N "_broadcast", t, d, s, n * sizeof(T), root);                           \
  }                                                                                                           \
  int shmem_##N##_collect(shmem_team_t t, T* d, const T* s, size_t n) {                                      \
    return team_collect("shmem_" #N "_collect", t, d, s, n * sizeof(T));                                     \
  }                                                                                                           \
  int shmem_##N##_fcollect(shmem_team_t t, T* d, const T* s, size_t n) {                                     \
    return team_fcollect("shmem_" #N "_fcollect", t, d, s, n * sizeof(T));                                   \
  }                                                                                                           \
  int shmem_##N##_alltoall(shmem_team_t t, T* d, const T* s, size_t n) {                                     \
    return team_alltoall("shmem_" #N "_alltoall", t, d, s, n * sizeof(T));                                   \
  }                                                                                                           \
  int shmem_##N##_alltoalls(shmem_team_t t, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n) {      \
    return team_alltoalls("shmem_" #N "_alltoalls", t, d, s, dst, sst, n, sizeof(T));                        \
  }
SHMEM_RMA_TYPES(SYMMEM_DEF_COLL)
#undef SYMMEM_DEF_COLL

// ---- team-based reductions and scans ----
#define SYMMEM_DEF_REDUCE(T, N, OP)                                                            \
  int shmem_##N##_##OP##_reduce(shmem_team_t t, T* d, const T* s, size_t n) {                  \
    return team_reduce("shmem_" #N "_" #OP "_reduce", t, d, s, n, sizeof(T), &coll::op_##OP<T>); \
  }
SHMEM_REDUCE_TABLE(SYMMEM_DEF_REDUCE)
#undef SYMMEM_DEF_REDUCE

#define SYMMEM_DEF_SCAN(T, N, OP)                                                                     \
  int shmem_##N##_sum_inscan(shmem_team_t t, T* d, const T* s, size_t n) {                            \
    return team_scan("shmem_" #N "_sum_inscan", t, d, s, n, sizeof(T), &coll::op_sum<T>, true);       \
  }                                                                                                   \
  int shmem_##N##_sum_exscan(shmem_team_t t, T* d, const T* s, size_t n) {                            \
    return team_scan("shmem_" #N "_sum_exscan", t, d, s, n, sizeof(T), &coll::op_sum<T>, false);      \
  }
SHMEM_REDUCE_ARITH_TYPES(SYMMEM_DEF_SCAN, sum)
#undef SYMMEM_DEF_SCAN

// ---- active-set collectives ----
#define SYMMEM_DEF_SIZED_COLL(BITS, BYTES)                                                                    \
  void shmem_broadcast##BITS(void* d, const void* s, size_t n, int root, int start, int ls, int size,        \
                             long* psync) {                                                                   \
    as_broadcast("shmem_broadcast" #BITS, d, s, n * BYTES, root, start, ls, size, psync);                    \
  }                                                                                                           \
  void shmem_collect##BITS(void* d, const void* s, size_t n, int start, int ls, int size, long* psync) {     \
    as_collect("shmem_collect" #BITS, d, s, n * BYTES, start, ls, size, psync, false);                       \
  }                                                                                                           \
  void shmem_fcollect##BITS(void* d, const void* s, size_t n, int start, int ls, int size, long* psync) {    \
    as_collect("shmem_fcollect" #BITS, d, s, n * BYTES, start, ls, size, psync, true);                       \
  }                                                                                                           \
  void shmem_alltoall##BITS(void* d, const void* s, size_t n, int start, int ls, int size, long* psync) {    \
    as_alltoall("shmem_alltoall" #BITS, d, s, n * BYTES, start, ls, size, psync);                            \
  }                                                                                                           \
  void shmem_alltoalls##BITS(void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int start,      \
                             int ls, int size, long* psync) {                                                 \
    as_alltoalls("shmem_alltoalls" #BITS, d, s, dst, sst, n, BYTES, start, ls, size, psync);                 \
  }
SYMMEM_DEF_SIZED_COLL(32, 4)
SYMMEM_DEF_SIZED_COLL(64, 8)
#undef SYMMEM_DEF_SIZED_COLL

#define SYMMEM_DEF_TO_ALL(T, N, OP)                                                                        \
  void shmem_##N##_##OP##_to_all(T* d, const T* s, int n, int start, int ls, int size, T* pWrk,            \
                                 long* psync) {                                                            \
    (void)pWrk; /* the engine needs no work array */                                                       \
    as_reduce("shmem_" #N "_" #OP "_to_all", d, s, n, sizeof(T), &coll::op_##OP<T>, start, ls, size, psync); \
  }
SHMEM_TO_ALL_TABLE(SYMMEM_DEF_TO_ALL)
#undef SYMMEM_DEF_TO_ALL

}  // extern "C"
