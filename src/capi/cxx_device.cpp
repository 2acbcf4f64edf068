// The C++ API's explicit device-memory calls (symmem.hpp put_device/get_device, team.hpp
// *_on_stream): each is a check and one call into the runtime's device operations
// (runtime/device_ops.cpp), as the C API's stream-ordered forms (capi/device.cpp) are.
#include <cstdint>
#include <string>

#include "device/kernel_args.hpp"
#include "runtime/runtime_impl.hpp"
#include "symmem/symmem.hpp"
#include "team/team.hpp"

namespace symmem {
namespace {

using Impl = Runtime::Impl;
using device::CollKind;
using device::KernelId;

void* st(void* s) { return Impl::caller_stream(s); }

Impl* need(const TeamState* s, const char* call) {
  if (!s)
    throw Error(Errc::kState, std::string(call) +
                                  ": the team is invalid (this PE is not a member, or it was destroyed or moved from)");
  return s->rt;
}

void coll(const TeamState* s, const char* call, CollKind kind, KernelId kernel, void* dest, const void* src, size_t n,
          size_t elem, int root, void* stream) {
  need(s, call)->device_coll(call, int(kind), int(kernel), s->start, s->stride, s->size, s->me, dest, src, n, elem,
                             root, st(stream));
}

// The reduction kernel of (type, op) and the element size; throws for a pair the device
// collectives do not have (prod of floating types, bitwise ops).
KernelId reduce_kernel(const char* call, Team::DeviceType t, ReduceOp op, size_t* es) {
  using DT = Team::DeviceType;
  static const char* const types[] = {"float", "half", "bfloat16", "int32", "int64"};
  static const char* const ops[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
#define SYMMEM_PICK(NAME, SIZE)                                              \
  *es = SIZE;                                                                \
  switch (op) {                                                              \
    case ReduceOp::kSum: return KernelId::reduce_##NAME##_sum;               \
    case ReduceOp::kMin: return KernelId::reduce_##NAME##_min;               \
    case ReduceOp::kMax: return KernelId::reduce_##NAME##_max;               \
    default: break;                                                          \
  }
#define SYMMEM_PICK_INT(NAME, SIZE)                                          \
  SYMMEM_PICK(NAME, SIZE)                                                    \
  if (op == ReduceOp::kProd) return KernelId::reduce_##NAME##_prod;
  switch (t) {
    case DT::kFloat: { SYMMEM_PICK(f32, 4) break; }
    case DT::kHalf: { SYMMEM_PICK(f16, 2) break; }
    case DT::kBfloat16: { SYMMEM_PICK(bf16, 2) break; }
    case DT::kInt32: { SYMMEM_PICK_INT(i32, 4) break; }
    case DT::kInt64: { SYMMEM_PICK_INT(i64, 8) break; }
    default:
      throw Error(Errc::kInvalidArgument, std::string(call) + ": unknown device type " + std::to_string(int(t)));
  }
#undef SYMMEM_PICK_INT
#undef SYMMEM_PICK
  throw Error(Errc::kInvalidArgument, std::string(call) + ": op " + ops[int(op)] + " on " + types[int(t)] +
                                          ": device reductions take sum, min, max (and prod on int32, int64)");
}

}  // namespace

void Runtime::put_device(void* d, const void* s, size_t n, int pe) {
  impl_->device_put("put_device", d, s, n, pe, nullptr);
}
void Runtime::get_device(void* d, const void* s, size_t n, int pe) {
  impl_->device_get("get_device", d, s, n, pe, nullptr);
}

void Team::sync_on_stream(void* stream) {
  coll(s_, "sync_on_stream", CollKind::kBarrier, KernelId::coll, nullptr, nullptr, 0, 1, 0, stream);
}
void Team::broadcast_on_stream(void* dest, const void* src, size_t bytes, int root, void* stream) {
  coll(s_, "broadcast_on_stream", CollKind::kBroadcast, KernelId::coll, dest, src, bytes, 1, root, stream);
}
void Team::fcollect_on_stream(void* dest, const void* src, size_t bytes, void* stream) {
  coll(s_, "fcollect_on_stream", CollKind::kFcollect, KernelId::coll, dest, src, bytes, 1, 0, stream);
}
void Team::alltoall_on_stream(void* dest, const void* src, size_t bytes, void* stream) {
  coll(s_, "alltoall_on_stream", CollKind::kAlltoall, KernelId::coll, dest, src, bytes, 1, 0, stream);
}
void Team::reduce_on_stream(DeviceType type, ReduceOp op, void* dest, const void* src, size_t n, void* stream) {
  size_t es = 0;
  const KernelId k = reduce_kernel("reduce_on_stream", type, op, &es);
  coll(s_, "reduce_on_stream", CollKind::kAllreduce, k, dest, src, n, es, 0, stream);
}
void Team::reduce_scatter_on_stream(DeviceType type, ReduceOp op, void* dest, const void* src, size_t n,
                                    void* stream) {
  size_t es = 0;
  const KernelId k = reduce_kernel("reduce_scatter_on_stream", type, op, &es);
  coll(s_, "reduce_scatter_on_stream", CollKind::kReduceScatter, k, dest, src, n, es, 0, stream);
}

}  // namespace symmem
