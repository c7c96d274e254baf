// Seeded graph generators: R-MAT (skewed, for benchmarks) and a learnable stochastic block model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
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

/// The number of generator_chunk-sized streams that `items` work items take.
inline std::int64_t stream_count(std::int64_t items) {
  return (items + generator_chunk - 1) / generator_chunk;
}

/// The InvalidArgument of generator `who` for a bad option: "who: field value; expected want".
inline InvalidArgument generator_error(const std::string& who, const std::string& field,
                                       const std::string& value, const std::string& want) {
  return InvalidArgument(who + ": " + field + " " + value + "; expected " + want);
}

/// Throws generator_error unless each split fraction lies in [0, 1] and they sum to <= 1.
inline void check_split_fractions(const std::string& who, double train, double val, double test) {
  for (double f : {train, val, test})
    if (!(f >= 0 && f <= 1))
      throw generator_error(who, "split fraction", std::to_string(f), "[0, 1]");
  if (train + val + test > 1 + 1e-9)
    throw generator_error(who, "train + val + test fraction", std::to_string(train + val + test),
                          "<= 1");
}

/// `n` classes drawn uniformly from [0, num_classes), in order from `r`.
inline std::vector<std::int64_t> uniform_classes(SplitMix64& r, std::size_t n,
                                                 std::int64_t num_classes) {
  std::vector<std::int64_t> cls(n);
  for (auto& c : cls)
    c = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(num_classes)));
  return cls;
}

/// Members of each class (counting sort of `cls`), so a uniform member is one draw.
struct ClassMembers {
  std::vector<std::int64_t> begin, members;
  ClassMembers(const std::vector<std::int64_t>& cls, std::int64_t num_classes)
      : begin(static_cast<std::size_t>(num_classes) + 1, 0), members(cls.size()) {
    for (auto c : cls) ++begin[static_cast<std::size_t>(c) + 1];
    for (std::size_t c = 0; c + 1 < begin.size(); ++c) begin[c + 1] += begin[c];
    std::vector<std::int64_t> at(begin.begin(), begin.end() - 1);
    for (std::size_t v = 0; v < cls.size(); ++v)
      members[static_cast<std::size_t>(at[static_cast<std::size_t>(cls[v])]++)] =
          static_cast<std::int64_t>(v);
  }
  /// With probability `same` (or when no other class has members) a uniform member of
  /// class c, else a uniform member of the other classes (c's block of `members` is
  /// skipped); c must have members when chosen.
  std::int64_t draw(SplitMix64& r, std::int64_t c, double same) const {
    const auto cz = static_cast<std::size_t>(c);
    const std::int64_t cb = begin[cz], cs = begin[cz + 1] - cb;
    const auto n = static_cast<std::int64_t>(members.size());
    const std::int64_t others = n - cs;
    if (cs > 0 && (others == 0 || r.uniform() < same))
      return members[static_cast<std::size_t>(cb) + r.below(static_cast<std::uint64_t>(cs))];
    if (others == 0) return members[r.below(static_cast<std::uint64_t>(n))];
    auto i = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(others)));
    if (i >= cb) i += cs;
    return members[static_cast<std::size_t>(i)];
  }
};

/// Gaussian class centroids of norm ~`norm` (entries N(0, norm^2 / f)), row-major
/// [num_classes, f]: two centroids lie ~norm * sqrt(2) apart.
inline std::vector<double> class_centroids(SplitMix64& r, std::int64_t num_classes, std::int64_t f,
                                           double norm) {
  std::vector<double> centroid(static_cast<std::size_t>(num_classes) * static_cast<std::size_t>(f));
  const double scale = f > 0 ? norm / std::sqrt(static_cast<double>(f)) : 0.0;
  for (auto& x : centroid) x = r.normal() * scale;
  return centroid;
}

/// A train/val/test split of n items: a seeded permutation whose first n_train items are
/// train, the next n_val val, the next n_test test (each fraction of n, rounded).
struct SeededSplit {
  std::vector<std::int64_t> perm;
  std::size_t n_train = 0, n_val = 0, n_test = 0;

  /// Sets each part's items in masks already sized and cleared.
  template <class Mask>
  void mark(Mask& train, Mask& val, Mask& test) const {
    for (std::size_t i = 0; i < n_train + n_val + n_test; ++i) {
      auto& mask = i < n_train ? train : i < n_train + n_val ? val : test;
      mask[static_cast<std::size_t>(perm[i])] = 1;
    }
  }
};

/// The split of n items by Fisher-Yates shuffle from `r`: both generators' way, so a
/// split depends only on the seed and n.
inline SeededSplit seeded_split(SplitMix64& r, std::int64_t n, double train, double val,
                                double test) {
  const auto nz = static_cast<std::size_t>(n);
  SeededSplit s;
  s.perm.resize(nz);
  for (std::int64_t v = 0; v < n; ++v) s.perm[static_cast<std::size_t>(v)] = v;
  for (std::size_t i = nz; i > 1; --i) std::swap(s.perm[i - 1], s.perm[r.below(i)]);
  const auto count = [&](double frac) {
    return static_cast<std::size_t>(std::llround(frac * static_cast<double>(n)));
  };
  s.n_train = std::min(nz, count(train));
  s.n_val = std::min(nz - s.n_train, count(val));
  s.n_test = std::min(nz - s.n_train - s.n_val, count(test));
  return s;
}

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
  return detail::stream_count(rmat_num_generated(opts));
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

namespace detail {

// sbm's stages, in its order. Random streams: stream 0 draws the labels, the class
// centroids and the split permutation; streams 1 .. E the edges, one per generator_chunk
// edges; streams E + 1 .. the features, one per generator_chunk nodes. A stage's output
// thus depends on the seed and the sizes alone, never on the thread count.

/// Throws InvalidArgument naming the first field of `opts` sbm() cannot use.
inline void check_sbm_options(const SbmOptions& opts) {
  const auto bad = [](const std::string& field, const std::string& value, const char* want) {
    return generator_error("sbm", field, value, want);
  };
  if (opts.num_nodes < 1) throw bad("num_nodes", std::to_string(opts.num_nodes), ">= 1");
  if (opts.num_classes < 1) throw bad("num_classes", std::to_string(opts.num_classes), ">= 1");
  if (!(opts.avg_degree >= 0)) throw bad("avg_degree", std::to_string(opts.avg_degree), ">= 0");
  if (!(opts.homophily >= 0 && opts.homophily <= 1))
    throw bad("homophily", std::to_string(opts.homophily), "[0, 1]");
  if (opts.feat_dim < 0) throw bad("feat_dim", std::to_string(opts.feat_dim), ">= 0");
  if (!(opts.feature_noise >= 0))
    throw bad("feature_noise", std::to_string(opts.feature_noise), ">= 0");
  check_split_fractions("sbm", opts.train_fraction, opts.val_fraction, opts.test_fraction);
}

/// The number of undirected edges sbm() draws (before reversal and cleaning).
inline std::int64_t sbm_num_drawn_edges(const SbmOptions& opts) {
  return static_cast<std::int64_t>(
      std::llround(static_cast<double>(opts.num_nodes) * opts.avg_degree / 2.0));
}

/// Edge stage: each drawn edge picks a uniform endpoint u, then a node of u's class with
/// probability `homophily`, else one of the other classes; reversed, without self loops
/// and duplicates, sorted by (src, dst).
inline Coo sbm_edges(const SbmOptions& opts, const std::vector<std::int64_t>& label,
                     const ClassMembers& classes) {
  const std::int64_t n = opts.num_nodes;
  const std::int64_t m = sbm_num_drawn_edges(opts);
  std::vector<std::int64_t> src(static_cast<std::size_t>(m)), dst(static_cast<std::size_t>(m));
  parallel_chunks(
      0, stream_count(m), opts.num_threads,
      [&](unsigned, std::int64_t kb, std::int64_t ke) {
        for (std::int64_t k = kb; k < ke; ++k) {
          SplitMix64 r(opts.seed, static_cast<std::uint64_t>(1 + k));
          const std::int64_t e_end = std::min(m, (k + 1) * generator_chunk);
          for (std::int64_t e = k * generator_chunk; e < e_end; ++e) {
            const auto u = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(n)));
            const auto c = label[static_cast<std::size_t>(u)];
            src[static_cast<std::size_t>(e)] = u;
            dst[static_cast<std::size_t>(e)] = classes.draw(r, c, opts.homophily);
          }
        }
      },
      1);
  const Coo raw{n, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))};
  return build_graph(raw, {.remove_self_loops = true,
                           .remove_duplicates = true,
                           .symmetrize = true,
                           .num_threads = opts.num_threads})
      .to_coo(opts.num_threads);
}

/// Feature stage: node v's row is its class centroid (drawn from `rng`, norm ~1) plus
/// N(0, feature_noise^2) per dimension from the feature streams.
inline std::vector<float> sbm_features(const SbmOptions& opts,
                                       const std::vector<std::int64_t>& label, SplitMix64& rng) {
  const std::int64_t n = opts.num_nodes;
  const auto fz = static_cast<std::size_t>(opts.feat_dim);
  const auto centroid = class_centroids(rng, opts.num_classes, opts.feat_dim, 1.0);
  std::vector<float> feat(static_cast<std::size_t>(n) * fz);
  const std::int64_t first_stream = 1 + stream_count(sbm_num_drawn_edges(opts));
  parallel_chunks(
      0, stream_count(n), opts.num_threads,
      [&](unsigned, std::int64_t kb, std::int64_t ke) {
        for (std::int64_t k = kb; k < ke; ++k) {
          SplitMix64 r(opts.seed, static_cast<std::uint64_t>(first_stream + k));
          const std::int64_t v_end = std::min(n, (k + 1) * generator_chunk);
          for (std::int64_t v = k * generator_chunk; v < v_end; ++v) {
            const auto vz = static_cast<std::size_t>(v);
            const double* mu = centroid.data() + static_cast<std::size_t>(label[vz]) * fz;
            float* x = feat.data() + vz * fz;
            for (std::size_t j = 0; j < fz; ++j)
              x[j] = static_cast<float>(mu[j] + opts.feature_noise * r.normal());
          }
        }
      },
      1);
  return feat;
}

}  // namespace detail

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
  detail::check_sbm_options(opts);
  const auto nz = static_cast<std::size_t>(opts.num_nodes);
  SbmData out;
  out.num_classes = opts.num_classes;
  out.feat_dim = opts.feat_dim;
  detail::SplitMix64 rng(opts.seed, 0);
  out.label = detail::uniform_classes(rng, nz, out.num_classes);
  out.edges = detail::sbm_edges(opts, out.label, detail::ClassMembers(out.label, out.num_classes));
  out.feat = detail::sbm_features(opts, out.label, rng);
  const auto split = detail::seeded_split(rng, opts.num_nodes, opts.train_fraction,
                                          opts.val_fraction, opts.test_fraction);
  out.train_mask.assign(nz, 0);
  out.val_mask.assign(nz, 0);
  out.test_mask.assign(nz, 0);
  split.mark(out.train_mask, out.val_mask, out.test_mask);
  return out;
}

}  // namespace distgraph
