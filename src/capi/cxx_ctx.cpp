// The C++ API's contexts (symmem/ctx.hpp) and Runtime::keep_after_finalize: a Ctx is the
// runtime layer's context (the C API's shmem_ctx_t) plus its team's PE numbering; each
// call is a PE translation and one call into the runtime, as the C API's shmem_ctx_*.
#include <utility>

#include "heap/symmetric_heap.hpp"
#include "runtime/ctx.hpp"
#include "runtime/p2p.hpp"
#include "symmem/symmem.hpp"
#include "team/team.hpp"

namespace symmem {

Ctx Runtime::ctx_create(long options) {
  if (options & ~kCtxKnownOptions)
    impl_->fail(Errc::kInvalidArgument, "Runtime::ctx_create", "unknown context options 0x%lx", options);
  return Ctx(this, symmem::ctx_create(*impl_, options, nullptr, 0, 1, impl_->npes_), 0, 1, impl_->npes_);
}

Ctx Team::ctx_create(long options) {
  if (!s_) throw Error(Errc::kState, "Team::ctx_create: the team is invalid");
  Runtime::Impl& r = *s_->rt;
  if (options & ~kCtxKnownOptions)
    r.fail(Errc::kInvalidArgument, "Team::ctx_create", "unknown context options 0x%lx", options);
  return Ctx(rt_, symmem::ctx_create(r, options, reinterpret_cast<symmem_team_s*>(s_), s_->start, s_->stride, s_->size),
             s_->start, s_->stride, s_->size);
}

void Runtime::keep_after_finalize(const void* addr, size_t bytes) {
  if (!bytes) return;
  if (!impl_->heap_->retain(addr, bytes))
    throw Error(Errc::kInvalidArgument, "Runtime::keep_after_finalize: [" + std::to_string(uintptr_t(addr)) + ", +" +
                                            std::to_string(bytes) + ") is not in a heap mapped by this PE");
}

Ctx& Ctx::operator=(Ctx&& o) noexcept {
  if (this != &o) {
    try {
      destroy();
    } catch (...) {
    }
    rt_ = o.rt_;
    c_ = std::exchange(o.c_, nullptr);
    start_ = o.start_;
    stride_ = o.stride_;
    size_ = o.size_;
  }
  return *this;
}

Ctx::~Ctx() {
  try {
    destroy();
  } catch (...) {  // a failed quiet (a lost peer) is reported where it was detected
  }
}

Runtime* Ctx::need() const {
  if (!c_) throw Error(Errc::kState, "Ctx: the context is invalid (destroyed or moved from)");
  return rt_;
}

long Ctx::options() const { return c_ ? c_->options : 0; }

int Ctx::world_pe(int pe) const {
  Runtime* r = need();
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(size_))
    r->impl().fail(Errc::kInvalidArgument, "Ctx", "PE %d is out of range for the context's team (%d PEs, 0..%d)", pe,
                   size_, size_ - 1);
  return start_ + pe * stride_;
}

void Ctx::put(void* dest, const void* src, size_t bytes, int pe) {
  const int w = world_pe(pe);
  const UcxLaneScope lane(c_->lane);
  rt_->impl().put("Ctx::put", dest, src, bytes, w);
}

void Ctx::get(void* dest, const void* src, size_t bytes, int pe) {
  const int w = world_pe(pe);
  const UcxLaneScope lane(c_->lane);
  rt_->impl().get("Ctx::get", dest, src, bytes, w);
}

void Ctx::put_nbi(void* dest, const void* src, size_t bytes, int pe) {
  const int w = world_pe(pe);
  const UcxLaneScope lane(c_->lane);
  rt_->impl().put_nbi("Ctx::put_nbi", dest, src, bytes, w);
}

void Ctx::get_nbi(void* dest, const void* src, size_t bytes, int pe) {
  const int w = world_pe(pe);
  const UcxLaneScope lane(c_->lane);
  rt_->impl().get_nbi("Ctx::get_nbi", dest, src, bytes, w);
}

void Ctx::put_signal(void* dest, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  const int w = world_pe(pe);
  const UcxLaneScope lane(c_->lane);
  p2p::put_signal(rt_->impl(), "Ctx::put_signal", dest, src, bytes, sig, value, int(op), w);
}

void Ctx::fence() { ctx_fence(need()->impl(), c_); }

// The context's own operations, and the atomics, which go through the Runtime's calls.
void Ctx::quiet() {
  ctx_quiet(need()->impl(), c_);
  need()->impl().quiet();
}

void Ctx::destroy() {
  if (!c_) return;
  ctx_destroy(rt_->impl(), std::exchange(c_, nullptr));
}

}  // namespace symmem
