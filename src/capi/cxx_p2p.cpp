// The C++ API's atomics, signals and waits (symmem.hpp): the typed member templates arrive
// here as (kind, value bytes, representation) and run the runtime's p2p templates on the
// type of that representation, the same code the C API's typed names run.
#include <cstdint>
#include <cstring>

#include "runtime/p2p.hpp"
#include "symmem/symmem.hpp"

namespace symmem {
namespace {

using Impl = Runtime::Impl;
using detail::Num;

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the type of representation `num` (integers and floats only; the
// public templates admit no other element type here).
template <class F>
decltype(auto) with_num(Impl& r, const char* call, int num, F&& f) {
  switch (static_cast<Num>(num)) {
    case Num::kI16: return f(Tag<int16_t>{});
    case Num::kU16: return f(Tag<uint16_t>{});
    case Num::kI32: return f(Tag<int32_t>{});
    case Num::kU32: return f(Tag<uint32_t>{});
    case Num::kI64: return f(Tag<int64_t>{});
    case Num::kU64: return f(Tag<uint64_t>{});
    case Num::kF32: return f(Tag<float>{});
    case Num::kF64: return f(Tag<double>{});
    default: r.fail(Errc::kInvalidArgument, call, "element kind %d is not an atomic or wait type", num);
  }
}

const char* amo_name(int kind) {
  static const char* const names[] = {"atomic_fetch",      "atomic_set",      "atomic_swap",
                                      "atomic_compare_swap", "atomic_fetch_add", "atomic_add",
                                      "atomic_fetch_and",  "atomic_fetch_or", "atomic_fetch_xor"};
  return kind >= 0 && kind < int(sizeof(names) / sizeof(names[0])) ? names[kind] : "atomic";
}

}  // namespace

void Runtime::amo_bytes(AmoKind kind, void* dest, const void* value, const void* cond, void* fetched, int num,
                        int pe) {
  Impl& r = *impl_;
  const char* call = amo_name(kind);
  with_num(r, call, num, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (sizeof(T) < 4) {
      r.fail(Errc::kInvalidArgument, call, "atomics are on 4- and 8-byte words, not %zu", sizeof(T));
    } else {
      T* d = static_cast<T*>(dest);
      T v, c, out{};
      std::memcpy(&v, value, sizeof(T));
      std::memcpy(&c, cond, sizeof(T));
      if constexpr (std::is_integral_v<T>) {
        switch (kind) {
          case kAmoCompareSwap: out = p2p::atomic_compare_swap(r, call, d, c, v, pe); break;
          case kAmoFetchAdd:
          case kAmoAdd: out = p2p::atomic_fetch_op<p2p::Rmw::kAdd>(r, call, d, v, pe); break;
          case kAmoFetchAnd: out = p2p::atomic_fetch_op<p2p::Rmw::kAnd>(r, call, d, v, pe); break;
          case kAmoFetchOr: out = p2p::atomic_fetch_op<p2p::Rmw::kOr>(r, call, d, v, pe); break;
          case kAmoFetchXor: out = p2p::atomic_fetch_op<p2p::Rmw::kXor>(r, call, d, v, pe); break;
          default: break;
        }
      }
      switch (kind) {
        case kAmoFetch: out = p2p::atomic_fetch(r, call, d, pe); break;
        case kAmoSet: p2p::atomic_set(r, call, d, v, pe); break;
        case kAmoSwap: out = p2p::atomic_swap(r, call, d, v, pe); break;
        default:
          if constexpr (!std::is_integral_v<T>) r.fail(Errc::kInvalidArgument, call, "not an operation on floats");
      }
      std::memcpy(fetched, &out, sizeof(T));
    }
  });
}

bool Runtime::wait_(void* ivar, Cmp cmp, const void* value, void* out, int num, bool block) {
  Impl& r = *impl_;
  const char* call = block ? "wait_until" : "test";
  // The variable is this PE's own: checked like the C API's (in symmetric memory).
  return with_num(r, call, num, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      r.fail(Errc::kInvalidArgument, call, "waits are on integer variables");
      return false;
    } else {
    T* p = static_cast<T*>(ivar);
    (void)r.translate(call, p, sizeof(T), r.rank_);
    T x;
    std::memcpy(&x, value, sizeof(T));
    if (!block) return p2p::test(r, call, p, int(cmp), x);
    T v = p2p::wait_until(r, call, p, int(cmp), x);
    std::memcpy(out, &v, sizeof(T));
    return true;
    }
  });
}

void Runtime::put_signal(void* dest, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                         int pe) {
  p2p::put_signal(*impl_, "put_signal", dest, src, bytes, sig, value, int(op), pe);
}

uint64_t Runtime::signal_fetch(const uint64_t* sig) {
  return p2p::atomic_fetch(*impl_, "signal_fetch", sig, impl_->rank_);
}

uint64_t Runtime::signal_wait_until(uint64_t* sig, Cmp cmp, uint64_t value) {
  Impl& r = *impl_;
  (void)p2p::signal_addr(r, "signal_wait_until", sig, r.rank_);
  return p2p::wait_until(r, "signal_wait_until", sig, int(cmp), value);
}

}  // namespace symmem
