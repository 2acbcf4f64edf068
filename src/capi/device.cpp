// The stream-ordered forms of the C API (shmemx_*_on_stream, symmem/shmemx_device.h): a
// check and one call into the runtime's device operations (runtime/device_ops.cpp).
#include "capi/team_handle.hpp"
#include "device/kernel_args.hpp"

using symmem::TeamState;
using symmem::capi::rt;
using symmem::capi::team_of;
using symmem::device::CollKind;
using symmem::device::KernelId;

namespace {

using Impl = symmem::Runtime::Impl;

void* st(shmemx_stream_t s) { return Impl::caller_stream(static_cast<void*>(s)); }

// One collective of team h on device memory; -1 for SHMEM_TEAM_INVALID.
int coll(const char* call, shmem_team_t h, CollKind kind, KernelId kernel, void* dest, const void* src, size_t n,
         size_t elem, int root, shmemx_stream_t stream) {
  Impl* r = rt(call);
  TeamState* t = team_of(r, h);
  if (!t) return -1;
  r->device_coll(call, int(kind), int(kernel), t->start, t->stride, t->size, t->me, dest, src, n, elem, root, st(stream));
  return 0;
}

}  // namespace

extern "C" {

void shmemx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe, shmemx_stream_t stream) {
  rt("shmemx_putmem_on_stream")->device_put("shmemx_putmem_on_stream", dest, source, nelems, pe, st(stream));
}
void shmemx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe, shmemx_stream_t stream) {
  rt("shmemx_getmem_on_stream")->device_get("shmemx_getmem_on_stream", dest, source, nelems, pe, st(stream));
}
void shmemx_putmem_signal_on_stream(void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,
                                    int sig_op, int pe, shmemx_stream_t stream) {
  static const char* call = "shmemx_putmem_signal_on_stream";
  rt(call)->device_put_signal(call, dest, source, nelems, sig_addr, signal, sig_op, pe, st(stream));
}
void shmemx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe, shmemx_stream_t stream) {
  rt("shmemx_signal_op_on_stream")->device_signal("shmemx_signal_op_on_stream", sig_addr, signal, sig_op, pe, st(stream));
}
void shmemx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value, shmemx_stream_t stream) {
  static const char* call = "shmemx_signal_wait_until_on_stream";
  rt(call)->device_wait_on_stream(call, sig_addr, cmp, cmp_value, st(stream));
}
void shmemx_quiet_on_stream(shmemx_stream_t) { (void)rt("shmemx_quiet_on_stream"); }

void shmemx_barrier_all_on_stream(shmemx_stream_t stream) {
  (void)coll("shmemx_barrier_all_on_stream", SHMEM_TEAM_WORLD, CollKind::kBarrier, KernelId::coll, nullptr, nullptr, 0,
             1, 0, stream);
}
void shmemx_sync_all_on_stream(shmemx_stream_t stream) {
  (void)coll("shmemx_sync_all_on_stream", SHMEM_TEAM_WORLD, CollKind::kBarrier, KernelId::coll, nullptr, nullptr, 0, 1,
             0, stream);
}
int shmemx_barrier_on_stream(shmem_team_t team, shmemx_stream_t stream) {
  return coll("shmemx_barrier_on_stream", team, CollKind::kBarrier, KernelId::coll, nullptr, nullptr, 0, 1, 0, stream);
}
int shmemx_team_sync_on_stream(shmem_team_t team, shmemx_stream_t stream) {
  return coll("shmemx_team_sync_on_stream", team, CollKind::kBarrier, KernelId::coll, nullptr, nullptr, 0, 1, 0, stream);
}
int shmemx_broadcastmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root,
                                  shmemx_stream_t stream) {
  return coll("shmemx_broadcastmem_on_stream", team, CollKind::kBroadcast, KernelId::coll, dest, source, nelems, 1,
              PE_root, stream);
}
int shmemx_fcollectmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                 shmemx_stream_t stream) {
  return coll("shmemx_fcollectmem_on_stream", team, CollKind::kFcollect, KernelId::coll, dest, source, nelems, 1, 0,
              stream);
}
int shmemx_alltoallmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                 shmemx_stream_t stream) {
  return coll("shmemx_alltoallmem_on_stream", team, CollKind::kAlltoall, KernelId::coll, dest, source, nelems, 1, 0,
              stream);
}

// The kernel and element size of each C type name.
#define SYMMEM_KID_float(OP) KernelId::reduce_f32_##OP
#define SYMMEM_KID_half(OP) KernelId::reduce_f16_##OP
#define SYMMEM_KID_bfloat16(OP) KernelId::reduce_bf16_##OP
#define SYMMEM_KID_int32(OP) KernelId::reduce_i32_##OP
#define SYMMEM_KID_int64(OP) KernelId::reduce_i64_##OP
#define SYMMEM_ES_float 4
#define SYMMEM_ES_half 2
#define SYMMEM_ES_bfloat16 2
#define SYMMEM_ES_int32 4
#define SYMMEM_ES_int64 8
#define SYMMEM_DEVICE_REDUCE_DEF(NAME, TYPE, OP)                                                                      \
  int shmemx_##NAME##_##OP##_reduce_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nreduce,     \
                                              shmemx_stream_t stream) {                                             \
    return coll("shmemx_" #NAME "_" #OP "_reduce_on_stream", team, CollKind::kAllreduce, SYMMEM_KID_##NAME(OP), dest, \
                source, nreduce, SYMMEM_ES_##NAME, 0, stream);                                                      \
  }                                                                                                                 \
  int shmemx_##NAME##_##OP##_reducescatter_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,             \
                                                     size_t nreduce, shmemx_stream_t stream) {                      \
    return coll("shmemx_" #NAME "_" #OP "_reducescatter_on_stream", team, CollKind::kReduceScatter,                  \
                SYMMEM_KID_##NAME(OP), dest, source, nreduce, SYMMEM_ES_##NAME, 0, stream);                         \
  }
SHMEMX_DEVICE_REDUCE_TYPES(SYMMEM_DEVICE_REDUCE_DEF)

}  // extern "C"
