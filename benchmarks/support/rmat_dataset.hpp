// The synthetic node-classification dataset of the training benchmarks: R-MAT (a, b, c, d =
// 0.57, 0.19, 0.19, 0.05, seed 1) symmetrized without self loops or duplicates, standard-normal
// float32 features, uniform random classes and a uniform 10% training set. Nobody tuned a
// model on it: it measures the machinery, not accuracy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/io/dataset.hpp"

namespace distgraph::bench {

struct RmatDatasetOptions {
  int scale = 18;
  int edge_factor = 16;
  std::int64_t feat_dim = 100;
  std::int64_t classes = 47;
};

/// The dataset (see the top of the file); with `graph`, the built Graph is handed back there
/// too (for writing it in another format), else freed before the features are made.
inline Dataset rmat_dataset(const RmatDatasetOptions& o, Graph* graph = nullptr) {
  Graph g = build_graph(rmat({.scale = o.scale, .edge_factor = o.edge_factor, .seed = 1}),
                        {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true});
  Coo coo = g.to_coo();
  if (graph != nullptr)
    *graph = std::move(g);
  else
    g = Graph{};
  Dataset d;
  d.name = "rmat" + std::to_string(o.scale);
  d.num_nodes = coo.num_nodes;
  d.src = std::move(coo.src);
  d.dst = std::move(coo.dst);
  const auto n = static_cast<std::size_t>(d.num_nodes);
  std::vector<float> feat(n * static_cast<std::size_t>(o.feat_dim));
  detail::SplitMix64 feat_rng(2);
  for (auto& x : feat) x = static_cast<float>(feat_rng.normal());
  d.feat = Buffer<float>(std::move(feat));
  d.feat_dim = o.feat_dim;
  std::vector<std::int64_t> label(n);
  detail::SplitMix64 label_rng(3);
  for (auto& y : label)
    y = static_cast<std::int64_t>(label_rng.below(static_cast<std::uint64_t>(o.classes)));
  d.label = Buffer<std::int64_t>(std::move(label));
  d.num_classes = o.classes;
  // 10% uniform: the head of a partial Fisher-Yates shuffle.
  std::vector<std::int64_t> order(n);
  for (std::size_t v = 0; v < n; ++v) order[v] = static_cast<std::int64_t>(v);
  detail::SplitMix64 rng(4);
  d.train_mask = Buffer<bool>::zeros(n);
  for (std::size_t i = 0; i < n / 10; ++i) {
    std::swap(order[i], order[i + rng.below(n - i)]);
    d.train_mask[static_cast<std::size_t>(order[i])] = true;
  }
  return d;
}

}  // namespace distgraph::bench
