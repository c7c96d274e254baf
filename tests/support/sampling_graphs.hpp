// Tiny graphs and statistics shared by the sampling tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/coo.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/graph/graph.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/sample_local.hpp"

namespace distgraph::test {

/// `count` node IDs uniform over [0, n), repeats possible.
inline std::vector<std::int64_t> random_nodes(std::int64_t n, std::size_t count,
                                              std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  std::vector<std::int64_t> v(count);
  for (auto& x : v) x = pick(rng);
  return v;
}

/// A graph from an edge list; edge i keeps ID i (no cleaning options).
inline Graph graph_of(std::int64_t n, std::vector<std::int64_t> src,
                      std::vector<std::int64_t> dst) {
  return build_graph(
      Coo{n, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))},
      BuildOptions{.num_threads = 1});
}

/// Node 0 has in-edges from each of 1..leaves (edge i - 1 comes from leaf i); node
/// leaves + 1 is isolated. In-edges of node 0, in row order, come from leaves 1, 2, ...
inline Graph in_star(std::int64_t leaves) {
  std::vector<std::int64_t> src, dst;
  for (std::int64_t v = 1; v <= leaves; ++v) {
    src.push_back(v);
    dst.push_back(0);
  }
  return graph_of(leaves + 2, std::move(src), std::move(dst));
}

/// A symmetrized R-MAT graph without self loops or duplicates: skewed degrees, many
/// isolated nodes.
inline Graph small_rmat(int scale, int edge_factor, std::uint64_t seed) {
  const Coo raw =
      rmat({.scale = scale, .edge_factor = edge_factor, .seed = seed, .num_threads = 1});
  return build_graph(
      raw,
      {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true, .num_threads = 1});
}

/// Upper critical value of the chi-square distribution with `df` degrees of freedom at a
/// false-positive rate of 1e-6 (z = 4.7534), by the Wilson-Hilferty cube approximation,
/// accurate to a few percent for df >= 3.
inline double chi_square_critical(double df) {
  const double z = 4.7534;
  const double c = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - c + z * std::sqrt(c), 3.0);
}

/// Pearson's statistic of `counts` against `expected` (same keys; expected > 0).
inline double chi_square(const std::map<std::int64_t, std::int64_t>& counts,
                         const std::map<std::int64_t, double>& expected) {
  double stat = 0;
  for (const auto& [k, e] : expected) {
    const auto it = counts.find(k);
    const double o = it == counts.end() ? 0.0 : static_cast<double>(it->second);
    stat += (o - e) * (o - e) / e;
  }
  return stat;
}

/// Samples node `seed_node` of `g`'s in-edges `trials` times (batch = trial number, so each
/// trial draws afresh), calls `check(frontier)` on each, and counts how often each source
/// was picked.
template <class S, class Check>
std::map<std::int64_t, std::int64_t> pick_counts(const Graph& g, std::int64_t seed_node,
                                                 const S& sampler, std::int64_t fanout, int trials,
                                                 Check&& check) {
  std::map<std::int64_t, std::int64_t> counts;
  const std::vector<std::int64_t> seeds{seed_node};
  for (int t = 0; t < trials; ++t) {
    const Frontier f = sample_neighbors_local(in_edges_view(g), seeds, fanout,
                                              {.seed = 1, .batch = t}, sampler, {.num_threads = 1});
    check(f);
    for (const std::int64_t u : f.src) ++counts[u];
  }
  return counts;
}

}  // namespace distgraph::test
