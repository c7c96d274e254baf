// Counter-based random streams for sampling, keyed by (seed, epoch, rank, batch, layer, node).
#pragma once

#include <cstdint>

namespace distgraph {

/// Everything besides the node that decides which neighbours get picked. A server that
/// samples on behalf of a trainer receives the trainer's key (its `rank`, not the
/// server's) and so picks exactly what the trainer would have picked locally.
struct SampleKey {
  std::uint64_t seed = 0;  ///< the run's random seed
  std::int64_t epoch = 0;  ///< training epoch
  std::int64_t rank = 0;   ///< trainer rank that asks for the batch
  std::int64_t batch = 0;  ///< mini-batch index within the epoch
  std::int32_t layer = 0;  ///< GNN layer, 0 = input layer (as fanouts are listed)

  /// The same key for another layer.
  constexpr SampleKey at_layer(std::int32_t l) const noexcept {
    SampleKey k = *this;
    k.layer = l;
    return k;
  }
};

namespace detail {

/// The SplitMix64 / MurmurHash3 fmix64 finaliser (Stafford's "Mix13" constants): a
/// bijection on 64 bits whose outputs for consecutive inputs pass BigCrush.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Golden-ratio increment of SplitMix64 (Steele, Lea, Flood 2014).
inline constexpr std::uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;

}  // namespace detail

/// Folds a SampleKey into one 64-bit value. Each field goes through a full mix before the
/// next is added, so keys that differ in any field give unrelated values.
constexpr std::uint64_t hash_key(const SampleKey& k) noexcept {
  std::uint64_t h = detail::mix64(k.seed + 0x243F6A8885A308D3ull);
  h = detail::mix64(h ^ (static_cast<std::uint64_t>(k.epoch) + 0x13198A2E03707344ull));
  h = detail::mix64(h ^ (static_cast<std::uint64_t>(k.rank) + 0xA4093822299F31D0ull));
  h = detail::mix64(h ^ (static_cast<std::uint64_t>(k.batch) + 0x082EFA98EC4E6C89ull));
  h = detail::mix64(h ^ (static_cast<std::uint64_t>(k.layer) + 0x452821E638D01377ull));
  return h;
}

/// A counter-based stream: output i is mix64(base + (i + 1) * gamma), i.e. SplitMix64
/// started at `base`. `base` is derived from (hash_key(key), global node ID), so the picks
/// for a node depend on nothing else: not the thread, the batch order or the process.
/// Cheap to create (two mixes); not thread-safe (each thread makes its own per node).
class SampleRng {
 public:
  /// The stream of global node `node` under a key hashed by hash_key.
  constexpr SampleRng(std::uint64_t key_hash, std::int64_t node) noexcept
      : state_(detail::mix64(
            key_hash ^ detail::mix64(static_cast<std::uint64_t>(node) + 0xC2B2AE3D27D4EB4Full))) {}

  /// The next 64 random bits.
  constexpr std::uint64_t next() noexcept { return detail::mix64(state_ += detail::golden_gamma); }

  /// Uniform in [0, n) for n >= 1 by Lemire's multiply-shift without the rejection step:
  /// each value's probability is off by at most n / 2^64 relative (below 2^-24 for any
  /// degree under 2^40), which keeps the draw branch-free and every loop bounded.
  constexpr std::uint64_t below(std::uint64_t n) noexcept {
    __extension__ using u128 = unsigned __int128;  // GCC/Clang; __extension__ for -Wpedantic
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

  /// Uniform in [0, 1) with 53 random bits.
  constexpr double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Uniform in (0, 1], safe to take the logarithm of.
  constexpr double uniform_open() noexcept {
    return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_;
};

}  // namespace distgraph
