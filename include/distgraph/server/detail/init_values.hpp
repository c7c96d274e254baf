// Deterministic tensor initial values: a pure function of (seed, global row, column).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace distgraph::detail {

inline std::uint64_t init_mix(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform in [0, 1) from (seed, row, col, stream).
inline double unit_hash(std::uint64_t seed, std::int64_t row, std::int64_t col,
                        std::uint64_t stream = 0) noexcept {
  const std::uint64_t h =
      init_mix(init_mix(init_mix(seed ^ (stream << 56)) ^ static_cast<std::uint64_t>(row)) ^
            static_cast<std::uint64_t>(col));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

/// A standard normal value from (seed, row, col) by Box-Muller.
inline double normal_hash(std::uint64_t seed, std::int64_t row, std::int64_t col) noexcept {
  const double u1 = 1.0 - unit_hash(seed, row, col, 1);  // (0, 1]: log is finite
  const double u2 = unit_hash(seed, row, col, 2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace distgraph::detail
