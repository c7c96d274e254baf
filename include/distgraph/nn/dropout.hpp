// Inverted dropout on the CPU from a counter-based hash: no mask tensor, no random kernel.
#pragma once

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace distgraph {

namespace detail {

/// One draw of torch's default generator: the seed of one dropout call (so runs repeat
/// under torch::manual_seed, and a resumed run repeats an epoch's masks).
inline std::uint64_t draw_dropout_seed() {
  return static_cast<std::uint64_t>(
      torch::randint(std::numeric_limits<std::int64_t>::max(), {1}, torch::kLong)
          .item<std::int64_t>());
}

/// `v` if `keep`, else +0: a bit mask, so that no optimisation level turns it into a
/// branch (a coin-flip branch per value made dropout cost as much as a layer's matrix
/// products) and the loops applying it vectorise.
template <class T>
inline T zero_unless(bool keep, T v) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  return std::bit_cast<T>(std::bit_cast<Bits>(v) & (Bits{0} - static_cast<Bits>(keep)));
}

/// The 64 bits that decide values 4g .. 4g+3 of a dropout under `seed`: splitmix64 of
/// seed + g * golden ratio.
inline std::uint64_t dropout_group_bits(std::uint64_t seed, std::uint64_t g) {
  std::uint64_t z = seed + g * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// out[i] = in[i] * (kept(i) ? scale : 0) for i in [0, n). Value i is kept when 16 bits
/// of dropout_group_bits(seed, i / 4) (bits 16 * (i % 4) onwards), as a fraction of
/// 2^16, reach p: one hash decides four values. Parallel over ATen's intra-op threads; the
/// result does not depend on their number. With `Relu`, in[i] is max(in[i], 0) first
/// (NaN stays NaN, as in torch::relu): ReLU and dropout in one pass.
///
/// Hashes are made a chunk at a time into a small buffer of 16-bit draws, then applied in
/// a separate loop the compiler vectorises: interleaving the two kept the application
/// scalar (2.4-2.6 -> 1.7 ms per 2.2 M floats on one thread, the same values).
template <class T, bool Relu = false>
inline void hash_dropout(const T* in, T* out, std::int64_t n, std::uint64_t seed, double p) {
  const auto scale = static_cast<T>(1.0 / (1.0 - p));
  const auto threshold = static_cast<std::uint16_t>(p * 65536.0);  // p < 1: fits 16 bits
  constexpr std::int64_t kChunkGroups = 256;                         // 2 KiB of draws
  const std::int64_t groups = (n + 3) / 4;
  at::parallel_for(0, groups, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    std::uint16_t draws[4 * kChunkGroups];
    for (std::int64_t g0 = begin; g0 < end; g0 += kChunkGroups) {
      const std::int64_t g1 = std::min(end, g0 + kChunkGroups);
      for (std::int64_t g = g0; g < g1; ++g) {
        std::uint64_t z = dropout_group_bits(seed, static_cast<std::uint64_t>(g));
#if defined(__GNUC__)
        // Keeps this loop scalar: without SSE4.1/AVX-512 vector 64-bit multiplies are
        // emulated with three 32-bit ones, and GCC's vectorised hash ran 2x slower.
        asm("" : "+r"(z));
#endif
        std::uint16_t* d = draws + 4 * (g - g0);
        d[0] = static_cast<std::uint16_t>(z);
        d[1] = static_cast<std::uint16_t>(z >> 16);
        d[2] = static_cast<std::uint16_t>(z >> 32);
        d[3] = static_cast<std::uint16_t>(z >> 48);
      }
      const std::int64_t first = 4 * g0, count = std::min(n, 4 * g1) - first;
      const T* src = in + first;
      T* dst = out + first;
      for (std::int64_t i = 0; i < count; ++i) {
        const T v = src[i] * scale;
        bool keep = draws[i] >= threshold;
        if constexpr (Relu) keep = keep & !(v <= T(0));
        dst[i] = zero_unless(keep, v);
      }
    }
  });
}

/// `x` (float or double, any shape) with hash_dropout applied under `seed` (after ReLU
/// with `relu`), as a new contiguous tensor.
inline torch::Tensor hash_dropout(const torch::Tensor& x, std::uint64_t seed, double p,
                                  bool relu = false) {
  const auto in = x.contiguous();
  auto out = torch::empty_like(in, torch::MemoryFormat::Contiguous);
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "hash_dropout", [&] {
    const auto* i = in.data_ptr<scalar_t>();
    auto* o = out.data_ptr<scalar_t>();
    if (relu)
      hash_dropout<scalar_t, true>(i, o, in.numel(), seed, p);
    else
      hash_dropout<scalar_t, false>(i, o, in.numel(), seed, p);
  });
  return out;
}

/// grad * scale where y > 0 or NaN, else 0: the gradient of ReLU-then-dropout from its
/// output (a value passed both exactly when its output is positive or NaN, which torch's
/// ReLU passes; scale > 0).
inline torch::Tensor relu_dropout_backward(const torch::Tensor& grad, const torch::Tensor& y,
                                           double p) {
  const auto g = grad.contiguous();
  auto out = torch::empty_like(g, torch::MemoryFormat::Contiguous);
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "relu_dropout_backward", [&] {
    const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
    const auto* gi = g.data_ptr<scalar_t>();
    const auto* yi = y.data_ptr<scalar_t>();
    auto* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, g.numel(), 1 << 16, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) o[i] = zero_unless(!(yi[i] <= 0), gi[i] * scale);
    });
  });
  return out;
}

/// Autograd of hash dropout: the backward pass recomputes the mask from the seed instead
/// of keeping one (the gradient is dropped out exactly where the input was).
struct HashDropoutFunction : torch::autograd::Function<HashDropoutFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               std::int64_t seed, double p) {
    ctx->saved_data["seed"] = seed;
    ctx->saved_data["p"] = p;
    return hash_dropout(x, static_cast<std::uint64_t>(seed), p);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto seed = static_cast<std::uint64_t>(ctx->saved_data["seed"].toInt());
    const torch::Tensor none;  // seed and p are numbers: no gradient
    return {hash_dropout(grads[0], seed, ctx->saved_data["p"].toDouble()), none, none};
  }
};

/// Autograd of ReLU then hash dropout in one pass. The output is saved instead of the
/// seed: it is positive (or NaN) exactly where the gradient passes, so backward hashes
/// nothing.
struct ReluHashDropoutFunction : torch::autograd::Function<ReluHashDropoutFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               std::int64_t seed, double p) {
    auto y = hash_dropout(x, static_cast<std::uint64_t>(seed), p, /*relu=*/true);
    ctx->saved_data["p"] = p;
    ctx->save_for_backward({y});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto y = ctx->get_saved_variables()[0];
    const torch::Tensor none;
    return {relu_dropout_backward(grads[0], y, ctx->saved_data["p"].toDouble()), none, none};
  }
};

/// Whether `x` takes the hash path (CPU float or double) rather than rand_like.
inline bool hash_dropout_applies(const torch::Tensor& x) {
  return x.device().is_cpu() &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
}

/// An inverted-dropout mask of `sizes`: each value 1 / (1 - p) with probability 1 - p,
/// else 0, exactly the factors `dropout` multiplies by under the same seed (drawn from
/// torch's default generator): the dropout of a tensor of ones.
inline torch::Tensor dropout_mask(torch::IntArrayRef sizes, double p, torch::ScalarType dtype) {
  const auto work = dtype == torch::kDouble ? torch::kDouble : torch::kFloat;
  const auto mask = hash_dropout(torch::ones(sizes, work), draw_dropout_seed(), p);
  return work == dtype ? mask : mask.to(dtype);
}

}  // namespace detail

/// Inverted dropout of `x` with probability `p` (a no-op for p == 0). CPU float and double
/// tensors: a hash of one seed from torch's generator decides each value (reproducible
/// under torch::manual_seed, and no mask is stored for the backward pass: Debian's CPU
/// build of torch's random kernels made Cora's input dropout 75% of an epoch). Other
/// devices and dtypes: rand_like.
inline torch::Tensor dropout(const torch::Tensor& x, double p) {
  if (p == 0.0) return x;
  if (!detail::hash_dropout_applies(x))
    return x * (torch::rand_like(x) >= p).to(x.scalar_type()) * (1.0 / (1.0 - p));
  // Without autograd on x (input features), apply records nothing.
  return detail::HashDropoutFunction::apply(
      x, static_cast<std::int64_t>(detail::draw_dropout_seed()), p);
}

/// dropout(torch::relu(x), p), the same values under the same seed, in one pass on the CPU
/// (float and double) with a backward pass that reads the output instead of rehashing
/// (a hidden layer's ReLU and dropout were 3.2 ms per [4300, 256] batch, 5x the ReLU).
inline torch::Tensor relu_dropout(const torch::Tensor& x, double p) {
  if (p == 0.0 || !detail::hash_dropout_applies(x)) return dropout(torch::relu(x), p);
  return detail::ReluHashDropoutFunction::apply(
      x, static_cast<std::int64_t>(detail::draw_dropout_seed()), p);
}

}  // namespace distgraph
