// The built-in datasets: generated graphs packaged as a Dataset, e.g. the default SBM.
#pragma once

#include <string>
#include <utility>

#include "distgraph/graph/generators.hpp"
#include "distgraph/io/dataset.hpp"

namespace distgraph {

/// Generates the stochastic-block-model graph of `opts` (see `sbm`) as a Dataset named
/// "sbm", with meta.json fields like a folder on disk would have. Deterministic in the seed.
inline Dataset sbm_dataset(const SbmOptions& opts = {}) {
  SbmData s = sbm(opts);
  Dataset d;
  d.name = "sbm";
  d.num_nodes = s.edges.num_nodes;
  d.src = std::move(s.edges.src);
  d.dst = std::move(s.edges.dst);
  d.feat = Buffer<float>(std::move(s.feat));
  d.feat_dim = s.feat_dim;
  d.label = Buffer<std::int64_t>(std::move(s.label));
  d.num_classes = s.num_classes;
  auto to_bool = [](const auto& mask) {
    Buffer<bool> b = Buffer<bool>::zeros(mask.size());
    for (std::size_t i = 0; i < mask.size(); ++i) b[i] = mask[i] != 0;
    return b;
  };
  d.train_mask = to_bool(s.train_mask);
  d.val_mask = to_bool(s.val_mask);
  d.test_mask = to_bool(s.test_mask);
  d.meta = {{"name", d.name},
            {"num_nodes", d.num_nodes},
            {"num_edges", d.num_edges()},
            {"feat_dim", d.feat_dim},
            {"num_classes", d.num_classes},
            {"features", "class centroid + gaussian noise (built-in SBM)"},
            {"sbm",
             {{"num_nodes", opts.num_nodes},
              {"num_classes", opts.num_classes},
              {"avg_degree", opts.avg_degree},
              {"homophily", opts.homophily},
              {"feat_dim", opts.feat_dim},
              {"feature_noise", opts.feature_noise},
              {"seed", opts.seed}}}};
  return d;
}

}  // namespace distgraph
