#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "distgraph/core/half.hpp"

namespace test_core_half {

using namespace distgraph;

namespace {

/// Reference binary16 decoding written from the IEEE definition (sign, 5-bit exponent
/// with bias 15, 10-bit fraction; exponent 0 subnormal, 31 inf/NaN).
double half_reference(std::uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0x1f)
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

/// The float32 nearest to `x` among all 65536 binary16 values, ties to even, by search:
/// an independent check of float_to_half's rounding.
std::uint16_t half_nearest_reference(float x) {
  if (std::isnan(x)) return 0x7e00;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  // 65520 = max half (65504) + half an ulp (16): at or above it, round to infinity.
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t best = 0;
  double best_d = a;
  for (std::uint16_t h = 1; h < 0x7c00; ++h) {
    const double d = std::fabs(half_reference(h) - a);
    if (d < best_d || (d == best_d && (h & 1) == 0 && (best & 1) == 1)) {
      best = h;
      best_d = d;
    }
  }
  return sign | best;
}

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

}  // namespace

TEST_CASE("half_to_float decodes every binary16 value exactly", "[core]") {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    INFO("half bits " << h);
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    const double ref = half_reference(static_cast<std::uint16_t>(h));
    if (std::isnan(ref)) {
      REQUIRE(std::isnan(f));
      // The payload and sign survive: the bits come back unchanged through float_to_half
      // for quiet NaNs.
      CHECK(std::signbit(f) == ((h & 0x8000) != 0));
    } else {
      REQUIRE(static_cast<double>(f) == ref);
      REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));
      // Every finite half is a float: it converts back to itself.
      REQUIRE(float_to_half(f) == h);
    }
  }
}

TEST_CASE("float_to_half rounds to the nearest binary16 value, ties to even", "[core]") {
  std::mt19937 rng(7);
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e9f, -1e9f,
                           std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(1.5f, -25),
                           std::ldexp(1.0f, -26), std::ldexp(1.0f, -14), std::ldexp(1023.5f, -24),
                           1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11),
                           std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity()};
  // Random magnitudes over the whole half range and beyond, plus exact midpoints.
  std::uniform_real_distribution<float> expo(-28.0f, 17.0f);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int i = 0; i < 400; ++i) xs.push_back(unit(rng) * std::exp2(expo(rng)));
  for (std::uint16_t h = 0x0001; h < 0x7bff; h += 97) {
    const double mid = (half_reference(h) + half_reference(static_cast<std::uint16_t>(h + 1))) / 2;
    xs.push_back(static_cast<float>(mid));  // exact: a midpoint needs 12 significant bits
  }
  for (float x : xs) {
    INFO("x = " << x << " (bits " << bits_of(x) << ")");
    REQUIRE(float_to_half(x) == half_nearest_reference(x));
  }
}

TEST_CASE("float_to_half keeps NaN a NaN and the sign of zero and infinity", "[core]") {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float snan = std::bit_cast<float>(0x7f800001u);  // payload only in the low bits
  CHECK(std::isnan(half_to_float(float_to_half(qnan))));
  CHECK(std::isnan(half_to_float(float_to_half(snan))));
  CHECK(std::isnan(half_to_float(float_to_half(-qnan))));
  CHECK(std::signbit(half_to_float(float_to_half(-qnan))));
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(float_to_half(1e6f) == 0x7c00);        // overflow
  CHECK(float_to_half(65504.0f) == 0x7bff);    // the largest half
  CHECK(float_to_half(1e-9f) == 0x0000);       // underflow to zero
  CHECK(float_to_half(-1e-9f) == 0x8000);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // the smallest subnormal
}

TEST_CASE("bfloat16 conversion rounds to nearest even and keeps NaN, inf and subnormals",
          "[core]") {
  // Exactly representable: the high 16 bits of the float.
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 3.0e38f, std::ldexp(1.0f, -133)}) {
    const std::uint16_t b = static_cast<std::uint16_t>(bits_of(x) >> 16);
    if ((bits_of(x) & 0xffff) == 0) CHECK(float_to_bfloat16(x) == b);
  }
  CHECK(bfloat16_to_float(0x3f80) == 1.0f);
  // Ties go to the even neighbour; anything above the tie rounds up.
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f807fffu)) == 0x3f80);
  // The largest float rounds to infinity (RNE carries into the exponent), as in torch.
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(float_to_bfloat16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(float_to_bfloat16(-std::numeric_limits<float>::infinity()) == 0xff80);
  // NaN never rounds into infinity, even with only low payload bits set.
  for (std::uint32_t nan_bits : {0x7f800001u, 0x7fc00000u, 0xffffffffu, 0x7f80ffffu}) {
    INFO("nan bits " << nan_bits);
    const std::uint16_t b = float_to_bfloat16(std::bit_cast<float>(nan_bits));
    CHECK(std::isnan(bfloat16_to_float(b)));
    CHECK(std::signbit(bfloat16_to_float(b)) == ((nan_bits >> 31) != 0));
  }
  // Subnormals keep their top bits.
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x00010000u)) == 0x0001);
  CHECK(bfloat16_to_float(0x0001) == std::bit_cast<float>(0x00010000u));
}

TEST_CASE("16-bit round trips stay within their precision: 2^-8 for bfloat16, 2^-11 for float16",
          "[core]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_real_distribution<float> expo(-14.0f, 15.0f);  // float16's normal range
  std::vector<float> xs(10000);
  for (auto& x : xs) x = unit(rng) * std::exp2(expo(rng));
  std::vector<std::byte> h(xs.size() * 2), b(xs.size() * 2);
  convert_from_float32(DType::float16, xs, h);
  convert_from_float32(DType::bfloat16, xs, b);
  std::vector<float> hx(xs.size()), bx(xs.size());
  convert_to_float32(DType::float16, h, hx);
  convert_to_float32(DType::bfloat16, b, bx);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    INFO("x = " << xs[i]);
    if (std::fabs(xs[i]) >= std::ldexp(1.0f, -14))
      REQUIRE(std::fabs(hx[i] - xs[i]) <= std::ldexp(std::fabs(xs[i]), -11));
    REQUIRE(std::fabs(bx[i] - xs[i]) <= std::ldexp(std::fabs(xs[i]), -8));
    // The bulk loops agree with the scalar conversions, bit for bit.
    std::uint16_t hw, bw;
    std::memcpy(&hw, h.data() + 2 * i, 2);
    std::memcpy(&bw, b.data() + 2 * i, 2);
    REQUIRE(hw == float_to_half(xs[i]));
    REQUIRE(bw == float_to_bfloat16(xs[i]));
  }
  // Values already representable come back exactly.
  const std::vector<float> exact = {0.5f, -3.0f, 1024.0f, 0.15625f, -0.0f};
  for (DType t : {DType::float16, DType::bfloat16}) {
    std::vector<std::byte> w(exact.size() * 2);
    std::vector<float> back(exact.size());
    convert_from_float32(t, exact, w);
    convert_to_float32(t, w, back);
    CHECK(std::memcmp(back.data(), exact.data(), exact.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("bulk conversions refuse other dtypes and mismatched sizes", "[core]") {
  std::vector<float> f(4);
  std::vector<std::byte> w(8);
  CHECK_THROWS_AS(convert_to_float32(DType::int16, w, f), DTypeError);
  CHECK_THROWS_AS(convert_from_float32(DType::float64, f, w), DTypeError);
  CHECK_THROWS_AS(convert_to_float32(DType::float16, std::span(w).first(6), f), ShapeError);
  CHECK_THROWS_AS(convert_from_float32(DType::float32, f, w), ShapeError);
  std::vector<std::byte> w32(16);
  const std::vector<float> in = {1, 2, 3, 4};
  convert_from_float32(DType::float32, in, w32);
  convert_to_float32(DType::float32, w32, f);
  CHECK(f == in);
  CHECK(is_feature_dtype(DType::bfloat16));
  CHECK_FALSE(is_feature_dtype(DType::uint16));
}

}  // namespace test_core_half
