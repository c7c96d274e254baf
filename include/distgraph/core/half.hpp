// 16-bit floats: float32 <-> float16 (IEEE binary16) and float32 <-> bfloat16, one value
// or whole arrays, rounding to nearest even.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph {

/// IEEE binary16 bits to float32, exact for every value (subnormals, infinities, NaN
/// payloads). Branch-free so array loops vectorise (Maratyszcza's FP16 method: the
/// exponent is rebased by one multiply, subnormals by one subtraction).
inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t w = static_cast<std::uint32_t>(h) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t two_w = w + w;
  // Normal (and inf/NaN): shift exponent and mantissa into place and rescale by 2^-112,
  // which maps half's exponent bias 15 onto float's 127 (inf/NaN land on 0xff).
  const float normal = std::bit_cast<float>((two_w >> 4) + (0xe0u << 23)) * 0x1.0p-112f;
  // Subnormal: the mantissa as the low bits of 0.5's significand, minus 0.5.
  const float subnormal = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const std::uint32_t bits = two_w < (1u << 27) ? std::bit_cast<std::uint32_t>(subnormal)
                                                : std::bit_cast<std::uint32_t>(normal);
  return std::bit_cast<float>(sign | bits);
}

/// float32 to IEEE binary16 bits, rounding to nearest even: magnitudes at or above 65520
/// become infinity, below 2^-25 zero (sign kept), in between subnormals; NaN stays NaN
/// (quiet, sign kept). Branch-free; needs IEEE float arithmetic in round-to-nearest (no
/// -ffast-math flush-to-zero), which the rounding itself is made of.
inline std::uint16_t float_to_half(float f) noexcept {
  // Scaling up by 2^112 and back down by 2^-110 overflows exactly the values that round
  // to infinity, and leaves the others rounded by the FPU when `bias` is added.
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t shl1_w = w + w;
  const std::uint32_t sign = w & 0x80000000u;
  std::uint32_t bias = shl1_w & 0xff000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(base);
  const std::uint32_t exp_bits = (bits >> 13) & 0x00007c00u;
  const std::uint32_t mantissa_bits = bits & 0x00000fffu;
  const std::uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<std::uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

/// bfloat16 bits (the high half of a float32) to float32; exact.
inline float bfloat16_to_float(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// float32 to bfloat16 bits, rounding to nearest even (overflow rounds to infinity, as
/// the bit pattern carries into the exponent); NaN stays NaN (quieted, sign kept) instead
/// of rounding into infinity.
inline std::uint16_t float_to_bfloat16(float f) noexcept {
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  const bool nan = (w & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t rounded = (w + 0x7fffu + ((w >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(nan ? (w >> 16) | 0x0040u : rounded);
}

/// Whether `t` is a dtype convert_to_float32 / convert_from_float32 handle (float32,
/// float16, bfloat16).
constexpr bool is_feature_dtype(DType t) noexcept {
  return t == DType::float32 || t == DType::float16 || t == DType::bfloat16;
}

namespace detail {

inline void require_feature_dtype(const std::string& subject, DType t) {
  if (!is_feature_dtype(t))
    throw DTypeError(
        subject, "dtype " + std::string(dtype_name(t)) + "; expected float32, float16 or bfloat16");
}

inline void require_converted_size(const std::string& subject, std::size_t bytes, DType t,
                                   std::size_t values) {
  if (bytes != values * dtype_size(t))
    throw ShapeError(subject, std::to_string(bytes) + " bytes of " + std::string(dtype_name(t)) +
                                  "; expected " + std::to_string(values * dtype_size(t)) + " for " +
                                  std::to_string(values) + " values");
}

}  // namespace detail

/// Converts `out.size()` values of dtype `from` (float32, float16 or bfloat16; `in` holds
/// exactly their bytes, any alignment) to float32. Exact. Throws DTypeError for another
/// dtype and ShapeError when the sizes disagree. Thread-safe.
inline void convert_to_float32(DType from, std::span<const std::byte> in, std::span<float> out) {
  detail::require_feature_dtype("convert_to_float32", from);
  detail::require_converted_size("convert_to_float32", in.size(), from, out.size());
  const std::size_t n = out.size();
  if (from == DType::float32) {
    if (n > 0) std::memcpy(out.data(), in.data(), in.size());
    return;
  }
  // Plain indexed loops over local pointers: GCC and Clang vectorise both at -O2/-O3.
  // The words are read by memcpy (an unaligned load), never through a cast pointer.
  const std::byte* src = in.data();
  float* dst = out.data();
  if (from == DType::float16) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = half_to_float(h);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t b;
      std::memcpy(&b, src + 2 * i, 2);
      dst[i] = bfloat16_to_float(b);
    }
  }
}

/// Converts `in` to dtype `to` (float32, float16 or bfloat16) into `out` (exactly
/// in.size() values' bytes, any alignment), rounding to nearest even. Throws DTypeError
/// for another dtype and ShapeError when the sizes disagree. Thread-safe.
inline void convert_from_float32(DType to, std::span<const float> in, std::span<std::byte> out) {
  detail::require_feature_dtype("convert_from_float32", to);
  detail::require_converted_size("convert_from_float32", out.size(), to, in.size());
  const std::size_t n = in.size();
  if (to == DType::float32) {
    if (n > 0) std::memcpy(out.data(), in.data(), out.size());
    return;
  }
  const float* src = in.data();
  std::byte* dst = out.data();
  if (to == DType::float16) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t h = float_to_half(src[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t b = float_to_bfloat16(src[i]);
      std::memcpy(dst + 2 * i, &b, 2);
    }
  }
}

}  // namespace distgraph
