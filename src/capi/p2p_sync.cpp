// The C API's signals, point-to-point waits and tests, contexts, locks and thread levels.
#include <cinttypes>

#include "capi/p2p_common.hpp"

static_assert(SHMEM_CMP_EQ == symmem::p2p::kCmpEq && SHMEM_CMP_NE == symmem::p2p::kCmpNe &&
              SHMEM_CMP_GT == symmem::p2p::kCmpGt && SHMEM_CMP_GE == symmem::p2p::kCmpGe &&
              SHMEM_CMP_LT == symmem::p2p::kCmpLt && SHMEM_CMP_LE == symmem::p2p::kCmpLe);
static_assert(SHMEM_SIGNAL_SET == symmem::p2p::kSignalSet && SHMEM_SIGNAL_ADD == symmem::p2p::kSignalAdd);
static_assert(symmem::kCtxKnownOptions == (SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE));

namespace symmem::capi {

namespace {
// The thread level of the default instance: SHMEM_THREAD_MULTIPLE unless shmem_init_thread
// asked for another one (every level is supported, so the one asked for is given).
int g_thread_level = SHMEM_THREAD_MULTIPLE;
}  // namespace

void CtxRef::bad_pe(const char* call, int p) const {
  r->fail(Errc::kInvalidArgument, call, "PE %d is out of range for the context's team (%d PEs, 0..%d)", p, count,
          count - 1);
}

void bad_ctx(Runtime::Impl* r, const char* call, shmem_ctx_t ctx) {
  if (!ctx) r->fail(Errc::kInvalidArgument, call, "the context is SHMEM_CTX_INVALID");
  if (ctx->magic == kCtxDestroyed)
    r->fail(Errc::kInvalidArgument, call, "context %p was destroyed with shmem_ctx_destroy", static_cast<void*>(ctx));
  r->fail(Errc::kInvalidArgument, call, "%p is not a context of this OpenSHMEM library instance",
          static_cast<void*>(ctx));
}

int create_ctx(const char* call, long options, symmem_team_s* team, int start, int stride, int count,
               shmem_ctx_t* out) {
  Runtime::Impl* r = rt(call);
  if (options & ~kCtxKnownOptions) {
    *out = SHMEM_CTX_INVALID;
    return 1;
  }
  *out = ctx_create(*r, options, team, start, stride, count);
  return 0;
}

void set_thread_level(int level) { g_thread_level = level; }
int thread_level() { return g_thread_level; }

}  // namespace symmem::capi

using namespace symmem::p2p;
using symmem::capi::rt;

namespace {
// Comparison value of element i: one value for all, or one per element (_vector).
template <class T>
struct One {
  T x;
  T operator()(size_t) const { return x; }
};
template <class T>
struct Each {
  const T* x;
  T operator()(size_t i) const { return x[i]; }
};
}  // namespace

extern "C" {

// ---- threads ----
int shmem_init_thread(int requested, int* provided) {
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) return 1;
  shmem_init();
  symmem::capi::set_thread_level(requested);
  if (provided) *provided = requested;
  return 0;
}

void shmem_query_thread(int* provided) { *provided = symmem::capi::thread_level(); }

// ---- contexts ----
int shmem_ctx_create(long options, shmem_ctx_t* ctx) {
  symmem::Runtime::Impl* r = rt("shmem_ctx_create");
  return symmem::capi::create_ctx("shmem_ctx_create", options, nullptr, 0, 1, r->npes_, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  static constexpr const char* call = "shmem_ctx_destroy";
  if (ctx == SHMEM_CTX_INVALID) return;
  symmem::Runtime::Impl* r = rt(call);
  if (ctx == SHMEM_CTX_DEFAULT) r->fail(symmem::Errc::kInvalidArgument, call, "SHMEM_CTX_DEFAULT cannot be destroyed");
  (void)symmem::capi::resolve(call, ctx);
  symmem::ctx_destroy(*r, ctx);
}

void shmem_ctx_fence(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID) return;
  const symmem::capi::CtxRef x = symmem::capi::resolve("shmem_ctx_fence", ctx);
  const symmem::UcxLaneScope lane(x.lane);
  x.r->fence();
}

void shmem_ctx_quiet(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID) return;
  const symmem::capi::CtxRef x = symmem::capi::resolve("shmem_ctx_quiet", ctx);
  const symmem::UcxLaneScope lane(x.lane);
  x.r->quiet();
}

namespace {
void pe_quiet(const char* call, shmem_ctx_t ctx, const int* pes, size_t npes) {
  const symmem::capi::CtxRef x = symmem::capi::resolve(call, ctx);
  if (npes == 0) return;
  if (!pes) x.r->fail(symmem::Errc::kInvalidArgument, call, "target_pes is NULL with npes %zu", npes);
  for (size_t i = 0; i < npes; ++i) (void)x.pe(call, pes[i]);
  // Every operation to any PE is complete when it returns; the fence that makes weakly
  // ordered stores visible is per thread, not per target.
  const symmem::UcxLaneScope lane(x.lane);
  x.r->quiet();
}
}  // namespace

void shmem_pe_quiet(const int* target_pes, size_t npes) {
  pe_quiet("shmem_pe_quiet", SHMEM_CTX_DEFAULT, target_pes, npes);
}

void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes) {
  if (ctx == SHMEM_CTX_INVALID) return;
  pe_quiet("shmem_ctx_pe_quiet", ctx, target_pes, npes);
}

// ---- sessions: hints only (see shmem_p2p.h); the arguments are checked ----
void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_ctx_session_config_t* config,
                             long config_mask) {
  static constexpr const char* call = "shmem_ctx_session_start";
  if (ctx == SHMEM_CTX_INVALID) return;
  const symmem::capi::CtxRef x = symmem::capi::resolve(call, ctx);
  if ((config_mask & SHMEM_CTX_SESSION_TOTAL_OPS) && !config)
    x.r->fail(symmem::Errc::kInvalidArgument, call,
              "config is NULL but config_mask 0x%lx selects SHMEM_CTX_SESSION_TOTAL_OPS", config_mask);
  (void)options;
}

void shmem_ctx_session_stop(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID) return;
  (void)symmem::capi::resolve("shmem_ctx_session_stop", ctx);
}

// ---- signals ----
SYMMEM_FN(uint64_t, shmem_signal_fetch, (const uint64_t* sig), atomic_fetch(r, call, sig, r.rank_))
SYMMEM_FN(uint64_t, shmem_signal_wait_until, (uint64_t * sig, int cmp, uint64_t x), wait_until(r, call, sig, cmp, x))
SYMMEM_FN(void, shmem_signal_set, (uint64_t * sig, uint64_t v, int pe),
          signal_op(r, call, sig, v, kSignalSet, pe))
SYMMEM_FN(void, shmem_signal_add, (uint64_t * sig, uint64_t v, int pe),
          signal_op(r, call, sig, v, kSignalAdd, pe))
SYMMEM_CFN(void, shmem_ctx_signal_set, (shmem_ctx_t ctx, uint64_t * sig, uint64_t v, int pe),
           signal_op(r, call, sig, v, kSignalSet, pe))
SYMMEM_CFN(void, shmem_ctx_signal_add, (shmem_ctx_t ctx, uint64_t * sig, uint64_t v, int pe),
           signal_op(r, call, sig, v, kSignalAdd, pe))

// ---- point-to-point synchronization ----
#define SYMMEM_DEF_SYNC(T, N)                                                                         \
  SYMMEM_FN(void, shmem_##N##_wait_until, (T * v, int cmp, T x), (void)wait_until(r, call, v, cmp, x)) \
  SYMMEM_FN(int, shmem_##N##_test, (T * v, int cmp, T x), test(r, call, v, cmp, x) ? 1 : 0)
SHMEM_P2P_SYNC_TYPES(SYMMEM_DEF_SYNC)
#undef SYMMEM_DEF_SYNC

#define SYMMEM_DEF_SYNC_SET(T, N)                                                                                  \
  SYMMEM_FN(void, shmem_##N##_wait_until_all, (T * v, size_t n, const int* st, int cmp, T x),                                   \
            wait_until_all(r, call, v, n, st, cmp, One<T>{x}))                                                       \
  SYMMEM_FN(size_t, shmem_##N##_wait_until_any, (T * v, size_t n, const int* st, int cmp, T x),                                 \
            wait_until_any(r, call, v, n, st, cmp, One<T>{x}))                                                       \
  SYMMEM_FN(size_t, shmem_##N##_wait_until_some, (T * v, size_t n, size_t * ix, const int* st, int cmp, T x),                   \
            wait_until_some(r, call, v, n, ix, st, cmp, One<T>{x}))                                                  \
  SYMMEM_FN(void, shmem_##N##_wait_until_all_vector, (T * v, size_t n, const int* st, int cmp, const T* x),                     \
            wait_until_all(r, call, v, n, st, cmp, Each<T>{x}))                                                      \
  SYMMEM_FN(size_t, shmem_##N##_wait_until_any_vector, (T * v, size_t n, const int* st, int cmp, const T* x),                   \
            wait_until_any(r, call, v, n, st, cmp, Each<T>{x}))                                                      \
  SYMMEM_FN(size_t, shmem_##N##_wait_until_some_vector, (T * v, size_t n, size_t * ix, const int* st, int cmp, const T* x),     \
            wait_until_some(r, call, v, n, ix, st, cmp, Each<T>{x}))                                                 \
  SYMMEM_FN(int, shmem_##N##_test_all, (T * v, size_t n, const int* st, int cmp, T x),                                          \
            test_all(r, call, v, n, st, cmp, One<T>{x}) ? 1 : 0)                                                     \
  SYMMEM_FN(size_t, shmem_##N##_test_any, (T * v, size_t n, const int* st, int cmp, T x),                                       \
            test_any(r, call, v, n, st, cmp, One<T>{x}))                                                             \
  SYMMEM_FN(size_t, shmem_##N##_test_some, (T * v, size_t n, size_t * ix, const int* st, int cmp, T x),                         \
            test_some(r, call, v, n, ix, st, cmp, One<T>{x}))                                                        \
  SYMMEM_FN(int, shmem_##N##_test_all_vector, (T * v, size_t n, const int* st, int cmp, const T* x),                            \
            test_all(r, call, v, n, st, cmp, Each<T>{x}) ? 1 : 0)                                                    \
  SYMMEM_FN(size_t, shmem_##N##_test_any_vector, (T * v, size_t n, const int* st, int cmp, const T* x),                         \
            test_any(r, call, v, n, st, cmp, Each<T>{x}))                                                            \
  SYMMEM_FN(size_t, shmem_##N##_test_some_vector, (T * v, size_t n, size_t * ix, const int* st, int cmp, const T* x),           \
            test_some(r, call, v, n, ix, st, cmp, Each<T>{x}))
SHMEM_P2P_SYNC_SET_TYPES(SYMMEM_DEF_SYNC_SET)
#undef SYMMEM_DEF_SYNC_SET

SYMMEM_FN(void, shmem_wait, (long* v, long x), (void)wait_until(r, call, v, SHMEM_CMP_NE, x))
// The deprecated C form shmem_wait_until(long*, int, long). C++ sees the overloads of that
// name in shmem_p2p.h, so the C symbol is given its name through an asm label.
SHMEM_API void symmem_wait_until_long(long* v, int cmp, long x) __asm__("shmem_wait_until");
void symmem_wait_until_long(long* v, int cmp, long x) {
  static constexpr const char* call = "shmem_wait_until";
  (void)wait_until(*rt(call), call, v, cmp, x);
}
#define SYMMEM_DEF_WAIT_DEPR(T, N) \
  SYMMEM_FN(void, shmem_##N##_wait, (T * v, T x), (void)wait_until(r, call, v, SHMEM_CMP_NE, x))
SHMEM_WAIT_DEPR_TYPES(SYMMEM_DEF_WAIT_DEPR)
#undef SYMMEM_DEF_WAIT_DEPR

// ---- locks ----
SYMMEM_FN(void, shmem_set_lock, (long* lock), set_lock(r, call, lock))
SYMMEM_FN(int, shmem_test_lock, (long* lock), test_lock(r, call, lock) ? 0 : 1)
SYMMEM_FN(void, shmem_clear_lock, (long* lock), clear_lock(r, call, lock))

}  // extern "C"
