// symmem/typed.hpp — the operations of the typed C++ API and the element types each takes
// (included by symmem.hpp).
//
// Which types an operation takes is the OpenSHMEM 1.5 tables, read from the one type table
// (symmem/shmem_types.h) rather than listed again here: a reduction with `and` takes the
// table's bitwise types, `min` / `max` its min/max types, `sum` / `prod` (and the scans)
// its arithmetic types, complex ones as std::complex; atomics take the AMO tables' types.
// The concepts below reject any other type at compile time.
#pragma once

#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <type_traits>

#include "symmem/shmem_types.h"

namespace symmem {

// Reduction operations (shmem_TYPENAME_OP_reduce). kAnd / kOr / kXor are bitwise.
enum class ReduceOp : int { kSum, kProd, kMin, kMax, kAnd, kOr, kXor };

// Comparison of the waits (values of SHMEM_CMP_EQ ... SHMEM_CMP_LE).
enum class Cmp : int { kEq = 0, kNe = 1, kGt = 2, kGe = 3, kLt = 4, kLe = 5 };

// Signal update of put_signal (values of SHMEM_SIGNAL_SET / SHMEM_SIGNAL_ADD).
enum class SignalOp : int { kSet = 0, kAdd = 1 };

// A reduction operation as a value, for team.reduce(symmem::op::sum, dest, src).
template <ReduceOp Op>
struct OpTag {
  static constexpr ReduceOp value = Op;
};
namespace op {
inline constexpr OpTag<ReduceOp::kSum> sum{};
inline constexpr OpTag<ReduceOp::kProd> prod{};
inline constexpr OpTag<ReduceOp::kMin> min{};
inline constexpr OpTag<ReduceOp::kMax> max{};
inline constexpr OpTag<ReduceOp::kAnd> bit_and{};
inline constexpr OpTag<ReduceOp::kOr> bit_or{};
inline constexpr OpTag<ReduceOp::kXor> bit_xor{};
}  // namespace op

namespace detail {

// The C++ type of a table entry (the C complex types are std::complex, same layout).
template <class T>
struct CxxOf {
  using type = T;
};
#if !defined(__STDC_NO_COMPLEX__)
template <>
struct CxxOf<double _Complex> {
  using type = std::complex<double>;
};
template <>
struct CxxOf<float _Complex> {
  using type = std::complex<float>;
};
#endif

template <class T> inline constexpr bool kReduceBitwise = false;
template <class T> inline constexpr bool kReduceMinMax = false;
template <class T> inline constexpr bool kReduceArith = false;
template <class T> inline constexpr bool kAmoStd = false;
template <class T> inline constexpr bool kAmoExt = false;
template <class T> inline constexpr bool kAmoBitwise = false;
template <class T> inline constexpr bool kP2pSync = false;

// The tables' distinct C++ types (the fixed-width names are typedefs of these).
#define SYMMEM_TYPED_SET(TYPE, NAME, FLAG) \
  template <>                              \
  inline constexpr bool FLAG<typename CxxOf<TYPE>::type> = true;
#define SYMMEM_TYPED_SET2(TYPE, NAME) SYMMEM_TYPED_SET(TYPE, NAME, SYMMEM_TYPED_FLAG)
SHMEM_REDUCE_GENERIC_BITWISE_TYPES(SYMMEM_TYPED_SET, kReduceBitwise)
SHMEM_REDUCE_GENERIC_MINMAX_TYPES(SYMMEM_TYPED_SET, kReduceMinMax)
SHMEM_REDUCE_GENERIC_ARITH_TYPES(SYMMEM_TYPED_SET, kReduceArith)
#define SYMMEM_TYPED_FLAG kAmoStd
SHMEM_AMO_STD_GENERIC_TYPES(SYMMEM_TYPED_SET2)
#undef SYMMEM_TYPED_FLAG
#define SYMMEM_TYPED_FLAG kAmoExt
SHMEM_AMO_EXT_GENERIC_TYPES(SYMMEM_TYPED_SET2)
#undef SYMMEM_TYPED_FLAG
#define SYMMEM_TYPED_FLAG kAmoBitwise
SHMEM_AMO_BITWISE_GENERIC_TYPES(SYMMEM_TYPED_SET2)
#undef SYMMEM_TYPED_FLAG
#define SYMMEM_TYPED_FLAG kP2pSync
SHMEM_P2P_SYNC_GENERIC_TYPES(SYMMEM_TYPED_SET2)
#undef SYMMEM_TYPED_FLAG
#undef SYMMEM_TYPED_SET2
#undef SYMMEM_TYPED_SET

// What the library's type-erased calls need to know of an element type: its
// representation (the kernels of `long` and `long long` are the same code).
enum class Num : int { kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64, kF32, kF64, kF80, kC32, kC64, kCount };

template <class T>
constexpr Num num_of() {
  if constexpr (std::is_same_v<T, std::complex<float>>) return Num::kC32;
  else if constexpr (std::is_same_v<T, std::complex<double>>) return Num::kC64;
  else if constexpr (std::is_floating_point_v<T>)
    return sizeof(T) == 4 ? Num::kF32 : sizeof(T) == 8 ? Num::kF64 : Num::kF80;
  else {
    static_assert(std::is_integral_v<T> && sizeof(T) <= 8, "not an element type of a typed operation");
    constexpr int lg = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
    return static_cast<Num>((std::is_signed_v<T> ? 0 : 4) + lg);
  }
}

template <class T, ReduceOp Op>
constexpr bool reducible() {
  if constexpr (Op == ReduceOp::kAnd || Op == ReduceOp::kOr || Op == ReduceOp::kXor) return kReduceBitwise<T>;
  else if constexpr (Op == ReduceOp::kMin || Op == ReduceOp::kMax) return kReduceMinMax<T>;
  else return kReduceArith<T>;
}

// A contiguous sequence of elements (std::span, SymSpan, std::vector, std::array, ...).
template <class R>
concept Contiguous = std::ranges::contiguous_range<R> && std::ranges::sized_range<R>;
template <class R>
using Elem = std::remove_cv_t<std::ranges::range_value_t<R>>;
template <class R>
concept Writable = Contiguous<R> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

}  // namespace detail

// T may be reduced with Op (OpenSHMEM 1.5 table 10).
template <class T, ReduceOp Op>
concept Reducible = detail::reducible<std::remove_cv_t<T>, Op>();
// The standard AMO types (fetch_add, add, inc, compare_swap), the extended ones (fetch,
// set, swap: also float, double), the bitwise ones (fetch_and / or / xor), and the types
// of wait_until (tables 6, 7, 8, 12).
template <class T>
concept AmoType = detail::kAmoStd<std::remove_cv_t<T>>;
template <class T>
concept AmoExtType = detail::kAmoExt<std::remove_cv_t<T>>;
template <class T>
concept AmoBitwiseType = detail::kAmoBitwise<std::remove_cv_t<T>>;
template <class T>
concept WaitType = detail::kP2pSync<std::remove_cv_t<T>>;

// dest / src of a data collective: contiguous ranges of one trivially copyable type, dest
// writable.
template <class D, class S>
concept CollectiveArgs = detail::Writable<D> && detail::Contiguous<S> &&
                         std::same_as<detail::Elem<D>, detail::Elem<S>> &&
                         std::is_trivially_copyable_v<detail::Elem<S>>;

}  // namespace symmem
