// The reduction kernels (coll/reduce_ops.hpp) of every instruction set this CPU runs:
// acc, combine and combine_stream must give bit for bit what the sequential expression
// gives, for lengths around the vector widths (0, 1, 7, 8, 4097 elements), inputs off
// their natural vector alignment, several outputs, and in place (an output that is an
// input). Values include rounding, signed zeros and NaNs, where a kernel that reordered,
// contracted or picked the other operand of a min / max would differ.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "coll/reduce_ops.hpp"

namespace {

using symmem::coll::ReduceOp;

template <class T>
T value(size_t i, int operand) {
  const size_t k = i * 2654435761u + size_t(operand) * 40503u;
  if constexpr (std::is_floating_point_v<T>) {
    if (k % 97 == 0) return std::numeric_limits<T>::quiet_NaN();
    if (k % 89 == 0) return k % 2 ? T(-0.0) : T(0.0);
    return T(double(k % 100003) / 7.0 * (k % 3 ? 1e-7 : 1e5) * (k % 5 ? 1 : -1));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(k % 1000 - (k % 7 == 0 ? 500 : 0));
  } else {
    using R = typename T::value_type;
    return T(value<R>(i, operand), value<R>(i + 1, operand + 3));
  }
}

// A buffer of n elements starting `skew` elements past a 64-byte boundary.
template <class T>
struct Buf {
  std::vector<unsigned char> raw;
  T* p;
  Buf(size_t n, size_t skew) : raw((n + skew) * sizeof(T) + 128) {
    auto base = (reinterpret_cast<uintptr_t>(raw.data()) + 63) & ~uintptr_t(63);
    p = reinterpret_cast<T*>(base + skew * sizeof(T));
  }
};

std::vector<int> isas() {
  std::vector<int> v{symmem::kIsaBase};
  if (symmem::cpu_has_avx2()) v.push_back(symmem::kIsaAvx2);
  return v;
}

// memcmp that accepts zero bytes at a null pointer (an empty vector's data()), which
// memcmp itself does not (UBSan: "null pointer passed as argument 2").
inline bool same_bytes(const void* a, const void* b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

template <class T, class F>
void check(const ReduceOp& op, F ref, const char* name) {
  constexpr size_t kLine = 64 / sizeof(T);
  for (int isa : isas()) {
    const auto& k = op.isa[isa];
    const std::string where = std::string(name) + " isa " + std::to_string(isa);
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(4097)}) {
      for (size_t skew : {size_t(0), size_t(1), size_t(3)}) {
        Buf<T> a(n, skew), b(n, skew ? skew + 1 : 0), o(n, skew);
        std::vector<T> expect(n);
        for (size_t i = 0; i < n; ++i) {
          a.p[i] = value<T>(i, 0);
          b.p[i] = value<T>(i, 1);
          expect[i] = ref(a.p[i], b.p[i]);
        }
        k.combine(o.p, a.p, b.p, n);
        EXPECT_TRUE(same_bytes(o.p, expect.data(), n * sizeof(T))) << where << " combine n " << n << " skew " << skew;
        k.acc(a.p, b.p, n);
        EXPECT_TRUE(same_bytes(a.p, expect.data(), n * sizeof(T))) << where << " acc n " << n << " skew " << skew;
      }
      // combine_stream: whole lines, aligned outputs, 1-3 of them, and in place (out 0 is a)
      const size_t lines = n / kLine * kLine;
      for (int nout = 1; nout <= 3; ++nout)
        for (bool in_place : {false, true}) {
          Buf<T> a(lines, 0), b(lines, 1), o1(lines, 0), o2(lines, 0), o3(lines, 0);
          std::vector<T> expect(lines);
          for (size_t i = 0; i < lines; ++i) {
            a.p[i] = value<T>(i, 2);
            b.p[i] = value<T>(i, 3);
            expect[i] = ref(a.p[i], b.p[i]);
          }
          void* outs[3] = {in_place ? a.p : o1.p, o2.p, o3.p};
          k.combine_stream(outs, nout, a.p, b.p, lines);
          for (int j = 0; j < nout; ++j)
            EXPECT_TRUE(same_bytes(outs[j], expect.data(), lines * sizeof(T)))
                << where << " combine_stream n " << lines << " out " << j << " of " << nout << (in_place ? " in place" : "");
        }
    }
  }
}

TEST(ReduceKernels, MatchSequentialExpression) {
  using namespace symmem::coll;
  auto sum = [](auto a, auto b) { return decltype(a)(a + b); };
  auto prod = [](auto a, auto b) { return decltype(a)(a * b); };
  auto max = [](auto a, auto b) { return b > a ? b : a; };
  auto min = [](auto a, auto b) { return b < a ? b : a; };
  check<double>(op_sum<double>, sum, "sum double");
  check<double>(op_prod<double>, prod, "prod double");
  check<double>(op_max<double>, max, "max double");
  check<double>(op_min<double>, min, "min double");
  check<float>(op_sum<float>, sum, "sum float");
  check<float>(op_max<float>, max, "max float");
  check<std::complex<double>>(op_sum<std::complex<double>>, sum, "sum complex double");
  check<std::complex<float>>(op_prod<std::complex<float>>, prod, "prod complex float");
  check<int64_t>(op_prod<int64_t>, prod, "prod int64");
  check<int>(op_max<int>, max, "max int");
  check<unsigned char>(op_sum<unsigned char>, sum, "sum unsigned char");
  check<short>(op_sum<short>, sum, "sum short");
  check<uint32_t>(op_xor<uint32_t>, [](auto a, auto b) { return decltype(a)(a ^ b); }, "xor uint32");
}

TEST(ReduceKernels, Avx2WhereTheCpuHasIt) {
  if (!symmem::cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2: only the baseline kernels ran";
  SUCCEED();
}

}  // namespace
