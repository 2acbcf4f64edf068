// OpenSHMEM team calls over the default instance's team registry.
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "capi/p2p_common.hpp"
#include "capi/team_handle.hpp"
#include "common/log.hpp"

using symmem::TeamState;
using symmem::capi::handle_of;
using symmem::capi::rt;
using symmem::capi::team_of;

namespace {

int config_contexts(const shmem_team_config_t* config, long mask) {
  return (mask & SHMEM_TEAM_NUM_CONTEXTS) && config ? config->num_contexts : 0;
}

// Why a split returned nonzero, said by the parent's PE 0 (every parent member gets the
// same verdict from the same arguments). The call did what the standard asks (nonzero,
// SHMEM_TEAM_INVALID), so it is no error of the library: a warning the first time in the
// process, debug after that (test suites make such calls on purpose, and often).
void report(TeamState* parent, const char* call, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void report(TeamState* parent, const char* call, const char* fmt, ...) {
  if (parent->me != 0) return;
  static std::atomic<bool> said{false};
  const symmem::LogLevel level = said.exchange(true) ? symmem::LogLevel::kDebug : symmem::LogLevel::kWarn;
  if (!symmem::log_enabled(level)) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  symmem::log_pe(level, parent->rt->rank_, "%s: %s", call, msg);
}

}  // namespace

extern "C" {

int shmem_team_my_pe(shmem_team_t team) {
  TeamState* t = team_of(rt("shmem_team_my_pe"), team);
  return t ? t->me : -1;
}

int shmem_team_n_pes(shmem_team_t team) {
  TeamState* t = team_of(rt("shmem_team_n_pes"), team);
  return t ? t->size : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config) {
  TeamState* t = team_of(rt("shmem_team_get_config"), team);
  if (!t) return -1;
  if ((config_mask & SHMEM_TEAM_NUM_CONTEXTS) && config) config->num_contexts = t->num_contexts;
  return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  auto* r = rt("shmem_team_translate_pe");
  TeamState* s = team_of(r, src_team);
  TeamState* d = team_of(r, dest_team);
  if (!s || !d || src_pe < 0 || src_pe >= s->size) return -1;
  return d->index_of(s->world_pe(src_pe));
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask, shmem_team_t* new_team) {
  static const char* call = "shmem_team_split_strided";
  auto* r = rt(call);
  *new_team = SHMEM_TEAM_INVALID;
  TeamState* p = team_of(r, parent_team);
  if (!p) return -1;
  char why[256];
  if (!symmem::valid_triplet(p->size, start, stride, size, why, sizeof(why))) {
    report(p, call, "invalid triplet (start %d, stride %d, size %d) for a parent team of %d PEs: %s", start, stride,
           size, p->size, why);
    return -1;
  }
  int idx = stride == 0 ? (p->me == start ? 0 : -1)
                        : ((p->me - start) % stride == 0 ? (p->me - start) / stride : -1);
  bool member = idx >= 0 && idx < size;
  TeamState* t = nullptr;
  int rc = symmem::teams(*r).split(p, start, stride, size, member, config_contexts(config, config_mask), &t, call);
  if (rc == 0 && t) *new_team = handle_of(t);
  return rc;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team) {
  static const char* call = "shmem_team_split_2d";
  auto* r = rt(call);
  *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
  TeamState* p = team_of(r, parent_team);
  if (!p) return -1;
  if (xrange <= 0) {
    report(p, call, "xrange %d is not positive", xrange);
    return -1;
  }
  const int n = p->size;
  if (xrange > n) xrange = n;
  const int x = p->me % xrange, y = p->me / xrange;
  auto& reg = symmem::teams(*r);
  TeamState *xt = nullptr, *yt = nullptr;
  // Row y: parent PEs y*xrange ... (a shorter last row); column x: x, x+xrange, ...
  if (reg.split(p, y * xrange, 1, std::min(xrange, n - y * xrange), true, config_contexts(xaxis_config, xaxis_mask),
                &xt, call) != 0)
    return -1;
  if (reg.split(p, x, xrange, (n - x + xrange - 1) / xrange, true, config_contexts(yaxis_config, yaxis_mask), &yt,
                call) != 0) {
    reg.discard(xt);  // failed on every PE alike: nobody has used the row team
    return -1;
  }
  *xaxis_team = handle_of(xt);
  *yaxis_team = handle_of(yt);
  return 0;
}

void shmem_team_destroy(shmem_team_t team) {
  auto* r = rt("shmem_team_destroy");
  TeamState* t = team_of(r, team);
  if (!t) return;
  if (t->predefined)
    r->fail(symmem::Errc::kInvalidArgument, "shmem_team_destroy", "a predefined team cannot be destroyed");
  symmem::teams(*r).destroy(t);
}

void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  auto* r = rt("shmem_team_ptr");
  TeamState* t = team_of(r, team);
  if (!t || pe < 0 || pe >= t->size) return nullptr;
  return r->ptr(dest, t->world_pe(pe));
}

int shmem_team_sync(shmem_team_t team) {
  TeamState* t = team_of(rt("shmem_team_sync"), team);
  if (!t) return -1;
  t->sync();
  return 0;
}

int shmemx_team_barrier(shmem_team_t team) {
  auto* r = rt("shmemx_team_barrier");
  TeamState* t = team_of(r, team);
  if (!t) return -1;
  t->sync();  // the quiet is implied (see Runtime::Impl::barrier_all)
  return 0;
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx) {
  static const char* call = "shmem_team_create_ctx";
  TeamState* t = team_of(rt(call), team);
  if (!t) {
    *ctx = SHMEM_CTX_INVALID;
    return 1;
  }
  // The context keeps the handle itself (a predefined team's constant included), so
  // shmem_ctx_get_team returns a handle that compares equal to the one given here.
  return symmem::capi::create_ctx(call, options, reinterpret_cast<symmem_team_s*>(team), t->start, t->stride,
                                  t->size, ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team) {
  static const char* call = "shmem_ctx_get_team";
  if (ctx == SHMEM_CTX_INVALID) {
    *team = SHMEM_TEAM_INVALID;
    return 1;
  }
  if (ctx == SHMEM_CTX_DEFAULT) {
    (void)rt(call);
    *team = SHMEM_TEAM_WORLD;
    return 0;
  }
  (void)symmem::capi::resolve(call, ctx);  // reports a destroyed or foreign context
  *team = ctx->team ? reinterpret_cast<shmem_team_t>(ctx->team) : SHMEM_TEAM_WORLD;
  return 0;
}

int shmemx_team_max_teams(void) { return symmem::teams(*rt("shmemx_team_max_teams")).max_teams(); }

int shmemx_set_name(const void* ptr, const char* name) {
  symmem::Runtime::Impl* r = rt("shmemx_set_name");
  return name && r->dfx_.set_name(ptr, name) ? 0 : -1;
}

}  // extern "C"
