// Shared by the C API's point-to-point files: context resolution and the one-line stamps
// that turn a routine name and an expression into a C function.
#pragma once

#include "capi/default_instance.hpp"
#include "runtime/ctx.hpp"
#include "runtime/p2p.hpp"
#include "shmem.h"

namespace symmem::capi {

// What an operation on a context needs: the runtime and the team's PE numbering.
struct CtxRef {
  Runtime::Impl* r;
  int start, stride, count;
  UcxLane* lane;  // the context's UCX worker (null: the default one)
  [[noreturn]] void bad_pe(const char* call, int p) const;
  int pe(const char* call, int p) const {
    if (SYMMEM_UNLIKELY(static_cast<unsigned>(p) >= static_cast<unsigned>(count))) bad_pe(call, p);
    return start + p * stride;
  }
};

[[noreturn]] void bad_ctx(Runtime::Impl* r, const char* call, shmem_ctx_t ctx);

inline CtxRef resolve(const char* call, shmem_ctx_t ctx) {
  Runtime::Impl* r = rt(call);
  if (ctx == SHMEM_CTX_DEFAULT) return {r, 0, 1, r->npes_, nullptr};
  if (SYMMEM_UNLIKELY(!ctx || __atomic_load_n(&ctx->magic, __ATOMIC_ACQUIRE) != kCtxLive || ctx->rt != r))
    bad_ctx(r, call, ctx);
  return {ctx->rt, ctx->pe_start, ctx->pe_stride, ctx->pe_count, ctx->lane};
}

// For the team layer (shmem_team_create_ctx): a context on the default instance whose
// PE p is world PE start + p*stride (p < count), tagged with `team`. Returns 0 and the
// handle, or nonzero and SHMEM_CTX_INVALID when `options` has unknown bits.
int create_ctx(const char* call, long options, symmem_team_s* team, int start, int stride, int count,
               shmem_ctx_t* out);

}  // namespace symmem::capi

// SYMMEM_FN(RET, NAME, PARAMS, EXPR): defines NAME on the default context. EXPR sees `r`
// (the runtime), `call` (the routine's name) and the parameters.
#define SYMMEM_FN(RET, NAME, PARAMS, EXPR)          \
  RET NAME PARAMS {                                 \
    static constexpr const char* call = #NAME;      \
    symmem::Runtime::Impl& r = *symmem::capi::rt(call); \
    return EXPR;                                    \
  }
// SYMMEM_CFN: the same for a routine whose PARAMS start with `shmem_ctx_t ctx` and have
// an `int pe`: `pe` is turned from the context's team numbering into a world PE first.
#define SYMMEM_CFN(RET, NAME, PARAMS, EXPR)                           \
  RET NAME PARAMS {                                                   \
    static constexpr const char* call = #NAME;                        \
    const symmem::capi::CtxRef x = symmem::capi::resolve(call, ctx);  \
    const symmem::UcxLaneScope lane_scope(x.lane);                    \
    symmem::Runtime::Impl& r = *x.r;                                  \
    pe = x.pe(call, pe);                                              \
    return EXPR;                                                      \
  }
