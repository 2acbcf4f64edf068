// The host element types of symmem/coll_algos.hpp: f16 / bf16 conversions against an
// independent reference (frexp and nearbyint in double: round to nearest, ties to even),
// every 16-bit pattern round-tripped, every tie between neighbours, and a sweep of floats;
// and combine() per op on integers (wrapping) and floats.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include "symmem/coll_algos.hpp"

namespace sa = symmem::algo;

namespace {

// x rounded to `bits` significant bits, with subnormals below 2^emin quantised at
// 2^(emin - bits + 1), and overflow past `max` (after rounding) to infinity.
double round_to(double x, int bits, int emin, double max) {
  if (x == 0 || std::isinf(x)) return x;
  int e;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  const int q = std::max(e - bits, emin - bits + 1);  // exponent of the last kept bit
  const double r = std::nearbyint(std::ldexp(x, -q));
  const double y = std::ldexp(r, q);
  return std::fabs(y) > max ? std::copysign(INFINITY, x) : y;
}
double ref_f16(float f) { return round_to(f, 11, -14, 65504.0); }
double ref_bf16(float f) { return round_to(f, 8, -126, double(std::numeric_limits<float>::max())); }

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void check_one(float f) {
  if (std::isnan(f)) {
    EXPECT_TRUE(std::isnan(sa::f16_to_float(sa::float_to_f16(f))));
    EXPECT_TRUE(std::isnan(sa::bf16_to_float(sa::float_to_bf16(f))));
    return;
  }
  ASSERT_EQ(double(sa::f16_to_float(sa::float_to_f16(f))), ref_f16(f)) << "f16 of " << f;
  ASSERT_EQ(double(sa::bf16_to_float(sa::float_to_bf16(f))), ref_bf16(f)) << "bf16 of " << f;
  ASSERT_EQ(std::signbit(sa::f16_to_float(sa::float_to_f16(f))), std::signbit(f));
}

TEST(AlgoTypes, KnownValues) {
  EXPECT_EQ(sa::float_to_f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(sa::float_to_f16(-2.0f).bits, 0xc000);
  EXPECT_EQ(sa::float_to_f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(sa::float_to_f16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(sa::float_to_f16(65520.0f).bits, 0x7c00);  // the tie above max rounds to Inf
  EXPECT_EQ(sa::float_to_f16(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(sa::float_to_f16(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie to even: 0
  EXPECT_EQ(sa::float_to_f16(std::ldexp(3.0f, -25)).bits, 0x0002);  // tie to even: 2
  EXPECT_EQ(sa::float_to_f16(INFINITY).bits, 0x7c00);
  EXPECT_EQ(sa::float_to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(sa::float_to_bf16(bits_float(0x3f808000)).bits, 0x3f80);  // tie to even
  EXPECT_EQ(sa::float_to_bf16(bits_float(0x3f818000)).bits, 0x3f82);  // tie to even
  EXPECT_EQ(sa::float_to_bf16(bits_float(0x7f7fffff)).bits, 0x7f80);  // rounds to Inf
  EXPECT_EQ(sa::f16_to_float(sa::f16{0x0001}), std::ldexp(1.0f, -24));
  EXPECT_EQ(sa::f16_to_float(sa::f16{0x03ff}), std::ldexp(1023.0f, -24));
}

TEST(AlgoTypes, EveryPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = sa::f16_to_float(sa::f16{uint16_t(b)});
    const float g = sa::bf16_to_float(sa::bf16{uint16_t(b)});
    if (((b >> 10) & 0x1f) == 0x1f && (b & 0x3ff)) EXPECT_TRUE(std::isnan(f)) << b;
    else ASSERT_EQ(sa::float_to_f16(f).bits, b) << "f16 pattern " << b;
    if (((b >> 7) & 0xff) == 0xff && (b & 0x7f)) EXPECT_TRUE(std::isnan(g)) << b;
    else ASSERT_EQ(sa::float_to_bf16(g).bits, b) << "bf16 pattern " << b;
  }
}

TEST(AlgoTypes, TiesAndSweep) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  for (uint32_t b = 0; b < 0x7c00; ++b) {  // every midpoint between neighbouring finite halves
    const double lo = sa::f16_to_float(sa::f16{uint16_t(b)}), hi = sa::f16_to_float(sa::f16{uint16_t(b + 1)});
    const float mid = float((lo + hi) / 2);
    check_one(mid);
    check_one(-mid);
  }
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    const double lo = sa::bf16_to_float(sa::bf16{uint16_t(b)}), hi = sa::bf16_to_float(sa::bf16{uint16_t(b + 1)});
    check_one(float((lo + hi) / 2));
  }
  for (uint64_t u = 0; u < (1ull << 32); u += 4093) check_one(bits_float(uint32_t(u)));
}

TEST(AlgoTypes, Combine) {
  using R = sa::RedOp;
  EXPECT_EQ((sa::combine<R::kSum, int32_t>(INT32_MAX, 1)), INT32_MIN);  // wraps, no UB
  EXPECT_EQ((sa::combine<R::kProd, int64_t>(INT64_MAX, 2)), -2);
  EXPECT_EQ((sa::combine<R::kMin, int32_t>(-5, 3)), -5);
  EXPECT_EQ((sa::combine<R::kMax, int64_t>(-5, 3)), 3);
  EXPECT_EQ((sa::combine<R::kSum, float>(1.5f, 2.25f)), 3.75f);
  EXPECT_EQ((sa::combine<R::kMin, float>(1.5f, -2.25f)), -2.25f);
  EXPECT_EQ((sa::combine<R::kMax, float>(1.5f, -2.25f)), 1.5f);
  static_assert(sa::kOpAllowed<int32_t, R::kProd> && !sa::kOpAllowed<float, R::kProd> &&
                !sa::kOpAllowed<sa::f16, R::kProd>);
  static_assert(std::is_same_v<sa::elem_t<sa::DType::kF16>, sa::f16> &&
                std::is_same_v<sa::elem_t<sa::DType::kBF16>, sa::bf16>);
}

TEST(AlgoTypes, Parts) {
  // Parts tile [0, total) in order, each a multiple of the alignment but the last.
  for (size_t total : {0, 1, 7, 16, 1003, 4096})
    for (size_t parts : {1, 2, 3, 8})
      for (size_t align : {1, 4, 16}) {
        size_t next = 0;
        for (size_t i = 0; i < parts; ++i) {
          const auto r = sa::detail::part(total, parts, i, align);
          ASSERT_EQ(r.lo, next);
          ASSERT_LE(r.hi, total);
          if (r.hi < total) {
            ASSERT_EQ(r.len() % align, 0u);
          }
          next = r.hi;
        }
        ASSERT_EQ(next, total) << total << " " << parts << " " << align;
      }
}

}  // namespace
