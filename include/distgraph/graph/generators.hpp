// Seeded graph generators: R-MAT (skewed, for benchmarks) and a learnable stochastic block model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/coo.hpp"

namespace distgraph {

namespace detail {

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast generator whose outputs from distinct
/// seeds are independent enough for graph generation. Each fixed-size chunk of work gets
/// its own stream seeded from (seed, stream), so results do not depend on thread count.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed, std::uint64_t stream = 0)
      : state_(seed ^ (stream * 0xD1B54A32D192ED03ull + 0x8BB84B93962EACC9ull)) {
    next();
  }
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) by Lemire's multiply-shift (bias below 2^-64 * n, negligible here).
  std::uint64_t below(std::uint64_t n) noexcept {
    __extension__ using u128 = unsigned __int128;  // GCC/Clang; __extension__ for -Wpedantic
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Standard normal by Box-Muller; written out so results match across standard libraries.
  double normal() noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(6.283185307179586 * u2);
    has_spare_ = true;
    return r * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

/// Work items per RNG stream; fixed so the output is independent of the thread count.
inline constexpr std::int64_t generator_chunk = 1 << 16;

}  // namespace detail

/// Parameters of rmat(). Quadrant probabilities are normalised to sum to 1.
struct RmatOptions {
  int scale = 20;                                 ///< 2^scale nodes
  int edge_factor = 16;                           ///< edge_factor * 2^scale generated edges
  double a = 0.57, b = 0.19, c = 0.19, d = 0.05;  ///< Graph500 quadrant probabilities
  std::uint64_t seed = 1;
  /// Also append the reverse (v, u) of every generated edge (u, v), doubling the edge
  /// count; duplicates and self loops stay (clean them with build_graph's options).
  bool symmetrize = false;
  unsigned num_threads = 0;  ///< 0 = hardware threads; the result does not depend on it
};

namespace detail {

/// Throws InvalidArgument unless `opts` describe an R-MAT graph rmat() can generate.
inline void check_rmat_options(const RmatOptions& opts) {
  if (opts.scale < 0 || opts.scale > 40)
    throw InvalidArgument("rmat: scale " + std::to_string(opts.scale) + "; expected [0, 40]");
  if (opts.edge_factor < 0)
    throw InvalidArgument("rmat: edge_factor " + std::to_string(opts.edge_factor) +
                          "; expected >= 0");
  const double sum = opts.a + opts.b + opts.c + opts.d;
  if (opts.a < 0 || opts.b < 0 || opts.c < 0 || opts.d < 0 || !(sum > 0))
    throw InvalidArgument("rmat: quadrant probabilities (" + std::to_string(opts.a) + ", " +
                          std::to_string(opts.b) + ", " + std::to_string(opts.c) + ", " +
                          std::to_string(opts.d) + "); expected non-negative, positive sum");
}

}  // namespace detail

/// The number of generated edges of rmat(opts) before symmetrising: edge_factor * 2^scale.
inline std::int64_t rmat_num_generated(const RmatOptions& opts) {
  return static_cast<std::int64_t>(opts.edge_factor) * (std::int64_t{1} << opts.scale);
}

/// The number of random streams rmat(opts) draws its edges from, generator_chunk edges
/// each: a process that generates streams [k0, k1) with rmat_stream makes its share of
/// exactly the edges rmat() makes, so ranks of a job can generate one graph between them.
inline std::int64_t rmat_num_streams(const RmatOptions& opts) {
  return (rmat_num_generated(opts) + detail::generator_chunk - 1) / detail::generator_chunk;
}

/// Calls `emit(u, v)` for each generated edge of stream `k` of rmat(opts), in order
/// (without the reversed copies `symmetrize` adds). Throws InvalidArgument as rmat().
template <class Emit>
void rmat_stream(const RmatOptions& opts, std::int64_t k, Emit&& emit) {
  detail::check_rmat_options(opts);
  const double sum = opts.a + opts.b + opts.c + opts.d;
  // 32-bit thresholds: one 64-bit draw decides two levels.
  const auto threshold = [&](double p) {
    return static_cast<std::uint32_t>(std::min(4294967295.0, std::floor(p / sum * 4294967296.0)));
  };
  const std::uint32_t ta = threshold(opts.a), tab = threshold(opts.a + opts.b),
                      tabc = threshold(opts.a + opts.b + opts.c);
  const std::int64_t m = rmat_num_generated(opts);
  detail::SplitMix64 rng(opts.seed, static_cast<std::uint64_t>(k));
  const std::int64_t e_end = std::min(m, (k + 1) * detail::generator_chunk);
  for (std::int64_t e = k * detail::generator_chunk; e < e_end; ++e) {
    std::uint64_t u = 0, v = 0, bits = 0;
    for (int level = 0; level < opts.scale; ++level) {
      if ((level & 1) == 0) bits = rng.next();
      const auto r = static_cast<std::uint32_t>(bits);
      bits >>= 32;
      const std::uint64_t su = r >= tab, sv = (r >= ta && r < tab) || r >= tabc;
      u = (u << 1) | su;
      v = (v << 1) | sv;
    }
    emit(static_cast<std::int64_t>(u), static_cast<std::int64_t>(v));
  }
}

/// Recursive-matrix graph (Chakrabarti, Zhan, Faloutsos 2004): each edge descends `scale`
/// levels of the adjacency matrix, picking quadrant a/b/c/d each time. IDs are not
/// permuted, so low IDs get the most edges (node 0 is the hub). The raw edge list may hold
/// duplicates and self loops. Deterministic in `seed`. Throws InvalidArgument for a scale
/// outside [0, 40], a negative edge factor or probabilities, or all-zero probabilities.
inline Coo rmat(const RmatOptions& opts = {}) {
  detail::check_rmat_options(opts);
  const std::int64_t n = std::int64_t{1} << opts.scale;
  const std::int64_t m = rmat_num_generated(opts);
  const std::int64_t total = opts.symmetrize ? 2 * m : m;
  auto src = detail::uninit_buffer<std::int64_t>(static_cast<std::size_t>(total));
  auto dst = detail::uninit_buffer<std::int64_t>(static_cast<std::size_t>(total));
  std::int64_t* s = src.data();
  std::int64_t* t = dst.data();
  parallel_chunks(
      0, rmat_num_streams(opts), opts.num_threads,
      [&](unsigned, std::int64_t kb, std::int64_t ke) {
        for (std::int64_t k = kb; k < ke; ++k) {
          std::int64_t e = k * detail::generator_chunk;
          rmat_stream(opts, k, [&](std::int64_t u, std::int64_t v) {
            s[e] = u;
            t[e] = v;
            if (opts.symmetrize) {
              s[m + e] = v;
              t[m + e] = u;
            }
            ++e;
          });
        }
      },
      1);
  return Coo{n, std::move(src), std::move(dst)};
}

/// Parameters of sbm().
struct SbmOptions {
  std::int64_t num_nodes = 10000;
  int num_classes = 8;
  double avg_degree = 16;  ///< mean degree of the undirected graph (edges * 2 / nodes)
  double homophily = 0.8;  ///< fraction of a node's edges that stay inside its class
  std::int64_t feat_dim = 32;
  double feature_noise = 1.0;  ///< per-dimension noise std; class centroids have norm ~1
  double train_fraction = 0.1, val_fraction = 0.1, test_fraction = 0.8;
  std::uint64_t seed = 42;
  unsigned num_threads = 0;  ///< 0 = hardware threads; the result does not depend on it
};

/// A node-classification dataset made by sbm().
struct SbmData {
  Coo edges;                ///< symmetric, no self loops, no duplicates, sorted by (src, dst)
  std::vector<float> feat;  ///< num_nodes x feat_dim, row-major
  std::int64_t feat_dim = 0;
  std::vector<std::int64_t> label;  ///< class of each node in [0, num_classes)
  std::int64_t num_classes = 0;
  std::vector<std::uint8_t> train_mask, val_mask, test_mask;  ///< 1 = in the split
};

/// Stochastic block model whose classes a GNN can learn but an MLP only partly can.
///
/// Labels are uniform over classes. Each of num_nodes * avg_degree / 2 undirected edges
/// picks a uniform endpoint u, then with probability `homophily` a uniform node of u's
/// class, otherwise a uniform node of the other classes: O(E) sampling, no pair tests.
/// Reverse edges are added and self loops and duplicates dropped, so the degree is
/// slightly below avg_degree when classes are small.
///
/// Why it is learnable: class centroids are gaussian with norm ~1 (entries N(0, 1/F)), so
/// two centroids lie ~sqrt(2) apart, and a node's feature is its centroid plus N(0, s^2)
/// noise per dimension (s = feature_noise). Along the line between two centroids the
/// noise std is s, so with s = 1 raw features separate two classes only at ~0.7 s (an MLP
/// reaches well under full accuracy on 8 classes). Mean aggregation over ~avg_degree
/// neighbours shrinks the noise by ~sqrt(avg_degree) while keeping a fraction `homophily`
/// of the own-class signal, so with the defaults a 2-layer GraphSAGE should reach roughly
/// 90% test accuracy.
///
/// Splits are a seeded random permutation: the first train_fraction of it is train, then
/// val, then test. Deterministic in `seed`. Throws InvalidArgument naming a bad field.
inline SbmData sbm(const SbmOptions& opts = {}) {
  auto bad = [](const std::string& field, const std::string& value, const std::string& want) {
    return InvalidArgument("sbm: " + field + " " + value + "; expected " + want);
  };
  if (opts.num_nodes < 1) throw bad("num_nodes", std::to_string(opts.num_nodes), ">= 1");
  if (opts.num_classes < 1) throw bad("num_classes", std::to_string(opts.num_classes), ">= 1");
  if (!(opts.avg_degree >= 0)) throw bad("avg_degree", std::to_string(opts.avg_degree), ">= 0");
  if (!(opts.homophily >= 0 && opts.homophily <= 1))
    throw bad("homophily", std::to_string(opts.homophily), "[0, 1]");
  if (opts.feat_dim < 0) throw bad("feat_dim", std::to_string(opts.feat_dim), ">= 0");
  if (!(opts.feature_noise >= 0))
    throw bad("feature_noise", std::to_string(opts.feature_noise), ">= 0");
  for (double f : {opts.train_fraction, opts.val_fraction, opts.test_fraction})
    if (!(f >= 0 && f <= 1)) throw bad("split fraction", std::to_string(f), "[0, 1]");
  if (opts.train_fraction + opts.val_fraction + opts.test_fraction > 1 + 1e-9)
    throw bad("train + val + test fraction",
              std::to_string(opts.train_fraction + opts.val_fraction + opts.test_fraction), "<= 1");

  const std::int64_t n = opts.num_nodes;
  const auto nz = static_cast<std::size_t>(n);
  const auto num_classes = static_cast<std::int64_t>(opts.num_classes);
  SbmData out;
  out.num_classes = num_classes;
  out.feat_dim = opts.feat_dim;

  // Stream 0: labels and the split permutation; streams 1.. : edges; then features.
  detail::SplitMix64 rng(opts.seed, 0);
  out.label.resize(nz);
  for (auto& l : out.label) l = static_cast<std::int64_t>(rng.below(num_classes));

  // Nodes grouped by class (counting sort), so "a uniform node of class c" is one draw.
  std::vector<std::int64_t> class_begin(static_cast<std::size_t>(num_classes) + 1, 0);
  for (std::int64_t l : out.label) ++class_begin[static_cast<std::size_t>(l) + 1];
  for (std::size_t c = 0; c < static_cast<std::size_t>(num_classes); ++c)
    class_begin[c + 1] += class_begin[c];
  std::vector<std::int64_t> members(nz);
  {
    std::vector<std::int64_t> at(class_begin.begin(), class_begin.end() - 1);
    for (std::int64_t v = 0; v < n; ++v)
      members[static_cast<std::size_t>(at[static_cast<std::size_t>(out.label[v])]++)] = v;
  }

  const auto m =
      static_cast<std::int64_t>(std::llround(static_cast<double>(n) * opts.avg_degree / 2.0));
  std::vector<std::int64_t> src(static_cast<std::size_t>(m)), dst(static_cast<std::size_t>(m));
  const std::int64_t edge_streams = (m + detail::generator_chunk - 1) / detail::generator_chunk;
  parallel_chunks(
      0, edge_streams, opts.num_threads,
      [&](unsigned, std::int64_t kb, std::int64_t ke) {
        for (std::int64_t k = kb; k < ke; ++k) {
          detail::SplitMix64 r(opts.seed, static_cast<std::uint64_t>(1 + k));
          const std::int64_t e_end = std::min(m, (k + 1) * detail::generator_chunk);
          for (std::int64_t e = k * detail::generator_chunk; e < e_end; ++e) {
            const auto u = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(n)));
            const auto c = static_cast<std::size_t>(out.label[static_cast<std::size_t>(u)]);
            const std::int64_t cb = class_begin[c], cs = class_begin[c + 1] - cb;
            const std::int64_t others = n - cs;
            std::int64_t v;
            if (others == 0 || r.uniform() < opts.homophily) {
              v = members[static_cast<std::size_t>(cb) + r.below(static_cast<std::uint64_t>(cs))];
            } else {
              // Uniform over nodes outside class c: skip c's block in `members`.
              auto i = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(others)));
              if (i >= cb) i += cs;
              v = members[static_cast<std::size_t>(i)];
            }
            src[static_cast<std::size_t>(e)] = u;
            dst[static_cast<std::size_t>(e)] = v;
          }
        }
      },
      1);
  const Coo raw{n, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))};
  out.edges = build_graph(raw, {.remove_self_loops = true,
                                .remove_duplicates = true,
                                .symmetrize = true,
                                .num_threads = opts.num_threads})
                  .to_coo(opts.num_threads);

  const std::int64_t f = opts.feat_dim;
  const auto fz = static_cast<std::size_t>(f);
  std::vector<double> centroid(static_cast<std::size_t>(num_classes) * fz);
  const double inv_sqrt_f = f > 0 ? 1.0 / std::sqrt(static_cast<double>(f)) : 0.0;
  for (auto& x : centroid) x = rng.normal() * inv_sqrt_f;
  out.feat.resize(nz * fz);
  const std::int64_t feat_streams = (n + detail::generator_chunk - 1) / detail::generator_chunk;
  parallel_chunks(
      0, feat_streams, opts.num_threads,
      [&](unsigned, std::int64_t kb, std::int64_t ke) {
        for (std::int64_t k = kb; k < ke; ++k) {
          detail::SplitMix64 r(opts.seed, static_cast<std::uint64_t>(1 + edge_streams + k));
          const std::int64_t v_end = std::min(n, (k + 1) * detail::generator_chunk);
          for (std::int64_t v = k * detail::generator_chunk; v < v_end; ++v) {
            const auto vz = static_cast<std::size_t>(v);
            const double* mu = centroid.data() + static_cast<std::size_t>(out.label[vz]) * fz;
            float* x = out.feat.data() + vz * fz;
            for (std::size_t j = 0; j < fz; ++j)
              x[j] = static_cast<float>(mu[j] + opts.feature_noise * r.normal());
          }
        }
      },
      1);

  std::vector<std::int64_t> perm(nz);
  for (std::int64_t v = 0; v < n; ++v) perm[static_cast<std::size_t>(v)] = v;
  for (std::size_t i = nz; i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  const auto count = [&](double frac) {
    return static_cast<std::size_t>(std::llround(frac * static_cast<double>(n)));
  };
  const std::size_t n_train = std::min(nz, count(opts.train_fraction));
  const std::size_t n_val = std::min(nz - n_train, count(opts.val_fraction));
  const std::size_t n_test = std::min(nz - n_train - n_val, count(opts.test_fraction));
  out.train_mask.assign(nz, 0);
  out.val_mask.assign(nz, 0);
  out.test_mask.assign(nz, 0);
  for (std::size_t i = 0; i < n_train; ++i) out.train_mask[static_cast<std::size_t>(perm[i])] = 1;
  for (std::size_t i = n_train; i < n_train + n_val; ++i)
    out.val_mask[static_cast<std::size_t>(perm[i])] = 1;
  for (std::size_t i = n_train + n_val; i < n_train + n_val + n_test; ++i)
    out.test_mask[static_cast<std::size_t>(perm[i])] = 1;
  return out;
}

}  // namespace distgraph
